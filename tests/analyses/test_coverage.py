"""linrec.analyses.coverage: the coverage of a results folder's intervals is measured at the run's own blocks,
dependence, width, window length and residual ICC, and resamples claim 6a's and the most skewed swap's own windows
(issue 45)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from helpers import DEFAULT
from linrec.analyses.calibration import dependence
from linrec.analyses.coverage import coverage_settings
from linrec.base.tables import load_table, save_table
from linrec.outputs.results import Results


def test_the_refit_rows_run_at_the_fewest_train_rows_per_parameter_of_the_runs_models():
    """`rows_per_parameter`: n_train_rows / (d_model + 1), the fewest over the capture table's models — the default's
    SmolLM2-135M 16,384 / 577 = 28.395; the full profile's Gemma-3 16,384 / 641 = 25.560."""
    from linrec.analyses.coverage import rows_per_parameter

    assert rows_per_parameter(load_table("capture", DEFAULT)) == pytest.approx(16384 / 577, rel=1e-12)
    assert rows_per_parameter(load_table("capture", DEFAULT.parent / "full")) == pytest.approx(16384 / 641, rel=1e-12)


def test_the_r2_rows_plant_the_runs_width_and_largest_residual_icc(tmp_path, monkeypatch):
    """`coverage` hands `window_table` the run's width (its narrowest model, at most `REFIT_WIDTH`) and the largest
    residual ICC of notebook 01's `window_icc` table rounded up to 0.005 (`largest_icc`); 0 without the table (a run
    before it) or with only NaN. Planted: the median ICC, the widest model, or no rounding up, fails."""
    from linrec.analyses import coverage as methods
    from linrec.analyses.calibration import REFIT_WIDTH

    got = []
    monkeypatch.setattr(methods, "coverage_settings", lambda d: [])
    monkeypatch.setattr(methods, "coverage_table", lambda settings, reps, seed: pd.DataFrame())
    monkeypatch.setattr(methods, "window_table", lambda n, **kw: got.append({"n_windows": n, **kw}) or
                        pd.DataFrame({"setting": ["x"]}))  # fmt: skip
    cap = load_table("capture", DEFAULT).assign(seconds=1.0, from_cache=True)
    save_table(pd.concat([cap, cap.assign(model="narrow", d_model=48)]), "capture", tmp_path)
    methods.coverage(tmp_path, reps=4)
    assert got[-1]["plant"].width == 48 and got[-1]["plant"].resid_icc == 0.0  # no window_icc: independent residuals
    save_table(cap, "capture", tmp_path)
    icc = pd.DataFrame({"model": "m", "block": [0, 1, 2], "resid_icc": [0.0101, 0.0612, np.nan], "input_icc": 0.1,
                        "n_rows": 100, "n_windows": 8})  # fmt: skip
    save_table(icc, "window_icc", tmp_path)
    methods.coverage(tmp_path, reps=4)
    assert got[-1]["plant"].width == REFIT_WIDTH == 64 and got[-1]["plant"].resid_icc == pytest.approx(0.065)
    assert got[-1]["plant"].ratio == pytest.approx(16384 / 577) and got[-1]["plant"].tokens == 128
    r2 = load_table("r2_lin", DEFAULT)  # a run of 64-position windows (the smoke profile's): its own window length
    save_table(r2.assign(n_test_windows=r2["n_test_windows"] * 2), "r2_lin", tmp_path)
    methods.coverage(tmp_path, reps=4)
    assert got[-1]["plant"].tokens == 64 and got[-1]["n_windows"] == 4096 // 64
    assert methods.largest_icc(icc.assign(resid_icc=np.nan)) == 0.0 and methods.largest_icc(None) == 0.0


def test_coverage_settings_use_each_models_blocks_and_dependence():
    full = DEFAULT.parent / "full"  # two models (the default measures SmolLM2 alone): a pooled setting, routing
    settings = {s["what"]: s for s in coverage_settings(full)}
    probe = load_table("probe", full)
    smol = probe[probe["model"] == "smollm2-135m"].sort_values("block")
    s = settings["claim 3, r(1 − R²_lin, gain): smollm2-135m"]
    assert s["n"] == len(smol) == 30 and s["kind"] == "pearson"
    assert s["phi"] == pytest.approx(round((dependence(1 - smol["r2_lin_rows"]) + dependence(smol["gain"])) / 2, 2))
    assert settings["claim 3, r(1 − R²_lin, gain): models pooled"]["models"] == 2
    assert "claim 6b, partial ρ given depth: gemma3-270m" in settings
    # a routing setting only where results/full's routing tables are this linrec's (an older run's are not read)
    routed = Results(full).get("routing_routable").table
    assert ("routing, ρ(R²_lin, routable share): gemma3-270m" in settings) == (
        routed is not None and routed.groupby("model").size()["gemma3-270m"] > 3
    )


def test_a_correlation_over_three_blocks_has_no_interval_and_no_coverage_row():
    """A series of 3 blocks (the default routes 3 per model) gets no Fisher interval, so the methods table must not
    list it as an interval covering 0 % (it did); 4 blocks get a row."""
    from linrec.analyses.coverage import _series_settings
    from linrec.analyses.uncertainty import correlation_test

    t = pd.DataFrame({"model": ["a"] * 3 + ["b"] * 4, "block": [0, 1, 2, 0, 1, 2, 3],
                      "x": [0.1, 0.5, 0.3, 0.2, 0.9, 0.4, 0.6], "y": [1.0, 3.0, 2.0, 1.0, 4.0, 2.0, 3.5]})  # fmt: skip
    assert np.isnan(correlation_test(t["x"][:3], t["y"][:3], kind="spearman")["lo"])
    got = [s["what"] for s in _series_settings("routing", "spearman", t, "x", "y")]
    assert got == ["routing: b"]


def test_own_windows_are_claim_6as_block_and_the_most_right_skewed_swap(tmp_path):
    """`own_windows`: the methods table resamples each model's block that claim 6a reads (its screening choice, given
    as `chosen`: `linrec.outputs.methods.claim_6a_blocks`, tests/outputs/test_methods.py) and the swap whose window
    costs are the most right-skewed (G₁); nothing for a run without per-window losses."""
    from linrec.analyses.coverage import own_windows

    assert own_windows(tmp_path) == [] == own_windows(tmp_path, [("m", "0")])  # before issue 64: no window losses
    base = np.array([3.0, 3.1, 2.9, 3.2, 3.0])
    rows = [{"model": "m", "swap": s, "window": i, "tokens": 10, "loss_base": b, "loss_swapped": b + c}
            for s, costs in {"0": [0.1, 0.2, 0.15, 0.12, 0.18], "1": [0.01, 0.02, 0.9, 0.03, 0.02]}.items()
            for i, (b, c) in enumerate(zip(base, costs, strict=True))]  # fmt: skip
    save_table(pd.DataFrame(rows), "swap_windows", tmp_path)
    (label, b, o), *rest = own_windows(tmp_path)  # no claim 6a block given: only the most skewed
    assert not rest and label == "m, swap 1, the most skewed" and o - b == pytest.approx([0.01, 0.02, 0.9, 0.03, 0.02])
    got = own_windows(tmp_path, [("m", "0"), ("other", "0")])  # a chosen block without windows: left out
    assert [g[0] for g in got] == ["m, block 0, claim 6a's", "m, swap 1, the most skewed"]
    assert got[0][2] - got[0][1] == pytest.approx([0.1, 0.2, 0.15, 0.12, 0.18])


def test_a_folder_without_a_capture_or_without_correlations_still_writes_its_calibration_table(tmp_path):
    """A folder with nothing to simulate at (empty), or with correlation rows but no capture (no window rows: a
    healing run's swap tables), gives a table with every registered column that `save_table` accepts; it raised
    before (`refresh` on results/healing failed). Planted: the columns not filled in fails."""
    from linrec.analyses.coverage import coverage
    from linrec.base.registry import TABLES

    empty = coverage(tmp_path, reps=4)
    assert empty.empty and list(empty.columns) == list(TABLES["calibration"].columns)
    save_table(empty, "calibration", tmp_path)
    probe = load_table("probe", DEFAULT)
    save_table(probe.assign(seconds_probe=1.0, seconds_quad=1.0, seconds_trained=1.0), "probe", tmp_path)
    rows = coverage(tmp_path, reps=4)
    assert len(rows) and rows["n_windows"].isna().all() and list(rows.columns) == list(TABLES["calibration"].columns)
    save_table(rows, "calibration", tmp_path)
