"""The rules every claim is judged by: the verdict words (`VERDICTS`), every threshold as a named constant, `RULES`
(each claim's rule in words, printed beside its verdict), `Verdict`, `tally` and the helpers the claim modules share.

The claims are the paper's (arXiv 2606.19379; quoted with the paper's numbers in `paper/claims.md`); each is judged
in the module of its notebook: `profile` (claim 1), `probe` (3, 7a, 7b), `regimes` (4), `corpora` (5), `swap` (6a,
6b), `learned` (2a, 2b and the seeds experiment). A verdict is "not testable" when the evidence is missing or cannot
decide. Every comparison of profiles follows one convention for shape and level, stated once below (the block
"one convention for shape and level"). `tests/test_verdicts.py` and `tests/test_shape_level.py` check each rule on
both sides of each threshold; nothing here formats a number.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from linrec.analyses.uncertainty import EQUIVALENCE_MARGIN
from linrec.base.errors import LinrecError

POOLED = "all"  # the model label of a summary row over every model's blocks pooled with a model effect
REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_TESTABLE = "reproduced", "partly reproduced", "not reproduced", "not testable"
VERDICTS = (REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_TESTABLE)

# ---- thresholds (each used by one rule below, and named in RULES) ---------------------------------
FIRST_TOKEN_SHARE = 0.5  # a block "sits on the first token" when that token holds ≥ this share of its output variance
FIRST_TOKEN_OVERLAP = (
    0.2  # notebook 04: an outlier-concentrated block "overlaps" the first-token regime above this share
)
CLAIM1_SPAN, CLAIM1_JUMP, CLAIM1_TURNS = 0.5, 0.3, 2
# the paper's own extremes, "ranging from near-linear (>0.99) to strongly nonlinear (<0.3) between adjacent blocks"
# (arXiv 2606.19379, abstract; paper/claims.md): a second, stated result beside claim 1's rule
PAPER_HIGH, PAPER_LOW = 0.99, 0.3
# claim 1: the moves the rule counts (adjacent blocks with disjoint intervals, and the anchor-to-anchor moves of
# `disjoint_moves`) are each tested by a paired window jackknife (t test); only those with a Benjamini–Hochberg
# q ≤ MOVES_FDR over that family count (many blocks give many chances for two intervals to miss each other by luck)
MOVES_FDR = 0.05
CLAIM2_NOISE_FACTOR = 2.0  # "beyond seed noise": more than this multiple of the mean |difference| between two draws
# 2a's minimum effect: a mean |trained − untrained| of 0.1 per block (10 points of explained variance). Three times the
# largest shift of a block's held-out R² between two window splits measured on Gemma-3 (0.033, issue 33), so no
# split artefact reaches it, and a tenth of the scale on which the paper calls profiles "sharply different" (R²_lin
# from > 0.99 to < 0.3 between neighbouring blocks, claim 1).
CLAIM2_MIN_EFFECT = 0.1
# A random-init twin is "degenerate" when its median train − held-out gap exceeds the trained model's by more than
# this: it memorises its train split (few effectively distinct inputs), so its held-out profile is no reference.
CLAIM2_DEGENERATE_GAP = 0.1
CLAIM2_FDR = 0.05  # 2b: a block stands out from a null ensemble at Benjamini–Hochberg q below this, over the blocks
CLAIM3_MAX_GAIN = 0.05
PREDICTOR_FWER = 0.05  # 6b: a screened predictor is named only if its Holm-adjusted p over the screen is below this
CLAIM6_BUDGET = 1.0  # perplexity points: claim 6a's budget, and notebook 06's "within budget"
CLAIM7_SHORTFALL, CLAIM7_SHARE = 0.01, 0.25
# Claim 7b, on steps to the ceiling (within linrec.analyses.pitfall.REACHED of it) at a smaller and a larger κ: they
# "rise" when the larger κ takes at least CLAIM7B_SLOPE decades more steps per decade of κ (steps ∝ κ^0.25 at least:
# a quarter of gradient descent's κ¹, half of the heavy ball's κ^½ on a quadratic) and more than CLAIM7B_EQUAL; they
# are "equal" when the larger κ takes at most CLAIM7B_EQUAL times as many (half a decade: two steps of the checkpoint
# grid, four per decade) while the rise conditioning predicts is larger than that. A step not reached within the
# budget, or reached at its first checkpoint, counts only as the bound it is.
CLAIM7B_SLOPE = 0.25
CLAIM7B_EQUAL = 10**0.5
# 7b's ceiling must be a held-out upper bound: a model on which some tuned trained fit beats it by more than this
# (half the distance within which a fit "reaches" it) is inconclusive. Held-out R² differences of two fits on the
# same rows have no interval here (the rows are not independent draws), so the slack is stated, not estimated.
CEILING_SLACK = 0.005
CORPUS_MODEL_RHO, CORPUS_MODEL_RATIO = 0.7, 0.5  # "a property of the model": every pair ρ ≥ 0.7 and corpus/depth < 0.5
CORPUS_SHAPED_RHO, CORPUS_SHAPED_RATIO = 0.4, 1.0  # "shaped by the corpus": some pair ρ < 0.4, or corpus/depth ≥ 1
# ---- one convention for shape and level (issue 45): every comparison of R²_lin profiles over blocks --------------
# A comparison is split in two, each reported with its 95 % interval (window jackknife):
#   level: a shift of the whole profile. Two profiles a, b: the mean difference over blocks, mean_i (a_i − b_i).
#          Several (claim 5's corpora): the corpora's main effect's share of the variance over blocks × corpora.
#   shape: what is left once each profile is centred on its own mean. Two profiles: mean_i |(a_i − ā) − (b_i − b̄)|.
#          Several: the block × corpus interaction's share.
# The raw mean_i |a_i − b_i| mixes the two (it lies between |level| and |level| + shape); it is reported beside them.
# A verdict reads what the paper's words are about:
#   "overlay" (claim 5: "the three profiles overlay closely") needs both small: 'a property of the model' only if the
#     shape share's and the level share's intervals both lie below their thresholds (CLAIM5_SHAPE, CLAIM5_LEVEL),
#     'shaped by the corpus' if either lies at or above its threshold, undecided otherwise;
#   "sharply different profiles" (claim 2a's contrasts in the seeds experiment: init seed against init seed, GELU
#     against SwiGLU) is about shape: the shape decides "individual to each run" and "architecture sets the shape";
#     a level that differs is named beside it ("architecture sets the level"), and does not make the shape differ;
#   "learned" (a trained profile against its own step 0) asks whether training moved the profile at all, in level or
#     shape, and reads the raw distance; its level and shape are stated beside it.
# Claim 5's thresholds, shares of the variance of R²_lin over blocks × corpora. The shape: the profiles "overlay
# closely" only if the block × corpus interaction (what the corpus changes in the profile's form) holds less than a
# tenth. The level: the same tenth, so that neither way of not overlaying is privileged; on the committed runs a level
# share of 0.1 is a range of 0.08–0.14 between the corpora's mean R²_lin (Gemma-3, SmolLM2: the share grows with the
# square of the range), the scale of claim 2a's minimum effect (0.1 per block), and the depth profile then holds the
# remaining 0.8 or more of the variance.
CLAIM5_SHAPE = 0.1
CLAIM5_LEVEL = 0.1
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
    f"effect is ≥ {CLAIM2_MIN_EFFECT} (2a's minimum effect); it is the same for every layout, text and seed if every "
    f"factor's effect is bounded below {CLAIM2_MIN_EFFECT} (the upper end of its interval); otherwise inconclusive. "
    "Claim 2a ('learned, not architectural', on shape): not reproduced if the layout sets the shape; where the text "
    f"or the seed sets it, reproduced if the layout's effect is bounded below {CLAIM2_MIN_EFFECT}, partly if the "
    "layout is shown to move it by that much too; where the shape is the same for every factor, as the seeds "
    "experiment reads 'the same for both variants': reproduced if every run's profile differs from its own step 0 "
    "(learned), not reproduced if every one agrees with it (not learned); not testable otherwise"
)
SWAP_HIGH_R2 = 0.9  # notebook 06: "high R²_lin" blocks, checked against the +1 budget
MIDDLE_SHARE = 0.5  # notebook 06: ρ "within the middle blocks" uses the middle half of the stack
FIRST_VARIANTS = ("map", "ffn", "mean")  # notebook 06's position variants (linrec.inputs.surgery.FIRST_MODES)
GAUSSIAN_DROP = 0.1  # notebook 07: a block "loses" on Gaussian inputs when its R² falls by more than this

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
    "are named as changing the profile or not. Claim 2a reproduced for individual, for the level alone, or the "
    "same for both variants; partly where architecture sets the shape; not reproduced if not learned; not testable "
    "otherwise, or where the level and shape were not measured with intervals"
)
CHANCE_RATE = 0.05  # how often one model's 95 % test decides an outcome that is not there


def beyond_chance(m: int, rate: float = CHANCE_RATE, alpha: float = 0.05) -> int:
    """The fewest of `m` models that must show an outcome before it counts as more than chance: the smallest k ≥ 1
    with P(Binomial(m, rate) ≥ k) ≤ `alpha` (1 of 1, 2 of 2, 2 of 3–7, 3 of 8–16). A per-model tally read across
    many models (the zoo's twelve) would otherwise take one model's chance decision for a finding."""
    return next(k for k in range(1, m + 2) if k > m or stats.binom.sf(k - 1, m, rate) <= alpha)


RULES = {
    1: f"reproduced for a model if its profile spans ≥ {CLAIM1_SPAN}, some adjacent blocks with disjoint 95 % "
    f"intervals differ by ≥ {CLAIM1_JUMP}, and the profile changes direction ≥ {CLAIM1_TURNS} times counting only "
    "moves between blocks with disjoint intervals; where the moves were tested (paired window jackknife), only "
    f"those with a Benjamini–Hochberg q ≤ {MOVES_FDR:g} over the moves counted count; reproduced if every model "
    "passes, partly if some do",
    "2a": "per model: 'learned' if the trained profile differs from the untrained architecture by a mean |trained − "
    f"untrained| per block > {CLAIM2_NOISE_FACTOR:g}× the mean difference between two untrained draws and ≥ "
    f"{CLAIM2_MIN_EFFECT}; the untrained reference is the random-init twin (its own inputs), or, where the twin is "
    f"degenerate (its median train − held-out gap exceeds the trained model's by > {CLAIM2_DEGENERATE_GAP}), the "
    "random-init FFN ensemble on the trained inputs; reproduced if every model is 'learned', partly if some are, not "
    "reproduced if none is. Where the seeds experiment or the zoo ran (notebook 08), the verdict is the weakest of "
    "this and their rules' (SEEDS_RULE, ZOO_RULE)",
    "2b": "per model, with each block's pre-MLP norm gain folded into its FFN: the additive decomposition "
    "R²(FFN i, inputs j) ≈ μ + a_i + b_j of the cross matrix, and the weights' unique share minus the inputs' (what "
    "only a, or only b, explains); its 95 % interval is the point ± t (blocks − 1) × √(se² of a leave-one-block-out "
    "jackknife over the blocks + se² of the held-out windows' bootstrap): 'weights' if it lies above 0, 'inputs' if "
    "below 0, 'undecided' otherwise (not counted). The null ensembles (random-init and shuffled FFNs on the block's "
    f"inputs, one-sided, Benjamini–Hochberg q < {CLAIM2_FDR}) are reported beside it and do not decide. Reproduced "
    "if every decided model is 'weights', partly if some are, not reproduced if none is, not testable if none is "
    "decided",
    3: f"the gain per model, the correlation once over every model's blocks pooled with a model effect (each "
    "model's blocks centred on their own; Fisher's interval of Pearson r(1 − R²_lin, gain) at Bartlett's effective "
    "number of blocks, which measured 0.95–0.97 coverage for a nominal 0.95 under AR(1) dependence through depth): "
    f"'uncorrelated' is shown when the 90 % interval lies inside ±{EQUIVALENCE_MARGIN} (two one-sided tests at "
    f"5 %), a correlation when the 95 % interval excludes 0; a model holds if its median gain is < "
    f"{CLAIM3_MAX_GAIN} and 'uncorrelated' is shown, fails if its gain is larger or a correlation is shown; not "
    f"testable for a model whose probe stays ≥ {CLAIM3_MAX_GAIN} below the closed-form quadratic on the top-16 input "
    "components at the median (not converged), and for every model when the pooled correlation is inconclusive "
    "(the report states how many blocks a decision would take); reproduced if it holds for every tested model, "
    "partly if for some",
    4: "reproduced if, over all models, blocks of both the broadly linear and the outlier-concentrated regime exist "
    "(broadly linear: R²_lin ≥ 0.6, not concentrated in a feature or the first token, and the effective rank of the "
    "map's explained part ≥ 5 % of the output width; outlier-concentrated: R²_lin ≥ 0.6, per-feature median ≥ 0.2 "
    "below it, the output concentrated in a few features, and the explained part's effective rank < 2, the paper's "
    "'rank ≈ 1'; linrec.analyses.spectrum.regime)",
    5: "per model, R²_lin over blocks × corpora split into depth, level (a corpus shifts the whole profile) and "
    "shape (the block × corpus interaction); the profiles overlay only if both are small: 'a property of the model' "
    f"if the 95 % window-jackknife intervals of the shape share and of the level share lie below {CLAIM5_SHAPE} and "
    f"{CLAIM5_LEVEL}, 'shaped by the corpus' if either lies at or above its threshold, else undecided (not counted); "
    "reproduced if every decided model is 'a property of the model', partly if some are",
    "6a": f"holds for a model if the block with the lowest screening ΔPPL (train windows) has a held-out 95 % interval "
    f"of ΔPPL ≤ +{CLAIM6_BUDGET:g}, fails if the interval is above it; reproduced if it holds for every model, partly "
    "if for some, not reproduced if it fails for every model, not testable if an interval straddles the budget",
    "6b": "per model, and over every model's blocks pooled with a model effect: 'flags' if the 95 % Fisher "
    "intervals (at Bartlett's effective number of blocks) of Spearman ρ(R²_lin, held-out ΔPPL) and of the partial ρ "
    "with depth (distance to the nearest end) taken out both lie below 0 and neither 90 % interval lies inside ±"
    f"{EQUIVALENCE_MARGIN}; 'no flag' if either is shown inside ±{EQUIVALENCE_MARGIN} or shown above 0; otherwise "
    "inconclusive. The pooled outcome decides where it is decided: 'flags' is reproduced (partly if some model on "
    "its own shows 'no flag'), 'no flag' not reproduced (partly if some model on its own flags); where it is "
    "inconclusive an outcome counts only where more models show it than chance would at "
    f"{CHANCE_RATE * 100:g} % a model (the smallest k with P(Binomial(models, {CHANCE_RATE:g}) ≥ k) ≤ 0.05: "
    f"{beyond_chance(2)} of 2, {beyond_chance(12)} of 12), those are tallied (reproduced if every one flags, "
    "partly if some do), and with none the claim is not testable (the report states how many blocks a decision "
    "would take). A screened "
    f"predictor is named best only if it survives Holm's correction over the screen (adjusted p < {PREDICTOR_FWER})",
    "7a": f"reproduced if the better trained baseline (Adam or SGD with a practitioner's defaults, 5 epochs of batch "
    f"256: the budget the verdict names in steps) falls > {CLAIM7_SHORTFALL} below the closed-form ceiling on at "
    f"least {CLAIM7_SHARE:.0%} of all blocks, else not reproduced",
    "7b": "per model, on the steps the better tuned baseline (Adam or SGD, learning rate chosen per budget on a "
    "validation slice of the train rows, its grid extended by factors of 10 until the choice is interior) needs to "
    "come within 0.01 of a ridge-tuned closed-form ceiling (α chosen on the same slice), at a smaller and a larger κ: "
    f"they 'rise' if the larger κ takes ≥ κ-ratio^{CLAIM7B_SLOPE:g} times as many steps and > {CLAIM7B_EQUAL:.2f}×; "
    f"they are 'equal' if it takes ≤ {CLAIM7B_EQUAL:.2f}× as many while that predicted rise exceeds "
    f"{CLAIM7B_EQUAL:.2f}×; a budget not reached, or reached at the first checkpoint, counts as the bound it is. Two "
    "such comparisons: one block re-expressed from the smallest to the largest constructed κ (same ceiling), and the "
    "best- vs the worst-conditioned mechanism blocks (median κ(Gram) of each half). 'Conditioning' if both rise, "
    "'not conditioning' if either is equal, otherwise inconclusive, and inconclusive too where some tuned fit beats "
    f"its ceiling held out by > {CEILING_SLACK:g}; ρ(log κ, shortfall) across blocks is reported beside it and does "
    "not decide. Reproduced if every decided model is 'conditioning', partly if some are, not reproduced if none "
    "is, not testable if none is decided",
}


# What would change each verdict, in words built from the same thresholds as the rule above (never typed twice: a
# threshold changed here changes the rule, the words and the decision together; tests/test_verdicts.py reloads this
# module with a planted threshold and checks that the words follow).
CHANGE = {
    1: f"a model whose resolved jumps all stay below {CLAIM1_JUMP}, whose span is below {CLAIM1_SPAN}, or whose "
    f"profile turns fewer than {CLAIM1_TURNS} times, fails; the paper's own extremes (> {PAPER_HIGH} next to < "
    f"{PAPER_LOW}) would need a block far more linear than any measured here",
    "2a": f"an untrained reference within {CLAIM2_NOISE_FACTOR:g}× of the noise between untrained draws, or a "
    f"trained-untrained difference under {CLAIM2_MIN_EFFECT}, makes a model 'not learned'; in the seeds experiment, "
    f"two init seeds whose shape distance (profiles centred) clears both its noise floor and {SEEDS_SHAPE_MARGIN} "
    "make the profile individual to a run (reproduced); seeds alike in level and shape while GELU and SwiGLU differ "
    "in shape make it architectural (partly), while a GELU–SwiGLU difference in level alone leaves the shape "
    "unarchitectural (reproduced, the level named); in the zoo, a layout whose component of the shape is shown, "
    f"largest and moves it by ≥ {CLAIM2_MIN_EFFECT} makes it architectural (not reproduced); one shape for every "
    "layout, text and seed is reproduced only where every run's profile moved from its initialisation",
    "2b": "an interval of the weights' minus the inputs' share, with the blocks' and the windows' variability, that "
    "lies above 0 makes a model 'weights', below 0 'inputs'; one that includes 0 leaves it undecided (not counted); "
    "more blocks, or a wider cross band, are what narrows it",
    3: f"a 90 % interval of the pooled r inside ±{EQUIVALENCE_MARGIN} shows 'uncorrelated'; a 95 % interval "
    f"excluding 0 shows a correlation; a median gain of {CLAIM3_MAX_GAIN} or more fails a model; more blocks (a "
    "bigger model or more models: the claim states how many) are what narrows the correlation",
    4: "a broadly linear and an outlier-concentrated block (rank ≈ 1) both among the blocks with R²_lin ≥ 0.6, over "
    "all models together (the rule pools the models; each model's own counts are stated beside it)",
    5: f"a shape (block × corpus) share whose interval lies at or above {CLAIM5_SHAPE}, or a level (corpus) share "
    f"at or above {CLAIM5_LEVEL}, makes the profile shaped by the corpus; both intervals below make it overlay (a "
    "property of the model)",
    "6a": f"a screened block whose held-out interval stays within +{CLAIM6_BUDGET:g} perplexity holds; one above "
    "fails; one across it leaves the model undecided",
    "6b": f"intervals of ρ(R²_lin, ΔPPL) and of the partial ρ given depth below 0, and neither within ±"
    f"{EQUIVALENCE_MARGIN}, reproduce it; one inside ±{EQUIVALENCE_MARGIN} or above 0 shows no signal; the pooled "
    "blocks decide where they are decided",
    "7a": f"a trained baseline within {CLAIM7_SHORTFALL} of the ceiling on more than {1 - CLAIM7_SHARE:.0%} of the "
    "blocks at the same budget would make it not reproduced",
    "7b": f"steps to the ceiling rising at least (κ ratio)^{CLAIM7B_SLOPE:g} on constructed κ and over blocks make "
    f"a model 'conditioning'; equal within a factor {CLAIM7B_EQUAL:.2f} on either, 'not conditioning'; a trained fit "
    f"beating its ceiling by more than {CEILING_SLACK:g}, or a longer budget that a step not reached calls for, "
    "leaves it inconclusive (not counted)",
}


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

    @property
    def rule(self) -> str:
        return RULES[self.claim]

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


def tally(passes: Iterable[bool]) -> str:
    """A claim checked per model: reproduced if every model passes, partly if some do, not reproduced if none."""
    passes = [bool(p) for p in passes]
    if not passes:
        return NOT_TESTABLE
    return REPRODUCED if all(passes) else PARTLY if any(passes) else NOT_REPRODUCED


def blocks(t: pd.DataFrame, mask) -> str:
    """Block numbers where `mask` holds, space-separated ("" for none): identifiers, not a formatted number."""
    return " ".join(str(int(b)) for b in t.loc[mask, "block"])


def require(t: pd.DataFrame, cols: Iterable[str], what: str) -> None:
    missing = sorted(set(cols) - set(t.columns))
    if missing:
        raise LinrecError(f"{what} needs columns {missing}; give the table the notebook writes")


def spearman(a, b) -> tuple[float, float]:
    """Spearman ρ and its p-value (scipy); NaN for a constant input (an all-inf κ included), without a warning."""
    if len(np.unique(np.asarray(a, dtype=float))) < 2 or len(np.unique(np.asarray(b, dtype=float))) < 2:
        return np.nan, np.nan
    r = stats.spearmanr(a, b)
    return float(r[0]), float(r[1])


def tally_decided(words: list[str], yes: str, undecided: str) -> str:
    """`tally` over the models whose word is not `undecided`; not testable when none is decided."""
    decided = [w == yes for w in words if w != undecided]
    return tally(decided) if decided else NOT_TESTABLE


def by_share(claim: str, ev: list[dict], key: str, yes: str, reason: str) -> Verdict:
    words = [e[key] for e in ev if e[key] is not None]
    if not words:
        return Verdict(claim, NOT_TESTABLE, ev, reason=reason)
    n = sum(w == yes for w in words)
    return Verdict(claim, REPRODUCED if n == len(words) else PARTLY if n else NOT_REPRODUCED, ev)
