"""Claims 2a and 2b (notebooks 07 and 08): the controls (random-init twins, Gaussian inputs, null ensembles; their
summaries are `linrec.analyses.controls`' and `linrec.analyses.decomposition`'s) and the seeds experiment; whether the
profile is learned (`verdict_2a`, `seeds_verdict`, `combine_2a`) and set by the weights rather than the inputs
(`verdict_2b`). Each claim's `Rule` sits beside its verdict
function (`RULE_2A`, `RULE_2B`); notebook 07's findings in words are `linrec.outputs.findings`'.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from linrec.analyses.controls import CLAIM2_DEGENERATE_GAP
from linrec.analyses.decomposition import CLAIM2_FDR, INTERVAL_2B
from linrec.claims.bands import CLAIM2B_MIN_BAND, band_word, bands_text, covered, lean_verdict
from linrec.claims.rules import (
    CLAIM2_MIN_EFFECT,
    CLAIM2_NOISE_FACTOR,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    PARTLY,
    REPRODUCED,
    SEEDS_LEVEL_MARGIN,
    SEEDS_SHAPE_MARGIN,
    Rule,
    Verdict,
    by_share,
    tally_every,
    thresholds,
)

# ---- notebook 07: controls -------------------------------------------------------------------------------
# each rule's thresholds (its `Rule`'s; a verdict function reads them from its `t`)
T_2A = thresholds(
    "Claim2aThresholds",
    CLAIM2_NOISE_FACTOR=CLAIM2_NOISE_FACTOR,
    CLAIM2_MIN_EFFECT=CLAIM2_MIN_EFFECT,
    CLAIM2_DEGENERATE_GAP=CLAIM2_DEGENERATE_GAP,
    SEEDS_SHAPE_MARGIN=SEEDS_SHAPE_MARGIN,
)
T_2B = thresholds("Claim2bThresholds", CLAIM2_FDR=CLAIM2_FDR, CLAIM2B_MIN_BAND=CLAIM2B_MIN_BAND)


def learned_word(row: Mapping, t=T_2A) -> str | None:
    """Claim 2a for one model (`RULE_2A`): "learned" if the effect exceeds CLAIM2_NOISE_FACTOR × the noise and
    CLAIM2_MIN_EFFECT, "not learned" otherwise; None where the reference was not measured."""
    effect, noise = row.get("effect", np.nan), row.get("noise", np.nan)
    if not (np.isfinite(effect) and np.isfinite(noise)):
        return None
    return "learned" if effect > t.CLAIM2_NOISE_FACTOR * noise and effect >= t.CLAIM2_MIN_EFFECT else "not learned"


# ---- notebook 08: the seeds experiment ----------------------------------------------------------------------------
FLOOR_OF = {"distance": "floor", "level": "level_floor", "shape": "shape_floor"}  # linrec.analyses.seeds.FLOORS


def distance_word(row: Mapping, margin: float = CLAIM2_MIN_EFFECT, part: str = "distance") -> str:
    """One part of one comparison of the seeds experiment (`linrec.analyses.seeds.compare`; `part` = "distance", the
    raw mean |ΔR²_lin|, "level" or "shape", the convention of `linrec.claims.rules`): "differ" if its 95 % interval
    clears its noise floor (lies above it, or for the signed level below minus it) and its size is at least `margin`
    (2a's minimum effect); "agree" if its interval lies inside ±`margin` (an equivalence test with that margin,
    whatever the floor); otherwise, or where a number is missing, "inconclusive"."""
    d, lo, hi, floor = (float(row.get(k, np.nan)) for k in (part, f"{part}_lo", f"{part}_hi", FLOOR_OF[part]))
    if not all(np.isfinite(v) for v in (d, lo, hi, floor)):
        return "inconclusive"
    if (lo > floor or hi < -floor) and abs(d) >= margin:
        return "differ"
    if -margin < lo and hi < margin:
        return "agree"
    return "inconclusive"


def comparison_words(table: pd.DataFrame) -> pd.DataFrame:
    """`table` (`linrec.analyses.seeds.comparisons`) with each row's words: `outcome` (raw distance), `level_outcome`,
    `shape_outcome` (`distance_word`, margins SEEDS_LEVEL_MARGIN and SEEDS_SHAPE_MARGIN; "not measured" where the
    part has no interval, as in a table refreshed from the stored profiles)."""
    rows = table.to_dict("records")

    def word(r: Mapping, margin: float, part: str) -> str:
        return distance_word(r, margin, part) if np.isfinite(r.get(f"{part}_lo", np.nan)) else "not measured"

    return table.assign(
        outcome=[distance_word(r) for r in rows],
        level_outcome=[word(r, SEEDS_LEVEL_MARGIN, "level") for r in rows],
        shape_outcome=[word(r, SEEDS_SHAPE_MARGIN, "shape") for r in rows],
    )


def _all(words: list[str], word: str) -> bool:
    return bool(words) and all(w == word for w in words)


def _measured(t: pd.DataFrame) -> bool:
    """Whether every comparison but trained vs init has its level and shape with intervals and floors."""
    cols = ["level", "level_lo", "level_hi", "level_floor", "shape", "shape_lo", "shape_hi", "shape_floor"]
    rest = t[t["kind"] != "trained vs init"]
    return all(c in t for c in cols) and bool(np.isfinite(rest[cols].to_numpy(dtype=float)).all())


FACTORS = {"seed": "init seed", "data order": "data order", "text": "training text"}  # what a run-to-run pair varies


def _what_changes(level: list[str], shape: list[str]) -> str:
    """What a kind of pair changes, from its level and shape words: "the shape", "the level and the shape", "the level,
    not the shape", "neither", or "" (inconclusive)."""
    if _all(shape, "differ"):
        return "the level and the shape" if _all(level, "differ") else "the shape"
    if _all(shape, "agree"):
        return "the level, not the shape" if _all(level, "differ") else "neither" if _all(level, "agree") else ""
    return ""


def seeds_verdict(comparisons: pd.DataFrame | None) -> dict:
    """The seeds experiment's rule (SEEDS_RULE) on `linrec.analyses.seeds.comparisons`, on the convention of
    `linrec.claims.rules`: each comparison's words (`comparison_words`); "learned" (every trained run's raw distance
    to its own step 0 differs), "not learned" (every one agrees) or "inconclusive". After "learned", on shape: "learned,
    individual to each run" (every init-seed pair differs in shape); where every init-seed pair agrees in level and
    shape, what GELU against SwiGLU changes: "learned; architecture sets the shape" (or "the level and the shape"),
    "learned; architecture sets the level, not the shape", "learned, the same for both variants"; each followed by what
    the other pairs varied (data order, and the training text where it changed) change; "learned; seed to seed
    inconclusive" or "learned; GELU against SwiGLU inconclusive" otherwise, and "learned; level and shape not measured
    apart" on a table without their intervals (written before them). `claim2a`: what that says of the paper's claim
    2a ("learned, not architectural"): reproduced for individual or the same for both variants, partly where
    architecture sets the shape or the level (the convention's level counts, as it does for claim 5), not reproduced
    for not learned, not testable otherwise. With
    each kind's words (`trained_words`, `seed_words`, `data_order_words`, `text_words`, `variant_words`: one per
    comparison, in order, "raw (level …, shape …)")."""
    if comparisons is None or comparisons.empty:
        return {"word": "not run", "claim2a": NOT_TESTABLE}
    t = comparison_words(comparisons)
    groups = {k: g for k, g in t.groupby("kind", sort=False)}

    def of(kind: str, col: str) -> list[str]:
        return list(groups[kind][col]) if kind in groups else []

    if _all(of("trained vs init", "outcome"), "differ"):
        seeds = _what_changes(of("seed", "level_outcome"), of("seed", "shape_outcome"))
        variants = _what_changes(of("variant", "level_outcome"), of("variant", "shape_outcome"))
        if not _measured(t):
            word, c2 = "learned; level and shape not measured apart (rerun notebook 08)", NOT_TESTABLE
        elif _all(of("seed", "shape_outcome"), "differ"):
            word, c2 = "learned, individual to each run", REPRODUCED
        elif seeds != "neither":
            word, c2 = (
                (f"learned; init seed changes {seeds}" if seeds else "learned; seed to seed inconclusive"),
                NOT_TESTABLE,
            )
        elif variants in ("the shape", "the level and the shape"):
            word, c2 = f"learned; architecture sets {variants}", PARTLY
        elif variants == "the level, not the shape":  # the convention's level counts, as in claim 5 (issue 64)
            word, c2 = f"learned; architecture sets {variants}", PARTLY
        elif variants == "neither":
            word, c2 = "learned, the same for both variants", REPRODUCED
        else:
            word, c2 = "learned; GELU against SwiGLU inconclusive", NOT_TESTABLE
        if _measured(t) and seeds == "neither":
            others = {k: _what_changes(of(k, "level_outcome"), of(k, "shape_outcome")) for k in ("data order", "text")
                      if k in groups}  # fmt: skip
            same = ["init seed"] + [FACTORS[k] for k, w in others.items() if w == "neither"]
            word += f"; {' and '.join(same)} change{'s' if len(same) == 1 else ''} neither"
            for k, w in others.items():
                if w != "neither":
                    word += f"; {FACTORS[k]} changes {w}" if w else f"; {FACTORS[k]} inconclusive"
    elif _all(of("trained vs init", "outcome"), "agree"):
        word, c2 = "not learned", NOT_REPRODUCED
    else:
        word, c2 = "inconclusive", NOT_TESTABLE
    out = {"word": word, "claim2a": c2, "margin": CLAIM2_MIN_EFFECT}
    for k, name in SEEDS_KINDS.items():
        out[f"{name}_words"] = ", ".join(
            f"{o} (level {lv}, shape {sh})"
            for o, lv, sh in zip(of(k, "outcome"), of(k, "level_outcome"), of(k, "shape_outcome"))
        )
    return out


SEEDS_KINDS = {"trained vs init": "trained", "seed": "seed", "data order": "data_order", "text": "text",
               "variant": "variant"}  # fmt: skip


def combine_2a(*verdicts: str) -> str:
    """Claim 2a's verdict from the offline models' rule, the seeds experiment's and the zoo's: the weakest of the
    tested verdicts (reproduced > partly > not reproduced); those not testable are left out."""
    order = [REPRODUCED, PARTLY, NOT_REPRODUCED]
    tested = [v for v in verdicts if v in order]
    return max(tested, key=order.index) if tested else NOT_TESTABLE


def verdict_2a(learned: pd.DataFrame | None, *, t=T_2A) -> Verdict:
    if learned is None or learned.empty or "effect" not in learned:
        return Verdict("2a", NOT_TESTABLE, reason="notebook 07 not run")
    ev = [{**r, "outcome": learned_word(r, t)} for r in learned.to_dict("records")]
    return by_share("2a", ev, "outcome", "learned", "no untrained reference with two or more draws was measured")


RULE_2A = Rule(
    "2a",
    ("controls_learned",),
    T_2A,
    verdict_2a,
    says=lambda t: (
        "per model: 'learned' if the trained profile differs from the untrained architecture by a mean |trained − "
        f"untrained| per block > {t.CLAIM2_NOISE_FACTOR:g}× the mean difference between two untrained draws and ≥ "
        f"{t.CLAIM2_MIN_EFFECT}; the untrained reference is the random-init twin (its own inputs), or, where the twin "
        f"is degenerate (its median train − held-out gap exceeds the trained model's by > {t.CLAIM2_DEGENERATE_GAP}), "
        "the random-init FFN ensemble on the trained inputs; reproduced if every model is 'learned', partly if some "
        "are, not reproduced if none is. Where the seeds experiment or the zoo ran (notebook 08), the verdict is the "
        "weakest of this and their rules' (SEEDS_RULE, ZOO_RULE)"
    ),
    would_change=lambda t: (
        f"an untrained reference within {t.CLAIM2_NOISE_FACTOR:g}× of the noise between untrained draws, or a "
        f"trained-untrained difference under {t.CLAIM2_MIN_EFFECT}, makes a model 'not learned'; in the seeds "
        "experiment, two init seeds whose shape distance (profiles centred) clears both its noise floor and "
        f"{t.SEEDS_SHAPE_MARGIN} make the profile individual to a run (reproduced); seeds alike in level and shape "
        "while GELU and SwiGLU differ in shape or in level make it architectural in part (partly: the level counts, "
        "as for claim 5); in the zoo, a layout whose component of the shape is shown, largest and moves it by ≥ "
        f"{t.CLAIM2_MIN_EFFECT} makes it architectural (not reproduced), and one that sets the level makes a "
        "reproduced partly; one shape for every layout, text and seed is reproduced only where every run's profile "
        "moved from its initialisation and no layout sets the level"
    ),
    joins=("linrec.claims.learned.seeds_verdict", "linrec.claims.zoo.zoo_verdict", "linrec.claims.learned.combine_2a"),
    zoo=("zoo_components", "training_comparisons", "zoo_runs"),
)


def verdict_2b(decomposition: pd.DataFrame | None, bands: pd.DataFrame | None, *, t=T_2B) -> Verdict:
    """Claim 2b (`RULE_2B`) over every band of the cross matrix (`linrec.claims.bands`): per model "weights" or
    "inputs" where that sign holds at every band ≥ CLAIM2B_MIN_BAND (`band_word`), "undecided" otherwise; reproduced
    only if every model whose matrix reaches that band is "weights", partly if some are and others are "inputs" or
    undecided, not reproduced if some are "inputs" and none "weights", not testable if none is decided. Each model's
    evidence is its `controls_decomposition` row (the widest band) with its `outcome`, the deciding bands in words
    (`bands`) and the bands its matrix covers."""
    if decomposition is None or decomposition.empty or "share_weights" not in decomposition:
        return Verdict("2b", NOT_TESTABLE, reason="notebook 07 not run")
    if bands is None or bands.empty:
        why = "its per-band table (controls_decomposition_bands) is not written"
        return Verdict("2b", NOT_TESTABLE, reason=f"{why}; run python -m linrec.outputs.refresh RESULTS_DIR, or rerun "
                       "notebook 07")  # fmt: skip
    ev = []
    for r in decomposition.to_dict("records"):
        b = bands[bands["model"] == r["model"]]
        ev.append({**r, "outcome": band_word(b, t.CLAIM2B_MIN_BAND) if len(b) else None, "bands_covered": covered(b),
                   "bands": bands_text(b, t.CLAIM2B_MIN_BAND)})  # fmt: skip
    words = [e["outcome"] for e in ev if e["outcome"] is not None]
    if not words:
        return Verdict("2b", NOT_TESTABLE, ev, reason=f"no model's cross matrix reaches band {t.CLAIM2B_MIN_BAND}; "
                       f"set cross_band ≥ {t.CLAIM2B_MIN_BAND} and rerun notebook 07")  # fmt: skip
    word = tally_every(words, yes="weights", undecided="undecided")  # as claim 5: every model counts
    if word != NOT_TESTABLE:
        return Verdict("2b", word, ev)
    word, why = lean_verdict(ev, bands, t.CLAIM2B_MIN_BAND)  # each model's word at most bands, or none
    return Verdict("2b", word, ev, reason=why)


RULE_2B = Rule(
    "2b",
    ("controls_decomposition", "controls_decomposition_bands"),
    T_2B,
    verdict_2b,
    says=lambda t: (
        "per model, with each block's pre-MLP norm gain folded into its FFN: the additive decomposition R²(FFN i, "
        "inputs j) ≈ μ + a_i + b_j of the cross matrix, and the weights' unique share minus the inputs' (what only a, "
        "or only b, explains), on the entries |i − j| ≤ k for every band k the matrix holds; its interval "
        f"({INTERVAL_2B}) is the point ± t (blocks − 1) × √(se² of a leave-one-block-out jackknife + se² of the "
        "held-out windows' bootstrap). A model is 'weights' if the interval lies above 0 at every band ≥ "
        f"{t.CLAIM2B_MIN_BAND}, 'inputs' if below 0 at every one, 'undecided' otherwise. The null "
        f"ensembles (random-init and shuffled FFNs on the block's inputs, one-sided, Benjamini–Hochberg q < "
        f"{t.CLAIM2_FDR}) are reported beside it and do not decide. Reproduced only if every model is 'weights', "
        "partly if some are and the others 'inputs' or undecided, not reproduced if some are 'inputs' and none "
        "'weights'. Where no model is decided at every band, each model's word at most bands is read instead "
        f"(above 0 at more than half of the bands ≥ {t.CLAIM2B_MIN_BAND} and below 0 at none: 'weights', the vetoing "
        "bands named; likewise 'inputs'), by the same tally but at most partly; not testable if none is decided that "
        "way either"
    ),
    would_change=lambda t: (
        f"an interval of the weights' minus the inputs' share that lies above 0 at every band ≥ {t.CLAIM2B_MIN_BAND} "
        "makes a model 'weights', below 0 at every one 'inputs'; one band whose interval includes 0, or whose sign "
        "differs, leaves it undecided (where every model is left so, its word at most bands, vetoing bands named, "
        "decides at most partly); more blocks, or a matrix measured to wider bands, are what narrows it"
    ),
)
