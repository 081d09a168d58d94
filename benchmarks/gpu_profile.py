"""Where the exact capture's time goes on an accelerator (issue 91): one JSON and one text table from one process.

    python benchmarks/gpu_profile.py --model DIR --device cuda --tokens 204800 --out results/bench/gpu_profile
    python benchmarks/gpu_profile.py --model DIR --device cpu --tokens 4096 --out /tmp/prof     (a CPU check)

On the same windows, each the best of `--rounds` after a warm-up: the plain forward pass (the whole model), the
*trunk* (the forward pass stopped after the last FFN block with hooks that do nothing: the capture's own forward,
the floor it cannot go under) and the exact and fast captures. Then one exact capture under torch.profiler, with
each of the capture's steps labelled (`Moments.update`, the first rows, the held-out sums, the fits, the probe
forward, the end): per step its host (CPU) seconds and the device seconds of the kernels it launched; the device's
busy time (the union of its kernels' intervals) against the wall; the host synchronisations and copies by kind; the
top kernels. Last, the pieces alone (`--micro`): one batch's upper-triangle product as the capture takes it (column
panels) and as one product, and one block's float64 eigensolve, on the device and on the host.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu  # noqa: E402  (benchmarks/gpu.py: the windows, the plain forward and the capture as it times them)

from linrec.collect import capture as capture_module  # noqa: E402
from linrec.collect.rows import FirstRows  # noqa: E402
from linrec.inputs.hf import input_device  # noqa: E402
from linrec.inputs.models import load_model  # noqa: E402
from linrec.inputs.sites import ffn_hooks, run_until_stop  # noqa: E402
from linrec.stats.heldout import HeldOutSums  # noqa: E402
from linrec.stats.moments import Moments, upper_product  # noqa: E402

# The capture's steps, labelled while profiling: (owner, attribute, label).
STEPS = [
    (Moments, "update", "stats: Moments.update"),
    (FirstRows, "write", "first rows: write"),
    (FirstRows, "moments", "end: first-row moments"),
    (FirstRows, "arrays", "end: first rows to host"),
    (HeldOutSums, "update", "held-out sums: update"),
    (HeldOutSums, "fit", "fits: HeldOutSums.fit"),
    (HeldOutSums, "result", "end: held-out sums to host"),
    (capture_module, "probe_sites", "start: probe forward"),
    (capture_module, "memory_plan", "start: memory plan"),
]


@contextlib.contextmanager
def labelled():
    """Every step in `STEPS` wrapped in a `record_function` of its label while the block runs."""
    saved = []
    for owner, name, label in STEPS:
        fn = getattr(owner, name)
        saved.append((owner, name, fn))

        def wrapped(*a, _fn=fn, _label=label, **k):
            with torch.profiler.record_function(_label):
                return _fn(*a, **k)

        setattr(owner, name, functools.wraps(fn)(wrapped))
    try:
        yield
    finally:
        for owner, name, fn in saved:
            setattr(owner, name, fn)


def trunk(loaded, windows, batch_size: int) -> None:
    """The capture's forward pass alone: stopped after the last FFN block, hooks that do nothing."""
    with ffn_hooks(loaded.sites, lambda *_: None, stop_after_last=True), torch.no_grad():
        for ids in gpu._batches(windows, batch_size):
            run_until_stop(loaded.model, input_ids=ids.to(input_device(loaded.model)), use_cache=False)


def _union_seconds(intervals: list[tuple[float, float]]) -> float:
    """Seconds covered by the union of (start, end) intervals in microseconds."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total / 1e6


def profiled(args, loaded, windows) -> dict:
    from torch.profiler import ProfilerActivity, profile

    on_device = args.device.startswith("cuda")
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_device else [])
    with labelled(), profile(activities=acts) as prof:
        t = time.perf_counter()
        gpu.capture(loaded, windows, "float64", args.batch_size)
        gpu._sync(args.device)
        wall = time.perf_counter() - t
    events = prof.events()
    kernels = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA]
    busy = _union_seconds([(e.time_range.start, e.time_range.end) for e in kernels])
    averages = prof.key_averages()

    def device_us(row) -> float:
        return float(getattr(row, "device_time_total", getattr(row, "cuda_time_total", 0.0)))

    labels = {label for *_, label in STEPS}
    steps = {
        r.key: {"calls": r.count, "host_s": r.cpu_time_total / 1e6, "device_s": device_us(r) / 1e6}
        for r in averages
        if r.key in labels
    }
    runtime = {
        r.key: {"calls": r.count, "host_s": r.cpu_time_total / 1e6}
        for r in averages
        if r.key.startswith(("cuda", "cudaMemcpy", "Memcpy", "Memset"))
    }
    copies = {}
    for e in kernels:
        if e.name.startswith("Memcpy"):
            c = copies.setdefault(e.name, {"count": 0, "device_s": 0.0})
            c["count"] += 1
            c["device_s"] += (e.time_range.end - e.time_range.start) / 1e6
    top_kernels = {}
    for e in kernels:
        k = top_kernels.setdefault(e.name[:90], {"count": 0, "device_s": 0.0})
        k["count"] += 1
        k["device_s"] += (e.time_range.end - e.time_range.start) / 1e6
    top = dict(sorted(top_kernels.items(), key=lambda kv: -kv[1]["device_s"])[:20])
    text = averages.table(sort_by="self_cpu_time_total", row_limit=25)
    if on_device:
        text += "\n" + averages.table(sort_by="self_device_time_total", row_limit=25)
    (args.out / "profile_table.txt").write_text(text)
    return {
        "wall_s": wall,
        "device_busy_s": busy,
        "device_busy_share": busy / wall,
        "kernel_sum_s": sum((e.time_range.end - e.time_range.start) for e in kernels) / 1e6,
        "kernels": len(kernels),
        "steps": steps,
        "runtime_calls": runtime,
        "copies": copies,
        "top_kernels": top,
    }


def _time(fn, device: str, reps: int) -> float:
    fn()
    gpu._sync(device)
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    gpu._sync(device)
    return (time.perf_counter() - t) / reps


def micro(args, loaded, rows: int) -> dict:
    """One batch's statistics product and one block's eigensolve, alone."""
    dev = args.device
    d_in = loaded.model.config.hidden_size  # the FFN's input and output width in these layouts
    d = 2 * d_in
    g = torch.Generator(device="cpu").manual_seed(0)
    z = torch.randn(rows, d, generator=g, dtype=torch.float64).to(dev)
    M = torch.zeros(d, d, dtype=torch.float64, device=dev)
    out = {"rows": rows, "d": d}
    out["panels_s"] = _time(lambda: upper_product(M, z), dev, 10)
    out["full_addmm_s"] = _time(lambda: M.addmm_(z.T, z), dev, 10)
    z32 = z.float()
    out["panels_fp32_s"] = _time(lambda: upper_product(M, z32), dev, 10)
    a = torch.randn(4 * d_in, d_in, generator=g, dtype=torch.float64)
    A = (a.T @ a / len(a)).to(dev)
    out["eigh_device_s"] = _time(lambda: torch.linalg.eigh(A), dev, 3)
    out["cholesky_device_s"] = _time(lambda: torch.linalg.cholesky_ex(A), dev, 3)
    out["eigh_batched12_device_s"] = _time(lambda: torch.linalg.eigh(A.expand(12, -1, -1).contiguous()), dev, 1)
    out["eigh_host_s"] = _time(lambda: torch.linalg.eigh(A.cpu()), "cpu", 3)
    if dev.startswith("cuda"):
        try:
            torch.backends.cuda.preferred_linalg_library("magma")
            out["eigh_device_magma_s"] = _time(lambda: torch.linalg.eigh(A), dev, 3)
        except RuntimeError as err:
            out["eigh_device_magma_s"] = str(err)[:80]
        finally:
            torch.backends.cuda.preferred_linalg_library("default")
    return out


def variants(args, loaded, windows) -> dict:
    """The exact capture with the cuts of issue 91 on and off (`linrec.collect.overlap`: the statistics on a side
    stream, the fits on a thread beside the test windows; `fit_affine`'s guarded Cholesky solve of the held-out maps):
    per variant its best seconds, the solvers its maps took and the largest |ΔR²_lin| from the capture with all on."""
    import linrec.stats.heldout as heldout_module
    from linrec.analyses.recoverability import ceiling_table
    from linrec.collect import overlap
    from linrec.stats.ceiling import fit_affine

    out, tables = {}, {}
    for side, beside, chol in ((0, 0, 0), (1, 0, 0), (1, 1, 0), (1, 1, 1)):
        overlap.SIDE_STREAM, overlap.FITS_BESIDE = bool(side), bool(beside)
        heldout_module.fit_affine = functools.partial(_fit_as, fit_affine, bool(chol))
        try:
            name = f"side={side},beside={beside},cholesky={chol}"
            sec, _, cap = gpu._timed(lambda: gpu.capture(loaded, windows, "float64", args.batch_size), args.device, 2)
            tables[name] = ceiling_table(cap)["r2_lin"].to_numpy()
            out[name] = {
                "exact_s": sec,
                "fit_s": cap.meta["fit_seconds"],
                "solvers": sorted({f.solver for f in cap._fits.values()}),
            }
            del cap
        finally:
            overlap.SIDE_STREAM, overlap.FITS_BESIDE = True, True
            heldout_module.fit_affine = fit_affine
    ref = tables["side=1,beside=1,cholesky=1"]
    for name, r2 in tables.items():
        out[name]["max_abs_dr2_vs_all"] = float(abs(r2 - ref).max())
    return out


def _fit_as(fit_affine, use_cholesky: bool, *a, **k):
    k["cholesky"] = use_cholesky
    return fit_affine(*a, **k)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--corpus", default="wiki")
    p.add_argument("--device", default="cuda")
    p.add_argument("--tokens", type=int, default=204_800)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--no-micro", dest="micro", action="store_false")
    p.add_argument("--variants", action="store_true", help="each cut on and off (issue 91), before the profile")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    loaded = load_model(args.model, device=args.device)
    windows, k = gpu._windows(args, loaded.tokenizer, args.tokens)
    rec = {"device": args.device, "torch": torch.__version__, "tokens": int(windows.ids.numel()), "text_repeated": k}
    if args.device.startswith("cuda"):
        rec["card"] = torch.cuda.get_device_name(0)
    report = args.out / "gpu_profile.json"

    def write():
        report.write_text(json.dumps(rec, indent=1))
        print(json.dumps({k: v for k, v in rec.items() if not isinstance(v, dict)}), flush=True)

    for name, fn in (
        ("plain_s", lambda: gpu.plain_forward(loaded, windows, args.device, args.batch_size)),
        ("trunk_s", lambda: trunk(loaded, windows, args.batch_size)),
        ("exact_s", lambda: gpu.capture(loaded, windows, "float64", args.batch_size)),
        ("fast_s", lambda: gpu.capture(loaded, windows, "float32", args.batch_size)),
    ):
        rec[name] = gpu._timed(fn, args.device, args.rounds)[0]
        write()
    rec["ratio_exact"], rec["ratio_fast"] = rec["exact_s"] / rec["plain_s"], rec["fast_s"] / rec["plain_s"]
    rec["ratio_trunk"] = rec["trunk_s"] / rec["plain_s"]
    cap = gpu.capture(loaded, windows, "float64", args.batch_size)
    rec["meta_fit_s"], rec["meta_heldout_s"] = cap.meta["fit_seconds"], cap.meta["heldout_seconds"]
    del cap
    if args.variants:
        rec["variants"] = variants(args, loaded, windows)
        write()
    rec["profile"] = profiled(args, loaded, windows)
    write()
    if args.micro:
        rec["micro"] = micro(args, loaded, args.batch_size * args.seq_len)
        write()


if __name__ == "__main__":
    main()
