"""The stages of the paper and the profile they read: one `Study` per stage of the paper (arXiv 2606.19379), in the
notebooks' order (`STUDIES`), each declaring in one place its notebook, what it measures, where in the paper, its
parameters (its section of the profile: a dataclass here, each field with its type, its one default and what it
does) and the module whose `run(p)` computes and writes its tables (its conclusion in words: `linrec.outputs.findings`).
Its tables are the registry's (`linrec.base.registry.TABLES`, by notebook); the claims it informs and its figures
are listed beside them by `linrec.outputs.catalog` and `linrec.outputs.report_figures`, which name the notebook.

The notebook runner (`linrec.app.notebooks`), the profile (its schema is below: the run's own sections, `Run` and
`Outputs`, then each study's; `linrec.app.profile.load_profile` reads a profile file into it), the report
(`linrec.outputs.report`) and the command line (`linrec studies`, `linrec figures --only NAME`) loop over `STUDIES`;
nothing else lists the stages. Adding a stage: its module under `linrec/studies/`, its notebook, its row here (and its
tables in the registry).

This module imports no study: a study's module (torch, the analyses) is imported when its `run` is first asked for,
so the command line and the profile stay light.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

from linrec.analyses import SCREENING_WINDOWS
from linrec.base.errors import LinrecError
from linrec.base.params import Declared, declared, param
from linrec.base.registry import TABLES
from linrec.collect.config import CaptureConfig, CaptureRun, capture_settings
from linrec.inputs.offline import suggest
from linrec.stats import N_BOOT


@dataclass(frozen=True)
class CeilingParams:
    """Notebooks 02 and 04: the linear ceiling, its learning curve and the replication on fresh text."""

    curve_train_tokens: list[int] = param([], "learning curve's train sizes ([]: skip); params/curve.yaml runs it")
    curve_test_tokens: int = param(20_480, "held-out tokens per split seed of the learning curve")
    curve_seeds: int = param(3, "the learning curve's split seeds 0 … curve_seeds − 1")
    profile: str = param(
        "capture", 'claim 1 and Figure 2 on "capture" (the capture\'s profile) or "curve" (its largest size)'
    )
    replicate_samples: list[int] = param(
        [], "disjoint stretches of text for claims 1 and 4 ([]: skip); params/full.yaml: [1, 2]"
    )


@dataclass(frozen=True)
class ProbeParams:
    """Notebook 03: the bilinear probe, the trained baselines and the pitfall's mechanism."""

    probe_rows: int | None = param(4096, "train rows per block for the probes and trained baselines (None: every row)")
    rank: int = param(16, "the paper's probe rank")
    probe_ranks: list[int] = param([16, 64, 256], "the rank sweep, on three blocks per model")
    mechanism_k: int = param(
        2,
        "claim 7b's budget curve: this many best- and worst-conditioned blocks per model (train κ; 2: four, so "
        "the real blocks' ρ beside the dose has the 3 it needs)",
    )
    budget_max_steps: int = param(10_000, "the budget curve's longest budget (from 100 steps, four per decade)")
    pitfall_outputs: int = param(32, "output features the budget curve and the dose–response train (drawn by seed)")
    dose_kappas: list[float] = param([1e2, 1e4, 1e6, 1e8], "the dose–response's constructed condition numbers")
    dose_steps: int = param(1_000, "the dose's longest budget (from 10 steps, four budgets per decade)")
    probe_without_first: bool = param(True, "claim 3 again on the rows at positions ≥ 1 (the probe and map refitted)")


@dataclass(frozen=True)
class CorporaParams:
    """Notebook 05: the same measurement on other corpus domains."""

    corpora: list[str] = param(["wiki", "web", "code"], "the domains (offline); with the hub: wikitext-2, web, code")


@dataclass(frozen=True)
class SwapParams:
    """Notebook 06: each block swapped for its map, the choices on screening windows, routing and healing."""

    screening_windows: int = param(
        SCREENING_WINDOWS, "train windows for every choice: predictors, greedy order and acceptance, curve block"
    )
    test_windows: int | None = param(None, "held-out windows every ΔPPL is reported on (None: all)")
    ranks: list[int] = param([16, 64, 256], "reduced ranks for the ΔPPL-vs-parameters curve")
    budget_ppl: float = param(1.0, "greedy multi-block swap: keep blocks while screening ΔPPL stays within this")
    first_variants: list[str] = param(["ffn", "mean"], "position-aware variants beside the plain map ([]: skip)")
    variant_min_first_share: float = param(
        0.5, "the variants run on blocks whose train first-position share of output variance is ≥ this"
    )
    route_blocks: int | None = param(
        3, "per-token routing: blocks a model, chosen on screening windows (None: all; 0: skip)"
    )
    route_step: float = param(0.05, "the share grid 0, step, …, 1 of a block's tokens routed to its map")
    route_corpora: list[str] = param(["web", "code"], "corpora a token type's need is compared on")
    route_split_shares: list[float] = param([], "shares the token/context/full gates route at ([]: AUC only)")
    heal: dict = param({}, "k blocks swapped, then fine-tuned, on `models` (heal_study arguments; {}: skip)")
    heal_trained: dict = param({}, "the same on notebook 08's small models ({}: skip; params/healing.yaml)")
    save_dir: str | None = param(
        None, "where the compressed model is kept (None: a temporary folder, deleted after reload)"
    )
    keep_evaluations: bool = param(
        False, "keep each evaluation in the cache, so a killed run resumes (linrec.analyses.memo; params/full.yaml)"
    )


@dataclass(frozen=True)
class ControlsParams:
    """Notebook 07: random-init twins, input controls, cross feeding and the inputs-or-weights decomposition."""

    encoder_models: list[str] = param(["minilm-l6"], "plain-GELU encoders measured beside `models`, here only")
    init_seeds: list[int] = param([0, 1], "random-init twins per model")
    twin_tokens: int | None = param(
        10_240, "tokens each random-init twin is captured on, at most the model's own (None: the model's own)"
    )
    control_rows: int | None = param(4096, "rows per control (None: every stored row)")
    cross_feeding: bool = param(False, "section 3 (no verdict rests on it; params/full.yaml runs it)")
    cross_pairs: list[list[str]] | None = param(
        None, "[[A, B], …] inputs of A into the FFN of B (None: each with its twin)"
    )
    decomposition_rows: int | None = param(4096, "rows per FFN in section 4 (None: every stored row)")
    null_draws: int = param(4, "section 4: random-init FFNs and shuffled FFNs per block, each")
    cross_band: int | None = param(
        2,
        "pair FFN i with the inputs of blocks i − band … i + band (None: every pair); "
        "claim 2b reads every band ≥ 2 up to it; each band k adds 2 (n − k) FFN passes",
    )


@dataclass(frozen=True)
class TrainParams:
    """Notebook 08: small decoders trained from scratch (the seeds experiment, the zoo)."""

    training: dict = param({}, "linrec.inputs.training.TrainConfig fields ({}: not run; params/training.yaml runs it)")
    train_variants: list[str] = param(["gelu", "swiglu"], "layouts (linrec.inputs.layouts.LAYOUTS)")
    train_init_seeds: list[int] = param([0, 1], "every variant × init seed, on the first data order")
    train_data_seeds: list[int] = param([0, 1], "the other data orders: one run each, first variant and init seed")
    train_texts: list[str] = param([], "other training texts: the first variant on each ([]: none)")
    train_text_seeds: list[int] = param([], "the init seeds of the runs on the other texts ([]: every init seed)")
    train_block_tolerance: float | None = param(
        None, "refuse layouts whose blocks differ in parameters by more (zoo: 0.02)"
    )
    train_measure_tokens: int = param(65_536, "measuring-text tokens per checkpoint (windows split 80/20)")
    train_swap: bool = param(True, "held-out ΔPPL of swapping each block of each run's last checkpoint for its map")
    train_pipeline: bool = param(False, "the whole pipeline on every last checkpoint, the factors, the pooled claims")
    train_probe_rows: int = param(4096, "rows per block the last checkpoint's capture keeps for the probe")
    train_pipeline_workers: int = param(
        1, "processes running the pipeline on the last checkpoints at once (a GPU machine's cores; same numbers)"
    )


@dataclass(frozen=True)
class Study:
    """One stage of the paper: its notebook (`notebook`, the file `notebooks/<file>.py`), what it measures (`title`)
    and where the paper has it (`paper`), its section of the profile (the dataclass `params`, named as the study; None
    where it reads only the run's own parameters and other studies'), and the module whose `run(p)` computes and
    writes its tables (its conclusion in words: `linrec.outputs.findings`)."""

    notebook: str
    name: str
    file: str
    title: str
    paper: str
    module: str
    params: type | None = None

    @property
    def tables(self) -> tuple[str, ...]:
        """The results tables it writes, as the registry lists them."""
        return tuple(name for name, spec in TABLES.items() if spec.notebook == self.notebook)

    @property
    def parameters(self) -> list[Declared]:
        """Its section's parameters (type, default, what each does); [] where it has no section."""
        return declared(self.params) if self.params else []

    def load(self) -> ModuleType:
        """Its module (imported on first use: torch and the analyses load only when a study runs)."""
        return importlib.import_module(self.module)

    @property
    def run(self) -> Callable:
        """Its `run(p)`: `p` the profile (`Profile`, as a notebook binds it); returns its `Result`."""
        return self.load().run


STUDIES: tuple[Study, ...] = (
    Study("01", "capture", "01_capture", "one frozen pass per model, every FFN block's float64 statistics cached",
          "Fig. 1; §3", "linrec.studies.capture"),
    Study("02", "ceiling", "02_linear_ceiling", "the closed-form ceiling R²_lin per block, its learning curve and "
          "replication", "§3, Fig. 2 left panel", "linrec.studies.ceiling", CeilingParams),
    Study("03", "probe", "03_bilinear_probe", "a rank-16 bilinear probe on the residual; the trained-baseline "
          "pitfall and its mechanism", "Fig. 3", "linrec.studies.probe", ProbeParams),
    Study("04", "regimes", "04_rank_outliers", "per-feature median R², effective rank and outliers: the two regimes",
          "Fig. 4", "linrec.studies.regimes"),
    Study("05", "corpora", "05_corpora", "the profile on three corpus domains", "Fig. 5",
          "linrec.studies.corpora", CorporaParams),
    Study("06", "swap", "06_swap", "each block's FFN swapped for its map, ΔPPL; routing and healing",
          "Fig. 2 ΔPPL panel, Fig. 6", "linrec.studies.swap", SwapParams),
    Study("07", "controls", "07_controls", "random-init twins, input controls, cross feeding, inputs or weights",
          "§4, controls the paper lacks", "linrec.studies.controls", ControlsParams),
    Study("08", "training", "08_training", "small decoders trained from scratch, seed against seed, layout against "
          "layout", "§4, a controlled test the paper lacks", "linrec.studies.training", TrainParams),
)  # fmt: skip


def study(key: str) -> Study:
    """The study named `key`, by notebook number ("02") or name ("ceiling"); one line listing them otherwise."""
    for s in STUDIES:
        if key in (s.notebook, s.name, s.file):
            return s
    known = ", ".join(f"{s.notebook} ({s.name})" for s in STUDIES)
    hint = suggest(key, [s.name for s in STUDIES])
    raise LinrecError(f"no study {key!r}{hint}; the studies are {known}")


MODELS = ["smollm2-135m", "gemma3-270m"]  # offline; the paper: gpt2, EleutherAI/pythia-160m, JackFram/llama-160m


@dataclass(frozen=True)
class Run:
    """Capture and run options: what is measured, on what text, how (every notebook reads some of them)."""

    models: list[str] = param(MODELS, "the models measured (notebooks 01–07, 09)")
    corpus: str = param("wiki", "wiki | web | code (offline), wikitext-2 (hub), or a path")
    capture: dict = param({}, "linrec.collect.config.CaptureConfig fields ({}: its defaults)")
    seed: int = param(0, "split, row-sample, probe, baseline and bootstrap seeds")
    batch_size: int = param(8, "windows per forward pass")
    device: str = param("cpu", 'or "cuda"')
    n_boot: int = param(N_BOOT, "bootstrap resamples for every interval (the training and zoo profiles set 1000)")


@dataclass(frozen=True)
class Outputs:
    """Where a run writes, which notebooks `linrec figures` runs (None: `with_output_defaults`), and the size of the
    report's own simulation (notebook 09)."""

    results_dir: str | None = param(None, "tables and executed notebooks (None: results/<profile>)")
    figures_dir: str | None = param(None, "figures (None: <results_dir>/figures)")
    report_path: str | None = param(None, "notebook 09's report (None: <results_dir>/report.md)")
    readme: str | None = param(None, "the README whose results block notebook 09 rewrites (None: none)")
    beside: list[str] = param(
        [],
        "other profiles' results folders whose verdicts the report and the README block show beside this one's: a "
        "column and a tally line each (e.g. results/full, results/zoo; a folder absent or unjudgeable "
        "is left out)",
    )
    alternatives: list[str] = param(
        [],
        "results folders of alternative analyses of this profile's models (another split, more train tokens): with "
        "them, or a folder beside this one that measured more models, the report leads with the answer from the "
        "widest evidence, which each alternative can lower and never raise (linrec.claims.synthesis)",
    )
    notebooks: list[str] | None = param(None, "the notebooks `linrec figures` runs without --only (None: all)")
    coverage_reps: int = param(
        1000,
        "notebook 09's methods table: data sets per correlation interval (half per window one, 4× that per R²_lin)",
    )


# the profile's sections: the run's own, then each study's, in the notebooks' order
SECTIONS = {"run": Run, "outputs": Outputs, **{s.name: s.params for s in STUDIES if s.params}}
DECLARED = {d.name: d for cls in SECTIONS.values() for d in declared(cls)}  # parameter: its declaration
SECTION_OF = {d.name: section for section, cls in SECTIONS.items() for d in declared(cls)}
REPORT_FILE = "09_report"  # the report's notebook (notebooks/09_report.py), run after every study's
# the method derived by hand in numpy (notebooks/00_method.py), read first: no stage, so `linrec figures` does not run
# it; tests/test_teaching.py executes it and checks its hand-made R²_lin against linrec's
PRIMER_FILE = "00_method"
REPORT_NOTEBOOK = REPORT_FILE[:2]
NOTEBOOKS = (*(s.notebook for s in STUDIES), REPORT_NOTEBOOK)


@dataclass(frozen=True)
class Profile:
    """A loaded profile (`linrec.app.profile.load_profile`): `sections` {section: its parameters dataclass, filled},
    `name` (its file's stem) and `given` (the keys its file and the overrides set, and the output paths). `p.models`
    reads any parameter, `p.section("swap")` a whole section (a study's parameters), `p.values()` all of them flat;
    every notebook binds it (`p.notebook("08")`) and hands it to its study's `run(p)`."""

    name: str
    sections: dict[str, object]
    given: frozenset[str] = frozenset()

    def __getattr__(self, name: str):
        if name in SECTION_OF:
            return getattr(object.__getattribute__(self, "sections")[SECTION_OF[name]], name)
        raise AttributeError(f"a profile has no parameter {name!r}; known: {', '.join(sorted(DECLARED))}")

    def section(self, name: str) -> object:
        """Section `name`'s parameters: "run", "outputs" or a study's name (`linrec.studies.stages`)."""
        if name not in self.sections:
            raise LinrecError(f"a profile has no section {name!r}; its sections are {', '.join(self.sections)}")
        return self.sections[name]

    def values(self) -> dict:
        """{parameter: value} of every parameter, flat, as a profile file names them."""
        return {name: getattr(self, name) for name in DECLARED}

    def capture_config(self, model: str, corpus: str | None = None) -> CaptureConfig:
        """The capture every study asks for of `model`: on `corpus` (None: the run's `corpus`), with the run's `seed`
        and its `capture` section (`linrec.collect.config.capture_settings`: `CaptureConfig`'s defaults where it is
        silent). A study that reads no raw rows asks for `replace(…, sample_rows=0)`."""
        return CaptureConfig(model, corpus or self.corpus, seed=self.seed, **capture_settings(self.capture))

    def capture_run(self) -> CaptureRun:
        """How every study runs a capture: the run's `batch_size` windows per pass, on its `device`."""
        return CaptureRun(self.batch_size, self.device)

    def notebook(self, number: str) -> Profile:
        """What notebook `number` binds and hands its study's `run`: this profile, whole (the same in every notebook;
        the number is checked)."""
        if number not in NOTEBOOKS:
            raise LinrecError(f"no notebook {number!r}; the notebooks are {', '.join(NOTEBOOKS)}")
        return self
