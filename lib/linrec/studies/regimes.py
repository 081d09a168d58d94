"""Notebook 04's study (the paper's Fig. 4, claim 4): two regimes behind a high R²_lin, rank and outliers.

`run(p)` reads each model's capture (statistics only: the regimes need no raw rows, so any cached capture of the text
serves, `linrec.collect.reuse`) and writes `spectrum` (per block: per-feature R², effective ranks, the top features' and
the first position's shares, the input side, the regime; `linrec.analyses.spectrum.spectrum_table`), `spectrum_summary`
(per model: the regimes counted, `linrec.analyses.spectrum.regime_summary`) and `spectrum_inputs` (Spearman ρ of R²_lin
with the input descriptors, `input_side`); with `p.replicate_samples`, the same on each disjoint sample of text
(`spectrum_replicates`) and claim 4's rule on each (`spectrum_replicates_summary`, `regime_replication` with
`linrec.claims.regimes.claim4_holds`). The result also holds what the notebook's figures and tables of single blocks
read.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from linrec.analyses.profile import FIRST_TOKEN_OVERLAP
from linrec.analyses.spectrum import (
    REGIME_TOP1,
    REGIMES,
    block_anatomy,
    input_side,
    regime_replication,
    regime_summary,
    spectrum_table,
)
from linrec.claims.regimes import claim4_holds
from linrec.collect.capture import Capture, get_capture, replicate_captures
from linrec.stats.moments import Moments
from linrec.studies.base import Result
from linrec.studies.stages import Profile

# the per-block table's columns a reader sees first, and how each number is printed
SHOWN = ["model", "block", "r2_lin", "r2_feature_median", "top1_var_share", "n_massive", "r2_ex_top1", "r2_ex_top8",
         "first_var_share", "r2_ex_first", "eff_rank_out", "eff_rank_in", "cond_gram", "cond_gram_test",
         "dynamic_range_in", "regime"]  # fmt: skip
FORMAT = {
    **dict.fromkeys(["r2_lin", "r2_feature_median", "top1_var_share", "r2_ex_top1", "r2_ex_top8", "first_var_share",
                     "r2_ex_first"], "{:.3f}"),
    **dict.fromkeys(["eff_rank_out", "eff_rank_in", "dynamic_range_in"], "{:.1f}"),
    **dict.fromkeys(["cond_gram", "cond_gram_test"], "{:.1e}"),
}  # fmt: skip
# the columns of a sample's spectrum that claim 4's replication keeps (spectrum_replicates, after `sample`)
REPLICATE_COLUMNS = ["model", "block", "regime", "r2_lin", "r2_feature_median", "top1_var_share", "eff_rank_out",
                     "eff_rank_explained", "first_var_share"]  # fmt: skip
# where regimes meet (`RegimesResult.overlaps`): the feature measures beside the first position's
OVERLAP_COLUMNS = ["model", "block", "regime", "r2_lin", "r2_feature_median", "r2_ex_top1", "r2_ex_top8",
                   "top1_var_share", "top1_var_ratio", "first_var_share", "r2_ex_first", "eff_rank_out",
                   "eff_rank_explained"]  # fmt: skip


@dataclass
class RegimesResult(Result):
    spectrum: pd.DataFrame
    spectrum_summary: pd.DataFrame
    spectrum_inputs: pd.DataFrame
    spectrum_replicates: pd.DataFrame | None  # None: no p.replicate_samples
    spectrum_replicates_summary: pd.DataFrame | None
    captures: list[Capture]  # statistics only, in p.models' order

    def overview(self):
        """The per-block table's main columns (`SHOWN`), formatted for reading (`FORMAT`)."""
        return self.spectrum[SHOWN].style.format(FORMAT).hide(axis="index").set_uuid("spectrum")

    def overlaps(self) -> pd.DataFrame:
        """The blocks where regimes could meet: the top feature holding at least `REGIME_TOP1` of the variance, the
        first position at least `FIRST_TOKEN_OVERLAP`, a concentrated regime, or unclassified (`OVERLAP_COLUMNS`)."""
        t = self.spectrum
        mixed = (
            (t["top1_var_share"] >= REGIME_TOP1)
            | (t["first_var_share"] >= FIRST_TOKEN_OVERLAP)
            | t["regime"].str.endswith("concentrated")
            | (t["regime"] == "unclassified")
        )
        return t.loc[mixed, OVERLAP_COLUMNS]

    def anatomies(self, toys: dict[str, tuple[Moments, Moments]]) -> dict[str, dict[str, np.ndarray]]:
        """`linrec.analyses.spectrum.block_anatomy` of the hand-built `toys` (`toy_blocks`), then of the blocks the
        outlier-concentrated side rests on and of each model's most linear broadly linear block, labelled
        "<model> block <b>: <regime>"."""
        out = {f"toy: {name}": block_anatomy(*pair) for name, pair in toys.items()}
        t = self.spectrum
        rests = t[t["regime"] == "outlier-concentrated"]
        linear = t[t["regime"] == "broadly linear"].sort_values("r2_lin").groupby("model", sort=False).tail(1)
        by_label = {c.model_label: c for c in self.captures}
        for r in pd.concat([rests, linear]).itertuples():
            c = by_label[r.model]
            out[f"{r.model} block {r.block}: {r.regime}"] = block_anatomy(
                c.stats["train"][r.block], c.stats["test"][r.block], c.fit(r.block)
            )
        return out


def replicates(p: Profile, spectrum: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every block's regime on `spectrum` (sample 0) and on each of `p.replicate_samples` (the captures notebook 02
    makes of disjoint stretches of the corpus), and claim 4's rule on each: `spectrum_replicates` and its summary."""
    samples = replicate_captures([p.capture_config(m) for m in p.models], p.replicate_samples, p.capture_run())
    reps = [spectrum.assign(sample=0), *(spectrum_table(c).assign(sample=k) for (_, k), c in samples.items())]
    reps = pd.concat(reps, ignore_index=True)
    return reps[["sample", *REPLICATE_COLUMNS]], regime_replication(reps, REGIMES, claim4_holds)


def run(p: Profile) -> RegimesResult:
    """Every block of every model of `p.models`: the tables above, written under `p.results_dir`."""
    # this notebook reads no raw rows
    captures = [get_capture(replace(p.capture_config(m), sample_rows=0), p.capture_run()) for m in p.models]
    table = pd.concat([spectrum_table(c) for c in captures], ignore_index=True)
    summary = regime_summary(table, REGIMES)
    reps, replication = replicates(p, table) if p.replicate_samples else (None, None)
    return RegimesResult(table, summary, input_side(table), reps, replication, captures).write(p.results_dir)
