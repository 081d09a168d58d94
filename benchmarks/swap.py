"""What a per-block swap sweep costs, in plain forward passes over the same held-out windows.

    .venv/bin/python benchmarks/swap.py [--models smollm2-135m gemma3-270m] [--corpus wiki] [--tokens 20480]
                                        [--out results/bench/swap.csv]

Per model, in one process and one thread setting:
- `forward`: one plain `model(input_ids)` pass over the capture's held-out windows (no loss);
- `perplexity`: one plain perplexity evaluation (forward + per-token NLL);
- `linrec swap`: what the command does for every block (`HeldOutSwaps.table`: base run with
  prefix cache, then each block swapped alone, ΔPPL with its paired skew-corrected jackknife interval);
- the floor of that sweep if nothing were wasted: Σ_i (cost of blocks i… + head) / cost of a
  forward, estimated from the per-block and head times measured here.
Ratios are seconds ÷ the `forward` seconds of the same run. A cached-prefix ΔPPL is checked against
a plain full forward on two blocks (they must agree). Rows go to `--out` (CSV) and stdout.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import torch

from linrec.analyses.perplexity import PerplexityEvaluator
from linrec.analyses.swap import SwapStudy
from linrec.collect.capture import get_capture
from linrec.collect.config import CaptureConfig, CaptureRun
from linrec.inputs.models import load_model
from linrec.inputs.sites import find_ffn_sites


@torch.no_grad()
def _forward_seconds(model, ids, batch_size) -> tuple[float, float]:
    """(seconds of plain forwards over `ids`, share of them spent in the LM head), one warm-up batch first."""
    model(input_ids=ids[:batch_size], use_cache=False)
    head = model.get_output_embeddings()
    spent = {"head": 0.0}

    def pre(module, args):
        spent["t"] = time.perf_counter()

    def post(module, args, out):
        spent["head"] += time.perf_counter() - spent["t"]

    handles = [head.register_forward_pre_hook(pre), head.register_forward_hook(post)]
    try:
        t0 = time.perf_counter()
        for i in range(0, len(ids), batch_size):
            model(input_ids=ids[i : i + batch_size], use_cache=False)
        total = time.perf_counter() - t0
    finally:
        for h in handles:
            h.remove()
    return total, spent["head"] / total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["smollm2-135m", "gemma3-270m"])
    ap.add_argument("--corpus", default="wiki")
    ap.add_argument("--tokens", type=int, default=20_480)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--out", default="results/bench/swap.csv")
    args = ap.parse_args()

    rows = []
    for name in args.models:
        cap = get_capture(
            CaptureConfig(name, args.corpus, tokens=args.tokens, sample_rows=30_000), CaptureRun(args.batch_size)
        )
        loaded = load_model(name)
        study = SwapStudy(cap, loaded, batch_size=args.batch_size, progress=False)
        ids = study.windows.split("test")
        n_blocks = len(find_ffn_sites(loaded.model))
        fwd, head_share = _forward_seconds(loaded.model, ids, args.batch_size)
        t0 = time.perf_counter()
        plain = PerplexityEvaluator(loaded.model, ids, args.batch_size, reuse_prefix=False)
        ppl_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        table = study.heldout.table()
        sweep = time.perf_counter() - t0
        # a swap at block i runs blocks i… and the head: Σ_i [(L − i)/L · (1 − head) + head] forwards at the least
        floor = sum((n_blocks - i) / n_blocks * (1 - head_share) + head_share for i in range(n_blocks))
        for b in (0, n_blocks - 1):
            m = study.heldout.module(b)
            q = plain.ppl({b: m})
            assert abs(q - float(table.loc[table["block"] == b, "ppl_swapped"].iloc[0])) <= 1e-6 * q
        print(f"{name}: {len(ids)} held-out windows × {ids.shape[1]} tokens, {n_blocks} blocks")
        print(f"  plain forward {fwd:.2f} s (LM head {head_share:.0%}); plain perplexity {ppl_s:.2f} s")
        print(
            f"  linrec swap, every block: {sweep:.1f} s = {sweep / fwd:.1f} forwards "
            f"(floor with prefix reuse ≈ {floor:.1f} forwards)"
        )
        for r in study.timings.to_dict("records"):
            print(f"    {r['step']:<28} {r['seconds']:7.1f} s  {r['evaluations']:3d} evaluations")
        rows += [
            {"model": name, "measure": "plain forward", "seconds": fwd, "forwards": 1.0},
            {"model": name, "measure": "plain perplexity", "seconds": ppl_s, "forwards": ppl_s / fwd},
            {"model": name, "measure": "linrec swap, every block", "seconds": sweep, "forwards": sweep / fwd},
            {"model": name, "measure": "floor of the sweep (prefix reuse)", "seconds": floor * fwd, "forwards": floor},
            {
                "model": name,
                "measure": "LM head share of a forward",
                "seconds": head_share * fwd,
                "forwards": head_share,
            },  # fmt: skip
        ]
        del study, loaded, plain
    from machine import machine_info

    rows = [{**r, **machine_info()} for r in rows]  # where it ran, on every row (as capture.csv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
