"""The zoo (notebook 08 under params/zoo.yaml) end to end without papermill: every run trained, several at once as
separate processes, then the zoo's study (`linrec.studies.training.run`) on the cached runs, its tables written to
`--out`.

    PYTHONPATH=lib python3 benchmarks/gpu_zoo.py --out /tmp/zoo_gpu                  # the zoo on cuda, float32
    PYTHONPATH=lib python3 benchmarks/gpu_zoo.py --out /tmp/zoo_bf16 --precision bf16
    PYTHONPATH=lib python3 benchmarks/gpu_zoo.py --out /tmp/tiny --device cpu --precision float32 \\
        --train steps=40 --train d_model=32 --train n_layers=2 --train vocab=512 -p train_measure_tokens 4096
    PYTHONPATH=lib python3 benchmarks/gpu_zoo.py --out /tmp/curves --curves-only --train steps=2000 \\
        -p train_variants "[gpt2, pythia, llama]" -p train_init_seeds "[0]" -p train_texts "[]"
    PYTHONPATH=lib python3 benchmarks/gpu_zoo.py --out results/zoo_precision --compare /tmp/bf16 /tmp/f32  # no training

What it does, in order:

1. loads the profile (`--profile`, default zoo) through the project's own loader with `-p NAME VALUE` overrides
   (read as `linrec figures -p` reads them), the device, `results_dir` = `--out`, and the training section's
   `--train KEY=VALUE` settings and `--precision` (default: the profile's own, float32 for the zoo, bf16 for
   zoo_paper; bf16 is the forward pass under bf16 autocast on a GPU, weights and optimizer float32; the measurements
   are float32 with float64 statistics whatever it is);
2. trains every run of the profile (`linrec.inputs.training.profile_configs`) in `--workers` processes at once
   (tiny models leave a GPU mostly idle: several fill it), each into `$LINREC_CACHE/training/` as `linrec train`
   would;
3. unless `--curves-only`, runs the zoo's study (`linrec.studies.training.run`) on them: it reads every run from the
   cache, captures its checkpoints, runs the pipeline on its last one, and writes the results tables under `--out`
   (as notebook 08 would, without the notebook and its figures);
4. writes `--out/zoo_curves.csv` and `zoo_curves.png` (each run's training and held-out loss against the step),
   `--out/zoo_plateau.csv` (the plateau rule per run) and `--out/gpu_zoo_timings.csv` (seconds per phase and run,
   the device, the precision), and prints the plateau rule per run and the zoo's verdicts.

The corpora must be in `$LINREC_CACHE` (a machine with no network: copy `corpora/` of a cache that has them, e.g.
after `linrec fetch wiki web code technical stories` here).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from multiprocessing import get_context
from pathlib import Path

import numpy as np
import pandas as pd


def _value(text: str):
    """A --train or -p value read as `linrec figures -p` reads it."""
    from linrec.app.profile import _override_value

    return _override_value("value", text)


def _train_one(config: dict, threads: int) -> dict:
    """Worker: one run trained (or read from the cache); what the parent records of it."""
    import torch

    torch.set_num_threads(threads)
    from linrec.inputs.training import TrainConfig, get_run

    cfg = TrainConfig(**config)
    t0 = time.perf_counter()
    run = get_run(cfg, progress=False)
    rule = run.plateau()
    curves = run.log[["step", "loss"]].assign(kind="train")
    if run.heldout is not None:
        curves = pd.concat([curves, run.heldout.rename(columns={"heldout_loss": "loss"}).assign(kind="heldout")])
    return {
        "run": cfg.name, "layout": cfg.layout, "steps": cfg.steps, "precision": cfg.precision,
        "init_seed": cfg.init_seed, "cached": run.cached, "seconds_wall": time.perf_counter() - t0,
        "seconds_train": run.meta["seconds"], "made_on": run.meta["made_on"],
        "final_train_loss": run.meta["final_train_loss"], **(rule.row() if rule is not None else {}),
        "curves": curves.assign(run=cfg.name).to_dict("list"),
    }  # fmt: skip


def plot_curves(curves: pd.DataFrame, path: Path) -> None:
    """Each run's training loss (thin, 25-step means) and held-out loss (points) against the step, one panel per
    layout, on `path` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    layouts = list(dict.fromkeys(r.split("-")[0] for r in curves["run"]))
    fig, axes = plt.subplots(1, len(layouts), figsize=(4.2 * len(layouts), 3.4), sharey=True, squeeze=False)
    for ax, layout in zip(axes[0], layouts):
        for k, (run, c) in enumerate(curves[curves["run"].str.split("-").str[0] == layout].groupby("run", sort=False)):
            colour = f"C{k}"
            train = c[c["kind"] == "train"]
            ax.plot(train["step"], train["loss"].rolling(25, min_periods=1).mean(), lw=0.8, alpha=0.6, color=colour)
            held = c[c["kind"] == "heldout"]
            ax.plot(held["step"], held["loss"], "o-", ms=3, lw=1.2, color=colour, label=run)
        ax.set_title(layout)
        ax.set_xlabel("step")
        ax.legend(fontsize=6)
    axes[0][0].set_ylabel("loss (nats): training (line), held-out (points)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def compare_precision(a: str | Path, b: str | Path) -> pd.DataFrame:
    """Two `--curves-only` folders of the same runs trained at two precisions (`a`, e.g. bf16; `b`, e.g. float32)
    set side by side: one row per run in both, with each one's final and best held-out loss, their difference
    (`delta_final` = a - b), the largest |a - b| over the held-out evaluations both made (`max_abs_delta_curve`), and
    the noise it is read against: the range of the final held-out loss over the init seeds of the run's layout in
    `a` (`seed_range_a`) and in `b` where it has more than one seed (`seed_range_b`); `within_seed_range` says whether
    |delta_final| is at most the larger of the two ranges."""
    pa, pb = (pd.read_csv(Path(d) / "zoo_plateau.csv") for d in (a, b))
    ca, cb = (pd.read_csv(Path(d) / "zoo_curves.csv") for d in (a, b))
    ca, cb = (c[c["kind"] == "heldout"] for c in (ca, cb))
    ranges = {}
    for tag, t in (("a", pa), ("b", pb)):
        g = t.groupby("layout")["final_heldout_loss"]
        ranges[tag] = (g.max() - g.min()).where(g.count() > 1)
    rows = []
    for _, ra in pa.iterrows():
        rb = pb[pb["run"] == ra["run"]]
        if rb.empty:
            continue
        rb = rb.iloc[0]
        both = ca[ca["run"] == ra["run"]].merge(cb[cb["run"] == ra["run"]], on="step", suffixes=("_a", "_b"))
        range_a, range_b = ranges["a"].get(ra["layout"], np.nan), ranges["b"].get(ra["layout"], np.nan)
        delta = ra["final_heldout_loss"] - rb["final_heldout_loss"]
        rows.append({
            "run": ra["run"], "layout": ra["layout"], "precision_a": ra["precision"], "precision_b": rb["precision"],
            "final_heldout_a": ra["final_heldout_loss"], "final_heldout_b": rb["final_heldout_loss"],
            "delta_final": delta, "best_heldout_a": ra["best_heldout_loss"], "best_heldout_b": rb["best_heldout_loss"],
            "max_abs_delta_curve": float((both["loss_a"] - both["loss_b"]).abs().max()), "n_evals": len(both),
            "seed_range_a": range_a, "seed_range_b": range_b,
            "within_seed_range": bool(abs(delta) <= np.nanmax([range_a, range_b, -np.inf])),
            "seconds_train_a": ra["seconds_train"], "seconds_train_b": rb["seconds_train"],
        })  # fmt: skip
    if not rows:
        raise SystemExit(f"compare: no run of {a} is also in {b}")
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for the results tables, curves and timings")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"),
                    help="no training: set two --curves-only folders of the same runs at two precisions side by side "
                         "(compare_precision), written to OUT/precision.csv")  # fmt: skip
    ap.add_argument("--profile", default="zoo", help="the profile (default: zoo, params/zoo.yaml)")
    ap.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    ap.add_argument("--precision", choices=["bf16", "float32"], default=None,
                    help="training precision (default: the profile's; bf16 on a GPU only)")  # fmt: skip
    ap.add_argument("--workers", type=int, default=6, help="runs trained at once, each its own process (default: 6)")
    ap.add_argument("--train", action="append", default=[], metavar="KEY=VALUE",
                    help="a training-section setting, e.g. --train steps=2000 (repeatable)")  # fmt: skip
    ap.add_argument("-p", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                    help="a profile parameter, as linrec figures -p (repeatable)")  # fmt: skip
    ap.add_argument("--curves-only", action="store_true", help="train and write the curves; no measuring, no study")
    args = ap.parse_args(argv)
    if args.compare:
        table = compare_precision(*args.compare)
        Path(args.out).mkdir(parents=True, exist_ok=True)
        table.to_csv(Path(args.out) / "precision.csv", index=False)
        print(table.to_string(index=False))
        return 0

    from linrec.app.profile import load_profile, parse_overrides, profile_path, read_profile
    from linrec.inputs.training import profile_configs

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    overrides = parse_overrides(args.p)
    base = read_profile(profile_path(args.profile)).get("training", {})
    training = {**base, **overrides.pop("training", {})}
    for item in args.train:
        key, sep, text = item.partition("=")
        if not sep:
            ap.error(f"--train {item}: give KEY=VALUE, e.g. --train steps=2000")
        training[key.strip()] = _value(text.strip())
    if args.precision:
        training["precision"] = args.precision
    precision = training.get("precision", "float32")
    p = load_profile(args.profile, {**overrides, "training": training, "device": args.device,
                                    "results_dir": str(out), "figures_dir": str(out / "figures")})  # fmt: skip
    p = p.notebook("08")
    configs = profile_configs({**p.training, "device": p.device}, p.train_variants, p.train_init_seeds,
                              p.train_data_seeds, p.train_texts, p.train_text_seeds or None,
                              p.train_block_tolerance)  # fmt: skip
    device_name = args.device
    if args.device.startswith("cuda"):
        import torch

        device_name = torch.cuda.get_device_name(torch.device(args.device))
    workers = max(1, min(args.workers, len(configs)))
    threads = int(os.environ.get("OMP_NUM_THREADS") or 0) or max(1, (os.cpu_count() or 1) // workers)
    print(f"{len(configs)} runs of {args.profile} on {device_name} ({precision}), {workers} at once, "
          f"{threads} CPU thread(s) each; LINREC_CACHE={os.environ.get('LINREC_CACHE', '~/.cache/linrec')}",
          flush=True)  # fmt: skip

    t0 = time.perf_counter()
    rows, curves = [], []
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(_train_one, asdict(c), threads) for c in configs]
        for f in futures:
            row = f.result()
            curves.append(pd.DataFrame(row.pop("curves")))
            rows.append(row)
            print(f"  {row['run']}: {row['seconds_train']:.0f} s training{' (cached)' if row['cached'] else ''}, "
                  f"held-out loss {row.get('final_heldout_loss', float('nan')):.3f}, "
                  f"converged {row.get('converged', 'n/a')}", flush=True)  # fmt: skip
    train_seconds = time.perf_counter() - t0
    plateau = pd.DataFrame(rows)
    plateau.to_csv(out / "zoo_plateau.csv", index=False)
    curves = pd.concat(curves, ignore_index=True)[["run", "kind", "step", "loss"]]
    curves.to_csv(out / "zoo_curves.csv", index=False)
    plot_curves(curves, out / "zoo_curves.png")
    print(f"training: {train_seconds:.0f} s wall for {len(configs)} runs", flush=True)

    study_seconds = 0.0
    if not args.curves_only:
        from linrec.studies import training as study

        t1 = time.perf_counter()
        result = study.run(p)
        study_seconds = time.perf_counter() - t1
        print(f"study (read the runs, capture every checkpoint, the pipeline, the tables): {study_seconds:.0f} s")
        if result.zoo_runs is not None:  # the pipeline's tables (none with -p train_pipeline false)
            cols = ["run", "converged", "plateaued", "learned", "heldout_gain", "final_heldout_loss",
                    "final_heldout_ppl"]  # fmt: skip
            print(result.zoo_runs[cols].to_string(index=False))
            print("zoo verdict:", json.dumps(result.zoo_verdict.iloc[0].to_dict(), default=str))
            print(result.zoo_claims[["claim", "verdict", "n_models", "n_blocks", "rho", "lo", "hi"]].to_string(
                index=False))  # fmt: skip
        else:
            print(result.training_verdict.to_string(index=False))
    timings = plateau[["run", "seconds_wall", "seconds_train", "cached"]].assign(phase="train")
    timings = pd.concat([timings, pd.DataFrame([
        {"run": "all", "phase": "train (wall, all workers)", "seconds_wall": train_seconds},
        {"run": "all", "phase": "study", "seconds_wall": study_seconds},
    ])], ignore_index=True).assign(device=device_name, precision=precision, workers=workers)  # fmt: skip
    timings.to_csv(out / "gpu_zoo_timings.csv", index=False)
    print(f"total {train_seconds + study_seconds:.0f} s; tables, curves and timings in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
