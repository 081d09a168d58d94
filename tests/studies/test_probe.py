"""Notebook 03's study (linrec.studies.probe) on a tiny five-block model: it writes exactly claim 3's and claim 7's
tables, each byte for byte what the analysis and claim functions write when called directly on the same capture, on
the blocks the train κ picks (found here with numpy's argsort); a profile without the first-position check writes no
such tables; and the dose's block rule (`linrec.analyses.pitfall.median_block`) on planted κ."""

from __future__ import annotations

import filecmp

import numpy as np
import pandas as pd

from helpers import capture_with
from linrec.analyses.pitfall import PitfallSample, budget_table, dose_table, log_steps, median_block
from linrec.analyses.probe import probe_table, rank_sweep, sweep_blocks
from linrec.analyses.probe_summary import pitfall_summary, probe_summary
from linrec.analyses.uncertainty import POOLED
from linrec.base.tables import is_timing, load_table, save_table
from linrec.collect.config import capture_settings
from linrec.studies import probe as study

PROBE = {"probe", "probe_ranks", "probe_summary", "probe_ex_first", "probe_summary_ex_first"}
PITFALL = {"pitfall_budget", "pitfall_dose", "pitfall_summary"}


def written(results_dir) -> set[str]:
    return {p.stem for p in results_dir.glob("*.csv")}


def reference_tables(p) -> dict[str, pd.DataFrame]:
    """Claim 3's and 7's tables as notebook 03 built them before its study existed, from the functions themselves;
    the pitfall's blocks chosen from the probe table's κ by numpy (lowest, highest and median; stable in ties)."""
    cap = capture_with(p.models[0], p.corpus, seed=p.seed, **capture_settings(p.capture), batch_size=p.batch_size,
                      device=p.device)  # fmt: skip
    probe = probe_table(cap, rank=p.rank, seed=p.seed, max_train=p.probe_rows, progress=False)
    sweep = rank_sweep(cap, sweep_blocks(cap.n_blocks), p.probe_ranks, seed=p.seed, max_train=p.probe_rows)
    ex = probe_table(cap, rank=p.rank, seed=p.seed, trained=False, max_train=p.probe_rows, without_first=True)
    order = np.argsort(probe["cond_gram"].to_numpy(), kind="stable")  # blocks are rows 0 … n-1 here
    sample = PitfallSample(n_outputs=p.pitfall_outputs, max_train=p.probe_rows)
    steps = log_steps(100, p.budget_max_steps, per_decade=4)
    budget = budget_table(cap, [int(order[0]), int(order[-1])], steps, sample, seed=p.seed)
    dose_steps = log_steps(10, p.dose_steps, per_decade=4)
    dose = dose_table(cap, int(order[len(order) // 2]), p.dose_kappas, dose_steps, sample, seed=p.seed)
    return {
        "probe": probe,
        "probe_ranks": sweep,
        "probe_summary": probe_summary(probe, sweep, n_boot=p.n_boot, seed=p.seed),
        "probe_ex_first": ex,
        "probe_summary_ex_first": probe_summary(ex, None, n_boot=p.n_boot, seed=p.seed),
        "pitfall_budget": budget,
        "pitfall_dose": dose,
        "pitfall_summary": pitfall_summary(probe, budget, dose, n_boot=p.n_boot, seed=p.seed),
    }


def test_run_writes_every_table_of_notebook_03_as_its_functions_make_it(study_profile, tmp_path):
    p = study_profile()
    probed, pitfall = study.run(p)
    out = tmp_path / "results"
    assert written(out) == PROBE | PITFALL  # exactly its tables, under their registry names
    want = reference_tables(p)
    ref = tmp_path / "reference"
    for name, table in want.items():
        save_table(table, name, ref)
        if "summary" in name:  # the study summarises the tables as written (12 digits: save_table, issue 90)
            pd.testing.assert_frame_equal(load_table(name, out), load_table(name, ref), rtol=1e-9)
        else:
            assert filecmp.cmp(out / f"{name}.csv", ref / f"{name}.csv", shallow=False), f"{name}.csv differs"
        got = (probed if name in PROBE else pitfall).tables()[name]  # what the notebook shows is what was written
        keep = [c for c in table.columns if not is_timing(c)]
        pd.testing.assert_frame_equal(got[keep], table[keep])
    assert probed.probe["n_train_rows"].eq(p.probe_rows).all()  # the profile's seeded subset, not every train row
    # the dose ran on the median-κ block and the budget curve on the best and the worst, none of them the same
    assert pitfall.pitfall_dose["block"].nunique() == 1
    assert pitfall.pitfall_dose["block"].iloc[0] not in set(pitfall.pitfall_budget["block"])
    assert len(set(pitfall.pitfall_budget["block"])) == 2 * p.mechanism_k
    # the views the notebook shows
    assert list(probed.per_model()["model"]) == [probed.probe["model"].iloc[0]] and POOLED in set(
        probed.probe_summary["model"]
    )
    wide = probed.gains_by_rank()
    assert list(wide.columns) == p.probe_ranks and len(wide) == probed.probe_ranks["block"].nunique()
    assert (
        wide.loc[(probed.probe_ranks["model"].iloc[0], probed.probe_ranks["block"].iloc[-1]), p.probe_ranks[-1]]
        == (probed.probe_ranks["gain"].iloc[-1])
    )
    longest = pitfall.longest_dose()
    assert set(longest["step"]) == {max(log_steps(10, p.dose_steps, per_decade=4))}
    assert len(longest) == len(p.dose_kappas) * 2  # each κ, Adam and SGD


def test_a_profile_without_the_first_position_check_writes_none_of_its_tables(study_profile, tmp_path):
    probed = study.run_probe(study_profile(probe_without_first=False))
    assert probed.probe_ex_first is None and probed.probe_summary_ex_first is None
    assert written(tmp_path / "results") == PROBE - {"probe_ex_first", "probe_summary_ex_first"}


def test_switching_the_first_position_check_off_removes_an_earlier_runs_tables(study_profile, tmp_path):
    """An earlier run with the check on left its tables in the folder; a run with it off must not leave them to be
    read as its own (the report would give claim 3 a 'without the first position' verdict this run never measured:
    found when the default profile turned the check off, 2026-11-27)."""
    study.run_probe(study_profile(probe_without_first=True))
    assert {"probe_ex_first", "probe_summary_ex_first"} <= written(tmp_path / "results")
    study.run_probe(study_profile(probe_without_first=False))
    assert written(tmp_path / "results") == PROBE - {"probe_ex_first", "probe_summary_ex_first"}


def test_the_dose_block_is_the_median_by_train_kappa_whatever_the_blocks_are_called():
    assert median_block(pd.Series([5.0, 1.0, 9.0, 3.0, 7.0])) == 0  # κ order: blocks 1, 3, 0, 4, 2
    assert median_block(pd.Series([5.0, 1.0, 9.0, 3.0])) == 0  # even count: the upper of the two middle ones
    assert median_block(pd.Series([4.0, 2.0, 3.0], index=[10, 20, 30])) == 30  # the block, not its position
    assert median_block(pd.Series([2.0, 2.0, 2.0, 1.0], index=[7, 4, 9, 5])) == 4  # ties keep the table's order
