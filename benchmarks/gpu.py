"""The capture on an accelerator, against the plain forward pass on the same windows, in one process (issue 63).

    python benchmarks/gpu.py --model DIR --device cuda --tokens 204800 --csv results/bench/gpu.csv
    python benchmarks/gpu.py --model DIR --device cpu --tokens 2048 --compare-tokens 1024 --peer-tokens 2048

For each token count: the plain forward pass (the whole model, LM head included, `use_cache=False`), linrec's exact
capture (float64 products) and fast capture (float32 products), each the best of `--rounds` after a warm-up, with
its peak device memory; the ceiling table of the last exact capture (every block's fit, κ, scores, intervals); and,
beside them, what a hooks library's user does on the same device (`peer`): keep every (x, y) row of every block
there in float32 and fit each block with `torch.linalg.lstsq` in float64 (the affine map with a column of ones), or
report that the rows do not fit in memory. With `--compare-tokens`, a capture of the same windows on the CPU gives
the agreement |ΔR²_lin| between the device and the host. `ratio_exact` and `ratio_fast` are capture ÷ plain forward.
Where the capture's time goes (torch.profiler, each step labelled, each cut on and off): `benchmarks/gpu_profile.py`.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import gc
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from linrec.analyses.recoverability import ceiling_table
from linrec.collect.capture import run_capture
from linrec.collect.config import CaptureConfig
from linrec.inputs.corpora import WindowCut, load_windows
from linrec.inputs.models import load_model
from linrec.inputs.sites import ffn_hooks, run_until_stop
from linrec.stats.ceiling import r2_rows


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _reset_peak(device: str) -> None:
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def _peak_gib(device: str) -> float:
    return torch.cuda.max_memory_allocated() / 2**30 if device.startswith("cuda") else float("nan")


def _timed(fn, device: str, rounds: int, warm: bool = True) -> tuple[float, float, object]:
    """(best seconds, peak GiB of the last round, last result) of `fn()` after one untimed warm-up."""
    if warm:
        fn()
    best, out = float("inf"), None
    for _ in range(rounds):
        _reset_peak(device)
        _sync(device)
        t = time.perf_counter()
        out = fn()
        _sync(device)
        best = min(best, time.perf_counter() - t)
    return best, _peak_gib(device), out


def _windows(args, tokenizer, tokens: int):
    """(windows, k): the corpus's windows for `tokens`; where it holds fewer, its windows repeated k times (timing
    and memory only: the R² of repeated text is not a measurement of anything)."""
    w = load_windows(args.corpus, tokenizer, WindowCut(args.seq_len, tokens, args.seed, 0.2))
    have = int(w.ids.numel())
    if have >= tokens * 0.95:
        return w, 1
    k = -(-tokens // have)
    n = len(w.ids)
    cat = lambda a: np.concatenate([a + j * n for j in range(k)])  # noqa: E731
    return dataclasses.replace(w, ids=w.ids.repeat(k, 1), train=cat(w.train), test=cat(w.test)), k


def _batches(windows, batch_size: int):
    order = np.concatenate([windows.train, windows.test])
    return [windows.ids[order[i : i + batch_size]] for i in range(0, len(order), batch_size)]


def plain_forward(loaded, windows, device: str, batch_size: int) -> None:
    with torch.no_grad():
        for ids in _batches(windows, batch_size):
            loaded.model(input_ids=ids.to(device), use_cache=False)


def capture(loaded, windows, product: str, batch_size: int):
    cfg = CaptureConfig("bench", "bench", windows.seq_len, int(windows.ids.numel()), 0, 0.2, 0, product)
    return run_capture(loaded, windows, cfg, None, batch_size, progress=False)


def peer_lstsq(loaded, windows, device: str, batch_size: int) -> list[float]:
    """Every row of every block kept on the device (float32), then per block `torch.linalg.lstsq` on [x, 1] in float64
    on the train windows, scored on the test windows: held-out R² per block."""
    rows: dict[int, dict[str, list]] = {}
    split = {"now": "train"}

    def keep(block, x, y):
        r = rows.setdefault(block, {"train": [], "test": []})[split["now"]]
        r.append(
            (x.detach().reshape(-1, x.shape[-1]).float().clone(), y.detach().reshape(-1, y.shape[-1]).float().clone())
        )

    with ffn_hooks(loaded.sites, keep, stop_after_last=True), torch.no_grad():
        for name in ("train", "test"):
            split["now"] = name
            idx = getattr(windows, name)
            for i in range(0, len(idx), batch_size):
                run_until_stop(loaded.model, input_ids=windows.ids[idx[i : i + batch_size]].to(device), use_cache=False)
    out = []
    for b in sorted(rows):
        (xtr, ytr), (xte, yte) = (
            (torch.cat([a for a, _ in rows[b][s]]), torch.cat([c for _, c in rows[b][s]])) for s in ("train", "test")
        )
        ones = lambda x: torch.cat([x.double(), torch.ones(len(x), 1, dtype=torch.float64, device=x.device)], 1)  # noqa: E731
        coef = torch.linalg.lstsq(ones(xtr), ytr.double()).solution
        out.append(r2_rows(yte.double().cpu().numpy(), (ones(xte) @ coef).cpu().numpy()))
        del rows[b]
    return out


def measure(args, loaded, tokens: int) -> dict:
    dev = args.device
    windows, k = _windows(args, loaded.tokenizer, tokens)
    rec = {"tokens": int(windows.ids.numel()), "windows": len(windows.ids), "text_repeated": k}
    rounds = args.rounds if tokens <= 500_000 else 1  # the big run: one round, its warm-up done at the smaller size
    rec["plain_s"], rec["plain_peak_gib"], _ = _timed(
        lambda: plain_forward(loaded, windows, dev, args.batch_size), dev, rounds, warm=rounds > 1
    )
    for product, name in (("float64", "exact"), ("float32", "fast")):
        rec[f"{name}_s"], rec[f"{name}_peak_gib"], cap = _timed(
            lambda p=product: capture(loaded, windows, p, args.batch_size), dev, rounds, warm=rounds > 1
        )
        if name == "exact":
            _sync(dev)
            t = time.perf_counter()
            table = ceiling_table(cap)
            _sync(dev)
            rec["ceiling_s"] = time.perf_counter() - t
            rec["r2_lin"] = table["r2_lin"].tolist()
        del cap
    rec["ratio_exact"], rec["ratio_fast"] = rec["exact_s"] / rec["plain_s"], rec["fast_s"] / rec["plain_s"]
    if tokens in args.peer_tokens:
        try:
            rec["peer_s"], rec["peer_peak_gib"], r2 = _timed(
                lambda: peer_lstsq(loaded, windows, dev, args.batch_size), dev, 1, warm=False
            )
            rec["peer_status"] = "ok"
            rec["peer_vs_linrec_max_abs_dr2"] = float(np.max(np.abs(np.array(r2) - np.array(rec["r2_lin"]))))
        except torch.OutOfMemoryError as err:
            rec["peer_status"] = f"out of memory ({str(err).splitlines()[0][:80]})"
        rec["peer_vs_exact_ratio"] = rec.get("peer_s", float("nan")) / (rec["exact_s"] + rec["ceiling_s"])
        gc.collect()
        if dev.startswith("cuda"):
            torch.cuda.empty_cache()
    print(json.dumps({k: v for k, v in rec.items() if k != "r2_lin"}), flush=True)
    return rec


def agreement(args, loaded, tokens: int) -> dict[str, float]:
    """max |ΔR²_lin| between a capture on the device and one on the CPU of the same windows, and where it comes from:
    the device's statistics solved on the host (so the forward pass and the accumulation alone differ) and the device's
    statistics solved on the device against that (the solver alone)."""
    windows = load_windows(args.corpus, loaded.tokenizer, WindowCut(args.seq_len, tokens, args.seed, 0.2))
    cap = capture(loaded, windows, "float64", args.batch_size)
    on_dev = ceiling_table(cap)["r2_lin"].to_numpy()
    for split in cap.stats.values():  # the same statistics, moved to the host: the ceiling solves them there
        for m in split:
            m.to("cpu")
    cap._fits.clear(), cap._rest_fits.clear(), cap._scores.clear()
    solved_on_host = ceiling_table(cap)["r2_lin"].to_numpy()
    cpu = load_model(args.model, device="cpu")
    on_cpu = ceiling_table(capture(cpu, windows, "float64", args.batch_size))["r2_lin"].to_numpy()
    return {
        "device_vs_cpu_max_abs_dr2": float(np.abs(on_dev - on_cpu).max()),
        "forward_only_max_abs_dr2": float(np.abs(solved_on_host - on_cpu).max()),
        "solver_only_max_abs_dr2": float(np.abs(on_dev - solved_on_host).max()),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="a model spec linrec loads (a trained layout's folder, a hub id)")
    p.add_argument("--corpus", default="wiki")
    p.add_argument("--device", default="cuda")
    p.add_argument("--tokens", type=int, nargs="+", default=[204_800])
    p.add_argument("--peer-tokens", type=int, nargs="*", default=[204_800, 2_048_000])
    p.add_argument("--compare-tokens", type=int, default=20_480, help="0: no device/CPU agreement check")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--csv", type=Path, default=None)
    args = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    loaded = load_model(args.model, device=args.device)
    card = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "cpu"
    n_params = sum(p.numel() for p in loaded.model.parameters())
    common = {
        "date": datetime.date.today().isoformat(),
        "card": card,
        "torch": torch.__version__,
        "model": Path(args.model).name,
        "params_m": round(n_params / 1e6, 1),
        "blocks": len(loaded.sites),
        "batch_size": args.batch_size,
    }
    tokens = sorted(set(args.tokens) | set(args.peer_tokens))
    recs: list[dict] = []

    def write() -> None:  # after every step, so a run stopped at its time limit keeps what it measured
        table = pd.DataFrame([{k: v for k, v in r.items() if k != "r2_lin"} for r in recs])
        if args.csv:
            args.csv.parent.mkdir(parents=True, exist_ok=True)
            table.to_csv(args.csv, index=False)
        return table

    for i, t in enumerate(tokens):
        recs.append({**common, **measure(args, loaded, t)})
        write()
        if i == 0 and args.compare_tokens:  # the agreement and the profile before the largest (longest) size
            d = {"cmp_tokens": args.compare_tokens, **agreement(args, loaded, args.compare_tokens)}
            common.update(d)
            recs[0].update(d)
            print(json.dumps(d), flush=True)
            write()
    print(write().to_string(index=False))


if __name__ == "__main__":
    main()
