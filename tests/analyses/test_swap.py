"""linrec.analyses.swap: held-out swaps on tiny models: an affine FFN swaps for nothing, the rank curve and parameter
counts, the table, the paired ΔPPL interval and the seeded report windows."""

import numpy as np
import pandas as pd
import pytest
import torch

from helpers import perturbed_test_windows, swap_study, tiny_tokenizer, tiny_windows
from linrec.analyses.perplexity import PerplexityEvaluator, perplexity
from linrec.analyses.screening import screening_ids
from linrec.analyses.swap import SwapStudy, rewindowed, swap_label, window_skew
from linrec.analyses.uncertainty import SWAP_LEVEL, delta_ppl_interval
from linrec.base.errors import LinrecError
from linrec.collect.capture import run_capture
from linrec.collect.config import CaptureConfig
from linrec.inputs.hf import LoadedModel
from linrec.inputs.surgery import AffineFFN, swapped


def test_swapping_an_affine_ffn_changes_nothing(affine_llama):
    st = swap_study(affine_llama)
    original = affine_llama.model.layers[1].mlp
    m = st.heldout.module(1)
    assert isinstance(m, AffineFFN) and m.weight.dtype == torch.float32
    assert abs(st.heldout.score(1).r2 - 1) < 1e-9
    ev = st.heldout.evaluator
    for b in range(len(ev.batches)):
        base = ev.logits({}, batch=b)
        assert (ev.logits({1: m}, batch=b) - base).abs().max() < 1e-5
    assert abs(ev.delta_ppl({1: m})) < 1e-6 * ev.base_ppl
    assert affine_llama.model.layers[1].mlp is original  # restored
    assert ev.delta_ppl({0: st.heldout.module(0)}) > 0.1  # the SwiGLU block is not affine: the swap costs perplexity


def test_rank_curve_and_parameter_counts(tiny_model):
    st = swap_study(tiny_model("llama"))
    curve = st.heldout.rank_curve(0, [1, 4, 32])
    assert list(curve["rank"]) == [1, 4, 32, 32] and list(curve["factored"]) == [True, True, True, False]
    assert list(curve["params"]) == [1 * 64 + 32, 4 * 64 + 32, 32 * 64 + 32, 32 * 32 + 32]
    # rank d_out factored is the dense map: same perplexity, to float32 rounding
    assert abs(curve["ppl"][2] - curve["ppl"][3]) <= 1e-5 * curve["ppl"][3]
    assert curve["var_kept"].is_monotonic_increasing
    t = st.heldout.table([0])
    assert t.loc[0, "params_ffn"] == 3 * 32 * 64  # SwiGLU: gate, up, down without biases
    assert t.loc[0, "params_linear"] == 32 * 32 + 32
    assert abs(t.loc[0, "delta_ppl"] - curve["delta_ppl"][3]) < 1e-12
    # the table's block-0 row is the curve's dense map on the same windows: read back, not run again
    assert st.heldout.evaluator.n_evaluations == 4
    assert st.timings.set_index("step").loc["test: rank curve", "evaluations"] == 4
    fresh = st.heldout.evaluator.window_nll({0: st.heldout.module(0)})  # the same swapped model, run now
    assert st.heldout.evaluator.n_evaluations == 5
    assert np.array_equal(fresh, st.heldout.test_nll([(0, None, "map")], "unused"))
    assert st.heldout.joint([0])["delta_ppl"] == t.loc[0, "delta_ppl"] and st.heldout.evaluator.n_evaluations == 5
    # every swapped set measured on the held-out windows is stored window by window, and gives back its ΔPPL
    w = st.heldout.window_losses()
    assert set(w["swap"]) == {"0", "0r1", "0r4", "0r32"} and len(w) == 4 * st.heldout.evaluator.n_windows
    skew = window_skew(w).set_index("swap")
    assert skew.loc["0", "delta_ppl"] == pytest.approx(t.loc[0, "delta_ppl"], rel=1e-9)
    assert (skew.loc["0", "delta_lo"], skew.loc["0", "delta_hi"]) == pytest.approx(
        (t.loc[0, "delta_lo"], t.loc[0, "delta_hi"]), rel=1e-9
    )


def test_window_skew_on_planted_windows():
    """Four windows, one carrying most of the cost: the costs' mean and G₁, the costliest window's share of the summed
    cost, and the skew-corrected interval beside the jackknife-t, each against its definition."""
    from scipy import stats

    from linrec.analyses.uncertainty import SWAP_LEVEL, delta_ppl_interval, delta_ppl_jackknife_t, own_skew_check

    base = np.array([3.0, 3.2, 2.9, 3.1])
    cost = np.array([0.01, 0.02, 0.5, 0.03])
    w = pd.DataFrame({"model": "m", "swap": swap_label([(2, 0, "map")]), "window": range(4), "tokens": 10,
                      "loss_base": base, "loss_swapped": base + cost})  # fmt: skip
    (row,) = window_skew(w).to_dict("records")
    assert row["swap"] == "2" and row["n_windows"] == 4
    assert row["delta_ppl"] == pytest.approx(np.exp((base + cost).mean()) - np.exp(base.mean()), rel=1e-12)
    assert row["cost_mean"] == pytest.approx(cost.mean()) and row["cost_skew"] == pytest.approx(
        stats.skew(cost, bias=False)
    )
    assert row["max_window_share"] == pytest.approx(0.5 / cost.sum())
    assert (row["delta_lo"], row["delta_hi"]) == pytest.approx(
        delta_ppl_interval(base * 10, (base + cost) * 10, 10, SWAP_LEVEL)
    )
    assert (row["jack_lo"], row["jack_hi"]) == pytest.approx(delta_ppl_jackknife_t(base * 10, (base + cost) * 10, 10))
    assert row["delta_hi"] > row["jack_hi"]
    own = own_skew_check(base * 10, (base + cost) * 10, 10)
    assert {k: row[k] for k in own} == pytest.approx(own) and row["own_miss_below"] > 0.2  # one window of 4 carries it
    assert swap_label([(3, 16, "map"), (1, 0, "ffn")]) == "1:ffn+3r16"


def test_rewindowed_recomputes_every_stored_interval_from_the_windows():
    """`rewindowed` (the refresh path): each table's interval of a set with stored windows is today's interval of those
    windows (a position variant's vs-map interval against the map's windows, a dense rank-curve row the block's own,
    a greedy set by its blocks), `swap_first` copies `swap`'s, a row without windows stays as it was."""
    rng = np.random.default_rng(0)
    base = 3.0 + 0.1 * rng.standard_normal(6)
    sets = {"2": 0.1, "2:ffn": 0.05, "2r8": 0.2, "1+2": 0.3}
    loss = {k: base + c + 0.02 * rng.standard_normal(6) for k, c in sets.items()}
    w = pd.DataFrame([{"model": "m", "swap": k, "window": i, "tokens": 10, "loss_base": base[i], "loss_swapped": v[i]}
                      for k, v in loss.items() for i in range(6)])  # fmt: skip
    iv = lambda a, b: delta_ppl_interval(a * 10, b * 10, 10, SWAP_LEVEL)  # noqa: E731
    swap = pd.DataFrame({"model": "m", "block": [2, 2, 5], "first": ["map", "ffn", "map"], "delta_lo": 0.0,
                         "delta_hi": 0.0, "vs_map_lo": np.nan, "vs_map_hi": np.nan})  # fmt: skip
    first = pd.DataFrame({"model": ["m"], "block": [2], **{f"delta_{e}_{f}": [0.0] for f in ("map", "ffn", "mean")
                                                           for e in ("lo", "hi")}})  # fmt: skip
    curve = pd.DataFrame({"model": "m", "block": 2, "rank": [8, 32], "factored": [True, False], "delta_lo": 0.0,
                          "delta_hi": 0.0})  # fmt: skip
    greedy = pd.DataFrame({"model": ["m"], "blocks_swapped": ["2 1"], "test_delta_lo": [0.0], "test_delta_hi": [0.0]})
    out = rewindowed({"swap": swap, "swap_first": first, "swap_rank_curve": curve, "swap_greedy": greedy}, w)
    s = out["swap"]
    assert tuple(s.loc[0, ["delta_lo", "delta_hi"]]) == pytest.approx(iv(base, loss["2"]))
    assert tuple(s.loc[1, ["delta_lo", "delta_hi"]]) == pytest.approx(iv(base, loss["2:ffn"]))
    assert tuple(s.loc[1, ["vs_map_lo", "vs_map_hi"]]) == pytest.approx(iv(loss["2"], loss["2:ffn"]))
    assert tuple(s.loc[2, ["delta_lo", "delta_hi"]]) == (0.0, 0.0) and np.isnan(s.loc[0, "vs_map_lo"])  # no windows
    f = out["swap_first"].iloc[0]
    assert (f["delta_lo_ffn"], f["delta_hi_ffn"]) == pytest.approx(iv(base, loss["2:ffn"])) and f["delta_lo_mean"] == 0
    c = out["swap_rank_curve"]
    assert tuple(c.loc[0, ["delta_lo", "delta_hi"]]) == pytest.approx(iv(base, loss["2r8"]))
    assert tuple(c.loc[1, ["delta_lo", "delta_hi"]]) == pytest.approx(iv(base, loss["2"]))
    g = out["swap_greedy"].iloc[0]
    assert (g["test_delta_lo"], g["test_delta_hi"]) == pytest.approx(iv(base, loss["1+2"]))
    assert list(out["swap_skew"]["swap"]) == list(sets)


def test_table_and_screening(affine_llama):
    st = swap_study(affine_llama, screening_windows=3)
    t = st.heldout.table()
    assert list(t["block"]) == [0, 1] and set(t["first"]) == {"map"}
    assert np.allclose(t["delta_ppl"], t["ppl_swapped"] - t["ppl_base"])
    assert (t["delta_lo"] <= t["delta_ppl"]).all() and (t["delta_ppl"] <= t["delta_hi"]).all()
    assert t.loc[1, "params_ffn"] == 32 * 32 + 32  # the affine Linear
    p = st.screening.predictors()
    assert abs(p.loc[1, "screening_delta_ppl"]) < 1e-6 * st.screening.evaluator.base_ppl
    assert p.loc[0, "screening_delta_ppl"] > 0
    assert abs(p.loc[1, "r2_lin"] - 1) < 1e-9 and p.loc[0, "r2_lin"] < 0.99
    ids = screening_ids(st.windows, 3)
    train = st.windows.split("train")
    assert len(ids) == 3 and all(any(torch.equal(r, s) for s in train) for r in ids)  # train windows only
    assert torch.equal(ids, screening_ids(st.windows, 3))  # seeded
    with pytest.raises(LinrecError, match="first must be one of"):
        st.heldout.table(first="sink")


def test_delta_ppl_interval_is_paired_and_covers_a_planted_delta(affine_llama):
    """An affine block swaps for ΔPPL 0 with a degenerate interval at 0; for the SwiGLU block, intervals from
    disjoint subsets of windows cover the ΔPPL of the whole pool about 95 % of the time."""
    st = swap_study(affine_llama, tokens=2048)
    ev = st.heldout.evaluator
    zero = ev.delta({1: st.heldout.module(1)})
    assert abs(zero.delta) < 1e-6 * zero.ppl_base and zero.lo <= 0 <= zero.hi + 1e-9
    assert zero.hi - zero.lo < 1e-5 * zero.ppl_base
    # per-window NLLs are HF's per-window loss × predicted tokens
    ids = st.windows.split("test")
    with torch.no_grad():
        losses = [float(affine_llama(input_ids=ids[k : k + 1], labels=ids[k : k + 1]).loss) for k in range(len(ids))]
    assert np.allclose(ev.base_window_nll, np.array(losses) * (ids.shape[1] - 1), rtol=1e-5)
    # coverage: a pool of 480 windows, the block-0 swap's ΔPPL on all of them is the planted truth
    tok = tiny_tokenizer()
    pool = tiny_windows(tok, 480 * 16, 16).ids
    full = PerplexityEvaluator(affine_llama, pool, batch_size=60)
    m = st.heldout.module(0)
    nll = full.window_nll({0: m})
    truth = float(np.exp(nll.sum() / full.n_tokens) - full.base_ppl)
    covered, widths = 0, []
    for k in range(24):  # 24 disjoint subsets of 20 windows
        sl = slice(20 * k, 20 * (k + 1))
        lo, hi = delta_ppl_interval(full.base_window_nll[sl], nll[sl], full.tokens_per_window)
        covered += lo <= truth <= hi
        widths.append(hi - lo)
    assert covered >= 20, (covered, truth)  # 95 % nominal: ≥ 20 of 24 (P ≈ 0.99 for a correct interval)
    # pairing matters: resampling base and swapped windows independently gives a wider interval
    rng = np.random.default_rng(0)
    sub_b, sub_s = full.base_window_nll[:20], nll[:20]
    unpaired = [
        np.exp(sub_s[rng.integers(0, 20, 20)].sum() / (20 * 15))
        - np.exp(sub_b[rng.integers(0, 20, 20)].sum() / (20 * 15))
        for _ in range(2000)
    ]
    assert np.subtract(*np.quantile(unpaired, [0.975, 0.025])) > 1.5 * widths[0]


def test_report_windows_are_a_seeded_subset_of_the_test_windows(tiny_model):
    """`test_windows=n` reports on n held-out windows drawn by seed alone: the same indices whatever the windows
    hold, never a train window, and every reported number equals a plain evaluation on exactly those windows."""
    from linrec.analyses.swap import report_ids

    tok = tiny_tokenizer()
    w = tiny_windows(tok, 2048, 32)
    assert torch.equal(report_ids(w, None), w.split("test")) and torch.equal(report_ids(w, 10**6), w.split("test"))
    ids = report_ids(w, 5, seed=0)
    rows = [int(np.flatnonzero((w.ids == r).all(1))[0]) for r in ids]
    assert len(ids) == 5 and set(rows) <= set(w.test.tolist()) and rows == sorted(rows)
    assert torch.equal(
        report_ids(perturbed_test_windows(w), 5, seed=0), perturbed_test_windows(w).ids[rows]
    )  # content never matters
    assert not torch.equal(report_ids(w, 5, seed=1), ids)  # the seed does
    with pytest.raises(LinrecError, match="at least 2 held-out windows"):
        report_ids(w, 1)

    model = tiny_model("llama", seed=3)
    loaded = LoadedModel(model=model, tokenizer=tok, name="tiny", identity="tiny", source="test")
    cap = run_capture(loaded, w, CaptureConfig("tiny", tokens=2048, seq_len=32, sample_rows=0), progress=False)
    st = SwapStudy(cap, loaded, windows=w, batch_size=8, progress=False, screening_windows=4, test_windows=5)
    t = st.heldout.table(blocks=[0])
    assert int(t["n_test_tokens"].iloc[0]) == 5 * 31
    base = perplexity(model, ids)
    with swapped(model, {0: st.heldout.module(0)}):
        swapped_ppl = perplexity(model, ids)
    assert t["ppl_base"].iloc[0] == pytest.approx(base, rel=1e-6)
    assert t["ppl_swapped"].iloc[0] == pytest.approx(swapped_ppl, rel=1e-6)


def test_a_study_on_fewer_held_out_windows_than_its_coverage_was_measured_at_says_so(affine_llama, capfd):
    """ΔPPL's interval has a measured coverage at 12 held-out windows and more (the methods table): a study reporting
    on 3 says its intervals can be far off and what to do; one on all 13 of the tiny capture's says nothing."""
    from linrec.analyses.swap import SwapStudy

    study = swap_study(affine_llama)
    assert len(study.heldout.report_ids) == 13 and "held-out windows" not in capfd.readouterr().err
    SwapStudy(study.heldout.capture, study.heldout.loaded, windows=study.windows, progress=False, test_windows=3)
    err = capfd.readouterr().err
    assert "tiny: ΔPPL intervals from 3 held-out windows, under the 12 their coverage is measured at" in err, err
