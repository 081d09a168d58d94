"""The summary tables of the folders a benchmark writes once and commits (`results/quant/`, `results/split/`) and of
the learning curve set against the profiles' captures (`results/curve/`): each table's folder, the tables it is
computed from, its columns and what it holds. Kept apart from `linrec.base.registry.TABLES`, whose tables a
notebook writes. `linrec.outputs.bench_summaries` writes them; the docs' generated blocks
(`linrec.outputs.doc_blocks`) read them, so rendering a doc computes nothing (issue 86)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BenchTable:
    folder: str  # relative to the checkout
    inputs: tuple[str, ...]  # the tables it is computed from, relative to the checkout
    columns: tuple[str, ...]
    about: str

    def path(self, name: str) -> str:
        return f"{self.folder}/{name}.csv"


BENCH_TABLES: dict[str, BenchTable] = {
    "quant_summary": BenchTable(
        "results/quant",
        ("results/quant/quant_sensitivity.csv",),
        tuple(
            "model scale seed n_seeds n_blocks change_median change_max max_block half_width_median beyond n_beyond "
            "n_rows up draw_spread ppl_base ppl_pct_min ppl_pct_max ppl_change ppl_change_lo ppl_change_hi".split()
        ),
        "per model, scale and seed (a draw): linrec.analyses.quant.summary of quant_sensitivity at that scale, its "
        "per-model values repeated on each of the model's draws; written by benchmarks/quant.py",
    ),
    "split_summary": BenchTable(
        "results/split",
        ("results/split/split_shift.csv",),
        tuple("model n_blocks n_down n_up shift_median drop_max drop_block sd_windows sd_documents".split()),
        "per model: linrec.analyses.large_n.split_summary of split_shift; written by benchmarks/split.py",
    ),
    "curve_other_split": BenchTable(
        "results/curve",
        ("results/curve/r2_curve.csv", "results/default/r2_lin.csv", "results/full/r2_lin.csv"),
        tuple("profile model n_train n_blocks n_lower n_outside diff_median diff_mean drop_max drop_block".split()),
        "per profile (default; full, its models the default lacks) and model: linrec.analyses.large_n.other_split, "
        "the learning curve's R²_lin against the profile's r2_lin at its train rows",
    ),
}
