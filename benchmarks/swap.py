"""What the cached-prefix swap evaluation saves: ΔPPL of one swapped block, cached vs plain full forwards.

    .venv/bin/python benchmarks/swap.py [--model smollm2-135m] [--corpus wiki] [--tokens 20480] [--blocks 0,15,29]

Both evaluators run on the same held-out windows of the capture (one run, same process, same
thread count). Prints per block the seconds of each path, their ratio, and the two perplexities
(they must agree: the cached path is the same arithmetic from the first swapped block on).
"""

from __future__ import annotations

import argparse
import time

from linrec.capture import get_capture
from linrec.models import load_model
from linrec.perplexity import PerplexityEvaluator
from linrec.swap import SwapStudy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--corpus", default="wiki")
    ap.add_argument("--tokens", type=int, default=20_480)
    ap.add_argument("--blocks", default="0,15,29")
    ap.add_argument("--batch-size", type=int, default=8)
    args = ap.parse_args()

    cap = get_capture(args.model, args.corpus, tokens=args.tokens, sample_rows=30_000, batch_size=args.batch_size)
    loaded = load_model(args.model)
    study = SwapStudy(cap, loaded, batch_size=args.batch_size, progress=False)
    ids = study.windows.ids[study.windows.test]
    t0 = time.perf_counter()
    cached = PerplexityEvaluator(loaded.model, ids, args.batch_size, reuse_prefix=True)
    t_cached_base = time.perf_counter() - t0
    t0 = time.perf_counter()
    plain = PerplexityEvaluator(loaded.model, ids, args.batch_size, reuse_prefix=False)
    t_plain_base = time.perf_counter() - t0
    print(f"{args.model}, {len(ids)} held-out windows × {ids.shape[1]} tokens")
    print(f"base run: cached (records every block's output) {t_cached_base:.1f} s, plain {t_plain_base:.1f} s")
    print(f"{'block':>5} {'cached s':>9} {'plain s':>8} {'plain÷cached':>12} {'ppl cached':>11} {'ppl plain':>10}")
    total_c = total_p = 0.0
    for b in [int(x) for x in args.blocks.split(",")]:
        m = study.module(b)
        t0 = time.perf_counter()
        pc = cached.ppl({b: m})
        tc = time.perf_counter() - t0
        t0 = time.perf_counter()
        pp = plain.ppl({b: m})
        tp = time.perf_counter() - t0
        total_c, total_p = total_c + tc, total_p + tp
        print(f"{b:>5} {tc:>9.2f} {tp:>8.2f} {tp / tc:>12.2f} {pc:>11.5f} {pp:>10.5f}")
    print(f"all listed blocks: plain ÷ cached = {total_p / total_c:.2f}")


if __name__ == "__main__":
    main()
