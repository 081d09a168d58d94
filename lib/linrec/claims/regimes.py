"""Claim 4 (notebook 04): the rule (`verdict_4`, `RULE_4`) on each model's blocks counted by regime
(`linrec.analyses.spectrum.regime_summary`), the same rule on each disjoint sample of text (`claim4_holds`, which
`linrec.analyses.spectrum.regime_replication` is given); notebook 04's words beside them are
`linrec.outputs.findings`' ("regimes", "replication").
"""

from __future__ import annotations

import pandas as pd

# the regimes' thresholds: linrec.analyses.spectrum.regime applies them to each block, RULE_4's words name them
from linrec.analyses.spectrum import OUTLIER_RANK, REGIME_GAP, REGIME_R2, REGIME_RANK
from linrec.claims.rules import (
    NOT_REPRODUCED,
    NOT_TESTABLE,
    REPRODUCED,
    Rule,
    Verdict,
    thresholds,
)

# ---- notebook 04: regimes ------------------------------------------------------------------------------
# each rule's thresholds (its `Rule`'s; a verdict function reads them from its `t`)
T_4 = thresholds(
    "Claim4Thresholds", REGIME_R2=REGIME_R2, REGIME_GAP=REGIME_GAP, REGIME_RANK=REGIME_RANK, OUTLIER_RANK=OUTLIER_RANK
)


def verdict_4(summary: pd.DataFrame | None, *, t=T_4) -> Verdict:  # noqa: ARG001 (its thresholds act in the summary)
    """Both regimes exist over all models; `without_first` the same on the regimes without position 0 (`-1`
    counts: not measured)."""
    if summary is None or summary.empty:
        return Verdict(4, NOT_TESTABLE, reason="notebook 04 not run")
    ev = summary.to_dict("records")
    if not outlier_candidates(summary):
        return Verdict(4, NOT_TESTABLE, ev, reason=NO_CANDIDATE)
    ok = summary["n_broadly_linear"].sum() > 0 and summary["n_outlier_concentrated"].sum() > 0
    word1 = ""
    if "n_broadly_linear_ex_first" in summary and (summary["n_broadly_linear_ex_first"] >= 0).all():
        ok1 = summary["n_broadly_linear_ex_first"].sum() > 0 and summary["n_outlier_concentrated_ex_first"].sum() > 0
        word1 = REPRODUCED if ok1 else NOT_REPRODUCED
    return Verdict(4, REPRODUCED if ok else NOT_REPRODUCED, ev, without_first=word1)


# claim 4's precondition: the outlier-concentrated regime describes blocks whose output sits in a few (massive)
# features; where no block of any model has such a feature or is concentrated, "no outlier-concentrated block" is no
# test of the claim (issue 87: no zoo block has a massive feature)
NO_CANDIDATE = ("no block of any model has a massive output feature or a concentrated output (massive_blocks, "
                "outlier_blocks and concentrated_not_rank1_blocks all empty), so the outlier-concentrated regime has "
                "no block to describe; the claim's precondition is absent")  # fmt: skip


def outlier_candidates(summary: pd.DataFrame) -> bool:
    """Whether some model has a block the outlier-concentrated regime could describe: a block with a massive feature,
    or one concentrated in a few features (rank ≈ 1 or not). True for a table without these columns (written before
    they were: the precondition cannot be checked, so it does not gate)."""
    cols = [c for c in ("massive_blocks", "outlier_blocks", "concentrated_not_rank1_blocks") if c in summary]
    if len(cols) < 3:
        return True
    return bool(summary["n_outlier_concentrated"].sum() > 0) or any(
        str(v).strip() not in ("", "nan") for c in cols for v in summary[c]
    )


RULE_4 = Rule(
    4,
    ("spectrum_summary",),
    T_4,
    verdict_4,
    says=lambda t: (
        "reproduced if, over all models, blocks of both the broadly linear and the outlier-concentrated regime exist "
        f"(broadly linear: R²_lin ≥ {t.REGIME_R2}, not concentrated in a feature or the first token, and the effective "
        f"rank of the map's explained part ≥ {t.REGIME_RANK * 100:g} % of the output width; outlier-concentrated: "
        f"R²_lin ≥ {t.REGIME_R2}, per-feature median ≥ {t.REGIME_GAP} below it, the output concentrated in a few "
        f"features, and the explained part's effective rank < {t.OUTLIER_RANK:g}, the paper's 'rank ≈ 1'; "
        "linrec.analyses.spectrum.regime); not testable where no block of any model has a massive output feature "
        "or a concentrated output (the outlier regime's precondition), else not reproduced"
    ),
    would_change=lambda t: (
        "a broadly linear and an outlier-concentrated block (rank ≈ 1) both among the blocks with R²_lin ≥ "
        f"{t.REGIME_R2}, over all models together (the rule pools the models; each model's own counts are stated "
        "beside it)"
    ),
    zoo=("zoo_regimes",),
)


def claim4_holds(summary: pd.DataFrame) -> bool:
    """Whether claim 4's rule (`RULE_4`) holds over every model of `summary` (a `regime_summary` of one sample): what
    `linrec.analyses.spectrum.regime_replication` asks of each sample."""
    return RULE_4(summary).verdict == REPRODUCED
