"""Notebook 06's summaries, table to table: per model the parameters of an FFN and of its map (`swap_params`), the
blocks that swap within the budget (`swap_safety`), the screened predictors' correlations with the swap's held-out
ΔPPL (claim 6b's screen, `swap_predictors`), and what keeping the FFN at the first position saves
(`first_position_effect`). The rules that judge them are `linrec.claims.swap`'s.

No torch: `linrec.claims.rules` re-exports its thresholds, and `linrec.app.profile` imports that without it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from linrec.analyses.profile import FIRST_TOKEN_SHARE
from linrec.analyses.uncertainty import POOLED, correlation_test, holm
from linrec.base.errors import LinrecError
from linrec.base.tables import blocks, require
from linrec.stats import N_BOOT

CLAIM6_BUDGET = 1.0  # perplexity points: claim 6a's budget, and notebook 06's "within budget"
SWAP_HIGH_R2 = 0.9  # notebook 06: "high R²_lin" blocks, checked against the +1 budget
MIDDLE_SHARE = 0.5  # notebook 06: ρ "within the middle blocks" uses the middle half of the stack
FIRST_VARIANTS = ("map", "ffn", "mean")  # notebook 06's position variants (linrec.inputs.surgery.FIRST_MODES)


def map_rows(swap: pd.DataFrame) -> pd.DataFrame:
    """The swap table's rows of the plain affine swap (`first` = "map", or a table without variants)."""
    return swap[swap["first"] == "map"] if "first" in swap.columns else swap


def swap_params(swap: pd.DataFrame) -> pd.DataFrame:
    """Per model: parameters of one FFN and of its affine map, and their ratio."""
    t = (
        map_rows(swap)
        .groupby("model", sort=False)
        .agg(params_ffn=("params_ffn", "first"), params_linear=("params_linear", "first"))
    )
    t["ffn_over_linear"] = t["params_ffn"] / t["params_linear"]
    return t.reset_index()


def swap_safety(swap: pd.DataFrame) -> pd.DataFrame:
    """Per model: do the high-R²_lin blocks swap within the budget, and how many blocks do at all (held-out ΔPPL
    whose 95 % interval lies within the budget)."""
    swap = map_rows(swap)
    require(swap, ["model", "block", "r2_lin", "delta_ppl", "delta_hi", "ppl_base"], "swap_safety")
    rows = []
    for model, t in swap.groupby("model", sort=False):
        hi = t["r2_lin"] >= SWAP_HIGH_R2
        costly = hi & (t["delta_ppl"] > CLAIM6_BUDGET)
        rows.append(
            {
                "model": model,
                "n_blocks": len(t),
                "n_high_r2": int(hi.sum()),
                "n_high_r2_costly": int(costly.sum()),
                "high_r2_costly_blocks": blocks(t, costly),
                "n_within_budget": int((t["delta_hi"] <= CLAIM6_BUDGET).sum()),
                "within_budget_blocks": blocks(t, t["delta_hi"] <= CLAIM6_BUDGET),
                "delta_ppl_median": float(t["delta_ppl"].median()),
                "ppl_base": float(t["ppl_base"].iloc[0]),
            }
        )
    return pd.DataFrame(rows)


# the candidate predictors of ΔPPL (columns of linrec.analyses.screening.Screening.predictors) and the sign of
# ρ(predictor, ΔPPL) that means "predicts safe to swap": higher R² and a block further from the ends should go with
# a smaller ΔPPL
PREDICTOR_SIGNS = {
    "depth_from_end": -1,
    "r2_lin": -1,
    "r2_ex_first": -1,
    "mse_out": +1,
    "err_rel_resid": +1,
    "err_post_norm_rel_resid": +1,
    "screening_delta_ppl": +1,
}


RUNS_SWAPPED_MODEL = {"screening_delta_ppl"}  # the target itself on other windows: shown, never called a predictor


def middle_blocks(n_blocks: int) -> np.ndarray:
    """The middle half of a stack: blocks at least ⌊L·MIDDLE_SHARE / 2⌋ from either end."""
    gap = int(n_blocks * (1 - MIDDLE_SHARE) / 2)
    return np.arange(gap, n_blocks - gap)


def predictor_target(values: pd.DataFrame, swap: pd.DataFrame) -> pd.DataFrame:
    """The predictors' values per block (`values`) beside the held-out ΔPPL of the map swap (`delta_ppl`), the blocks
    both tables hold, model by model in `values`' order, in block order: what `swap_predictors` correlates."""
    target = map_rows(swap)[["model", "block", "delta_ppl"]]
    joined = values.merge(target, on=["model", "block"], how="inner")
    order = joined["model"].map({m: k for k, m in enumerate(values["model"].unique())})
    return joined.assign(_order=order).sort_values(["_order", "block"], kind="stable").drop(columns="_order")


def swap_predictors(
    values: pd.DataFrame, swap: pd.DataFrame, n_boot: int = N_BOOT, seed: int = 0, level: float = 0.95
) -> pd.DataFrame:
    """Per model and candidate predictor (`values`: `Screening.predictors`' columns, see `PREDICTOR_SIGNS`), then the
    same over every model's blocks pooled with a model effect (`model` = `POOLED`: each model's ranks centred on
    their own): Spearman ρ with the held-out ΔPPL of the map swap across blocks, the partial ρ with depth (distance
    to the nearest end) taken out, and ρ within the middle blocks (`middle_blocks`). Blocks are not independent
    (neighbours share the residual stream), so each interval is Fisher's at the effective number of blocks (`n_eff`,
    `linrec.analyses.uncertainty.correlation_test`); the independent-blocks 95 % interval is kept beside it
    (`rho_lo_iid`, `rho_hi_iid`), and `n_needed` says how many blocks the equivalence test would need for 80 % power.
    `p`, `partial_p`: p-values at n_eff; `p_holm`, `partial_p_holm`: Holm-adjusted over the model's screened
    predictors (every column but those that run the swapped model), one family for ρ and one for the partial ρ;
    `outcome`, `partial_outcome`: effect / no effect (|ρ| < EQUIVALENCE_MARGIN shown) / inconclusive. `useful` =
    sign · ρ (> 0: the predictor points the right way)."""
    if level != 0.95:
        raise LinrecError(f"swap_predictors reports 95 % and 90 % intervals; got level={level}")
    joined = predictor_target(values, swap)
    groups = [(m, t, None) for m, t in joined.groupby("model", sort=False)]
    if joined["model"].nunique() > 1:
        groups.append((POOLED, joined, joined["model"].to_numpy()))
    rows = []
    for model, t, labels in groups:
        n_of = t.groupby("model", sort=False)["block"].transform("max") + 1
        mid = np.array([b in middle_blocks(int(n)) for b, n in zip(t["block"], n_of)])
        depth = t["depth_from_end"].to_numpy(float)
        no_partial = {k: np.nan for k in ("rho", "lo", "hi", "lo90", "hi90", "p")} | {"outcome": ""}
        for col, sign in PREDICTOR_SIGNS.items():
            if col not in t.columns or not np.isfinite(t[col].to_numpy(float)).all():
                continue
            a, y = t[col].to_numpy(float), t["delta_ppl"].to_numpy(float)
            c = correlation_test(a, y, groups=labels)
            pc = no_partial if col == "depth_from_end" else correlation_test(a, y, depth, kind="partial",
                                                                             groups=labels)  # fmt: skip
            # the middle blocks' ρ is shown with its 95 % interval only
            mc = correlation_test(a[mid], y[mid], groups=None if labels is None else labels[mid])
            rows.append(
                {
                    "model": model,
                    "column": col,
                    "runs_swapped_model": col in RUNS_SWAPPED_MODEL,
                    "n_blocks": len(t),
                    "n_eff": c["n_eff"],
                    "n_needed": c["n_needed"],
                    "spearman_rho": c["rho"],
                    "rho_lo": c["lo"],
                    "rho_hi": c["hi"],
                    "rho_lo90": c["lo90"],
                    "rho_hi90": c["hi90"],
                    "rho_lo_iid": c["lo_iid"],
                    "rho_hi_iid": c["hi_iid"],
                    "p": c["p"],
                    "outcome": c["outcome"],
                    "partial_rho_depth": pc["rho"],
                    "partial_lo": pc["lo"],
                    "partial_hi": pc["hi"],
                    "partial_lo90": pc["lo90"],
                    "partial_hi90": pc["hi90"],
                    "partial_p": pc["p"],
                    "partial_outcome": pc["outcome"],
                    "n_middle": int(mid.sum()),
                    "middle_rho": mc["rho"],
                    "middle_lo": mc["lo"],
                    "middle_hi": mc["hi"],
                    "useful": sign * c["rho"],
                }
            )
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out["p_holm"] = out["partial_p_holm"] = np.nan
    for _, idx in out[~out["runs_swapped_model"]].groupby("model", sort=False).groups.items():
        out.loc[idx, "p_holm"] = holm(out.loc[idx, "p"].to_numpy(float))
        out.loc[idx, "partial_p_holm"] = holm(out.loc[idx, "partial_p"].to_numpy(float))
    return out


def first_position_effect(swap: pd.DataFrame, profile: pd.DataFrame) -> pd.DataFrame:
    """Per model and block that sits on the first token (its `first_var_share` ≥ FIRST_TOKEN_SHARE in the ceiling
    table `profile`): the held-out ΔPPL of each position variant and the share of the map's cost that keeping the
    FFN at position 0 removes, (ΔPPL_map − ΔPPL_ffn) / ΔPPL_map."""
    require(swap, ["model", "block", "first", "delta_ppl", "delta_lo", "delta_hi"], "first_position_effect")
    wide = swap.pivot_table(
        index=["model", "block"], columns="first", values=["delta_ppl", "delta_lo", "delta_hi"], sort=False
    )
    wide.columns = [f"{v}_{f}" for v, f in wide.columns]
    wide = wide.reset_index().merge(profile[["model", "block", "first_var_share"]], on=["model", "block"])
    keep = ["model", "block", "first_var_share"] + [
        f"{v}_{f}" for f in FIRST_VARIANTS for v in ("delta_ppl", "delta_lo", "delta_hi")
    ]
    for col in keep:  # a variant run on no block (none sits on the first token, or it was not asked for): NaN
        if col not in wide:
            wide[col] = np.nan
    out = wide[keep][wide["first_var_share"] >= FIRST_TOKEN_SHARE].copy()
    with np.errstate(invalid="ignore", divide="ignore"):
        out["share_of_cost_at_first"] = (out["delta_ppl_map"] - out["delta_ppl_ffn"]) / out["delta_ppl_map"]
    return out.reset_index(drop=True)
