"""linrec.analyses.routing: per-token routing between a block's FFN and its closed-form map."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from helpers import tiny_tokenizer, tiny_windows
from linrec.analyses.routing import (
    TARGETS,
    RoutedFFN,
    auc,
    compute_saved,
    fit_gate,
    gate_target,
    largest_within,
    map_errors,
    routable_share,
    route_block,
    train_gates,
)
from linrec.analyses.swap import SwapStudy
from linrec.base.errors import LinrecError
from linrec.inputs.hf import LoadedModel
from linrec.measure.capture import run_capture
from linrec.measure.config import CaptureConfig


def _study(model, tmp_path, tokens=2048, seq_len=32):
    """A swap study of a tiny model whose capture keeps its rows (the gate trains on them)."""
    tok = tiny_tokenizer()
    loaded = LoadedModel(model=model, tokenizer=tok, name="tiny", identity="tiny", source="test")
    w = tiny_windows(tok, tokens, seq_len)
    cfg = CaptureConfig("tiny", tokens=tokens, seq_len=seq_len, sample_rows=tokens)
    (tmp_path / "entry").mkdir()
    cap = run_capture(loaded, w, cfg, tmp_path / "entry", progress=False)
    return SwapStudy(cap, loaded, windows=w, batch_size=8, progress=False, screening_windows=2)


@pytest.fixture
def planted(tiny_model):
    """Tiny llama whose block 1 FFN is an affine map (a Linear); block 0 is its random SwiGLU."""
    model = tiny_model("llama", seed=2)
    torch.manual_seed(0)
    model.model.layers[1].mlp = torch.nn.Linear(32, 32)
    return model


def test_a_gate_finds_the_tokens_where_a_planted_map_is_exact():
    """Half the tokens (those with x₀ > 0) follow an affine map exactly, the rest a nonlinear one: a gate trained on
    "the map's error is small" ranks the exact half first (AUC > 0.95 on fresh rows)."""
    from linrec.stats.ceiling import fit_affine
    from linrec.stats.moments import Moments

    rng = np.random.default_rng(0)

    def rows(n):
        x = rng.standard_normal((n, 8))
        W = np.arange(64).reshape(8, 8) / 64
        y = x @ W
        bent = x[:, 0] <= 0
        y[bent] += 3 * np.tanh(4 * x[bent, 1:2]) * x[bent, 2:3] ** 2
        return x, y, ~bent

    x, y, exact = rows(4000)
    fit = fit_affine(Moments.of(x[exact], y[exact]))  # the map of the exact half
    err, norm = map_errors(fit, x, y)
    gate = fit_gate(x, gate_target(err, norm, "quantile"), "quantile")
    x2, y2, exact2 = rows(4000)
    assert auc(gate.scores(x2), exact2) > 0.95
    assert auc(-gate.scores(x2), exact2) < 0.05  # the same statistic can fail the other way


def test_share_zero_is_the_base_model_and_share_one_the_whole_block_swap(planted, tmp_path):
    st = _study(planted, tmp_path)
    h, ev = st.heldout, st.heldout.evaluator
    x, y = st.capture.rows(0, "train")
    err, norm = map_errors(h.fit(0), x, y)
    gate = fit_gate(x, gate_target(err, norm, "quantile"))
    ffn = h.sites[0].module
    none = RoutedFFN(ffn, h.module(0), gate, gate.threshold(0.0))
    every = RoutedFFN(ffn, h.module(0), gate, gate.threshold(1.0))
    for b in range(len(ev.batches)):
        assert torch.equal(ev.logits({0: none}, batch=b), ev.logits({}, batch=b))  # bit for bit
        assert torch.equal(ev.logits({0: every}, batch=b), ev.logits({0: h.module(0)}, batch=b))
    assert none.share == 0.0 and every.share == 1.0
    half = RoutedFFN(ffn, h.module(0), gate, gate.threshold(0.5))
    ev.window_nll({0: half})
    assert 0.3 < half.share < 0.7  # the train rows' median score splits held-out tokens about in half too
    with pytest.raises(LinrecError, match="in \\[0, 1\\]"):
        gate.threshold(1.5)


def test_an_affine_block_routes_everything_for_nothing(planted, tmp_path):
    """Block 1's FFN is affine: its map is exact, so routing any share (all of it included) costs no perplexity, and
    every budget's routable share is 1 with a degenerate interval; share 1 is the swap table's own number."""
    st = _study(planted, tmp_path)
    gates, compared = train_gates(st.heldout, 1)
    assert {r["target"] for r in compared} == set(TARGETS)
    rows, routable = route_block(st.heldout, 1, gates["quantile"], n_boot=st.heldout.n_boot, seed=st.heldout.seed)
    for r in rows:
        assert abs(r["delta_ppl"]) < 1e-6 * r["ppl_base"]
    assert routable["routable_pct1"] == routable["routable_pct1_lo"] == routable["routable_pct1_hi"] == 1.0
    assert routable["routable_ppl1"] == 1.0
    one = [r for r in rows if r["share"] == 1.0][0]
    whole = st.heldout.table([1]).iloc[0]
    assert one["delta_ppl"] == whole["delta_ppl"] and (one["delta_lo"], one["delta_hi"]) == (
        whole["delta_lo"], whole["delta_hi"])  # fmt: skip
    # block 0 (a random SwiGLU) is not routable for free: its whole-block swap costs perplexity
    gates0, _ = train_gates(st.heldout, 0, targets=("quantile",))
    rows0, _ = route_block(st.heldout, 0, gates0["quantile"], n_boot=200)
    assert max(r["delta_ppl"] for r in rows0) > 0.1


def test_the_routable_share_is_the_largest_run_within_budget():
    shares = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
    base = np.array([10.0, 10.0])
    ppl = np.array([[10.0, 10.05, 10.09, 10.5, 12.0], [10.0, 10.2, 10.0, 10.0, 10.0]])
    assert largest_within(shares, base, ppl, "relative", 0.01).tolist() == [0.5, 0.0]  # a run from 0: 0.25 fails
    assert largest_within(shares, base, ppl, "absolute", 1.0).tolist() == [0.75, 1.0]
    # on windows: a share whose every window costs 0.5 % is within +1 %, one that costs 5 % is not
    n, tpw = 40, 10
    base_nll = np.full(n, 2.0 * tpw) + np.random.default_rng(0).normal(0, 0.01, n)
    nlls = np.stack([base_nll, base_nll + tpw * math.log(1.005), base_nll + tpw * math.log(1.05)])
    got = routable_share([0.0, 0.5, 1.0], base_nll, nlls, tpw, n_boot=500)
    assert got["routable_pct1"] == 0.5 and got["routable_pct1_lo"] == got["routable_pct1_hi"] == 0.5


def test_compute_saved_counts_the_map_and_the_gate():
    # an FFN of 2·d·4d multiply-adds, d = 10: a routed token saves 800 − 100, every token pays 10 for the gate
    assert compute_saved(0.0, 800, 10, 10) == pytest.approx(-10 / 800)
    assert compute_saved(1.0, 800, 10, 10) == pytest.approx((800 - 100 - 10) / 800)
    assert compute_saved(0.5, 800, 10, 10) == pytest.approx((0.5 * 700 - 10) / 800)


def test_token_routes_count_every_occurrence_and_the_agreement_is_pearson_over_types(tiny_model):
    """`token_routes` against a hand count on a tiny corpus: with a gate that routes every token, each type's routed
    count is its number of occurrences (np.bincount of the windows); with one that routes none, zero. The agreement
    of two corpora is Pearson's r of the per-type shares, over the types seen often enough in both."""
    import pandas as pd

    from linrec.analyses.routing import Gate, identity_agreement, token_routes

    model, tok = tiny_model("llama"), tiny_tokenizer()
    ids = tiny_windows(tok, 1024, 32).ids
    gate = Gate(np.zeros(32), 0.0, "quantile", np.zeros(1))
    t = token_routes(model, ids, {0: (gate, -math.inf), 1: (gate, math.inf)}, batch_size=8)
    want = np.bincount(ids.reshape(-1).numpy())
    every, none = t[t["block"] == 0], t[t["block"] == 1]
    assert every["n"].tolist() == want[want > 0].tolist() and every["token"].tolist() == np.flatnonzero(want).tolist()
    assert (every["routed"] == every["n"]).all() and (none["routed"] == 0).all()

    a = pd.DataFrame({"block": 3, "token": [1, 2, 3, 4, 5], "n": [10, 10, 10, 10, 2], "routed": [1, 5, 9, 2, 2]})
    b = pd.DataFrame({"block": 3, "token": [1, 2, 3, 4, 6], "n": [20, 10, 10, 5, 9], "routed": [4, 4, 9, 1, 0]})
    got = identity_agreement(a, b, min_count=5, n_boot=200).iloc[0]
    sa, sb = (
        np.array([0.1, 0.5, 0.9, 0.2]),
        np.array([0.2, 0.4, 0.9, 0.2]),
    )  # tokens 1–4 (5: too rare in a; 6: not in a)
    assert got["n_types"] == 4 and got["r"] == pytest.approx(np.corrcoef(sa, sb)[0, 1], abs=1e-12)
    assert got["r_lo"] <= got["r"] <= got["r_hi"]


def test_no_routing_choice_reads_the_held_out_windows(tiny_model, tmp_path):
    """The blocks routed, the gates (weights, thresholds), the target chosen and the train comparison stay the same
    when every held-out window is replaced by random tokens (capture included); the held-out curve changes."""
    from linrec.analyses.routing import choose_target, pick_blocks
    from test_swap import _perturbed

    model, tok = tiny_model("llama", seed=3), tiny_tokenizer()
    loaded = LoadedModel(model=model, tokenizer=tok, name="tiny", identity="tiny", source="test")
    w = tiny_windows(tok, 2048, 32)

    def choices(windows, where):
        cfg = CaptureConfig("tiny", tokens=2048, seq_len=32, sample_rows=2048)
        where.mkdir()
        cap = run_capture(loaded, windows, cfg, where, progress=False)
        st = SwapStudy(cap, loaded, windows=windows, batch_size=8, progress=False, screening_windows=2)
        blocks = pick_blocks(st.screening.predictors(alone=False), 1)
        gates, compared = zip(*(train_gates(st.heldout, b) for b in range(st.n_blocks)))
        compared = pd.DataFrame([r for rows in compared for r in rows])
        target = choose_target(compared)
        made = [(b, t, g.w.tolist(), g.b, g.threshold(0.5)) for b, gs in enumerate(gates) for t, g in gs.items()]
        rows, _ = route_block(st.heldout, blocks[0], gates[blocks[0]][target], n_boot=50)
        return (blocks, target, made, compared), [r["delta_ppl"] for r in rows]

    a, held_a = choices(w, tmp_path / "a")
    b, held_b = choices(_perturbed(w), tmp_path / "b")
    pd.testing.assert_frame_equal(a[3], b[3])  # NaN where a target has one class (an AUC of nothing)
    assert a[:3] == b[:3]
    assert not np.allclose(held_a, held_b)  # the perturbation reached what is reported


def test_routing_summary_picks_the_best_block_and_correlates_over_the_routed_blocks():
    from scipy.stats import spearmanr

    from linrec.claims.swap import routing_summary

    blocks = list(range(8))
    share = [0.0, 0.25, 0.5, 0.5, 0.75, 0.25, 1.0, 1.0]
    routable = pd.DataFrame({"model": "m", "block": blocks, "routable_pct1": share,
                             "routable_pct1_lo": [s - 0.25 for s in share], "routable_pct1_hi": share,
                             "routable_ppl1": share})  # fmt: skip
    r2 = pd.DataFrame({"model": "m", "block": blocks, "r2_lin": [0.1, 0.3, 0.2, 0.6, 0.5, 0.4, 0.9, 0.8]})
    pred = pd.DataFrame([{"model": "m", "column": "r2_lin", "spearman_rho": -0.4, "rho_lo": -0.8, "rho_hi": 0.1}])
    got = routing_summary(routable, r2, pred, n_boot=200).iloc[0]
    assert got["best_block"] == 6 and got["best_routable_pct1"] == 1.0  # ties go to the lower block
    assert got["rho_r2_routable"] == pytest.approx(spearmanr(r2["r2_lin"], share)[0], abs=1e-12)
    assert got["rho_lo"] <= got["rho_r2_routable"] <= got["rho_hi"] and got["outcome"] in ("effect", "inconclusive")
    assert got["rho_r2_swap"] == -0.4 and np.isnan(got["identity_r_median"])
    flat = routing_summary(routable.assign(routable_pct1=0.5), r2, n_boot=50).iloc[0]
    assert np.isnan(flat["rho_r2_routable"]) and flat["outcome"] == "inconclusive"  # every block alike: no ρ
