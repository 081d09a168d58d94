"""Claim 5 (notebook 05): how alike one model's profiles over corpora are (`corpus_verdicts`), and the rule on the
profile's shape (`shape_word`, `claim5`).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from linrec.claims.rules import (
    CLAIM5_SHAPE,
    CORPUS_MODEL_RATIO,
    CORPUS_MODEL_RHO,
    CORPUS_SHAPED_RATIO,
    CORPUS_SHAPED_RHO,
    NOT_TESTABLE,
    Verdict,
    require,
    tally,
    tally_decided,
)


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
        word1 = tally_decided([e["shape_verdict_ex_first"] for e in ev], "a property of the model", "undecided")
    decided = [e["shape_verdict"] == "a property of the model" for e in ev if e["shape_verdict"] != "undecided"]
    if not decided:
        return Verdict(5, NOT_TESTABLE, ev, reason="every model's shape share straddles the threshold",
                       without_first=word1)  # fmt: skip
    return Verdict(5, tally(decided), ev, without_first=word1)
