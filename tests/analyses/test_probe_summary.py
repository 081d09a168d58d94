"""linrec.analyses.probe_summary (notebook 03's summaries): the probe's gain and correlation per model and pooled, and
the pitfall's shortfall, budget curve and dose by hand; the rules that judge them are tests/claims/test_probe.py's."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from helpers import budget_block as _budget_block
from helpers import budget_rows as _budget_rows
from helpers import dose_rows as _dose
from helpers import one_block_budget as _one_block_budget
from helpers import probe_rows as _probe
from linrec.analyses.pitfall import REACHED
from linrec.analyses.probe_summary import (
    CLAIM7_SHORTFALL,
    dose_shortfalls,
    pitfall_summary,
    probe_summary,
    trained_shortfall,
)
from linrec.analyses.uncertainty import POOLED

EPS = 1e-9


def _probe_blocks(model="m", n=6, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "model": model, "block": range(n), "gain": rng.uniform(0, 0.03, n), "gain_quad": rng.uniform(0, 0.04, n),
        "r2_lin_rows": rng.uniform(0.3, 0.9, n), "probe_stop": ["validation"] * (n - 1) + ["max_epochs"],
        "seconds_probe": np.ones(n),
    })  # fmt: skip


def test_probe_summary_per_model_and_pooled():
    from linrec.analyses.uncertainty import correlation_test, detectable_correlation

    probe = pd.concat([_probe_blocks("a", 6, 0), _probe_blocks("b", 8, 1)], ignore_index=True)
    sweep = pd.DataFrame({"model": ["a"] * 4 + ["b"] * 2, "block": [1, 1, 4, 4, 2, 2], "rank": [16, 64] * 3,
                          "gain": [0.01, 0.02, 0.03, 0.05, 0.0, 0.1]})  # fmt: skip
    s = probe_summary(probe, sweep, n_boot=300, seed=3).set_index("model")
    assert list(s.index) == ["a", "b", POOLED]
    a = probe[probe["model"] == "a"]
    ref = correlation_test(1 - a["r2_lin_rows"], a["gain"], kind="pearson")
    assert s.loc["a", "pearson_r"] == pytest.approx(stats.pearsonr(1 - a["r2_lin_rows"], a["gain"])[0])
    assert s.loc["a", "ci_lo"] == pytest.approx(ref["lo"]) and s.loc["a", "ci_hi90"] == pytest.approx(ref["hi90"])
    assert s.loc["a", "n_eff"] == pytest.approx(ref["n_eff"]) and s.loc["a", "correlation"] == ref["outcome"]
    # the pooled row: Pearson r of each model's values centred on their own (blocks within model), by hand
    cx = (1 - probe["r2_lin_rows"]) - (1 - probe["r2_lin_rows"]).groupby(probe["model"]).transform("mean")
    cy = probe["gain"] - probe.groupby("model")["gain"].transform("mean")
    assert s.loc[POOLED, "pearson_r"] == pytest.approx(float((cx * cy).sum() / np.sqrt((cx**2).sum() * (cy**2).sum())))
    assert s.loc[POOLED, "n_eff"] == pytest.approx(s.loc["a", "n_eff"] + s.loc["b", "n_eff"])
    assert s.loc["a", "gain_median"] == a["gain"].median() and s.loc[POOLED, "n_blocks"] == 14
    assert s.loc["a", "quad_excess_median"] == pytest.approx((a["gain_quad"] - a["gain"]).median())
    assert s.loc["a", "detectable_r"] == pytest.approx(detectable_correlation(6))
    assert (s.loc["a", "sweep_rank_min"], s.loc["a", "sweep_rank_max"]) == (16, 64)
    assert s.loc["a", "sweep_gain_median_rank_max"] == pytest.approx(0.035)
    assert s.loc[POOLED, "sweep_gain_median_rank_max"] == pytest.approx(0.05)
    assert (s.loc["a", "n_stop_validation"], s.loc["a", "n_stop_max_epochs"]) == (5, 1)


def test_trained_shortfall_takes_the_better_baseline():
    assert np.allclose(trained_shortfall(_probe([0.1, 0.0])), [0.1, 0.0])
    assert np.allclose(trained_shortfall(_probe([0.1, 0.0], adam_better=False)), [0.1, 0.0])


@pytest.mark.parametrize("shortfalls", [[0.0, 0.0, 0.0, 0.02], [0.0, 0.0, 0.02, 0.0, 0.03]])
def test_pitfall_summary_counts_and_correlations(shortfalls):
    s = pitfall_summary(_probe(shortfalls), n_boot=200).iloc[0]
    assert s["n_short"] == sum(x > CLAIM7_SHORTFALL for x in shortfalls) and s["n_blocks"] == len(shortfalls)
    assert s["shortfall_max"] == pytest.approx(max(shortfalls))
    rho = stats.spearmanr(np.arange(len(shortfalls)), shortfalls)[0]
    assert s["spearman_cond_shortfall"] == pytest.approx(rho)
    reach_rho = stats.spearmanr(np.arange(len(shortfalls), 0, -1.0), shortfalls)[0]  # Adam is the better baseline
    assert s["spearman_reach_adam"] == pytest.approx(reach_rho)
    assert s["spearman_scaled_shortfall"] == pytest.approx(reach_rho)  # the scaled κ falls with the block here
    assert s["budget_steps"] == 5 * 32 and np.isnan(s["dose_steps_min"]) and np.isnan(s["n_mechanism"])


def test_pitfall_summary_reads_the_budget_curve_and_the_dose():
    """Steps to the ceiling per mechanism block from the tuned learning rate's curve (the better optimiser), median
    over the better- and the worse-conditioned half, with their κ; the dose's steps and shortfall at its smallest
    and largest κ; the ceiling check and the rates left at a grid end."""
    probe = _probe([0.2, 0.2, 0.2, 0.2])
    budget = pd.DataFrame(_budget_rows(0, 10.0, 100) + _budget_rows(1, 1e8, None, lr_interior=False))
    dose = pd.DataFrame({"model": "m", "block": 3, "kappa": np.repeat([1e2, 1e4, 1e8], 4),
                         "optimizer": ["adam", "adam", "sgd", "sgd"] * 3, "step": [10, 1000] * 6,
                         "r2_test": [0.7, 0.945, 0.5, 0.91, 0.5, 0.5, 0.5, 0.5, 0.65, 0.6, 0.5, 0.5], "ceiling": 0.95,
                         "lr_interior": True})  # fmt: skip
    dose["r2_val"] = dose["r2_test"] - 0.05 + 1e-3 * (dose["optimizer"] == "adam")  # ranks as held out, no ties
    r = pitfall_summary(probe, budget, dose, n_boot=100).iloc[0]
    assert r["n_mechanism"] == 2 and r["n_reached"] == 1 and r["max_steps"] == 10000 and r["first_step"] == 100
    assert r["steps_reach_well"] == 100 and np.isinf(r["steps_reach_ill"]) and np.isinf(r["gd_steps_well"])
    assert r["cond_well"] == 10.0 and r["cond_ill"] == 1e8
    assert r["dose_steps_min"] == 1000 and np.isinf(r["dose_steps_max"])  # Adam's 0.945 is within 0.01 of 0.95
    assert r["dose_short_min"] == pytest.approx(0.005) and r["dose_short_max"] == pytest.approx(0.35)  # at 1000
    assert r["dose_block"] == 3 and r["dose_steps"] == 1000 and r["dose_first_step"] == 10
    assert r["dose_kappa_min"] == 1e2 and r["dose_kappa_max"] == 1e8
    assert r["ceiling_excess"] == pytest.approx(-0.005) and r["n_lr_edge"] == 6  # block 1: Adam and SGD at 3 steps


@pytest.mark.parametrize("first, budget", [(REACHED, 100), (REACHED - EPS, 100), (REACHED + EPS, 1000)])
def test_the_doses_budget_at_the_reached_tolerance(first, budget):
    """The smallest κ has converged at a validation R² REACHED below its best exactly (within it), not a hair
    further: the budget is that checkpoint, else a later one."""
    dose = _dose({1e2: [0.3, first, 0.0], 1e4: [0.3, 0.03, 0.02], 1e6: [0.3, 0.05, 0.03]})
    assert pitfall_summary(_probe([0.2] * 4), None, dose).iloc[0]["dose_budget"] == budget


def test_the_real_blocks_are_ranked_by_the_scaled_kappa():
    """Guards the real-block comparison's κ: Spearman ρ of the steps to the ceiling with log κ of the Jacobi-scaled
    Gram (what Adam sees), which here orders the blocks the opposite way to the raw κ; not reached ranks last."""
    budget = pd.DataFrame(_budget_rows(0, 1e8, 100, scaled=10.0) + _budget_rows(1, 1e6, 1000, scaled=100.0)
                          + _budget_rows(2, 1e4, None, scaled=1000.0))  # fmt: skip
    r = pitfall_summary(_probe([0.2] * 4), budget, None).iloc[0]
    assert r["blocks_n"] == 3 and r["blocks_rho_scaled"] == pytest.approx(1.0)
    assert r["blocks_scaled_min"] == 10.0 and r["blocks_scaled_max"] == 1000.0
    two = pitfall_summary(_probe([0.2] * 4), pd.DataFrame(_budget_rows(0, 1e8, 100) + _budget_rows(1, 1e4, None)))
    assert two.iloc[0]["blocks_n"] == 2 and np.isnan(two.iloc[0]["blocks_rho_scaled"])  # fewer than 3: no ρ


def test_the_budget_curve_reads_the_tuned_rows_only():
    """The steps to the ceiling are the chosen (validation-tuned) learning rate's: an untuned SGD rate (chosen False)
    at the ceiling from step 100, and gradient descent (chosen, optimizer "gd") there from 100 too, leave the tuned
    SGD's 1000 (and the real-block ρ's steps) as they are; gradient descent's own steps are read apart (`gd_steps_*`).
    Planted: `g[g["chosen"] & (g["optimizer"] != "gd")]` → `g[g["optimizer"] != "gd"]` in
    linrec.analyses.probe_summary._budget_steps fails (steps 100); → `g[g["chosen"]]` fails likewise; the same in
    `_blocks_scaled` fails on the three blocks' ρ (every block then at 100: no ρ)."""
    ceiling = 0.905
    untuned = [{"lr": 1.0, "chosen": False, "step": s, "r2_test": ceiling} for s in (100, 1000)]
    gd = [{"optimizer": "gd", "lr": np.nan, "step": s, "r2_test": ceiling, "lr_interior": np.nan} for s in (100, 1000)]
    r = pitfall_summary(_probe([0.2] * 4), _one_block_budget(0.5, ceiling, untuned + gd), None).iloc[0]
    assert r["steps_reach_well"] == 1000 and r["gd_steps_well"] == 100 and r["n_reached"] == 2
    three = pd.DataFrame([r for b in (1, 2, 3) for r in _budget_block(0.5, ceiling, untuned + gd, b, 10.0**b)])
    three.loc[(three["block"] == 3) & three["chosen"] & (three["optimizer"] == "sgd"), "r2_test"] = 0.5
    r = pitfall_summary(_probe([0.2] * 4), three, None).iloc[0]
    assert r["blocks_n"] == 3 and r["blocks_rho_scaled"] == pytest.approx(np.sqrt(3) / 2)  # ties 1000, 1000, inf


def test_the_doses_optimiser_is_chosen_on_the_validation_slice():
    """Issue 87, item 3: the dose's shortfall per κ took the better of Adam and SGD by held-out R². Here SGD has the
    better validation R² and the worse held-out R² at every κ: the shortfall is SGD's. Planted: the old min over the
    held-out shortfalls (Adam's 0.2 smaller shortfall is read)."""
    val = {k: [0.95, 0.95, 0.95] for k in (1e2, 1e4)}  # SGD's validation R²; Adam's is 0.2 lower there
    d = _dose({1e2: [0.3, 0.2, 0.1], 1e4: [0.3, 0.25, 0.2]}, val=val)
    d.loc[d["optimizer"] == "adam", "r2_test"] += 0.4  # Adam better held out by 0.2, worse on validation
    short = dose_shortfalls(d)
    assert short.loc[1000, 1e2] == pytest.approx(0.1) and short.loc[1000, 1e4] == pytest.approx(0.2)


def test_the_real_blocks_spread_by_hand():
    """The interquartile ranges 7b's attribution reads, by hand on four blocks (numpy's linear percentiles), and the
    bootstrap interval containing the point."""
    probe = _probe([0.1, 0.3, 0.2, 0.6])
    probe["cond_scaled"] = [1e1, 1e3, 1e2, 1e4]
    r = pitfall_summary(probe, n_boot=500).iloc[0]
    short = (probe["r2_ceiling_rows"] - probe[["r2_trained_adam", "r2_trained_sgd"]].max(axis=1)).to_numpy()
    q = lambda v: np.percentile(v, 75) - np.percentile(v, 25)  # noqa: E731
    assert r["scaled_iqr_decades"] == pytest.approx(q([1.0, 3.0, 2.0, 4.0]), abs=1e-12) == 1.5
    assert r["short_iqr"] == pytest.approx(q(short), abs=1e-12)
    assert r["short_iqr_lo"] <= r["short_iqr"] <= r["short_iqr_hi"]
