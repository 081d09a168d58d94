"""linrec.claims.swap (claims 6a and 6b): each verdict at its thresholds, judged only on models with screening and
held-out rows, the best predictor named after Holm, and the findings in words; the screen's own numbers are
tests/analyses/test_swap_summary.py's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from helpers import DEFAULT
from helpers import predictors as _pred
from helpers import screen_values as _values
from helpers import swap_rows as _swap
from linrec.analyses.swap_summary import CLAIM6_BUDGET
from linrec.analyses.uncertainty import EQUIVALENCE_MARGIN, INCONCLUSIVE, POOLED, holm
from linrec.base.tables import load_table
from linrec.claims.rules import (
    NOT_REPRODUCED,
    NOT_TESTABLE,
    PARTLY,
    REPRODUCED,
    judge,
)
from linrec.claims.swap import (
    FLAGS,
    NOT_USEFUL,
    RULE_6B,
    best_predictors,
    flag_outcome,
    own_words,
    verdict_6a,
    verdict_6b,
)

EPS = 1e-9
M = EQUIVALENCE_MARGIN


# ---- claim 6: the swap ---------------------------------------------------------------------------------------


def test_claim6a_branches_at_the_budget():
    b = CLAIM6_BUDGET
    at = lambda hi, lo, model="m": _swap([(hi + lo) / 2, 9.0], [0.5, 0.5], model).assign(  # noqa: E731
        delta_lo=[lo, 8.9], delta_hi=[hi, 9.1]
    )
    vals = lambda model="m": _values([0.1, 5.0], model)  # noqa: E731  the screening windows pick block 0
    assert verdict_6a(at(b, 0.0), vals()).verdict == REPRODUCED  # interval's top exactly at the budget: holds
    v = verdict_6a(at(b + EPS, 0.0), vals())
    assert v.verdict == NOT_TESTABLE and v.evidence[0]["outcome"] == "undecided"
    assert verdict_6a(at(3.0, b + EPS), vals()).verdict == NOT_REPRODUCED  # interval above the budget
    assert verdict_6a(at(3.0, b), vals()).evidence[0]["outcome"] == "undecided"  # lower end at the budget
    two = pd.concat([at(0.5, 0.1, "a"), at(3.0, 2.0, "b")])
    assert verdict_6a(two, pd.concat([vals("a"), vals("b")])).verdict == PARTLY
    # the block is the screening choice, not the held-out best: block 1 is cheap held out but not chosen
    swap = _swap([5.0, 0.2], [0.5, 0.5])
    e = verdict_6a(swap, _values([0.1, 3.0])).evidence[0]
    assert e["chosen_block"] == 0 and e["outcome"] == "fails" and e["best_heldout_block"] == 1
    assert e["n_within_budget"] == 1 and e["ffn_over_linear"] == 10.0


def test_claim6a_own_skew_check_at_its_threshold_on_the_deciding_end():
    """A decision stands only if its deciding end misses at most CLAIM6_OWN_MISS of the chosen swap's own-window
    resamples (`swap_skew`): "holds" reads the upper end's misses (own_miss_below), "fails" the lower end's; at the
    threshold it stands, just above it the model is undecided; the other end's misses do not matter; a run without
    the table (or without the swap's row) is judged unchecked, and says so. Planted: the check ignored (every
    decision kept) fails the second assert."""
    from linrec.claims.rules import CLAIM6_OWN_MISS
    from linrec.claims.swap import CHECKED, UNCHECKED

    m = CLAIM6_OWN_MISS
    swap = lambda lo, hi: _swap([(lo + hi) / 2, 9.0], [0.5, 0.5]).assign(delta_lo=[lo, 8.9], delta_hi=[hi, 9.1])  # noqa: E731
    skew = lambda below, above, s="0": pd.DataFrame(  # noqa: E731
        {"model": ["m"], "swap": [s], "own_cover": [1 - below - above], "own_miss_below": [below],
         "own_miss_above": [above]})  # fmt: skip
    vals = _values([0.1, 5.0])
    holds, fails = swap(-0.5, 0.5), swap(2.0, 3.0)
    v = verdict_6a(holds, vals, skew(m, 0.5))
    assert v.verdict == REPRODUCED and v.evidence[0]["interval"] == CHECKED and v.evidence[0]["own_miss_below"] == m
    v = verdict_6a(holds, vals, skew(m + EPS, 0.0))
    assert v.verdict == NOT_TESTABLE and v.evidence[0]["outcome"] == "undecided"
    assert verdict_6a(fails, vals, skew(0.5, m)).verdict == NOT_REPRODUCED
    assert verdict_6a(fails, vals, skew(0.0, m + EPS)).evidence[0]["outcome"] == "undecided"
    for table in (None, skew(0.5, 0.5, s="1")):  # no windows stored, or none for the chosen block: unchecked
        e = verdict_6a(holds, vals, table).evidence[0]
        assert e["outcome"] == "holds" and e["interval"] == UNCHECKED and np.isnan(e["own_miss_below"])
    assert "misses 3.5% of resamples" in own_words(verdict_6a(holds, vals, skew(m, 0.0)).evidence[0])


def test_claim6b_needs_both_correlations_shown_below_zero():
    assert verdict_6b(_pred()).verdict == REPRODUCED
    assert verdict_6b(_pred(rho=(-0.5, -0.8, -EPS, -0.75, -0.25))).verdict == REPRODUCED
    inconclusive = verdict_6b(_pred(rho=(-0.4, -0.8, 0.0, -0.75, -0.05)))  # ρ's 95 % interval touches 0
    assert inconclusive.verdict == NOT_TESTABLE and inconclusive.evidence[0]["outcome"] == INCONCLUSIVE
    assert verdict_6b(_pred(partial=(-0.3, -0.7, 0.1, -0.6, 0.05))).verdict == NOT_TESTABLE  # depth may explain it
    no_flag = verdict_6b(_pred(rho=(0.0, -0.25, 0.25, -M + EPS, M - EPS)))  # |ρ| < 0.3 shown: a decided failure
    assert no_flag.verdict == NOT_REPRODUCED and no_flag.evidence[0]["outcome"] == NOT_USEFUL
    assert verdict_6b(_pred(partial=(0.5, 0.2, 0.8, 0.25, 0.75))).verdict == NOT_REPRODUCED  # the wrong way
    two = pd.concat([_pred("a"), _pred("b", rho=(0.5, 0.2, 0.8, 0.25, 0.75)), _pred("c", rho=(0.0, -0.9, 0.9,
                                                                                             -0.8, 0.8))])  # fmt: skip
    v = verdict_6b(two)
    assert v.verdict == PARTLY and [e["passes"] for e in v.evidence] == [True, False, None]
    assert verdict_6b(_pred()).evidence[0]["depth_rho"] == -0.7


@pytest.mark.parametrize(
    "rho, partial, outcome",
    [
        # the one-sided 95 % lower bound (the 90 % interval's lower end) against a useful flag's ρ ≤ −margin
        ((-0.2, -0.6, 0.3, -M + EPS, 0.2), None, NOT_USEFUL),  # just above −margin: the useful effect excluded
        ((-0.2, -0.6, 0.3, -M, 0.2), None, INCONCLUSIVE),  # at −margin: not excluded (strict)
        ((-0.2, -0.6, 0.3, -M - EPS, 0.2), None, INCONCLUSIVE),
        ((-0.5, -0.8, -EPS, -M, -0.25), None, FLAGS),  # both 95 % intervals below 0, ρ ≤ −margin not excluded
        ((-0.5, -0.8, 0.0, -M, -0.25), None, INCONCLUSIVE),  # the 95 % upper end at 0: not below it
        ((-0.2, -0.28, -0.1, -M + EPS, -0.12), None, NOT_USEFUL),  # below 0 but weaker than useful: exclusion first
        ((0.24, -0.24, 0.63, -0.17, 0.58), None, NOT_USEFUL),  # the default's SmolLM2 on 12 windows (until 2026-11-29)
        ((0.30, -0.19, 0.67, -0.11, 0.62), None, NOT_USEFUL),  # the default's SmolLM2 on all 32 (ρ +0.30)
        (None, (-0.5, -0.8, -0.2, -M + EPS, -0.25), NOT_USEFUL),  # the partial ρ alone excludes it
        (None, (-0.5, -0.8, EPS, -0.75, 0.1), INCONCLUSIVE),  # the partial ρ's 95 % interval crosses 0
        ((np.nan,) * 5, None, INCONCLUSIVE),
    ],
)
def test_claim6b_flag_outcome_at_its_thresholds(rho, partial, outcome):
    """Guards the one-sided exclusion of claim 6b: `>` → `>=` (or the bound's side flipped, or the 95 % bound read
    for the 90 %) moves a row across; the outcomes on both sides of −margin and of 0, the default's own numbers."""
    kw = {k: v for k, v in (("rho", rho), ("partial", partial)) if v is not None}
    row = _pred(**kw).iloc[0]
    assert flag_outcome(row) == outcome
    verdict = {FLAGS: REPRODUCED, NOT_USEFUL: NOT_REPRODUCED, INCONCLUSIVE: NOT_TESTABLE}[outcome]
    assert verdict_6b(_pred(**kw)).verdict == verdict


def test_claim6b_margin_planted_moves_the_decision_and_the_words():
    """A planted margin (Rule.planted, no module patched) moves the exclusion and the rule's words together."""
    row = _pred(rho=(-0.5, -0.8, -0.2, -0.4, -0.25))  # one-sided bound −0.4: ρ ≤ −0.3 not excluded, ρ ≤ −0.5 is
    assert judge(RULE_6B, {"swap_predictors": row}).verdict == REPRODUCED
    wide = RULE_6B.planted(EQUIVALENCE_MARGIN=0.5)
    assert judge(wide, {"swap_predictors": row}).verdict == NOT_REPRODUCED
    at = RULE_6B.planted(EQUIVALENCE_MARGIN=0.4)  # the bound exactly at −margin: not excluded
    assert judge(at, {"swap_predictors": row}).verdict == REPRODUCED
    assert "ρ ≤ −0.5" in wide.words and "above −0.5" in wide.words and "ρ ≤ −0.3" in RULE_6B.words


@pytest.mark.parametrize(
    "pooled, per_model, word",
    [
        ("flags", ["flags", INCONCLUSIVE], REPRODUCED),
        ("flags", ["not a useful flag", "flags"], PARTLY),
        ("not a useful flag", [INCONCLUSIVE, "not a useful flag"], NOT_REPRODUCED),
        ("not a useful flag", ["flags", INCONCLUSIVE], PARTLY),
        (INCONCLUSIVE, ["flags", "flags"], REPRODUCED),  # both models decide: more than chance
        (INCONCLUSIVE, ["flags", INCONCLUSIVE], NOT_TESTABLE),  # 1 of 2 is what chance gives 10 % of the time
        (INCONCLUSIVE, ["flags", "not a useful flag"], NOT_TESTABLE),
        (INCONCLUSIVE, [INCONCLUSIVE, INCONCLUSIVE], NOT_TESTABLE),
        (INCONCLUSIVE, ["flags"] + [INCONCLUSIVE] * 11, NOT_TESTABLE),  # the zoo's twelve: 1 flags
        (INCONCLUSIVE, ["flags"] * 2 + [INCONCLUSIVE] * 10, NOT_TESTABLE),  # 2 of 12: still chance (p = 0.12)
        (INCONCLUSIVE, ["flags"] * 3 + [INCONCLUSIVE] * 9, REPRODUCED),  # 3 of 12 (p = 0.02)
        (INCONCLUSIVE, ["flags"] * 3 + [NOT_USEFUL] * 3 + [INCONCLUSIVE] * 6, PARTLY),
        (INCONCLUSIVE, ["flags"] * 3 + [NOT_USEFUL] * 2 + [INCONCLUSIVE] * 7, REPRODUCED),  # the 2 not useful: chance
        (None, [NOT_USEFUL], NOT_REPRODUCED),  # one model: no pooled row
        (None, ["flags", INCONCLUSIVE], REPRODUCED),  # no pooled row: the decided models are tallied
    ],
)
def test_claim6b_pooled_outcome_decides_where_it_is_decided(pooled, per_model, word):
    from linrec.claims.swap import flags_verdict

    assert flags_verdict(pooled, per_model) == word
    rows = {"flags": {}, NOT_USEFUL: {"rho": (0.0, -0.25, 0.25, -M + EPS, M - EPS)},
            INCONCLUSIVE: {"rho": (0.0, -0.9, 0.9, -0.8, 0.8)}}  # fmt: skip
    tables = [_pred(f"m{k}", **rows[o]) for k, o in enumerate(per_model)]
    if pooled is not None:
        tables.append(_pred(POOLED, **rows[pooled]))
    v = verdict_6b(pd.concat(tables, ignore_index=True))
    assert v.verdict == word
    if word == NOT_TESTABLE:
        assert "150 blocks" in v.reason
        if "flags" in per_model:
            need = 2 if len(per_model) == 2 else 3
            assert f"{per_model.count('flags')} of {len(per_model)} models flag" in v.reason
            assert f"no more than chance at 5 % a model ({need} needed)" in v.reason


def test_best_predictor_is_named_only_after_holm():
    def screen(ps, rhos):
        cols = ["r2_lin", "mse_out", "err_rel_resid", "r2_ex_first"]
        t = pd.DataFrame({"model": "m", "column": cols + ["screening_delta_ppl"], "spearman_rho": rhos + [0.9],
                          "p": ps + [1e-6], "runs_swapped_model": [False] * 4 + [True],
                          "partial_rho_depth": np.nan, "partial_p": np.nan})  # fmt: skip
        t["p_holm"] = t["partial_p_holm"] = np.nan
        real = ~t["runs_swapped_model"]
        t.loc[real, "p_holm"] = holm(t.loc[real, "p"].to_numpy())
        return best_predictors(t).iloc[0]

    # raw p 0.013 is the best-pointing predictor, but Holm over 4 gives 0.052: not named; 0.012 → 0.048 is
    b = screen([0.5, 0.9, 0.9, 0.013], [-0.2, 0.1, 0.1, -0.6])
    assert b["best"] == "" and b["n_screened"] == 4
    b = screen([0.5, 0.9, 0.9, 0.012], [-0.2, 0.1, 0.1, -0.6])
    assert b["best"] == "r2_ex_first" and b["best_p_holm"] == pytest.approx(0.048)
    b = screen([0.001, 0.9, 0.9, 0.001], [0.7, 0.1, 0.1, -0.6])  # r2_lin survives but points the wrong way
    assert b["best"] == "r2_ex_first"


def test_claim6a_judges_only_models_with_screening_and_heldout_rows():
    full = DEFAULT.parent / "full"  # two models (the default measures SmolLM2 alone)
    swap = load_table("swap", full)
    values = load_table("swap_predictor_values", full)
    models = list(swap["model"].unique())
    assert len(models) == 2
    full = verdict_6a(swap, values)
    assert full.verdict != NOT_TESTABLE and len(full.evidence) == 2
    # header-only swap table, screening values present: nothing to judge
    v = verdict_6a(swap.iloc[:0], values)
    assert v.verdict == NOT_TESTABLE and not v.evidence and "no rows" in v.reason
    # header-only screening values: every model unjudged, each named
    v = verdict_6a(swap, values.iloc[:0])
    assert v.verdict == NOT_TESTABLE and all(m in v.reason for m in models)
    # one model without screening values: judged on the other alone
    v = verdict_6a(swap, values[values["model"] != models[0]])
    assert [e["model"] for e in v.evidence] == [models[1]]
    assert v.verdict == verdict_6a(swap[swap["model"] == models[1]], values).verdict
    # the screened block's held-out row gone: that model is not judged
    chosen = full.evidence[0]["chosen_block"]
    drop = (swap["model"] == models[0]) & (swap["block"] == chosen)
    v = verdict_6a(swap[~drop], values)
    assert [e["model"] for e in v.evidence] == [models[1]]


def _fv(claim, evidence):
    from linrec.claims.rules import Verdict

    return Verdict(claim, "reproduced", evidence)


def test_claim6a_is_reproduced_only_if_every_model_holds_not_most():
    """Three models: all three hold → reproduced; two hold, one fails → partly; two fail and one undecided → not
    testable (not "not reproduced"); all three fail → not reproduced. Planted: `all(o == "holds" …)` → most, or
    `all(o == "fails" …)` → most, in linrec.claims.swap.verdict_6a fails."""
    b = CLAIM6_BUDGET

    def at(hi, lo, model):
        return _swap([(hi + lo) / 2, 9.0], [0.5, 0.5], model).assign(delta_lo=[lo, 8.9], delta_hi=[hi, 9.1])

    kinds = {"holds": (b / 2, 0.0), "fails": (3.0, 2.0), "undecided": (b + 0.5, 0.5)}

    def verdict(*outcomes):
        models = [f"m{k}" for k in range(len(outcomes))]
        swap = pd.concat([at(*kinds[o], m) for o, m in zip(outcomes, models)])
        v = verdict_6a(swap, pd.concat([_values([0.1, 5.0], m) for m in models]))
        assert [e["outcome"] for e in v.evidence] == list(outcomes)
        return v.verdict

    assert verdict("holds", "holds", "holds") == REPRODUCED
    assert verdict("holds", "holds", "fails") == PARTLY
    assert verdict("fails", "undecided", "fails") == NOT_TESTABLE
    assert verdict("fails", "fails", "fails") == NOT_REPRODUCED
