"""Every rule that turns numbers into a summary or a verdict, in one tested place.

Two kinds of function live here, both over numeric tables (pandas DataFrames with snake_case
columns, as `linrec.claims.tables` registers them):

- **summaries** (one per notebook): per-model numbers a notebook shows and saves, e.g.
  `profile_summary` (notebook 02), `probe_summary` and `pitfall_summary` (03), `regime_summary` (04),
  `corpus_verdicts` (05), `swap_safety`, `swap_predictors` and `first_position_effect` (06),
  `random_init_summary` and `input_control_summary` (07);
- **claim verdicts** `claim1` … `claim7b`, claim 6 as `claim6a` (a cheap swap exists) and
  `claim6b` (R²_lin flags it), claim 7 as `claim7a` (trained baselines fall short) and `claim7b` (because of
  the conditioning, not the budget): the paper's claims (arXiv 2606.19379; the claims and
  the paper's numbers are quoted in `paper/claims.md`), each a stated rule applied to the
  summaries. A verdict is one of `VERDICTS`; "not testable" when the evidence is missing or
  cannot decide (a notebook not run, a control with too few seeds).

Every threshold is a module constant named in the rule's text (`RULES`), and
`tests/test_verdicts.py` checks each rule on both sides of each threshold. Display labels and
sentences are the report's and the notebooks' business; nothing here formats a number.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from linrec.analyses.uncertainty import (
    EFFECT,
    EQUIVALENCE_MARGIN,
    INCONCLUSIVE,
    NO_EFFECT,
    benjamini_hochberg,
    boot_p,
    correlation_outcome,
    correlation_test,
    holm,
)
from linrec.base.errors import LinrecError

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
# `disjoint_moves`) are each tested by a paired window bootstrap; only those with a Benjamini–Hochberg q ≤ MOVES_FDR
# over that family count (many blocks give many chances for two intervals to miss each other by luck)
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
CLAIM2_STANDOUT_SHARE = 0.5  # 2b: "weights" needs at least this share of blocks standing out from both nulls
CLAIM3_MAX_GAIN = 0.05
PREDICTOR_FWER = 0.05  # 6b: a screened predictor is named only if its Holm-adjusted p over the screen is below this
CLAIM6_BUDGET = 1.0  # perplexity points: claim 6a's budget, and notebook 06's "within budget"
CLAIM7_SHORTFALL, CLAIM7_SHARE = 0.01, 0.25
CORPUS_MODEL_RHO, CORPUS_MODEL_RATIO = 0.7, 0.5  # "a property of the model": every pair ρ ≥ 0.7 and corpus/depth < 0.5
CORPUS_SHAPED_RHO, CORPUS_SHAPED_RATIO = 0.4, 1.0  # "shaped by the corpus": some pair ρ < 0.4, or corpus/depth ≥ 1
# Claim 5 on shape: the profiles "overlay closely" when the block × corpus interaction (what the corpus changes in the
# profile's form, beyond shifting it up or down) holds less than a tenth of the variance of R²_lin over blocks and
# corpora, with the 95 % window-bootstrap interval entirely below that; a shift of the whole profile (the corpus main
# effect) is reported beside it as the level, and does not decide the claim.
CLAIM5_SHAPE = 0.1
SWAP_HIGH_R2 = 0.9  # notebook 06: "high R²_lin" blocks, checked against the +1 budget
MIDDLE_SHARE = 0.5  # notebook 06: ρ "within the middle blocks" uses the middle half of the stack
FIRST_VARIANTS = ("map", "ffn", "mean")  # notebook 06's position variants (linrec.inputs.surgery.FIRST_MODES)
GAUSSIAN_DROP = 0.1  # notebook 07: a block "loses" on Gaussian inputs when its R² falls by more than this

SEEDS_RULE = (
    "each comparison of two profiles (mean |ΔR²_lin| per block, paired window bootstrap): 'differ' if its 95 % "
    f"lower bound exceeds the noise floor (the same checkpoint on two halves of the held-out windows) and it is ≥ "
    f"{CLAIM2_MIN_EFFECT}; 'agree' if its upper bound is < {CLAIM2_MIN_EFFECT}; else inconclusive. Learned if every "
    "run differs from its own step 0; then individual if every pair of init seeds differs, set by architecture and "
    "data if the seeds agree and GELU differs from SwiGLU, the same for both variants if all agree; claim 2a "
    "reproduced for individual or the same for both, partly for set by architecture, not reproduced if not learned"
)
RULES = {
    1: f"reproduced for a model if its profile spans ≥ {CLAIM1_SPAN}, some adjacent blocks with disjoint 95 % "
    f"intervals differ by ≥ {CLAIM1_JUMP}, and the profile changes direction ≥ {CLAIM1_TURNS} times counting only "
    "moves between blocks with disjoint intervals; where the moves were tested (paired window bootstrap), only "
    f"those with a Benjamini–Hochberg q ≤ {MOVES_FDR:g} over the moves counted count; reproduced if every model "
    "passes, partly if some do",
    "2a": "per model: 'learned' if the trained profile differs from the untrained architecture by a mean |trained − "
    f"untrained| per block > {CLAIM2_NOISE_FACTOR:g}× the mean difference between two untrained draws and ≥ "
    f"{CLAIM2_MIN_EFFECT}; the untrained reference is the random-init twin (its own inputs), or, where the twin is "
    f"degenerate (its median train − held-out gap exceeds the trained model's by > {CLAIM2_DEGENERATE_GAP}), the "
    "random-init FFN ensemble on the trained inputs; reproduced if every model is 'learned', partly if some are, not "
    "reproduced if none is. Where the seeds experiment ran (notebook 08), the verdict is the weaker of this and the "
    "seeds rule's (SEEDS_RULE)",
    "2b": "per model, with each block's pre-MLP norm gain folded into its FFN: 'weights' if the 95 % interval of "
    "(weights' unique share − inputs' unique share) of the additive decomposition R²(FFN i, inputs j) ≈ μ + a_i + b_j "
    "(what only a, or only b, explains; window bootstrap) lies above 0 "
    f"and ≥ {CLAIM2_STANDOUT_SHARE:.0%} of blocks stand out from both null ensembles (random-init and shuffled FFNs "
    f"on the block's inputs, Benjamini–Hochberg q < {CLAIM2_FDR}); 'inputs' if that interval lies below 0 and fewer "
    "blocks stand out; 'undecided' otherwise; reproduced if every model is 'weights', partly if some are, not "
    "reproduced if none is",
    3: f"holds for a model if the median gain of the rank-16 probe is < {CLAIM3_MAX_GAIN} and 'uncorrelated' is shown: "
    "the 90 % moving-block bootstrap interval of Pearson r(1 − R²_lin, gain) over its blocks lies inside "
    f"±{EQUIVALENCE_MARGIN} (two one-sided tests at 5 %); fails if the gain is larger or r's 95 % interval excludes 0 "
    f"without that; not testable for a model whose r is inconclusive (not testable at this power) or whose probe stays "
    f"≥ {CLAIM3_MAX_GAIN} below the closed-form quadratic on the top-16 input components at the median (not "
    "converged); reproduced if it holds for every tested model, partly if for some",
    4: "reproduced if, over all models, blocks of both the broadly linear and the outlier-concentrated regime exist "
    "(broadly linear: R²_lin ≥ 0.6, not concentrated in a feature or the first token, and the effective rank of the "
    "map's explained part ≥ 5 % of the output width; outlier-concentrated: R²_lin ≥ 0.6, per-feature median ≥ 0.2 "
    "below it, the output concentrated in a few features, and the explained part's effective rank < 2, the paper's "
    "'rank ≈ 1'; linrec.analyses.spectrum.regime)",
    5: "per model, R²_lin over blocks × corpora split into depth, level (a corpus shifts the whole profile) and "
    "shape (the block × corpus interaction); 'a property of the model' if the 95 % window-bootstrap interval of the "
    f"shape share lies below {CLAIM5_SHAPE}, 'shaped by the corpus' if it lies at or above it, else undecided (not "
    "counted); the level is stated beside it and does not decide; reproduced if every decided model is 'a property "
    "of the model', partly if some are",
    "6a": f"holds for a model if the block with the lowest screening ΔPPL (train windows) has a held-out 95 % interval "
    f"of ΔPPL ≤ +{CLAIM6_BUDGET:g}, fails if the interval is above it; reproduced if it holds for every model, partly "
    "if for some, not reproduced if it fails for every model, not testable if an interval straddles the budget",
    "6b": "holds for a model if the 95 % moving-block bootstrap intervals (runs of adjacent blocks) of Spearman "
    "ρ(R²_lin, held-out ΔPPL) and of the partial ρ with depth (distance to the nearest end) taken out both lie below "
    f"0 and neither 90 % interval lies inside ±{EQUIVALENCE_MARGIN}; fails if either is shown inside ±"
    f"{EQUIVALENCE_MARGIN} or shown above 0; otherwise inconclusive (not testable at this power, left out of the "
    "tally); reproduced if every decided model passes, partly if some do. A screened predictor is named best only "
    f"if it survives Holm's correction over the screen (adjusted p < {PREDICTOR_FWER})",
    "7a": f"reproduced if the better trained baseline (Adam or SGD with a practitioner's defaults, 5 epochs of batch "
    f"256: the budget the verdict names in steps) falls > {CLAIM7_SHORTFALL} below the closed-form ceiling on at "
    f"least {CLAIM7_SHARE:.0%} of all blocks, else not reproduced",
    "7b": "per model: 'conditioning' if, on one block re-expressed to κ = 10², 10⁴, 10⁶, 10⁸ (same ceiling), the "
    f"tuned baselines' shortfall at a fixed budget rises with κ (by > {CLAIM7_SHORTFALL}, never falling by more than "
    f"{CLAIM7_SHORTFALL / 2:g}) and the 95 % CI of ρ(log κ, shortfall) across blocks lies above 0; else 'budget' if "
    "the tuned baselines (learning rate chosen on a validation slice of the train rows) come within "
    "0.01 of the ceiling on every mechanism block within the budget curve's steps; else 'other'; reproduced if "
    "every model is 'conditioning', partly if some are, not reproduced if none is",
}


@dataclass
class Verdict:
    """A claim's verdict and the numbers it was decided on (one dict per model, or one for all)."""

    claim: int | str  # 1 … 7, with claim 6 split into "6a" and "6b"
    verdict: str
    evidence: list[dict] = field(default_factory=list)
    reason: str = ""  # why "not testable"
    without_first: str = ""  # the same rule on every position but the windows' first ("" where not measured)

    @property
    def rule(self) -> str:
        return RULES[self.claim]


def tally(passes: Iterable[bool]) -> str:
    """A claim checked per model: reproduced if every model passes, partly if some do, not reproduced if none."""
    passes = [bool(p) for p in passes]
    if not passes:
        return NOT_TESTABLE
    return REPRODUCED if all(passes) else PARTLY if any(passes) else NOT_REPRODUCED


def _blocks(t: pd.DataFrame, mask) -> str:
    """Block numbers where `mask` holds, space-separated ("" for none): identifiers, not a formatted number."""
    return " ".join(str(int(b)) for b in t.loc[mask, "block"])


def _require(t: pd.DataFrame, cols: Iterable[str], what: str) -> None:
    missing = sorted(set(cols) - set(t.columns))
    if missing:
        raise LinrecError(f"{what} needs columns {missing}; give the table the notebook writes")


def _spearman(a, b) -> tuple[float, float]:
    """Spearman ρ and its p-value (scipy); NaN for a constant input (an all-inf κ included), without a warning."""
    if len(np.unique(np.asarray(a, dtype=float))) < 2 or len(np.unique(np.asarray(b, dtype=float))) < 2:
        return np.nan, np.nan
    r = stats.spearmanr(a, b)
    return float(r[0]), float(r[1])


# ---- notebook 02: the R²_lin profile ---------------------------------------------------------------------
def direction_changes(values) -> int:
    """How often a sequence turns from rising to falling or back (strict turns; flat steps do not count)."""
    r = np.asarray(values, dtype=float)
    return int(((r[2:] - r[1:-1]) * (r[1:-1] - r[:-2]) < 0).sum())


def disjoint_move_pairs(lo, hi) -> list[tuple[int, int]]:
    """The (anchor, block) pairs of `disjoint_moves`: from an anchor block (the first) to the next block whose
    interval [lo, hi] is disjoint from the anchor's, which becomes the next anchor. Blocks with a missing interval
    never form a move."""
    lo, hi = (np.asarray(v, dtype=float) for v in (lo, hi))
    pairs, a = [], 0
    for j in range(1, len(lo)):
        if lo[j] > hi[a] or lo[a] > hi[j]:  # NaN compares False: not disjoint
            pairs.append((a, j))
            a = j
    return pairs


def disjoint_moves(values, lo, hi) -> list[float]:
    """The profile's moves that its intervals resolve (`disjoint_move_pairs`): each move's change in value."""
    r = np.asarray(values, dtype=float)
    return [float(r[j] - r[a]) for a, j in disjoint_move_pairs(lo, hi)]


def disjoint_direction_changes(values, lo, hi) -> int:
    """Direction changes counted on `disjoint_moves` only: a turn needs a resolved rise and a resolved fall."""
    signs = np.sign(disjoint_moves(values, lo, hi))
    return int((signs[1:] * signs[:-1] < 0).sum())


def max_disjoint_jump(values, lo, hi) -> float:
    """The largest |difference| between adjacent blocks whose intervals are disjoint (0 if no pair is)."""
    r = np.asarray(values, dtype=float)
    sep = _adjacent_disjoint(lo, hi)
    return float(np.abs(np.diff(r))[sep].max()) if sep.any() else 0.0


def _adjacent_disjoint(lo, hi) -> np.ndarray:
    lo, hi = (np.asarray(v, dtype=float) for v in (lo, hi))
    return (lo[1:] > hi[:-1]) | (lo[:-1] > hi[1:])


def move_tests(t: pd.DataFrame, draws: np.ndarray, positions: str = "all") -> pd.DataFrame:
    """Claim 1's moves of one model's profile, each with a paired test. `t`: its ceiling table (one row per block,
    in block order; with `positions="ex_first"` the `r2_ex_first` columns are used); `draws` [n_boot, n_blocks]:
    R²_lin over window resamples that every block shares (`linrec.analyses.recoverability.profile_draws`), so a
    difference's
    resamples keep what two blocks' errors share. The family: every adjacent pair with disjoint intervals (`kind`
    "adjacent", the jump) and every move of `disjoint_move_pairs` (`kind` "move", the turns). `p`: `boot_p` of the
    difference's resamples; `q`: Benjamini–Hochberg over the family; `counts`: q ≤ MOVES_FDR."""
    t = t.sort_values("block")
    col, lo_c, hi_c = ("r2_ex_first", "r2_ex_first_lo", "r2_ex_first_hi") if positions == "ex_first" else (
        "r2_lin", "r2_lo", "r2_hi")  # fmt: skip
    r, lo, hi = (t[c].to_numpy(float) for c in (col, lo_c, hi_c))
    if draws.shape[1] != len(r):
        raise LinrecError(f"move_tests: {draws.shape[1]} blocks of draws for a profile of {len(r)} blocks")
    pairs = [("adjacent", i, i + 1) for i in np.flatnonzero(_adjacent_disjoint(lo, hi))]
    pairs += [("move", a, j) for a, j in disjoint_move_pairs(lo, hi)]
    rows = [
        {"model": t["model"].iloc[0], "positions": positions, "kind": kind, "from_block": int(t["block"].iloc[a]),
         "to_block": int(t["block"].iloc[j]), "change": float(r[j] - r[a]), "p": boot_p(draws[:, j] - draws[:, a])}
        for kind, a, j in pairs
    ]  # fmt: skip
    out = pd.DataFrame(rows, columns=["model", "positions", "kind", "from_block", "to_block", "change", "p"])
    out["q"] = benjamini_hochberg(out["p"].to_numpy(float)) if len(out) else []
    out["counts"] = out["q"] <= MOVES_FDR
    return out


def _fdr_shape(moves: pd.DataFrame | None, model: str, positions: str) -> dict:
    """Jump and turns counted on the moves that survive the false-discovery rate (`move_tests`)."""
    sfx = "" if positions == "all" else "_ex_first"
    keys = [f"moves_tested{sfx}", f"moves_fdr{sfx}", f"max_jump_fdr{sfx}", f"direction_changes_fdr{sfx}"]
    m = None if moves is None else moves[(moves["model"] == model) & (moves["positions"] == positions)]
    if m is None or m.empty:  # not tested (or no move to test: the disjoint counts are 0 as well)
        return dict.fromkeys(keys, np.nan)
    kept = m[m["counts"].astype(bool)]
    adj, mv = kept[kept["kind"] == "adjacent"], kept[kept["kind"] == "move"]
    signs = np.sign(mv.sort_values("to_block")["change"].to_numpy(float))
    return dict(zip(keys, [len(m), len(kept), float(adj["change"].abs().max()) if len(adj) else 0.0,
                           int((signs[1:] * signs[:-1] < 0).sum())]))  # fmt: skip


def as_extreme_as_paper(values) -> bool:
    """The paper's own extremes: some adjacent pair of blocks with one above PAPER_HIGH (0.99) and the other below
    PAPER_LOW (0.3)."""
    r = np.asarray(values, dtype=float)
    hi, lo = np.maximum(r[1:], r[:-1]), np.minimum(r[1:], r[:-1])
    return bool(((hi > PAPER_HIGH) & (lo < PAPER_LOW)).any())


def _ex_first_shape(t: pd.DataFrame) -> dict:
    """Claim 1's numbers on R²_lin without the windows' first position (`r2_ex_first` and its interval)."""
    r = t["r2_ex_first"].to_numpy(float)
    if "r2_ex_first_lo" not in t or not np.isfinite(r).all():
        return {"r2_ex_first_min": np.nan, "max_jump_disjoint_ex_first": np.nan,
                "direction_changes_disjoint_ex_first": np.nan}  # fmt: skip
    lo, hi = t["r2_ex_first_lo"], t["r2_ex_first_hi"]
    return {
        "r2_ex_first_min": float(r.min()),
        "max_jump_disjoint_ex_first": max_disjoint_jump(r, lo, hi),
        "direction_changes_disjoint_ex_first": disjoint_direction_changes(r, lo, hi),
    }


def profile_summary(r2: pd.DataFrame, moves: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per model, the shape of its R²_lin profile over blocks (claim 1's numbers); jumps and turns both as seen and
    counted only where the blocks' bootstrap intervals are disjoint (`disjoint_moves`), and, with `moves`
    (`move_tests` of this profile), only on the moves that survive the false-discovery rate (`max_jump_fdr`,
    `direction_changes_fdr`, out of `moves_tested`; NaN without). `profile_tokens`: the train tokens behind the
    profile (the table's `profile_tokens`, see `linrec.measure.curves.with_profile`, else its `n_train`)."""
    _require(
        r2, ["model", "block", "r2_lin", "r2_lo", "r2_hi", "cond_gram", "r2_ex_first", "first_var_share"],
        "profile_summary",
    )  # fmt: skip
    rows = []
    for model, t in r2.groupby("model", sort=False):
        t = t.sort_values("block")
        r = t["r2_lin"].to_numpy()
        rows.append(
            {
                "model": model,
                "n_blocks": len(r),
                "r2_min": float(r.min()),
                "r2_max": float(r.max()),
                "max_adjacent_jump": float(np.abs(np.diff(r)).max()) if len(r) > 1 else np.nan,
                "direction_changes": direction_changes(r),
                "max_jump_disjoint": max_disjoint_jump(r, t["r2_lo"], t["r2_hi"]),
                "direction_changes_disjoint": disjoint_direction_changes(r, t["r2_lo"], t["r2_hi"]),
                "as_extreme_as_paper": as_extreme_as_paper(r),
                **_ex_first_shape(t),
                **_fdr_shape(moves, model, "all"),
                **_fdr_shape(moves, model, "ex_first"),
                "cond_gram_median": float(t["cond_gram"].median()),
                "r2_ex_first_max": float(t["r2_ex_first"].max()),
                "first_token_blocks": _blocks(t, t["first_var_share"] >= FIRST_TOKEN_SHARE),
                "profile_tokens": next((float(t[c].iloc[0]) for c in ("profile_tokens", "n_train") if c in t), np.nan),
            }
        )
    return pd.DataFrame(rows)


def _claim1_passes(span: float, jump: float, turns: float) -> bool:
    return bool(span >= CLAIM1_SPAN and jump >= CLAIM1_JUMP and turns >= CLAIM1_TURNS)


def claim1_counts(row: Mapping, sfx: str) -> tuple[float, float]:
    """The jump and turns claim 1 counts: those that survive the false-discovery rate where the moves were tested
    (`profile_summary` with `moves`), else those between disjoint intervals."""
    if np.isfinite(row.get(f"max_jump_fdr{sfx}", np.nan)):
        return row[f"max_jump_fdr{sfx}"], row[f"direction_changes_fdr{sfx}"]
    return row[f"max_jump_disjoint{sfx}"], row[f"direction_changes_disjoint{sfx}"]


def claim1(summary: pd.DataFrame | None) -> Verdict:
    """Claim 1's rule per model, on all positions and, where the summary has them, on every position but the
    windows' first (`without_first`)."""
    if summary is None or summary.empty:
        return Verdict(1, NOT_TESTABLE, reason="notebook 02 not run")
    ev, ok, ok1 = [], [], []
    for row in summary.to_dict("records"):
        span = row["r2_max"] - row["r2_min"]
        ok.append(_claim1_passes(span, *claim1_counts(row, "")))
        e = {**row, "span": span, "passes": ok[-1], "passes_ex_first": None}
        if np.isfinite(row.get("max_jump_disjoint_ex_first", np.nan)):
            span1 = row["r2_ex_first_max"] - row["r2_ex_first_min"]
            e["span_ex_first"] = span1
            e["passes_ex_first"] = _claim1_passes(span1, *claim1_counts(row, "_ex_first"))
            ok1.append(e["passes_ex_first"])
        ev.append(e)
    return Verdict(1, tally(ok), ev, without_first=tally(ok1) if len(ok1) == len(ok) else "")


def replication_summary(reps: pd.DataFrame) -> pd.DataFrame:
    """Per model, over disjoint samples of text (`reps`: ceiling tables with a `sample` column, one per sample): each
    block's between-sample SD of R²_lin (median and largest, and where), beside the median half-width of one
    sample's bootstrap interval; and claim 1's rule on each sample's profile, with `replication`: "holds on every
    sample", "fails on every sample" or "sample-dependent"."""
    _require(reps, ["model", "sample", "block", "r2_lin", "r2_lo", "r2_hi"], "replication_summary")
    rows = []
    for model, t in reps.groupby("model", sort=False):
        wide = t.pivot_table(index="block", columns="sample", values="r2_lin")
        sd = wide.std(axis=1, ddof=1)
        passes = [bool(claim1(profile_summary(g)).evidence[0]["passes"]) for _, g in t.groupby("sample", sort=True)]
        rows.append(
            {
                "model": model,
                "n_samples": wide.shape[1],
                "samples": " ".join(str(int(c)) for c in wide.columns),
                "sd_median": float(sd.median()),
                "sd_max": float(sd.max()),
                "sd_max_block": int(sd.idxmax()),
                "ci_half_width_median": float(((t["r2_hi"] - t["r2_lo"]) / 2).median()),
                "n_claim1_passes": int(sum(passes)),
                "replication": "holds on every sample" if all(passes) else "fails on every sample"
                if not any(passes) else "sample-dependent",
            }
        )  # fmt: skip
    return pd.DataFrame(rows)


# ---- notebook 03: the bilinear probe and the trained baselines --------------------------------------------
POOLED = "all"  # the model label of a summary row over every model's blocks together


def _probe_row(t: pd.DataFrame, sweep: pd.DataFrame | None, n_boot: int, seed: int) -> dict:
    from linrec.analyses.uncertainty import detectable_correlation

    t = t.sort_values(["model", "block"]) if "block" in t else t  # adjacent blocks adjacent: the moving-block bootstrap
    stops = t["probe_stop"].value_counts()
    nonlin = 1 - t["r2_lin_rows"].to_numpy(float)
    gain = t["gain"].to_numpy(float)
    corr = {"rho": np.nan, "lo": np.nan, "hi": np.nan, "lo90": np.nan, "hi90": np.nan, "lo_iid": np.nan,
            "hi_iid": np.nan, "block_length": np.nan, "outcome": INCONCLUSIVE}  # fmt: skip
    p = np.nan
    if len(t) >= 3 and np.ptp(nonlin) > 0 and np.ptp(gain) > 0:
        corr = correlation_test(nonlin, gain, kind="pearson", n_boot=n_boot, seed=seed)
        p = float(stats.pearsonr(nonlin, gain)[1])
    row = {
        "n_blocks": len(t),
        "gain_median": float(t["gain"].median()),
        "gain_max": float(t["gain"].max()),
        "gain_min": float(t["gain"].min()),
        "gain_quad_median": float(t["gain_quad"].median()),
        "quad_excess_median": float((t["gain_quad"] - t["gain"]).median()),
        "pearson_r": corr["rho"],
        "p": p,
        "ci_lo": corr["lo"],
        "ci_hi": corr["hi"],
        "ci_lo90": corr["lo90"],
        "ci_hi90": corr["hi90"],
        "ci_lo_iid": corr["lo_iid"],
        "ci_hi_iid": corr["hi_iid"],
        "block_length": corr["block_length"],
        "correlation": corr["outcome"],
        "detectable_r": detectable_correlation(len(t)),
        **{f"n_stop_{k}": int(stops.get(k, 0)) for k in ("validation", "flattened", "max_epochs")},
        "seconds_probe_total": float(t["seconds_probe"].sum()),
    }
    row.update({"sweep_rank_min": np.nan, "sweep_gain_median_rank_min": np.nan, "sweep_rank_max": np.nan,
                "sweep_gain_median_rank_max": np.nan})  # fmt: skip
    if sweep is not None and not sweep.empty:
        lo, hi = sweep["rank"].min(), sweep["rank"].max()
        row.update(
            {
                "sweep_rank_min": int(lo),
                "sweep_gain_median_rank_min": float(sweep.loc[sweep["rank"] == lo, "gain"].median()),
                "sweep_rank_max": int(hi),
                "sweep_gain_median_rank_max": float(sweep.loc[sweep["rank"] == hi, "gain"].median()),
            }
        )
    return row


def probe_summary(
    probe: pd.DataFrame, sweep: pd.DataFrame | None = None, n_boot: int = 2000, seed: int = 0
) -> pd.DataFrame:
    """Per model, then one `POOLED` row: the probe's gain, the closed-form quadratic's gain on the top input
    components (`quad_excess_median`: how far the probe stays below it), Pearson r(1 − R²_lin, gain) with its 95 %
    and 90 % moving-block bootstrap intervals over adjacent blocks (`ci_lo`/`ci_hi`, `ci_lo90`/`ci_hi90`; the
    independent-blocks interval beside them as `ci_lo_iid`/`ci_hi_iid`) and `correlation`, the equivalence outcome
    (`linrec.analyses.uncertainty.correlation_outcome`: "no effect" = |r| < 0.3 shown), `detectable_r` (the |r| that
    many
    blocks detect with 80 % power at the 5 % level), and from `sweep` (`linrec.analyses.probe.rank_sweep`) the median
    gain at
    its smallest and largest rank."""
    _require(probe, ["model", "gain", "gain_quad", "r2_lin_rows", "probe_stop", "seconds_probe"], "probe_summary")
    rows = []
    groups = [(m, t) for m, t in probe.groupby("model", sort=False)] + [(POOLED, probe)]
    for model, t in groups:
        sw = None if sweep is None else sweep if model == POOLED else sweep[sweep["model"] == model]
        rows.append({"model": model, **_probe_row(t, sw, n_boot, seed)})
    return pd.DataFrame(rows)


def claim3_passes(row: Mapping) -> bool | None:
    """One model's claim 3 test: None (not testable) without a finite interval, when the closed-form quadratic
    beats the probe by ≥ CLAIM3_MAX_GAIN at the median (the probe did not converge), or when the correlation is
    inconclusive (neither shown nonzero nor shown smaller than the equivalence margin: not testable at this power);
    else True if the median gain is below CLAIM3_MAX_GAIN and "uncorrelated" is shown (the 90 % interval of r lies
    inside ±EQUIVALENCE_MARGIN), False otherwise."""
    if not (np.isfinite(row["ci_lo"]) and np.isfinite(row["ci_hi"])):
        return None
    if row["quad_excess_median"] >= CLAIM3_MAX_GAIN:
        return None
    if row["gain_median"] >= CLAIM3_MAX_GAIN:
        return False
    outcome = correlation_outcome(row["ci_lo"], row["ci_hi"], row["ci_lo90"], row["ci_hi90"])
    return None if outcome == INCONCLUSIVE else outcome == NO_EFFECT


def claim3(summary: pd.DataFrame | None) -> Verdict:
    if summary is None or summary.empty:
        return Verdict(3, NOT_TESTABLE, reason="notebook 03 not run")
    per_model = summary[summary["model"] != POOLED]
    ev = [{**r, "passes": claim3_passes(r)} for r in per_model.to_dict("records")]
    tested = [e["passes"] for e in ev if e["passes"] is not None]
    if not tested:
        return Verdict(
            3, NOT_TESTABLE, ev, reason=f"not testable at this power: no model's correlation is shown within "
            f"±{EQUIVALENCE_MARGIN} or shown nonzero (or its probe did not converge)"
        )  # fmt: skip
    return Verdict(3, tally(tested), ev)


def trained_shortfall(probe: pd.DataFrame) -> pd.Series:
    """Per block: how far the better trained baseline (Adam or SGD) falls below the closed-form ceiling, same rows."""
    _require(probe, ["r2_ceiling_rows", "r2_trained_adam", "r2_trained_sgd"], "trained_shortfall")
    return probe["r2_ceiling_rows"] - probe[["r2_trained_adam", "r2_trained_sgd"]].max(axis=1)


def pitfall_summary(
    probe: pd.DataFrame,
    budget: pd.DataFrame | None = None,
    dose: pd.DataFrame | None = None,
    n_boot: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Per model: claim 7a's shortfall at the practitioner's budget (`linrec.analyses.probe.TRAIN_DEFAULTS`: the
    epochs and
    batch both baselines trained with, as steps) and claim 7b's three measurements of its mechanism.

    7a: how often and how far the better of Adam and SGD falls short (`trained_shortfall`), at `budget_steps`.
    7b, across blocks: Spearman ρ of that shortfall with log κ(Gram), raw and Jacobi-scaled, and of Adam's with its
    travel (`adam_reach`), each with a bootstrap 95 % CI over blocks. 7b, budget curve (`budget`,
    linrec.analyses.pitfall.
    budget_table): per mechanism block, the first checkpoint at which the better tuned optimiser comes within
    REACHED of the ceiling (`steps_reach_*`; inf if not by `max_steps`) and where gradient descent from the Gram
    spectrum does (`gd_steps_*`), on the better- and the worse-conditioned half of those blocks (median).
    7b, by construction (`dose`, linrec.analyses.pitfall.dose_table): the better tuned optimiser's shortfall at the
    smallest
    and the largest constructed κ, and whether it rises with κ (`dose_rises`)."""
    from linrec.analyses.pitfall import REACHED, steps_to_reach
    from linrec.analyses.probe import TRAIN_DEFAULTS
    from linrec.analyses.uncertainty import across_block_length, spearman_with_ci

    ((epochs, batch_size),) = {(c["epochs"], c["batch_size"]) for c in TRAIN_DEFAULTS.values()}  # Adam's is SGD's

    _require(probe, ["model", "r2_ceiling_rows", "r2_trained_adam", "r2_trained_sgd", "cond_gram", "cond_scaled",
                     "adam_reach", "n_train_rows"], "pitfall_summary")  # fmt: skip
    rows = []
    for model, t in probe.groupby("model", sort=False):
        t = t.sort_values("block") if "block" in t else t
        short = trained_shortfall(t)
        adam_short = t["r2_ceiling_rows"] - t["r2_trained_adam"]
        kw = {"n_boot": n_boot, "seed": seed, "block_length": across_block_length(len(t))}  # adjacent blocks: runs
        rho_c = spearman_with_ci(np.log10(t["cond_gram"]), short, **kw)
        rho_s = spearman_with_ci(np.log10(t["cond_scaled"]), short, **kw)
        rho_r = spearman_with_ci(t["adam_reach"], adam_short, **kw)
        row = {
            "model": model,
            "n_blocks": len(t),
            "budget_steps": int(epochs * -(-int(t["n_train_rows"].median()) // batch_size)),
            "n_short": int((short > CLAIM7_SHORTFALL).sum()),
            "share_short": float((short > CLAIM7_SHORTFALL).mean()),
            "shortfall_median": float(short.median()),
            "shortfall_max": float(short.max()),
            "adam_shortfall_median": float(adam_short.median()),
            "sgd_shortfall_median": float((t["r2_ceiling_rows"] - t["r2_trained_sgd"]).median()),
            "spearman_cond_shortfall": rho_c[0],
            "cond_lo": rho_c[1],
            "cond_hi": rho_c[2],
            "spearman_scaled_shortfall": rho_s[0],
            "scaled_lo": rho_s[1],
            "scaled_hi": rho_s[2],
            "spearman_reach_adam": rho_r[0],
            "reach_lo": rho_r[1],
            "reach_hi": rho_r[2],
            "adam_reach_median": float(t["adam_reach"].median()),
        }
        row |= {k: np.nan for k in ("max_steps", "n_mechanism", "n_reached", "steps_reach_well", "steps_reach_ill",
                                    "gd_steps_well", "gd_steps_ill", "dose_block", "dose_steps", "dose_kappa_min",
                                    "dose_kappa_max", "dose_short_min", "dose_short_max", "dose_rises")}  # fmt: skip
        b = None if budget is None else budget[budget["model"] == model]
        if b is not None and not b.empty:
            per = []
            for _, g in b.groupby("block", sort=False):
                ceiling = float(g["ceiling"].iloc[0])
                chosen = g[g["chosen"] & (g["optimizer"] != "gd")]
                trained = min(steps_to_reach(c, ceiling, REACHED) for _, c in chosen.groupby("optimizer"))
                gd = steps_to_reach(g[g["optimizer"] == "gd"], ceiling, REACHED)
                per.append({"cond": float(g["cond_gram"].iloc[0]), "steps": trained, "gd": gd})
            per = pd.DataFrame(per)
            well = (per["cond"].rank(method="first") <= len(per) / 2).to_numpy()
            row |= {
                "max_steps": int(b["step"].max()),
                "n_mechanism": len(per),
                "n_reached": int(np.isfinite(per["steps"]).sum()),
                "steps_reach_well": float(per.loc[well, "steps"].median()),
                "steps_reach_ill": float(per.loc[~well, "steps"].median()),
                "gd_steps_well": float(per.loc[well, "gd"].median()),
                "gd_steps_ill": float(per.loc[~well, "gd"].median()),
            }
        d = None if dose is None else dose[dose["model"] == model]
        if d is not None and not d.empty:
            best = d.assign(shortfall=d["ceiling"] - d["r2_test"]).groupby("kappa")["shortfall"].min().sort_index()
            row |= {
                "dose_block": int(d["block"].iloc[0]),
                "dose_steps": int(d["step"].iloc[0]),
                "dose_kappa_min": float(best.index[0]),
                "dose_kappa_max": float(best.index[-1]),
                "dose_short_min": float(best.iloc[0]),
                "dose_short_max": float(best.iloc[-1]),
                "dose_rises": float(dose_rises(best.to_numpy())),
            }
        rows.append(row)
    return pd.DataFrame(rows)


def dose_rises(shortfalls) -> bool:
    """Whether a shortfall measured at increasing κ rises with it: the largest κ's exceeds the smallest's by more
    than CLAIM7_SHORTFALL, and no step down between neighbouring κ exceeds CLAIM7_SHORTFALL / 2 (noise). A fit that
    diverged (shortfall inf) counts as falling as far short as can be."""
    s = np.nan_to_num(np.asarray(shortfalls, float), nan=np.nan, posinf=1e6)
    if len(s) < 2 or np.isnan(s).any():
        return False
    return bool(s[-1] - s[0] > CLAIM7_SHORTFALL and (np.diff(s) >= -CLAIM7_SHORTFALL / 2 - 1e-12).all())


def mechanism_word(row: Mapping) -> str | None:
    """Claim 7b for one model: "conditioning" if the constructed dose–response rises (`dose_rises`) and the 95 % CI
    of ρ(log κ, shortfall) across blocks lies above 0; else "budget" if the tuned optimisers reach the ceiling on
    every mechanism block within the budget curve's steps, whatever its κ; else "other". None: not measured."""
    if not np.isfinite(row.get("dose_rises", np.nan)) or not np.isfinite(row.get("n_mechanism", np.nan)):
        return None
    if row["dose_rises"] and np.isfinite(row["cond_lo"]) and row["cond_lo"] > 0:
        return "conditioning"
    if row["n_reached"] == row["n_mechanism"]:
        return "budget"
    return "other"


def claim7a(summary: pd.DataFrame | None) -> Verdict:
    if summary is None or summary.empty or "share_short" not in summary:
        return Verdict("7a", NOT_TESTABLE, reason="notebook 03 not run")
    share = float(summary["n_short"].sum() / summary["n_blocks"].sum())
    ev = [{**r, "share_short_all": share} for r in summary.to_dict("records")]
    return Verdict("7a", REPRODUCED if share >= CLAIM7_SHARE else NOT_REPRODUCED, ev)


def claim7b(summary: pd.DataFrame | None) -> Verdict:
    if summary is None or summary.empty or "dose_rises" not in summary:
        return Verdict("7b", NOT_TESTABLE, reason="notebook 03 not run")
    ev = [{**r, "mechanism": mechanism_word(r)} for r in summary.to_dict("records")]
    return _by_share("7b", ev, "mechanism", "conditioning", "no budget curve or dose–response was measured")


# ---- notebook 04: regimes ------------------------------------------------------------------------------
def regime_summary(spectrum: pd.DataFrame, regimes: Iterable[str]) -> pd.DataFrame:
    """Per model: how many blocks fall in each regime (`linrec.analyses.spectrum.regime`), which, and the outlier
    numbers."""
    from linrec.analyses.spectrum import REGIME_HIGH_R2, concentrated

    _require(spectrum, ["model", "block", "regime", "first_var_share", "n_massive", "top1_var_share", "r2_lin",
                        "r2_ex_top8", "eff_rank_out", "d_out", "r2_feature_median", "eff_rank_explained"],
             "regime_summary")  # fmt: skip
    rows = []
    for model, t in spectrum.groupby("model", sort=False):
        row = {"model": model, "n_blocks": len(t), "n_high_r2": int((t["r2_lin"] >= REGIME_HIGH_R2).sum())}
        for reg in regimes:
            key = reg.replace(" ", "_").replace("-", "_")
            row[f"n_{key}"] = int((t["regime"] == reg).sum())
            row[f"n_{key}_high_r2"] = int(((t["regime"] == reg) & (t["r2_lin"] >= REGIME_HIGH_R2)).sum())
        conc = np.array([concentrated(r.r2_lin, r.r2_feature_median, r.top1_var_share, r.eff_rank_out, r.d_out)
                         for r in t.itertuples()], dtype=bool)  # fmt: skip
        row["concentrated_not_rank1_blocks"] = _blocks(t, conc & (t["regime"] == "unclassified").to_numpy())
        ex = t["regime_ex_first"] if "regime_ex_first" in t else pd.Series("", index=t.index)
        measured = bool((ex != "").all())  # else -1: not measured
        row["n_broadly_linear_ex_first"] = int((ex == "broadly linear").sum()) if measured else -1
        row["n_outlier_concentrated_ex_first"] = int((ex == "outlier-concentrated").sum()) if measured else -1
        row["outlier_ex_first_blocks"] = _blocks(t, ex == "outlier-concentrated")
        row.update(
            {
                "outlier_blocks": _blocks(t, t["regime"] == "outlier-concentrated"),
                "first_token_blocks": _blocks(t, t["regime"] == "first-token-concentrated"),
                "unclassified_blocks": _blocks(t, t["regime"] == "unclassified"),
                "outlier_first_blocks": _blocks(
                    t, (t["regime"] == "outlier-concentrated") & (t["first_var_share"] >= FIRST_TOKEN_OVERLAP)
                ),
                "first_share_blocks": _blocks(t, t["first_var_share"] >= FIRST_TOKEN_SHARE),
                "massive_blocks": _blocks(t, t["n_massive"] > 0),
                "top1_broadly_linear_blocks": _blocks(
                    t, (t["top1_var_share"] >= 0.5) & (t["regime"] == "broadly linear")
                ),
                "max_drop_ex_top8": float((t["r2_lin"] - t["r2_ex_top8"]).max()),
                "eff_rank_out_frac_median": float((t["eff_rank_out"] / t["d_out"]).median()),
            }
        )
        rows.append(row)
    return pd.DataFrame(rows)


def input_side(
    spectrum: pd.DataFrame, descriptors=("cond_gram", "cond_gram_test", "eff_rank_in", "dynamic_range_in")
) -> pd.DataFrame:
    """Per model and input descriptor: Spearman ρ with R²_lin across blocks, and its p-value."""
    rows = []
    for model, t in spectrum.groupby("model", sort=False):
        for col in descriptors:
            rho, p = _spearman(t["r2_lin"], t[col])
            rows.append({"model": model, "descriptor": col, "spearman_rho": rho, "p": p})
    return pd.DataFrame(rows)


def claim4(summary: pd.DataFrame | None) -> Verdict:
    """Both regimes exist over all models; `without_first` the same on the regimes without position 0 (`-1`
    counts: not measured)."""
    if summary is None or summary.empty:
        return Verdict(4, NOT_TESTABLE, reason="notebook 04 not run")
    ok = summary["n_broadly_linear"].sum() > 0 and summary["n_outlier_concentrated"].sum() > 0
    word1 = ""
    if "n_broadly_linear_ex_first" in summary and (summary["n_broadly_linear_ex_first"] >= 0).all():
        ok1 = summary["n_broadly_linear_ex_first"].sum() > 0 and summary["n_outlier_concentrated_ex_first"].sum() > 0
        word1 = REPRODUCED if ok1 else NOT_REPRODUCED
    return Verdict(4, REPRODUCED if ok else NOT_REPRODUCED, summary.to_dict("records"), without_first=word1)


def regime_replication(reps: pd.DataFrame, regimes: Iterable[str]) -> pd.DataFrame:
    """Claim 4 on disjoint samples of text (`reps`: `linrec.analyses.spectrum.spectrum_table` rows of every model with a
    `sample` column). Per sample, the regimes are counted (`regime_summary`) and claim 4's rule is applied over all
    models, as on the profile's own sample. One row per model: per sample (in `samples` order) its broadly linear and
    outlier-concentrated counts and outlier blocks, `n_samples`, `n_claim4_passes` (samples on which claim 4 holds,
    the same number in every row) and `replication`: "holds on every sample", "fails on every sample" or
    "sample-dependent"; `outlier_blocks_every_sample`: the blocks outlier-concentrated on every sample."""
    _require(reps, ["model", "sample", "block", "regime"], "regime_replication")
    regimes = list(regimes)
    samples = sorted(int(k) for k in reps["sample"].unique())
    per_sample = {k: regime_summary(reps[reps["sample"] == k], regimes) for k in samples}
    passes = [claim4(per_sample[k]).verdict == REPRODUCED for k in samples]
    word = (
        "sample-dependent"
        if any(passes) != all(passes)
        else "holds on every sample"
        if all(passes)
        else ("fails on every sample")
    )
    rows = []
    for model in dict.fromkeys(reps["model"]):
        got = [per_sample[k].set_index("model").loc[model] for k in samples]
        sets = [set(str(g["outlier_blocks"]).split()) for g in got]
        rows.append(
            {
                "model": model,
                "samples": " ".join(map(str, samples)),
                "n_samples": len(samples),
                "n_broadly_linear": " ".join(str(int(g["n_broadly_linear"])) for g in got),
                "n_outlier_concentrated": " ".join(str(int(g["n_outlier_concentrated"])) for g in got),
                "outlier_blocks": " | ".join(str(g["outlier_blocks"]) or "none" for g in got),
                "outlier_blocks_every_sample": " ".join(sorted(set.intersection(*sets), key=int)),
                "n_claim4_passes": int(sum(passes)),
                "replication": word,
            }
        )
    return pd.DataFrame(rows)


# ---- notebook 05: corpora ------------------------------------------------------------------------------
def corpus_word(spearman_min: float, corpus_depth_ratio: float) -> str:
    """Notebook 05's rule: "a property of the model", "shaped by the corpus" or "mixed" (thresholds above)."""
    if spearman_min >= CORPUS_MODEL_RHO and corpus_depth_ratio < CORPUS_MODEL_RATIO:
        return "a property of the model"
    if spearman_min < CORPUS_SHAPED_RHO or corpus_depth_ratio >= CORPUS_SHAPED_RATIO:
        return "shaped by the corpus"
    return "mixed"


def corpus_depth_ratio(wide: pd.DataFrame) -> float:
    """Size of the corpus effect over the depth effect: mean over blocks of the std across corpora (columns), over
    the std across blocks of the corpus-averaged profile (population std, ddof 0)."""
    return float(wide.std(axis=1, ddof=0).mean() / wide.mean(axis=1).std(ddof=0))


def corpus_verdicts(
    corpora: pd.DataFrame,
    agreement: pd.DataFrame,
    order: Iterable[str] | None = None,
    shapes: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Per model: how alike its profiles over corpora are, and `corpus_word` of it; with `shapes` (one row per
    model of `linrec.analyses.recoverability.corpus_shape_level`) also the depth / level / shape split with its
    intervals and
    `shape_verdict`, the word claim 5 is judged by (`shape_word`)."""
    _require(corpora, ["model", "corpus", "block", "r2_lin", "r2_lo", "r2_hi"], "corpus_verdicts")
    order = list(order) if order is not None else list(dict.fromkeys(corpora["corpus"]))
    wide = corpora.pivot_table(index=["model", "block"], columns="corpus", values="r2_lin", sort=False)[order]
    rows = []
    for model in dict.fromkeys(corpora["model"]):
        a = agreement[agreement["model"] == model]
        ratio = corpus_depth_ratio(wide.loc[model])
        rho = float(a["spearman_rho"].min())
        worst = a.loc[a["max_abs_diff"].idxmax()]
        t = corpora[corpora["model"] == model]
        rows.append(
            {
                "model": model,
                "n_blocks": len(wide.loc[model]),
                "spearman_min": rho,
                "pearson_min": float(a["pearson_r"].min()),
                "corpus_depth_ratio": ratio,
                "max_abs_diff": float(worst["max_abs_diff"]),
                "max_diff_block": int(worst["max_diff_block"]),
                "max_diff_corpus_a": worst["corpus_a"],
                "max_diff_corpus_b": worst["corpus_b"],
                "n_ci_disjoint": int(a["n_ci_disjoint"].sum()),
                "n_ci_compared": int(a["n_ci_compared"].sum()),
                "ci_width_median": float((t["r2_hi"] - t["r2_lo"]).median()),
                "verdict": corpus_word(rho, ratio),
            }
        )
    out = pd.DataFrame(rows)
    if shapes is not None:
        out = out.merge(shapes.drop(columns=["n_blocks"], errors="ignore"), on="model", how="left")
        out["shape_verdict"] = [shape_word(lo, hi) for lo, hi in zip(out["shape_lo"], out["shape_hi"])]
    return out


def shape_word(shape_lo: float, shape_hi: float) -> str:
    """Claim 5 on shape: "a property of the model" if the interaction share's interval lies below CLAIM5_SHAPE,
    "shaped by the corpus" if it lies at or above it, "undecided" otherwise (or without an interval)."""
    if not (np.isfinite(shape_lo) and np.isfinite(shape_hi)):
        return "undecided"
    if shape_hi < CLAIM5_SHAPE:
        return "a property of the model"
    if shape_lo >= CLAIM5_SHAPE:
        return "shaped by the corpus"
    return "undecided"


def claim5(verdicts: pd.DataFrame | None) -> Verdict:
    """Per model, `shape_word` of the interaction share (notebook 05's `corpora_verdict`, columns shape_lo/hi);
    models left undecided are not counted; a table without the decomposition is judged by the older correlation
    rule (`corpus_word`)."""
    if verdicts is None or verdicts.empty:
        return Verdict(5, NOT_TESTABLE, reason="notebook 05 not run")
    if "shape_hi" not in verdicts:
        return Verdict(5, tally(verdicts["verdict"] == "a property of the model"), verdicts.to_dict("records"))
    ev = [{**r, "shape_verdict": shape_word(r["shape_lo"], r["shape_hi"])} for r in verdicts.to_dict("records")]
    word1 = ""
    if "shape_hi_ex_first" in verdicts and np.isfinite(verdicts["shape_hi_ex_first"]).all():
        for e in ev:
            e["shape_verdict_ex_first"] = shape_word(e["shape_lo_ex_first"], e["shape_hi_ex_first"])
        word1 = _tally_decided([e["shape_verdict_ex_first"] for e in ev], "a property of the model", "undecided")
    decided = [e["shape_verdict"] == "a property of the model" for e in ev if e["shape_verdict"] != "undecided"]
    if not decided:
        return Verdict(5, NOT_TESTABLE, ev, reason="every model's shape share straddles the threshold",
                       without_first=word1)  # fmt: skip
    return Verdict(5, tally(decided), ev, without_first=word1)


def _tally_decided(words: list[str], yes: str, undecided: str) -> str:
    """`tally` over the models whose word is not `undecided`; not testable when none is decided."""
    decided = [w == yes for w in words if w != undecided]
    return tally(decided) if decided else NOT_TESTABLE


# ---- notebook 06: the swap -------------------------------------------------------------------------------
def _map_rows(swap: pd.DataFrame) -> pd.DataFrame:
    """The swap table's rows of the plain affine swap (`first` = "map", or a table without variants)."""
    return swap[swap["first"] == "map"] if "first" in swap.columns else swap


def swap_params(swap: pd.DataFrame) -> pd.DataFrame:
    """Per model: parameters of one FFN and of its affine map, and their ratio."""
    t = (
        _map_rows(swap)
        .groupby("model", sort=False)
        .agg(params_ffn=("params_ffn", "first"), params_linear=("params_linear", "first"))
    )
    t["ffn_over_linear"] = t["params_ffn"] / t["params_linear"]
    return t.reset_index()


def swap_safety(swap: pd.DataFrame) -> pd.DataFrame:
    """Per model: do the high-R²_lin blocks swap within the budget, and how many blocks do at all (held-out ΔPPL
    whose 95 % interval lies within the budget)."""
    swap = _map_rows(swap)
    _require(swap, ["model", "block", "r2_lin", "delta_ppl", "delta_hi", "ppl_base"], "swap_safety")
    rows = []
    for model, t in swap.groupby("model", sort=False):
        hi = t["r2_lin"] >= SWAP_HIGH_R2
        costly = hi & (t["delta_ppl"] > CLAIM6_BUDGET)
        rows.append(
            {
                "model": model,
                "n_blocks": len(t),
                "n_high_r2": int(hi.sum()),
                "n_high_r2_costly": int(costly.sum()),
                "high_r2_costly_blocks": _blocks(t, costly),
                "n_within_budget": int((t["delta_hi"] <= CLAIM6_BUDGET).sum()),
                "within_budget_blocks": _blocks(t, t["delta_hi"] <= CLAIM6_BUDGET),
                "delta_ppl_median": float(t["delta_ppl"].median()),
                "ppl_base": float(t["ppl_base"].iloc[0]),
            }
        )
    return pd.DataFrame(rows)


# the candidate predictors of ΔPPL (columns of linrec.analyses.swap.SwapStudy.predictors) and the sign of ρ(predictor,
# ΔPPL)
# that means "predicts safe to swap": higher R² and a block further from the ends should go with a smaller ΔPPL
PREDICTOR_SIGNS = {
    "depth_from_end": -1,
    "r2_lin": -1,
    "r2_ex_first": -1,
    "mse_out": +1,
    "err_rel_resid": +1,
    "err_post_norm_rel_resid": +1,
    "screening_delta_ppl": +1,
}
RUNS_SWAPPED_MODEL = {"screening_delta_ppl"}  # the target itself on other windows: shown, never called a predictor


def middle_blocks(n_blocks: int) -> np.ndarray:
    """The middle half of a stack: blocks at least ⌊L·MIDDLE_SHARE / 2⌋ from either end."""
    gap = int(n_blocks * (1 - MIDDLE_SHARE) / 2)
    return np.arange(gap, n_blocks - gap)


def swap_predictors(
    values: pd.DataFrame, swap: pd.DataFrame, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> pd.DataFrame:
    """Per model and candidate predictor (`values`: `SwapStudy.predictors`' columns, see `PREDICTOR_SIGNS`): Spearman
    ρ with the held-out ΔPPL of the map swap across blocks, the partial ρ with depth (distance to the nearest end)
    taken out, and ρ within the middle blocks (`middle_blocks`). Blocks are not independent (neighbours share the
    residual stream), so each interval is a moving-block bootstrap over adjacent blocks (`block_length`,
    `linrec.analyses.uncertainty.across_block_length`); the independent-blocks 95 % interval is kept beside it
    (`rho_lo_iid`, `rho_hi_iid`). `p`, `partial_p`: bootstrap p-values; `p_holm`, `partial_p_holm`: Holm-adjusted over
    the model's screened predictors (every column but those that run the swapped model), one family for ρ and one
    for the partial ρ; `outcome`, `partial_outcome`: effect / no effect (|ρ| < EQUIVALENCE_MARGIN shown) /
    inconclusive. `useful` = sign · ρ (> 0: the predictor points the right way)."""
    from linrec.analyses.uncertainty import across_block_length, spearman_with_ci

    if level != 0.95:
        raise LinrecError(f"swap_predictors reports 95 % and 90 % intervals; got level={level}")
    target = _map_rows(swap)[["model", "block", "delta_ppl"]]
    joined = values.merge(target, on=["model", "block"], how="inner")
    rows = []
    for model, t in joined.groupby("model", sort=False):
        t = t.sort_values("block")
        mid = t["block"].isin(middle_blocks(int(t["block"].max()) + 1)).to_numpy()
        depth = t["depth_from_end"].to_numpy(float)
        no_partial = {k: np.nan for k in ("rho", "lo", "hi", "lo90", "hi90", "p")} | {"outcome": ""}
        mid_length = across_block_length(int(mid.sum()))
        for col, sign in PREDICTOR_SIGNS.items():
            if col not in t.columns or not np.isfinite(t[col].to_numpy(float)).all():
                continue
            a, y = t[col].to_numpy(float), t["delta_ppl"].to_numpy(float)
            c = correlation_test(a, y, n_boot=n_boot, seed=seed)
            pc = no_partial if col == "depth_from_end" else correlation_test(
                a, y, depth, kind="partial", n_boot=n_boot, seed=seed
            )  # fmt: skip
            # the middle blocks' ρ is shown with its 95 % interval only: no 90 % or independent-blocks bootstrap
            mc = dict(zip(("rho", "lo", "hi"), spearman_with_ci(a[mid], y[mid], n_boot, seed, 0.95, mid_length)))
            rows.append(
                {
                    "model": model,
                    "column": col,
                    "runs_swapped_model": col in RUNS_SWAPPED_MODEL,
                    "n_blocks": len(t),
                    "block_length": c["block_length"],
                    "spearman_rho": c["rho"],
                    "rho_lo": c["lo"],
                    "rho_hi": c["hi"],
                    "rho_lo90": c["lo90"],
                    "rho_hi90": c["hi90"],
                    "rho_lo_iid": c["lo_iid"],
                    "rho_hi_iid": c["hi_iid"],
                    "p": c["p"],
                    "outcome": c["outcome"],
                    "partial_rho_depth": pc["rho"],
                    "partial_lo": pc["lo"],
                    "partial_hi": pc["hi"],
                    "partial_lo90": pc["lo90"],
                    "partial_hi90": pc["hi90"],
                    "partial_p": pc["p"],
                    "partial_outcome": pc["outcome"],
                    "n_middle": int(mid.sum()),
                    "middle_rho": mc["rho"],
                    "middle_lo": mc["lo"],
                    "middle_hi": mc["hi"],
                    "useful": sign * c["rho"],
                }
            )
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out["p_holm"] = out["partial_p_holm"] = np.nan
    for _, idx in out[~out["runs_swapped_model"]].groupby("model", sort=False).groups.items():
        out.loc[idx, "p_holm"] = holm(out.loc[idx, "p"].to_numpy(float))
        out.loc[idx, "partial_p_holm"] = holm(out.loc[idx, "partial_p"].to_numpy(float))
    return out


def best_predictors(predictors: pd.DataFrame) -> pd.DataFrame:
    """Per model, the screened predictor that points the right way most strongly among those that survive Holm's
    correction (`p_holm` < PREDICTOR_FWER, sign · ρ > 0), and the same for the partial ρ given depth; "" where none
    survives, so no predictor is named after the fact from an uncorrected screen."""
    rows = []
    for model, p in predictors.groupby("model", sort=False):
        real = p[~p["runs_swapped_model"]]
        signs = real["column"].map(PREDICTOR_SIGNS).to_numpy(float)
        row = {"model": model, "n_screened": len(real)}
        for key, rho, padj in (("best", "spearman_rho", "p_holm"), ("best_partial", "partial_rho_depth",
                                                                   "partial_p_holm")):  # fmt: skip
            useful = signs * real[rho].to_numpy(float)
            ok = (useful > 0) & (real[padj].to_numpy(float) < PREDICTOR_FWER)
            if ok.any():
                r = real.iloc[int(np.flatnonzero(ok)[np.argmax(useful[ok])])]
                row.update({key: r["column"], f"{key}_rho": float(r[rho]), f"{key}_p_holm": float(r[padj])})
            else:
                row.update({key: "", f"{key}_rho": np.nan, f"{key}_p_holm": np.nan})
        rows.append(row)
    return pd.DataFrame(rows)


def first_position_effect(swap: pd.DataFrame, profile: pd.DataFrame) -> pd.DataFrame:
    """Per model and block that sits on the first token (its `first_var_share` ≥ FIRST_TOKEN_SHARE in the ceiling
    table `profile`): the held-out ΔPPL of each position variant and the share of the map's cost that keeping the
    FFN at position 0 removes, (ΔPPL_map − ΔPPL_ffn) / ΔPPL_map."""
    _require(swap, ["model", "block", "first", "delta_ppl", "delta_lo", "delta_hi"], "first_position_effect")
    wide = swap.pivot_table(
        index=["model", "block"], columns="first", values=["delta_ppl", "delta_lo", "delta_hi"], sort=False
    )
    wide.columns = [f"{v}_{f}" for v, f in wide.columns]
    wide = wide.reset_index().merge(profile[["model", "block", "first_var_share"]], on=["model", "block"])
    keep = ["model", "block", "first_var_share"] + [
        f"{v}_{f}" for f in FIRST_VARIANTS for v in ("delta_ppl", "delta_lo", "delta_hi")
    ]
    for col in keep:  # a variant run on no block (none sits on the first token, or it was not asked for): NaN
        if col not in wide:
            wide[col] = np.nan
    out = wide[keep][wide["first_var_share"] >= FIRST_TOKEN_SHARE].copy()
    with np.errstate(invalid="ignore", divide="ignore"):
        out["share_of_cost_at_first"] = (out["delta_ppl_map"] - out["delta_ppl_ffn"]) / out["delta_ppl_map"]
    return out.reset_index(drop=True)


def _block_row(t: pd.DataFrame, block: int) -> pd.Series:
    return t.loc[t["block"] == block].iloc[0]


def claim6a(swap: pd.DataFrame | None, values: pd.DataFrame | None) -> Verdict:
    """Some block swaps for its affine map within the budget: per model, the block with the lowest screening ΔPPL
    alone (`values`: `SwapStudy.predictors`) is chosen without the held-out windows, and its held-out 95 % interval
    decides: within the budget (holds), above it (fails), or across it (undecided)."""
    if swap is None or values is None:
        return Verdict("6a", NOT_TESTABLE, reason="notebook 06 not run")
    swap = _map_rows(swap)
    _require(swap, ["model", "block", "delta_ppl", "delta_lo", "delta_hi", "params_ffn", "params_linear"], "claim 6a")
    ev, outcome = [], []
    for model, t in swap.groupby("model", sort=False):
        v = values[values["model"] == model]
        chosen = int(v.sort_values(["screening_delta_ppl", "block"]).iloc[0]["block"])
        r = _block_row(t, chosen)
        word = "holds" if r["delta_hi"] <= CLAIM6_BUDGET else "fails" if r["delta_lo"] > CLAIM6_BUDGET else "undecided"
        outcome.append(word)
        best = t.loc[t["delta_ppl"].idxmin()]
        ev.append(
            {
                "model": model,
                "ffn_over_linear": float(r["params_ffn"] / r["params_linear"]),
                "chosen_block": chosen,
                "chosen_screening_delta_ppl": float(_block_row(v, chosen)["screening_delta_ppl"]),
                "delta_ppl": float(r["delta_ppl"]),
                "delta_lo": float(r["delta_lo"]),
                "delta_hi": float(r["delta_hi"]),
                "outcome": word,
                "n_within_budget": int((t["delta_hi"] <= CLAIM6_BUDGET).sum()),
                "n_blocks": len(t),
                "best_heldout_block": int(best["block"]),
                "best_heldout_delta_ppl": float(best["delta_ppl"]),
                "ppl_base": float(r["ppl_base"]) if "ppl_base" in r else np.nan,
            }
        )
    if all(o == "holds" for o in outcome):
        word = REPRODUCED
    elif any(o == "holds" for o in outcome):
        word = PARTLY
    elif all(o == "fails" for o in outcome):
        word = NOT_REPRODUCED
    else:
        return Verdict("6a", NOT_TESTABLE, ev, reason="the held-out intervals straddle the budget")
    return Verdict("6a", word, ev)


def flag_outcome(row: Mapping) -> str:
    """Claim 6b for one model from its R²_lin row of `swap_predictors`: "flags" if ρ(R²_lin, ΔPPL) and the partial ρ
    with depth taken out both show an effect below 0 (95 % moving-block intervals below 0, and neither within the
    equivalence margin); "no flag" if either is shown smaller than the margin, or shown on the wrong side of 0 (a
    decided failure); "inconclusive" otherwise."""
    outcomes = (
        correlation_outcome(row["rho_lo"], row["rho_hi"], row["rho_lo90"], row["rho_hi90"]),
        correlation_outcome(row["partial_lo"], row["partial_hi"], row["partial_lo90"], row["partial_hi90"]),
    )
    sides = (row["spearman_rho"], row["partial_rho_depth"])
    if all(o == EFFECT for o in outcomes) and all(v < 0 for v in sides):
        return "flags"
    if any(o == NO_EFFECT or (o == EFFECT and v > 0) for o, v in zip(outcomes, sides)):
        return "no flag"
    return INCONCLUSIVE


def claim6b(predictors: pd.DataFrame | None) -> Verdict:
    """R²_lin flags the safe blocks: per model, `flag_outcome` of its R²_lin row; inconclusive models are left out
    of the tally (not testable at this power), and a verdict needs at least one decided model."""
    if predictors is None:
        return Verdict("6b", NOT_TESTABLE, reason="notebook 06 not run")
    screened = {"runs_swapped_model", "p_holm", "partial_p_holm"} <= set(predictors.columns)
    best = best_predictors(predictors).set_index("model") if screened and len(predictors) else pd.DataFrame()
    ev, ok = [], []
    for model, p in predictors.groupby("model", sort=False):
        rows = p[p["column"] == "r2_lin"]
        if rows.empty:
            continue
        r = rows.iloc[0]
        outcome = flag_outcome(r)
        if outcome != INCONCLUSIVE:
            ok.append(outcome == "flags")
        depth = p[p["column"] == "depth_from_end"]
        b = best.loc[model] if model in best.index else {}
        ev.append(
            {
                "model": model,
                **{
                    k: float(r.get(k, np.nan))
                    for k in (
                        "spearman_rho",
                        "rho_lo",
                        "rho_hi",
                        "rho_lo90",
                        "rho_hi90",
                        "rho_lo_iid",
                        "rho_hi_iid",
                        "partial_rho_depth",
                        "partial_lo",
                        "partial_hi",
                        "partial_lo90",
                        "partial_hi90",
                        "middle_rho",
                        "p_holm",
                    )
                },  # fmt: skip
                "block_length": int(r["block_length"]),
                "depth_rho": float(depth["spearman_rho"].iloc[0]) if len(depth) else np.nan,
                "outcome": outcome,
                "passes": None if outcome == INCONCLUSIVE else outcome == "flags",
                "best": b.get("best", ""),
                "best_rho": b.get("best_rho", np.nan),
                "best_partial": b.get("best_partial", ""),
                "best_partial_rho": b.get("best_partial_rho", np.nan),
            }
        )
    if not ev:
        return Verdict("6b", NOT_TESTABLE, reason="no R²_lin predictor row")
    ex = predictors[predictors["column"] == "r2_ex_first"]
    word1 = ""
    if ex["model"].nunique() == len(ev):  # the same rule on R²_lin without the first position
        outcomes = {r["model"]: flag_outcome(r) for r in ex.to_dict("records")}
        for e in ev:
            e["outcome_ex_first"] = outcomes[e["model"]]
        word1 = _tally_decided(list(outcomes.values()), "flags", INCONCLUSIVE)
    if not ok:
        return Verdict("6b", NOT_TESTABLE, ev, reason="not testable at this power: every model is inconclusive",
                       without_first=word1)  # fmt: skip
    return Verdict("6b", tally(ok), ev, without_first=word1)


# ---- notebook 07: controls -------------------------------------------------------------------------------
def random_init_summary(profiles: pd.DataFrame, init_seeds: Iterable[int]) -> pd.DataFrame:
    """Per model: its trained R²_lin profile against its random-init twins (`weights` = "trained" or
    "random init, seed S"), and the twins against each other."""
    seeds = list(init_seeds)
    rows = []
    for model, p in profiles.groupby("model", sort=False):
        tr = p[p["weights"] == "trained"].sort_values("block")["r2_lin"].to_numpy()
        ini = [p[p["weights"] == f"random init, seed {s}"].sort_values("block")["r2_lin"].to_numpy() for s in seeds]
        init0 = p[p["weights"] == f"random init, seed {seeds[0]}"]
        row = {
            "model": model,
            "trained_r2_min": float(tr.min()),
            "trained_r2_max": float(tr.max()),
            "init_r2_min": float(min(i.min() for i in ini)),
            "init_r2_max": float(max(i.max() for i in ini)),
            "init_r2_spread": float(np.std(ini[0])),  # across blocks, seed 0: against the seed-to-seed difference
            "mean_abs_trained_init": float(sum(abs(tr - i).mean() for i in ini) / len(ini)),
            "spearman_trained_init": _spearman(tr, ini[0])[0],
            "init_r2_train_median": float(init0["r2_train"].median()),
            "trained_gap_median": float(
                (p.loc[p["weights"] == "trained", "r2_train"] - p.loc[p["weights"] == "trained", "r2_lin"]).median()
            ),  # fmt: skip
            "init_r2_test_median": float(init0["r2_lin"].median()),
            "mean_abs_init_seeds": float(abs(ini[0] - ini[1]).mean()) if len(ini) > 1 else np.nan,
            "spearman_init_seeds": _spearman(ini[0], ini[1])[0] if len(ini) > 1 else np.nan,
        }
        rows.append(row)
    return pd.DataFrame(rows)


def input_control_summary(inputs: pd.DataFrame) -> pd.DataFrame:
    """Per model: the trained FFNs scored on their own inputs, on Gaussian inputs with the same moments, and on the
    next block's inputs."""
    rows = []
    for model, t in inputs.groupby("model", sort=False):
        rows.append(
            {
                "model": model,
                "r2_own_median": float(t["r2_own"].median()),
                "r2_gaussian_median": float(t["r2_gaussian"].median()),
                "n_gaussian_drop": int((t["r2_gaussian"] < t["r2_own"] - GAUSSIAN_DROP).sum()),
                "r2_next_block_median": float(t["r2_other_block"].median()),
                "spearman_own_gaussian": _spearman(t["r2_own"], t["r2_gaussian"])[0],
            }
        )
    return pd.DataFrame(rows)


def _mean_pair_gap(v: np.ndarray) -> float:
    """Mean |v_s − v_t| over pairs of draws s ≠ t (NaN with fewer than two)."""
    v = np.asarray(v, float)
    if len(v) < 2:
        return np.nan
    return float(np.abs(v[:, None] - v[None, :]).sum() / (len(v) * (len(v) - 1)))


def null_blocks(nulls: pd.DataFrame) -> pd.DataFrame:
    """Per block (`linrec.analyses.controls.inputs_or_weights`' `nulls`): the trained FFN's R² against each null
    ensemble on
    the same rows. z = (trained − mean) / sd; p from the prediction interval of a new draw (t with k − 1 degrees of
    freedom, (trained − mean) / (sd √(1 + 1/k)), two-sided, assuming the null draws are normal); q: Benjamini–Hochberg
    over the model's blocks, per null. A block `stands_out` when q < CLAIM2_FDR for both nulls."""
    _require(nulls, ["model", "block", "ffn", "draw", "r2"], "null_blocks")
    rows = []
    for (model, block), t in nulls.groupby(["model", "block"], sort=False):
        row = {"model": model, "block": int(block), "r2_trained": float(t.loc[t["ffn"] == "trained", "r2"].iloc[0])}
        for kind, name in (("random init", "init"), ("shuffled", "shuffled")):
            v = t.loc[t["ffn"] == kind, "r2"].to_numpy(float)
            k, m = len(v), float(np.mean(v)) if len(v) else np.nan
            sd = float(np.std(v, ddof=1)) if k > 1 else np.nan
            diff = row["r2_trained"] - m
            z = p = np.nan
            if k > 1 and sd > 0:
                z = diff / sd
                p = float(2 * stats.t.sf(abs(diff) / (sd * np.sqrt(1 + 1 / k)), k - 1))
            elif k > 1:  # identical draws: the trained FFN is either one of them or outside all of them
                z, p = (0.0, 1.0) if diff == 0 else (np.copysign(np.inf, diff), 0.0)
            row.update({f"n_{name}": k, f"{name}_mean": m, f"{name}_sd": sd, f"{name}_pair_gap": _mean_pair_gap(v),
                        f"z_{name}": z, f"p_{name}": p})  # fmt: skip
        rows.append(row)
    out = pd.DataFrame(rows)
    for name in ("init", "shuffled"):
        out[f"q_{name}"] = np.nan
        for _, idx in out.groupby("model", sort=False).groups.items():
            out.loc[idx, f"q_{name}"] = benjamini_hochberg(out.loc[idx, f"p_{name}"].to_numpy(float))
    out["stands_out"] = (out["q_init"] < CLAIM2_FDR) & (out["q_shuffled"] < CLAIM2_FDR)
    return out


def learned_summary(init_summary: pd.DataFrame, blocks: pd.DataFrame | None = None) -> pd.DataFrame:
    """Claim 2a per model: the trained profile against the untrained architecture.

    Two references, each with its own noise: the random-init twin on its own inputs (`effect_twin` = mean |trained −
    init| over blocks and seeds, `noise_twin` = mean |seed − seed|, from `random_init_summary`), and the random-init
    FFN ensemble on the trained inputs (`effect_null` = mean over blocks of |trained − the ensemble's mean|,
    `noise_null` = mean over blocks of the mean |draw − draw|, from `null_blocks`). The twin is `twin_degenerate`
    when its median train − held-out gap exceeds the trained model's by more than CLAIM2_DEGENERATE_GAP; the
    verdict's reference is then the null ensemble."""
    rows = []
    by_model = {} if blocks is None else {m: t for m, t in blocks.groupby("model", sort=False)}
    for r in init_summary.to_dict("records"):
        twin_gap = r["init_r2_train_median"] - r["init_r2_test_median"]
        trained_gap = r.get("trained_gap_median", np.nan)
        b = by_model.get(r["model"])
        effect_null = noise_null = np.nan
        if b is not None and (b["n_init"] > 1).all():
            effect_null = float((b["r2_trained"] - b["init_mean"]).abs().mean())
            noise_null = float(b["init_pair_gap"].mean())
        degenerate = bool(np.isfinite(trained_gap) and twin_gap - trained_gap > CLAIM2_DEGENERATE_GAP)
        rows.append(
            {
                "model": r["model"],
                "twin_gap": float(twin_gap),
                "trained_gap": float(trained_gap),
                "twin_degenerate": degenerate,
                "effect_twin": float(r["mean_abs_trained_init"]),
                "noise_twin": float(r["mean_abs_init_seeds"]),
                "effect_null": effect_null,
                "noise_null": noise_null,
                "reference": "random-init FFNs on the trained inputs" if degenerate else "random-init twin",
                "effect": effect_null if degenerate else float(r["mean_abs_trained_init"]),
                "noise": noise_null if degenerate else float(r["mean_abs_init_seeds"]),
            }
        )
    return pd.DataFrame(rows)


def learned_word(row: Mapping) -> str | None:
    """Claim 2a for one model (RULES["2a"]): "learned" if the effect exceeds CLAIM2_NOISE_FACTOR × the noise and
    CLAIM2_MIN_EFFECT, "not learned" otherwise; None where the reference was not measured."""
    effect, noise = row.get("effect", np.nan), row.get("noise", np.nan)
    if not (np.isfinite(effect) and np.isfinite(noise)):
        return None
    return "learned" if effect > CLAIM2_NOISE_FACTOR * noise and effect >= CLAIM2_MIN_EFFECT else "not learned"


def weights_word(row: Mapping) -> str | None:
    """Claim 2b for one model (RULES["2b"]) from its decomposition and its count of blocks standing out."""
    lo, hi = row.get("share_weights_minus_inputs_lo", np.nan), row.get("share_weights_minus_inputs_hi", np.nan)
    n, k = row.get("n_blocks", np.nan), row.get("n_standout", np.nan)
    if not all(np.isfinite(v) for v in (lo, hi, n, k)):
        return None
    many = k >= CLAIM2_STANDOUT_SHARE * n
    if lo > 0 and many:
        return "weights"
    if hi < 0 and not many:
        return "inputs"
    return "undecided"


def _by_share(claim: str, ev: list[dict], key: str, yes: str, reason: str) -> Verdict:
    words = [e[key] for e in ev if e[key] is not None]
    if not words:
        return Verdict(claim, NOT_TESTABLE, ev, reason=reason)
    n = sum(w == yes for w in words)
    return Verdict(claim, REPRODUCED if n == len(words) else PARTLY if n else NOT_REPRODUCED, ev)


# ---- notebook 08: the seeds experiment ----------------------------------------------------------------------------
def distance_word(row: Mapping, margin: float = CLAIM2_MIN_EFFECT) -> str:
    """One comparison of the seeds experiment (`linrec.analyses.seeds.compare`): "differ" if its 95 % lower bound
    exceeds the
    noise floor and the distance is at least `margin` (2a's minimum effect); "agree" if its upper bound is below
    `margin` (an equivalence test with that margin, whatever the floor); otherwise "inconclusive"."""
    d, lo, hi, floor = (float(row.get(k, np.nan)) for k in ("distance", "distance_lo", "distance_hi", "floor"))
    if not all(np.isfinite(v) for v in (d, lo, hi, floor)):
        return "inconclusive"
    if lo > floor and d >= margin:
        return "differ"
    if hi < margin:
        return "agree"
    return "inconclusive"


def _all(words: list[str], word: str) -> bool:
    return bool(words) and all(w == word for w in words)


def seeds_verdict(comparisons: pd.DataFrame | None) -> dict:
    """The seeds experiment's rule (RULES["seeds"]) on `linrec.analyses.seeds.comparisons`: each comparison's word
    (`distance_word`), then "learned" (every trained run differs from its own step 0), "not learned" (every one
    agrees with it) or "inconclusive"; after "learned", by the seed pairs and the GELU–SwiGLU pairs: "learned,
    individual to each run" (every seed pair differs), "learned, set by architecture and data" (every seed pair
    agrees, every variant pair differs), "learned, the same for both variants" (seed and variant pairs all agree) or
    "learned; seed to seed inconclusive" (SEEDS_RULE). `claim2a`: what that says of the paper's claim 2a ("learned, not
    architectural"): reproduced for individual or for the same across variants, partly for set by architecture,
    not reproduced for not learned, not testable otherwise. With each kind's words (`trained_words`, `seed_words`,
    `data_order_words`, `variant_words`: one per comparison, in order)."""
    if comparisons is None or comparisons.empty:
        return {"word": "not run", "claim2a": NOT_TESTABLE}
    t = comparisons.assign(outcome=[distance_word(r) for r in comparisons.to_dict("records")])
    words = {k: list(g["outcome"]) for k, g in t.groupby("kind", sort=False)}
    trained, seeds, variants = (words.get(k, []) for k in ("trained vs init", "seed", "variant"))
    if _all(trained, "differ"):
        if _all(seeds, "differ"):
            word, c2 = "learned, individual to each run", REPRODUCED
        elif _all(seeds, "agree") and _all(variants, "differ"):
            word, c2 = "learned, set by architecture and data", PARTLY
        elif _all(seeds, "agree") and _all(variants, "agree"):
            word, c2 = "learned, the same for both variants", REPRODUCED
        else:
            word, c2 = "learned; seed to seed inconclusive", NOT_TESTABLE
    elif _all(trained, "agree"):
        word, c2 = "not learned", NOT_REPRODUCED
    else:
        word, c2 = "inconclusive", NOT_TESTABLE
    out = {"word": word, "claim2a": c2, "margin": CLAIM2_MIN_EFFECT}
    for k, name in SEEDS_KINDS.items():
        out[f"{name}_words"] = ", ".join(words.get(k, []))
    return out


SEEDS_KINDS = {"trained vs init": "trained", "seed": "seed", "data order": "data_order", "variant": "variant"}


def combine_2a(offline: str, seeds: str) -> str:
    """Claim 2a's verdict from the offline models' rule and the seeds experiment's: the weaker of the two tested
    verdicts (reproduced > partly > not reproduced); one alone where the other is not testable."""
    order = [REPRODUCED, PARTLY, NOT_REPRODUCED]
    tested = [v for v in (offline, seeds) if v in order]
    return max(tested, key=order.index) if tested else NOT_TESTABLE


def claim2a(learned: pd.DataFrame | None) -> Verdict:
    if learned is None or learned.empty or "effect" not in learned:
        return Verdict("2a", NOT_TESTABLE, reason="notebook 07 not run")
    ev = [{**r, "outcome": learned_word(r)} for r in learned.to_dict("records")]
    return _by_share("2a", ev, "outcome", "learned", "no untrained reference with two or more draws was measured")


def claim2b(decomposition: pd.DataFrame | None) -> Verdict:
    if decomposition is None or decomposition.empty or "share_weights" not in decomposition:
        return Verdict("2b", NOT_TESTABLE, reason="notebook 07 not run")
    ev = [{**r, "outcome": weights_word(r)} for r in decomposition.to_dict("records")]
    return _by_share("2b", ev, "outcome", "weights", "no decomposition or null ensemble was measured")


CLAIMS = (claim1, claim2a, claim2b, claim3, claim4, claim5, claim6a, claim6b, claim7a, claim7b)
