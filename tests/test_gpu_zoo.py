"""benchmarks/gpu_zoo.py's precision comparison (`compare_precision`): two `--curves-only` folders of the same runs
set side by side, checked against differences computed by hand on planted curves."""

import importlib.util

import numpy as np
import pandas as pd
import pytest

from helpers import ROOT


def _gpu_zoo():
    spec = importlib.util.spec_from_file_location("linrec_benchmarks_gpu_zoo", ROOT / "benchmarks" / "gpu_zoo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _folder(path, precision, finals, shift=0.0):
    """A planted --curves-only folder: runs {name: final held-out loss}, each held-out curve falling linearly from 8
    to its final loss over steps 0, 50, 100 (plus `shift` at step 50), and a training curve beside it."""
    path.mkdir()
    rows, curves = [], []
    for run, final in finals.items():
        rows.append({"run": run, "layout": run.split("-")[0], "precision": precision, "final_heldout_loss": final,
                     "best_heldout_loss": final - 0.01, "seconds_train": 10.0})  # fmt: skip
        for step, loss in ((0, 8.0), (50, (8.0 + final) / 2 + shift), (100, final)):
            curves.append({"run": run, "kind": "heldout", "step": step, "loss": loss})
        curves.append({"run": run, "kind": "train", "step": 1, "loss": 99.0})  # never read as held-out
    pd.DataFrame(rows).to_csv(path / "zoo_plateau.csv", index=False)
    pd.DataFrame(curves).to_csv(path / "zoo_curves.csv", index=False)
    return path


def test_compare_precision_by_hand(tmp_path):
    a = _folder(tmp_path / "a", "bf16", {"gpt2-i0-d0": 5.00, "gpt2-i1-d0": 5.04, "llama-i0-d0": 5.30,
                                         "llama-i1-d0": 5.31}, shift=0.2)  # fmt: skip
    b = _folder(tmp_path / "b", "float32", {"gpt2-i0-d0": 5.03, "llama-i0-d0": 5.25, "pythia-i0-d0": 4.9})
    t = _gpu_zoo().compare_precision(a, b).set_index("run")
    assert list(t.index) == ["gpt2-i0-d0", "llama-i0-d0"]  # runs in both folders only
    assert t.loc["gpt2-i0-d0", "delta_final"] == pytest.approx(-0.03)
    assert t.loc["gpt2-i0-d0", "seed_range_a"] == pytest.approx(0.04)
    assert np.isnan(t.loc["gpt2-i0-d0", "seed_range_b"])  # one float32 seed: no range
    assert bool(t.loc["gpt2-i0-d0", "within_seed_range"])  # |-0.03| <= 0.04
    assert t.loc["llama-i0-d0", "delta_final"] == pytest.approx(0.05)
    assert not bool(t.loc["llama-i0-d0", "within_seed_range"])  # 0.05 > 0.01
    # at step 50: (8 + 5.00)/2 + 0.2 against (8 + 5.03)/2, the largest of the three steps' differences
    assert t.loc["gpt2-i0-d0", "max_abs_delta_curve"] == pytest.approx(0.2 - 0.015)
    assert (t["n_evals"] == 3).all()


def test_compare_precision_with_no_common_run_says_so(tmp_path):
    a = _folder(tmp_path / "a", "bf16", {"gpt2-i0-d0": 5.0})
    b = _folder(tmp_path / "b", "float32", {"llama-i0-d0": 5.0})
    with pytest.raises(SystemExit, match="no run"):
        _gpu_zoo().compare_precision(a, b)
