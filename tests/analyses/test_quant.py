"""linrec.analyses.quant: R²_lin and perplexity under a second quantisation error, on a tiny llama."""

import copy

import numpy as np
import pandas as pd
import pytest
import torch

from helpers import tiny_tokenizer, tiny_windows
from linrec.analyses.perplexity import perplexity
from linrec.analyses.quant import COLUMNS, sensitivity, summary
from linrec.analyses.recoverability import ceiling_table
from linrec.api import _loaded
from linrec.collect.capture import run_capture
from linrec.collect.config import CaptureConfig
from linrec.inputs.quant_noise import perturb

CONFIG = CaptureConfig("tiny", "t", seq_len=32, tokens=2048, sample_rows=0)


@pytest.fixture
def setup(tiny_model):
    model = tiny_model("llama")
    tok = tiny_tokenizer()
    types = {n: "Q4_1" for n, p in model.named_parameters() if p.ndim == 2 and p.shape[-1] % 32 == 0}
    return _loaded(model, tok, "tiny"), tiny_windows(tok, tokens=2048), types


def _weights(model):
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def test_zero_step_leaves_every_number_as_it_was(setup):
    loaded, windows, types = setup
    table = sensitivity(loaded, windows, CONFIG, types, [0], scale=0)
    assert list(table.columns) == COLUMNS and len(table) == len(loaded.sites)
    assert (table["r2_lin_change"] == 0).all() and (table["r2_lin_perturbed"] == table["r2_lin_base"]).all()
    assert (table["ppl_change"] == 0).all() and (table["error_rms_over_step"] == 0).all()


def test_one_step_matches_the_model_perturbed_by_hand_and_puts_the_weights_back(setup):
    loaded, windows, types = setup
    before = _weights(loaded.model)
    table = sensitivity(loaded, windows, CONFIG, types, [3, 4])
    after = _weights(loaded.model)
    assert all(torch.equal(before[n], after[n]) for n in before)  # bit for bit
    base = ceiling_table(run_capture(loaded, windows, CONFIG, progress=False))
    hand = copy.deepcopy(loaded.model)
    perturb(hand, types, 3)
    moved = ceiling_table(run_capture(_loaded(hand, loaded.tokenizer, "tiny"), windows, CONFIG, progress=False))
    t3 = table[table["seed"] == 3].reset_index(drop=True)
    np.testing.assert_allclose(t3["r2_lin_base"], base["r2_lin"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(t3["r2_lin_perturbed"], moved["r2_lin"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(t3["half_width_base"], (base["r2_hi"] - base["r2_lo"]) / 2, atol=1e-12)
    assert (t3["r2_lin_change"].abs() > 0).all()
    ids = windows.split("test")
    assert t3["ppl_base"][0] == pytest.approx(perplexity(loaded.model, ids), rel=1e-9)
    assert t3["ppl_perturbed"][0] == pytest.approx(perplexity(hand, ids), rel=1e-9)
    assert t3["ppl_change_lo"][0] <= t3["ppl_change"][0] <= t3["ppl_change_hi"][0]
    assert table.groupby("seed")["ppl_perturbed"].first().nunique() == 2  # two draws, two models
    assert t3["error_rms_over_step"][0] == pytest.approx(1 / np.sqrt(12), rel=0.15)


def test_summary_by_hand():
    rows = []
    for seed, changes in ((0, [0.01, -0.03, 0.002]), (1, [0.02, -0.01, 0.0])):
        for block, c in enumerate(changes):
            rows.append({"model": "m", "seed": seed, "block": block, "r2_lin_change": c,
                         "half_width_base": [0.015, 0.02, 0.01][block], "ppl_base": 10.0,
                         "ppl_change": 3.0 + seed, "ppl_change_lo": 2.0, "ppl_change_hi": 4.0 + seed,
                         "ppl_change_pct": 30.0 + seed * 7})  # fmt: skip
    s = summary(pd.DataFrame(rows))["m"]
    assert s["change_median"] == pytest.approx(0.01)  # |changes| 0.01 0.03 0.002 0.02 0.01 0.0
    assert s["change_max"] == pytest.approx(0.03) and s["max_block"] == 1
    assert s["half_width_median"] == pytest.approx(0.015)
    assert s["beyond"] == pytest.approx(2 / 6)  # 0.03 > 0.02 and 0.02 > 0.015
    assert s["up"] == pytest.approx(3 / 6)  # 0.01, 0.002, 0.02 rose; 0.0 did not
    assert s["draw_spread"] == pytest.approx(0.01)  # ranges 0.01, 0.02, 0.002
    assert (s["ppl_pct_min"], s["ppl_pct_max"], s["n_seeds"]) == (30.0, 37.0, 2)


def _two_models() -> pd.DataFrame:
    """A planted table of two models, rows interleaved (as no writer does, so pooling across models would show):
    "b" (listed first) moves little and costs +10 perplexity; "a" moves far and costs +2."""
    rows = []
    for seed in (0, 1):
        for block in range(4):
            for model, change, hw, ppl, lo, hi in (
                ("b", 0.001 * (block + 1) * (1 + seed), 0.01, 10.0 + seed, 8.0 + seed, 12.0 + seed),
                ("a", -0.05 * (block + 1), 0.02 if block < 2 else 0.5, 2.0 + seed / 2, 1.0, 3.0 + seed),
            ):
                rows.append({"model": model, "seed": seed, "block": block, "r2_lin_change": change,
                             "half_width_base": hw, "ppl_base": {"b": 30.0, "a": 20.0}[model],
                             "ppl_change": ppl, "ppl_change_lo": lo, "ppl_change_hi": hi,
                             "ppl_change_pct": 100 * ppl / {"b": 30.0, "a": 20.0}[model]})  # fmt: skip
    return pd.DataFrame(rows)


def test_summary_keeps_each_model_to_its_own_rows():
    s = summary(_two_models())
    assert list(s) == ["b", "a"]  # the table's order
    b, a = s["b"], s["a"]
    assert (b["n_rows"], b["n_blocks"], b["n_seeds"]) == (8, 4, 2)
    assert b["change_median"] == pytest.approx(0.0035)  # |changes| 1 2 3 4 and 2 4 6 8 (×1e-3)
    assert b["change_max"] == pytest.approx(0.008) and b["max_block"] == 3
    assert (b["n_beyond"], b["beyond"], b["up"]) == (0, 0.0, 1.0)
    assert a["change_median"] == pytest.approx(0.125) and a["change_max"] == pytest.approx(0.2)
    assert a["n_beyond"] == 4 and a["beyond"] == pytest.approx(0.5) and a["up"] == 0  # blocks 0, 1 in both draws
    assert a["half_width_median"] == pytest.approx((0.02 + 0.5) / 2) and b["half_width_median"] == pytest.approx(0.01)
    assert a["draw_spread"] == 0 and b["draw_spread"] == pytest.approx(0.0025)  # ranges 1 2 3 4 (×1e-3)
    assert (b["ppl_base"], a["ppl_base"]) == (30.0, 20.0)
    assert b["draws"] == [
        {"seed": 0, "ppl_change": 10.0, "ppl_change_lo": 8.0, "ppl_change_hi": 12.0},
        {"seed": 1, "ppl_change": 11.0, "ppl_change_lo": 9.0, "ppl_change_hi": 13.0},
    ]
    assert [d["ppl_change"] for d in a["draws"]] == [2.0, 2.5]
    assert (a["ppl_pct_min"], a["ppl_pct_max"]) == (10.0, 12.5)
    one = summary(_two_models().query("model == 'a'"))["a"]
    assert {k: v for k, v in one.items()} == a  # the other model's rows change nothing
