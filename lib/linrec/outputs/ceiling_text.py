"""Notebook 02's findings in words and its view of the ceiling table: the styled `r2_lin` table, the replication on
fresh text sentence by sentence, the blocks whose R²_lin rests on the first token, and, where this profile does not
run the learning curve or the replication, what the last run of the profile that does (`params/curve.yaml`,
`params/full.yaml`) found, read from its results folder."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from pandas.io.formats.style import Styler

from linrec.analyses.large_n import curve_sentence
from linrec.analyses.profile import FIRST_TOKEN_SHARE
from linrec.base.tables import load_table
from linrec.outputs.report_figures import stale_tables

R2_COLUMNS = ["model", "block", "r2_lin", "r2_lo", "r2_hi", "r2_feature_median", "first_var_share", "r2_ex_first",
              "cond_gram", "cond_scaled", "n_train", "n_test"]  # fmt: skip
SHARES = ["r2_lin", "r2_lo", "r2_hi", "r2_feature_median", "first_var_share", "r2_ex_first"]  # three decimals


def r2_lin_view(table: pd.DataFrame) -> Styler:
    """`r2_lin` as notebook 02 shows it: R²s and shares to three decimals, condition numbers in scientific notation,
    counts whole, no index."""
    fmt = dict.fromkeys(SHARES, "{:.3f}") | {"cond_gram": "{:.1e}", "cond_scaled": "{:.1e}"}
    return table[R2_COLUMNS].style.format(fmt).hide(axis="index").set_uuid("r2_lin")


def curve_text(overview: pd.DataFrame) -> str:
    """One sentence per model of `r2_curve_overview` (`linrec.analyses.large_n.curve_sentence`)."""
    return "\n".join(curve_sentence(row) for row in overview.to_dict("records"))


def curve_elsewhere(root: Path, differs: str | None) -> str | None:
    """Where this profile skips the learning curve: what `params/curve.yaml` measured (`differs`: how that profile's
    settings differ from this run's, `linrec.app.profile.measured_elsewhere`), or that its last run in
    `results/curve/` is an older linrec's, or that run's findings; None where there is no such run."""
    folder = root / "results" / "curve"
    if differs:
        return f"Not run in this profile; params/curve.yaml, which runs it, measured {differs}"
    if stale := stale_tables(folder, "02"):  # an older linrec's run: no numbers from it
        return (
            "Not run in this profile. The last run of params/curve.yaml, in results/curve/, was written by an older "
            f"linrec ({', '.join(f'{t}.csv' for t in stale)} lack columns this linrec writes), so none of its numbers "
            "are shown; `linrec figures --params params/curve.yaml --only 02` refreshes it."
        )
    if (last := load_table("r2_curve_overview", folder)) is not None:
        head = "Not run in this profile. The last run of params/curve.yaml (results/curve/r2_curve_overview.csv) found:"
        return f"{head}\n{curve_text(last)}"
    return None


def replication_text(replication: pd.DataFrame) -> str:
    """One sentence per model of `r2_replicates_summary`: how far a block's R²_lin moves between stretches of text
    against its window interval, and whether claim 1 replicates."""
    return "\n".join(_replication_lines(replication))


def _replication_lines(replication: pd.DataFrame) -> list[str]:
    return [
        f"{r['model']}: over samples {r['samples']}, a block's R²_lin moves by a median SD of {r['sd_median']:.3f} "
        f"(at most {r['sd_max']:.3f}, block {r['sd_max_block']}) against a window-interval half-width of "
        f"{r['ci_half_width_median']:.3f}; claim 1 {r['replication']} ({r['n_claim1_passes']} of {r['n_samples']})."
        for r in replication.to_dict("records")
    ]


def replication_elsewhere(root: Path, differs: str | None) -> str:
    """Where this profile runs no replication: what `params/full.yaml` measured (`differs` as in `curve_elsewhere`),
    or its last run's sentences (`results/full/`), or that it runs samples 1 and 2."""
    if differs:
        head = "replication on fresh text: not run in this profile; params/full.yaml, which runs it, measured"
        return f"{head} {differs}"
    if (last := load_table("r2_replicates_summary", root / "results" / "full")) is not None:
        head = "Not run in this profile. The last run of params/full.yaml "
        head += "(results/full/r2_replicates_summary.csv) found:"
        return "\n".join([head, *_replication_lines(last)])
    return "replication on fresh text: not run in this profile (params/full.yaml runs samples 1 and 2)"


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
