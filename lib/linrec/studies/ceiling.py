"""Notebook 02's study (the paper's §3 and Fig. 2, claim 1): the closed-form ceiling R²_lin of every block of every
model, how it depends on the train size, which of its moves between adjacent blocks survive a test, and whether the
profile holds on fresh text.

`run(p)` writes, under `p.results_dir`:
- `r2_lin`: one row per model and block (`linrec.analyses.recoverability.ceiling_table` on the capture of `p.corpus`,
  statistics only: any cached capture of that text serves);
- with `p.curve_train_tokens`, the learning curve (`linrec.collect.curves.get_curve`): `r2_curve` (per block and
  train size, mean of the split seeds with the large-n estimate, `linrec.analyses.large_n.curve_summary`),
  `r2_curve_runs` (every seed's numbers) and `r2_curve_overview` (one row per model, at `ref_tokens`);
- `r2_moves`: every move between adjacent blocks that claim 1's rule counts, each with its paired window-jackknife
  test (`linrec.analyses.profile.move_tests`), on all positions and without each window's first;
- `r2_lin_summary`: claim 1's numbers on the profile `p.profile` names ("capture", or "curve": R²_lin at the curve's
  largest size) and, where the curve ran, `r2_lin_summary_other` on the other one;
- with `p.replicate_samples`, `r2_replicates` (the profile on each disjoint stretch of text, sample 0 being the one
  above) and `r2_replicates_summary` (`linrec.analyses.profile.replication_summary`, claim 1's rule on each:
  `linrec.claims.profile.claim1_holds`).
A part the profile switches off leaves its fields `None` (not written)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar

import pandas as pd

from linrec.analyses.large_n import CURVE_N_BOOT, curve_overview, curve_split, curve_summary, curve_table, with_profile
from linrec.analyses.profile import move_tests, profile_summary, replication_summary
from linrec.analyses.recoverability import ceiling_table, profile_replicates
from linrec.base.errors import LinrecError
from linrec.base.tables import read
from linrec.claims.profile import claim1_holds
from linrec.collect.capture import Capture, get_capture, replicate_captures
from linrec.collect.curves import CurveConfig, get_curve
from linrec.studies.base import Result
from linrec.studies.stages import Profile

DEFAULT_REF_TOKENS = 16_384  # the default capture's train size: the learning curve's reference where it measures it


@dataclass
class CeilingResult(Result):
    carried: ClassVar[tuple[str, ...]] = ("shown",)
    r2_lin: pd.DataFrame
    r2_moves: pd.DataFrame
    r2_lin_summary: pd.DataFrame
    r2_lin_summary_other: pd.DataFrame | None = None
    r2_curve: pd.DataFrame | None = None
    r2_curve_runs: pd.DataFrame | None = None
    r2_curve_overview: pd.DataFrame | None = None
    r2_replicates: pd.DataFrame | None = None
    r2_replicates_summary: pd.DataFrame | None = None
    curve_split: pd.DataFrame | None = None  # r2_lin against the learning curve's at its train rows (the report's)
    captures: list[Capture] = field(default_factory=list, repr=False)  # one per model, statistics only
    shown: pd.DataFrame | None = None  # the profile claim 1 and Figure 2 read: r2_lin, or the curve's at its largest
    ref_tokens: int | None = None  # the learning curve's reference train size (its overview's `gain_*` start there)

    def move_counts(self) -> pd.DataFrame:
        """Per model and positions: the moves tested and those that survive the false-discovery rate (`counted`)."""
        grouped = self.r2_moves.groupby(["model", "positions"], sort=False)["counts"]
        return grouped.agg(tested="size", counted="sum")

    def summaries(self) -> pd.DataFrame:
        """Claim 1's summary on this profile's ceiling, then (where the curve ran) on the other one."""
        return pd.concat([t for t in (self.r2_lin_summary, self.r2_lin_summary_other) if t is not None],
                         ignore_index=True)  # fmt: skip


def check_profile(p: Profile) -> None:
    """`p.profile` must name a ceiling this run measures: "capture", or "curve" where the curve runs."""
    if p.profile not in ("capture", "curve") or (p.profile == "curve" and not p.curve_train_tokens):
        raise LinrecError(f"profile must be 'capture' or 'curve' (with curve_train_tokens), got '{p.profile}'")


def model_capture(p: Profile, model: str, corpus: str | None = None) -> Capture:
    """The capture of `model` on `corpus` (None: `p.corpus`) that this study fits (statistics only: sample_rows 0, so
    notebook 01's capture or, for another corpus, notebook 05's serves: `linrec.collect.reuse`); notebooks 02 and 04–06
    compute one of its blocks by hand from it, 05 on two corpora."""
    return get_capture(replace(p.capture_config(model, corpus), sample_rows=0), p.capture_run())


def fit_blocks(p: Profile) -> tuple[list[Capture], pd.DataFrame]:
    """The captures of `p.models` on `p.corpus` (`model_capture`) and their `r2_lin` table."""
    captures = [model_capture(p, m) for m in p.models]
    return captures, pd.concat([ceiling_table(c) for c in captures], ignore_index=True)


def learning_curves(p: Profile) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, int]:
    """Every model's learning curve at `p.curve_train_tokens`: (`r2_curve`, `r2_curve_runs`, `r2_curve_overview`,
    the overview's reference train size: the default capture's where the curve measures it, else its middle size)."""
    sizes = p.curve_train_tokens
    curves = [
        get_curve(
            CurveConfig(m, p.corpus, p.capture_config(m).seq_len, sizes, p.curve_test_tokens, range(p.curve_seeds)),
            p.capture_run(),
        )
        for m in p.models
    ]
    summary = pd.concat([curve_summary(c, n_boot=CURVE_N_BOOT, seed=p.seed) for c in curves], ignore_index=True)
    runs = pd.concat([curve_table(c) for c in curves], ignore_index=True)
    ref = DEFAULT_REF_TOKENS if DEFAULT_REF_TOKENS in sizes else sizes[len(sizes) // 2]
    return summary, runs, curve_overview(summary, ref_tokens=ref), ref


def move_table(table: pd.DataFrame, captures: list[Capture]) -> pd.DataFrame:
    """`r2_moves`: each capture's moves tested on all positions and, where it kept the sums without each window's
    first position, on those too."""
    return pd.concat(
        [
            move_tests(table[table["model"] == c.model_label], profile_replicates(c, rest=rest)[1], positions)
            for c in captures
            for positions, rest in (("all", False), ("ex_first", True))
            if not rest or c.heldout_rest is not None
        ],
        ignore_index=True,
    )


def replicates(p: Profile, table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(`r2_replicates`, `r2_replicates_summary`): `table` as sample 0 beside each model's capture on every stretch
    of `p.replicate_samples` (disjoint text of the same corpus, statistics only)."""
    samples = replicate_captures([p.capture_config(m) for m in p.models], p.replicate_samples, p.capture_run())
    reps = [table.assign(sample=0), *(ceiling_table(c).assign(sample=k) for (_, k), c in samples.items())]
    reps = pd.concat(reps, ignore_index=True)
    return reps, replication_summary(reps, claim1_holds)


def run(p: Profile) -> CeilingResult:
    """Notebook 02's tables (module docstring) for the profile's models on its corpus, written under
    `p.results_dir`."""
    check_profile(p)
    captures, table = fit_blocks(p)
    curve = runs = overview = ref = None
    if p.curve_train_tokens:
        curve, runs, overview, ref = learning_curves(p)
    shown = with_profile(table, curve) if p.profile == "curve" else table
    moves = move_table(table, captures)
    summary = profile_summary(shown, moves if p.profile == "capture" else None)
    other = None
    if curve is not None:  # the same rule on the other profile: does the verdict depend on the train size?
        other = profile_summary(*((table, moves) if p.profile == "curve" else (with_profile(table, curve), None)))
    reps = rep_summary = None
    if p.replicate_samples:
        reps, rep_summary = replicates(p, table)
    result = CeilingResult(table, moves, summary, other, curve, runs, overview, reps, rep_summary,
                           split_against_curve(p, table, curve), captures, shown, ref)  # fmt: skip
    return result.write(p.results_dir)


def split_against_curve(p: Profile, table: pd.DataFrame, curve: pd.DataFrame | None) -> pd.DataFrame | None:
    """`table` (this run's r2_lin) against the learning curve (`linrec.analyses.large_n.curve_split`): this run's, else
    the last run of the profile that stands in for it, never this folder's own (an earlier run's, not this one's)."""
    if curve is None:
        curve = read("r2_curve_overview", p.results_dir, own=False).also("r2_curve").table
    return curve_split(curve, table)
