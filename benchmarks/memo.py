"""What keeping an evaluation costs, and what reading it back saves, in evaluations of the same routed block.

    .venv/bin/python benchmarks/memo.py [--model smollm2-135m] [--corpus wiki] [--tokens 20480] [--block 3]
                                        [--out results/bench/memo.csv]

In one process, on the capture's held-out windows, one block routed at share 0.5 by a gate on its first input
feature (`linrec.analyses.routing.RoutedFFN`, which wraps the FFN: the largest module an evaluation fingerprints):
- `evaluation`: `PerplexityEvaluator.window_nll` without keeping (the reference, 1.0);
- `keep: the model's key`: `PerplexityEvaluator.keep`, once per evaluator (the model's weights hashed);
- `kept evaluation, first`: the same evaluation with keeping on and an empty cache (it runs, then is written);
- `kept evaluation, read`: the same again in a new evaluator (read back; checked bit for bit against the first).
Ratios are seconds ÷ the `evaluation` seconds of the same run. The cache is a temporary folder, removed after.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from linrec.analyses.perplexity import PerplexityEvaluator
from linrec.analyses.routing import RoutedFFN, fit_gate
from linrec.analyses.swap import SwapStudy
from linrec.collect.capture import get_capture
from linrec.collect.config import CaptureConfig
from linrec.inputs.models import load_model


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--corpus", default="wiki")
    ap.add_argument("--tokens", type=int, default=20_480)
    ap.add_argument("--block", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--out", default="results/bench/memo.csv")
    args = ap.parse_args()

    cap = get_capture(CaptureConfig(args.model, args.corpus, tokens=args.tokens, sample_rows=30_000))
    loaded = load_model(args.model)
    study = SwapStudy(cap, loaded, batch_size=args.batch_size, progress=False)
    h, b = study.heldout, args.block
    x, _ = cap.rows(b, "train")
    gate = fit_gate(x, (x[:, 0] > np.median(x[:, 0])).astype(float))

    def routed():
        return {b: RoutedFFN(h.sites[b].module, h.module(b), gate, gate.threshold(0.5))}

    def evaluator():
        return PerplexityEvaluator(h.model, h.report_ids, h.batch_size, sites=h.sites)

    cache, before = tempfile.mkdtemp(prefix="linrec-memo-bench-"), os.environ.get("LINREC_CACHE")
    os.environ["LINREC_CACHE"] = cache
    try:
        plain_ev = evaluator()
        reference, plain = _timed(lambda: plain_ev.window_nll(routed()))
        first_ev = evaluator()
        _, key = _timed(lambda: first_ev.keep(args.model))
        made, first = _timed(lambda: first_ev.window_nll(routed()))
        read_ev = evaluator().keep(args.model)
        got, read = _timed(lambda: read_ev.window_nll(routed()))
        assert read_ev.n_kept == 1 and got.tobytes() == made.tobytes() == reference.tobytes()
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        os.environ.pop("LINREC_CACHE") if before is None else os.environ.__setitem__("LINREC_CACHE", before)

    n = len(h.report_ids)
    print(f"{args.model}: block {b} routed at 0.5, {n} held-out windows × {h.report_ids.shape[1]} tokens")
    rows = [("evaluation", plain), ("keep: the model's key", key), ("kept evaluation, first", first),
            ("kept evaluation, read", read)]  # fmt: skip
    for what, s in rows:
        print(f"  {what:<26} {s:8.3f} s  {s / plain:7.3f} evaluations")
    from machine import machine_info

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["model", "measure", "seconds", "evaluations", *machine_info()])
        w.writeheader()
        w.writerows({"model": args.model, "measure": what, "seconds": s, "evaluations": s / plain, **machine_info()}
                    for what, s in rows)  # fmt: skip
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
