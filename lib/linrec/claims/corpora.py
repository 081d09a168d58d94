"""Claim 5 (notebook 05): how alike one model's profiles over corpora are (`corpus_verdicts`), and the rule on the
profile's shape and level (`overlay_word`, `verdict_5`; the convention in `linrec.claims.rules`).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from linrec.claims.rules import (
    CLAIM5_LEVEL,
    CLAIM5_SHAPE,
    CORPUS_MODEL_RATIO,
    CORPUS_MODEL_RHO,
    CORPUS_SHAPED_RATIO,
    CORPUS_SHAPED_RHO,
    NOT_TESTABLE,
    Rule,
    Verdict,
    require,
    tally,
    tally_every,
    thresholds,
)

# ---- notebook 05: corpora ------------------------------------------------------------------------------
# each rule's thresholds (its `Rule`'s; a verdict function reads them from its `t`)
T_5 = thresholds("Claim5Thresholds", CLAIM5_SHAPE=CLAIM5_SHAPE, CLAIM5_LEVEL=CLAIM5_LEVEL)


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
    intervals and `overlay_verdict`, the word claim 5 is judged by (`overlay_word`)."""
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
        out["overlay_verdict"] = [overlay_word(r) for r in out.to_dict("records")]
    return out


LEVEL_EX_FIRST = ("level_share_ex_first", "level_lo_ex_first", "level_hi_ex_first")


def overlay_word(row, suffix: str = "", t=T_5) -> str:
    """Claim 5 on the convention of `linrec.claims.rules` (shape and level): "a property of the model" if the
    intervals of the shape share (`shape_lo`, `shape_hi` + `suffix`) and of the level share (`level_lo`, `level_hi`)
    both lie below their thresholds (CLAIM5_SHAPE, CLAIM5_LEVEL); "shaped by the corpus" if either lies at or above
    its threshold; "undecided" otherwise, and where an interval that could decide is missing (NaN)."""
    s_lo, s_hi, l_lo, l_hi = (float(row.get(f"{k}{suffix}", np.nan)) for k in ("shape_lo", "shape_hi", "level_lo",
                                                                                "level_hi"))  # fmt: skip
    if (np.isfinite(s_lo) and s_lo >= t.CLAIM5_SHAPE) or (np.isfinite(l_lo) and l_lo >= t.CLAIM5_LEVEL):
        return "shaped by the corpus"
    if all(np.isfinite(v) for v in (s_hi, l_hi)) and s_hi < t.CLAIM5_SHAPE and l_hi < t.CLAIM5_LEVEL:
        return "a property of the model"
    return "undecided"


def verdict_5(verdicts: pd.DataFrame | None, *, t=T_5) -> Verdict:
    """Per model, `overlay_word` of the shape and level shares (notebook 05's `corpora_verdict`, columns shape_lo/hi
    and level_lo/hi), every model counted (`tally_every`: an undecided model makes a reproduced partly); a table
    without the decomposition is judged by the older correlation rule (`corpus_word`). Without the windows' first
    position, the same on the `_ex_first` shares."""
    if verdicts is None or verdicts.empty:
        return Verdict(5, NOT_TESTABLE, reason="notebook 05 not run")
    if "shape_hi" not in verdicts:
        return Verdict(5, tally(verdicts["verdict"] == "a property of the model"), verdicts.to_dict("records"))
    ev = [{**r, "overlay_verdict": overlay_word(r, t=t)} for r in verdicts.to_dict("records")]
    word1 = ""
    if "shape_hi_ex_first" in verdicts and np.isfinite(verdicts["shape_hi_ex_first"]).all():
        for e in ev:
            e["overlay_verdict_ex_first"] = overlay_word(e, "_ex_first", t)
        word1 = tally_every([e["overlay_verdict_ex_first"] for e in ev], "a property of the model", "undecided")
    word = tally_every([e["overlay_verdict"] for e in ev], "a property of the model", "undecided")
    if word == NOT_TESTABLE:
        return Verdict(5, NOT_TESTABLE, ev, reason="every model's shape or level share straddles its threshold",
                       without_first=word1)  # fmt: skip
    return Verdict(5, word, ev, without_first=word1)


RULE_5 = Rule(
    5,
    ("corpora_verdict",),
    T_5,
    verdict_5,
    says=lambda t: (
        "per model, R²_lin over blocks × corpora split into depth, level (a corpus shifts the whole profile) and "
        "shape (the block × corpus interaction); the profiles overlay only if both are small: 'a property of the "
        "model' if the 95 % window-jackknife intervals of the shape share and of the level share lie below "
        f"{t.CLAIM5_SHAPE} and {t.CLAIM5_LEVEL}, 'shaped by the corpus' if either lies at or above its threshold, else "
        "undecided; reproduced only if every model is 'a property of the model', partly if some are and the others "
        "are shaped by the corpus or undecided, not reproduced if none is and some model is shaped by the corpus, not "
        "testable if every model is undecided"
    ),
    would_change=lambda t: (
        f"a shape (block × corpus) share whose interval lies at or above {t.CLAIM5_SHAPE}, or a level (corpus) share "
        f"at or above {t.CLAIM5_LEVEL}, makes the profile shaped by the corpus; both intervals below make it overlay "
        "(a property of the model)"
    ),
)
