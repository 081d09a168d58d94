"""The stored summaries of the benchmark folders (`linrec.outputs.bench_summaries`): each committed one is what its
inputs give today, and each is computed as an independent reading of its input says."""

import numpy as np
import pandas as pd
import pytest

from helpers import ROOT
from linrec.base.bench_registry import BENCH_TABLES
from linrec.outputs.bench_summaries import compute, curve_table, quant_table, write


@pytest.mark.parametrize("name", list(BENCH_TABLES))
def test_every_committed_summary_is_what_its_inputs_give(name):
    """Rerun a benchmark, or a profile the curve's table compares with, without rewriting its summary and this fails:
    `python -m linrec.outputs.bench_summaries` rewrites them."""
    spec = BENCH_TABLES[name]
    stored = pd.read_csv(ROOT / spec.path(name))
    assert tuple(stored.columns) == spec.columns
    fresh = compute(name, ROOT)
    assert fresh is not None, f"{name}: an input of {spec.inputs} is missing"
    what = f"{spec.path(name)} (rerun python -m linrec.outputs.bench_summaries)"
    pd.testing.assert_frame_equal(stored, fresh.reset_index(drop=True), check_dtype=False, rtol=1e-9, obj=what)


def test_quant_table_against_a_hand_reading():
    rows = []
    for seed, changes, ppl in ((0, [0.01, -0.03, 0.002], 5.0), (1, [0.02, 0.001, -0.004], -1.0)):
        for block, c in enumerate(changes):
            rows.append({"model": "m", "seed": seed, "scale": 1, "block": block, "r2_lin_change": c,
                         "half_width_base": 0.015, "ppl_base": 20.0, "ppl_change": ppl, "ppl_change_lo": ppl - 1,
                         "ppl_change_hi": ppl + 1, "ppl_change_pct": 5 * ppl})  # fmt: skip
    t = quant_table(pd.DataFrame(rows))
    assert list(t["seed"]) == [0, 1] and set(t["model"]) == {"m"}
    r = t.iloc[0]
    changes = np.abs([0.01, -0.03, 0.002, 0.02, 0.001, -0.004])
    assert r["change_median"] == pytest.approx(np.median(changes))
    assert r["change_max"] == pytest.approx(0.03) and r["max_block"] == 1
    assert r["n_beyond"] == 2 and r["n_rows"] == 6  # 0.03 and 0.02 exceed 0.015
    assert r["up"] == pytest.approx(4 / 6)  # 0.01, 0.002, 0.02, 0.001 rose
    # per block, the range of the change over the two seeds: 0.01, 0.031, 0.006
    assert r["draw_spread"] == pytest.approx(0.01)
    assert list(t["ppl_change"]) == [5.0, -1.0] and list(t["ppl_change_hi"]) == [6.0, 0.0]
    assert r["ppl_pct_min"] == -5 and r["ppl_pct_max"] == 25


def test_curve_table_sets_the_full_profile_only_on_the_models_the_default_lacks():
    curve = pd.DataFrame({"model": ["a", "a", "b", "b"], "block": [0, 1, 0, 1], "n_train": 100,
                          "r2": [0.5, 0.6, 0.7, 0.9]})  # fmt: skip
    r2 = lambda model, vals: pd.DataFrame({"model": model, "block": [0, 1], "n_train": 100, "r2_lin": vals,  # noqa: E731
                                           "r2_lo": np.subtract(vals, 0.01), "r2_hi": np.add(vals, 0.01)})  # fmt: skip
    t = curve_table(curve, r2("a", [0.55, 0.58]), pd.concat([r2("a", [0, 0]), r2("b", [0.75, 0.9])]))
    assert list(zip(t["profile"], t["model"])) == [("default", "a"), ("full", "b")]
    a, b = t.iloc[0], t.iloc[1]
    assert a["n_lower"] == 1 and a["drop_max"] == pytest.approx(0.05) and a["drop_block"] == 0
    assert a["n_outside"] == 2 and a["diff_median"] == pytest.approx((-0.05 + 0.02) / 2)
    assert b["n_lower"] == 1 and b["n_outside"] == 1 and b["drop_block"] == 0


def test_write_skips_a_table_whose_input_is_absent(tmp_path):
    (tmp_path / "results/split").mkdir(parents=True)
    shift = pd.read_csv(ROOT / "results/split/split_shift.csv")
    shift.to_csv(tmp_path / "results/split/split_shift.csv", index=False)
    assert write(tmp_path) == [tmp_path / "results/split/split_summary.csv"]
    assert compute("quant_summary", tmp_path) is None
