"""Benchmark: claim 7b's budget curve (notebook 03's long step), the reference trainer against today's, in one run.

    .venv/bin/python benchmarks/pitfall.py                                   # params/full.yaml's first model
    .venv/bin/python benchmarks/pitfall.py --steps 1000 --k 1 --csv results/bench/pitfall.csv

One model's `linrec.analyses.pitfall.budget_table` on its `--k` best- and worst-conditioned blocks (by the probe
table's train κ when the profile's results hold one, else the capture's), Adam and SGD tuned at budgets from 100 to
`--steps` steps, run twice on the same rows: "old", as notebook 03 ran it before (`train_curves_reference`: every rate
to the last step, `x[idx]` per step, one tuning after another on one thread), and "new" (`train_curves` on
`--workers` threads, default torch's count). It prints both wall times and their ratio, and checks that the two tables
agree: the largest difference of any R², whether every chosen learning rate and every step to the ceiling
(`steps_to_reach`) is the same. The profile's capture must be in the cache (`make figures` leaves it there).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "lib"))

from linrec.analyses.pitfall import PitfallSample, budget_table, log_steps, steps_to_reach  # noqa: E402
from linrec.analyses.pitfall_train import Training, train_curves_reference  # noqa: E402
from linrec.analyses.probe import mechanism_blocks  # noqa: E402
from linrec.app.profile import load_profile  # noqa: E402
from linrec.studies import probe as study  # noqa: E402


def blocks_of(p, capture, k: int) -> list[int]:
    """The study's choice: the k best- and worst-conditioned blocks by the probe table's train κ (the capture's
    closed-form fits where the profile's results hold no probe table)."""
    table = Path(p.results_dir) / "probe.csv"
    if table.exists():
        t = pd.read_csv(table)
        t = t[t["model"] == capture.model_label]
        if len(t):
            return mechanism_blocks(t.set_index("block")["cond_gram"], k)
    return mechanism_blocks(pd.Series({b: capture.fit(b).cond_gram for b in range(capture.n_blocks)}), k)


def compare(old: pd.DataFrame, new: pd.DataFrame) -> dict:
    """Largest |ΔR²| (equal infinities count as 0), and whether the chosen rates and the steps to reach agree."""
    keys = ["block", "optimizer", "lr", "step"]
    a, b = old.sort_values(keys).reset_index(drop=True), new.sort_values(keys).reset_index(drop=True)
    if not a[keys].equals(b[keys]):
        return {"max_abs_r2": float("inf"), "chosen_same": False, "reach_same": False, "bitwise": False}
    diff = 0.0
    for col in ("r2_val", "r2_test"):
        x, y = a[col].to_numpy(), b[col].to_numpy()
        same = (x == y) | (np.isnan(x) & np.isnan(y))
        with np.errstate(invalid="ignore"):  # inf − inf where both diverged: `same` covers it
            diff = max(diff, float(np.max(np.where(same, 0.0, np.abs(x - y)), initial=0.0)))
    chosen = a.loc[a["chosen"].astype(bool), keys].equals(b.loc[b["chosen"].astype(bool), keys])

    def reach(t):
        return {
            k: steps_to_reach(g, g["ceiling"].iloc[0])
            for k, g in t[t["chosen"].astype(bool)].groupby(["block", "optimizer"])
        }

    return {"max_abs_r2": diff, "chosen_same": bool(chosen), "reach_same": reach(a) == reach(b), "bitwise": a.equals(b)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", default="params/full.yaml")
    ap.add_argument("--model", default=None, help="default: the profile's first model")
    ap.add_argument("--k", type=int, default=1, help="best- and worst-conditioned blocks each (default 1: 2 blocks)")
    ap.add_argument("--steps", type=int, default=3000, help="the longest budget (default 3,000 steps)")
    ap.add_argument("--outputs", type=int, default=None, help="output features trained (default: the profile's)")
    ap.add_argument("--workers", type=int, default=None, help="the new path's threads (default: torch's count)")
    ap.add_argument("--csv", default=None, help="append one row of results to this CSV")
    args = ap.parse_args()

    os.chdir(ROOT)
    p = load_profile(args.params, {}, lab=True).notebook("03")
    model = args.model or p.models[0]
    capture = study.model_capture(p, model)
    blocks = blocks_of(p, capture, args.k)
    checkpoints = log_steps(100, args.steps, per_decade=4)
    sample = PitfallSample(n_outputs=args.outputs or p.pitfall_outputs, max_train=p.probe_rows)
    workers = args.workers or torch.get_num_threads()
    print(f"{model}: blocks {blocks}, budgets {checkpoints[0]}…{checkpoints[-1]} steps, {sample.n_outputs} outputs, "
          f"new path on {workers} threads", flush=True)  # fmt: skip
    load = os.getloadavg()[0]

    t0, c0 = time.perf_counter(), time.process_time()
    reference = Training(workers=1, trainer=train_curves_reference)  # as notebook 03 trained before
    old = budget_table(capture, blocks, checkpoints, sample, p.seed, reference)
    t_old, cpu_old = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), time.process_time()
    new = budget_table(capture, blocks, checkpoints, sample, p.seed, Training(workers=workers))
    t_new, cpu_new = time.perf_counter() - t0, time.process_time() - c0
    c = compare(old, new)
    rates = int((old["optimizer"] != "gd").sum() // len(checkpoints))
    print(f"old {t_old:,.1f} s   new {t_new:,.1f} s   ratio {t_old / t_new:.2f}x   ({rates} rate runs); CPU seconds "
          f"old {cpu_old:,.1f}, new {cpu_new:,.1f}: ratio {cpu_old / cpu_new:.2f}x")  # fmt: skip
    print(f"largest |ΔR²| {c['max_abs_r2']:.3g}; bit for bit: {c['bitwise']}; chosen rates the same: "
          f"{c['chosen_same']}; steps to the ceiling the same: {c['reach_same']}")  # fmt: skip
    print(f"load average at the start {load:.1f} on {os.cpu_count()} CPUs (others' work slows both runs)")
    if args.csv:
        row = {"model": model, "blocks": " ".join(map(str, blocks)), "steps": args.steps, "outputs": sample.n_outputs,
               "workers": workers, "seconds_old": round(t_old, 2), "seconds_new": round(t_new, 2),
               "cpu_old": round(cpu_old, 2), "cpu_new": round(cpu_new, 2),
               "ratio": round(t_old / t_new, 3), "max_abs_r2": c["max_abs_r2"], "bitwise": c["bitwise"],
               "chosen_same": c["chosen_same"], "reach_same": c["reach_same"], "load": round(load, 2),
               "cpus": os.cpu_count(), "torch": torch.__version__, "date": time.strftime("%Y-%m-%d")}  # fmt: skip
        path = Path(args.csv)
        path.parent.mkdir(parents=True, exist_ok=True)
        new_file = not path.exists()
        with path.open("a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(row))
            if new_file:
                w.writeheader()
            w.writerow(row)
    if not (c["chosen_same"] and c["reach_same"]):
        sys.exit("the new path changed a chosen rate or a step to the ceiling")


if __name__ == "__main__":
    main()
