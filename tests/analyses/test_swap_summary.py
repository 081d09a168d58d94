"""linrec.analyses.swap_summary (notebook 06's summaries): safety, parameters, middle blocks, claim 6b's screen against
scipy and by hand (its one-sided bound, its Holm families), and the first-position effect; the rules that judge them
are tests/claims/test_swap.py's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from helpers import screen_values as _values
from helpers import swap_rows as _swap
from linrec.analyses.profile import FIRST_TOKEN_SHARE
from linrec.analyses.swap_summary import (
    first_position_effect,
    middle_blocks,
    swap_params,
    swap_predictors,
    swap_safety,
)
from linrec.base.tables import save_table


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
    """Two models of 16 blocks and their pooled row: `p_holm` is Holm's adjustment (by hand) over one model's screened
    predictors only (depth, R²_lin, mse_out, err_rel_resid: four; the pooled row its own family), never over the other
    model's nor over the column that runs the swapped model (its `p_holm` NaN); `partial_p_holm` likewise over the three
    with a partial ρ (depth has none). Equal to 1e-12. Planted, each caught: one family over every model
    (`.groupby("model", sort=False)` dropped in linrec.analyses.swap_summary.swap_predictors); the swapped-model column
    let in (`out[~out["runs_swapped_model"]]` → `out`); Bonferroni for Holm (`len(v) - np.arange(len(v))` → `len(v)` in
    linrec.analyses.uncertainty.holm)."""
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
