"""linrec.claims.rules: the tally of outcomes, the chance a model decides what is not there, no decided verdict
without evidence, and a verdict's line in words per model."""

from __future__ import annotations

import pytest

from linrec.claims.rules import (
    NOT_REPRODUCED,
    NOT_TESTABLE,
    PARTLY,
    REPRODUCED,
    Verdict,
    tally,
)


# ---- the tally and the verdict words ------------------------------------------------------------------
@pytest.mark.parametrize(
    "passes, word",
    [([True, True], REPRODUCED), ([True, False], PARTLY), ([False, False], NOT_REPRODUCED), ([], NOT_TESTABLE)],
)
def test_tally_covers_every_branch(passes, word):
    assert tally(passes) == word


@pytest.mark.parametrize("m, need", [(1, 1), (2, 2), (3, 2), (7, 2), (8, 3), (12, 3), (16, 3), (17, 4)])
def test_beyond_chance_is_the_binomial_tail_at_five_percent(m, need):
    from scipy.stats import binom

    from linrec.claims.rules import beyond_chance

    assert beyond_chance(m) == need
    assert binom.sf(need - 1, m, 0.05) <= 0.05  # need models: rarer than 5 % by chance
    assert need == 1 or binom.sf(need - 2, m, 0.05) > 0.05  # one fewer is not


def test_a_decided_verdict_needs_evidence():
    v = Verdict("6a", REPRODUCED, [])
    assert v.verdict == NOT_TESTABLE and "no evidence" in v.reason
    assert Verdict("6a", REPRODUCED, [{"model": "m"}]).verdict == REPRODUCED
    with pytest.raises(Exception, match="unknown verdict"):
        Verdict("6a", "probably", [{"model": "m"}])


def test_a_verdict_line_names_each_models_outcome_in_words():
    from linrec.claims.rules import NOT_TESTABLE, Verdict

    v = Verdict(3, NOT_TESTABLE, [{"model": "a", "passes": True}, {"model": "b", "passes": None},
                                  {"model": "c", "passes": False}, {"model": "all", "passes": None}])  # fmt: skip
    assert v.by_model(exclude="all") == "a: holds · b: not testable · c: fails"
    v7 = Verdict("7b", NOT_TESTABLE, [{"model": "a", "mechanism": "conditioning", "dose_outcome": "rise"}])
    assert v7.by_model("mechanism", "dose_outcome") == "a: conditioning, rise"
