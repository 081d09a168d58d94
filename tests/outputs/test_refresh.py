"""linrec.outputs.refresh: the summaries rebuilt from the per-block tables are the notebooks' own, claim 5's word
and the seeds tables follow the one convention for shape and level, and the coverage settings come from the data."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers import DEFAULT
from helpers import run_profiles as _profiles
from linrec.analyses.calibration import dependence
from linrec.claims.corpora import verdict_5
from linrec.claims.registry import TABLES
from linrec.claims.rules import (
    NOT_REPRODUCED,
)
from linrec.claims.tables import load_table, save_table
from linrec.outputs.refresh import coverage_settings, refresh


def test_coverage_settings_use_each_models_blocks_and_dependence():
    settings = {s["what"]: s for s in coverage_settings(DEFAULT)}
    probe = load_table("probe", DEFAULT)
    smol = probe[probe["model"] == "smollm2-135m"].sort_values("block")
    s = settings["claim 3, r(1 − R²_lin, gain): smollm2-135m"]
    assert s["n"] == len(smol) == 30 and s["kind"] == "pearson"
    assert s["phi"] == pytest.approx(round((dependence(1 - smol["r2_lin_rows"]) + dependence(smol["gain"])) / 2, 2))
    assert settings["claim 3, r(1 − R²_lin, gain): models pooled"]["models"] == 2
    assert "claim 6b, partial ρ given depth: gemma3-270m" in settings
    routed = load_table("routing_routable", DEFAULT).groupby("model").size()
    assert ("routing, ρ(R²_lin, routable share): gemma3-270m" in settings) == (routed["gemma3-270m"] > 3)


def test_a_correlation_over_three_blocks_has_no_interval_and_no_coverage_row():
    """A series of 3 blocks (the default routes 3 per model) gets no Fisher interval, so the methods table must not
    list it as an interval covering 0 % (it did); 4 blocks get a row."""
    from linrec.analyses.uncertainty import correlation_test
    from linrec.outputs.refresh import _series_settings

    t = pd.DataFrame({"model": ["a"] * 3 + ["b"] * 4, "block": [0, 1, 2, 0, 1, 2, 3],
                      "x": [0.1, 0.5, 0.3, 0.2, 0.9, 0.4, 0.6], "y": [1.0, 3.0, 2.0, 1.0, 4.0, 2.0, 3.5]})  # fmt: skip
    assert np.isnan(correlation_test(t["x"][:3], t["y"][:3], kind="spearman")["lo"])
    got = [s["what"] for s in _series_settings("routing", "spearman", t, "x", "y")]
    assert got == ["routing: b"]


def test_refresh_rebuilds_the_summaries_the_notebooks_wrote(tmp_path):
    """`refresh` on the committed default run rebuilds its summaries number for number (it reproduced what notebooks
    03 and 06 had written, to the 12th digit, when the procedures were last the same), and a changed per-block
    number moves the summary that reads it."""
    work = tmp_path / "default"
    shutil.copytree(DEFAULT, work, ignore=shutil.ignore_patterns("notebooks", "calibration.csv"))
    names = refresh(work)
    assert {"probe_summary", "pitfall_summary", "swap_predictors", "routing_summary", "calibration",
            "corpora_verdict"} <= set(names)  # fmt: skip
    for name in ("probe_summary", "swap_predictors", "routing_summary", "pitfall_summary", "corpora_verdict"):
        pd.testing.assert_frame_equal(load_table(name, work), load_table(name, DEFAULT), rtol=1e-9, atol=1e-12)
    path = work / "probe.csv"  # one per-block number changed in place (the timing columns stay in timings/)
    probe = pd.read_csv(path)
    probe.loc[probe["model"] == "gemma3-270m", "gain"] *= 3
    probe.to_csv(path, index=False)
    refresh(work)
    assert load_table("probe_summary", work)["gain_median"].iloc[1] == pytest.approx(
        3 * load_table("probe_summary", DEFAULT)["gain_median"].iloc[1]
    )


SMALL, LARGE = (0.01, 0.05), (0.2, 0.3)  # intervals well below and well above 0.1


def _row(shape, level, model="m", **more):
    return {"model": model, "verdict": "mixed", "shape_lo": shape[0], "shape_hi": shape[1], "level_lo": level[0],
            "level_hi": level[1], **more}  # fmt: skip


A = np.array([0.90, 0.70, 0.50, 0.80])
B = np.array([0.60, 0.45, 0.20, 0.55])  # A shifted down by 0.25, blocks 1 and 2 moved by ∓0.05 and +0.05


# ---- refresh: the committed tables brought to the convention without models -----------------------------------------
def test_refresh_rewrites_claim5s_word_and_the_seeds_tables(tmp_path: Path):
    from linrec.outputs.refresh import refresh_corpora, refresh_training

    new = ("overlay_verdict", "level_share_ex_first", "level_lo_ex_first", "level_hi_ex_first")
    cols = [c for c in TABLES["corpora_verdict"].columns if c not in new]
    old = pd.DataFrame([{c: 0.0 for c in cols} | _row(SMALL, (0.243, 0.46), "gemma")]).assign(shape_verdict="x")
    old.to_csv(tmp_path / "corpora_verdict.csv", index=False)  # as a former linrec wrote it
    assert refresh_corpora(tmp_path) == ["corpora_verdict"]
    t = load_table("corpora_verdict", tmp_path)
    assert t.loc[0, "overlay_verdict"] == "shaped by the corpus" and np.isnan(t.loc[0, "level_lo_ex_first"])
    assert verdict_5(t).verdict == NOT_REPRODUCED

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
    assert refresh_training(tmp_path) == ["training_comparisons", "training_distance_curve", "training_verdict"]
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
    refresh_training(tmp_path)
    assert load_table("training_comparisons", tmp_path)["shape_hi"].tolist() == [0.04, 0.04]  # kept, not refreshed
    verdict = load_table("training_verdict", tmp_path).iloc[0]  # no seed pairs here: nothing decided past learned
    assert verdict["word"] == "learned; seed to seed inconclusive"
    assert verdict["variant_words"] == "differ (level differ, shape agree)"


def test_most_skewed_picks_the_swap_whose_window_costs_are_most_right_skewed(tmp_path):
    from linrec.claims.tables import save_table
    from linrec.outputs.refresh import most_skewed

    assert most_skewed(tmp_path) is None  # a run from before issue 64: no per-window losses
    base = np.array([3.0, 3.1, 2.9, 3.2, 3.0])
    rows = [{"model": "m", "swap": s, "window": i, "tokens": 10, "loss_base": b, "loss_swapped": b + c}
            for s, costs in {"1": [0.1, 0.2, 0.15, 0.12, 0.18], "2": [0.01, 0.02, 0.9, 0.03, 0.02]}.items()
            for i, (b, c) in enumerate(zip(base, costs, strict=True))]  # fmt: skip
    save_table(pd.DataFrame(rows), "swap_windows", tmp_path)
    label, cost = most_skewed(tmp_path)
    assert label.startswith("m, swap 2, G₁ ") and cost == pytest.approx([0.01, 0.02, 0.9, 0.03, 0.02])
