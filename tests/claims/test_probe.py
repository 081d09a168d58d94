"""linrec.claims.probe (claims 3, 7a and 7b): each verdict on both sides of each threshold and reaching each outcome on
planted rows, some read from `linrec.analyses.probe_summary`'s summaries (whose own numbers are
tests/analyses/test_probe_summary.py's)."""

import numpy as np
import pandas as pd
import pytest

from helpers import budget_rows as _budget_rows
from helpers import dose_rows as _dose
from helpers import one_block_budget as _one_block_budget
from helpers import probe_rows as _probe
from linrec.analyses.probe_summary import CLAIM7_SHORTFALL, pitfall_summary
from linrec.analyses.uncertainty import EQUIVALENCE_MARGIN, POOLED
from linrec.claims.probe import (
    RULE_7B,
    dose_outcome,
    mechanism_word,
    verdict_3,
    verdict_7a,
    verdict_7b,
)
from linrec.claims.rules import (
    CEILING_SLACK,
    CLAIM3_MAX_GAIN,
    CLAIM7B_FLAT,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    PARTLY,
    REPRODUCED,
    judge,
)

EPS = 1e-9


# ---- claim 3 and 7: the probe and the trained baselines ----------------------------------------------------


def _claim3(gain=0.01, lo=-0.4, hi=0.4, lo90=-0.25, hi90=0.25, excess=0.0, models=("m",)):
    """A probe summary: one row per model (its gain) and the pooled row (the correlation over every model's blocks,
    within model), which decides 'uncorrelated'."""
    row = {"n_blocks": 10, "gain_median": gain, "gain_max": 0.1, "pearson_r": 0.0, "p": 0.9, "ci_lo": np.nan,
           "ci_hi": np.nan, "ci_lo90": np.nan, "ci_hi90": np.nan, "quad_excess_median": excess, "detectable_r": 0.5,
           "n_eff": 8.0, "n_needed": 120}  # fmt: skip
    pooled = {**row, "model": POOLED, "ci_lo": lo, "ci_hi": hi, "ci_lo90": lo90, "ci_hi90": hi90}
    return pd.DataFrame([{**row, "model": m} for m in models] + [pooled])


M = EQUIVALENCE_MARGIN


@pytest.mark.parametrize(
    "kw, word",
    [
        ({}, REPRODUCED),  # the 90 % interval inside ±0.3: "uncorrelated" shown
        ({"gain": CLAIM3_MAX_GAIN - EPS}, REPRODUCED),
        ({"gain": CLAIM3_MAX_GAIN}, NOT_REPRODUCED),
        ({"hi90": M - EPS, "lo90": -M + EPS}, REPRODUCED),
        ({"hi90": M}, NOT_TESTABLE),  # touches the margin: not shown, and 0 inside the 95 % interval: inconclusive
        ({"lo90": -M}, NOT_TESTABLE),
        ({"lo": 0.0, "lo90": 0.1, "hi90": 0.5}, NOT_TESTABLE),  # touches 0: includes it, inconclusive
        ({"lo": EPS, "hi": 0.7, "lo90": 0.1, "hi90": 0.6}, NOT_REPRODUCED),  # a correlation shown
        ({"lo": -0.7, "hi": -EPS, "lo90": -0.6, "hi90": -0.1}, NOT_REPRODUCED),
        ({"lo": EPS, "hi": 0.2, "lo90": 0.02, "hi90": 0.18}, REPRODUCED),  # shown nonzero but within the margin
        ({"lo": np.nan}, NOT_TESTABLE),
        ({"excess": CLAIM3_MAX_GAIN - EPS}, REPRODUCED),
        ({"excess": CLAIM3_MAX_GAIN}, NOT_TESTABLE),  # the probe stays far below the quadratic: not converged
    ],
)
def test_claim3_thresholds(kw, word):
    assert verdict_3(_claim3(**kw)).verdict == word


def test_claim3_gain_per_model_correlation_pooled():
    two = _claim3(models=("a", "b"))
    two.loc[1, "gain_median"] = 0.2
    v = verdict_3(two)
    assert v.verdict == PARTLY and [e["passes"] for e in v.evidence[:2]] == [True, False]
    assert v.evidence[-1]["model"] == POOLED and v.evidence[-1]["correlation"] == "no effect"
    two = _claim3(models=("a", "b"))
    two.loc[1, "quad_excess_median"] = 1.0
    v = verdict_3(two)
    assert v.verdict == REPRODUCED and v.evidence[1]["passes"] is None  # the untested model does not count
    v = verdict_3(_claim3(hi90=0.5, models=("a", "b")))
    assert v.verdict == NOT_TESTABLE and "at this power" in v.reason and "120 blocks" in v.reason
    v = verdict_3(_claim3(models=("a", "b")).iloc[:2])  # no pooled row (an older table): not testable, not a crash
    assert v.verdict == NOT_TESTABLE and "pooled" in v.reason


def test_claim3_says_which_reason_left_every_model_untested():
    """Not testable because no probe converged is not "not testable at this power": where the pooled correlation is
    decided (both zoos: shown nonzero) but every model's probe stays >= CLAIM3_MAX_GAIN below the closed-form quadratic,
    the reason says so and names the correlation's outcome (it said "neither shown ... nor shown nonzero (or no probe
    converged)" on rows whose interval excluded 0; planted: the old single sentence fails here)."""
    effect = _claim3(lo=EPS, hi=0.7, lo90=0.1, hi90=0.6, excess=CLAIM3_MAX_GAIN, models=("a", "b"))
    v = verdict_3(effect)
    assert v.verdict == NOT_TESTABLE and "no model's probe converged" in v.reason and "shown nonzero" in v.reason
    assert "at this power" not in v.reason and "neither" not in v.reason
    none = _claim3(excess=CLAIM3_MAX_GAIN, models=("a", "b"))  # "uncorrelated" shown, no probe converged
    assert "shown within ±0.3" in verdict_3(none).reason and "no model's probe" in verdict_3(none).reason
    v = verdict_3(_claim3(hi90=0.5, excess=CLAIM3_MAX_GAIN, models=("a", "b")))  # inconclusive: the power sentence
    assert v.verdict == NOT_TESTABLE and "at this power" in v.reason


def _pitfall_row(n_short=1, n_blocks=4, model="m", **kw):
    """A pitfall summary row whose 7b is 'conditioning' as planted: a dose over 2 decades of κ (10² → 10⁴, 4
    levels) whose shortfall rises 0.01 per decade, 95 % [0.005, 0.015], 90 % [0.006, 0.014] (a rise over the dose of
    0.02 [0.01, 0.03]), no fit above its ceiling."""
    row = {"model": model, "n_blocks": n_blocks, "n_short": n_short, "share_short": n_short / n_blocks,
           "cond_lo": -0.5, "cond_hi": 0.5, "dose_kappa_min": 1e2, "dose_kappa_max": 1e4, "dose_levels": 4,
           "dose_slope": 0.01, "dose_slope_lo": 0.005, "dose_slope_hi": 0.015, "dose_slope_lo90": 0.006,
           "dose_slope_hi90": 0.014, "ceiling_excess": 0.0, **AGREE}  # fmt: skip
    return row | kw


# real blocks that agree with the planted dose: ρ(log scaled κ, shortfall) 95 % [0.1, 0.8] above 0, and the spread
# the dose predicts from their 2 decades of κ (slope 95 % [0.005, 0.015] × 2 = [0.01, 0.03]) reaching the observed
# interquartile range's interval [0.02, 0.04]
AGREE = {"spearman_scaled_shortfall": 0.5, "scaled_lo": 0.1, "scaled_hi": 0.8, "scaled_iqr_decades": 2.0,
         "short_iqr": 0.03, "short_iqr_lo": 0.02, "short_iqr_hi": 0.04}  # fmt: skip


@pytest.mark.parametrize(
    "kw, word",
    [
        ({}, REPRODUCED),  # 1 of 4 = 25 %: at the share threshold
        ({"n_blocks": 5}, NOT_REPRODUCED),  # 20 %
        ({"n_short": 2, "n_blocks": 8}, REPRODUCED),
    ],
)
def test_claim7a_share_threshold(kw, word):
    assert verdict_7a(pd.DataFrame([_pitfall_row(**kw)])).verdict == word


H = CLAIM7B_FLAT / 2  # the flat margin as a slope per decade over the planted dose's 2 decades (exact in binary)


def _slope(lo, hi, lo90, hi90):
    return {"dose_slope": (lo + hi) / 2, "dose_slope_lo": lo, "dose_slope_hi": hi, "dose_slope_lo90": lo90,
            "dose_slope_hi90": hi90}  # fmt: skip


@pytest.mark.parametrize(
    "kw, outcome, mechanism",
    [
        ({}, "rises", "conditioning"),
        (_slope(EPS, 0.02, 0.001, 0.019), "rises", "conditioning"),  # the 95 % interval just above 0
        (_slope(0.0, 0.02, 0.001, 0.019), "unclear", "inconclusive"),  # at 0: not shown
        (_slope(-0.004, 0.004, -H + EPS, H - EPS), "flat", "not conditioning"),  # the rise inside ±margin
        (_slope(-0.004, 0.004, -H, H - EPS), "unclear", "inconclusive"),  # at −margin: not inside (strict)
        (_slope(-0.004, 0.004, -H + EPS, H), "unclear", "inconclusive"),  # at +margin
        (_slope(-0.004, H + 0.001, -H + EPS, H + EPS), "unclear", "inconclusive"),
        (_slope(0.001, 0.004, 0.0015, H - EPS), "flat", "not conditioning"),  # a rise shown, smaller than the margin
        (_slope(-0.03, -EPS, -0.028, -0.001), "falls", "not conditioning"),  # shown to fall: not what κ predicts
        (_slope(np.nan, np.nan, np.nan, np.nan), "unclear", "inconclusive"),  # fewer than 3 levels: no interval
        ({"ceiling_excess": CEILING_SLACK}, "rises", "conditioning"),  # at the slack: still a ceiling
        ({"ceiling_excess": CEILING_SLACK + EPS}, "rises", "inconclusive"),  # beaten: no upper bound
        ({"dose_levels": np.nan}, None, None),  # the dose not measured
        ({"ceiling_excess": np.nan}, None, None),
    ],
)
def test_claim7b_outcomes_at_the_doses_thresholds(kw, outcome, mechanism):
    """Guards the dose rule: `<` → `<=` at ±CLAIM7B_FLAT (on the rise = slope × decades), `>` → `>=` at 0, the
    flat check after the rise check, the 95 % interval read for the 90 % one; each outcome on planted rows."""
    row = _pitfall_row(**kw)
    assert mechanism_word(row) == mechanism
    if outcome is not None:
        assert dose_outcome(row) == outcome


def test_claim7b_planted_margin_moves_the_decision_and_the_words():
    """Rule.planted (no module patched): a rise shown above 0 but inside a wider margin reads 'not conditioning'."""
    row = pd.DataFrame([_pitfall_row()])  # rise 0.02, 90 % [0.012, 0.028]
    assert judge(RULE_7B, {"pitfall_summary": row}).verdict == REPRODUCED
    wide = RULE_7B.planted(CLAIM7B_FLAT=0.03)
    assert judge(wide, {"pitfall_summary": row}).verdict == NOT_REPRODUCED
    assert judge(RULE_7B.planted(CLAIM7B_FLAT=0.028), {"pitfall_summary": row}).verdict == REPRODUCED  # at it
    assert "±0.03" in wide.words and "±0.01" in RULE_7B.words and "±0.03" in wide.change


def test_claim7b_verdict_counts_decided_models_only():
    cond = _pitfall_row(model="a")
    notc = _pitfall_row(model="b", **_slope(-0.004, 0.004, -0.003, 0.003))
    undecided = _pitfall_row(model="c", **_slope(-0.01, 0.03, -0.006, 0.026))
    verdict = lambda *rows: verdict_7b(pd.DataFrame(list(rows))).verdict  # noqa: E731
    assert verdict(cond, _pitfall_row(model="b")) == REPRODUCED
    assert verdict(cond, undecided) == REPRODUCED  # the inconclusive model is not counted
    assert verdict(cond, notc) == PARTLY
    assert verdict(notc, undecided) == NOT_REPRODUCED
    v = verdict_7b(pd.DataFrame([undecided, _pitfall_row(model="d", ceiling_excess=0.02)]))
    assert v.verdict == NOT_TESTABLE and "inconclusive" in v.reason  # inconclusive is never "not reproduced"
    assert [e["mechanism"] for e in v.evidence] == ["inconclusive", "inconclusive"]
    v = verdict_7b(pd.DataFrame([_pitfall_row(dose_levels=np.nan)]))
    assert v.verdict == NOT_TESTABLE and "measured" in v.reason
    assert verdict_7a(None).verdict == verdict_7b(None).verdict == NOT_TESTABLE
    old = {"model": "m", "n_blocks": 4, "dose_steps_min": 100.0, "dose_steps_max": np.inf}  # before the slope
    assert verdict_7b(pd.DataFrame([old])).verdict == NOT_TESTABLE


def test_the_doses_slope_is_read_where_the_smallest_kappa_converges_and_by_hand():
    """Guards the step cap's handling: the shortfall is read at the first checkpoint at which the smallest κ's
    validation R² comes within REACHED of its best (100 here), not at the longest budget (where every κ has caught up:
    flat), and its least-squares slope on log10 κ with Student-t intervals is checked by value against a hand
    computation."""
    y = [0.005, 0.03, 0.04, 0.07]  # at 100 steps, κ = 10², 10⁴, 10⁶, 10⁸
    dose = _dose({1e2: [0.3, 0.005, 0.0], 1e4: [0.3, 0.03, 0.0], 1e6: [0.3, 0.04, 0.0], 1e8: [0.3, 0.07, 0.001]})
    r = pitfall_summary(_probe([0.2] * 4), None, dose).iloc[0]
    assert r["dose_budget"] == 100 and r["dose_levels"] == 4 and r["dose_steps_min"] == 100
    assert r["dose_budget_short_min"] == pytest.approx(0.005) and r["dose_budget_short_max"] == pytest.approx(0.07)
    # by hand: x = 2, 4, 6, 8 (centred −3, −1, 1, 3; Sxx = 20), slope = Σ xc·y / Sxx
    slope = (-3 * 0.005 - 0.03 + 0.04 + 3 * 0.07) / 20  # 0.01025
    fitted = np.mean(y) + slope * np.array([-3, -1, 1, 3])
    se = np.sqrt(((np.array(y) - fitted) ** 2).sum() / 2 / 20)
    t95, t90 = 4.302652729749464, 2.919985580355516  # Student t, 2 degrees of freedom, 0.975 and 0.95 quantiles
    assert r["dose_slope"] == pytest.approx(slope, rel=1e-12)
    assert (r["dose_slope_lo"], r["dose_slope_hi"]) == pytest.approx((slope - t95 * se, slope + t95 * se), rel=1e-9)
    assert (r["dose_slope_lo90"], r["dose_slope_hi90"]) == pytest.approx((slope - t90 * se, slope + t90 * se),
                                                                         rel=1e-9)  # fmt: skip
    assert r["dose_resid_sd"] == pytest.approx(se * np.sqrt(20), rel=1e-12)
    r = r.to_dict() | {"ceiling_excess": 0.0}
    assert dose_outcome(r) == "rises" and mechanism_word(r) == "conditioning by construction only"  # 4 real blocks
    assert mechanism_word(r | AGREE) == "conditioning"
    # the smallest κ still climbs at the end: the longest budget (1000), where these shortfalls are flat
    never = _dose({1e2: [0.3, 0.05, 0.02], 1e4: [0.3, 0.1, 0.02], 1e6: [0.3, 0.2, 0.021], 1e8: [0.3, 0.3, 0.019]})
    r = pitfall_summary(_probe([0.2] * 4), None, never).iloc[0]
    assert r["dose_budget"] == 1000 and np.isinf(r["dose_steps_min"])
    assert dose_outcome(r.to_dict()) == "flat"  # rise 6 × slope inside ±0.01 at 90 %: a planted flat dose passes
    two = pitfall_summary(_probe([0.2] * 4), None, _dose({1e2: [0.3, 0.0, 0.0], 1e8: [0.3, 0.5, 0.0]})).iloc[0]
    assert two["dose_levels"] == 2 and np.isnan(two["dose_slope_lo"])  # two levels: no interval
    assert mechanism_word(two.to_dict()) == "inconclusive"


def test_the_doses_budget_is_chosen_on_the_validation_slice_not_the_held_out_rows():
    """The budget is a choice, so the train rows' validation slice makes it: here the smallest κ's validation R² has
    converged at 10 steps while its held-out R² reaches the ceiling only at 1000; the dose is read at 10, where the
    shortfall rises with κ (at 1000, where the held-out R² would put it, it is flat)."""
    dose = _dose({1e2: [0.3, 0.1, 0.0], 1e4: [0.4, 0.1, 0.0], 1e6: [0.5, 0.1, 0.0], 1e8: [0.6, 0.1, 0.001]},
                 val={k: [0.8, 0.8, 0.8] for k in (1e2, 1e4, 1e6, 1e8)})  # fmt: skip
    r = pitfall_summary(_probe([0.2] * 4), None, dose).iloc[0]
    assert r["dose_budget"] == 10
    assert (r["dose_budget_short_min"], r["dose_budget_short_max"]) == pytest.approx((0.3, 0.6))
    assert dose_outcome(r.to_dict()) == "rises"
    unknown = pitfall_summary(_probe([0.2] * 4), None, dose.assign(r2_val=np.nan)).iloc[0]
    assert unknown["dose_budget"] == 1000  # no validation R²: the longest budget


def test_ceiling_excess_sees_a_fit_above_its_ceiling_in_either_table():
    """Guards the check that the ceiling is an upper bound: a tuned fit above it, in the budget curve (gradient
    descent too) or in the dose, shows in `ceiling_excess`, and 7b is then inconclusive."""
    probe = _probe([0.2, 0.2, 0.2, 0.2])
    budget = pd.DataFrame(_budget_rows(0, 10.0, 100) + _budget_rows(1, 1e8, 100))
    dose = pd.DataFrame({"model": "m", "block": 3, "kappa": [1e2, 1e6], "optimizer": "sgd", "step": 100,
                         "r2_test": [0.9, 0.9], "r2_val": 0.9, "ceiling": 0.95, "lr_interior": True})  # fmt: skip
    assert pitfall_summary(probe, budget, dose).iloc[0]["ceiling_excess"] == pytest.approx(-0.005)
    above = dose.assign(r2_test=[0.9, 0.97])
    assert pitfall_summary(probe, budget, above).iloc[0]["ceiling_excess"] == pytest.approx(0.02)
    gd_above = budget.copy()
    gd_above.loc[(gd_above["optimizer"] == "gd") & (gd_above["step"] == 10000), "r2_test"] = 0.93
    s = pitfall_summary(probe, gd_above, dose)
    assert s.iloc[0]["ceiling_excess"] == pytest.approx(0.025)
    assert verdict_7b(s).evidence[0]["mechanism"] == "inconclusive"


# ---- claim 7a: how many blocks fall short of the ceiling ----------------------------------------------------------
def _probe_at_zero_baseline(shortfalls):
    """A probe table whose better baseline (Adam) sits at 0, so each block's shortfall is its ceiling, exactly."""
    n = len(shortfalls)
    return pd.DataFrame({"model": "m", "block": range(n), "r2_ceiling_rows": np.asarray(shortfalls, float),
                         "r2_trained_adam": 0.0, "r2_trained_sgd": -0.2, "cond_gram": np.arange(1.0, n + 1),
                         "cond_scaled": np.arange(1.0, n + 1), "adam_reach": np.arange(1.0, n + 1),
                         "n_train_rows": 8192})  # fmt: skip


def test_a_block_short_by_exactly_the_threshold_is_not_short():
    """Guards `>` → `>=` in `pitfall_summary`'s per-block shortfall count (claim 7a): CLAIM7_SHORTFALL at exact
    equality, a hair below and a hair above; "short" means more than the threshold below the ceiling."""
    s = pitfall_summary(
        _probe_at_zero_baseline([CLAIM7_SHORTFALL - EPS, CLAIM7_SHORTFALL, CLAIM7_SHORTFALL + EPS, 0.0]), n_boot=50
    )
    assert s["n_short"].iloc[0] == 1 and s["share_short"].iloc[0] == pytest.approx(1 / 4)
    at = pitfall_summary(_probe_at_zero_baseline([CLAIM7_SHORTFALL] * 4), n_boot=50)
    assert at["n_short"].iloc[0] == 0 and verdict_7a(at).verdict == NOT_REPRODUCED
    above = pitfall_summary(_probe_at_zero_baseline([CLAIM7_SHORTFALL + EPS] * 4), n_boot=50)
    assert above["n_short"].iloc[0] == 4 and verdict_7a(above).verdict == REPRODUCED


# ---- issue 92: 7b's "reaches the ceiling" at REACHED to the ulp, and the budget curve's tuned rows ----------------


def test_the_budget_curve_reaches_the_ceiling_at_exactly_reached():
    """A tuned fit "reaches the ceiling" at held-out R² ≥ ceiling − REACHED (the rule's own, RULE_7B.thresholds): at
    it exactly the block's steps are the first checkpoint (100), one ulp short they are the next (1000), one ulp over
    100. Planted: `r2_test >= ceiling - within` → `>` in linrec.analyses.pitfall.steps_to_reach fails (at → 1000)."""
    from helpers import edge_tables

    ceiling = 0.905
    reached = RULE_7B.thresholds.REACHED
    tables = edge_tables(lambda r: _one_block_budget(r, ceiling), ceiling - reached)
    got = {k: pitfall_summary(_probe([0.2] * 4), t, None).iloc[0] for k, t in tables.items()}
    assert {k: (r["steps_reach_well"], r["steps_reach_ill"]) for k, r in got.items()} == {
        "below": (1000, 1000), "at": (100, 100), "above": (100, 100)}  # fmt: skip


def test_the_doses_budget_at_reached_to_the_ulp():
    """The dose's budget: the first checkpoint whose validation R² (the smallest κ's) is ≥ its best − REACHED (the
    rule's own): at it exactly and one ulp over, that checkpoint (100); one ulp short, the next (1000). Planted:
    `val >= val.max() - REACHED` → `>` in linrec.analyses.probe_summary.dose_budget fails (at → 1000)."""
    from helpers import edges

    best = 0.85
    reached = RULE_7B.thresholds.REACHED
    got = {}
    for k, v in edges(best - reached).items():
        val = {1e2: [0.5, v, best], 1e4: [0.5, 0.5, 0.5], 1e6: [0.5, 0.5, 0.5]}
        dose = _dose({1e2: [0.3, 0.1, 0.0], 1e4: [0.3, 0.1, 0.0], 1e6: [0.3, 0.1, 0.0]}, val=val)
        got[k] = pitfall_summary(_probe([0.2] * 4), None, dose).iloc[0]["dose_budget"]
    assert got == {"below": 1000, "at": 100, "above": 100}


@pytest.mark.parametrize(
    "gain, word",
    [
        (CLAIM3_MAX_GAIN, NOT_REPRODUCED),  # at the bar: the gain decides although the probe did not converge
        (np.nextafter(CLAIM3_MAX_GAIN, 1.0), NOT_REPRODUCED),
        (np.nextafter(CLAIM3_MAX_GAIN, 0.0), NOT_TESTABLE),  # below the bar: an unconverged probe may understate it
    ],
)
def test_an_unconverged_probe_whose_gain_already_exceeds_the_bar_decides(gain, word):
    """Issue 87, item 6: the zoo's probes all gained 0.074-0.097 (over the 0.05 bar) but did not converge, and claim 3
    was 'not testable'; a probe short of its optimum can only understate its gain, so a gain at or over the bar fails
    the model whether it converged or not. Planted: the convergence gate checked before the gain (every row here
    gives not testable)."""
    v = verdict_3(_claim3(gain=gain, excess=CLAIM3_MAX_GAIN, hi90=0.5, models=("a", "b")))
    assert v.verdict == word
    assert [e["passes"] for e in v.evidence[:2]] == [False, False] if word == NOT_REPRODUCED else [None, None]


@pytest.mark.parametrize(
    "kw, agree",
    [
        ({}, True),
        ({"scaled_lo": 0.0}, False),  # ρ's interval touches 0: the real blocks do not show the rise
        ({"scaled_lo": np.nextafter(0.0, 1.0)}, True),
        ({"short_iqr_lo": 0.03}, True),  # the predicted spread's upper end (0.015 × 2) at the observed lower end
        ({"short_iqr_lo": np.nextafter(0.03, 1.0)}, False),  # the dose predicts less spread than the blocks show
        ({"scaled_iqr_decades": np.nan}, None),  # a summary from before the spread was measured
    ],
)
def test_claim7b_real_blocks_agree_with_the_dose_at_each_threshold(kw, agree):
    """Issue 87, item 3: 7b read 'reproduced' from the constructed dose alone while the real blocks' shortfall did not
    rise with their κ (ρ −0.31 [−0.79, 0.41]) and their spread (IQR 0.121) was 25x what the dose predicts from their
    κ (0.005). A rising dose with real blocks that agree is 'conditioning'; without them 'conditioning by
    construction only', which gives at most partly. Planted: `>` at 0 as `>=`, `>=` at the spread as `>` (each flips
    a row), and the agreement ignored (the verdict below reads reproduced)."""
    from linrec.claims.probe import SUFFICIENT, real_blocks_agree

    row = _pitfall_row(**kw)
    assert real_blocks_agree(row) is agree
    assert mechanism_word(row) == ("conditioning" if agree else SUFFICIENT)
    v = verdict_7b(pd.DataFrame([row, _pitfall_row(model="b")]))
    assert v.verdict == (REPRODUCED if agree else PARTLY)
    assert verdict_7b(pd.DataFrame([row])).verdict == (REPRODUCED if agree else PARTLY)  # the dose alone: partly
