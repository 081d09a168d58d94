"""linrec.outputs.findings: notebooks 06 and 07 in words, each result and each control, and nothing said of what
was not run."""

import numpy as np
import pandas as pd


def _v(claim, evidence):
    from linrec.claims.rules import Verdict

    return Verdict(claim, "reproduced", evidence)


def test_swap_findings_word_each_result_and_the_sign_of_the_correlation():
    from linrec.outputs.findings import swap_findings

    e6a = {
        "model": "m",
        "ffn_over_linear": 8.04,
        "chosen_block": 3,
        "delta_ppl": 0.51,
        "delta_lo": -0.2,
        "delta_hi": 1.3,
        "ppl_base": 30.0,
        "outcome": "holds",
        "n_within_budget": 4,
        "n_blocks": 12,
    }
    e6b = {"model": "m", "spearman_rho": 0.25, "rho_lo": -0.1, "rho_hi": 0.6, "n_eff": 9.0, "n_blocks": 12,
           "rho_lo_iid": 0.0, "rho_hi_iid": 0.5, "partial_rho_depth": 0.1, "partial_lo": -0.3, "partial_hi": 0.4,
           "depth_rho": -0.8,
           "outcome": "inconclusive", "best": None, "best_rho": np.nan, "best_partial": "depth_frac",
           "best_partial_rho": 0.55}  # fmt: skip
    first = pd.DataFrame([{"model": "m", "block": 11, "first_var_share": 0.62, "delta_ppl_map": 244.0,
                           "delta_ppl_ffn": 51.0, "delta_lo_ffn": 40.0, "delta_hi_ffn": 60.0, "delta_ppl_mean": 51.1,
                           "share_of_cost_at_first": 0.79}])  # fmt: skip
    greedy = pd.DataFrame([{"model": "m", "order": "r2_lin", "budget_ppl": 1.0, "blocks_swapped": "3 5",
                            "screening_delta_ppl": 0.9, "test_delta_ppl": 1.2, "test_delta_lo": 0.4,
                            "test_delta_hi": 2.0, "params_removed": 5_000_000, "params_added": 600_000,
                            "params_model": 100_000_000}])  # fmt: skip
    lines = swap_findings(_v("6a", [e6a]), _v("6b", [e6b]), first, greedy)
    assert len(lines) == 4
    assert "8.0× the parameters" in lines[0] and "costs +0.51 held out (95 % CI [-0.20, +1.30]" in lines[0]
    assert "4 of 12 blocks have held-out intervals within +1" in lines[0]
    assert "*larger* cost" in lines[1] and "none (no predictor survives Holm's correction)" in lines[1]
    assert "the best partial ρ given depth: depth_frac (+0.55)" in lines[1]
    assert "62% of its held-out output variance" in lines[2] and "79% of the cost" in lines[2]
    assert "kept blocks [3 5]" in lines[3] and "(4.4% of the model)" in lines[3]
    for rho in (0.0, -0.25):  # only a positive ρ is worded as the wrong way round
        assert (
            "*larger* cost" not in swap_findings(_v("6a", []), _v("6b", [{**e6b, "spearman_rho": rho}]), None, None)[0]
        )
    assert swap_findings(_v("6a", []), _v("6b", []), None, None) == []


def test_controls_findings_word_each_control_and_leave_out_what_was_not_run():
    from linrec.claims.rules import GAUSSIAN_DROP
    from linrec.outputs.findings import controls_findings

    init = pd.DataFrame(
        [
            {
                "model": "m",
                "trained_r2_min": 0.3,
                "trained_r2_max": 0.9,
                "init_r2_min": 0.95,
                "init_r2_max": 0.99,
                "mean_abs_trained_init": 0.28,
                "mean_abs_init_seeds": np.nan,
                "init_r2_train_median": 0.99,
                "init_r2_test_median": 0.2,
                "trained_gap_median": 0.06,
            }
        ]
    )
    inputs = pd.DataFrame([{"model": "m", "r2_gaussian_median": 0.41, "r2_own_median": 0.52, "n_gaussian_drop": 3}])
    e2a = {
        "model": "m",
        "outcome": "learned",
        "twin_degenerate": True,
        "twin_gap": 1.58,
        "trained_gap": 0.06,
        "reference": "random-init FFNs on the trained inputs",
        "effect": 0.279,
        "noise": 0.007,
    }
    e2b = {"model": "m", "outcome": None, "share_weights": 0.4, "share_weights_lo": 0.39, "share_weights_hi": 0.42,
           "share_inputs": 0.14, "share_inputs_lo": 0.13, "share_inputs_hi": 0.15, "share_shared": 0.3,
           "share_residual": 0.16, "n_standout": 6, "n_below_init": 23, "n_blocks": 30,
           "share_weights_minus_inputs": 0.26, "wmi_lo": -0.08, "wmi_hi": 0.6, "wmi_se_jack": 0.165,
           "wmi_se_windows": 0.0096, "wmi_band1": 0.13}  # fmt: skip
    lines = controls_findings(init, inputs, None, _v("2a", [e2a]), _v("2b", [e2b]))
    assert len(lines) == 4  # no cross feeding ran: no sentence for it
    assert "mean |trained − init| = 0.280;" in lines[0] and "between two init seeds" not in lines[0]
    assert f"3 blocks lose more than {GAUSSIAN_DROP}." in lines[1]
    assert "(2a: learned): the twin is degenerate" in lines[2] and "= 0.279, 0.007 between" in lines[2]
    assert "(2b: not testable)" in lines[3] and "0.26 [-0.08, 0.60] with the blocks' variability" in lines[3]
    assert "6 of 30 blocks are more linear than both null ensembles, 23 less linear" in lines[3]
    assert "(standard error 0.17 leaving one block out, 0.010 over held-out windows; 0.13 on |i − j| ≤ 1" in lines[3]
    seeds = controls_findings(init.assign(mean_abs_init_seeds=0.01), None, None, _v("2a", []), _v("2b", []))
    assert seeds == [seeds[0]] and "against 0.010 between two init seeds" in seeds[0]
    one_draw = controls_findings(init, None, None, _v("2a", [{**e2a, "noise": np.nan}]), _v("2b", []))
    assert "no noise between untrained draws measured (one draw)" in one_draw[1] and "nan" not in one_draw[1]
