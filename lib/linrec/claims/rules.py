"""The rules every claim is judged by: the verdict words (`VERDICTS`), every threshold as a named constant (those a
summary applies where it is built sit beside it in `linrec.analyses`, e.g. `MOVES_FDR`, `CLAIM7_SHORTFALL`), `Rule`
(one claim's rule: the tables it reads, its thresholds, its verdict function and its words built from them; `judge`
applies it to tables by name), `Verdict`, `tally`
and the helpers the claim modules share.

The claims are the paper's (arXiv 2606.19379; quoted with the paper's numbers in `paper/claims.md`); each is judged
in the module of its notebook, where its `Rule` sits beside its verdict function: `profile` (claim 1), `probe` (3,
7a, 7b), `regimes` (4), `corpora` (5), `swap` (6a, 6b), `learned` (2a, 2b and the seeds experiment);
`linrec.outputs.catalog` lists them in order. A verdict is "not testable" when the evidence is missing or cannot
decide. Every comparison of profiles follows one convention for shape and level, stated once below (the block
"one convention for shape and level"). `tests/claims/` (a file per claim's module) checks each rule on
both sides of each threshold; nothing here formats a number.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields, is_dataclass, make_dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

# read here by linrec.outputs.results (its display labels name them); set beside the summaries that apply them
from linrec.analyses.profile import FIRST_TOKEN_OVERLAP, FIRST_TOKEN_SHARE  # noqa: F401
from linrec.analyses.swap_summary import CLAIM6_BUDGET, SWAP_HIGH_R2  # noqa: F401
from linrec.base.errors import LinrecError

REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_TESTABLE = "reproduced", "partly reproduced", "not reproduced", "not testable"
VERDICTS = (REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_TESTABLE)

# ---- thresholds (each read by one claim's rule, and named in its `Rule`) ---------------------------------
CLAIM1_SPAN, CLAIM1_JUMP, CLAIM1_TURNS = 0.5, 0.3, 2
CLAIM2_NOISE_FACTOR = 2.0  # "beyond seed noise": more than this multiple of the mean |difference| between two draws
# 2a's minimum effect: a mean |trained − untrained| of 0.1 per block (10 points of explained variance). Three times the
# largest shift of a block's held-out R² between two window splits measured on Gemma-3 (0.033, issue 33), so no
# split artefact reaches it, and a tenth of the scale on which the paper calls profiles "sharply different" (R²_lin
# from > 0.99 to < 0.3 between neighbouring blocks, claim 1).
CLAIM2_MIN_EFFECT = 0.1
CLAIM3_MAX_GAIN = 0.05
PREDICTOR_FWER = 0.05  # 6b: a screened predictor is named only if its Holm-adjusted p over the screen is below this
# 6a's own-skew check: the interval end that decides (the upper for "holds", the lower for "fails") may miss the truth
# in at most this share of resamples of the chosen swap's own held-out windows (`own_skew_check`): half of what the
# methods table's 0.93 floor allows a two-sided interval to miss
CLAIM6_OWN_MISS = 0.035
CLAIM7_SHARE = 0.25  # 7a: reproduced where that share of all blocks or more is short (CLAIM7_SHORTFALL)
# Claim 7b, on the constructed dose (one block re-expressed at chosen κ, the same ceiling): the shortfall (ceiling −
# the better tuned optimiser's held-out R²) at one budget, regressed on log10 κ over the dose's levels
# (`linrec.analyses.uncertainty.trend_slope`); the rise is the slope times the decades the dose spans. The budget is
# chosen on train rows (`linrec.analyses.probe_summary.dose_budget`): the first checkpoint at which the smallest κ's
# validation R² comes within linrec.analyses.pitfall.REACHED of the best it reaches. Until 2026-11-29 it was where the
# smallest κ's held-out R² reached the ceiling, a choice made on the held-out split (rules-changelog). The dose
# is "flat" when the 90 % interval of the rise lies inside ±CLAIM7B_FLAT (two one-sided tests at 5 %): the largest κ
# is shown within a reached fit's tolerance of the smallest, so no rise a fit could register is left. It "rises" when
# the 95 % interval of the slope lies above 0 and it is not flat.
CLAIM7B_FLAT = 0.01
# 7b's ceiling must be a held-out upper bound: a model on which some tuned trained fit beats it by more than this
# (half the distance within which a fit "reaches" it) is inconclusive. Held-out R² differences of two fits on the
# same rows have no interval here (the rows are not independent draws), so the slack is stated, not estimated.
CEILING_SLACK = 0.005
CORPUS_MODEL_RHO, CORPUS_MODEL_RATIO = 0.7, 0.5  # "a property of the model": every pair ρ ≥ 0.7 and corpus/depth < 0.5
CORPUS_SHAPED_RHO, CORPUS_SHAPED_RATIO = 0.4, 1.0  # "shaped by the corpus": some pair ρ < 0.4, or corpus/depth ≥ 1
# ---- one convention for shape and level (issue 45): every comparison of R²_lin profiles over blocks --------------
# A comparison is split in two, each reported with its 95 % interval (window jackknife):
#   level: a shift of the whole profile. Two profiles a, b: the mean difference over blocks, mean_i (a_i − b_i).
#   shape: what is left once each profile is centred on its own mean. Two profiles: mean_i |(a_i − ā) − (b_i − b̄)|.
#   Several profiles (claim 5's corpora) are compared pair by pair, so that every comparison reads on one scale;
#   the corpora's main effect's and the block × corpus interaction's shares of the variance are stated beside them.
# The raw mean_i |a_i − b_i| mixes the two (it lies between |level| and |level| + shape); it is reported beside them.
# A verdict reads what the paper's words are about:
#   "overlay" (claim 5: "the three profiles overlay closely") needs both small for every pair of corpora: 'a
#     property of the model' only if every pair's level interval lies inside ±CLAIM5_MARGIN and its shape interval
#     below it, 'shaped by the corpus' if some pair's level or shape interval lies entirely beyond it, undecided
#     otherwise; without the windows' first position too, which can lower the word, never raise it (until
#     2026-11-29 claim 5 read the level's and the shape's shares of the variance against 0.1: with documents held
#     out it said 'a property of the model' while code − web shifted R²_lin by more than 2a's margin; issue 87);
#   "not architectural" (claim 2a: the seeds experiment's GELU against SwiGLU, the zoo's layouts) counts both, as
#     "overlay" does: architecture that sets the shape, or the level alone, is a part of the profile the architecture
#     decides, so claim 2a is at most partly reproduced (until 2026-11-27 a level set by architecture was named and
#     did not count: results/training_long read "reproduced" with GELU→SwiGLU moving the level by 0.25, ten times
#     the seed distance; issue 64); "sharply different profiles" (init seed against init seed) is about shape: the
#     shape decides "individual to each run";
#   "learned" (a trained profile against its own step 0) asks whether training moved the profile at all, in level or
#     shape, and reads the raw distance; its level and shape are stated beside it.
# Claim 5's margin: 2a's minimum effect, the same 0.1 per block for the level (|mean difference|) and the shape (mean
# |centred difference|) of every pair of corpora, so that a corpus and an architecture are held to one scale.
CLAIM5_MARGIN = CLAIM2_MIN_EFFECT
# The seeds experiment's margins, in R²_lin per block: 2a's minimum effect for the level (|mean difference|) and for
# the shape (mean |centred difference|) alike, as for the raw distance.
SEEDS_LEVEL_MARGIN = SEEDS_SHAPE_MARGIN = CLAIM2_MIN_EFFECT
# The zoo (notebook 08 under params/zoo.yaml): the profile's level and shape split into layout, text, seed and residual
# (linrec.analyses.factors.components). A factor's effect is the distance it adds between two runs, √(2 · component)
# (a component is half the squared distance it adds), on the scale of the seeds experiment's distances; it is judged
# with the seeds experiment's margins (SEEDS_LEVEL_MARGIN, SEEDS_SHAPE_MARGIN: 2a's minimum effect).
ZOO_FACTORS = ("layout", "text", "seed")  # the factors that can set a part (the residual is measurement noise)
ZOO_RULE = (
    "the zoo's runs (GPT-2, Pythia and llama layouts at equal width and block parameters, init seeds, a data order "
    "and a second training text) split the variance of the final profile's level (mean R²_lin) and shape (the "
    "profile centred) into layout, text, seed and residual (measurement noise), each component with a delete-one-run "
    "jackknife 95 % interval; a factor's effect is the distance it adds between two runs, √(2 × component). For each "
    "part: a factor sets it if its component's interval lies above 0, its share is the largest of those, and its "
    f"effect is ≥ {CLAIM2_MIN_EFFECT} (2a's minimum effect); it is the same for every layout, text and seed if the "
    f"effect of every factor the zoo varies is bounded below {CLAIM2_MIN_EFFECT} (the upper end of its interval; a "
    "factor held fixed has no component and is left out); otherwise inconclusive. "
    "Claim 2a ('learned, not architectural', on shape): not reproduced if the layout sets the shape; where the text "
    f"or the seed sets it, reproduced if the layout's effect is bounded below {CLAIM2_MIN_EFFECT}, partly if the "
    "layout is shown to move it by that much too; where the shape is the same for every factor, as the seeds "
    "experiment reads 'the same for both variants': reproduced if every run's profile differs from its own step 0 "
    "(learned), not reproduced if every one agrees with it (not learned); not testable otherwise. A reproduced that "
    "the layout's setting of the level qualifies is partly (the convention's level counts, as for claim 5)"
)

SEEDS_RULE = (
    "each comparison of two profiles (paired window jackknife) is split by the shape-and-level convention: the raw "
    "mean |ΔR²_lin| per block, the level (mean ΔR²_lin) and the shape (mean |ΔR²_lin| of the profiles centred on "
    "their own means); each is 'differ' if its 95 % interval clears its noise floor (the same checkpoint on two halves "
    f"of the held-out windows) and its size is ≥ {CLAIM2_MIN_EFFECT}, 'agree' if its interval lies inside "
    f"±{CLAIM2_MIN_EFFECT}, else inconclusive. Learned if every run's raw distance to its own step 0 differs (not "
    "learned if every one agrees). Then, on shape ('sharply different profiles'): individual to each run if every "
    "pair of init seeds differs in shape; where every pair of init seeds agrees in level and shape, GELU against "
    "SwiGLU says what architecture sets: the shape (and the level where that differs too) if every variant pair "
    "differs in shape, the level, not the shape, if every one agrees in shape and differs in level, neither (the same "
    "for both variants) if every one agrees in both. Data order, and the training text only where it was changed, "
    "are named as changing the profile or not. Claim 2a reproduced for individual, or the same for both variants; "
    "partly where architecture sets the shape or the level; not reproduced if not learned; not testable "
    "otherwise, or where the level and shape were not measured with intervals"
)
CHANCE_RATE = 0.05  # how often one model's 95 % test decides an outcome that is not there
CHANCE_ALPHA = 0.05  # an outcome seen in k models counts once P(k or more by chance) is at most this


def beyond_chance(m: int, rate: float = CHANCE_RATE, alpha: float = CHANCE_ALPHA) -> int:
    """The fewest of `m` models that must show an outcome before it counts as more than chance: the smallest k ≥ 1
    with P(Binomial(m, rate) ≥ k) ≤ `alpha` (1 of 1, 2 of 2, 2 of 3–7, 3 of 8–16). A per-model tally read across
    many models (the zoo's twelve) would otherwise take one model's chance decision for a finding."""
    return next(k for k in range(1, m + 2) if k > m or stats.binom.sf(k - 1, m, rate) <= alpha)


@dataclass
class Verdict:
    """A claim's verdict and the numbers it was decided on (one dict per model, or one for all)."""

    claim: int | str  # 1 … 7, with claim 6 split into "6a" and "6b"
    verdict: str
    evidence: list[dict] = field(default_factory=list)
    reason: str = ""  # why "not testable"
    without_first: str = ""  # the same rule on every position but the windows' first ("" where not measured)

    def __post_init__(self):
        # no evidence is never a verdict: a decided word needs at least one row it was decided on (issue 51)
        if self.verdict not in VERDICTS:
            raise LinrecError(f"claim {self.claim}: unknown verdict {self.verdict!r}; use one of {VERDICTS}")
        if self.verdict != NOT_TESTABLE and not self.evidence:
            self.verdict = NOT_TESTABLE
            self.reason = self.reason or "no evidence: the tables this claim reads have no rows for it"

    def by_model(self, *fields: str, exclude: str | None = None) -> str:
        """The evidence in words, one model after another, for a notebook's verdict line: "smollm2-135m: holds ·
        gemma3-270m: not testable" (default field `passes`: True holds, False fails, None not testable), or the
        `fields` named, joined by ", "; without the row of model `exclude` (a pooled row)."""
        words = {True: "holds", False: "fails", None: "not testable"}

        def said(value) -> str:
            if isinstance(value, (bool, type(None))) or (isinstance(value, np.bool_)):
                return words[None if value is None else bool(value)]
            return str(value)

        fields = fields or ("passes",)
        rows = [e for e in self.evidence if "model" in e and e["model"] != exclude]
        return " · ".join(f"{e['model']}: {', '.join(said(e.get(f)) for f in fields)}" for e in rows)


def thresholds(name: str, **values) -> Any:
    """A rule's thresholds: an instance of a frozen dataclass `name` whose fields are `values` (each the module's
    named constant, so every threshold is set in one place and the default instance holds it); `Rule.planted` (or
    `dataclasses.replace`) gives another set without touching a module."""
    return make_dataclass(name, [(k, type(v), field(default=v)) for k, v in values.items()], frozen=True)()


@dataclass(frozen=True)
class Rule:
    """One claim's rule: its id (1 … 7, claims 2, 6 and 7 as "2a" … "7b"), the results tables it `reads` (in the
    order its verdict function takes them), its `thresholds` (a frozen dataclass, `thresholds(...)`), the verdict
    function, called as `verdict(*tables, t=thresholds)`, and its words, the rule (`says`) and what would change the
    verdict (`would_change`), both built from the same thresholds. The words are never typed beside a number: a
    threshold planted (`planted`, `tests/outputs/test_catalog.py`) changes the decision and both texts together.
    A threshold that acts where a stage builds its summary (`linrec.studies`, e.g. claim 4's regime cut-offs) moves
    the words only: the summary is rebuilt with the module's constant.
    Each claim's `Rule` sits beside its verdict function in the claim's module (`RULE_1` in `profile` … `RULE_7B` in
    `probe`); `linrec.outputs.catalog` lists them in the paper's order with the rest of each claim's row, and
    `judge(rule, tables)` is how a study, a notebook and the report apply one. `joins` names (by module and
    function, since they may sit in a module that imports this claim's) the other verdict functions whose verdicts
    the claim's own is combined with where they ran (claim 2a: the seeds experiment's and the zoo's, the weakest
    taken): their code is part of the rule, and of its hash (`linrec.outputs.rule_log`). `zoo` names the zoo's tables
    the claim is judged on too: a folder that holds them (`results/zoo`) is judged like any other."""

    id: int | str
    reads: tuple[str, ...]  # results tables (linrec.base.registry), in the verdict function's order
    thresholds: Any  # a frozen dataclass instance (`thresholds`)
    verdict: Callable[..., Verdict]
    says: Callable[[Any], str]  # the rule in words, from the thresholds
    would_change: Callable[[Any], str]  # what would change the verdict, from the same thresholds
    joins: tuple[str, ...] = ()  # "module.function" of the verdicts of other experiments it is combined with
    # the tables of notebook 08's zoo it is judged on where the zoo ran (claims 3, 4, 6b: its verdict function on their
    # pooled rows, `linrec.claims.zoo.judge_zoo`; 2a: the joined `zoo_verdict` on them), in that function's order
    zoo: tuple[str, ...] = ()

    def __post_init__(self):
        if not (is_dataclass(self.thresholds) and self.thresholds.__dataclass_params__.frozen):
            raise LinrecError(f"claim {self.id}: its thresholds must be a frozen dataclass (linrec.claims.rules)")

    def names(self) -> tuple[str, ...]:
        """The names of the thresholds, as the module constants that set them are named."""
        return tuple(f.name for f in fields(self.thresholds))

    def values(self) -> Any:
        """The thresholds (a frozen dataclass)."""
        return self.thresholds

    def planted(self, **values) -> Rule:
        """This rule with the thresholds `values` in place of its own (the rest as they are)."""
        return replace(self, thresholds=replace(self.thresholds, **values))

    @property
    def words(self) -> str:
        return self.says(self.thresholds)

    @property
    def change(self) -> str:
        return self.would_change(self.thresholds)

    def __call__(self, *tables) -> Verdict:
        """The verdict on `tables`, given in the order of `reads`."""
        return self.verdict(*tables, t=self.thresholds)


def judge(rule: Rule, tables) -> Verdict:
    """`rule`'s verdict on the tables it reads, taken by name from `tables` (a dict of tables: a study's `tables()`, or
    a results folder's own, `linrec.outputs.results.Results.table`; one missing: None, and the verdict says its
    notebook did not run)."""
    return rule(*(tables.get(name) for name in rule.reads))


def tally(passes: Iterable[bool]) -> str:
    """A claim checked per model: reproduced if every model passes, partly if some do, not reproduced if none."""
    passes = [bool(p) for p in passes]
    if not passes:
        return NOT_TESTABLE
    return REPRODUCED if all(passes) else PARTLY if any(passes) else NOT_REPRODUCED


def joined(parts) -> str:
    """Words listed as a sentence lists them: "a", "a and b", "a, b and c" ("" for none)."""
    parts = [str(x) for x in parts]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1] if parts else ""


# linrec.base.tables.require, written here too: a rule's hash covers the linrec.claims code its verdict calls
def require(t: pd.DataFrame, cols: Iterable[str], what: str) -> None:
    missing = sorted(set(cols) - set(t.columns))
    if missing:
        raise LinrecError(f"{what} needs columns {missing}; give the table the notebook writes")


def tally_decided(words: list[str], yes: str, undecided: str) -> str:
    """`tally` over the models whose word is not `undecided`; not testable when none is decided."""
    decided = [w == yes for w in words if w != undecided]
    return tally(decided) if decided else NOT_TESTABLE


def tally_every(words: list[str], yes: str, undecided: str) -> str:
    """Every model counts, an undecided one too: reproduced only if every word is `yes`, partly if some are, not
    reproduced if none is and some model is decided, not testable if none is decided (claims 2b and 5: one decided
    model does not speak for another that leans the other way)."""
    if all(w == undecided for w in words):
        return NOT_TESTABLE
    n = sum(w == yes for w in words)
    return REPRODUCED if n == len(words) else PARTLY if n else NOT_REPRODUCED


def by_share(claim: str, ev: list[dict], key: str, yes: str, reason: str) -> Verdict:
    words = [e[key] for e in ev if e[key] is not None]
    if not words:
        return Verdict(claim, NOT_TESTABLE, ev, reason=reason)
    n = sum(w == yes for w in words)
    return Verdict(claim, REPRODUCED if n == len(words) else PARTLY if n else NOT_REPRODUCED, ev)
