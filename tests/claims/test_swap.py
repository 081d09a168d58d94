"""linrec.claims.swap (claims 6a and 6b): safety, parameters, middle blocks, predictors against scipy and by hand,
the first-position effect, and each verdict at its thresholds, judged only on models with screening and held-out
rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from helpers import DEFAULT
from helpers import predictors as _pred
from linrec.analyses.uncertainty import EQUIVALENCE_MARGIN, INCONCLUSIVE, holm
from linrec.base.tables import load_table, save_table
from linrec.claims.probe import (
    POOLED,
)
from linrec.claims.rules import (
    CLAIM6_BUDGET,
    FIRST_TOKEN_SHARE,
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
    first_position_effect,
    flag_outcome,
    middle_blocks,
    own_words,
    swap_params,
    swap_predictors,
    swap_safety,
    verdict_6a,
    verdict_6b,
)

EPS = 1e-9
M = EQUIVALENCE_MARGIN


# ---- claim 6: the swap ---------------------------------------------------------------------------------------
def _swap(deltas, r2s, model="m", half_width=0.1):
    n = len(deltas)
    d = np.asarray(deltas, dtype=float)
    return pd.DataFrame({"model": model, "block": range(n), "first": "map", "r2_lin": r2s, "delta_ppl": d,
                         "delta_lo": d - half_width, "delta_hi": d + half_width, "ppl_base": 20.0,
                         "params_ffn": 300, "params_linear": 30})  # fmt: skip


def _values(screening, model="m", **cols):
    n = len(screening)
    return pd.DataFrame({"model": model, "block": range(n), "depth_from_end": [min(i, n - 1 - i) for i in range(n)],
                         "screening_delta_ppl": screening, **cols})  # fmt: skip


def test_swap_safety_and_params():
    t = _swap([0.5, 2.0, 0.9, 5.0], [0.95, 0.9, 0.2, 0.89])
    t = pd.concat([t, t.assign(first="ffn", delta_ppl=0.0, delta_lo=0.0, delta_hi=0.0)])  # variants are not counted
    s = swap_safety(t).iloc[0]
    assert s["n_high_r2"] == 2 and s["n_high_r2_costly"] == 1 and s["high_r2_costly_blocks"] == "1"
    assert s["n_within_budget"] == 2 and s["within_budget_blocks"] == "0 2"  # the interval's top: 0.6 and 1.0
    assert s["delta_ppl_median"] == pytest.approx(1.45) and s["ppl_base"] == 20.0 and s["n_blocks"] == 4
    assert swap_params(t).iloc[0]["ffn_over_linear"] == 10.0


def test_middle_blocks():
    assert list(middle_blocks(30)) == list(range(7, 23)) and list(middle_blocks(18)) == list(range(4, 14))
    assert list(middle_blocks(4)) == [1, 2]


def test_swap_predictors_against_scipy_and_by_hand():
    rng = np.random.default_rng(0)
    n = 20
    depth = np.array([min(i, n - 1 - i) for i in range(n)], dtype=float)
    delta = 5 - depth + rng.normal(0, 0.5, n)  # cost falls with distance from the ends
    r2 = rng.uniform(0.3, 0.9, n)
    err = depth * 0 + rng.uniform(size=n)
    swap = _swap(delta, r2)
    values = _values(delta + 1, r2_lin=r2, err_rel_resid=err, err_post_norm_rel_resid=np.nan)
    p = swap_predictors(values, swap, n_boot=500).set_index("column")
    assert "err_post_norm_rel_resid" not in p.index  # all-NaN (a model without a post-FFN norm): skipped
    assert p.loc["screening_delta_ppl", "runs_swapped_model"] and not p.loc["r2_lin", "runs_swapped_model"]
    for col, x in [("r2_lin", r2), ("err_rel_resid", err), ("depth_from_end", depth)]:
        assert p.loc[col, "spearman_rho"] == pytest.approx(stats.spearmanr(x, delta)[0], abs=1e-12)
        assert p.loc[col, "rho_lo"] <= p.loc[col, "spearman_rho"] <= p.loc[col, "rho_hi"]
        mid = middle_blocks(n)
        assert p.loc[col, "middle_rho"] == pytest.approx(stats.spearmanr(x[mid], delta[mid])[0], abs=1e-12)
    assert p.loc["depth_from_end", "useful"] > 0.8  # depth is the baseline that predicts here
    assert np.isnan(p.loc["depth_from_end", "partial_rho_depth"])
    # partial ρ by hand: residuals of the ranks after a line in depth's ranks
    rx, ry, rz = (stats.rankdata(v) for v in (r2, delta, depth))
    res = [v - np.polyval(np.polyfit(rz, v, 1), rz) for v in (rx, ry)]
    assert p.loc["r2_lin", "partial_rho_depth"] == pytest.approx(np.corrcoef(*res)[0, 1], abs=1e-10)
    # a predictor that is depth in disguise has ρ like depth's and nothing left once depth is out … and one that
    # adds to depth keeps a clearly negative partial ρ
    values2 = _values(delta, r2_lin=-(depth**2))
    p2 = swap_predictors(values2, swap, n_boot=500).set_index("column")
    assert np.isnan(p2.loc["r2_lin", "partial_rho_depth"]) and p2.loc["r2_lin", "spearman_rho"] > 0.8
    values3 = _values(delta, r2_lin=-(delta - (5 - depth)))
    p3 = swap_predictors(values3, swap, n_boot=500).set_index("column")
    assert p3.loc["r2_lin", "partial_hi"] < 0


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


def test_claim6b_one_sided_bound_by_hand_on_the_screen():
    """The bound the exclusion reads is the 90 % Fisher interval's lower end at the effective number of blocks:
    tanh(atanh ρ − z_0.95 √(1.06 / (n_eff − 3))), computed here by hand from `swap_predictors`' own ρ and n_eff."""
    from scipy.stats import norm

    rng = np.random.default_rng(5)
    n = 24
    delta = rng.gamma(2.0, 0.5, n)
    swap = _swap(delta, np.full(n, 0.5))
    values = _values(delta, r2_lin=-delta + rng.normal(0, 1.5, n))
    p = swap_predictors(values, swap, n_boot=100).set_index("column").loc["r2_lin"]
    h = norm.ppf(0.95) * np.sqrt(1.06 / (p["n_eff"] - 3))
    assert p["rho_lo90"] == pytest.approx(np.tanh(np.arctanh(p["spearman_rho"]) - h), rel=1e-12)
    assert p["rho_lo"] < p["rho_lo90"]


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


def test_first_position_effect():
    t = _swap([4.0, 2.0], [0.9, 0.5])
    t = pd.concat([t, t.assign(first="ffn", delta_ppl=[1.0, 2.0]), t.assign(first="mean", delta_ppl=[1.5, 2.5])])
    prof = pd.DataFrame({"model": "m", "block": [0, 1], "first_var_share": [FIRST_TOKEN_SHARE, 0.1]})
    f = first_position_effect(t, prof)
    assert list(f["block"]) == [0]  # only the block at the first-token threshold
    assert f.loc[0, "share_of_cost_at_first"] == pytest.approx(0.75)
    assert f.loc[0, "delta_ppl_mean"] == 1.5


def test_first_position_effect_keeps_its_columns_when_a_variant_ran_nowhere(tmp_path):
    """No block on the first token (so only the plain map ran), or one variant not asked for: the table still has
    every registered column (NaN where a variant did not run) and saves."""

    t = _swap([4.0, 2.0], [0.9, 0.5])
    none = first_position_effect(t, pd.DataFrame({"model": "m", "block": [0, 1], "first_var_share": [0.2, 0.1]}))
    assert none.empty
    save_table(none, "swap_first", tmp_path)
    prof = pd.DataFrame({"model": "m", "block": [0, 1], "first_var_share": [0.9, 0.1]})
    ffn_only = first_position_effect(pd.concat([t, t.assign(first="ffn", delta_ppl=[1.0, 2.0])]), prof)
    assert ffn_only.loc[0, "share_of_cost_at_first"] == pytest.approx(0.75)
    assert np.isnan(ffn_only.loc[0, "delta_ppl_mean"]) and np.isnan(ffn_only.loc[0, "delta_hi_mean"])
    save_table(ffn_only, "swap_first", tmp_path)


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


def _holm_by_hand(p):
    """Holm's step-down over the finite p-values given (NaN kept NaN): the k-th smallest of m times m − k + 1, the
    running maximum, capped at 1."""
    p = np.asarray(p, float)
    out = np.full(len(p), np.nan)
    ok = [i for i in np.argsort(p, kind="stable") if np.isfinite(p[i])]
    running = 0.0
    for k, i in enumerate(ok):
        running = max(running, (len(ok) - k) * p[i])
        out[i] = min(running, 1.0)
    return out


def test_the_holm_family_of_6b_is_each_models_screened_predictors_by_hand():
    """Two models of 16 blocks and their pooled row: `p_holm` is Holm's adjustment (by hand) over one model's
    screened predictors only (depth, R²_lin, mse_out, err_rel_resid: four; the pooled row its own family), never over
    the other model's nor over the column that runs the swapped model (its `p_holm` NaN); `partial_p_holm` likewise
    over the three with a partial ρ (depth has none). Equal to 1e-12. Planted, each caught: one family over every
    model (`.groupby("model", sort=False)` dropped in linrec.claims.swap.swap_predictors); the swapped-model column
    let in (`out[~out["runs_swapped_model"]]` → `out`); Bonferroni for Holm (`len(v) - np.arange(len(v))` → `len(v)`
    in linrec.analyses.uncertainty.holm)."""
    g = np.random.default_rng(8)
    n, swaps, values = 16, [], []
    for m in ("a", "b"):
        depth = np.array([min(i, n - 1 - i) for i in range(n)], float)
        delta = 3 - 0.2 * depth + g.normal(0, 0.4, n)
        r2 = 0.9 - 0.1 * delta + g.normal(0, 0.1, n)
        swaps.append(_swap(delta, r2, model=m))
        values.append(_values(delta + g.normal(0, 0.2, n), model=m, r2_lin=r2, mse_out=delta + g.normal(0, 1.0, n),
                              err_rel_resid=g.uniform(size=n)))  # fmt: skip
    p = swap_predictors(pd.concat(values), pd.concat(swaps), n_boot=50)
    assert set(p["model"]) == {"a", "b", "all"}
    for model, t in p.groupby("model"):
        real = t[~t["runs_swapped_model"]]
        assert len(real) == 4, model and real["partial_p"].notna().sum() == 3
        assert real["p_holm"].to_numpy() == pytest.approx(_holm_by_hand(real["p"]), abs=1e-12, rel=0, nan_ok=True)
        assert real["partial_p_holm"].to_numpy() == pytest.approx(_holm_by_hand(real["partial_p"]), abs=1e-12, rel=0,
                                                                  nan_ok=True)  # fmt: skip
        assert t.loc[t["runs_swapped_model"], ["p_holm", "partial_p_holm"]].isna().all().all()
    real = p[(p["model"] == "a") & ~p["runs_swapped_model"]]
    assert (real["p_holm"] < np.minimum(4 * real["p"], 1.0) - 1e-12).any()  # the step-down is not Bonferroni here


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
