"""What each `linrec` subcommand asks for, built once from its parsed arguments (`Request.of(args)`: the argparse
`Namespace` is read there and nowhere after), each check made before any expensive work on the request it concerns:
`Capturing` (the capture of measure, probe, spectrum and swap: its `CaptureConfig`, how it runs, the cache, the
table's path), `Probing` and `Swapping` around it, `Curving` (a learning curve), `Training` (its `TrainSettings`)
and the plain requests of the other subcommands. Every option is a field declared once (`linrec.base.params.param`:
its default, what it does, its rule), here or in the settings it sets (`CaptureConfig`, `CaptureRun`,
`TrainSettings`); `linrec.app.cli` builds the option from it and checks the rule as it parses.

Light to import (`linrec.app.cli` imports it when it starts, and `linrec --help` or a mistyped name answers without
torch): what a check needs is imported inside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

from linrec.analyses import SCREENING_WINDOWS
from linrec.base.constraints import Blocks, Integer, Many, Optional, Options, Real, flag_words
from linrec.base.errors import LinrecError
from linrec.base.files import check_writable_dir
from linrec.base.params import param
from linrec.collect.config import CaptureConfig, CaptureRun
from linrec.inputs.offline import fetchable
from linrec.inputs.train_settings import TrainSettings

if TYPE_CHECKING:
    from linrec.inputs.source import ModelShape, ModelSource

PROBE, GATE = "the probe", "--route's gate"  # what reads a capture's row sample (`Capturing.reads_rows`)
FIRST_NAMES = ("map", "ffn", "mean")  # linrec.inputs.surgery.FIRST_MODES, light here (tests/app/test_cli.py)
PROFILE = "profile: a YAML file, or a name in params/ (smoke)"  # --params of figures and report


def given(cls, args) -> dict:
    """{field: value} of every field of the dataclass `cls` that the command line sets (an option of that name)."""
    return {f.name: getattr(args, f.name) for f in fields(cls) if hasattr(args, f.name)}


class Request:
    """A plain request: its fields are the command line's options of the same names."""

    @classmethod
    def of(cls, args):
        return cls(**given(cls, args))


def check_names(model: str, corpus: str) -> None:
    """`--model` and `--corpus` as names (`linrec.inputs.offline`: no torch), so a mistyped one is one line with "did
    you mean" within a second; each capturing subcommand calls this before it imports what it runs (torch)."""
    from linrec.inputs.offline import check_corpus_name, check_model_name

    check_model_name(model)
    check_corpus_name(corpus)


def check_out(out: str | None) -> None:
    """Before any work: `--out` must name a file whose directory is writable."""
    if not out:
        return
    path = Path(out)
    if path.is_dir() or out.endswith(("/", "\\")):
        raise LinrecError(f"--out {out} is a directory; give a file name, e.g. --out {path / 'table.csv'}")
    check_writable_dir(path.resolve().parent, "the directory of --out", "choose another --out")


def device_of(device: str) -> str:
    """`--device` resolved ("auto": cuda if present), refused where absent; under torchrun, this rank's device."""
    from linrec.inputs.hf import check_device
    from linrec.stats.distributed import init_from_env

    return check_device(init_from_env(device))


def model_of(spec: str, corpus: str) -> ModelSource:
    """The corpus checked and `--model` parsed, once: the load and the cache keys read the `ModelSource` returned."""
    from linrec.inputs.corpora import check_corpus
    from linrec.inputs.source import ModelSource

    check_corpus(corpus)
    return ModelSource.parse(spec)


def check_context(spec: str, seq_len: int, shape: ModelShape | None) -> None:
    """The window against the model's context, where its config gives it without the weights (`shape`; None: checked
    after the load, by the same rule)."""
    from linrec.inputs.hf import context_error

    err = None if shape is None else context_error(spec, seq_len, shape.context)
    if err is not None:
        raise err


def block_list(blocks: list[int] | None, n_blocks: int) -> list[int] | None:
    """`--blocks` checked against a model's `n_blocks` (`Blocks(below=n_blocks)`, said in the command line's words)."""
    try:
        return Blocks(below=n_blocks).check("blocks", blocks)
    except LinrecError as err:
        raise type(err)(flag_words(str(err), "blocks", "--blocks")) from None


@dataclass(frozen=True)
class Capturing:
    """The capture a measuring subcommand asks for: `config` (its settings, the cache key), `run` (how it runs),
    `cache` (False: --no-cache, nothing read or written), `out` (the table's CSV), `reads_rows` (what reads the
    capture's row sample: `PROBE`, `GATE`; None: nothing) and, once checked (`with_model`), `source` (--model
    parsed)."""

    config: CaptureConfig
    run: CaptureRun = CaptureRun()
    cache: bool = param(True, "recompute even if a cached capture exists", flags=("--no-cache",), const=False)
    out: str | None = param(None, "write the table as CSV here")
    reads_rows: str | None = None
    source: ModelSource | None = None

    @classmethod
    def of(cls, args, reads_rows: str | None = None) -> Capturing:
        """From the command line. --sample-rows unset keeps `CaptureConfig`'s row count where the command reads rows
        and none where it does not; with --no-cache a command that reads none is captured without them (nothing
        outlives the command, so the rows would be written for nothing)."""
        rows = args.sample_rows
        if rows is None:
            rows = CaptureConfig.sample_rows if reads_rows else 0
        rows = rows if reads_rows or args.cache else 0
        config = CaptureConfig(**{**given(CaptureConfig, args), "sample_rows": rows})
        return cls(config, CaptureRun(**given(CaptureRun, args)), args.cache, args.out, reads_rows)

    def check_names(self) -> None:
        check_names(self.config.model, self.config.corpus)

    def settled(self) -> Capturing:
        """From the arguments alone: the device (resolved, `device_of`), --device-map beside it, --out and the
        capture's settings (`CaptureConfig.validate`); the request with its device resolved."""
        device = device_of(self.run.device)
        if self.run.device_map:
            from linrec.stats.distributed import world

            if world()[1] > 1:
                raise LinrecError("--device-map places one model over all devices; under torchrun use --device instead")
            if device != "cpu":
                raise LinrecError(f"--device {device} and --device-map both place the model; give one of them")
        check_out(self.out)
        self.config.validate()
        return replace(self, run=replace(self.run, device=device))

    def with_model(self) -> tuple[Capturing, ModelShape | None]:
        """Before loading the model or reading the cache: the corpus, --model (parsed once, `model_of`), a cache that
        cannot take the entry, and — from the model's config alone, where it can be read without the weights
        (`ModelSource.shape`) — the row sample against the width, the window against the context, and the train
        rows --tokens can make against the width (`check_budget`). The request with its `source`, and the shape
        (None: unread; checked after the load, by the same rules)."""
        source = model_of(self.config.model, self.config.corpus)
        self._check_cache(source)
        shape = source.shape()
        self._check_rows(None if shape is None else shape.d_model)
        check_context(self.config.model, self.config.seq_len, shape)
        if shape is not None:
            check_budget(self.config, shape.d_model)
        return replace(self, source=source), shape

    def checked(self) -> Capturing:
        """`settled`, then `with_model`: the request ready to capture."""
        return self.settled().with_model()[0]

    def capture(self, loaded=None):
        """The capture asked for (`linrec.collect.capture.get_capture`: from the cache when it is there); `loaded`
        reuses a loaded model. Train rows no affine map can be fitted on are one line naming the fix (`check_fit`)."""
        from linrec.collect.capture import get_capture

        capture = get_capture(self.config, self.run, source=self.source, loaded=loaded, cache=self.cache)
        check_fit(capture)
        return capture

    def _check_cache(self, source: ModelSource) -> None:
        """A cache that cannot take the capture's entry is refused, unless the entry is already there (a read-only
        cache still serves what it holds) or --no-cache reads and writes nothing."""
        if not self.cache:
            return
        from linrec.base.cache import entry_path, writable

        try:
            writable("capture")
        except LinrecError:
            if not entry_path("capture", self.config.model, self.config.key(source)).is_dir():
                raise

    def _check_rows(self, d_model: int | None) -> None:
        """A command that reads the row sample asks for one that can hold enough train rows (about 80 % of
        --sample-rows; the exact counts are checked again after the capture). The probe fits an affine map on them,
        so it needs more train rows than the input is wide, plus one (the width read from the model's config; before
        the load without one: 10 rows). A gate needs two train rows, one of each class: 10 rows hold them but for a
        chance of 4e-6 (3 rows: 1 in 10)."""
        if self.reads_rows is None:
            return
        train_share = 1 - CaptureConfig.test_frac
        probe = self.reads_rows == PROBE and d_model is not None
        least = math.ceil((d_model + 2) / train_share) if probe else 10
        rows = self.config.sample_rows
        if rows < least:
            why = (
                f"more train rows (about {train_share:.0%} of them) than the {d_model}-wide input"
                if probe
                else "10 rows"
            )
            raise LinrecError(
                f"{self.reads_rows} reads the capture's row sample and needs {why}, and --sample-rows {rows} keeps "
                f"fewer; use --sample-rows {max(least, CaptureConfig.sample_rows)} (the default) or at least {least}"
            )


def check_budget(config: CaptureConfig, d_model: int) -> None:
    """Before the load: the train rows --tokens makes at most (the corpus may hold fewer) against a block of the
    model's width, refused in `linrec.collect.reuse.rows_problem`'s words where no affine map can be fitted on them
    (the capture refuses the same before its pass, `say_rows`; this answers without loading the model)."""
    from linrec.collect.reuse import rows_problem

    n = config.tokens // config.seq_len
    problem = rows_problem(config, n, train_windows(config) * config.seq_len, d_model) if n >= 2 else None
    if problem is not None and problem[1]:
        raise LinrecError(problem[0])


def train_windows(config: CaptureConfig) -> int:
    """The train windows --tokens and --seq-len make, held out as `linrec.inputs.corpora.make_windows` splits them
    (a corpus shorter than --tokens makes fewer: checked again after the capture)."""
    n = config.tokens // config.seq_len
    return n - min(n - 1, max(1, round(config.test_frac * n)))


def check_fit(capture) -> None:
    """After the capture, before any fit: train rows no affine map can be fitted on are one line naming the fix (a
    larger corpus where the corpus ran out, else a larger --tokens; `linrec.collect.reuse.rows_problem`)."""
    from linrec.collect.reuse import rows_problem

    m = capture.meta
    d = max(int(dx) for dx, _ in m["dims"])
    problem = rows_problem(capture.config, sum(m["n_windows"].values()), int(m["n_rows"]["train"]), d)
    if problem is not None and problem[1]:
        raise LinrecError(problem[0])


@dataclass(frozen=True)
class Probing:
    """`linrec probe`: its capture (with rows) and the bilinear probe's rank."""

    capture: Capturing
    rank: int = param(16, "rank of the bilinear probe", Integer(low=1, example=16))

    @classmethod
    def of(cls, args) -> Probing:
        return cls(Capturing.of(args, PROBE), args.rank)

    def checked(self) -> Probing:
        """The capture's checks, then the rank against the width where the model's config gives it (as `probe_table`
        checks it: on the rows of both splits)."""
        capture, shape = self.capture.settled().with_model()
        if shape is not None:
            from linrec.analyses.probe import check_rank

            check_rank(self.rank, shape.d_model, shape.d_model, capture.config.sample_rows)
        return replace(self, capture=capture)


@dataclass(frozen=True)
class Swapping:
    """`linrec swap`: its capture (with rows for --route's gate) and what it swaps, reports and saves."""

    capture: Capturing
    blocks: list[int] | None = param(None, "blocks to evaluate, swap together and save, e.g. 0,3", Blocks(),
                                     unset="every block")  # fmt: skip
    first: str = param(
        "map", "each window's first position: swapped like the rest (map), or the map fitted and applied on positions "
        "≥ 1 with position 0 kept as the FFN's output (ffn) or set to its train mean (mean)", Options(FIRST_NAMES),
    )  # fmt: skip
    budget_ppl: float | None = param(
        None, "also swap greedily, keeping blocks while ΔPPL on the screening windows ≤ this; reported held out",
        Optional(Real(0, None, "left", example=1.0)),
    )  # fmt: skip
    order: str = param("r2_lin", "greedy order: descending R²_lin or ascending ΔPPL alone, both on the screening "
                       "windows", Options(("r2_lin", "screening")))  # fmt: skip
    screening_windows: int = param(SCREENING_WINDOWS, "seeded train windows on which the greedy swap orders and "
                                   "accepts blocks", Integer(low=1, example=SCREENING_WINDOWS))  # fmt: skip
    test_windows: int | None = param(
        None, "report ΔPPL on this many held-out windows drawn by seed (a ΔPPL interval needs two)",
        Optional(Integer(low=2, example=32)), unset="all; fewer is faster, wider intervals",
    )  # fmt: skip
    route: float | None = param(
        None, "instead of swapping whole blocks, route this share of each block's tokens (0–1) to its map by a "
        "logistic gate trained on the capture's train rows, and report held-out ΔPPL per block "
        "(linrec.analyses.routing)", Optional(Real(0, 1, "both", example=0.5)),
    )  # fmt: skip
    save: str | None = param(None, "write the compressed model (--budget-ppl's choice, else --blocks) to this "
                             "directory")  # fmt: skip

    @classmethod
    def of(cls, args) -> Swapping:
        asked = given(cls, args)
        blocks = asked.pop("blocks")
        capture = Capturing.of(args, GATE if args.route is not None else None)
        return cls(capture, sorted(blocks) if blocks else blocks, **asked)

    def check(self) -> None:
        """The options that exclude each other, from the arguments alone."""
        if self.capture.run.device_map:
            raise LinrecError(
                "--device-map is for the capturing commands (measure, probe, spectrum); swap runs on --device"
            )
        if self.save and self.route is not None:
            raise LinrecError(
                "--save with --route: a routed block keeps its whole FFN and adds a gate, so it saves no parameters, "
                "and transformers could not load it without linrec; save a whole-block swap instead (drop --route)"
            )
        if self.save and self.blocks is None and self.budget_ppl is None:
            raise LinrecError("--save needs the blocks to swap: give --blocks 0,3 or --budget-ppl 1.0")
        if self.route is not None and (self.budget_ppl is not None or self.first != "map"):
            raise LinrecError("--route routes tokens of each block on its own; drop --budget-ppl and --first")
        if self.save and self.first != "map":
            raise LinrecError(
                f"--first {self.first} swaps are for evaluation only (under KV-cached generation a module cannot tell "
                "position 0 apart); save with --first map"
            )

    def checked(self) -> Swapping:
        """`check`, the capture's checks with, between them, the save target and the screening windows, and --blocks
        against the block count where the model's config gives it."""
        self.check()
        capture = self.capture.settled()
        if self.save:
            from linrec.inputs.surgery import check_save_target

            check_save_target(self.save)
        self.check_windows(capture.config)
        capture, shape = capture.with_model()
        blocks = self.blocks if shape is None else block_list(self.blocks, shape.n_blocks)
        return replace(self, capture=capture, blocks=blocks)

    def check_windows(self, config: CaptureConfig) -> None:
        """--screening-windows must leave train windows outside the screening set (it is removed from the train
        statistics), counted from --tokens and --seq-len as the capture splits them (a corpus shorter than --tokens
        is checked again, after the capture, by the same rule)."""
        n_train = train_windows(config)
        if self.screening_windows >= n_train:
            fix = f"use --screening-windows {n_train - 1} or fewer, or raise" if n_train > 1 else "raise"
            raise LinrecError(
                f"--screening-windows {self.screening_windows}: --tokens {config.tokens} in windows of --seq-len "
                f"{config.seq_len} make {n_train} train windows, and the screening windows must be fewer; {fix} "
                "--tokens"
            )


@dataclass(frozen=True)
class Curving:
    """`linrec curve`: the learning curve's model, corpus, window and sizes (None: `linrec.collect.curves`'
    defaults), its split seeds 0 … seeds − 1, how it runs, the cache and the table's path; once checked, `source`."""

    model: str
    corpus: str
    seq_len: int
    train_tokens: tuple[int, ...] | None = param(
        None, "comma-separated train sizes in tokens", Optional(Many(Integer(low=1, example=5120))),
        unset="linrec.collect.curves.CURVE_TOKENS, 5120 … 204800",
    )  # fmt: skip
    test_tokens: int | None = param(None, "held-out tokens per seed", Optional(Integer(low=1, example=20_480)),
                                    unset="a capture's --tokens")  # fmt: skip
    seeds: int = param(3, "split seeds 0 … N−1", Integer(low=1, example=3))
    run: CaptureRun = CaptureRun()
    cache: bool = True
    out: str | None = None
    source: ModelSource | None = None

    @classmethod
    def of(cls, args) -> Curving:
        return cls(**given(cls, args), run=CaptureRun(**given(CaptureRun, args)))

    def check_names(self) -> None:
        check_names(self.model, self.corpus)

    def checked(self) -> Curving:
        """The device, --out, the corpus, --model (parsed once) and the window against the context."""
        run = replace(self.run, device=device_of(self.run.device))
        check_out(self.out)
        source = model_of(self.model, self.corpus)
        check_context(self.model, self.seq_len, source.shape())
        return replace(self, run=run, source=source)


@dataclass(frozen=True)
class Training:
    """`linrec train`: the run's settings (`TrainSettings`: the options of the same names, the rest their defaults;
    `linrec.inputs.training.TrainConfig` checks them) and the cache."""

    settings: TrainSettings = TrainSettings()
    cache: bool = param(True, "train into a temporary folder, read nothing cached", flags=("--no-cache",), const=False)

    @classmethod
    def of(cls, args) -> Training:
        return cls(TrainSettings(**given(TrainSettings, args)), args.cache)


@dataclass(frozen=True)
class Fetching(Request):
    names: list[str] = param(about=f"what to fetch: {fetchable()}", flags=("names",), metavar="NAME", nargs="+")


@dataclass(frozen=True)
class Pruning(Request):
    """`linrec cache`: list, or prune by age (days) or size (GB), or say what would go."""

    action: str = param("list", "list the entries, or prune them", Options(("list", "prune")), flags=("action",),
                        nargs="?")  # fmt: skip
    older_than: float | None = param(None, "prune: entries written more than DAYS ago (a number ≥ 0)",
                                     Optional(Real(0, None, "left", example=30)), metavar="DAYS")  # fmt: skip
    max_size: float | None = param(None, "prune: oldest entries until the rest fit in GB (a number ≥ 0)",
                                   Optional(Real(0, None, "left", example=10)), metavar="GB")  # fmt: skip
    dry_run: bool = param(False, "prune: say what would go, remove nothing", const=True)


@dataclass(frozen=True)
class Figures(Request):
    """`linrec figures`: the profile, the notebooks, the jobs, the overrides as given (-p NAME VALUE), the output
    folder and the device."""

    params: str = param("params/default.yaml", PROFILE)
    only: list[str] | None = param(None, "the notebooks to run, by number or study name: e.g. 01 02, or ceiling",
                                   metavar="NAME", nargs="+")  # fmt: skip
    jobs: int | None = param(None, "notebooks run at once after 01", Optional(Integer(low=1, example=2)),
                             unset="2 on ≥ 2 CPUs, splitting the threads between them")  # fmt: skip
    parameter: list | None = param(
        None, "override one parameter of the profile (lib/linrec/studies/stages.py declares them all; linrec studies "
        "NAME lists a study's), read as papermill's -p (e.g. -p corpus code; a list: -p models '[smollm2-135m]'); "
        "repeat for more", flags=("-p", "--parameter"), metavar=("NAME", "VALUE"), nargs=2, action="append",
    )  # fmt: skip
    out: str | None = param(None, "write tables, executed notebooks, figures and the report under DIR instead of the "
                            "profile's folders", metavar="DIR")  # fmt: skip
    device: str | None = param(
        None, "run the profile on this device instead of its own `device:` (cpu, cuda, cuda:N or auto; e.g. "
        "params/zoo.yaml trains and measures on a GPU with --device cuda); refused before any notebook where absent",
    )  # fmt: skip


@dataclass(frozen=True)
class Studies(Request):
    name: str | None = param(None, "one study, by name or notebook number (e.g. ceiling, 02)", flags=("name",),
                             nargs="?")  # fmt: skip
    params: str | None = param(None, "show this profile's values beside the defaults (e.g. smoke)", metavar="PROFILE")


@dataclass(frozen=True)
class Reporting(Request):
    params: str = param("params/default.yaml", PROFILE)
    bench: str | None = param(None, "only rewrite docs/performance.md's block from the benchmark CSVs in DIR",
                              metavar="DIR")  # fmt: skip
