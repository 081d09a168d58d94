"""Notebook 02's findings in words and its view of the ceiling table: the styled `r2_lin` table, the replication on
fresh text sentence by sentence, the blocks whose R²_lin rests on the first token, and, where this profile does not
run the learning curve or the replication, the sentences of what the last run of the profile that does
(`params/curve.yaml`, `params/full.yaml`) found, as `linrec.outputs.results.elsewhere` quotes it."""

from __future__ import annotations

import numpy as np
import pandas as pd
from pandas.io.formats.style import Styler

from linrec.analyses.profile import FIRST_TOKEN_SHARE

R2_COLUMNS = ["model", "block", "r2_lin", "r2_lo", "r2_hi", "r2_feature_median", "first_var_share", "r2_ex_first",
              "cond_gram", "cond_scaled", "n_train", "n_test"]  # fmt: skip
SHARES = ["r2_lin", "r2_lo", "r2_hi", "r2_feature_median", "first_var_share", "r2_ex_first"]  # three decimals


def r2_lin_view(table: pd.DataFrame) -> Styler:
    """`r2_lin` as notebook 02 shows it: R²s and shares to three decimals, condition numbers in scientific notation,
    counts whole, no index."""
    fmt = dict.fromkeys(SHARES, "{:.3f}") | {"cond_gram": "{:.1e}", "cond_scaled": "{:.1e}"}
    return table[R2_COLUMNS].style.format(fmt).hide(axis="index").set_uuid("r2_lin")


def curve_sentence(row: dict) -> str:
    """What the learning curve says about one model (a row of `linrec.analyses.large_n.curve_overview`), in one
    sentence."""

    def f(x: float, nd: int = 3) -> str:
        return f"{x:.{nd}f}" if np.isfinite(x) else "n/a"

    return (
        f"{row['model']}: from {row['ref_tokens']:.0f} to {row['largest_tokens']:.0f} train tokens R²_lin rises by "
        f"{f(row['gain_largest_median'])} (median over blocks; {f(row['gain_largest_min'])} to "
        f"{f(row['gain_largest_max'])}), and the large-n estimate lies {f(row['gain_inf_median'])} above the "
        f"{row['ref_tokens']:.0f}-token value (median; 95 % intervals over seeds and windows, median width "
        f"{f(row['ci_width_inf_median'])}); block order kept: Spearman {f(row['rank_spearman_ref_inf'], 2)}"
    )


def curve_text(overview: pd.DataFrame) -> str:
    """One sentence per model of `r2_curve_overview` (`curve_sentence`)."""
    return "\n".join(curve_sentence(row) for row in overview.to_dict("records"))


def replication_text(replication: pd.DataFrame) -> str:
    """One sentence per model of `r2_replicates_summary`: how far a block's R²_lin moves between stretches of text
    against its window interval, and whether claim 1 replicates."""
    return "\n".join(
        f"{r['model']}: over samples {r['samples']}, a block's R²_lin moves by a median SD of {r['sd_median']:.3f} "
        f"(at most {r['sd_max']:.3f}, block {r['sd_max_block']}) against a window-interval half-width of "
        f"{r['ci_half_width_median']:.3f}; claim 1 {r['replication']} ({r['n_claim1_passes']} of {r['n_samples']})."
        for r in replication.to_dict("records")
    )


def first_token_text(table: pd.DataFrame) -> str:
    """Per model of `r2_lin`, the blocks holding at least `FIRST_TOKEN_SHARE` of their output variance on the windows'
    first token, with R²_lin without it; or that there are none and R²_lin describes running text."""
    lines = []
    for m, t in table.groupby("model", sort=False):
        sink = t[t["first_var_share"] >= FIRST_TOKEN_SHARE]
        if sink.empty:
            lines.append(f"{m}: no block holds half its output variance on the first token; R²_lin describes running "
                         "text.")  # fmt: skip
        lines += [
            f"{m} block {r.block}: R²_lin {r.r2_lin:.3f}, of which the first token holds {r.first_var_share:.0%} "
            f"of the output variance; without it R²_lin is {r.r2_ex_first:.3f}."
            for r in sink.itertuples()
        ]
    return "\n".join(lines)
