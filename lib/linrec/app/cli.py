"""Command line: `linrec measure | curve | probe | spectrum | swap | fetch | cache | figures | report`.

One error boundary: everything a user can get wrong (arguments, device, output paths, the
cache's writability, the parameter file) is checked before the expensive work, and any
failure ends with one line on stderr, `linrec: error: …`, and a non-zero exit (2 for bad
input, 1 for anything unexpected, 130 for Ctrl-C, 128 + N for signal N such as SIGTERM, after the temporary copies
of what was being written are removed). `--debug` shows the traceback instead. Output
piped into a reader that stops early (`linrec cache list | head`) ends quietly with 0.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from pathlib import Path

from linrec.base.errors import LinrecError


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: the message and where to find the usage, nothing else."""

    def error(self, message: str):
        self.exit(2, f"linrec: error: {message} (see '{self.prog} --help')\n")


SHOWN = {  # the columns each subcommand prints (its --out CSV holds every column of the table)
    "measure": "model block r2_lin r2_lo r2_hi r2_feature_median r2_ex_first cond_gram n_train n_test".split(),
    "curve": "model block train_tokens n_train r2 r2_lo r2_hi seed_sd r2_train slope fit_rmse".split(),
    "probe": "model block r2_lin r2_poly gain r2_trained_adam r2_trained_sgd cond_gram".split(),
    "spectrum": (
        "model block r2_lin r2_feature_median top1_var_share r2_ex_top1 r2_ex_top8 eff_rank_out eff_rank_in "
        "cond_gram r2_ex_first regime"
    ).split(),
    "swap": "model block first r2_lin ppl_base ppl_swapped delta_ppl delta_lo delta_hi params_swap param_ratio".split(),
}


def _non_negative(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got '{text}'") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be ≥ 0, got {value}")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got '{text}'") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value}")
    return value


def _add_capture_args(p: argparse.ArgumentParser, curve: bool = False) -> None:
    """The capture's arguments, their defaults `CaptureConfig`'s; `curve` leaves out those a learning curve sets
    otherwise (its sizes and seeds)."""
    from linrec.measure.config import CaptureConfig as C

    p.add_argument(
        "--model",
        required=True,
        help="offline name (smollm2-135m, gemma3-270m, minilm-l6), hub id (gpt2), local dir or .gguf file; "
        "init:SEED:MODEL (random-init twin), first:N:MODEL (its first N blocks)",
    )
    p.add_argument(
        "--corpus",
        default=C.corpus,
        help=f"wiki | web | code | wikitext-2 | path to a text file or directory (default: {C.corpus})",
    )
    p.add_argument(
        "--seq-len", type=_positive, default=C.seq_len, help=f"window length in tokens (default: {C.seq_len})"
    )
    if not curve:
        p.add_argument("--tokens", type=_positive, default=C.tokens, help=f"token budget (default: {C.tokens})")
        p.add_argument(
            "--seed",
            type=_non_negative,
            default=C.seed,
            help=f"seed of the train/test split and row sample (default: {C.seed})",
        )
        p.add_argument(
            "--sample",
            type=_non_negative,
            default=C.sample,
            help="which disjoint stretch of --tokens tokens of the corpus to read: 0 the first, 1 the next, … "
            f"(fresh text for a replication; default: {C.sample})",
        )
        p.add_argument(
            "--bos",
            default=C.bos,
            choices=["auto", "yes", "no"],
            help="start every window with the BOS token: as the tokenizer does (auto), always (yes) or never (no); "
            f"moves the attention sink of a model that runs without one (default: {C.bos})",
        )
    p.add_argument(
        "--batch-size",
        type=_positive,
        default=8,
        help=(
            "windows per forward pass (default: 8); not part of the cache key: "
            "it changes R²_lin by rounding only (≤ 1e-12)"
        ),
    )
    p.add_argument(
        "--device", default="cpu", help="torch device: cpu, cuda, cuda:N, mps, auto (cuda if present; default: cpu)"
    )
    if not curve:
        p.add_argument(
            "--device-map",
            default=None,
            choices=["auto", "balanced", "balanced_low_0", "sequential"],
            help="spread a model larger than one device over all visible devices (accelerate); each block's "
            "statistics stay on its block's device (default: the whole model on --device)",
        )
        p.add_argument(
            "--dtype",
            default=C.dtype,
            choices=["float32", "bfloat16", "float16"],
            help=f"the model's dtype; statistics stay float64 (default: {C.dtype})",
        )
        p.add_argument(
            "--fast",
            action="store_true",
            help="float32 products merged in float64 (error printed by benchmarks/capture.py)",
        )
    p.add_argument("--no-cache", action="store_true", help="recompute even if a cached capture exists")
    if not curve:
        p.add_argument(
            "--sample-rows",
            type=_non_negative,
            default=C.sample_rows,
            help=f"raw (x, y) rows kept per block on disk for the probes (default: {C.sample_rows}, as "
            "make figures keeps, so its captures are reused; 0: statistics only)",
        )
        p.add_argument(
            "--blocks-per-pass",
            type=_positive,
            default=None,
            help="capture in groups of this many blocks, one pass each (same numbers; on a GPU only one group's "
            "statistics on the device at a time; default: all blocks in one pass)",
        )


def _capture(args, loaded=None):
    """The capture the measuring subcommands share (from the cache when it is there); `loaded` reuses a loaded model."""
    from linrec.measure.capture import get_capture

    return get_capture(
        args.model,
        args.corpus,
        seq_len=args.seq_len,
        tokens=args.tokens,
        seed=args.seed,
        sample_rows=args.sample_rows,
        batch_size=args.batch_size,
        device=args.device,
        product="float32" if args.fast else "float64",
        dtype=args.dtype,
        blocks_per_pass=args.blocks_per_pass,
        device_map=args.device_map,
        cache=not args.no_cache,
        loaded=loaded,
        sample=args.sample,
        bos=args.bos,
    )


def _check_out(out: str | None) -> None:
    """Before any work: `--out` must name a file whose directory is writable."""
    if not out:
        return
    from linrec.base.files import check_writable_dir

    path = Path(out)
    if path.is_dir() or out.endswith(("/", "\\")):
        raise LinrecError(f"--out {out} is a directory; give a file name, e.g. --out {path / 'table.csv'}")
    check_writable_dir(path.resolve().parent, "the directory of --out", "choose another --out")


def _preflight(args) -> None:
    """What the capturing subcommands check before loading a model or reading the cache: the device, the output
    paths, the capture's settings, the corpus, and — from the model's config alone, where it can be read without
    the weights (`linrec.inputs.models.model_shape`) — the window length against its context, `--blocks` against its
    block
    count and `--rank` against its width."""
    from linrec.inputs.corpora import check_corpus
    from linrec.inputs.hf import check_device, context_error
    from linrec.inputs.models import model_shape
    from linrec.stats.distributed import init_from_env

    args.device = check_device(init_from_env(args.device))  # under torchrun: this rank's device
    if getattr(args, "device_map", None):
        from linrec.stats.distributed import world

        if world()[1] > 1:
            raise LinrecError("--device-map places one model over all devices; under torchrun use --device instead")
        if args.device != "cpu":
            raise LinrecError(f"--device {args.device} and --device-map both place the model; give one of them")
    _check_out(getattr(args, "out", None))
    if getattr(args, "save", None):
        from linrec.inputs.surgery import check_save_target

        check_save_target(args.save)
    if hasattr(args, "tokens"):
        from linrec.measure.config import CaptureConfig

        CaptureConfig(args.model, args.corpus, args.seq_len, args.tokens, args.seed).validate()
    check_corpus(args.corpus)
    shape = model_shape(args.model)
    if shape is None:
        return  # checked after the load, by the same rules
    err = context_error(args.model, args.seq_len, shape.context)
    if err is not None:
        raise err
    if getattr(args, "blocks", None) is not None:
        args.blocks = _block_list(args.blocks, shape.n_blocks)
    if hasattr(args, "rank"):
        from linrec.analyses.probe import check_rank

        check_rank(args.rank, shape.d_model, shape.d_model, args.sample_rows)  # as probe_table: rows of both splits


def _emit(table, cols: list[str], out: str | None) -> None:
    """Print `cols` of the per-block table; write all of it as CSV to `out` (under torchrun: rank 0 alone)."""
    import pandas as pd

    from linrec.stats.distributed import world

    if world()[0] > 0:
        return
    with pd.option_context("display.width", 160, "display.max_rows", 500):
        print(table[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    if out:
        from linrec.base.files import atomic_file

        with atomic_file(out) as tmp:
            table.to_csv(tmp, index=False)
        print(f"wrote {out}", file=sys.stderr)


def cmd_measure(args) -> None:
    from linrec.analyses.recoverability import ceiling_table

    _preflight(args)
    table = ceiling_table(_capture(args))
    _emit(table, SHOWN["measure"], args.out)


def _token_list(text: str) -> tuple[int, ...]:
    try:
        return tuple(_positive(t) for t in text.split(","))
    except argparse.ArgumentTypeError as err:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated token counts, e.g. 5120,20480,204800 ({err})"
        ) from None


def cmd_curve(args) -> None:
    from linrec.analyses.large_n import curve_summary
    from linrec.measure.curves import CURVE_TOKENS, CurveConfig, get_curve

    _preflight(args)
    curve = get_curve(
        args.model,
        corpus=args.corpus,
        seq_len=args.seq_len,
        train_tokens=args.train_tokens or CURVE_TOKENS,
        test_tokens=args.test_tokens or CurveConfig.test_tokens,
        seeds=tuple(range(args.seeds)),
        batch_size=args.batch_size,
        device=args.device,
        cache=not args.no_cache,
    )
    _emit(curve_summary(curve), SHOWN["curve"], args.out)


def cmd_probe(args) -> None:
    from linrec.analyses.probe import probe_table

    _preflight(args)
    table = probe_table(_capture(args), rank=args.rank, seed=args.seed)
    _emit(table, SHOWN["probe"], args.out)


def cmd_spectrum(args) -> None:
    from linrec.analyses.spectrum import spectrum_table

    _preflight(args)
    table = spectrum_table(_capture(args))
    _emit(table, SHOWN["spectrum"], args.out)


def _block_syntax(text: str) -> list[int]:
    """`--blocks` as written: block numbers ≥ 0 separated by commas (argparse type: checked before anything runs)."""
    parts = text.replace(" ", "").split(",")
    if not text.strip() or any(not p.isdigit() for p in parts):
        raise argparse.ArgumentTypeError(
            f"expected block numbers (0, 1, …) separated by commas, e.g. --blocks 0,3; got '{text}'"
        )
    return sorted({int(p) for p in parts})


def _block_list(blocks: list[int] | None, n_blocks: int) -> list[int] | None:
    """`blocks` (from `_block_syntax`) checked against a model's `n_blocks`."""
    if blocks is None:
        return None
    bad = [b for b in blocks if b >= n_blocks]
    if bad:
        shown = ",".join(map(str, blocks))
        raise LinrecError(
            f"--blocks {shown}: this model has blocks 0..{n_blocks - 1} (no {', '.join(map(str, bad))}); "
            f"e.g. --blocks 0,{n_blocks - 1}"
        )
    return blocks


def cmd_swap(args) -> None:
    from linrec.analyses.swap import SwapStudy
    from linrec.inputs.models import load_model

    if args.device_map:
        raise LinrecError(
            "--device-map is for the capturing commands (measure, probe, spectrum); swap runs on --device"
        )
    if args.save and args.blocks is None and args.budget_ppl is None:
        raise LinrecError("--save needs the blocks to swap: give --blocks 0,3 or --budget-ppl 1.0")
    if args.save and args.first != "map":
        raise LinrecError(
            f"--first {args.first} swaps are for evaluation only (under KV-cached generation a module cannot tell "
            "position 0 apart); save with --first map"
        )
    _preflight(args)
    from linrec.inputs.hf import model_dtype

    loaded = load_model(args.model, device=args.device, dtype=model_dtype(args.dtype))
    if not loaded.is_causal:
        raise LinrecError(
            f"{args.model} is an encoder ({loaded.model_type}): no LM head, so no perplexity for a swap to change; "
            "measure it with linrec measure, probe or spectrum"
        )
    from linrec.inputs.sites import find_ffn_sites

    blocks = _block_list(args.blocks, len(find_ffn_sites(loaded.model)))  # before the capture: a config unread above
    capture = _capture(args, loaded)
    study = SwapStudy(
        capture,
        loaded,
        batch_size=args.batch_size,
        screening_windows=args.screening_windows,
        test_windows=args.test_windows,
    )
    table = study.heldout.table(blocks, first=args.first)
    _emit(table, SHOWN["swap"], args.out)
    chosen = None
    if args.budget_ppl is not None:
        result = study.greedy(args.budget_ppl, order=args.order, blocks=blocks)
        print(result.summary())
        chosen = result.swapped
    elif blocks is not None:
        j = study.heldout.joint(blocks) if args.first == "map" else None
        if j is not None:
            print(
                f"blocks {j['blocks']} swapped together: ppl {j['ppl_base']:.4f} → {j['ppl']:.4f} "
                f"(Δ {j['delta_ppl']:+.4f}, 95% CI [{j['delta_lo']:+.4f}, {j['delta_hi']:+.4f}]); "
                f"FFN parameters removed {j['params_removed']:,}, affine parameters added {j['params_added']:,}"
            )
        chosen = blocks
    if args.save:
        if not chosen:
            raise LinrecError(
                f"no block fits within --budget-ppl {args.budget_ppl:g}, so there is nothing to save; "
                "raise --budget-ppl"
            )
        print(f"wrote {study.heldout.save(args.save, chosen)} (blocks {sorted(chosen)} swapped)", file=sys.stderr)


def _budget(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of perplexity points, got '{text}'") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be ≥ 0, got {text}")
    return value


def _amount(text: str) -> float:
    """A finite number ≥ 0 (days, gigabytes): nan, inf and negatives would each prune everything or nothing."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number ≥ 0, got '{text}'") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number ≥ 0, got '{text}'")
    return value


def cmd_fetch(args) -> None:
    from linrec.inputs.corpora import OFFLINE_CORPORA, fetch_offline_corpus
    from linrec.inputs.models import OFFLINE_MODELS, load_model

    for name in args.names:
        if name in OFFLINE_MODELS:
            load_model(name)  # fetches, verifies, dequantises and caches as safetensors
        elif name in OFFLINE_CORPORA:
            fetch_offline_corpus(name)
        else:
            raise LinrecError(
                f"nothing offline is called '{name}'; models: {', '.join(OFFLINE_MODELS)}; "
                f"corpora: {', '.join(OFFLINE_CORPORA)}"
            )
        print(f"ready: {name}", file=sys.stderr)


def cmd_cache(args) -> None:
    from linrec.base import cache

    if args.action == "prune":
        max_bytes = None if args.max_size is None else int(args.max_size * 2**30)
        gone = cache.prune(args.older_than, max_bytes, dry_run=args.dry_run)
        verb = "would remove" if args.dry_run else "removed"
        for e in gone:
            print(f"{verb} {e.path.name} ({e.size / 2**20:,.0f} MiB, {e.age_days:.1f} days): {e.made_by}")
        print(f"{verb} {len(gone)} entries, {sum(e.size for e in gone) / 2**30:.2f} GiB", file=sys.stderr)
        return
    entries = cache.entries()
    for e in entries:
        print(f"{e.kind:8} {e.size / 2**20:9,.0f} MiB {e.age_days:6.1f} d  {e.path.name}  {e.made_by}")
    total = sum(e.size for e in entries) + cache.digests_size()
    by_kind = ", ".join(
        f"{kind} {sum(e.size for e in entries if e.kind == kind) / 2**30:.2f} GiB"
        for kind in cache.KINDS
        if any(e.kind == kind for e in entries)
    )
    print(f"{cache.folder('capture').parent}: {len(entries)} entries ({by_kind}); total {total / 2**30:.2f} GiB")


def cmd_train(args) -> None:
    from linrec.inputs.training import TrainConfig, get_run

    cfg = TrainConfig(
        mlp=args.mlp, d_model=args.d_model, n_layers=args.layers, n_heads=args.heads, vocab=args.vocab,
        seq_len=args.seq_len, batch_size=args.batch_size, steps=args.steps, lr=args.lr, init_seed=args.init_seed,
        data_seed=args.data_seed, text=args.text, device=args.device,
    )  # fmt: skip
    run = get_run(cfg, cache=not args.no_cache)
    m = run.meta
    print(
        f"{cfg.name}: {m['n_params']:,} parameters ({m['n_params_blocks']:,} in the blocks), {m['tokens_seen']:,} "
        f"tokens seen ({m['tokens_seen'] / m['n_params']:.1f} per parameter), final training loss "
        f"{m['final_train_loss']:.3f}, trained on {m['made_on']}{' (from the cache)' if run.cached else ''}"
    )
    for step in run.steps:
        print(f"step {step:>6}: {run.checkpoint(step)}")
    print(f"measure on: {run.measure_corpus}  (documents never trained on)")


def cmd_figures(args) -> None:
    from linrec.app.notebooks import run_notebooks

    run_notebooks(args.params, only=args.only, jobs=args.jobs)


def cmd_report(args) -> None:
    from linrec.app.bench import performance_script
    from linrec.app.params import load_params
    from linrec.base.files import project_root
    from linrec.outputs.report import build_report

    root = project_root()
    if args.bench:
        perf = performance_script(root)  # benchmarks/performance.py, which renders docs/performance.md's block
        run = root / "results" / "default" / "notebooks" / "run.csv"  # the default profile's last figures run
        if not perf.update_readme_performance(root / perf.PERFORMANCE_PAGE, root / args.bench, run):
            raise LinrecError(
                f"{perf.PERFORMANCE_PAGE} has no <!-- performance:start/end --> markers; restore them from git"
            )
        print(f"wrote the performance block of {root / perf.PERFORMANCE_PAGE} from {args.bench}")
        return
    params = load_params(root / args.params if not Path(args.params).is_absolute() else args.params, root)
    results = root / params.get("results_dir", "results/default")
    out = build_report(
        results,
        root / params.get("figures_dir", "figures"),
        root / params.get("report_path", results / "report.md"),
        params,
    )
    print(f"wrote {out}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="linrec", description="Per-block linear recoverability of transformer FFN blocks.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what linrec does")
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("measure", help="closed-form R²_lin of every FFN block → per-block table")
    _add_capture_args(p)
    p.add_argument("--out", help="write the table as CSV here")
    p.set_defaults(func=cmd_measure)

    p = sub.add_parser(
        "curve",
        help="R²_lin against train tokens × split seeds, with a large-n estimate per block (linrec.measure.curves)",
    )
    _add_capture_args(p, curve=True)
    p.add_argument(
        "--train-tokens",
        type=_token_list,
        default=None,
        help="comma-separated train sizes in tokens (default: linrec.measure.curves.CURVE_TOKENS, 5120 … 204800)",
    )
    p.add_argument(
        "--test-tokens", type=_positive, default=None, help="held-out tokens per seed (default: a capture's --tokens)"
    )
    p.add_argument("--seeds", type=_positive, default=3, help="split seeds 0 … N−1 (default: 3)")
    p.add_argument("--out", help="write the table as CSV here")
    p.set_defaults(func=cmd_curve)

    p = sub.add_parser("probe", help="rank-k bilinear probe of each block's residual, and trained linear baselines")
    _add_capture_args(p)
    p.add_argument("--rank", type=_positive, default=16, help="rank of the bilinear probe (default: 16)")
    p.add_argument("--out", help="write the table as CSV here")
    p.set_defaults(func=cmd_probe)

    p = sub.add_parser(
        "spectrum", help="per-feature R², effective ranks, top-k shares, ex-top-k R² and regime per block"
    )
    _add_capture_args(p)
    p.add_argument("--out", help="write the table as CSV here")
    p.set_defaults(func=cmd_spectrum)

    p = sub.add_parser(
        "swap", help="replace FFN blocks by their closed-form affine maps (no training) → held-out ΔPPL per block"
    )
    _add_capture_args(p)
    p.add_argument(
        "--blocks",
        type=_block_syntax,
        help="blocks to evaluate, swap together and save, e.g. 0,3 (default: every block)",
    )
    p.add_argument(
        "--first",
        choices=["map", "ffn", "mean"],
        default="map",
        help="each window's first position: swapped like the rest (map, default), or the map fitted and applied on "
        "positions ≥ 1 with position 0 kept as the FFN's output (ffn) or set to its train mean (mean)",
    )
    p.add_argument(
        "--budget-ppl",
        type=_budget,
        help="also swap greedily, keeping blocks while ΔPPL on the screening windows ≤ this; reported held out",
    )
    p.add_argument(
        "--order",
        choices=["r2_lin", "screening"],
        default="r2_lin",
        help="greedy order: descending R²_lin (default) or ascending ΔPPL alone, both on the screening windows",
    )
    p.add_argument(
        "--screening-windows",
        type=_positive,
        default=8,
        help="seeded train windows on which the greedy swap orders and accepts blocks (default: 8)",
    )
    p.add_argument(
        "--test-windows",
        type=_positive,
        help="report ΔPPL on this many held-out windows drawn by seed (default: all; fewer is faster, wider intervals)",
    )
    p.add_argument("--save", help="write the compressed model (--budget-ppl's choice, else --blocks) to this directory")
    p.add_argument("--out", help="write the table as CSV here")
    p.set_defaults(func=cmd_swap)

    p = sub.add_parser(
        "train",
        help="train a small decoder from scratch with checkpoints (linrec.inputs.training; notebook 08), cached",
    )
    p.add_argument("--mlp", choices=["gelu", "swiglu"], default="gelu", help="MLP variant (default: gelu)")
    p.add_argument("--d-model", type=_positive, default=128, help="width (default: 128)")
    p.add_argument("--layers", type=_positive, default=4, help="blocks (default: 4)")
    p.add_argument("--heads", type=_positive, default=4, help="attention heads (default: 4)")
    p.add_argument("--vocab", type=_positive, default=4096, help="BPE vocabulary trained on the text (default: 4096)")
    p.add_argument("--seq-len", type=_positive, default=128, help="window (default: 128)")
    p.add_argument("--batch-size", type=_positive, default=32, help="windows per step (default: 32)")
    p.add_argument("--steps", type=_positive, default=600, help="optimizer steps (default: 600)")
    p.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (default: 3e-3)")
    p.add_argument("--init-seed", type=int, default=0, help="seed of the initial weights (default: 0)")
    p.add_argument("--data-seed", type=int, default=0, help="seed of the data order (default: 0)")
    p.add_argument("--text", default="wiki", help="training text: an offline corpus or a path (default: wiki)")
    p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or auto (default: cpu); the cache key says which")
    p.add_argument("--no-cache", action="store_true", help="train into a temporary folder, read nothing cached")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("fetch", help="download offline models/corpora into $LINREC_CACHE")
    p.add_argument("names", nargs="+", help="e.g. smollm2-135m gemma3-270m wiki web code")
    p.set_defaults(func=cmd_fetch)

    p = sub.add_parser(
        "cache",
        help="list what $LINREC_CACHE holds, or prune captures, learning curves and trained runs by age or size",
    )
    p.add_argument("action", nargs="?", choices=["list", "prune"], default="list")
    p.add_argument(
        "--older-than", type=_amount, metavar="DAYS", help="prune: entries written more than DAYS ago (a number ≥ 0)"
    )
    p.add_argument(
        "--max-size", type=_amount, metavar="GB", help="prune: oldest entries until the rest fit in GB (a number ≥ 0)"
    )
    p.add_argument("--dry-run", action="store_true", help="prune: say what would go, remove nothing")
    p.set_defaults(func=cmd_cache)

    p = sub.add_parser("figures", help="execute the numbered notebooks with papermill")
    p.add_argument("--params", default="params/default.yaml", help="parameter profile (default: params/default.yaml)")
    p.add_argument("--only", nargs="+", metavar="PREFIX", help="notebook name prefixes to run, e.g. 01 02")
    p.add_argument(
        "--jobs",
        type=_positive,
        help="notebooks run at once after 01 (default: 2 on ≥ 2 CPUs, splitting the threads between them)",
    )
    p.set_defaults(func=cmd_figures)

    p = sub.add_parser("report", help="rebuild the reproduction report from the results files of a parameter profile")
    p.add_argument("--params", default="params/default.yaml", help="parameter profile (default: params/default.yaml)")
    p.add_argument(
        "--bench", metavar="DIR", help="only rewrite docs/performance.md's block from the benchmark CSVs in DIR"
    )
    p.set_defaults(func=cmd_report)
    return parser


class _StderrHandler(logging.StreamHandler):
    """Log lines to whatever `sys.stderr` is at the time
    (main() may run many times in one process, e.g. under pytest)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


def _log_to_stderr(level: int) -> None:
    root = logging.getLogger()
    if not any(isinstance(h, _StderrHandler) for h in root.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
    root.setLevel(level)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _log_to_stderr(logging.INFO if args.verbose else logging.WARNING)
    from linrec.base.files import terminate_as_exit

    try:
        # SIGTERM/SIGHUP unwind like an exception, so no staging folder is left behind; not for `figures`, whose
        # process pool would wait for the running notebooks before exiting (there the default stop is the right one)
        with terminate_as_exit() if args.command != "figures" else contextlib.nullcontext():
            args.func(args)
        sys.stdout.flush()  # inside the boundary: a closed pipe surfaces here, not at interpreter exit
    except BrokenPipeError:
        _drop_stdout()
        return 0
    except KeyboardInterrupt:
        print("linrec: interrupted", file=sys.stderr)
        return 130
    except Exception as err:
        if args.debug:
            raise
        print(f"linrec: error: {_one_line(err)}", file=sys.stderr)
        return 2 if isinstance(err, LinrecError) else 1
    return 0


def _drop_stdout() -> None:
    """The reader of our stdout went away: point stdout at /dev/null so the interpreter's final flush has nowhere to
    fail (Python's documented recipe for SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real file descriptor behind stdout (a test's stand-in)
        pass


def _one_line(err: Exception) -> str:
    """A LinrecError's own message; anything else as its type, first line and where to see more."""
    text = (
        " ".join(str(err).split()) if isinstance(err, LinrecError) else (str(err).strip().splitlines() or [""])[0][:200]
    )
    if isinstance(err, LinrecError):
        return text
    if isinstance(err, PermissionError | FileNotFoundError | IsADirectoryError | NotADirectoryError) and err.filename:
        return f"{err.strerror}: {err.filename} (rerun with --debug for the traceback)"
    return f"unexpected {type(err).__name__}: {text} (a bug; rerun with --debug for the traceback)"


if __name__ == "__main__":
    sys.exit(main())
