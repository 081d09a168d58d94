"""linrec.claims.rules: the tally of outcomes, the chance a model decides what is not there, no decided verdict
without evidence, a verdict's line in words per model, and a `Rule`: the tables it reads and its thresholds."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pandas as pd
import pytest

from linrec.base.errors import LinrecError
from linrec.claims.rules import (
    NOT_REPRODUCED,
    NOT_TESTABLE,
    PARTLY,
    REPRODUCED,
    Rule,
    Verdict,
    judge,
    tally,
    thresholds,
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


def _share_verdict(summary, *, t):
    """A trial claim over `pitfall_summary`: reproduced where the share of short blocks reaches `t.SHARE`."""
    if summary is None:
        return Verdict("x", NOT_TESTABLE, reason="notebook 03 not run")
    share = float(summary["n_short"].sum() / summary["n_blocks"].sum())
    return Verdict("x", REPRODUCED if share >= t.SHARE else NOT_REPRODUCED, [{"share": share}])


def test_a_rule_reads_its_tables_by_name_and_a_planted_threshold_leaves_the_original_as_it_was():
    """`Rule` declares the tables it reads and its thresholds (a frozen dataclass); `judge` takes the tables by name,
    and a rule built with another threshold (`planted`) decides and words with it, no module patched."""
    says = lambda t: f"reproduced at a share of at least {t.SHARE:.0%}"  # noqa: E731
    trial = Rule("x", ("pitfall_summary",), thresholds("TrialThresholds", SHARE=0.25), _share_verdict, says, says)
    table = pd.DataFrame([{"n_blocks": 10, "n_short": 3}])
    assert judge(trial, {"pitfall_summary": table, "probe": None}).verdict == REPRODUCED
    stricter = trial.planted(SHARE=0.5)
    assert judge(stricter, {"pitfall_summary": table}).verdict == NOT_REPRODUCED and "50%" in stricter.words
    assert trial.thresholds.SHARE == 0.25 and "25%" in trial.words and trial.names() == ("SHARE",)
    assert judge(trial, {}).verdict == NOT_TESTABLE  # a table not written: its notebook did not run
    with pytest.raises(FrozenInstanceError):
        trial.thresholds.SHARE = 0.9  # type: ignore[misc]
    with pytest.raises(LinrecError, match="frozen dataclass"):
        Rule("x", ("pitfall_summary",), {"SHARE": 0.25}, _share_verdict, says=str, would_change=str)


# ---- issue 92: "reproduced" needs every part, not most -------------------------------------------------------
@pytest.mark.parametrize("n", [2, 3, 4, 5, 7])
def test_reproduced_needs_every_part_not_most(n):
    """Every tally of the rules at all parts passing and at one short of all (most, for n ≥ 3): all → reproduced, all
    but one → partly, none → not reproduced; `tally_every` counts an undecided part as not passing, `tally_decided`
    leaves it out, `by_share` leaves out a part without a word. Planted: `all(passes)` → `sum(passes) > len(passes)
    / 2` in linrec.claims.rules.tally fails (n − 1 of n → reproduced); `n == len(words)` → `n >= len(words) - 1` (or
    `2 * n > len(words)`) in tally_every or by_share fails likewise."""
    from linrec.claims.rules import by_share, tally_decided, tally_every

    assert tally([True] * n) == REPRODUCED
    assert tally([True] * (n - 1) + [False]) == PARTLY
    assert tally([False] + [True] * (n - 1)) == PARTLY
    assert tally([False] * n) == NOT_REPRODUCED
    yes, no, und = "weights", "inputs", "undecided"
    assert tally_every([yes] * n, yes, und) == REPRODUCED
    assert tally_every([yes] * (n - 1) + [no], yes, und) == PARTLY
    assert tally_every([yes] * (n - 1) + [und], yes, und) == PARTLY  # every model counts, an undecided one too
    assert tally_every([no] * (n - 1) + [und], yes, und) == NOT_REPRODUCED
    assert tally_decided([yes] * (n - 1) + [und], yes, und) == REPRODUCED  # the undecided one left out
    assert tally_decided([yes] * (n - 1) + [no, und], yes, und) == PARTLY
    ev = [{"model": f"m{i}", "w": yes} for i in range(n)]
    assert by_share("x", ev, "w", yes, "none").verdict == REPRODUCED
    assert by_share("x", ev[:-1] + [{"model": "z", "w": no}], "w", yes, "none").verdict == PARTLY
    assert by_share("x", ev[:-1] + [{"model": "z", "w": None}], "w", yes, "none").verdict == REPRODUCED
    assert by_share("x", [{"model": "z", "w": None}], "w", yes, "none").verdict == NOT_TESTABLE
