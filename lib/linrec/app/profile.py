"""The profile: every parameter of a run declared once, here (its type, its one default and what it does), grouped by
the stage of the paper that reads it; `load_profile` reads a profile (params/<name>.yaml) over these defaults, checks
it and hands back one `Profile`.

A profile file sets only what it changes. Every notebook's parameters cell declares just what papermill injects
(`profile_file`, `overrides`), and its next cell binds the names it reads from
`load_profile(profile_file, overrides).notebook(NN)`: Run All in Jupyter loads params/default.yaml, `linrec figures`
the profile it is given with its `-p NAME VALUE` overrides. A wrong key or type is one line naming the key and the fix,
at load, before any notebook runs.

The defaults here are the default profile's values (params/default.yaml states only its output paths, which differ
from any other profile's: `with_output_defaults`); a change of one moves every profile that leaves it out.
"""

from __future__ import annotations

import types
import typing
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path

import yaml

from linrec.analyses import SCREENING_WINDOWS
from linrec.base.errors import LinrecError
from linrec.base.files import project_root
from linrec.measure.config import CaptureConfig, capture_settings
from linrec.stats import N_BOOT


def _given(value):
    """A mutable default (a list or mapping): a fresh copy per profile."""
    return field(default_factory=lambda: yaml.safe_load(yaml.safe_dump(value)))


MODELS = ["smollm2-135m", "gemma3-270m"]  # offline; the paper: gpt2, EleutherAI/pythia-160m, JackFram/llama-160m


@dataclass(frozen=True)
class Run:
    """Capture and run options: what is measured, on what text, how (every notebook reads some of them)."""

    models: list[str] = _given(MODELS)  # the models measured (notebooks 01–07, 09)
    corpus: str = "wiki"  # wiki | web | code (offline), wikitext-2 (hub), or a path
    corpora: list[str] = _given(["wiki", "web", "code"])  # notebook 05's domains; with the hub: wikitext-2, web, code
    capture: dict = _given({})  # linrec.measure.config.CaptureConfig fields ({}: its defaults)
    seed: int = 0  # split, row-sample, probe, baseline and bootstrap seeds
    batch_size: int = 8  # windows per forward pass
    device: str = "cpu"  # or "cuda"
    encoder_models: list[str] = _given(["minilm-l6"])  # plain-GELU encoders beside `models`: notebook 07 only
    # bootstrap resamples for every interval (linrec.stats.N_BOOT; the training and zoo profiles set 1000)
    n_boot: int = N_BOOT


@dataclass(frozen=True)
class Outputs:
    """Where a run writes, and which notebooks `linrec figures` runs (None: `with_output_defaults`)."""

    results_dir: str | None = None  # tables and executed notebooks (None: results/<profile>)
    figures_dir: str | None = None  # figures (None: <results_dir>/figures)
    report_path: str | None = None  # notebook 09's report (None: <results_dir>/report.md)
    readme: str | None = None  # the README whose results block notebook 09 rewrites (None: none)
    notebooks: list[str] | None = None  # the notebooks `linrec figures` runs without --only (None: all); the runner's


@dataclass(frozen=True)
class Ceiling:
    """Notebooks 02 and 04: the linear ceiling, its learning curve and the replication on fresh text."""

    curve_train_tokens: list[int] = _given([])  # learning curve's train sizes ([]: skip); params/curve.yaml runs it
    curve_test_tokens: int = 20_480  # held-out tokens per split seed
    curve_seeds: int = 3  # split seeds 0 … curve_seeds − 1
    profile: str = "capture"  # claim 1 and Figure 2 on "capture" (the capture's profile) or "curve" (its largest size)
    replicate_samples: list[int] = _given([])  # disjoint stretches of text for claims 1 and 4 ([]: skip); full: [1, 2]


@dataclass(frozen=True)
class Probe:
    """Notebook 03: the bilinear probe, the trained baselines and the pitfall's mechanism."""

    probe_rows: int | None = 8192  # train rows per block for the probes and trained baselines (None: every row)
    rank: int = 16  # the paper's probe rank
    probe_ranks: list[int] = _given([16, 64, 256])  # the rank sweep, on three blocks per model
    mechanism_k: int = 1  # claim 7b's budget curve: this many best- and worst-conditioned blocks per model (train κ)
    budget_max_steps: int = 10_000  # the budget curve's longest budget (from 100 steps, four budgets per decade)
    pitfall_outputs: int = 32  # output features the budget curve and the dose–response train (drawn by seed)
    dose_kappas: list[float] = _given([1e2, 1e4, 1e6, 1e8])  # the constructed condition numbers
    dose_steps: int = 1_000  # the dose's longest budget (from 10 steps, four budgets per decade)
    probe_without_first: bool = True  # claim 3 again on the rows at positions ≥ 1 (the probe and the map refitted)


@dataclass(frozen=True)
class Swap:
    """Notebook 06: each block swapped for its map, the choices on screening windows, routing and healing."""

    # train windows for every choice: predictors, greedy order and acceptance, curve block
    screening_windows: int = SCREENING_WINDOWS
    test_windows: int | None = 12  # held-out windows every ΔPPL is reported on (None: all)
    ranks: list[int] = _given([16, 64, 256])  # reduced ranks for the ΔPPL-vs-parameters curve
    budget_ppl: float = 1.0  # greedy multi-block swap: keep blocks while screening ΔPPL stays within this
    first_variants: list[str] = _given(["ffn", "mean"])  # position-aware variants beside the plain map ([]: skip)
    variant_min_first_share: float = 0.5  # ...on blocks whose train first-position share of output variance is ≥ this
    route_blocks: int | None = 3  # per-token routing: blocks a model, chosen on screening windows (None: all; 0: skip)
    route_step: float = 0.05  # the share grid 0, step, …, 1 of a block's tokens routed to its map
    route_corpora: list[str] = _given(["web", "code"])  # corpora a token type's need is compared on
    route_split_shares: list[float] = _given([])  # shares the token/context/full gates route at ([]: AUC only)
    heal: dict = _given({})  # k blocks swapped, then fine-tuned, on `models` (heal_study arguments; {}: skip)
    heal_trained: dict = _given({})  # the same on notebook 08's small models ({}: skip; params/healing.yaml)
    save_dir: str | None = None  # where the compressed model is kept (None: a temporary folder, deleted after reload)


@dataclass(frozen=True)
class Controls:
    """Notebook 07: random-init twins, input controls, cross feeding and the inputs-or-weights decomposition."""

    init_seeds: list[int] = _given([0, 1])  # random-init twins per model
    control_rows: int | None = 4096  # rows per control (None: every stored row)
    cross_feeding: bool = False  # section 3 (no verdict rests on it; params/full.yaml runs it)
    cross_pairs: list[list[str]] | None = None  # [[A, B], …] inputs of A into the FFN of B (None: each with its twin)
    decomposition_rows: int | None = 4096  # rows per FFN in section 4 (None: every stored row)
    null_draws: int = 10  # section 4: random-init FFNs and shuffled FFNs per block, each
    cross_band: int | None = 2  # pair FFN i with the inputs of blocks i − band … i + band (None: every pair)


@dataclass(frozen=True)
class Train:
    """Notebook 08: small decoders trained from scratch (the seeds experiment, the zoo)."""

    training: dict = _given({})  # linrec.inputs.training.TrainConfig fields ({}: not run; params/training.yaml runs it)
    train_variants: list[str] = _given(["gelu", "swiglu"])  # layouts (linrec.inputs.layouts.LAYOUTS)
    train_init_seeds: list[int] = _given([0, 1])  # every variant × init seed, on the first data order
    train_data_seeds: list[int] = _given([0, 1])  # the other data orders: one run each, first variant and init seed
    train_texts: list[str] = _given([])  # other training texts: the first variant on each ([]: none)
    train_text_seeds: list[int] = _given([])  # the init seeds of the runs on the other texts ([]: every init seed)
    train_block_tolerance: float | None = None  # refuse layouts whose blocks differ in parameters by more (zoo: 0.02)
    train_measure_tokens: int = 65_536  # measuring-text tokens per checkpoint (windows split 80/20)
    train_swap: bool = True  # held-out ΔPPL of swapping each block of each run's last checkpoint for its map
    train_pipeline: bool = False  # the whole pipeline on every last checkpoint, the factors, the pooled claims
    train_probe_rows: int = 4096  # rows per block the last checkpoint's capture keeps for the probe (train_pipeline)


SECTIONS = {"run": Run, "outputs": Outputs, "ceiling": Ceiling, "probe": Probe, "swap": Swap, "controls": Controls,
            "train": Train}  # fmt: skip
SCHEMA = {f.name: (name, f) for name, cls in SECTIONS.items() for f in fields(cls)}  # parameter: (section, field)
TYPES = {name: hint for cls in SECTIONS.values() for name, hint in typing.get_type_hints(cls).items()}
NOTEBOOKS = ("01", "02", "03", "04", "05", "06", "07", "08", "09")


@dataclass(frozen=True)
class Profile:
    """A loaded profile: each section's values, `name` (its file's stem) and `given` (the keys its file and the
    overrides set, and the output paths). `p.models` reads any parameter; `p.notebook("08")` is what notebook 08
    binds."""

    name: str
    run: Run
    outputs: Outputs
    ceiling: Ceiling
    probe: Probe
    swap: Swap
    controls: Controls
    train: Train
    given: frozenset[str] = frozenset()

    def __getattr__(self, name: str):
        if name in SCHEMA:
            return getattr(object.__getattribute__(self, SCHEMA[name][0]), name)
        raise AttributeError(f"a profile has no parameter {name!r}; known: {', '.join(sorted(SCHEMA))}")

    def values(self) -> dict:
        """{parameter: value} of every parameter, flat, as a profile file names them."""
        return {name: getattr(self, name) for name in SCHEMA}

    def notebook(self, number: str) -> types.SimpleNamespace:
        """The values notebook `number` binds: every parameter (`values()`), the same in every notebook."""
        if number not in NOTEBOOKS:
            raise LinrecError(f"no notebook {number!r}; the notebooks are {', '.join(NOTEBOOKS)}")
        return types.SimpleNamespace(**self.values())


def profile_path(source: str | Path, root: Path | None = None) -> Path:
    """The file of a profile given by name ("smoke": params/smoke.yaml) or path (relative to the project root)."""
    root = root or project_root()
    text = str(source)
    if "/" not in text and not text.endswith((".yaml", ".yml")):
        return root / "params" / f"{text}.yaml"
    return Path(text) if Path(text).is_absolute() else root / text


def load_profile(source: str | Path = "default", overrides: dict | None = None, root: Path | None = None) -> Profile:
    """The profile `source` names (`profile_path`) with `overrides` {name: value} in place of its values, over the
    defaults declared here; every key, type and section checked (`check_values`): one line naming the fix."""
    path = profile_path(source, root)
    values = read_profile(path)
    check_values(values, path)
    if overrides:  # each checked alone, then together (a capture setting and a seed from different places)
        check_values(overrides, "-p")
        check_nested({**values, **overrides}, path)
    values = with_output_defaults({**values, **(overrides or {})}, path.stem)
    sections = {}
    for section, cls in SECTIONS.items():
        sections[section] = cls(**{f.name: values[f.name] for f in fields(cls) if f.name in values})
    return Profile(name=path.stem, **sections, given=frozenset(values))


def read_profile(path: Path) -> dict:
    """A profile file's mapping as written (no defaults, no checks beyond being a YAML mapping)."""
    if not path.is_file():
        raise LinrecError(
            f"parameter file {path} not found; profiles live in params/ (default.yaml, smoke.yaml, paper.yaml)"
        )
    try:
        values = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise LinrecError(f"{path}{where}: not valid YAML ({problem}); fix that line") from None
    except (OSError, UnicodeDecodeError) as err:
        raise LinrecError(f"cannot read parameter file {path} ({err}); give a readable YAML file") from None
    values = {} if values is None else values
    if not isinstance(values, dict):
        raise LinrecError(f"{path} must be a YAML mapping of parameter names to values")
    return values


def check_values(values: dict, where: Path | str) -> None:
    """Every key a parameter declared here, each value of its declared type, the sections well formed; `where`
    names where the values came from (a file, or "-p") in the one-line error."""
    unknown = sorted(str(k) for k in values if k not in SCHEMA)
    if unknown:
        raise LinrecError(f"{where}: unknown parameter(s) {', '.join(unknown)}; known: {', '.join(sorted(SCHEMA))}")
    runs = values.get("notebooks")
    if runs is not None and (not isinstance(runs, list) or not all(isinstance(n, str) and n for n in runs)):
        raise LinrecError(f'{where}: notebooks must be a list of notebook numbers as strings, e.g. ["08"]')
    for name, value in values.items():
        hint = TYPES[name]
        if not _fits(value, hint):
            f = SCHEMA[name][1]
            default = f.default if f.default_factory is MISSING else f.default_factory()
            raise LinrecError(
                f"{where}: {name} must be {_words(hint)} (linrec.app.profile declares {name}: {_source(hint)} = "
                f"{default!r}), got {value!r}; fix that line"
            )
    check_nested(values, where)


def _fits(value: object, hint: object) -> bool:
    """Whether `value` (read from YAML) has type `hint`: a float takes a whole number too; a bool is never a number."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        return any(_fits(value, a) for a in args)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if hint is dict or origin is dict:
        return isinstance(value, dict)
    if origin is list:
        return isinstance(value, list) and all(_fits(v, args[0]) for v in value)
    raise TypeError(f"linrec.app.profile cannot check type {hint!r}")  # a field of a type _fits does not know


_WORDS = {type(None): "null", int: "a whole number", float: "a number", str: "a string", bool: "true or false",
          dict: "a mapping"}  # fmt: skip
_PLURAL = {int: "whole numbers", float: "numbers", str: "strings", bool: "booleans"}


def _words(hint: object) -> str:
    """A type in words: `int | None` is "a whole number or null", `list[str]` "a list of strings"."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        return " or ".join(_words(a) for a in args)
    if origin is list:
        return f"a list of {_PLURAL.get(args[0], 'lists')}"
    return _WORDS.get(hint, _WORDS.get(origin, str(hint)))


def _source(hint: object) -> str:
    return getattr(hint, "__name__", None) if isinstance(hint, type) else str(hint).replace("NoneType", "None")


def parse_overrides(pairs: list[list[str]] | None) -> dict:
    """`-p NAME VALUE` pairs (`linrec figures`) as {name: value}, each VALUE read as papermill reads `-p`: a whole
    number, a number, True/False, None, else the string as given; and, beyond papermill, a YAML list or mapping
    (`-p models "[smollm2-135m]"`, `-p capture "{tokens: 2560}"`)."""
    return {name: _override_value(name, text) for name, text in pairs or []}


def _override_value(name: str, text: str) -> object:
    words = {"true": True, "false": False, "none": None, "null": None}
    if text.lower() in words:
        return words[text.lower()]
    for number in (int, float):
        try:
            return number(text)
        except ValueError:
            pass
    if text.strip()[:1] in ("[", "{"):
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as err:
            problem = getattr(err, "problem", None) or str(err).splitlines()[0]
            raise LinrecError(f"-p {name} {text}: not a valid YAML list or mapping ({problem}); quote it") from None
    return text


# The lists a notebook reads an element of, or runs nothing useful without: [] stops here, not in a notebook's cell
# (`models: []` was an IndexError in notebook 01). The others take [] as "skip it" (replicate_samples,
# curve_train_tokens, first_variants, route_corpora, encoder_models).
NON_EMPTY = ("models", "corpora", "init_seeds", "train_variants", "train_init_seeds", "train_data_seeds")


def check_nested(values: dict, where: Path | str) -> None:
    """What the types alone do not say: the lists that must not be empty (`NON_EMPTY`), and the sections' own keys
    and values: `capture:` (CaptureConfig's fields, each of its type, the whole a valid capture), `training:`
    (TrainConfig's, likewise) and `cross_pairs:` (pairs of model names). One line naming the fix, at load."""

    for name in NON_EMPTY:
        if name in values and not values[name]:
            raise LinrecError(f"{where}: {name} is empty; give at least one (e.g. {name}: {_example(name)})")
    if "capture" in values:  # its keys and the type of each value, as CaptureConfig declares them
        settings = capture_settings(values["capture"], where=f"{where}: capture")
        try:
            CaptureConfig("model", seed=values.get("seed", 0), **settings).validate()
        except LinrecError as err:
            raise LinrecError(f"{where}: capture: {err}") from None
    if values.get("training"):
        # here, not at the top: torch only where a profile trains (linrec.app.notebooks' forkserver imports this module)
        from linrec.inputs.training import training_settings

        training_settings(values["training"], where=f"{where}: training")
    pairs = values.get("cross_pairs")
    if pairs is not None and not all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(m, str) for m in p) for p in pairs
    ):
        raise LinrecError(
            f"{where}: cross_pairs must be a list of [inputs model, FFN model] pairs, e.g. [[gpt2, init:0:gpt2]], or "
            f"null; got {pairs!r}"
        )


def _example(name: str) -> str:
    return {"models": "[smollm2-135m]", "corpora": "[wiki]", "train_variants": "[gelu, swiglu]"}.get(name, "[0]")


def with_output_defaults(values: dict, stem: str) -> dict:
    """`values` with every output path the notebooks write to made explicit: a profile that names none of them
    writes under results/<its name>/ and leaves the README alone. Only a profile that names the repository's
    figures/, paper/report.md and README.md (params/default.yaml) writes there."""
    out = dict(values)
    if out.get("results_dir") is None:
        out["results_dir"] = f"results/{stem}"
    if out.get("figures_dir") is None:
        out["figures_dir"] = f"{out['results_dir']}/figures"
    if out.get("report_path") is None:
        out["report_path"] = f"{out['results_dir']}/report.md"
    out.setdefault("readme", None)
    return out


def measured_elsewhere(root: Path, profile: str, **here) -> str | None:
    """Why the results of another profile (`params/<profile>.yaml`), which a notebook quotes where this run does not
    compute them, do not apply to this run: the first of `here` (this run's corpus, models, seed, capture settings…)
    that the other profile sets otherwise, in words ("corpus 'wiki', not 'code'"); None when it measured the same.
    Capture settings are compared without `sample_rows` (rows kept change no number the quoted tables hold)."""

    other = load_profile(profile, root=root)
    for name, mine in here.items():
        theirs = getattr(other, name)
        if name == "capture":
            theirs, mine = capture_settings(theirs), capture_settings(mine)
            for key in (k for k in mine if k != "sample_rows" and mine[k] != theirs[k]):
                return f"capture {key} {theirs[key]!r}, not this run's {mine[key]!r}"
            continue
        if theirs != mine:
            return f"{name} {theirs!r}, not this run's {mine!r}"
    return None
