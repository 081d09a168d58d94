"""Benchmark against the tools people use today: nnsight and TransformerLens beside linrec, on the same model, text,
windows and batch size, in one run (issue 48).

    .venv/bin/python benchmarks/peers.py                  # 20,480 and 204,800 tokens, best of 3 rounds (long)
    .venv/bin/python benchmarks/peers.py --tokens 20480 --rounds 1
    .venv/bin/python benchmarks/peers.py --quick          # smoke check: first:4:smollm2-135m, 2,048 tokens, 1 round

The peers come with the optional `bench` extra (`pip install -e '.[bench]'`, `make bench-peers`); without it their rows
say so and linrec's rows are measured all the same.

What each method does, timed from its first batch to its last R²_lin (model, windows and the tool's wrapper set up
before, untimed; one warm-up batch of the method itself before, untimed):

- linrec, exact: what `get_capture(..., cache=False)` runs after loading the windows, `run_capture` with
  `product="float64"` (float64 statistics per block, no rows kept), then `ceiling_table` on them;
- linrec, fast: the same with `product="float32"`;
- nnsight: one `trace` per batch saving every block's MLP input and output (`.input.save()`, `.output.save()`, then
  `tracer.stop()` after the last block, as nnsight's docs show); the rows are copied into float32 arrays allocated
  for every row of every block, then per block either linrec's own closed form on the rows' float64 statistics
  (`Moments.of` → `fit_affine` → `score`: the fit is linrec's, only the collection differs) or `numpy.linalg.lstsq`
  on [x, 1] in float64, as a user would write it;
- TransformerLens: `run_with_cache` with a names filter on `blocks.{i}.mlp.hook_in` / `hook_out`, then the same two
  fits. TransformerLens 4 has no HookedTransformer (removed in 4.0), so this is its TransformerBridge around the
  same transformers model (`boot_transformers(hf_model=…)`), with raw weights (no compatibility mode: a folded
  LayerNorm would change the MLP's input). Its `stop_at_layer=k` stops *before* block k, so it cannot stop after the
  last MLP: its forward runs the final norm and the LM head, which linrec and nnsight skip.

Every method runs in its own subprocess (`--worker METHOD`) whose address space is capped (RLIMIT_AS, --mem-cap-gib):
a method that would need more memory than that (the peers keep 2 × blocks × tokens × width float32 values: 26.4 GiB
for SmolLM2 at 204,800 tokens) fails with a MemoryError, which becomes its row, instead of taking the machine down.
Rounds are interleaved (round 1 of every method, then round 2, …); a row reports the fastest round's seconds, the
highest peak RSS of its rounds (the child's own VmHWM; wait4's ru_maxrss where it left no record), and the largest
|ΔR²_lin| over blocks against linrec's exact numbers at the same tokens. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
TEST_FRAC = 0.2  # CaptureConfig's default: the last 20 % of the windows (by a seeded shuffle) are held out
QUICK_MODEL = "first:4:smollm2-135m"
GOAL_SPEED, GOAL_MEMORY = 2.0, 0.5  # issue 48: linrec ≥ 2× faster and ≤ 0.5× the peak memory of the best peer

# method → (label, the peer library it needs or "", the fit)
METHODS = {
    "linrec": ("linrec exact (f64 stats + ceiling table)", "", "closed form"),
    "linrec32": ("linrec fast (f32 products + ceiling table)", "", "closed form"),
    "nnsight": ("nnsight trace + fit_affine", "nnsight", "closed form"),
    "nnsight_lstsq": ("nnsight trace + lstsq", "nnsight", "lstsq"),
    "tlens": ("TransformerLens run_with_cache + fit_affine", "transformer_lens", "closed form"),
    "tlens_lstsq": ("TransformerLens run_with_cache + lstsq", "transformer_lens", "lstsq"),
}
PACKAGES = {"nnsight": "nnsight", "transformer_lens": "transformer-lens"}
NOTES = {  # printed under the table for each peer that ran
    "nnsight": "nnsight: TransformersModel around the loaded model (LanguageModel is deprecated in 0.8), one trace per "
    "batch, tracer.stop() once the last MLP's output is saved (no final norm, no LM head, as linrec)",
    "transformer_lens": "TransformerLens: TransformerBridge.boot_transformers(hf_model=…), its only way since 4.0 "
    "removed HookedTransformer; raw weights (no compatibility mode); the bridge switches the model to eager attention; "
    "stop_at_layer=k stops before block k, so its forward runs the final norm and the LM head",
}


# ---- what the peer methods do (tests/test_peers.py checks their rows against linrec's) ------------------------
def batches(windows, batch_size: int) -> list[tuple[str, object]]:
    """The batches a capture makes, (split, window indices): train windows first, then test, `batch_size` at a time."""
    return [
        (s, idx[i : i + batch_size])
        for s, idx in (("train", windows.train), ("test", windows.test))
        for i in range(0, len(idx), batch_size)
    ]


def mlp_paths(model) -> list[str]:
    """Each block's MLP module path (linrec.inputs.sites), for a model whose FFN input and output are one module's."""
    from linrec.base.errors import LinrecError
    from linrec.inputs.sites import find_ffn_sites

    sites = find_ffn_sites(model)
    if any(s.ffn_in is not s.ffn_out for s in sites):
        raise LinrecError("the peer methods hook one MLP module per block; this model's FFN spans two (an encoder)")
    return [s.path for s in sites]


def nnsight_runner(model, tokenizer):
    """`run(ids)` → [(x, y)] per block: one nnsight trace saving every MLP's input and output, stopped after them."""
    from nnsight import TransformersModel

    lm = TransformersModel(model, tokenizer=tokenizer)
    mlps = []
    for path in mlp_paths(model):
        envoy = lm
        for part in path.split("."):
            envoy = envoy[int(part)] if part.isdigit() else getattr(envoy, part)
        mlps.append(envoy)

    def run(ids):
        saved = []
        with lm.trace(ids, use_cache=False) as tracer:
            for mlp in mlps:
                saved.append((mlp.input.save(), mlp.output.save()))
            tracer.stop()
        return saved

    return run


def tlens_runner(model, tokenizer):
    """`run(ids)` → [(x, y)] per block: TransformerLens's bridge around `model`, `run_with_cache` on the MLP hooks."""
    from transformer_lens.model_bridge import TransformerBridge

    n = len(mlp_paths(model))
    name = getattr(model.config, "name_or_path", "") or model.config.model_type
    bridge = TransformerBridge.boot_transformers(name, hf_model=model, tokenizer=tokenizer, device="cpu")
    names = [f"blocks.{i}.mlp.hook_{end}" for i in range(n) for end in ("in", "out")]

    def run(ids):
        _, cache = bridge.run_with_cache(ids, names_filter=names, return_type=None)
        return [(cache[f"blocks.{i}.mlp.hook_in"], cache[f"blocks.{i}.mlp.hook_out"]) for i in range(n)]

    run.adapter = type(bridge.adapter).__name__ if hasattr(bridge, "adapter") else "?"
    return run


RUNNERS = {"nnsight": nnsight_runner, "transformer_lens": tlens_runner}


def collect(run, windows, batch_size: int, dims: list[tuple[int, int]], progress: bool = False):
    """Every row of every block, kept: (X, Y, n_train) with X[b] [rows, d_in] and Y[b] [rows, d_out] float32, rows in
    batch order (train windows first, then test; position-major within a window), the first n_train the train rows.
    The arrays are allocated for every row up front (no list and concatenate copy: kinder to the peers' memory)."""
    import numpy as np

    from linrec.base.progress import bar

    T = windows.seq_len
    n_rows = len(windows.ids) * T
    X = [np.empty((n_rows, dx), np.float32) for dx, _ in dims]
    Y = [np.empty((n_rows, dy), np.float32) for _, dy in dims]
    r0 = 0
    for _, idx in bar(batches(windows, batch_size), desc="collect rows", unit="batch", disable=not progress):
        for b, (x, y) in enumerate(run(windows.ids[idx])):
            X[b][r0 : r0 + len(idx) * T] = x.detach().reshape(-1, dims[b][0]).float().numpy()
            Y[b][r0 : r0 + len(idx) * T] = y.detach().reshape(-1, dims[b][1]).float().numpy()
        r0 += len(idx) * T
    return X, Y, len(windows.train) * T


def r2_closed_form(X, Y, n_train: int) -> list[float]:
    """Held-out R²_lin per block from the kept rows, by linrec's own closed form: float64 statistics of the train and
    test rows (`Moments.of`), `fit_affine` on the train ones, `score` on the test ones."""
    from linrec.stats.ceiling import fit_affine, score
    from linrec.stats.moments import Moments

    out = []
    for b, (x, y) in enumerate(zip(X, Y)):
        train, test = Moments.of(x[:n_train], y[:n_train]), Moments.of(x[n_train:], y[n_train:])
        out.append(score(fit_affine(train, block=b), test, block=b).r2)
    return out


def r2_lstsq(X, Y, n_train: int) -> list[float]:
    """Held-out R²_lin per block from the kept rows as a user would write it: `numpy.linalg.lstsq` on [x, 1] (float64)
    over the train rows, R² = 1 − ΣSSE/ΣSST over the test rows (SST around the test mean)."""
    import numpy as np

    out = []
    for x, y in zip(X, Y):
        d = x.shape[1]
        A = np.empty((n_train, d + 1))
        A[:, :d], A[:, d] = x[:n_train], 1.0
        coef = np.linalg.lstsq(A, y[:n_train].astype(np.float64), rcond=None)[0]
        del A
        xt, yt = x[n_train:].astype(np.float64), y[n_train:].astype(np.float64)
        sse = ((yt - xt @ coef[:d] - coef[d]) ** 2).sum()
        out.append(float(1.0 - sse / ((yt - yt.mean(0)) ** 2).sum()))
    return out


# ---- one method in one process --------------------------------------------------------------------------------
def first_line(err: BaseException) -> str:
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[0][:200] if lines else ''}".rstrip(": ")


def _one_batch(windows, batch_size: int):
    """Windows holding one batch of train windows and one test window: the warm-up of linrec's capture."""
    import dataclasses

    import numpy as np

    n = min(batch_size, len(windows.train))
    keep = np.concatenate([windows.train[:n], windows.test[:1]])
    return dataclasses.replace(windows, ids=windows.ids[keep], train=np.arange(n), test=np.array([n]))


def measure(method: str, args) -> dict:
    """Set up (untimed), warm up on one batch (untimed), then time `method` over every window to its R²_lin."""
    _, library, fit = METHODS[method]
    if library:
        try:
            __import__(library)
        except ImportError as err:
            raise ImportError(
                f"{PACKAGES[library]} is not installed ({err}); pip install -e '.[bench]' (make bench-peers)"
            ) from None
    import torch

    from linrec.inputs.corpora import WindowCut, load_windows
    from linrec.inputs.models import load_model

    t0 = time.perf_counter()
    loaded = load_model(args.model)
    windows = load_windows(args.corpus, loaded.tokenizer, WindowCut(args.seq_len, args.tokens, args.seed, TEST_FRAC))
    bs = args.batch_size
    rec = {"tokens": int(windows.ids.numel()), "threads": torch.get_num_threads()}
    with torch.no_grad():
        if not library:
            from linrec.analyses.recoverability import ceiling_table
            from linrec.collect.capture import run_capture
            from linrec.collect.config import CaptureConfig

            product = "float32" if method == "linrec32" else "float64"
            config = CaptureConfig(args.model, args.corpus, args.seq_len, args.tokens, args.seed, TEST_FRAC, 0, product)
            rec["setup_s"] = time.perf_counter() - t0
            run_capture(loaded, _one_batch(windows, bs), config, None, bs, progress=False)  # warm-up
            t = time.perf_counter()
            capture = run_capture(loaded, windows, config, None, bs, progress=args.progress)
            t1 = time.perf_counter()
            r2 = ceiling_table(capture)["r2_lin"].tolist()
        else:
            run = RUNNERS[library](loaded.model, loaded.tokenizer)
            if library == "transformer_lens":
                rec["note"] = f"TransformerBridge, {run.adapter}"
            rec["setup_s"] = time.perf_counter() - t0
            warm = run(windows.ids[windows.train[:bs]])  # warm-up, and each block's widths
            dims = [(x.shape[-1], y.shape[-1]) for x, y in warm]
            del warm
            t = time.perf_counter()
            X, Y, n_train = collect(run, windows, bs, dims, progress=args.progress)
            t1 = time.perf_counter()
            r2 = (r2_closed_form if fit == "closed form" else r2_lstsq)(X, Y, n_train)
    rec["collect_s"], rec["fit_s"] = t1 - t, time.perf_counter() - t1
    rec["seconds"] = rec["collect_s"] + rec["fit_s"]
    rec["r2"] = [float(v) for v in r2]
    return rec


def peak_rss_mib() -> float:
    """This process's own peak resident memory (VmHWM). Not `ru_maxrss`: that survives execve, so a child started by a
    process holding 500 MiB reports at least 500 MiB (with vfork, its parent's high-water mark) even if it never
    holds more than 10."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024


def worker(args) -> dict:
    """One method at one token count under the memory cap; its error's first line is its result where it fails."""
    if args.mem_cap_gib > 0:
        cap = int(args.mem_cap_gib * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    rec = {"method": args.worker, "tokens": args.tokens}
    try:
        rec.update(measure(args.worker, args))
    except Exception as err:  # noqa: BLE001 - a peer that cannot load the model or runs out of memory is a result
        rec["error"] = first_line(err)
    rec["peak_rss_mib"] = peak_rss_mib()
    return rec


# ---- the orchestrator -----------------------------------------------------------------------------------------
def _sibling(name: str):
    """benchmarks/`name`.py as a module, loaded by its path (benchmarks/ is not put on sys.path: its tests.py would
    shadow a `tests` package in the process that imports this script)."""
    import importlib.util

    key = f"linrec_benchmarks_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, HERE.with_name(f"{name}.py"))
        sys.modules[key] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules[key]


def run_worker(method: str, tokens: int, args) -> dict:
    """`method` at `tokens` in a fresh subprocess; its record, with the child's own peak RSS from wait4."""
    capture = _sibling("capture")  # its CPU-load gauges
    _busy_cpu_s, wait_quiet = capture._busy_cpu_s, capture.wait_quiet

    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = Path(f.name)
    cmd = [sys.executable, str(HERE), "--worker", method, "--worker-out", str(out), "--model", args.model,
           "--corpus", args.corpus, "--tokens", str(tokens), "--batch-size", str(args.batch_size),
           "--seq-len", str(args.seq_len), "--seed", str(args.seed),
           "--mem-cap-gib", str(args.mem_cap_gib)]  # fmt: skip
    cmd += [] if args.progress else ["--no-progress"]
    env = dict(os.environ)
    if args.blas_threads > 0:  # numpy's OpenBLAS only (the lstsq fits); torch keeps its default threads
        env["OPENBLAS_NUM_THREADS"] = str(args.blas_threads)
    ncpu = os.cpu_count() or 1
    if args.wait_quiet > 0:
        wait_quiet(args.wait_quiet, ncpu)
    print(f"[{time.strftime('%H:%M:%S')}] {method:14s} {tokens:>7,} tokens …", end=" ", flush=True)
    t, busy0 = time.perf_counter(), _busy_cpu_s()
    proc = subprocess.Popen(cmd, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t
    try:
        rec = json.loads(out.read_text())
    except (OSError, ValueError):
        rec = {"method": method, "tokens": tokens, "error": f"worker exited {proc.returncode} without a result"}
    out.unlink(missing_ok=True)
    if "peak_rss_mib" not in rec:  # no record (killed): wait4's ru_maxrss, an upper bound (see peak_rss_mib)
        rec["peak_rss_mib"] = usage.ru_maxrss / 1024
    own = usage.ru_utime + usage.ru_stime
    rec["other_cpu_share"] = max(0.0, _busy_cpu_s() - busy0 - own) / (wall * ncpu)
    said = (
        rec.get("error") or f"{rec['seconds']:8.2f} s timed (collect {rec['collect_s']:.2f} + fit {rec['fit_s']:.2f})"
    )
    print(f"{said}; peak {rec['peak_rss_mib']:,.0f} MiB; other load {rec['other_cpu_share']:.0%} ({wall:.0f} s)")
    return rec


def summarise(records: list[dict], versions: dict[str, str]) -> list[dict]:
    """One row per (tokens, method): the fastest round, the highest peak, max |ΔR²_lin| against linrec exact."""
    rows = []
    for tokens in dict.fromkeys(r["tokens_asked"] for r in records):
        runs = {m: [r for r in records if r["tokens_asked"] == tokens and r["method"] == m] for m in METHODS}
        ok = {m: [r for r in rs if "error" not in r] for m, rs in runs.items()}
        best = {m: min(rs, key=lambda r: r["seconds"]) for m, rs in ok.items() if rs}
        peak = {m: max(r["peak_rss_mib"] for r in ok[m]) for m in best}
        ref = best.get("linrec")
        for m, rs in runs.items():
            if not rs:
                continue
            label, library, _ = METHODS[m]
            row = {"benchmark": "peers", "tokens": tokens, "method": m, "label": label,
                   "version": versions.get(library or "linrec", ""), "rounds": len(ok[m]),
                   "peak_mib": max(r["peak_rss_mib"] for r in rs), "note": rs[0].get("note", ""),
                   "error": "" if m in best else rs[0]["error"]}  # fmt: skip
            if m in best:
                b = best[m]
                row.update({k: b[k] for k in ("seconds", "collect_s", "fit_s", "setup_s")})
                row["peak_mib"] = peak[m]
                row["other_cpu_share"] = max(r["other_cpu_share"] for r in ok[m])
                if ref is not None:
                    row["max_abs_dr2"] = max(abs(a - c) for a, c in zip(b["r2"], ref["r2"]))
                    row["seconds_over_linrec"] = b["seconds"] / ref["seconds"]
                    row["peak_over_linrec"] = peak[m] / peak["linrec"]
            rows.append(row)
    return rows


def _num(row, key):
    v = row.get(key, "")
    return None if v == "" or v != v else float(v)  # empty or NaN → None


def _out_of_memory(row) -> bool:
    """A failed row that ran out of its address-space cap (the cap known): it needed more than the cap."""
    return bool(row.get("error")) and bool(_num(row, "mem_cap_gib")) and row["error"].startswith("MemoryError")


def report_lines(rows: list[dict]) -> list[str]:
    """The table (markdown) with ratios to linrec exact, the peak-memory growth with the tokens, and the goal lines:
    printed by this script, and what benchmarks/performance.py writes into docs/performance.md from the CSV."""
    lines = [
        "| method | tokens | seconds | collect + fit s | ÷ linrec | peak GiB | ÷ linrec | max \\|ΔR²_lin\\| |",
        "|---|---|---|---|---|---|---|---|",
    ]
    fmt = lambda v, f: "" if v is None else format(v, f)  # noqa: E731
    parts = lambda r: (_num(r, "collect_s"), _num(r, "fit_s"))  # noqa: E731
    split = lambda r: "" if None in parts(r) else "{:.1f} + {:.1f}".format(*parts(r))  # noqa: E731
    for r in rows:
        tokens = f"{int(r['tokens']):,}"
        if r.get("error"):
            at_failure = f"{_num(r, 'peak_mib') / 1024:.1f} at failure"
            lines.append(f"| {r['label']} | {tokens} | failed: {r['error']} | | | {at_failure} | | |")
            continue
        lines.append(
            f"| {r['label']} | {tokens} | {_num(r, 'seconds'):.1f} | "
            f"{split(r)} | "
            f"{fmt(_num(r, 'seconds_over_linrec'), '.2f')} | "
            f"{_num(r, 'peak_mib') / 1024:.2f} | {fmt(_num(r, 'peak_over_linrec'), '.2f')} | "
            f"{fmt(_num(r, 'max_abs_dr2'), '.1e')} |"
        )
    tokens = sorted({int(r["tokens"]) for r in rows})
    if len(tokens) > 1:
        lo, hi = tokens[0], tokens[-1]
        growth = []
        for m in dict.fromkeys(r["method"] for r in rows):
            a, b = ([r for r in rows if r["method"] == m and int(r["tokens"]) == t] for t in (lo, hi))
            if a and b and not a[0].get("error"):
                if not b[0].get("error"):
                    grown = f"{_num(b[0], 'peak_mib') / _num(a[0], 'peak_mib'):.2f}×"
                elif _out_of_memory(b[0]):
                    cap = _num(b[0], "mem_cap_gib")
                    grown = f"more than {cap * 1024 / _num(a[0], 'peak_mib'):.1f}× (out of memory at the cap)"
                else:
                    grown = "failed"
                growth.append(f"{a[0]['label']} {grown}")
        lines += ["", f"Peak memory from {lo:,} to {hi:,} tokens: " + "; ".join(growth) + "."]
    lines.append("")
    for t in tokens:
        at = [r for r in rows if int(r["tokens"]) == t]
        ref = next((r for r in at if r["method"] == "linrec" and not r.get("error")), None)
        peers = [r for r in at if METHODS.get(r["method"], ("", ""))[1] and not r.get("error")]
        if ref is None:
            lines.append(f"- {t:,} tokens: linrec exact did not finish, no ratio.")
        elif not peers:
            failed = [r for r in at if METHODS.get(r["method"], ("", ""))[1] and r.get("error")]
            if failed and all(_out_of_memory(r) for r in failed):
                cap = _num(failed[0], "mem_cap_gib")
                # each peer keeps every row of every block, so it needs more than the cap it ran out of
                share = _num(ref, "peak_mib") / 1024 / cap
                lines.append(
                    f"- {t:,} tokens: no peer method finished: each ran out of its {cap:g} GiB address space "
                    f"allocating the rows it keeps, so its peak would exceed {cap:g} GiB; linrec exact peaked at "
                    f"{_num(ref, 'peak_mib') / 1024:.2f} GiB, under {share:.2f}× that "
                    f"(<= {GOAL_MEMORY:g} {'PASS' if share <= GOAL_MEMORY else 'MISS'}); no time ratio."
                )
            else:
                lines.append(f"- {t:,} tokens: no peer method finished (see the failed rows); linrec did.")
        else:
            fast = min(peers, key=lambda r: _num(r, "seconds"))
            lean = min(peers, key=lambda r: _num(r, "peak_mib"))
            speed = _num(fast, "seconds") / _num(ref, "seconds")
            memory = _num(ref, "peak_mib") / _num(lean, "peak_mib")
            ok = lambda c: "PASS" if c else "MISS"  # noqa: E731
            lines.append(
                f"- {t:,} tokens: the fastest peer ({fast['label']}) takes {speed:.2f}× linrec exact's time "
                f"(>= {GOAL_SPEED:g} {ok(speed >= GOAL_SPEED)}); linrec exact needs {memory:.2f}× the peak memory "
                f"of the leanest peer ({lean['label']}; <= {GOAL_MEMORY:g} {ok(memory <= GOAL_MEMORY)})."
            )
    return lines


def write_rows(path: Path, rows: list[dict], args) -> None:
    """One CSV row per (tokens, method), with the run's settings and the machine (benchmarks/machine.py)."""
    import csv

    machine_info = _sibling("machine").machine_info

    cols = ["benchmark", "model", "corpus", "batch_size", "seq_len", "mem_cap_gib", "tokens", "method", "label",
            "version", "rounds", "seconds", "collect_s", "fit_s", "setup_s", "peak_mib", "seconds_over_linrec",
            "peak_over_linrec", "max_abs_dr2", "other_cpu_share", "note", "error"]  # fmt: skip
    run = {"model": args.model, "corpus": args.corpus, "batch_size": args.batch_size, "seq_len": args.seq_len,
           "mem_cap_gib": args.mem_cap_gib}  # fmt: skip
    machine = machine_info()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, [*cols, *machine])
        w.writeheader()
        for r in rows:
            w.writerow({c: "" for c in cols} | {k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()}
                       | run | machine)  # fmt: skip


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for library, dist in {**PACKAGES, "linrec": "linrec"}.items():
        try:
            out[library] = version(dist)
        except PackageNotFoundError:
            out[library] = "not installed"
    return out


def default_cap_gib() -> float:
    """Three quarters of the machine's memory: room for the rest of it, and for what the other processes hold."""
    with open("/proc/meminfo") as f:
        total_kib = next(int(line.split()[1]) for line in f if line.startswith("MemTotal:"))
    return round(0.75 * total_kib / 2**20, 1)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--model", default=None, help="default smollm2-135m (with --quick: first:4:smollm2-135m)")
    p.add_argument("--corpus", default="wiki")
    p.add_argument("--tokens", type=int, nargs="+", default=None, help="default 20480 204800 (with --quick: 2048)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rounds", type=int, default=None, help="rounds per method; the fastest counts (default 3)")
    p.add_argument("--methods", nargs="+", choices=list(METHODS), default=list(METHODS))
    p.add_argument("--mem-cap-gib", type=float, default=None, help="address-space cap of each method's process "
                   "(RLIMIT_AS; default three quarters of the machine's memory; 0: none)")  # fmt: skip
    p.add_argument("--blas-threads", type=int, default=1, help="OPENBLAS_NUM_THREADS for numpy's lstsq (0: default)")
    p.add_argument("--wait-quiet", type=float, default=None, metavar="S", help="before each run, wait up to S s "
                   "for other processes to use < 25%% of the CPUs (default 30; with --quick 0)")  # fmt: skip
    p.add_argument("--quick", action="store_true", help="smoke check: first:4 blocks, 2,048 tokens, 1 round, no CSV")
    p.add_argument("--csv", type=Path, default=None, help="default results/bench/peers.csv (none with --quick)")
    p.add_argument("--no-progress", dest="progress", action="store_false")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.model = args.model or (QUICK_MODEL if args.quick else "smollm2-135m")
    args.mem_cap_gib = default_cap_gib() if args.mem_cap_gib is None else args.mem_cap_gib
    args.wait_quiet = (0 if args.quick else 30) if args.wait_quiet is None else args.wait_quiet
    if args.worker:
        args.tokens = args.tokens[0]
        Path(args.worker_out).write_text(json.dumps(worker(args)))
        return 0
    tokens = args.tokens or ([2048] if args.quick else [20_480, 204_800])
    n_rounds = args.rounds or (1 if args.quick else 3)
    csv_path = args.csv or (None if args.quick else ROOT / "results" / "bench" / "peers.csv")
    have = versions()
    print(f"peers benchmark: {args.model} on {args.corpus}, tokens {tokens}, batch {args.batch_size}×{args.seq_len}, "
          f"{n_rounds} round(s), address space capped at {args.mem_cap_gib:g} GiB per method; "
          f"nnsight {have['nnsight']}, transformer-lens {have['transformer_lens']}", flush=True)  # fmt: skip
    records = []
    for t in tokens:
        failed: set[str] = set()
        for _ in range(n_rounds):
            for m in args.methods:
                if m in failed:  # a failure (memory, a missing extra) repeats: one try is its row
                    continue
                rec = run_worker(m, t, args)
                rec["tokens_asked"] = t
                records.append(rec)
                if "error" in rec:
                    failed.add(m)
    rows = [r | {"mem_cap_gib": args.mem_cap_gib} for r in summarise(records, have)]
    print("\n" + "\n".join(report_lines(rows)))
    ran = {METHODS[r["method"]][1] for r in rows if not r.get("error")}
    for library, note in NOTES.items():
        if library in ran:
            found = dict.fromkeys(r["note"] for r in rows if r.get("note") and METHODS[r["method"]][1] == library)
            print(f"note: {note}" + "".join(f" ({f})" for f in found))
    if csv_path is not None:
        write_rows(csv_path, rows, args)
        print(f"rows written to {csv_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
