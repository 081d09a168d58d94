"""linrec.claims.routing: the anchor rules, each on both sides of each threshold and reaching each of its outcomes on
planted tables (the routing summary's numbers are tests/analyses/test_routing.py's)."""

import numpy as np
import pandas as pd
import pytest

from linrec.analyses.uncertainty import EQUIVALENCE_MARGIN
from linrec.claims.routing import (
    AUC_MARGIN,
    CONTEXT,
    COSTS,
    HEAL_BUDGET,
    HEALED,
    TOKEN,
    UNDECIDED,
    anchor_table,
    heal_outcome,
    heal_table,
    need_outcome,
    split_outcome,
)
from linrec.claims.rules import NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED

EPS = 1e-9


def test_the_need_rule_reaches_each_outcome_at_its_thresholds():
    m = EQUIVALENCE_MARGIN
    assert need_outcome(-0.2, 0.25, -m + EPS, m - EPS) == CONTEXT  # 90 % interval just inside ±0.3
    assert need_outcome(0.01, 0.5, 0.02, m + EPS) == TOKEN  # not inside, and the 95 % interval excludes 0
    assert need_outcome(-0.01, 0.5, 0.02, m + EPS) == UNDECIDED  # neither
    assert need_outcome(0.1, 0.25, 0.12, m - EPS) == CONTEXT  # shown nonzero but smaller than the margin
    assert need_outcome(np.nan, 0.1, 0.0, 0.1) == UNDECIDED


def _gate(full_minus_lo, full_minus_hi90):
    return {"full_minus_lo": full_minus_lo, "full_minus_hi90": full_minus_hi90}


def test_the_split_rule_reaches_each_outcome_at_its_thresholds():
    a = AUC_MARGIN
    matches, short, between = _gate(-0.05, a - EPS), _gate(a + EPS, 0.3), _gate(0.0, a + EPS)
    assert split_outcome(matches, short) == CONTEXT
    assert split_outcome(matches, matches) == TOKEN  # the token gate matches the whole too: identity suffices
    assert split_outcome(short, short) == TOKEN  # the context gate falls short
    assert split_outcome(matches, between) == UNDECIDED  # the token gate neither matches nor falls short
    assert split_outcome(between, short) == UNDECIDED
    assert split_outcome(_gate(-0.05, a), short) == UNDECIDED  # at the margin is not inside it
    assert split_outcome(_gate(np.nan, 0.0), short) == UNDECIDED


def test_the_heal_rule_reaches_each_outcome_at_its_thresholds():
    budget = HEAL_BUDGET * 20.0
    assert heal_outcome(-0.1, budget, 20.0) == HEALED
    assert heal_outcome(-0.1, budget + EPS, 20.0) == UNDECIDED
    assert heal_outcome(budget + EPS, 1.0, 20.0) == COSTS
    assert heal_outcome(budget, 1.0, 20.0) == UNDECIDED
    assert heal_outcome(np.nan, 1.0, 20.0) == UNDECIDED
    t = heal_table(pd.DataFrame({"model": "m", "mode": "all", "k": [0, 1, 2], "delta_before": [0.0, 2.0, -1.0],
                                 "delta_after": [0.0, 0.5, 0.3], "delta_after_lo": [0.0, -0.1, 0.25],
                                 "delta_after_hi": [0.0, 0.1, 0.4], "ppl_control": 20.0}))  # fmt: skip
    assert t["outcome"].tolist() == ["", HEALED, COSTS]
    assert np.isnan(t["healed_share"].iloc[0]) and t["healed_share"].iloc[1] == pytest.approx(0.75)
    assert np.isnan(t["healed_share"].iloc[2])  # no zero-shot cost to heal


def _identity(rows):
    return pd.DataFrame([{"model": m, "block": b, "r_need": r, "r_need_lo": lo, "r_need_hi": hi, "r_need_lo90": lo90,
                          "r_need_hi90": hi90, "lookup_r2": 0.0, "r": 0.8}
                         for m, b, r, lo, hi, lo90, hi90 in rows])  # fmt: skip


def _split(model, blocks):
    rows = []
    for b, (ctx, tok) in enumerate(blocks):
        for part, g in (("full", _gate(0.0, 0.0)), ("context", ctx), ("token", tok)):
            rows.append({"model": model, "block": b, "part": part, "auc": 0.7, **g})
    return pd.DataFrame(rows)


def test_the_anchor_verdicts_tally_the_decided_pairs_and_blocks_per_model():
    """Each verdict on a planted table: every decided pair 'context' (reproduced), some (partly), none (not
    reproduced), none decided (not testable); the same for the gates, per model."""
    near0, above, wide = (0.0, -0.1, 0.1, -0.08, 0.08), (0.6, 0.4, 0.8, 0.45, 0.75), (0.1, -0.4, 0.6, -0.3, 0.5)
    identity = _identity([("all", 0, *near0), ("all", 1, *near0), ("all", 2, *wide),
                          ("some", 0, *near0), ("some", 1, *above),
                          ("none", 0, *above), ("undecided", 0, *wide)])  # fmt: skip
    a = AUC_MARGIN
    m, s, b = _gate(-0.05, a / 2), _gate(a * 2, 0.3), _gate(0.0, a * 2)
    split = pd.concat([_split("all", [(m, s), (m, s)]), _split("some", [(m, s), (m, m)]),
                       _split("none", [(s, s)]), _split("undecided", [(b, b)])])  # fmt: skip
    t = anchor_table(identity, split).set_index("model")
    assert t["need_verdict"].to_dict() == {"all": REPRODUCED, "some": PARTLY, "none": NOT_REPRODUCED,
                                           "undecided": NOT_TESTABLE}  # fmt: skip
    assert t["split_verdict"].to_dict() == {"all": REPRODUCED, "some": PARTLY, "none": NOT_REPRODUCED,
                                            "undecided": NOT_TESTABLE}  # fmt: skip
    assert t.loc["all", "need_pairs"] == 3 and t.loc["all", "need_context"] == 2 and t.loc["some", "need_token"] == 1
    assert t.loc["all", "need_r_median"] == pytest.approx(0.0) and t.loc["all", "need_r_max"] == pytest.approx(0.1)
    assert t.loc["some", "split_blocks"] == 2 and t.loc["some", "split_token"] == 1
    only = anchor_table(None, split)
    assert (only["need_verdict"] == NOT_TESTABLE).all() and only["need_pairs"].eq(0).all()
