"""linrec.claims.profile (claim 1): the verdict at its thresholds, on the moves that survive the false-discovery rate,
with and without the first position, and on one sample's profile (`claim1_holds`); the numbers it reads are
tests/analyses/test_profile.py's."""

import pandas as pd
import pytest

from helpers import claim1_row as _claim1_row
from helpers import moves_profile as _moves_profile
from linrec.analyses.profile import move_tests, profile_summary
from linrec.claims.profile import claim1_holds, verdict_1
from linrec.claims.rules import (
    CLAIM1_JUMP,
    CLAIM1_SPAN,
    CLAIM1_TURNS,
    NOT_REPRODUCED,
    PARTLY,
    REPRODUCED,
)

EPS = 1e-9


# ---- claim 1: the profile --------------------------------------------------------------------------------


def test_claim1_counts_only_the_moves_that_survive_the_false_discovery_rate():
    for noise, passes in ((0.01, True), (0.4, False)):  # the same disjoint intervals; only the replicates differ
        t, loo = _moves_profile(noise)
        moves = pd.concat([move_tests(t, loo), move_tests(t, loo, "ex_first")], ignore_index=True)
        t = t.assign(cond_gram=1.0, first_var_share=0.0)
        s = profile_summary(t, moves)
        assert s.loc[0, "max_jump_disjoint"] == pytest.approx(0.6) and s.loc[0, "direction_changes_disjoint"] == 3
        assert verdict_1(profile_summary(t)).verdict == REPRODUCED  # untested moves: the disjoint counts
        v = verdict_1(s)
        assert v.verdict == (REPRODUCED if passes else NOT_REPRODUCED), noise
        assert v.evidence[0]["passes_ex_first"] is passes
        assert s.loc[0, "moves_tested"] == 8 and bool(s.loc[0, "moves_fdr"] == 8) is passes


def test_claim1_span_at_its_threshold():
    assert 0.75 - 0.25 == CLAIM1_SPAN  # exact in binary: the rule meets the threshold itself
    assert verdict_1(pd.DataFrame([_claim1_row(span=CLAIM1_SPAN, r2_min=0.25)])).verdict == REPRODUCED
    assert verdict_1(pd.DataFrame([_claim1_row(span=CLAIM1_SPAN - EPS, r2_min=0.25)])).verdict == NOT_REPRODUCED


@pytest.mark.parametrize(
    "kw, passes",
    [
        ({}, True),
        ({"span": CLAIM1_SPAN + EPS}, True),
        ({"span": CLAIM1_SPAN - EPS}, False),
        ({"jump": CLAIM1_JUMP}, True),
        ({"jump": CLAIM1_JUMP - EPS}, False),
        ({"turns": CLAIM1_TURNS}, True),
        ({"turns": CLAIM1_TURNS - 1}, False),
    ],
)
def test_claim1_thresholds(kw, passes):
    v = verdict_1(pd.DataFrame([_claim1_row(**kw)]))
    assert v.verdict == (REPRODUCED if passes else NOT_REPRODUCED)
    assert v.evidence[0]["passes"] is passes


def test_claim1_partly_when_one_model_fails():
    v = verdict_1(pd.DataFrame([_claim1_row(model="a"), _claim1_row(jump=0.1, model="b")]))
    assert v.verdict == PARTLY and [e["passes"] for e in v.evidence] == [True, False]


# ---- every position but the first: the same rules, stated beside each verdict ------------------------------------
def test_claim1_without_the_first_position():
    row = _claim1_row() | {"r2_ex_first_min": 0.3, "r2_ex_first_max": 0.3 + CLAIM1_SPAN,
                           "max_jump_disjoint_ex_first": CLAIM1_JUMP,
                           "direction_changes_disjoint_ex_first": 2}  # fmt: skip
    v = verdict_1(pd.DataFrame([row]))
    assert v.verdict == REPRODUCED and v.without_first == REPRODUCED and v.evidence[0]["passes_ex_first"]
    v = verdict_1(pd.DataFrame([row | {"max_jump_disjoint_ex_first": CLAIM1_JUMP - EPS}]))
    assert v.verdict == REPRODUCED and v.without_first == NOT_REPRODUCED  # the verdict needs position 0
    assert verdict_1(pd.DataFrame([_claim1_row()])).without_first == ""  # not measured: no word


def test_one_samples_profile_holds_by_claim_1s_rule():
    """`claim1_holds`, what `replication_summary` asks of each sample: the rule's own `passes` for the one model."""
    assert claim1_holds(pd.DataFrame([_claim1_row()])) is True
    assert claim1_holds(pd.DataFrame([_claim1_row(jump=CLAIM1_JUMP / 2)])) is False
