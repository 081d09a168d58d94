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
                         "ppl_change_pct": 30.0 + seed * 7})  # fmt: skip
    s = summary(pd.DataFrame(rows))["m"]
    assert s["change_median"] == pytest.approx(0.01)  # |changes| 0.01 0.03 0.002 0.02 0.01 0.0
    assert s["change_max"] == pytest.approx(0.03) and s["max_block"] == 1
    assert s["half_width_median"] == pytest.approx(0.015)
    assert s["beyond"] == pytest.approx(2 / 6)  # 0.03 > 0.02 and 0.02 > 0.015
    assert s["up"] == pytest.approx(3 / 6)  # 0.01, 0.002, 0.02 rose; 0.0 did not
    assert s["draw_spread"] == pytest.approx(0.01)  # ranges 0.01, 0.02, 0.002
    assert (s["ppl_pct_min"], s["ppl_pct_max"], s["n_seeds"]) == (30.0, 37.0, 2)
