"""Claim 5 (notebook 05): how alike one model's profiles over corpora are (`corpus_verdicts`), and the rule on the
profile's shift between each pair of corpora in level and shape, read as claim 2a reads a shift between two profiles
(`pair_word`, `model_word`, `verdict_5`; the convention in `linrec.claims.rules`).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from linrec.claims.rules import (
    CLAIM5_MARGIN,
    CORPUS_MODEL_RATIO,
    CORPUS_MODEL_RHO,
    CORPUS_SHAPED_RATIO,
    CORPUS_SHAPED_RHO,
    NOT_TESTABLE,
    Rule,
    Verdict,
    require,
    tally_every,
    thresholds,
)

# ---- notebook 05: corpora ------------------------------------------------------------------------------
# each rule's thresholds (its `Rule`'s; a verdict function reads them from its `t`)
T_5 = thresholds("Claim5Thresholds", CLAIM5_MARGIN=CLAIM5_MARGIN)


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
    pairs: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Per model: how alike its profiles over corpora are, and `corpus_word` of it; with `shapes` (one row per
    model of `linrec.analyses.recoverability.corpus_shape_level`) also the depth / level / shape split of R²_lin's
    variance with its intervals (context: claim 5 does not read it); with `pairs` (`corpora_agreement`, with its
    level and shape) the word claim 5 is judged by, `overlay_verdict` (`model_word`; "undecided" for a model without
    pairs)."""
    require(corpora, ["model", "corpus", "block", "r2_lin", "r2_lo", "r2_hi"], "corpus_verdicts")
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
        for c in LEVEL_EX_FIRST:  # a decomposition written before the level was split without position 0
            out[c] = out[c] if c in out else np.nan
    if pairs is not None:
        out["overlay_verdict"] = overlay_words(out["model"], pairs)
    return out


LEVEL_EX_FIRST = ("level_share_ex_first", "level_lo_ex_first", "level_hi_ex_first")
MODEL, CORPUS, UNDECIDED = "a property of the model", "shaped by the corpus", "undecided"  # a model's words
OVERLAY, APART = "overlay", "apart"  # a pair's words (and UNDECIDED)
_ORDER = (CORPUS, UNDECIDED, MODEL)  # lowest first: an alternative analysis can move a word left, never right


def pair_word(row, suffix: str = "", t=T_5) -> str:
    """One pair of corpora's profiles (a `corpora_agreement` row: `linrec.analyses.recoverability.corpus_pairs`), by
    claim 2a's margin (CLAIM5_MARGIN): "overlay" if the 95 % interval of the level (mean_i (a_i − b_i)) lies inside
    ±margin and the shape's (mean_i |(a_i − ā) − (b_i − b̄)|) below it; "apart" if either interval lies entirely
    beyond it (the level's at or above +margin or at or below −margin, the shape's at or above margin); "undecided"
    otherwise, and where an interval that could decide is missing (NaN). `suffix` "_ex_first": the same without the
    windows' first position."""
    m = t.CLAIM5_MARGIN
    l_lo, l_hi, s_lo, s_hi = (float(row.get(f"{k}{suffix}", np.nan)) for k in ("level_lo", "level_hi", "shape_lo",
                                                                                "shape_hi"))  # fmt: skip
    if (np.isfinite(l_lo) and l_lo >= m) or (np.isfinite(l_hi) and l_hi <= -m) or (np.isfinite(s_lo) and s_lo >= m):
        return APART
    if all(np.isfinite(v) for v in (l_lo, l_hi, s_hi)) and -m < l_lo and l_hi < m and s_hi < m:
        return OVERLAY
    return UNDECIDED


def measured_ex_first(pairs: pd.DataFrame) -> bool:
    """Whether `pairs` (one model's) were measured without position 0 too (captures that kept those sums)."""
    cols = [c for c in ("level_lo_ex_first", "level_hi_ex_first", "shape_lo_ex_first", "shape_hi_ex_first")
            if c in pairs]  # fmt: skip
    return bool(cols) and bool(np.isfinite(pairs[cols].to_numpy(dtype=float)).any())


def model_word(pairs: pd.DataFrame, t=T_5) -> dict[str, str]:
    """One model's word from its pairs of corpora (`pair_word`), on every position (`all`), without the windows'
    first (`ex_first`; "" where not measured) and the two together (`word`, claim 5's): "shaped by the corpus" if
    some pair is apart, "a property of the model" if every pair overlays, "undecided" otherwise (no pairs too).
    Position 0 removed is an alternative analysis: `word` is the lower of the two ("shaped by the corpus" below
    "undecided" below "a property of the model"), so it can lower the word, never raise it."""

    def one(words: list[str]) -> str:
        return CORPUS if APART in words else MODEL if words and all(w == OVERLAY for w in words) else UNDECIDED

    rows = pairs.to_dict("records")
    every = one([pair_word(r, t=t) for r in rows])
    ex = one([pair_word(r, "_ex_first", t) for r in rows]) if measured_ex_first(pairs) else ""
    word = min((w for w in (every, ex) if w), key=_ORDER.index)
    return {"word": word, "all": every, "ex_first": ex}


def overlay_words(models: Iterable[str], pairs: pd.DataFrame, t=T_5) -> list[str]:
    """`model_word`'s claim-5 word of each of `models` from `pairs` (`corpora_agreement`)."""
    return [model_word(pairs[pairs["model"] == m], t)["word"] for m in models]


PAIR_KEYS = ("corpus_a", "corpus_b", "level", "level_lo", "level_hi", "shape", "shape_lo", "shape_hi",
             "level_ex_first", "level_lo_ex_first", "level_hi_ex_first", "shape_ex_first", "shape_lo_ex_first",
             "shape_hi_ex_first")  # fmt: skip


def verdict_5(pairs: pd.DataFrame | None, verdicts: pd.DataFrame | None = None, *, t=T_5) -> Verdict:
    """Claim 5 per model by `model_word` on its pairs of corpora (`corpora_agreement`'s level and shape): each
    model's evidence holds its word (`overlay_verdict`, position 0 removed lowering it, never raising it), the words
    on every position and without position 0 (`overlay_verdict_all`, `overlay_verdict_ex_first`), its `pairs` (each
    with `outcome` and `outcome_ex_first`, `pair_word`) and, from `verdicts` (`corpora_verdict`) where given, the
    variance shares as context. Every model counts (`tally_every`: an undecided model makes a reproduced partly,
    every model undecided is not testable). `without_first`: the same tally on the words without position 0 (""
    where not measured)."""
    if pairs is None or pairs.empty:
        why = "notebook 05 not run" if verdicts is None else (
            "the profile's shift between corpora (corpora_agreement's level and shape) was not measured: rerun "
            "notebook 05")  # fmt: skip
        return Verdict(5, NOT_TESTABLE, reason=why)
    context = {} if verdicts is None else {r["model"]: r for r in verdicts.to_dict("records")}
    ev = []
    for model in dict.fromkeys(pairs["model"]):
        mine = pairs[pairs["model"] == model]
        w = model_word(mine, t)
        rows = [{**{k: r.get(k, np.nan) for k in PAIR_KEYS}, "outcome": pair_word(r, t=t),
                 "outcome_ex_first": pair_word(r, "_ex_first", t) if w["ex_first"] else ""}
                for r in mine.to_dict("records")]  # fmt: skip
        shares = {k: v for k, v in context.get(model, {}).items() if k not in ("model", "overlay_verdict")}
        ev.append({"model": model, **shares, "overlay_verdict": w["word"], "overlay_verdict_all": w["all"],
                   "overlay_verdict_ex_first": w["ex_first"], "pairs": rows})  # fmt: skip
    word = tally_every([e["overlay_verdict"] for e in ev], MODEL, UNDECIDED)
    firsts = [e["overlay_verdict_ex_first"] for e in ev]
    word1 = tally_every(firsts, MODEL, UNDECIDED) if all(firsts) else ""
    if word == NOT_TESTABLE:
        return Verdict(5, NOT_TESTABLE, ev, reason="no model is decided: some pair of corpora's shift straddles "
                       f"{t.CLAIM5_MARGIN} in level or shape and none lies beyond it", without_first=word1)  # fmt: skip
    return Verdict(5, word, ev, without_first=word1)


RULE_5 = Rule(
    5,
    ("corpora_agreement", "corpora_verdict"),
    T_5,
    verdict_5,
    says=lambda t: (
        "per model and pair of corpora, the shift of the R²_lin profile from one corpus to the other, measured as "
        "claim 2a measures a shift between two profiles: its level (the mean difference over blocks) and its shape "
        "(the mean |difference| of the profiles centred on their own means), each with a 95 % window-jackknife "
        f"interval; a pair overlays if the level's interval lies inside ±{t.CLAIM5_MARGIN} and the shape's below "
        f"{t.CLAIM5_MARGIN} (2a's minimum effect), and is apart if either lies entirely beyond it; a model is 'a "
        "property of the model' if every pair overlays, 'shaped by the corpus' if some pair is apart, else "
        "undecided, on every position and again without the windows' first position, which can lower the word, never "
        "raise it; reproduced only if every model is 'a property of the model', partly if some are and the others "
        "are shaped by the corpus or undecided, not reproduced if none is and some model is shaped by the corpus, not "
        "testable if every model is undecided (the variance shares of depth, level and shape are stated beside it)"
    ),
    would_change=lambda t: (
        f"a pair of corpora whose level interval lies at or beyond ±{t.CLAIM5_MARGIN}, or whose shape interval lies "
        f"at or above {t.CLAIM5_MARGIN}, with or without position 0, makes the model's profile shaped by the corpus; "
        f"every pair's level inside ±{t.CLAIM5_MARGIN} and shape below {t.CLAIM5_MARGIN}, with and without position "
        "0, makes it a property of the model"
    ),
)
