"""The findings notebook 06 prints, one sentence each, and saves as `swap_verdict` (the report quotes them): the
swap study's (claims 6a and 6b). Notebook 07's, `controls_verdict`, are a table its study writes, so their wording
sits below the studies, beside claim 2's rules (`linrec.claims.learned.controls_findings`).
"""

from __future__ import annotations

import pandas as pd

from linrec.claims.rules import CLAIM6_BUDGET, Verdict


# ---- the findings notebook 06 prints and the report quotes (`swap_verdict`) ---------------------------------------
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
