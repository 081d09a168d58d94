"""docs/performance.md's generated block, every number read from the benchmark CSVs (`make bench`) and the default
profile's last figures run.

    .venv/bin/python benchmarks/performance.py [--bench results/bench]

rewrites the block between the performance markers of docs/performance.md from `results/bench/*.csv`
(benchmarks/capture.py, swap.py, neighbour.py, tests.py, peers.py) and `results/default/notebooks/run.csv`, as
`linrec report --bench results/bench` does. The package loads this script by its path (`linrec.app.bench`): after a
default `linrec figures` run and for `linrec report --bench`. A missing or partial benchmark folder is one line and
leaves the page as it was.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from linrec.base.errors import LinrecError
from linrec.base.files import project_root
from linrec.outputs.report import replace_block

# ---- docs/performance.md's block, from the benchmark CSVs (`make bench`) ---------------------------------
PERF_START, PERF_END = "<!-- performance:start -->", "<!-- performance:end -->"
PERFORMANCE_PAGE = "docs/performance.md"  # where the performance block lives (written by `make bench` and figures)


def figures_run_line(run_csv: str | Path) -> str:
    """One sentence on the last `linrec figures` run of a profile, from its `run.csv`
    (`linrec.app.notebooks.record_run`)."""
    run_csv = Path(run_csv)
    shown = "/".join(run_csv.parts[-4:])
    if not run_csv.exists():
        return f"No figures run recorded: `{shown}` is missing (run `make figures`)."
    r = pd.read_csv(run_csv).iloc[-1]
    names = str(r["notebooks"]).split()
    per = ", ".join(f"{n[:2]} {s} s" for n, s in zip(names, str(r["notebook_seconds"]).split()))
    made = int(r["captures_made"])
    return (
        f"Figures (`linrec figures`, `{shown}`, one run on {r['date']}): {len(names)} notebooks "
        f"in **{r['wall_seconds'] / 60:.1f} min** on {int(r['cpus'])} CPUs, {int(r['jobs'])} at a time after 01; "
        + (f"{made} captures computed during the run" if made else "every capture read from the cache")
        + f". Per notebook (seconds in its own kernel, one thread each when two run at once): {per}."
    )


def _bench_csv(path: Path) -> tuple[pd.DataFrame, dict[str, float]]:
    """A benchmark CSV (one row per measure, benchmarks/*.py) and its {measure: value}."""
    table = pd.read_csv(path, keep_default_na=False)
    return table, dict(zip(table["measure"], table["value"].astype(float)))


def performance_section(bench_dir: str | Path, figures_run: str | Path | None = None) -> str:
    """docs/performance.md's block, every number read from `bench_dir`/capture.csv (benchmarks/capture.py --csv)
    and `bench_dir`/swap.csv (benchmarks/swap.py), `bench_dir`/neighbour.csv and tests.csv where there are ones
    (benchmarks/neighbour.py, benchmarks/tests.py), and with `figures_run` the last figures run (`run.csv`); a
    missing capture or swap file is named in the block, not invented."""
    bench_dir = Path(bench_dir)
    lines = [PERF_START]
    if figures_run is not None:
        lines += [figures_run_line(figures_run), ""]
    cap_path, swap_path = bench_dir / "capture.csv", bench_dir / "swap.csv"
    shown = lambda path: "/".join(path.parts[-3:])  # noqa: E731  (results/bench/x.csv, wherever the clone lives)
    if cap_path.exists():
        cap, v = _bench_csv(cap_path)
        status = dict(zip(cap["measure"], cap["status"]))
        target = dict(zip(cap["measure"], cap["target"]))
        m = cap.iloc[0]
        rounds = (
            f"median of {int(v['capture_f64_over_plain_rounds'])} rounds, "
            f"{v['capture_f64_over_plain_min']:.2f}–{v['capture_f64_over_plain_max']:.2f}; "
            if "capture_f64_over_plain_rounds" in v
            else ""
        )
        lines += [
            f"Capture (`benchmarks/capture.py`, `{shown(cap_path)}`, one run on {m['date']}): {m['model']}, "
            f"{int(m['tokens']):,} tokens; {m['machine']}, {int(m['cpus'])} CPUs, torch {m['torch']} with "
            f"{int(m['threads'])} threads.",
            "",
            "| measurement | value | target |",
            "|---|---|---|",
            f"| capture, exact float64 statistics, all blocks ÷ plain forward (with LM head) | "
            f"{v['capture_f64_over_plain']:.2f} ({rounds}"
            f"median per batch {v['capture_f64_over_plain_median_batch']:.2f}; "
            f"÷ body-only forward {v['capture_f64_over_body']:.2f}) | {target['capture_f64_over_plain']} "
            f"{status['capture_f64_over_plain']} |",
            f"| fast mode (float32 products merged in float64) ÷ plain forward; its error | "
            f"{v['capture_f32_over_plain']:.2f}; max \\|ΔR²_lin\\| = {v['fast_mode_max_abs_dr2']:.1e} | |",
            f"| capture with the 30,000-row sample ÷ plain forward | {v['capture_f64_rows_over_plain']:.2f} | |",
            f"| ours (capture + closed form) vs the paper's way (store rows, `lstsq` per block) | "
            f"{v['ours_s']:.1f} s vs {v['paper_s']:.1f} s; peak RSS {v['ours_peak_mib']:,.0f} vs "
            f"{v['paper_peak_mib']:,.0f} MiB | {target['ours_s']} {status['ours_s']} |",
            f"| agreement of the two | max \\|ΔR²_lin\\| = {v['agreement_max_abs_dr2']:.0e} | "
            f"{target['agreement_max_abs_dr2']} {status['agreement_max_abs_dr2']} |",
        ]
        if "peak_rss_big_over_small" in v:
            lines.append(
                f"| peak RSS, {int(m['tokens']):,} → {int(v['big_tokens']):,} tokens (no row sample) | "
                f"{v['peak_rss_big_over_small']:.3f}× | {target['peak_rss_big_over_small']} "
                f"{status['peak_rss_big_over_small']} |"
            )
        else:
            lines.append("| peak RSS at 10× the tokens | not measured in this run (`--skip-big`) | |")
        if "big_time_over_small" in v:
            plain_scaling = ""
            if "big_plain_over_small_plain" in v:
                plain_scaling = f" (the plain forward: {v['big_plain_over_small_plain']:.2f}×)"
            lines.append(
                f"| capture time, {int(m['tokens']):,} → {int(v['big_tokens']):,} tokens | "
                f"{v['big_time_over_small']:.2f}×{plain_scaling} | {target['big_time_over_small']} "
                f"{status['big_time_over_small']} |"
            )
        elif "peak_rss_big_over_small" in v:
            lines.append("| capture time at 10× the tokens | not in this CSV (written by benchmarks before it) | |")
        lines += [
            f"| noise gauges: the plain-forward runs differ by up to; most CPU used by other processes | "
            f"{v['plain_runs_spread']:.0%}; {v['other_cpu_share_max']:.0%} | |",
        ]
    else:
        lines.append(f"No capture benchmark results: `{shown(cap_path)}` is missing (run `make bench`).")
    lines.append("")
    if swap_path.exists():
        sw = pd.read_csv(swap_path)
        parts = []
        for model, t in sw.groupby("model", sort=False):
            row = t.set_index("measure")
            sweep, floor, plain = (
                row.loc["linrec swap, every block"],
                row.loc["floor of the sweep (prefix reuse)"],
                row.loc["plain forward"],
            )
            parts.append(
                f"{model}: **{sweep['forwards']:.1f} plain forwards** ({sweep['seconds']:.1f} s; a plain forward "
                f"{plain['seconds']:.2f} s; the floor of exact re-evaluation {floor['forwards']:.1f})"
            )
        lines.append(
            f"Swap sweep (`benchmarks/swap.py`, `{shown(swap_path)}`): ΔPPL of every block swapped alone, with its "
            "interval, over the held-out windows — " + "; ".join(parts) + "."
        )
    else:
        lines.append(f"No swap benchmark results: `{shown(swap_path)}` is missing (run `make bench`).")
    near_path = bench_dir / "neighbour.csv"
    if near_path.exists():
        nb, v = _bench_csv(near_path)
        r = nb.set_index("measure").loc["slowdown"]
        lines += [
            "",
            f"Beside a busy process (`benchmarks/neighbour.py`, `{shown(near_path)}`, {r['date']}): "
            f"{r['benchmark'].removeprefix('neighbour ')} took {v['quiet_s']:.0f} s on a quiet machine and "
            f"{v['beside_busy_s']:.0f} s beside one process spinning on a CPU: **{v['slowdown']:.2f}×** "
            f"({r['target']} {r['status']}).",
        ]
    tests_path = bench_dir / "tests.csv"
    if tests_path.exists():
        tb, v = _bench_csv(tests_path)
        rows = tb.set_index("measure")
        r = rows.loc["make_test_s"]
        ru = rows.loc["make_test_units"] if "make_test_units" in v else None
        rf = rows.loc["unfetched_pytest_s"] if "unfetched_pytest_s" in v else None
        lines += [
            "",
            f"Tests (`benchmarks/tests.py`, `{shown(tests_path)}`, {r['date']}): `make test` from a fresh clone "
            f"({r['benchmark'].removeprefix('make test at ')}) with an empty cache, venv and fetch included, "
            f"**{v['make_test_s'] / 60:.1f} min** ({v['make_test_s']:.0f} s; {r['target']} s {r['status']}); pytest "
            f"{v['pytest_s']:.0f} s of it, {v['passed']:.0f} tests on {r['cpus']} CPUs."
            + (
                f" In the same run a reference workload (SmolLM2's plain forward on 2,048 tokens) took "
                f"{v['reference_forward_s']:.2f} s, so `make test` took **{v['make_test_units']:.0f} of those units** "
                f"({ru['target'] if ru is not None else ''} {ru['status'] if ru is not None else ''}: "
                "the 300 s target on the machine where it was set, whose plain forward ran about 3.1 s per 2,048 "
                "tokens)."
                if "make_test_units" in v
                else ""
            )
            + (
                f' The tests that need nothing fetched (`pytest -m "not models"`, {v["unfetched_passed"]:.0f} tests, '
                f"an empty cache) took **{v['unfetched_pytest_s']:.0f} s** in the same clone "
                f"({rf['target']} s {rf['status']})."
                if rf is not None
                else ""
            ),
        ]
    peers_path = bench_dir / "peers.csv"
    if peers_path.exists():
        lines += ["", *peers_lines(peers_path, shown(peers_path))]
    gpu_path = bench_dir / "gpu.csv"
    if gpu_path.exists():
        lines += ["", *gpu_lines(gpu_path, shown(gpu_path)), *gpu_cut_lines(bench_dir)]
    lines.append(PERF_END)
    return "\n".join(lines)


def peers_lines(path: Path, shown: str) -> list[str]:
    """The peers benchmark (benchmarks/peers.py --csv): a sentence on the run, then its table, memory growth and goal
    lines as the script prints them (`report_lines`, loaded from the script beside this one)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("linrec_benchmarks_peers", Path(__file__).with_name("peers.py"))
    peers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peers)
    table = pd.read_csv(path, keep_default_na=False, dtype=str)
    r = table.iloc[0]
    version = lambda prefix: next(  # noqa: E731
        (v for m, v in zip(table["method"], table["version"]) if m.startswith(prefix) and v), "not run"
    )
    rounds = max(int(v) for v in table["rounds"] if v)
    return [
        f"Against nnsight and TransformerLens (`benchmarks/peers.py`, `{shown}`, one run on {r['date']}): {r['model']} "
        f"on {r['corpus']}, batches of {r['batch_size']} × {r['seq_len']} tokens, the fastest of {rounds} rounds, each "
        f"method in its own process capped at {float(r['mem_cap_gib']):g} GiB of address space; {r['machine']}, "
        f"{r['cpus']} CPUs, torch {r['torch']} with {r['threads']} threads; nnsight "
        f"{version('nnsight')}, transformer-lens {version('tlens')}. Peak memory is "
        "each process's peak RSS (model included); |ΔR²_lin| the largest over blocks against linrec exact.",
        "",
        *peers.report_lines(table.to_dict("records")),
    ]


GPU_TARGETS = {"ratio_exact": 1.3, "ratio_fast": 1.15, "ceiling_s": 0.5, "device_vs_cpu_max_abs_dr2": 1e-7}  # issue 91


def gpu_lines(path: Path, shown: str) -> list[str]:
    """The capture on an accelerator (benchmarks/gpu.py --csv): a sentence on the run, one table row per token count,
    each ratio against its target (issue 63's, at 204,800 tokens)."""
    t = pd.read_csv(path, keep_default_na=False)
    r = t.iloc[0]
    status = lambda key, v: "PASS" if float(v) <= GPU_TARGETS[key] else "MISS"  # noqa: E731
    out = [
        f"On an accelerator (`benchmarks/gpu.py`, `{shown}`, one run on {r['date']}): {r['card']}, torch {r['torch']}, "
        f"a GPT-2-small-size layout trained here ({r['params_m']:g} M parameters, {r['blocks']} blocks, d = 768), "
        f"batches of {r['batch_size']} windows; each time the best of 2 rounds (1 at the largest size), float32 "
        "without TF32. The peer keeps every block's rows on the device in float32 and fits each with "
        "`torch.linalg.lstsq` in float64, as a hooks library's user would.",
        "",
        "| tokens | plain forward s | exact capture s (÷ plain) | fast capture s (÷ plain) | ceiling s "
        "| peak GiB exact | peer: rows + lstsq s | peer peak GiB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for _, x in t.iterrows():
        rep = f" (text ×{x['text_repeated']})" if int(x["text_repeated"]) > 1 else ""
        peer = f"{float(x['peer_s']):.2f}" if x["peer_status"] == "ok" else str(x["peer_status"]).split(" (")[0]
        peak = f"{float(x['peer_peak_gib']):.2f}" if x["peer_status"] == "ok" else "—"
        out.append(
            f"| {int(x['tokens']):,}{rep} | {float(x['plain_s']):.2f} | {float(x['exact_s']):.2f} "
            f"({float(x['ratio_exact']):.2f}) | {float(x['fast_s']):.2f} ({float(x['ratio_fast']):.2f}) | "
            f"{float(x['ceiling_s']):.2f} | {float(x['exact_peak_gib']):.2f} | {peer} | {peak} |"
        )
    d = float(r["device_vs_cpu_max_abs_dr2"])
    out += [
        "",
        f"- At {int(r['tokens']):,} tokens: exact capture {float(r['ratio_exact']):.2f}× the plain forward "
        f"(<= {GPU_TARGETS['ratio_exact']} {status('ratio_exact', r['ratio_exact'])}), fast "
        f"{float(r['ratio_fast']):.2f}× (<= {GPU_TARGETS['ratio_fast']} {status('ratio_fast', r['ratio_fast'])}), "
        f"the ceiling table of every block {float(r['ceiling_s']):.2f} s (<= {GPU_TARGETS['ceiling_s']} s "
        f"{status('ceiling_s', r['ceiling_s'])}).",
        f"- The same windows captured on the device and on the CPU ({int(r['cmp_tokens']):,} tokens): max "
        f"|ΔR²_lin| = {d:.1e} (<= {GPU_TARGETS['device_vs_cpu_max_abs_dr2']:g} "
        f"{status('device_vs_cpu_max_abs_dr2', d)})"
        + (
            f": {float(r['forward_only_max_abs_dr2']):.1e} with the device's statistics solved on the host (the "
            f"forward pass and the sums alone), {float(r['solver_only_max_abs_dr2']):.1e} between the two solvers."
            if "solver_only_max_abs_dr2" in t.columns
            else "."
        ),
    ]
    return out


def gpu_cut_lines(bench_dir: Path) -> list[str]:
    """Issue 91 on the accelerator, from the files beside gpu.csv that are there: the run before its cuts
    (gpu_before.csv), each cut on and off in one process and where the time goes before and after (gpu_profile.json,
    gpu_profile_before.json, `benchmarks/gpu_profile.py`), and the report's own model on the device (gpu_smollm2.csv
    against the CPU's `results/default/r2_lin.csv`)."""
    import json

    out = []
    before = bench_dir / "gpu_before.csv"
    if before.exists():
        b = pd.read_csv(before).iloc[0]
        out.append(
            f"- Before issue 91's cuts (`{before.name}`, {b['date']}, the same layout): exact {b['ratio_exact']:.2f}×, "
            f"fast {b['ratio_fast']:.2f}× at {int(b['tokens']):,} tokens."
        )
    prof = bench_dir / "gpu_profile.json"
    if prof.exists():
        p = json.loads(prof.read_text())
        if "variants" in p:
            out += ["", f"Each cut on and off, one process, {p['tokens']:,} tokens, best of 2 (`{prof.name}`; plain "
                    f"forward {p['plain_s']:.2f} s, the forward alone stopped after the last block "
                    f"{p['ratio_trunk']:.2f}× it):", "", "| side stream | fits beside | Cholesky | exact s | ÷ plain |",
                    "|---|---|---|---|---|"]  # fmt: skip
            for name, v in p["variants"].items():
                flags = dict(kv.split("=") for kv in name.split(","))
                side, beside, chol = ("yes" if flags[k] == "1" else "no" for k in ("side", "beside", "cholesky"))
                out.append(f"| {side} | {beside} | {chol} ({'/'.join(v['solvers'])}) | "
                           f"{v['exact_s']:.2f} | {v['exact_s'] / p['plain_s']:.2f} |")  # fmt: skip
            out.append("")
        old = bench_dir / "gpu_profile_before.json"
        pairs = [("before", json.loads(old.read_text()))] if old.exists() else []
        for label, q in [*pairs, ("after", p)]:
            pr = q["profile"]
            dev = {k: v["device_s"] for k, v in pr["steps"].items()}
            fits = dev.get("fits: HeldOutSums.fit")
            fits = f"the fits {fits:.2f}" if fits is not None else "the fits on their own thread (not profiled)"
            out.append(
                f"- Profiled {label} (torch.profiler, its own overhead included): wall {pr['wall_s']:.2f} s, device "
                f"busy {pr['device_busy_share']:.0%} of it; kernel seconds of the statistics "
                f"{dev['stats: Moments.update']:.2f} (beside the forward pass a kernel runs longer), {fits}, the "
                f"held-out sums {dev['held-out sums: update']:.2f}; host synchronisations "
                f"{pr['runtime_calls'].get('cudaStreamSynchronize', {}).get('calls', 0)}."
            )
    smol = bench_dir / "gpu_smollm2.csv"
    cpu = bench_dir.parent / "default" / "r2_lin.csv"
    if smol.exists() and cpu.exists():
        g, c = pd.read_csv(smol), pd.read_csv(cpu)
        c = c[c["model"] == "smollm2-135m"].reset_index(drop=True)
        inside = int(((g["r2_lin"] >= c["r2_lo"]) & (g["r2_lin"] <= c["r2_hi"])).sum())
        meta = json.loads(smol.with_suffix(".json").read_text()) if smol.with_suffix(".json").exists() else {}
        out.append(
            f"- The report's own model on the device (`{smol.name}`: SmolLM2-135M from its GGUF, the default profile's "
            f"capture, `linrec measure --device cuda`, {meta.get('seconds', float('nan')):.0f} s the whole command): "
            f"max |ΔR²_lin| against the CPU's `results/default/r2_lin.csv` "
            f"{(g['r2_lin'] - c['r2_lin']).abs().max():.1e} (interval ends "
            f"{max((g['r2_lo'] - c['r2_lo']).abs().max(), (g['r2_hi'] - c['r2_hi']).abs().max()):.1e}), {inside} of "
            f"{len(c)} blocks inside the CPU's interval."
        )
    return out


def update_readme_performance(readme: str | Path, bench_dir: str | Path, figures_run: str | Path | None = None) -> bool:
    """Replace the block between the performance markers of `readme`; False (and no change) if it has none. A
    `bench_dir` that is missing, or lacks the capture and swap benchmark CSVs, is one line and no change."""
    bench_dir = Path(bench_dir)
    if not bench_dir.is_dir():
        raise LinrecError(
            f"benchmark folder {bench_dir} does not exist; give the one make bench writes (results/bench)"
        )
    missing = [f for f in ("capture.csv", "swap.csv") if not (bench_dir / f).is_file()]
    if missing:
        raise LinrecError(
            f"benchmark folder {bench_dir} has no {' or '.join(missing)}; run make bench, or give the folder it wrote "
            "(results/bench)"
        )
    return replace_block(Path(readme), PERF_START, PERF_END, lambda: performance_section(bench_dir, figures_run))


def main(argv: list[str] | None = None) -> int:
    """Rewrite docs/performance.md's block from `--bench` (default results/bench) and the default profile's last
    figures run; 1 with one line on stderr when the folder lacks the CSVs or the page its markers."""
    p = argparse.ArgumentParser(description="Rewrite docs/performance.md's block from the benchmark CSVs.")
    p.add_argument("--bench", type=Path, default=Path("results/bench"), metavar="DIR",
                   help="the folder `make bench` writes (default results/bench)")  # fmt: skip
    args = p.parse_args(argv)
    root = project_root(Path(__file__).resolve().parent)
    run = root / "results" / "default" / "notebooks" / "run.csv"  # the default profile's last figures run
    try:
        if not update_readme_performance(root / PERFORMANCE_PAGE, root / args.bench, run):
            raise LinrecError(
                f"{PERFORMANCE_PAGE} has no <!-- performance:start/end --> markers; restore them from git"
            )
    except LinrecError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"wrote the performance block of {root / PERFORMANCE_PAGE} from {args.bench}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
