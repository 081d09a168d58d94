"""Held-out windows or held-out documents (issue 64, item 5): R²_lin per block of a profile's model and corpus when
a capture holds out a seeded fifth of its windows (the profiles' split) and when it holds out a seeded fifth of its
whole documents (`capture: {split: documents}`), each over several split seeds of the same text.

    PYTHONPATH=lib .venv/bin/python benchmarks/split.py [--profile default] [--model smollm2-135m] [--seeds 0 1 2 3 4 5]
                                                        [--out results/split]

Every capture is the profile's (`Profile.capture_config`: corpus, tokens, seq_len) at another split seed and split,
statistics only and uncached (`linrec.collect.capture.run_capture`). Writes `split_r2.csv` (one row per split, seed
and block: R²_lin and its window interval, the train and held-out windows), `split_shift.csv` (per block: each
split's mean over seeds, the shift documents − windows with its Welch interval; `linrec.analyses.large_n.split_shift`),
keeping other models' rows there, and `split_summary.csv` (`split_summary` of the stored `split_shift.csv`:
`linrec.outputs.bench_summaries.split_table`), which the docs quote, and prints it.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd

from linrec.analyses.large_n import split_shift
from linrec.analyses.recoverability import ceiling_table
from linrec.app.profile import load_profile
from linrec.base.files import atomic_file
from linrec.base.progress import bar as progress_bar
from linrec.collect.capture import run_capture
from linrec.inputs.corpora import SPLITS, WindowCut, load_windows
from linrec.inputs.models import load_model
from linrec.outputs.bench_summaries import save, split_table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="default")
    ap.add_argument("--model", default=None, help="the profile's first model unless given")
    ap.add_argument("--seeds", type=int, nargs="+", default=list(range(6)))
    ap.add_argument("--out", type=Path, default=Path("results/split"))
    args = ap.parse_args(argv)
    p = load_profile(args.profile)
    name = args.model or p.models[0]
    base, run = p.capture_config(name), p.capture_run()
    t0 = time.perf_counter()
    loaded = load_model(name, device=run.device)
    rows = []
    todo = [(split, seed) for seed in args.seeds for split in SPLITS]
    for split, seed in progress_bar(todo, desc=f"captures {name}", unit="capture"):
        config = replace(base, seed=seed, split=split, sample_rows=0)
        windows = load_windows(config.corpus, loaded.tokenizer, WindowCut.of(config))
        table = ceiling_table(run_capture(loaded, windows, config, batch_size=run.batch_size, progress=False))
        rows += [{"model": name, "corpus": config.corpus, "split": split, "seed": seed, "block": int(r.block),
                  "r2_lin": r.r2_lin, "r2_lo": r.r2_lo, "r2_hi": r.r2_hi, "n_train_windows": len(windows.train),
                  "n_test_windows": len(windows.test)} for r in table.itertuples()]  # fmt: skip
    r2 = pd.DataFrame(rows)
    kept = args.out / "split_r2.csv"  # other models' rows, measured before, stay
    if kept.is_file():
        before = pd.read_csv(kept)
        r2 = pd.concat([before[before["model"] != name], r2], ignore_index=True)
    args.out.mkdir(parents=True, exist_ok=True)
    with atomic_file(kept) as tmp:
        r2.to_csv(tmp, index=False, float_format="%.6g")
    shift = split_shift(pd.read_csv(kept))  # from the stored table, so the two files agree as stored
    with atomic_file(args.out / "split_shift.csv") as tmp:
        shift.to_csv(tmp, index=False, float_format="%.6g")
    summary = split_table(pd.read_csv(args.out / "split_shift.csv"))  # from the stored file, as the docs read it
    save(summary, args.out / "split_summary.csv")
    print(summary.to_string(index=False))
    print(f"{time.perf_counter() - t0:.0f} s; {len(todo)} captures of {base}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
