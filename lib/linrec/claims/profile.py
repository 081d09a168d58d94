"""Claim 1 (notebook 02): the rule (`verdict_1`, `RULE_1`) on the shape of each model's R²_lin profile over blocks, read
from the summary `linrec.analyses.profile.profile_summary` builds (its moves tested against a false-discovery rate,
`move_tests`), and the same rule on each disjoint sample of text (`claim1_holds`, which
`linrec.analyses.profile.replication_summary` is given).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from linrec.analyses.profile import MOVES_FDR, PAPER_HIGH, PAPER_LOW
from linrec.claims.rules import (
    CLAIM1_JUMP,
    CLAIM1_SPAN,
    CLAIM1_TURNS,
    NOT_TESTABLE,
    Rule,
    Verdict,
    tally,
    thresholds,
)

# ---- notebook 02: the R²_lin profile ---------------------------------------------------------------------
# each rule's thresholds (its `Rule`'s; a verdict function reads them from its `t`)
T_1 = thresholds(
    "Claim1Thresholds",
    CLAIM1_SPAN=CLAIM1_SPAN,
    CLAIM1_JUMP=CLAIM1_JUMP,
    CLAIM1_TURNS=CLAIM1_TURNS,
    MOVES_FDR=MOVES_FDR,
    PAPER_HIGH=PAPER_HIGH,
    PAPER_LOW=PAPER_LOW,
)


def _claim1_passes(span: float, jump: float, turns: float, t=T_1) -> bool:
    return bool(span >= t.CLAIM1_SPAN and jump >= t.CLAIM1_JUMP and turns >= t.CLAIM1_TURNS)


def claim1_counts(row: Mapping, sfx: str) -> tuple[float, float]:
    """The jump and turns claim 1 counts: those that survive the false-discovery rate where the moves were tested
    (`profile_summary` with `moves`), else those between disjoint intervals."""
    if np.isfinite(row.get(f"max_jump_fdr{sfx}", np.nan)):
        return row[f"max_jump_fdr{sfx}"], row[f"direction_changes_fdr{sfx}"]
    return row[f"max_jump_disjoint{sfx}"], row[f"direction_changes_disjoint{sfx}"]


def verdict_1(summary: pd.DataFrame | None, *, t=T_1) -> Verdict:
    """Claim 1's rule per model, on all positions and, where the summary has them, on every position but the
    windows' first (`without_first`)."""
    if summary is None or summary.empty:
        return Verdict(1, NOT_TESTABLE, reason="notebook 02 not run")
    ev, ok, ok1 = [], [], []
    for row in summary.to_dict("records"):
        span = row["r2_max"] - row["r2_min"]
        ok.append(_claim1_passes(span, *claim1_counts(row, ""), t))
        e = {**row, "span": span, "passes": ok[-1], "passes_ex_first": None}
        if np.isfinite(row.get("max_jump_disjoint_ex_first", np.nan)):
            span1 = row["r2_ex_first_max"] - row["r2_ex_first_min"]
            e["span_ex_first"] = span1
            e["passes_ex_first"] = _claim1_passes(span1, *claim1_counts(row, "_ex_first"), t)
            ok1.append(e["passes_ex_first"])
        ev.append(e)
    return Verdict(1, tally(ok), ev, without_first=tally(ok1) if len(ok1) == len(ok) else "")


RULE_1 = Rule(
    1,
    ("r2_lin_summary",),
    T_1,
    verdict_1,
    says=lambda t: (
        f"reproduced for a model if its profile spans ≥ {t.CLAIM1_SPAN}, some adjacent blocks with disjoint 95 % "
        f"intervals differ by ≥ {t.CLAIM1_JUMP}, and the profile changes direction ≥ {t.CLAIM1_TURNS} times counting "
        "only moves between blocks with disjoint intervals; where the moves were tested (paired window jackknife), "
        f"only those with a Benjamini–Hochberg q ≤ {t.MOVES_FDR:g} over the moves counted count; reproduced if every "
        "model passes, partly if some do"
    ),
    would_change=lambda t: (
        f"a model whose resolved jumps all stay below {t.CLAIM1_JUMP}, whose span is below {t.CLAIM1_SPAN}, or whose "
        f"profile turns fewer than {t.CLAIM1_TURNS} times, fails; the paper's own extremes (> {t.PAPER_HIGH} next to < "
        f"{t.PAPER_LOW}) would need a block far more linear than any measured here"
    ),
)


def claim1_holds(summary: pd.DataFrame) -> bool:
    """Whether claim 1's rule (`RULE_1`) passes the one model of `summary` (a `profile_summary` row): what
    `linrec.analyses.profile.replication_summary` asks of each sample's profile."""
    return bool(RULE_1(summary).evidence[0]["passes"])
