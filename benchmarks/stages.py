"""Benchmark: where a profile's run spends its time, per notebook and per stage (issue 88: measure before cutting).

    .venv/bin/python benchmarks/stages.py results/default                    # the profile of the last run there
    .venv/bin/python benchmarks/stages.py results/default --csv results/bench/stages_default.csv
    .venv/bin/python benchmarks/stages.py --run params/default.yaml          # run `linrec figures` first, then that

A stage is a loop that shows a progress bar (`linrec.base.stages`): `linrec figures` writes each one's wall and CPU
seconds and its model work (tokens through whole models) to `results/<profile>/notebooks/stages.csv` as it ends,
beside `timings.csv` (each code cell's seconds). Printed, per notebook: its seconds, the share of them spent inside
stages (what is left is imports, loads, fits without a loop, figures), and its stages of depth 0 (those inside
another are in its seconds) by seconds, with

- `cpu_share`: CPU seconds over wall seconds over the CPUs the run had (1.0: every CPU busy the whole stage; 0.5 on
  2 CPUs: one of them);
- `model_tokens`: tokens through whole models (a swap rerun from a cached hidden state counts the blocks it reran);
- `tok_per_s`: model_tokens per wall second, against the plain forward's rate measured here (`--reference`,
  SmolLM2's plain forward on 16 windows of 128 tokens): `forward_share` is the stage's seconds the plain forward
  would need for its model work, over its seconds (near 1: the stage is its forwards; near 0: the time is elsewhere).
  Gemma-3's forward costs more per token than SmolLM2's, so its stages' forward_share reads high.

The numbers are one run's on one machine: compare stages within a run, and runs by the ratios it prints.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def reference_rate() -> float:
    """SmolLM2-135M's plain forward here (benchmarks/tests.py's `REFERENCE`: 16 windows of 128 tokens, median of 3),
    in tokens per second; NaN where it cannot run."""
    sys.path.insert(0, str(HERE))
    from tests import REFERENCE

    proc = subprocess.run([sys.executable, "-c", REFERENCE], capture_output=True, text=True, cwd=ROOT)
    try:
        return 16 * 128 / float(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return float("nan")


def profile(folder: Path, cpus: int, rate: float) -> pd.DataFrame:
    """One row per notebook (stage "(notebook)": its cells' seconds) and per stage of depth 0 in it, merged by name
    (a stage that ran more than once, e.g. per model, is one row per distinct name)."""
    notebooks = folder / "notebooks"
    stages = pd.read_csv(notebooks / "stages.csv")
    cells = pd.read_csv(notebooks / "timings.csv")
    top = stages[stages["depth"] == 0]
    per = (
        top.groupby(["notebook", "stage"], sort=False)
        .agg(
            runs=("stage", "size"),
            steps=("steps", "sum"),
            wall_s=("wall_s", "sum"),
            cpu_s=("cpu_s", "sum"),
            model_tokens=("model_tokens", "sum"),
        )  # fmt: skip
        .reset_index()
    )
    rows = []
    for nb, secs in cells.groupby("notebook", sort=True)["seconds"].sum().items():
        mine = per[per["notebook"] == nb].sort_values("wall_s", ascending=False)
        inside = float(mine["wall_s"].sum())
        rows.append({"notebook": nb, "stage": "(notebook)", "runs": 1, "steps": float("nan"), "wall_s": secs,
                     "cpu_s": float("nan"), "model_tokens": float(mine["model_tokens"].sum()),
                     "share_of_notebook": inside / secs if secs else float("nan")})  # fmt: skip
        for _, s in mine.iterrows():
            rows.append({**s.to_dict(), "share_of_notebook": s["wall_s"] / secs if secs else float("nan")})
    out = pd.DataFrame(rows)
    out["cpu_share"] = out["cpu_s"] / out["wall_s"] / cpus
    out["tok_per_s"] = out["model_tokens"] / out["wall_s"]
    out["forward_share"] = out["model_tokens"] / rate / out["wall_s"]
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", nargs="?", type=Path, help="a results folder a `linrec figures` run wrote")
    p.add_argument("--run", type=Path, help="run `linrec figures --params RUN` first (its results folder is read)")
    p.add_argument("--only", default=None, help="with --run: the notebooks to run (linrec figures --only)")
    p.add_argument("--csv", type=Path, default=None, help="write the profile here")
    p.add_argument("--reference", type=float, default=None, help="the plain forward's tokens/s (default: measured)")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT / "lib"))
    if args.run is not None:
        from linrec.app.profile import load_profile

        folder = ROOT / load_profile(args.run).results_dir
        cmd = [str(Path(sys.executable).parent / "linrec"), "figures", "--params", str(args.run)]
        t0 = time.perf_counter()
        subprocess.run(cmd + (["--only", args.only] if args.only else []), cwd=ROOT, check=True)
        print(f"linrec figures --params {args.run}: {time.perf_counter() - t0:.0f} s wall")
    elif args.folder is None:
        p.error("give a results folder or --run PARAMS")
    else:
        folder = args.folder
    if not (folder / "notebooks" / "stages.csv").exists():
        sys.exit(f"{folder}/notebooks/stages.csv is missing: run `linrec figures` for that profile first (--run)")
    rate = args.reference if args.reference is not None else reference_rate()
    cpus = os.cpu_count() or 1
    table = profile(folder, cpus, rate)
    with pd.option_context("display.width", 200, "display.max_rows", 500, "display.max_colwidth", 48):
        shown = table.drop(columns=["runs"]).round({"wall_s": 1, "cpu_s": 1, "share_of_notebook": 3, "cpu_share": 2,
                                                    "tok_per_s": 0, "forward_share": 2})  # fmt: skip
        print(shown.to_string(index=False))
    print(f"plain forward (SmolLM2, 2,048 tokens): {rate:.0f} tokens/s; {cpus} CPUs")
    if args.csv:
        args.csv.parent.mkdir(parents=True, exist_ok=True)
        table.assign(reference_tok_per_s=rate, cpus=cpus).to_csv(args.csv, index=False, float_format="%.6g")
        print(f"profile written to {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
