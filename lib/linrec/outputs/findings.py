"""What each notebook concludes, in words, from one narrator (issue 86).

A notebook's findings are of two kinds. The paper's claims it decides are worded once, by the claim's row of the
catalog (`linrec.outputs.catalog.render`: the verdict and one line of evidence per model, the words the report's
claim section and the README block show); `Said.findings` prints them as they stand. What a study measures beside
its claims (notebook 06's first position and greedy swaps, notebook 07's random-init twins, Gaussian inputs and cross
feeding) has no claim section, so it is worded here, once (`BESIDE`), and the report's "What the notebooks
concluded" prints it.
Nothing here judges: the numbers are the stored tables', the verdicts the catalog's.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from linrec.analyses.controls import GAUSSIAN_DROP
from linrec.outputs.catalog import build, of_study
from linrec.outputs.claim_text import Said
from linrec.outputs.results import Results


def _records(t: pd.DataFrame | None) -> list[dict]:
    return [] if t is None or not len(t) else t.to_dict("records")


def swap_beside(r: Results) -> list[str]:
    """Notebook 06 beside claims 6a and 6b: each block whose first position holds most of its output with the FFN or
    its train mean kept there (`swap_first`), and the greedy multi-block swaps (`swap_greedy`)."""
    lines = []
    for x in _records(r.table("swap_first")):
        if "delta_ppl_ffn" in x:
            lines.append(
                f"{x['model']} block {x['block']} ({x['first_var_share']:.0%} of its held-out output variance at "
                f"position 0): ΔPPL {x['delta_ppl_map']:+.2f} with the map everywhere, {x['delta_ppl_ffn']:+.2f} "
                f"[{x['delta_lo_ffn']:+.2f}, {x['delta_hi_ffn']:+.2f}] with the FFN kept at position 0, "
                f"{x['delta_ppl_mean']:+.2f} with the train mean there: position 0 carries "
                f"{x['share_of_cost_at_first']:.0%} of the cost."
            )
    for x in _records(r.table("swap_greedy")):
        lines.append(
            f"{x['model']}: the greedy swap in order of {x['order']}, within +{x['budget_ppl']:g} on the screening "
            f"windows, kept blocks [{x['blocks_swapped']}] (screening ΔPPL {x['screening_delta_ppl']:+.2f}; held out "
            f"{x['test_delta_ppl']:+.2f} [{x['test_delta_lo']:+.2f}, {x['test_delta_hi']:+.2f}]), removing "
            f"{x['params_removed']:,} FFN parameters for {x['params_added']:,} affine ones "
            f"({(x['params_removed'] - x['params_added']) / x['params_model']:.1%} of the model)."
        )
    return lines


def controls_beside(r: Results) -> list[str]:
    """Notebook 07 beside claims 2a and 2b: trained profiles against their random-init twins, the Gaussian-input
    control (a block "loses" by more than `GAUSSIAN_DROP`) and cross feeding."""
    lines = []
    for x in _records(r.table("controls_random_init_summary")):
        seeds = x["mean_abs_init_seeds"]
        seeds = "" if pd.isna(seeds) else f" against {seeds:.3f} between two init seeds"
        lines.append(
            f"{x['model']}: trained R²_lin spans {x['trained_r2_min']:.3f}–{x['trained_r2_max']:.3f}, its random-init "
            f"twins {x['init_r2_min']:.3f}–{x['init_r2_max']:.3f}; mean |trained − init| = "
            f"{x['mean_abs_trained_init']:.3f}{seeds}; the init twin's median block fits its train split to R² "
            f"{x['init_r2_train_median']:.2f} and held-out windows to {x['init_r2_test_median']:.2f} (trained model's "
            f"gap {x['trained_gap_median']:.2f})."
        )
    for x in _records(r.table("controls_inputs_summary")):
        lines.append(
            f"{x['model']}: on Gaussian inputs with the captured mean and covariance, the median block's R² is "
            f"{x['r2_gaussian_median']:.3f} (own inputs {x['r2_own_median']:.3f}); {int(x['n_gaussian_drop'])} blocks "
            f"lose more than {GAUSSIAN_DROP}."
        )
    for x in _records(r.table("controls_cross_feed_summary")):
        lines.append(
            f"inputs of {x['inputs_from']} → FFN of {x['ffn_of']}: median R² {x['r2_raw']:.3f} raw, "
            f"{x['r2_recoloured']:.3f} re-coloured, {x['r2_ffn_own_inputs']:.3f} on its own inputs."
        )
    return lines


# a study (its notebook's number) → what it measured beside its claims, in words
BESIDE: dict[str, Callable[[Results], list[str]]] = {"06": swap_beside, "07": controls_beside}


def beside(r: Results, notebook: str) -> list[str]:
    """What study `notebook` measured beside its claims, in words (`BESIDE`; [] for a study with none)."""
    return BESIDE[notebook](r) if notebook in BESIDE else []


def findings(r: Results, notebook: str, claims: list[Said] | None = None) -> list[str]:
    """Notebook `notebook`'s conclusion on the tables of `r`: each claim it decides (`Said.findings`, from `claims`, the
    catalog's words judged on `r`, judged here where not given), then what it measured beside them (`BESIDE`)."""
    ids = {str(row.id) for row in of_study(notebook)}
    judged = [c for c in (build(r) if claims is None else claims) if str(c.number) in ids]
    return [line for c in judged for line in c.findings(notebook)] + beside(r, notebook)
