"""Claim 4 (notebook 04): the rule (`verdict_4`, `RULE_4`) on each model's blocks counted by regime
(`linrec.analyses.spectrum.regime_summary`), the same rule on each disjoint sample of text (`claim4_holds`, which
`linrec.analyses.spectrum.regime_replication` is given); what a teacher says of them (`regime_story`,
`replication_story`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# the regimes' thresholds: linrec.analyses.spectrum.regime applies them to each block, RULE_4's words name them
from linrec.analyses.spectrum import OUTLIER_RANK, REGIME_GAP, REGIME_R2, REGIME_RANK, concentrated
from linrec.base.tables import blocks
from linrec.claims.rules import (
    NOT_REPRODUCED,
    NOT_TESTABLE,
    REPRODUCED,
    Rule,
    Verdict,
    require,
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


def replication_story(replication: pd.DataFrame) -> list[str]:
    """One line per model of `regime_replication`'s table (this run's or a results file's): over which samples, its
    broadly linear and outlier-concentrated counts, the outlier blocks on each sample and on every one, and claim 4's
    replication word."""
    require(replication, ["model", "samples", "n_broadly_linear", "n_outlier_concentrated", "outlier_blocks",
                          "outlier_blocks_every_sample", "replication"], "replication_story")  # fmt: skip
    return [
        f"{r['model']}: over samples {r['samples']}, broadly linear {r['n_broadly_linear']}, outlier-concentrated "
        f"{r['n_outlier_concentrated']} (blocks {r['outlier_blocks']}; on every sample: "
        f"{r['outlier_blocks_every_sample'] or 'none'}); claim 4 {r['replication']}."
        for r in replication.to_dict("records")
    ]


def regime_story(spectrum: pd.DataFrame) -> list[str]:
    """What a teacher says about claim 4 from the per-block table, one line per model, every number computed: how
    many blocks are in each of the paper's two regimes and how many in neither (and why), the outlier-concentrated
    blocks the verdict rests on with their explained part's effective rank, and the blocks concentrated in a few
    features whose explained part is not rank ≈ 1 (with that rank's range)."""

    require(spectrum, ["model", "block", "regime", "r2_lin", "r2_feature_median", "top1_var_share", "eff_rank_out",
                       "d_out", "eff_rank_explained"], "regime_story")  # fmt: skip
    lines = []
    for model, t in spectrum.groupby("model", sort=False):
        n = len(t)
        count = t["regime"].value_counts()
        linear, outlier = int(count.get("broadly linear", 0)), int(count.get("outlier-concentrated", 0))
        others = [
            f"{int(count[r])} {r}" for r in ("nonlinear", "first-token-concentrated", "unclassified") if r in count
        ]
        neither = n - linear - outlier
        line = (f"{model}: of {n} blocks, {linear} broadly linear and {outlier} outlier-concentrated (the paper's two "
                f"regimes); {neither} ({neither / n:.0%}) in neither: {', '.join(others) or 'none'}.")  # fmt: skip
        rests = t[t["regime"] == "outlier-concentrated"]
        if len(rests):
            named = ", ".join(f"block {r.block} (explained part's effective rank {r.eff_rank_explained:.1f})"
                              for r in rests.itertuples())  # fmt: skip
            line += f" Its outlier-concentrated side rests on {named}."
        conc = np.array([concentrated(r.r2_lin, r.r2_feature_median, r.top1_var_share, r.eff_rank_out, r.d_out)
                         for r in t.itertuples()], dtype=bool) & (t["regime"] == "unclassified").to_numpy()  # fmt: skip
        if conc.any():
            ranks = t.loc[conc, "eff_rank_explained"]
            listed = ", ".join(blocks(t, conc).split())
            span = f"{ranks.min():.1f}" if len(ranks) == 1 else f"{ranks.min():.1f}–{ranks.max():.1f}"
            which = "block" if len(ranks) == 1 else "blocks"
            line += f" Concentrated in a few features but not rank ≈ 1: {which} {listed} (explained part's "
            line += f"effective rank {span})."
        lines.append(line)
    return lines
