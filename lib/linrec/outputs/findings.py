"""The findings notebook 07 prints, one sentence each, and saves as `controls_verdict` (the report quotes them): the
controls' (claims 2a and 2b). Notebook 06's (`swap_verdict`) are `linrec.claims.swap.swap_findings`, which its study
(`linrec.studies.swap`, below this layer) writes.
"""

from __future__ import annotations

import pandas as pd

from linrec.claims.rules import GAUSSIAN_DROP, Verdict


# ---- the findings notebook 07 prints and the report quotes (`controls_verdict`) -------------------------------
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
