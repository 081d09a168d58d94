"""Every summary and claim rule of linrec.verdicts, on both sides of each threshold, and the results-table registry."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from linrec import verdicts as V
from linrec.errors import LinrecError
from linrec.tables import TABLES, labelled, load_table, save_table

EPS = 1e-9


# ---- the tally and the verdict words ------------------------------------------------------------------
@pytest.mark.parametrize(
    "passes, word",
    [([True, True], V.REPRODUCED), ([True, False], V.PARTLY), ([False, False], V.NOT_REPRODUCED), ([], V.NOT_TESTABLE)],
)
def test_tally_covers_every_branch(passes, word):
    assert V.tally(passes) == word


def test_every_claim_is_not_testable_without_its_tables():
    for n, rule in enumerate(V.CLAIMS, start=1):
        args = [None] * rule.__code__.co_argcount
        v = rule(*args)
        assert v.claim == n and v.verdict == V.NOT_TESTABLE and "not run" in v.reason and v.rule == V.RULES[n]


# ---- claim 1: the profile --------------------------------------------------------------------------------
def test_direction_changes_counts_strict_turns():
    assert V.direction_changes([0, 1, 0, 1]) == 2
    assert V.direction_changes([0, 1, 2, 3]) == 0
    assert V.direction_changes([0, 1, 1, 0]) == 0  # a flat step is not a turn
    assert V.direction_changes([0.5]) == 0


def test_profile_summary_against_hand_computed_numbers():
    r2 = pd.DataFrame(
        {
            "model": ["a"] * 4 + ["b"] * 3,
            "block": [3, 0, 1, 2, 0, 1, 2],  # unsorted: the summary sorts by block
            "r2_lin": [0.4, 0.2, 0.9, 0.3, 0.5, 0.6, 0.7],
            "cond_gram": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
            "r2_ex_first": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7],
            "first_var_share": [0.5, 0.49, 0.0, 0.9, 0.0, 0.0, 0.0],
        }
    )
    s = V.profile_summary(r2).set_index("model")
    # block order a: 0.2, 0.9, 0.3, 0.4 → jumps 0.7, 0.6, 0.1; turns at 0.9 and 0.3
    assert s.loc["a", "r2_min"] == 0.2 and s.loc["a", "r2_max"] == 0.9
    assert s.loc["a", "max_adjacent_jump"] == pytest.approx(0.7) and s.loc["a", "direction_changes"] == 2
    assert s.loc["a", "cond_gram_median"] == 2.5 and s.loc["a", "r2_ex_first_max"] == 0.4
    assert s.loc["a", "first_token_blocks"] == "2 3"  # share ≥ 0.5 (0.49 is not), in block order
    assert s.loc["b", "direction_changes"] == 0 and s.loc["b", "first_token_blocks"] == ""
    with pytest.raises(LinrecError, match="columns"):
        V.profile_summary(r2.drop(columns=["cond_gram"]))


def _claim1_row(span=0.6, jump=0.4, turns=3, model="m"):
    return {"model": model, "n_blocks": 10, "r2_min": 0.3, "r2_max": 0.3 + span, "max_adjacent_jump": jump,
            "direction_changes": turns, "cond_gram_median": 1.0, "r2_ex_first_max": 0.5,
            "first_token_blocks": ""}  # fmt: skip


@pytest.mark.parametrize(
    "kw, passes",
    [
        ({}, True),
        ({"span": V.CLAIM1_SPAN + EPS}, True),
        ({"span": V.CLAIM1_SPAN - EPS}, False),
        ({"jump": V.CLAIM1_JUMP}, True),
        ({"jump": V.CLAIM1_JUMP - EPS}, False),
        ({"turns": V.CLAIM1_TURNS}, True),
        ({"turns": V.CLAIM1_TURNS - 1}, False),
    ],
)
def test_claim1_thresholds(kw, passes):
    v = V.claim1(pd.DataFrame([_claim1_row(**kw)]))
    assert v.verdict == (V.REPRODUCED if passes else V.NOT_REPRODUCED)
    assert v.evidence[0]["passes"] is passes


def test_claim1_partly_when_one_model_fails():
    v = V.claim1(pd.DataFrame([_claim1_row(model="a"), _claim1_row(jump=0.1, model="b")]))
    assert v.verdict == V.PARTLY and [e["passes"] for e in v.evidence] == [True, False]


# ---- claim 3 and 7: the probe and the trained baselines ----------------------------------------------------
def test_probe_summary_counts_and_numbers():
    probe = pd.DataFrame({"gain": [0.01, 0.03, -0.01], "probe_stop": ["validation", "flattened", "validation"],
                          "seconds_probe": [1.0, 2.0, 3.0]})  # fmt: skip
    corr = {"r": 0.1, "p": 0.5, "ci_lo": -0.2, "ci_hi": 0.4}
    s = V.probe_summary(probe, corr).iloc[0]
    assert s["gain_median"] == 0.01 and s["gain_max"] == 0.03 and s["gain_min"] == -0.01
    assert (s["n_stop_validation"], s["n_stop_flattened"], s["n_stop_max_epochs"]) == (2, 1, 0)
    assert s["seconds_probe_total"] == 6.0 and s["ci_lo"] == -0.2 and s["ci_hi"] == 0.4


def _claim3(gain=0.01, lo=-0.1, hi=0.2):
    return V.claim3(pd.DataFrame([{"n_blocks": 10, "gain_median": gain, "gain_max": 0.1, "pearson_r": 0.0, "p": 0.9,
                                   "ci_lo": lo, "ci_hi": hi}]))  # fmt: skip


@pytest.mark.parametrize(
    "kw, word",
    [
        ({}, V.REPRODUCED),
        ({"gain": V.CLAIM3_MAX_GAIN - EPS}, V.REPRODUCED),
        ({"gain": V.CLAIM3_MAX_GAIN}, V.NOT_REPRODUCED),
        ({"lo": 0.0}, V.REPRODUCED),  # the interval touches 0: includes it
        ({"lo": EPS}, V.NOT_REPRODUCED),
        ({"hi": -EPS}, V.NOT_REPRODUCED),
        ({"lo": np.nan}, V.NOT_TESTABLE),
    ],
)
def test_claim3_thresholds(kw, word):
    assert _claim3(**kw).verdict == word


def _probe(shortfalls, adam_better=True):
    n = len(shortfalls)
    ceiling = np.asarray(shortfalls, dtype=float)  # best baseline at 0: the shortfall is exact, no rounding
    best = np.zeros(n)
    worse = best - 0.2
    return pd.DataFrame({
        "r2_ceiling_rows": ceiling,
        "r2_trained_adam": best if adam_better else worse,
        "r2_trained_sgd": worse if adam_better else best,
        "cond_gram": np.arange(1.0, n + 1),
    })  # fmt: skip


def test_trained_shortfall_takes_the_better_baseline():
    assert np.allclose(V.trained_shortfall(_probe([0.1, 0.0])), [0.1, 0.0])
    assert np.allclose(V.trained_shortfall(_probe([0.1, 0.0], adam_better=False)), [0.1, 0.0])


@pytest.mark.parametrize(
    "shortfalls, word",
    [
        ([0.02, 0.0, 0.0, 0.0], V.REPRODUCED),  # 1 of 4 = 25 %: at the threshold
        ([0.02, 0.0, 0.0, 0.0, 0.0], V.NOT_REPRODUCED),  # 20 %
        ([V.CLAIM7_SHORTFALL, 0.0, 0.0, 0.0], V.NOT_REPRODUCED),  # not *more* than the shortfall threshold
    ],
)
def test_claim7_thresholds(shortfalls, word):
    v = V.claim7(_probe(shortfalls))
    assert v.verdict == word
    assert v.evidence[0]["shortfall_max"] == pytest.approx(max(shortfalls))
    rho = stats.spearmanr(np.arange(len(shortfalls)), shortfalls)[0]
    assert v.evidence[0]["spearman_cond_shortfall"] == pytest.approx(rho, nan_ok=True)


# ---- claim 4: regimes ------------------------------------------------------------------------------------
REGIMES = ("broadly linear", "first-token-concentrated", "outlier-concentrated", "nonlinear")


def _spectrum(regimes, model="m"):
    n = len(regimes)
    return pd.DataFrame({
        "model": model, "block": range(n), "regime": regimes, "first_var_share": np.linspace(0, 0.9, n),
        "n_massive": [1] + [0] * (n - 1), "top1_var_share": [0.6] * n, "r2_lin": [0.9] * n,
        "r2_ex_top8": np.linspace(0.9, 0.5, n), "eff_rank_out": [10.0] * n, "d_out": [100] * n,
        "cond_gram": np.arange(n) + 1.0, "cond_gram_test": np.arange(n) + 2.0, "eff_rank_in": np.arange(n)[::-1] + 1.0,
        "dynamic_range_in": np.arange(n) * 2.0,
    })  # fmt: skip


def test_regime_summary_counts_and_lists():
    t = _spectrum(["broadly linear", "outlier-concentrated", "nonlinear", "broadly linear"])
    s = V.regime_summary(t, REGIMES).iloc[0]
    assert (s["n_broadly_linear"], s["n_outlier_concentrated"], s["n_nonlinear"], s["n_first_token_concentrated"]) == (
        2,
        1,
        1,
        0,
    )
    assert s["outlier_blocks"] == "1" and s["first_token_blocks"] == "" and s["massive_blocks"] == "0"
    assert s["first_share_blocks"] == "2 3" and s["top1_broadly_linear_blocks"] == "0 3"
    assert s["max_drop_ex_top8"] == pytest.approx(0.4) and s["eff_rank_out_frac_median"] == pytest.approx(0.1)


def test_input_side_is_spearman_per_descriptor():
    t = _spectrum(["nonlinear"] * 5).assign(r2_lin=[0.1, 0.5, 0.2, 0.9, 0.4])
    got = V.input_side(t).set_index("descriptor")
    for col in ("cond_gram", "eff_rank_in", "dynamic_range_in"):
        assert got.loc[col, "spearman_rho"] == pytest.approx(stats.spearmanr(t["r2_lin"], t[col])[0])


@pytest.mark.parametrize(
    "regimes, word",
    [
        (["broadly linear", "outlier-concentrated"], V.REPRODUCED),
        (["broadly linear", "nonlinear"], V.NOT_REPRODUCED),
        (["outlier-concentrated", "first-token-concentrated"], V.NOT_REPRODUCED),
    ],
)
def test_claim4_needs_both_regimes(regimes, word):
    assert V.claim4(V.regime_summary(_spectrum(regimes), REGIMES)).verdict == word


def test_claim4_pools_models():
    t = pd.concat([_spectrum(["broadly linear"], "a"), _spectrum(["outlier-concentrated"], "b")])
    assert V.claim4(V.regime_summary(t, REGIMES)).verdict == V.REPRODUCED


# ---- claim 5: corpora ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "rho, ratio, word",
    [
        (V.CORPUS_MODEL_RHO, V.CORPUS_MODEL_RATIO - EPS, "a property of the model"),
        (V.CORPUS_MODEL_RHO - EPS, 0.1, "mixed"),
        (0.9, V.CORPUS_MODEL_RATIO, "mixed"),
        (V.CORPUS_SHAPED_RHO, 0.9, "mixed"),
        (V.CORPUS_SHAPED_RHO - EPS, 0.1, "shaped by the corpus"),
        (0.9, V.CORPUS_SHAPED_RATIO, "shaped by the corpus"),
        (0.9, V.CORPUS_SHAPED_RATIO - EPS, "mixed"),
    ],
)
def test_corpus_word_thresholds(rho, ratio, word):
    assert V.corpus_word(rho, ratio) == word


def test_corpus_depth_ratio_hand_computed():
    wide = pd.DataFrame({"wiki": [0.1, 0.5, 0.9], "code": [0.3, 0.5, 0.7]})
    corpus_sd = np.mean([0.1, 0.0, 0.1])  # population std of each row's two values
    depth_sd = np.std([0.2, 0.5, 0.8])
    assert V.corpus_depth_ratio(wide) == pytest.approx(corpus_sd / depth_sd)


def test_corpus_verdicts_and_claim5():
    from linrec.uncertainty import profile_agreement

    rows = []
    for corpus, shift in (("wiki", 0.0), ("web", 0.01), ("code", -0.01)):
        for b, r in enumerate([0.2, 0.8, 0.4, 0.9, 0.3]):
            rows.append({"model": "m", "corpus": corpus, "block": b, "r2_lin": r + shift * (b % 2), "r2_lo": r - 0.05,
                         "r2_hi": r + 0.05})  # fmt: skip
    t = pd.DataFrame(rows)
    v = V.corpus_verdicts(t, profile_agreement(t), ["wiki", "web", "code"]).iloc[0]
    assert v["verdict"] == "a property of the model" and v["spearman_min"] == pytest.approx(1.0)
    assert v["n_ci_compared"] == 15 and v["n_ci_disjoint"] == 0 and v["ci_width_median"] == pytest.approx(0.1)
    assert V.claim5(pd.DataFrame([v])).verdict == V.REPRODUCED
    two = pd.DataFrame([v.to_dict(), {**v.to_dict(), "model": "n", "verdict": "mixed"}])
    assert V.claim5(two).verdict == V.PARTLY
    assert V.claim5(two.assign(verdict="shaped by the corpus")).verdict == V.NOT_REPRODUCED


# ---- claim 6: the swap ---------------------------------------------------------------------------------------
def _swap(deltas, r2s, model="m"):
    n = len(deltas)
    return pd.DataFrame({"model": model, "block": range(n), "r2_lin": r2s, "delta_ppl": deltas, "ppl_base": 20.0,
                         "params_ffn": 300, "params_linear": 30})  # fmt: skip


def test_swap_safety_and_params():
    t = _swap([0.5, 2.0, 1.0, 5.0], [0.95, 0.9, 0.2, 0.89])
    s = V.swap_safety(t).iloc[0]
    assert s["n_high_r2"] == 2 and s["n_high_r2_costly"] == 1 and s["high_r2_costly_blocks"] == "1"
    assert s["n_within_budget"] == 2 and s["delta_ppl_median"] == 1.5 and s["ppl_base"] == 20.0
    assert V.swap_params(t).iloc[0]["ffn_over_linear"] == 10.0


def test_swap_predictors_sign():
    t = _swap([0.5, 2.0, 1.0, 5.0], [0.9, 0.3, 0.6, 0.1]).assign(mse_out=[1.0, 3.0, 2.0, 4.0])
    p = V.swap_predictors(t, {"r2_lin": -1, "mse_out": +1}).set_index("column")
    assert p.loc["r2_lin", "spearman_rho"] == pytest.approx(-1.0) and p.loc[
        "r2_lin", "rho_useful_direction"
    ] == pytest.approx(1.0)
    assert p.loc["mse_out", "rho_useful_direction"] == pytest.approx(1.0)


def _claim6(deltas, r2s, models=("m",)):
    swap = pd.concat([_swap(deltas, r2s, m) for m in models], ignore_index=True)
    return V.claim6(swap, V.swap_params(swap), V.swap_predictors(swap, {"r2_lin": -1}))


def test_claim6_branches():
    n = 12
    r2 = np.linspace(0.95, 0.2, n)
    safe_first = np.linspace(0.5, 12, n)  # ΔPPL rises as R²_lin falls: ρ = −1, p ≪ 0.05
    assert _claim6(safe_first, r2).verdict == V.REPRODUCED
    assert _claim6(safe_first + 1.0, r2).verdict == V.PARTLY  # predicts, but no block within +1
    assert _claim6(safe_first[::-1], r2).verdict == V.PARTLY  # a cheap block, but ρ has the wrong sign
    assert _claim6(safe_first[::-1] + 1.0, r2).verdict == V.NOT_REPRODUCED
    at = safe_first.copy()
    at[0] = V.CLAIM6_BUDGET
    assert _claim6(at, r2).evidence[0]["cheap"] is True  # ΔPPL equal to the budget is within it
    at[0] = V.CLAIM6_BUDGET + EPS
    assert _claim6(at, r2).evidence[0]["cheap"] is False


def test_claim6_needs_significance():
    r2 = np.array([0.9, 0.8, 0.7, 0.6])
    v = _claim6(np.array([0.5, 0.7, 0.6, 2.0]), r2)  # ρ = −0.8 over 4 blocks: p ≈ 0.2
    assert (
        v.evidence[0]["spearman_r2_delta"] < 0 and v.evidence[0]["p"] > V.CLAIM6_ALPHA and not v.evidence[0]["predicts"]
    )


# ---- claim 2: controls ---------------------------------------------------------------------------------------
def _profiles(trained, inits):
    rows = [
        {"model": "m", "block": b, "r2_lin": r, "r2_train": r + 0.1, "weights": "trained"}
        for b, r in enumerate(trained)
    ]
    for s, init in enumerate(inits):
        rows += [{"model": "m", "block": b, "r2_lin": r, "r2_train": 0.9, "weights": f"random init, seed {s}"}
                 for b, r in enumerate(init)]  # fmt: skip
    return pd.DataFrame(rows)


def test_random_init_summary_hand_computed():
    s = V.random_init_summary(_profiles([0.9, 0.5, 0.7], [[0.1, 0.2, 0.3], [0.2, 0.2, 0.2]]), [0, 1]).iloc[0]
    assert s["trained_r2_min"] == 0.5 and s["init_r2_max"] == 0.3
    assert s["mean_abs_trained_init"] == pytest.approx((np.mean([0.8, 0.3, 0.4]) + np.mean([0.7, 0.3, 0.5])) / 2)
    assert s["mean_abs_init_seeds"] == pytest.approx(np.mean([0.1, 0.0, 0.1]))
    assert s["init_r2_train_median"] == 0.9 and s["init_r2_test_median"] == 0.2
    one = V.random_init_summary(_profiles([0.9, 0.5, 0.7], [[0.1, 0.2, 0.3]]), [0]).iloc[0]
    assert np.isnan(one["mean_abs_init_seeds"]) and np.isnan(one["spearman_init_seeds"])


def _claim2_row(diff=0.5, noise=0.1, rho=0.0, model="m"):
    return {"model": model, "trained_r2_min": 0.1, "trained_r2_max": 0.9, "init_r2_min": 0.0, "init_r2_max": 0.2,
            "mean_abs_trained_init": diff, "spearman_trained_init": rho, "init_r2_train_median": 0.8,
            "init_r2_test_median": 0.1, "mean_abs_init_seeds": noise, "spearman_init_seeds": 0.1}  # fmt: skip


@pytest.mark.parametrize(
    "kw, word",
    [
        ({}, V.REPRODUCED),
        ({"diff": V.CLAIM2_NOISE_FACTOR * 0.1 + EPS}, V.REPRODUCED),
        ({"diff": V.CLAIM2_NOISE_FACTOR * 0.1}, V.NOT_REPRODUCED),
        ({"rho": V.CLAIM2_MAX_RHO - EPS}, V.REPRODUCED),
        ({"rho": V.CLAIM2_MAX_RHO}, V.NOT_REPRODUCED),
        ({"noise": np.nan}, V.NOT_TESTABLE),
    ],
)
def test_claim2_thresholds(kw, word):
    assert V.claim2(pd.DataFrame([_claim2_row(**kw)])).verdict == word


def test_input_control_summary():
    t = pd.DataFrame({"model": "m", "r2_own": [0.5, 0.6, 0.7], "r2_gaussian": [0.45, 0.4, 0.7],
                      "r2_other_block": [0.1, 0.2, 0.3]})  # fmt: skip
    s = V.input_control_summary(t).iloc[0]
    assert s["r2_own_median"] == 0.6 and s["r2_gaussian_median"] == 0.45 and s["n_gaussian_drop"] == 1
    assert s["r2_next_block_median"] == 0.2


# ---- the registry ---------------------------------------------------------------------------------------
def test_tables_round_trip_and_refuse_wrong_columns(tmp_path):
    row = _claim1_row()
    path = save_table(pd.DataFrame([dict(reversed(list(row.items())))]), "r2_lin_summary", tmp_path)
    assert list(pd.read_csv(path).columns) == list(TABLES["r2_lin_summary"].columns)  # registry order on disk
    back = load_table("r2_lin_summary", tmp_path)
    assert back.loc[0, "first_token_blocks"] == "" and back.loc[0, "r2_max"] == row["r2_max"]
    with pytest.raises(LinrecError, match="unexpected columns \\['extra'\\]"):
        save_table(pd.DataFrame([{**row, "extra": 1}]), "r2_lin_summary", tmp_path)
    with pytest.raises(LinrecError, match="missing \\['r2_min'\\]"):
        save_table(pd.DataFrame([{k: v for k, v in row.items() if k != "r2_min"}]), "r2_lin_summary", tmp_path)
    with pytest.raises(LinrecError, match="no results table"):
        load_table("nope", tmp_path)
    assert load_table("probe_summary", tmp_path) is None


def test_block_lists_survive_the_csv_and_counts_stay_numbers(tmp_path):
    save_table(pd.DataFrame([_claim1_row() | {"first_token_blocks": "11 28"}]), "r2_lin_summary", tmp_path)
    back = load_table("r2_lin_summary", tmp_path)
    assert back.loc[0, "first_token_blocks"] == "11 28" and back.loc[0, "n_blocks"] == 10
    assert pd.api.types.is_integer_dtype(back["n_blocks"]) and pd.api.types.is_integer_dtype(back["direction_changes"])


def test_every_registered_column_is_snake_case_and_labels_only_rename():
    import re

    for name, spec in TABLES.items():
        for c in spec.columns:
            assert re.fullmatch(r"[a-z][a-z0-9_]*", c), (name, c)
    df = pd.DataFrame([_claim1_row()])
    shown = labelled(df)
    assert "max R²_lin" in shown.columns and shown.shape == df.shape and (shown.to_numpy() == df.to_numpy()).all()
