"""Notebook 03's study (the paper's Fig. 3; claims 3, 7a and 7b): what the closed-form map misses, probed two ways.

`run_probe(p)` reads each model's capture (its stored rows: the probe and the trained baselines fit them) and writes
claim 3's tables: `probe` (per block: the rank-`p.rank` bilinear probe's R²_poly and gain, the closed-form quadratic on
the top input components, the trained Adam and SGD baselines beside the ceiling on the same rows;
`linrec.analyses.probe.probe_table`), `probe_ranks` (the probe at each of `p.probe_ranks` on three blocks per model,
`rank_sweep`) and `probe_summary` (`linrec.analyses.probe_summary.probe_summary`); with `p.probe_without_first`, the
same probe on the rows at positions ≥ 1 (`probe_ex_first`, `probe_summary_ex_first`).

`run_pitfall(p, probed)` writes claim 7's: on each model's `p.mechanism_k` best- and worst-conditioned blocks the budget
curve (`pitfall_budget`, `linrec.analyses.pitfall.budget_table`), on its median-κ block the dose–response by
construction (`pitfall_dose`, `dose_table`), both chosen by the train split's κ from the probe table, and
`pitfall_summary` (`linrec.analyses.probe_summary.pitfall_summary`: 7a from the probe table's trained baselines, 7b from
the two measurements). `run(p)` is both, in that order.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from linrec.analyses.pitfall import PitfallSample, budget_table, dose_table, log_steps, median_block
from linrec.analyses.probe import mechanism_blocks, probe_table, rank_sweep, sweep_blocks
from linrec.analyses.probe_summary import pitfall_summary, probe_summary
from linrec.analyses.uncertainty import POOLED
from linrec.collect.capture import Capture, get_capture
from linrec.studies.base import Result, Settings, Summary, Tables
from linrec.studies.stages import Profile

# the probe table's columns a reader sees first, and how each number is printed
SHOWN = ["model", "block", "r2_lin", "r2_poly", "gain", "gain_quad", "probe_stop", "r2_ceiling_rows", "r2_trained_adam",
         "r2_trained_sgd", "adam_reach", "cond_gram"]  # fmt: skip
FORMAT = {
    **dict.fromkeys(["r2_lin", "r2_poly", "gain", "gain_quad", "r2_ceiling_rows", "r2_trained_adam", "r2_trained_sgd"],
                    "{:.3f}"),
    "adam_reach": "{:.1f}",
    "cond_gram": "{:.1e}",
}  # fmt: skip


@dataclass
class ProbeResult(Result):
    probe: pd.DataFrame
    probe_ranks: pd.DataFrame
    probe_summary: pd.DataFrame
    probe_ex_first: pd.DataFrame | None  # None: p.probe_without_first is off
    probe_summary_ex_first: pd.DataFrame | None
    captures: dict[str, Capture]  # {model: its capture}: the pitfall trains on the same stored rows

    def overview(self):
        """The probe table's main columns (`SHOWN`), formatted for reading (`FORMAT`)."""
        return self.probe[SHOWN].style.format(FORMAT).hide(axis="index").set_uuid("probe")

    def gains_by_rank(self) -> pd.DataFrame:
        """The rank sweep's gain, one row per model and block, one column per rank."""
        return self.probe_ranks.pivot_table(index=["model", "block"], columns="rank", values="gain", sort=False)

    def per_model(self) -> pd.DataFrame:
        """`probe_summary` without the pooled row: each model judged on its own blocks."""
        return self.probe_summary[self.probe_summary["model"] != POOLED]


@dataclass
class PitfallResult(Result):
    pitfall_budget: pd.DataFrame
    pitfall_dose: pd.DataFrame
    pitfall_summary: pd.DataFrame

    def longest_dose(self) -> pd.DataFrame:
        """The dose–response at its longest budget: per κ and optimiser, the tuned rate and the fits."""
        return self.pitfall_dose[self.pitfall_dose["step"] == self.pitfall_dose["step"].max()]


def model_capture(p: Profile, model: str) -> Capture:
    """The capture of `model` the probe reads (the profile's request whole: statistics and stored rows); notebook 03
    probes one of its blocks by hand from it."""
    return get_capture(p.capture_config(model), p.capture_run())


def run_probe(p: Profile) -> ProbeResult:
    """Claim 3's probe on every block of every model of `p.models` (tables above), written under `p.results_dir`."""
    captures = {m: model_capture(p, m) for m in p.models}
    table = pd.concat(
        [probe_table(c, rank=p.rank, seed=p.seed, max_train=p.probe_rows) for c in captures.values()],
        ignore_index=True,
    )
    sweep = pd.concat(
        [
            rank_sweep(c, sweep_blocks(c.n_blocks), p.probe_ranks, seed=p.seed, max_train=p.probe_rows)
            for c in captures.values()
        ],
        ignore_index=True,
    )
    table_ex = None
    if p.probe_without_first:
        table_ex = pd.concat(
            [
                probe_table(c, rank=p.rank, seed=p.seed, trained=False, max_train=p.probe_rows, without_first=True)
                for c in captures.values()
            ],
            ignore_index=True,
        )
    measured = {"probe": table, "probe_ranks": sweep, "probe_ex_first": table_ex}
    s = summarise_probe({k: t for k, t in measured.items() if t is not None}, p)
    return ProbeResult(table, sweep, s["probe_summary"], table_ex, s.get("probe_summary_ex_first"),
                       captures).write(p.results_dir)  # fmt: skip


def summarise_probe(tables: Tables, p: Settings) -> Tables:
    """Claim 3's summaries from the probe's tables: `probe_summary` (with the rank sweep where written) and, where
    the probe ran without the first position, `probe_summary_ex_first`."""
    out = {}
    if (probe := tables.get("probe")) is not None:
        out["probe_summary"] = probe_summary(probe, tables.get("probe_ranks"), n_boot=p.n_boot, seed=p.seed)
    if (ex := tables.get("probe_ex_first")) is not None:
        out["probe_summary_ex_first"] = probe_summary(ex, None, n_boot=p.n_boot, seed=p.seed)
    return out


def summarise_pitfall(tables: Tables, p: Settings) -> Tables:
    """Claim 7's `pitfall_summary` from the probe table and the pitfall's budget and dose tables."""
    if tables.get("probe") is None:
        return {}
    summary = pitfall_summary(tables["probe"], tables.get("pitfall_budget"), tables.get("pitfall_dose"), p.n_boot,
                              p.seed)  # fmt: skip
    return {"pitfall_summary": summary}


PROBE = Summary("the probe's summaries", ("probe", "probe_ranks", "probe_ex_first"), summarise_probe)
PITFALL = Summary("pitfall_summary", ("probe", "pitfall_budget", "pitfall_dose"), summarise_pitfall)


def run_pitfall(p: Profile, probed: ProbeResult) -> PitfallResult:
    """Claim 7b's budget curves and dose–response on the blocks `probed.probe`'s train κ picks, and claim 7's
    summary, written under `p.results_dir`."""
    checkpoints = log_steps(100, p.budget_max_steps, per_decade=4)
    dose_checkpoints = log_steps(10, p.dose_steps, per_decade=4)
    sample = PitfallSample(n_outputs=p.pitfall_outputs, max_train=p.probe_rows)  # what each optimiser sees
    budget, dose = [], []
    for c, (_, t) in zip(probed.captures.values(), probed.probe.groupby("model", sort=False)):
        cond = t.set_index("block")["cond_gram"]
        budget.append(budget_table(c, mechanism_blocks(cond, p.mechanism_k), checkpoints, sample, seed=p.seed))
        dose.append(dose_table(c, median_block(cond), p.dose_kappas, dose_checkpoints, sample, seed=p.seed))
    budget, dose = pd.concat(budget, ignore_index=True), pd.concat(dose, ignore_index=True)
    summary = summarise_pitfall({"probe": probed.probe, "pitfall_budget": budget, "pitfall_dose": dose}, p)
    return PitfallResult(budget, dose, summary["pitfall_summary"]).write(p.results_dir)


def run(p: Profile) -> tuple[ProbeResult, PitfallResult]:
    """The whole of notebook 03: the probe, then the pitfall on its blocks."""
    probed = run_probe(p)
    return probed, run_pitfall(p, probed)
