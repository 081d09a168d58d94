"""linrec.outputs.refresh: the summaries rebuilt from the per-block tables are the notebooks' own (each stage's
`summarise`), and claim 5's word (from its pairs of corpora) and the seeds tables follow the one convention for shape
and level."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers import DEFAULT
from helpers import run_profiles as _profiles
from linrec.base.registry import TABLES
from linrec.base.tables import load_table, save_table
from linrec.claims.corpora import verdict_5
from linrec.claims.rules import (
    NOT_REPRODUCED,
)
from linrec.outputs.refresh import refresh


def test_refresh_rebuilds_the_summaries_the_notebooks_wrote(tmp_path, monkeypatch):
    """`refresh` on the committed default run rebuilds its summaries number for number (it reproduced what notebooks
    03 and 06 had written, to the 12th digit, when the procedures were last the same), and a changed per-block
    number moves the summary that reads it. The methods table is rewritten too, from 50 simulated data sets a
    correlation setting instead of 1,000 and 5 a window interval (`coverage` floors them at 50;
    tests/analyses/test_calibration.py runs `window_table` at 5 too): its numbers are not compared here
    (tests/analyses/test_coverage.py and tests/outputs/test_methods.py check them). At 1,000 the two refreshes took 70
    of this test's 74 s (2 cores, 2026-11-27); at the floor of 50, the window rows alone took 63 of its 77 s under
    cProfile (2026-11-29)."""
    from functools import partial

    import linrec.analyses.coverage
    import linrec.outputs.refresh

    monkeypatch.setattr(linrec.outputs.refresh, "coverage", partial(linrec.outputs.refresh.coverage, reps=50))
    windows = linrec.analyses.coverage.window_table
    monkeypatch.setattr(linrec.analyses.coverage, "window_table", lambda *a, reps, **k: windows(*a, reps=5, **k))
    work = tmp_path / "default"
    shutil.copytree(DEFAULT, work, ignore=shutil.ignore_patterns("notebooks", "calibration.csv"))
    names = refresh(work)
    # the default routes no block (params/full.yaml does): no routing summary to rebuild
    assert {"probe_summary", "pitfall_summary", "swap_predictors", "calibration", "corpora_verdict"} <= set(names)
    for name in ("probe_summary", "swap_predictors", "pitfall_summary", "corpora_verdict"):
        pd.testing.assert_frame_equal(load_table(name, work), load_table(name, DEFAULT), rtol=1e-9, atol=1e-12)
    path = work / "probe.csv"  # one per-block number changed in place (the timing columns stay in timings/)
    probe = pd.read_csv(path)
    probe.loc[probe["model"] == "smollm2-135m", "gain"] *= 3
    probe.to_csv(path, index=False)
    refresh(work)
    assert load_table("probe_summary", work)["gain_median"].iloc[0] == pytest.approx(
        3 * load_table("probe_summary", DEFAULT)["gain_median"].iloc[0]
    )


SMALL, LARGE = (0.01, 0.05), (0.2, 0.3)  # intervals well below and well above 0.1


def _row(shape, level, model="m", **more):
    return {"model": model, "verdict": "mixed", "shape_lo": shape[0], "shape_hi": shape[1], "level_lo": level[0],
            "level_hi": level[1], **more}  # fmt: skip


A = np.array([0.90, 0.70, 0.50, 0.80])
B = np.array([0.60, 0.45, 0.20, 0.55])  # A shifted down by 0.25, blocks 1 and 2 moved by ∓0.05 and +0.05


# ---- refresh: the committed tables brought to the convention without models -----------------------------------------
def test_refresh_rewrites_claim5s_word_and_the_seeds_tables(tmp_path: Path):
    new = ("overlay_verdict", "level_share_ex_first", "level_lo_ex_first", "level_hi_ex_first")
    cols = [c for c in TABLES["corpora_verdict"].columns if c not in new]
    old = pd.DataFrame([{c: 0.0 for c in cols} | _row(SMALL, (0.243, 0.46), "gemma")]).assign(shape_verdict="x")
    old.to_csv(tmp_path / "corpora_verdict.csv", index=False)  # as a former linrec wrote it
    assert refresh(tmp_path) == []  # no pairs of corpora: left as it is, claim 5 says "rerun notebook 05"
    assert "rerun notebook 05" in verdict_5(None, pd.read_csv(tmp_path / "corpora_verdict.csv")).reason
    pairs = pd.DataFrame([{c: 0.01 for c in TABLES["corpora_agreement"].columns}]).assign(  # code − web beyond 0.1
        model="gemma", corpus_a="code", corpus_b="web", level_lo=0.105, level_hi=0.155
    )
    save_table(pairs, "corpora_agreement", tmp_path)  # as today's notebook 05 writes it
    assert refresh(tmp_path) == ["corpora_verdict"]
    t = load_table("corpora_verdict", tmp_path)
    assert t.loc[0, "overlay_verdict"] == "shaped by the corpus" and np.isnan(t.loc[0, "level_lo_ex_first"])
    assert verdict_5(pairs, t).verdict == NOT_REPRODUCED

    prof = _profiles({"g": {0: B, 600: A}, "s": {0: A, 600: B}})
    prof = prof.assign(mlp="gelu", init_seed=0, data_seed=0, tokens_seen=0, r2_lo=0.0, r2_hi=1.0, ppl_test=9.0,
                       train_loss=1.0, n_test_windows=8)  # fmt: skip
    save_table(prof, "training_profiles", tmp_path)
    old = pd.DataFrame([{"kind": "trained vs init", "a": "g", "b": "g step 0", "step": 600, "distance": 0.275,
                         "distance_lo": 0.27, "distance_hi": 0.28, "corr": 1.0, "corr_lo": 1.0, "corr_hi": 1.0,
                         "floor": 0.01, "beyond_noise": True, "within_noise": False, "outcome": "differ"},
                        {"kind": "variant", "a": "g", "b": "s", "step": 600, "distance": 0.275, "distance_lo": 0.27,
                         "distance_hi": 0.28, "corr": 1.0, "corr_lo": 1.0, "corr_hi": 1.0, "floor": 0.01,
                         "beyond_noise": True, "within_noise": False, "outcome": "differ"}])  # fmt: skip
    old.to_csv(tmp_path / "training_comparisons.csv", index=False)
    old[old["kind"] == "variant"].drop(columns="outcome").to_csv(tmp_path / "training_distance_curve.csv", index=False)
    assert refresh(tmp_path)[1:] == ["training_comparisons", "training_distance_curve", "training_onsets",
                                     "training_verdict"]  # fmt: skip
    # each run's profile moved by more than ONSET_DISTANCE at its last checkpoint: settled only there (still moving)
    onsets = load_table("training_onsets", tmp_path)
    assert onsets.to_dict("list") == {"run": ["g", "s"], "onset": [600, 600], "last_step": [600, 600]}
    comp = load_table("training_comparisons", tmp_path)
    assert comp["level"].tolist() == pytest.approx([0.275, 0.275]) and comp["shape"].tolist() == pytest.approx(
        [0.025] * 2
    )
    assert load_table("training_distance_curve", tmp_path)["shape"].tolist() == pytest.approx([0.025])
    assert load_table("training_verdict", tmp_path).loc[0, "word"] == (
        "learned; level and shape not measured apart (rerun notebook 08)")  # fmt: skip
    measured = comp.assign(level_lo=0.25, level_hi=0.3, level_floor=0.01, shape_lo=0.01, shape_hi=0.04,
                           shape_floor=0.01)  # fmt: skip
    save_table(measured, "training_comparisons", tmp_path)  # as the next notebook 08 writes it
    refresh(tmp_path)
    assert load_table("training_comparisons", tmp_path)["shape_hi"].tolist() == [0.04, 0.04]  # kept, not refreshed
    verdict = load_table("training_verdict", tmp_path).iloc[0]  # no seed pairs here: nothing decided past learned
    assert verdict["word"] == "learned; seed to seed inconclusive"
    assert verdict["variant_words"] == "differ (level differ, shape agree)"


def test_refresh_rebuilds_the_zoos_verdict_from_its_folder_alone(tmp_path: Path):
    """The zoo's verdict row is a summary like any other: `refresh` on a copy of results/zoo whose verdict row was
    damaged writes the row `zoo_verdict` gives on the folder's own decomposition, comparisons and runs."""
    from linrec.base.files import project_root
    from linrec.claims.zoo import zoo_verdict

    d = tmp_path / "zoo"
    shutil.copytree(project_root() / "results" / "zoo", d, ignore=shutil.ignore_patterns("notebooks", "figures"))
    save_table(pd.DataFrame([{"word": "stale", "claim2a": "stale", "shape_factor": "", "level_factor": ""}]),
               "zoo_verdict", d)  # fmt: skip
    assert "zoo_verdict" in refresh(d)
    want = zoo_verdict(*(load_table(n, d) for n in ("zoo_components", "training_comparisons", "zoo_runs")))
    got = load_table("zoo_verdict", d).iloc[0].to_dict()
    assert got == {k: want[k] for k in got} and got["word"] != "stale"
