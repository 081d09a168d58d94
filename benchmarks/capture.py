"""Benchmark of the capture stage: time and peak memory of linrec's one-pass statistics vs plain inference and vs the
paper's store-every-row + lstsq setup, all on the same token windows, in one run.

    .venv/bin/python benchmarks/capture.py                 # 20k tokens, plus the 200k-token memory check (~10+ min)
    .venv/bin/python benchmarks/capture.py --skip-big      # 20k tokens only (a few minutes)
    .venv/bin/python benchmarks/capture.py --out bench.json
    .venv/bin/python benchmarks/capture.py --csv results/bench/capture.csv   # what `make bench` runs (~20 min)

Every method runs in a fresh subprocess (`--worker METHOD`, printing one JSON record) so that each one's peak RSS
(getrusage ru_maxrss, the high-water mark) is its own. Each worker loads the model and windows (untimed), warms up
on one batch of the method itself, then times the method over all windows: train windows first, then test, in
batches of --batch-size, with PyTorch's default thread count. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
TARGET_CAPTURE = 1.10  # capture ≤ 1.10 × plain forward (issue 19)
TARGET_FLAT = 1.2  # peak RSS at --big-tokens ≤ 1.2 × peak at --tokens

# method → (label, note) in table order
METHODS = {
    "plain": ("plain forward", "model(input_ids), LM head, use_cache=False"),
    "body": ("body-only forward", "all blocks, no-op hooks, stop after last (no LM head)"),
    "capture64": ("capture f64 (stats)", "run_capture out_dir=None, product=float64 (exact)"),
    "capture32": ("capture f32 (stats)", "run_capture out_dir=None, product=float32 (fast)"),
    "capture64_rows": ("capture f64 + rows", "sample_rows=30000 written to a temp dir (memmaps)"),
    "ours": ("ours: capture + ceiling", "capture f64 + ceiling_table on the stats"),
    "paper": (
        "paper: store + lstsq",
        "hooks store all (x,y) float32 rows; per block np.linalg.lstsq on [x,1], float64",
    ),
    "big": ("capture f64 (stats) @big", "run_capture sample_rows=0 at --big-tokens"),
    "plainbig": ("plain forward @big", "the plain forward at --big-tokens: how the machine itself scales"),
}


# ---- helpers used by the workers -----------------------------------------------------------------------------
def _rss_now_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _batches(windows, batch_size: int):
    """The batches run_capture makes: (split, window indices), train first."""
    return [
        (s, idx[i : i + batch_size])
        for s, idx in (("train", windows.train), ("test", windows.test))
        for i in range(0, len(idx), batch_size)
    ]


class BatchClock:
    """Start time of every full-length model call (a forward pre-hook on the model): per-batch times, for any method."""

    def __init__(self, model, seq_len: int):
        self.starts: list[float] = []
        self.seq_len = seq_len
        self.handle = model.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is not None and ids.shape[-1] == self.seq_len:
            self.starts.append(time.perf_counter())

    def reset(self) -> None:
        self.starts.clear()

    def per_batch(self, end: float) -> list[float]:
        t = self.starts + [end]
        return [b - a for a, b in zip(t, t[1:])]


def _one_batch(windows, batch_size: int):
    """Windows holding one batch of train windows and one test window (the warm-up set)."""
    import dataclasses

    import numpy as np

    n = min(batch_size, len(windows.train))
    keep = np.concatenate([windows.train[:n], windows.test[:1]])
    return dataclasses.replace(windows, ids=windows.ids[keep], train=np.arange(n), test=np.array([n]))


def _ceiling_summary(capture) -> tuple[float, dict]:
    from linrec.analyses.recoverability import ceiling_table

    t0 = time.perf_counter()
    table = ceiling_table(capture)
    seconds = time.perf_counter() - t0
    return seconds, {
        "r2_lin": table["r2_lin"].tolist(),
        "r2_feature_median": table["r2_feature_median"].tolist(),
        "cond_scaled": table["cond_scaled"].tolist(),
        "rank": table["rank"].tolist(),
    }


def worker(args) -> dict:
    import numpy as np
    import torch

    from linrec.collect.capture import run_capture
    from linrec.collect.config import CaptureConfig
    from linrec.inputs.corpora import WindowCut, load_windows
    from linrec.inputs.models import load_model
    from linrec.inputs.sites import ffn_hooks, find_ffn_sites, run_until_stop

    method = args.worker.split("@")[0]  # "capture64@2": round 2 of the repeated methods
    tokens = args.big_tokens if method in ("big", "plainbig") else args.tokens
    t0 = time.perf_counter()
    loaded = load_model(args.model)
    windows = load_windows(args.corpus, loaded.tokenizer, WindowCut(args.seq_len, tokens, args.seed, 0.2))
    setup_s = time.perf_counter() - t0
    model, bs = loaded.model, args.batch_size
    kwargs = {"use_cache": False} if loaded.is_causal else {}
    sites = find_ffn_sites(model)
    batches = _batches(windows, bs)
    rec: dict = {
        "method": method,
        "tokens": int(windows.ids.numel()),
        "n_windows": int(len(windows.ids)),
        "n_batches": len(batches),
        "threads": torch.get_num_threads(),
        "setup_s": setup_s,
    }
    progress = args.progress and sys.stderr.isatty()
    clock = BatchClock(model, windows.seq_len)
    rec["loadavg_start"] = os.getloadavg()[0]

    def timed_forward(run_batch):
        run_batch(windows.ids[windows.train[:bs]])  # warm-up: one batch, same shape
        gc.collect()
        rec["rss_before_mib"] = _rss_now_mib()
        clock.reset()
        t = time.perf_counter()
        for _, idx in batches:
            run_batch(windows.ids[idx])
        end = time.perf_counter()
        rec["batch_s"] = clock.per_batch(end)
        return end - t

    with torch.no_grad():
        if method in ("plain", "plainbig"):
            rec["seconds"] = timed_forward(lambda ids: model(input_ids=ids, **kwargs))

        elif method == "body":
            with ffn_hooks(sites, lambda b, x, y: None, stop_after_last=True):
                rec["seconds"] = timed_forward(lambda ids: run_until_stop(model, input_ids=ids, **kwargs))

        elif method in ("capture64", "capture32", "capture64_rows", "big"):
            product = "float32" if method == "capture32" else "float64"
            rows = method == "capture64_rows"
            config = CaptureConfig(
                args.model, args.corpus, args.seq_len, tokens, args.seed, 0.2, 30_000 if rows else 0, product
            )
            with tempfile.TemporaryDirectory(prefix="linrec-bench-") as tmp:
                warm = run_capture(
                    loaded, _one_batch(windows, bs), config, Path(tmp) / "warm" if rows else None, bs, progress=False
                )
                del warm
                gc.collect()
                rec["rss_before_mib"] = _rss_now_mib()
                clock.reset()
                t = time.perf_counter()
                capture = run_capture(
                    loaded, windows, config, Path(tmp) / "run" if rows else None, bs, progress=progress
                )
                end = time.perf_counter()
                rec["seconds"] = end - t
                rec["batch_s"] = clock.per_batch(end)
                rec["loop_seconds"] = capture.meta["seconds"]
                rec["peak_after_capture_mib"] = _peak_mib()
                rec["n_rows"] = capture.meta["n_rows"]
                if rows:
                    rec["rows_on_disk_mib"] = (
                        sum(p.stat().st_size for p in (Path(tmp) / "run").rglob("*") if p.is_file()) / 2**20
                    )
                else:  # the ceiling from the stats (what "ours" adds to the capture)
                    rec["ceiling_s"], rec["ceiling"] = _ceiling_summary(capture)

        elif method == "paper":
            # The setup the paper implies: keep every (x, y) row of every block (float32, as the hooks see them),
            # then per block affine least squares on [x, 1] with numpy.linalg.lstsq in float64,
            # held-out R² on test rows.
            T = windows.seq_len
            n_train, n_rows = len(windows.train) * T, len(windows.ids) * T
            dims = {}

            def grab(b, x, y):
                dims[b] = (x.shape[-1], y.shape[-1])

            with ffn_hooks(sites, grab, stop_after_last=True):
                run_until_stop(model, input_ids=windows.ids[:1, :2], **kwargs)
            X = [np.empty((n_rows, dims[s.index][0]), np.float32) for s in sites]  # preallocated: no list+concat copy
            Y = [np.empty((n_rows, dims[s.index][1]), np.float32) for s in sites]
            pos = {"at": 0}

            def store(b, x, y):
                x, y = x.reshape(-1, x.shape[-1]), y.reshape(-1, y.shape[-1])
                r0 = pos["at"]
                X[b][r0 : r0 + len(x)] = x.cpu().numpy()
                Y[b][r0 : r0 + len(y)] = y.cpu().numpy()

            with ffn_hooks(sites, store, stop_after_last=True):
                run_until_stop(
                    model, input_ids=windows.ids[windows.train[:bs]], **kwargs
                )  # warm-up (rows overwritten below)
                gc.collect()
                rec["rss_before_mib"] = _rss_now_mib()
                clock.reset()
                t = time.perf_counter()
                for _, idx in batches:
                    run_until_stop(model, input_ids=windows.ids[idx], **kwargs)
                    pos["at"] += len(idx) * T
                end = time.perf_counter()
                rec["forward_store_s"] = end - t
                rec["batch_s"] = clock.per_batch(end)
            assert pos["at"] == n_rows
            rec["rows_in_memory_mib"] = sum(a.nbytes for a in X + Y) / 2**20
            t1 = time.perf_counter()
            r2, r2_med = [], []
            it = range(len(sites))
            if progress:
                from tqdm.auto import tqdm

                it = tqdm(it, desc="lstsq per block", unit="block")
            for b in it:
                d = X[b].shape[1]
                A = np.empty((n_train, d + 1))
                A[:, :d] = X[b][:n_train]
                A[:, d] = 1.0
                coef = np.linalg.lstsq(A, Y[b][:n_train].astype(np.float64), rcond=None)[0]
                del A
                xt, yt = X[b][n_train:].astype(np.float64), Y[b][n_train:].astype(np.float64)
                err = yt - (xt @ coef[:d] + coef[d])
                sse, sst = (err**2).sum(0), ((yt - yt.mean(0)) ** 2).sum(0)
                r2.append(float(1.0 - sse.sum() / sst.sum()))
                with np.errstate(divide="ignore", invalid="ignore"):
                    r2_med.append(
                        float(np.nanmedian(np.where(sst > 0, 1.0 - sse / np.where(sst > 0, sst, 1.0), np.nan)))
                    )
            rec["lstsq_s"] = time.perf_counter() - t1
            rec["seconds"] = rec["forward_store_s"] + rec["lstsq_s"]
            rec["ceiling"] = {"r2_lin": r2, "r2_feature_median": r2_med}
        else:
            raise SystemExit(f"unknown worker method {method!r}; one of {', '.join(METHODS)}")
    clock.handle.remove()
    rec["peak_rss_mib"] = _peak_mib()
    rec["loadavg_end"] = os.getloadavg()[0]
    return rec


# ---- orchestrator ---------------------------------------------------------------------------------------------
def _busy_cpu_s() -> float:
    """CPU-seconds all processes have spent busy since boot, summed over CPUs
    (`linrec.base.threads.busy_cpu_seconds`)."""
    from linrec.base.threads import busy_cpu_seconds

    return busy_cpu_seconds()


def _children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def wait_quiet(max_wait: float, ncpu: int, threshold: float = 0.25) -> float:
    """Wait (up to max_wait s) until other processes use < threshold of the CPUs over 2 s; their share at the end."""
    t0 = time.perf_counter()
    while True:
        b0, t = _busy_cpu_s(), time.perf_counter()
        time.sleep(2.0)
        share = (_busy_cpu_s() - b0) / ((time.perf_counter() - t) * ncpu)
        if share < threshold or time.perf_counter() - t0 >= max_wait:
            return share


def run_worker(method: str, args) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    cmd = [
        sys.executable,
        str(HERE),
        "--worker",
        method,
        "--worker-out",
        out,
        "--model",
        args.model,
        "--corpus",
        args.corpus,
        "--tokens",
        str(args.tokens),
        "--big-tokens",
        str(args.big_tokens),
        "--batch-size",
        str(args.batch_size),
        "--seq-len",
        str(args.seq_len),
        "--seed",
        str(args.seed),
    ] + ([] if args.progress else ["--no-progress"])
    env = dict(os.environ)
    if args.blas_threads > 0:  # numpy's OpenBLAS only; torch uses MKL + OpenMP and keeps its default threads
        env["OPENBLAS_NUM_THREADS"] = str(args.blas_threads)
    ncpu = os.cpu_count() or 1
    before = wait_quiet(args.wait_quiet, ncpu) if args.wait_quiet > 0 else float("nan")
    print(f"[{time.strftime('%H:%M:%S')}] {method:15s} …", end=" ", flush=True)
    t, busy0, own0 = time.perf_counter(), _busy_cpu_s(), _children_cpu_s()
    proc = subprocess.run(cmd, env=env)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"worker {method} failed (exit {proc.returncode}); run: {' '.join(cmd)}")
    rec = json.loads(Path(out).read_text())
    os.unlink(out)
    # CPU the rest of the machine used while this worker ran, as a share of all CPUs: the contention gauge
    rec["other_cpu_share"] = max(0.0, (_busy_cpu_s() - busy0) - (_children_cpu_s() - own0)) / (wall * ncpu)
    rec["other_cpu_share_before"] = before
    print(
        f"{rec['seconds']:8.1f} s timed, peak {rec['peak_rss_mib']:6.0f} MiB, "
        f"other load {rec['other_cpu_share']:4.0%} of CPUs"
        f"  ({wall:.0f} s wall)",
        flush=True,
    )
    return rec


def _median(v) -> float:
    v = sorted(v)
    n = len(v)
    return float(v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--corpus", default="wiki")
    p.add_argument("--tokens", type=int, default=20_480)
    p.add_argument("--big-tokens", type=int, default=204_800)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--skip-big", action="store_true", help="skip the --big-tokens memory run (~10x the time of the 20k capture)"
    )
    p.add_argument(
        "--blas-threads",
        type=int,
        default=1,
        help="OPENBLAS_NUM_THREADS for numpy in the workers (the store+lstsq baseline's lstsq; ceiling_table's "
        "dense algebra is in torch); 0 leaves OpenBLAS's default. Default 1: with 2 threads on a busy 2-core "
        "machine OpenBLAS's lstsq ran ~30x slower (see README)",
    )
    p.add_argument(
        "--wait-quiet",
        type=float,
        default=60,
        metavar="S",
        help="before each method, wait up to S seconds for other processes to use < 25%% of the CPUs (0: don't wait)",
    )
    p.add_argument(
        "--repeats",
        type=int,
        default=3,
        metavar="K",
        help="rounds of (plain forward, capture f64, capture f32); the ratios are medians over rounds (default 3)",
    )
    p.add_argument("--out", type=Path, help="write all results to this JSON file")
    p.add_argument(
        "--csv",
        type=Path,
        help="write one row per measure (with machine, torch version and threads) to this CSV: docs/performance.md's "
        "performance table is generated from it (benchmarks/performance.py)",
    )
    p.add_argument("--report", type=Path, metavar="FILE", help="only re-print the tables of a file written by --out")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no tqdm bars in the workers")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.worker:
        rec = worker(args)
        Path(args.worker_out).write_text(json.dumps(rec))
        return 0

    if args.report:  # re-print the tables of a saved --out file
        saved = json.loads(args.report.read_text())
        for k in ("model", "corpus", "batch_size", "seq_len"):
            setattr(args, k, saved["args"][k])
        args.csv = None
        summarize(saved["raw"], args, None)
        return 0

    import torch

    from linrec.base.files import cache_root

    ncpu = os.cpu_count() or 1
    print(
        f"linrec capture benchmark: model {args.model}, corpus {args.corpus}, {args.tokens} tokens "
        f"(big: {'skipped' if args.skip_big else args.big_tokens}), batch {args.batch_size}x{args.seq_len}, "
        f"torch {torch.__version__} threads {torch.get_num_threads()}, "
        f"numpy BLAS threads {args.blas_threads or 'default'}, "
        f"{ncpu} CPUs, load {os.getloadavg()[0]:.1f}, cache {cache_root()}",
        flush=True,
    )
    # The headline ratios come from --repeats rounds of (plain, capture f64, capture f32), closed by one more plain
    # forward: each capture is divided by the mean of the plain forwards just before and just after it, and the
    # median over rounds is reported. Drift of the machine's speed over the run (the plain forward alone moved by
    # up to 10 % between the start and the end of one run) then cancels instead of landing in the ratio.
    order = [f"{m}@{k}" for k in range(args.repeats) for m in ("plain", "capture64", "capture32")]
    order += [f"plain@{args.repeats}", "body", "capture64_rows", "paper"]
    order += [] if args.skip_big else ["big", "plainbig"]
    raw = {m: run_worker(m, args) for m in order}
    summarize(raw, args, args.out)
    return 0


def rounds(raw: dict) -> tuple[list[dict], list[dict], list[dict]]:
    """The plain forwards (one more than the rounds) and the f64 and f32 captures of every round, in run order.

    Files written before --repeats hold one round: plain, capture64, capture32 and a closing plain2."""
    if "plain2" in raw:
        return [raw["plain"], raw["plain2"]], [raw["capture64"]], [raw["capture32"]]
    k = sum(1 for m in raw if m.startswith("capture64@"))
    return (
        [raw[f"plain@{i}"] for i in range(k + 1)],
        [raw[f"capture64@{i}"] for i in range(k)],
        [raw[f"capture32@{i}"] for i in range(k)],
    )


def paired_ratios(plains: list[dict], runs: list[dict]) -> list[float]:
    """Each run's seconds over the mean of the plain forwards timed just before and just after it."""
    return [r["seconds"] / ((plains[i]["seconds"] + plains[i + 1]["seconds"]) / 2) for i, r in enumerate(runs)]


def summarize(raw: dict, args, out: Path | None) -> None:
    """Print the tables and target lines from the workers' records (and save everything to `out`)."""
    import numpy as np

    ncpu = os.cpu_count() or 1
    plains, runs64, runs32 = rounds(raw)
    res = {m: dict(r) for m, r in raw.items() if "@" not in m and m != "plain2"}
    # the plain forward's mean over every round is the reference of the single-run methods; its spread a noise gauge
    plain_runs = [r["seconds"] for r in plains]
    plain = float(np.mean(plain_runs))
    plain_med = _median([b for r in plains for b in r["batch_s"]])
    spread = (max(plain_runs) - min(plain_runs)) / plain
    res["plain"] = {
        **plains[0],
        "seconds": plain,
        "runs_s": plain_runs,
        "peak_rss_mib": max(r["peak_rss_mib"] for r in plains),
        "batch_s": [b for r in plains for b in r["batch_s"]],
        "loadavg_end": plains[-1]["loadavg_end"],
        "other_cpu_share": float(np.mean([r["other_cpu_share"] for r in plains])),
    }
    for name, runs in (("capture64", runs64), ("capture32", runs32)):
        ratios = paired_ratios(plains, runs)
        mid = int(np.argsort(ratios)[(len(ratios) - 1) // 2])  # the median round (the lower one of an even count)
        res[name] = {
            **runs[mid],
            "ratio": _median(ratios),
            "runs_s": [r["seconds"] for r in runs],
            "ratios": ratios,
            "batch_s": [b for r in runs for b in r["batch_s"]],
            "other_cpu_share": max(r["other_cpu_share"] for r in runs),
        }
    c64, c32, rows64, pp, body = res["capture64"], res["capture32"], res["capture64_rows"], res["paper"], res["body"]
    ours_s = c64["seconds"] + c64["ceiling_s"]
    res["ours"] = {
        "seconds": ours_s,
        "peak_rss_mib": c64["peak_rss_mib"],
        "capture_s": c64["seconds"],
        "ceiling_s": c64["ceiling_s"],
        "tokens": c64["tokens"],
        "other_cpu_share": c64["other_cpu_share"],
    }

    r64, m64 = np.array(c64["ceiling"]["r2_lin"]), np.array(c64["ceiling"]["r2_feature_median"])
    err32 = float(np.max(np.abs(np.array(c32["ceiling"]["r2_lin"]) - r64)))
    err32_med = float(np.max(np.abs(np.array(c32["ceiling"]["r2_feature_median"]) - m64)))
    dpaper = float(np.max(np.abs(np.array(pp["ceiling"]["r2_lin"]) - r64)))
    dpaper_med = float(np.max(np.abs(np.array(pp["ceiling"]["r2_feature_median"]) - m64)))
    mib_per_token = pp["rows_in_memory_mib"] / pp["tokens"]
    ratio64, ratio32 = c64["ratio"], c32["ratio"]

    def med_ratio(m):  # contention-robust: median seconds per batch over the plain forward's
        return _median(res[m]["batch_s"]) / plain_med if "batch_s" in res[m] else float("nan")

    notes = {
        "plain": (
            f"{plains[0]['tokens']} tokens, {plains[0]['n_batches']} batches; "
            f"mean of {len(plains)} runs ({', '.join(f'{x:.1f}' for x in plain_runs)} s)"
        ),
        "body": "no-op hooks, stop after last block (no LM head)",
        "capture64": f"stats only, exact float64 product; {c64['seconds'] / body['seconds']:.2f}x body",
        "capture32": f"stats only, float32 product; {c32['seconds'] / body['seconds']:.2f}x body",
        "capture64_rows": f"+ {rows64['rows_on_disk_mib']:.0f} MiB row sample on disk (memmap pages count in RSS)",
        "ours": f"capture {c64['seconds']:.1f} s + ceiling_table {c64['ceiling_s']:.1f} s",
        "paper": (
            f"fwd+store {pp['forward_store_s']:.1f} s + lstsq {pp['lstsq_s']:.1f} s; "
            f"rows {pp['rows_in_memory_mib']:.0f} MiB"
        ),
    }
    table = ["plain", "body", "capture64", "capture32", "capture64_rows", "ours", "paper"]
    if "big" in res:
        big = res["big"]
        scale = big["tokens"] / plains[0]["tokens"]
        big["plain_est_s"] = plain * scale
        notes["big"] = (
            f"{big['tokens']} tokens; x plain vs plain x{scale:.0f} (est.); "
            f"store+lstsq would need {mib_per_token * big['tokens'] / 1024:.1f} GiB of rows"
        )
        table.append("big")

    widths = [26, 8, 8, 10, 9, 6]
    fmt = lambda cols: "  ".join(
        [cols[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(cols[1:6], widths[1:])] + list(cols[6:])
    )  # noqa: E731
    lines = [
        "",
        f"==== capture benchmark: {args.model} on {args.corpus}, {plains[0]['tokens']} tokens, "
        f"batch {args.batch_size}x{args.seq_len} ====",
        fmt(["method", "seconds", "x plain", "x pl (med)", "peak MiB", "other", "note"]),
        fmt(["-" * 26, "-" * 8, "-" * 8, "-" * 10, "-" * 9, "-" * 6, "-" * 4]),
    ]
    for m in table:
        r = res[m]
        lines.append(
            fmt(
                [
                    METHODS[m][0],
                    f"{r['seconds']:.1f}",
                    f"{r.get('ratio', r['seconds'] / r.get('plain_est_s', plain)):.2f}",
                    f"{med_ratio(m):.2f}" if m not in ("ours", "paper") else "",
                    f"{r['peak_rss_mib']:.0f}",
                    f"{r['other_cpu_share']:.0%}" if "other_cpu_share" in r else "",
                    notes[m],
                ]
            )
        )
    lines += [
        "(x pl (med): median seconds per batch over the plain forward's; "
        "other: CPU share the rest of the machine used during the run)",
        "",
        f"body-only / plain forward        : {body['seconds'] / plain:.3f}  "
        f"(LM head and final norm: {1 - body['seconds'] / plain:.0%} of a plain forward)",
        f"capture f64 / plain, / body-only : {ratio64:.3f}, {c64['seconds'] / body['seconds']:.3f}  "
        f"(rounds: {', '.join(f'{x:.3f}' for x in c64['ratios'])})",
        f"capture f32 / plain, / body-only : {ratio32:.3f}, {c32['seconds'] / body['seconds']:.3f}  "
        f"(rounds: {', '.join(f'{x:.3f}' for x in c32['ratios'])})",
        f"capture f64+rows / plain         : {rows64['seconds'] / plain:.3f}",
        f"fast (f32) error vs exact (f64)  : max_b |dR2_lin| = {err32:.2e}, "
        f"max_b |d r2_feature_median| = {err32_med:.2e}",
        f"store+lstsq vs ours (ceiling)    : max_b |dR2_lin| = {dpaper:.2e}, "
        f"max_b |d r2_feature_median| = {dpaper_med:.2e}  (rows float32, as hooks see them)",
        f"ours vs store+lstsq              : {ours_s:.1f} vs {pp['seconds']:.1f} s ({pp['seconds'] / ours_s:.2f}x); "
        f"peak RSS {c64['peak_rss_mib']:.0f} vs {pp['peak_rss_mib']:.0f} MiB",
        "R2_lin by block (f64)            : " + " ".join(f"{v:.3f}" for v in r64),
    ]
    flat = None
    if "big" in res:
        flat = res["big"]["peak_rss_mib"] / c64["peak_rss_mib"]
        lines.append(
            f"capture peak RSS vs tokens       : {c64['tokens']} -> {res['big']['tokens']} tokens: "
            f"{c64['peak_rss_mib']:.0f} -> {res['big']['peak_rss_mib']:.0f} MiB ({flat:.3f}x)"
        )
        lines.append(
            f"time vs tokens (x{res['big']['tokens'] / c64['tokens']:.0f} tokens) : capture "
            f"{res['big']['seconds'] / c64['seconds']:.2f}x"
            + (f", plain forward {res['plainbig']['seconds'] / plain:.2f}x" if "plainbig" in res else "")
        )
    busy = [
        f"{METHODS[m][0]} ({res[m]['other_cpu_share']:.0%})"
        for m in table
        if res[m].get("other_cpu_share", 0.0) > 0.1 and m != "ours"
    ]
    if busy:
        lines.append(
            f"WARNING: other processes used > 10% of the {ncpu} CPUs during: {', '.join(busy)}; "
            "those timings are inflated "
            "(the median-per-batch ratio is less affected)"
        )
    if spread > 0.1:
        lines.append(
            f"WARNING: the plain forward runs differ by up to {spread:.0%}: the machine's speed varied; "
            "timings are unreliable"
        )
    ok = lambda c: "PASS" if c else "MISS"  # noqa: E731
    lines += [
        "",
        f"{ok(ratio64 <= TARGET_CAPTURE)}  capture (f64, stats only) <= {TARGET_CAPTURE}x "
        f"plain forward: {ratio64:.2f}x, median of {len(runs64)} rounds "
        f"(median per batch {med_ratio('capture64'):.2f}x; f32 fast mode {ratio32:.2f}x)",
        f"{ok(ours_s < pp['seconds'])}  ours (capture + ceiling) faster than store + lstsq: "
        f"{ours_s:.1f} s vs {pp['seconds']:.1f} s",
        (
            "SKIP  our memory flat --tokens -> --big-tokens (--skip-big given)"
            if flat is None
            else (
                f"{ok(flat <= TARGET_FLAT)}  our memory flat {c64['tokens']} -> {res['big']['tokens']} tokens "
                f"within {TARGET_FLAT}x (sample_rows=0): {flat:.3f}x"
            )
        ),
        f"{ok(dpaper <= 1e-9)}  ours agrees with lstsq on the stored rows within 1e-9: max |dR2_lin| = {dpaper:.1e}",
    ]
    print("\n".join(lines), flush=True)
    if out:
        summary = {
            "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "raw": raw,
            "results": res,
            "fast_error": {"r2_lin": err32, "r2_feature_median": err32_med},
            "paper_vs_ours": {"r2_lin": dpaper, "r2_feature_median": dpaper_med},
            "table": lines,
        }
        out.write_text(json.dumps(summary, indent=1))
        print(f"results written to {out} (re-print with --report {out})")
    if getattr(args, "csv", None):
        measures = [
            ("plain_forward_s", plain, "", ""),
            ("body_over_plain", body["seconds"] / plain, "", ""),
            ("capture_f64_over_plain", ratio64, f"<= {TARGET_CAPTURE}", ok(ratio64 <= TARGET_CAPTURE)),
            ("capture_f64_over_plain_rounds", len(runs64), "", ""),
            ("capture_f64_over_plain_min", min(c64["ratios"]), "", ""),
            ("capture_f64_over_plain_max", max(c64["ratios"]), "", ""),
            ("capture_f64_over_plain_median_batch", med_ratio("capture64"), "", ""),
            ("capture_f64_over_body", c64["seconds"] / body["seconds"], "", ""),
            ("capture_f32_over_plain", ratio32, "", ""),
            ("fast_mode_max_abs_dr2", err32, "", ""),
            ("capture_f64_rows_over_plain", rows64["seconds"] / plain, "", ""),
            ("ours_s", ours_s, "< paper_s", ok(ours_s < pp["seconds"])),
            ("paper_s", pp["seconds"], "", ""),
            ("ours_peak_mib", c64["peak_rss_mib"], "", ""),
            ("paper_peak_mib", pp["peak_rss_mib"], "", ""),
            ("agreement_max_abs_dr2", dpaper, "<= 1e-9", ok(dpaper <= 1e-9)),
            ("plain_runs_spread", spread, "", ""),
            ("other_cpu_share_max", max(r.get("other_cpu_share", 0.0) for r in res.values()), "", ""),
        ]  # fmt: skip
        if flat is not None:
            measures.append(("peak_rss_big_over_small", flat, f"<= {TARGET_FLAT}", ok(flat <= TARGET_FLAT)))
            measures.append(("big_tokens", res["big"]["tokens"], "", ""))
            # issue 18: a 10x-token capture in at most 10x the time (the statistics cost the same per row)
            scale = res["big"]["tokens"] / c64["tokens"]
            slow = res["big"]["seconds"] / c64["seconds"]
            measures.append(("big_time_over_small", slow, f"<= {scale:.1f}", ok(slow <= scale)))
            if "plainbig" in res:  # the same ratio for the plain forward: what the machine does over a long run
                measures.append(("big_plain_over_small_plain", res["plainbig"]["seconds"] / plain, "", ""))
        write_csv(args.csv, "capture", args.model, plains[0]["tokens"], measures)
        print(f"measures written to {args.csv}")


def write_csv(path: Path, benchmark: str, model: str, tokens: int, measures) -> None:
    """One row per measure, with the machine, the torch version and its threads (what the README table cites)."""
    import csv

    from machine import machine_info

    path.parent.mkdir(parents=True, exist_ok=True)
    machine = machine_info()
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["benchmark", "model", "tokens", "measure", "value", "target", "status", *machine])
        for name, value, target, status in measures:
            w.writerow([benchmark, model, tokens, name, f"{float(value):.6g}", target, status, *machine.values()])


if __name__ == "__main__":
    sys.exit(main())
