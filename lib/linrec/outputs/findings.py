"""The findings notebooks 06 and 07 print, one sentence each, and save as `swap_verdict` and `controls_verdict`
(the report quotes them): the swap study's (claims 6a and 6b) and the controls' (claims 2a and 2b).
"""

from __future__ import annotations

import pandas as pd

from linrec.claims.rules import CLAIM6_BUDGET, GAUSSIAN_DROP, Verdict


# ---- the findings notebooks 06 and 07 print and the report quotes (`swap_verdict`, `controls_verdict`) ------------
def swap_findings(v6a: Verdict, v6b: Verdict, first: pd.DataFrame | None, greedy: pd.DataFrame | None) -> list[str]:
    """Notebook 06's findings, one sentence each: claim 6a's chosen block and the blocks within budget, claim 6b's
    correlations and the screened predictor that survives Holm's correction (`best_predictors`), the
    first-position variants (`first_position_effect`) and the greedy multi-block swaps."""
    lines = []
    for e in v6a.evidence:
        lines.append(
            f"{e['model']}: an FFN has {e['ffn_over_linear']:.1f}× the "
            "parameters of its affine map. The block with the "
            f"lowest screening ΔPPL, {e['chosen_block']}, costs {e['delta_ppl']:+.2f} held out "
            f"(95 % CI [{e['delta_lo']:+.2f}, {e['delta_hi']:+.2f}], "
            f"base {e['ppl_base']:.2f}): claim 6a {e['outcome']}. "
            f"{e['n_within_budget']} of {e['n_blocks']} blocks have held-out "
            f"intervals within +{CLAIM6_BUDGET:g}."
        )
    for e in v6b.evidence:
        best = (
            f"{e['best']} (ρ = {e['best_rho']:+.2f})" if e["best"] else "none (no predictor survives Holm's correction)"
        )
        best_partial = "none survives Holm's correction"
        if e["best_partial"]:
            best_partial = f"{e['best_partial']} ({e['best_partial_rho']:+.2f})"
        lines.append(
            f"{e['model']}: ρ(R²_lin, ΔPPL) = {e['spearman_rho']:+.2f} "
            f"[{e['rho_lo']:+.2f}, {e['rho_hi']:+.2f}] at an effective {e['n_eff']:.1f} of {e['n_blocks']} "
            f"blocks (as if blocks were independent [{e['rho_lo_iid']:+.2f}, {e['rho_hi_iid']:+.2f}])"
            + (" (higher R²_lin goes with a *larger* cost)" if e["spearman_rho"] > 0 else "")
            + f"; with depth taken out {e['partial_rho_depth']:+.2f} [{e['partial_lo']:+.2f}, {e['partial_hi']:+.2f}]; "
            f"depth alone ρ = {e['depth_rho']:+.2f}. Claim 6b: {e['outcome']}. "
            "The screened predictor pointing most the "
            f"right way after Holm's correction: {best}; the best partial ρ given depth: {best_partial}."
            + (f" With R²_lin without position 0: {e['outcome_ex_first']}." if "outcome_ex_first" in e else "")
        )
    for r in [] if first is None or not len(first) else first.to_dict("records"):
        if "delta_ppl_ffn" in r:
            lines.append(
                f"{r['model']} block {r['block']} ({r['first_var_share']:.0%} "
                "of its held-out output variance at position "
                f"0): ΔPPL {r['delta_ppl_map']:+.2f} with the map everywhere, {r['delta_ppl_ffn']:+.2f} "
                f"[{r['delta_lo_ffn']:+.2f}, {r['delta_hi_ffn']:+.2f}] with the FFN kept at position 0, "
                f"{r['delta_ppl_mean']:+.2f} with the train mean there: position 0 carries "
                f"{r['share_of_cost_at_first']:.0%} of the cost."
            )
    for r in [] if greedy is None else greedy.to_dict("records"):
        lines.append(
            f"{r['model']}: the greedy swap in order of {r['order']}, within +{r['budget_ppl']:g} on the screening "
            f"windows, kept blocks [{r['blocks_swapped']}] (screening ΔPPL {r['screening_delta_ppl']:+.2f}; held out "
            f"{r['test_delta_ppl']:+.2f} [{r['test_delta_lo']:+.2f}, {r['test_delta_hi']:+.2f}]), removing "
            f"{r['params_removed']:,} FFN parameters for {r['params_added']:,} affine ones "
            f"({(r['params_removed'] - r['params_added']) / r['params_model']:.1%} of the model)."
        )
    return lines


def controls_findings(
    init_summary: pd.DataFrame | None,
    input_table: pd.DataFrame | None,
    cross_summary: pd.DataFrame | None,
    v2a: Verdict,
    v2b: Verdict,
) -> list[str]:
    """Notebook 07's findings, one sentence each: trained profiles against their random-init twins, the Gaussian-input
    control (a block "loses" by more than `GAUSSIAN_DROP`), cross feeding, and claims 2a and 2b."""
    lines = []
    for r in [] if init_summary is None else init_summary.to_dict("records"):
        seeds = (
            f" against {r['mean_abs_init_seeds']:.3f} between two init seeds"
            if pd.notna(r["mean_abs_init_seeds"])
            else ""
        )
        lines.append(
            f"{r['model']}: trained R²_lin spans {r['trained_r2_min']:.3f}–{r['trained_r2_max']:.3f}, its random-init "
            f"twins {r['init_r2_min']:.3f}–{r['init_r2_max']:.3f}; mean |trained − init| = "
            f"{r['mean_abs_trained_init']:.3f}{seeds}; the init twin's median block fits its train split to R² "
            f"{r['init_r2_train_median']:.2f} and held-out windows to "
            f"{r['init_r2_test_median']:.2f} (trained model's gap "
            f"{r['trained_gap_median']:.2f})."
        )
    for r in [] if input_table is None else input_table.to_dict("records"):
        lines.append(
            f"{r['model']}: on Gaussian inputs with the captured mean and covariance, the median block's R² is "
            f"{r['r2_gaussian_median']:.3f} (own inputs {r['r2_own_median']:.3f}); "
            f"{int(r['n_gaussian_drop'])} blocks lose "
            f"more than {GAUSSIAN_DROP}."
        )
    for r in [] if cross_summary is None else cross_summary.to_dict("records"):
        lines.append(
            f"inputs of {r['inputs_from']} → FFN of {r['ffn_of']}: median R² {r['r2_raw']:.3f} raw, "
            f"{r['r2_recoloured']:.3f} re-coloured, {r['r2_ffn_own_inputs']:.3f} on its own inputs."
        )
    for e in v2a.evidence:
        noise = e["noise"]
        between = (
            f"{noise:.3f} between untrained draws"
            if noise == noise
            else "no noise between untrained draws measured (one draw)"
        )
        lines.append(
            f"{e['model']} (2a: {e['outcome'] or 'not testable'}): the twin is "
            f"{'degenerate' if e['twin_degenerate'] else 'a valid reference'} "
            f"(train − held-out gap {e['twin_gap']:.2f} "
            f"vs {e['trained_gap']:.2f} trained); against the {e['reference']}, "
            f"mean |trained − untrained| per block = {e['effect']:.3f}, {between}."
        )
    for e in v2b.evidence:
        lines.append(
            f"{e['model']} (2b: {e['outcome'] or 'not testable'}): shares of the cross matrix's variance: weights "
            f"{e['share_weights']:.2f} [{e['share_weights_lo']:.2f}, {e['share_weights_hi']:.2f}], inputs "
            f"{e['share_inputs']:.2f} [{e['share_inputs_lo']:.2f}, {e['share_inputs_hi']:.2f}] (each what only it can "
            f"carry), either {e['share_shared']:.2f}, interaction {e['share_residual']:.2f}; weights − inputs "
            f"{e['share_weights_minus_inputs']:.2f} [{e['wmi_lo']:.2f}, {e['wmi_hi']:.2f}] with the blocks' "
            f"variability (standard error {e['wmi_se_jack']:.2f} leaving one block out, "
            f"{e['wmi_se_windows']:.3f} over held-out windows; {e['wmi_band1']:.2f} on |i − j| ≤ 1 only); "
            f"{int(e['n_standout'])} of {int(e['n_blocks'])} blocks are more linear than both null "
            f"ensembles, {int(e['n_below_init'])} less linear than their random-init draws."
        )
    return lines
