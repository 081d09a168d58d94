"""linrec.analyses.routing: per-token routing between a block's FFN and its closed-form map, and the routing summary
by hand."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from helpers import perturbed_test_windows, swap_study_with_rows, tiny_tokenizer, tiny_windows
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
    routing_summary,
    train_gates,
)
from linrec.analyses.swap import SwapStudy
from linrec.base.errors import LinrecError
from linrec.collect.capture import run_capture
from linrec.collect.config import CaptureConfig
from linrec.inputs.hf import LoadedModel


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


def test_share_zero_is_the_base_model_and_share_one_the_whole_block_swap(affine_llama, tmp_path):
    st = swap_study_with_rows(affine_llama, tmp_path)
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


def test_an_affine_block_routes_everything_for_nothing(affine_llama, tmp_path):
    """Block 1's FFN is affine: its map is exact, so routing any share (all of it included) costs no perplexity, and
    every budget's routable share is 1 with a degenerate interval; share 1 is the swap table's own number."""
    st = swap_study_with_rows(affine_llama, tmp_path)
    gates, compared = train_gates(st.heldout, 1)
    assert {r["target"] for r in compared} == set(TARGETS)
    rows, routable = route_block(st.heldout, 1, gates["quantile"])
    for r in rows:
        assert abs(r["delta_ppl"]) < 1e-6 * r["ppl_base"]
    assert routable["routable_pct1"] == routable["routable_pct1_lo"] == routable["routable_pct1_hi"] == 1.0
    assert routable["measured_to"] == 1.0 and routable["n_steps"] == len(rows) - 1
    one = [r for r in rows if r["share"] == 1.0][0]
    whole = st.heldout.table([1]).iloc[0]
    # the same windows and the same skew-corrected jackknife: routing reads it at 95 % (its own calibrated level),
    # the swap table at SWAP_LEVEL (99 %), so the point is the same and the 95 % interval lies inside the 99 % one
    assert one["delta_ppl"] == whole["delta_ppl"]
    assert whole["delta_lo"] < one["delta_lo"] <= one["delta_ppl"] <= one["delta_hi"] < whole["delta_hi"]
    # block 0 (a random SwiGLU) is not routable for free: its whole-block swap costs perplexity
    gates0, _ = train_gates(st.heldout, 0, targets=("quantile",))
    rows0, _ = route_block(st.heldout, 0, gates0["quantile"])
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
    got = routable_share([0.0, 0.5, 1.0], base_nll, nlls, tpw)
    assert got["routable_pct1"] == 0.5 and got["routable_pct1_lo"] == got["routable_pct1_hi"] == 0.5


def test_the_routable_interval_inverts_one_sided_t_tests_share_by_share():
    """The interval's ends by hand: per share, the windows' mean ΔNLL per token with its 97.5 % one-sided t bounds
    (scipy); the lower end is the largest share whose run from 0 has every upper bound within log 1.01, the upper end
    the largest whose run has no lower bound beyond it. Planted: a noisy share 0.5 near the budget (its upper bound
    beyond, its lower bound within) and a share 0.75 clearly beyond."""
    from scipy.stats import t as student

    rng = np.random.default_rng(3)
    n, tpw = 12, 100
    base_nll = tpw * (3.0 + 0.3 * rng.standard_normal(n))
    cost = {0.0: 0.0, 0.25: 0.002, 0.5: math.log(1.01) - 0.0015, 0.75: 0.05}
    nlls = np.stack([base_nll + tpw * (c + (0.004 * rng.standard_normal(n) if c else 0)) for c in cost.values()])
    got = routable_share(list(cost), base_nll, nlls, tpw)
    q = student.ppf(0.975, n - 1)
    d = (nlls - base_nll) / tpw
    m, half = d.mean(axis=1), q * d.std(axis=1, ddof=1) / math.sqrt(n)
    c = math.log(1.01)
    lo = max(s for i, s in enumerate(cost) if (m[: i + 1] + half[: i + 1] <= c).all())
    hi = max(s for i, s in enumerate(cost) if (m[: i + 1] - half[: i + 1] <= c).all())
    point = max(s for i, s in enumerate(cost) if (m[: i + 1] <= c).all())
    assert (lo, point, hi) == (0.25, 0.5, 0.5)  # the planted case separates the three ends
    assert (got["routable_pct1_lo"], got["routable_pct1"], got["routable_pct1_hi"]) == (lo, point, hi)


def test_compute_saved_counts_the_map_and_the_gate():
    # an FFN of 2·d·4d multiply-adds, d = 10: a routed token saves 800 − 100, every token pays 10 for the gate
    assert compute_saved(0.0, 800, 10, 10) == pytest.approx(-10 / 800)
    assert compute_saved(1.0, 800, 10, 10) == pytest.approx((800 - 100 - 10) / 800)
    assert compute_saved(0.5, 800, 10, 10) == pytest.approx((0.5 * 700 - 10) / 800)


def test_no_routing_choice_reads_the_held_out_windows(tiny_model, tmp_path):
    """The blocks routed, the gates (weights, thresholds), the target chosen and the train comparison stay the same
    when every held-out window is replaced by random tokens (capture included); the held-out curve changes."""
    from linrec.analyses.routing import choose_target, pick_blocks

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
        rows, _ = route_block(st.heldout, blocks[0], gates[blocks[0]][target])
        return (blocks, target, made, compared), [r["delta_ppl"] for r in rows]

    a, held_a = choices(w, tmp_path / "a")
    b, held_b = choices(perturbed_test_windows(w), tmp_path / "b")
    reported = ["gate_auc_heldout"]  # the gates' held-out AUC reports on the held-out rows: it must change, and does
    pd.testing.assert_frame_equal(a[3].drop(columns=reported), b[3].drop(columns=reported))  # NaN: one class
    assert a[:3] == b[:3]
    assert not np.allclose(held_a, held_b)  # the perturbation reached what is reported
    assert not np.allclose(a[3]["gate_auc_heldout"].fillna(0), b[3]["gate_auc_heldout"].fillna(0))


# ---- the share grid: nested thresholds, share p routes p, share 1 routes everything (issue 49) ---------------------
def _gate_on_random_rows(n=2000, d=6, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    labels = (x[:, 0] + 0.5 * rng.standard_normal(n) > 0).astype(float)
    return fit_gate(x, labels), x, rng


def test_share_p_routes_p_of_the_train_rows_and_the_routed_sets_are_nested():
    """Guards the threshold at the p quantile of the train scores instead of the (1 − p) quantile (share p would route
    1 − p: identical at 0.5, so the tests at 0.5 miss it) and thresholds read off unsorted train scores (routed sets
    that are not nested): on the train rows share p routes round(p·n) rows exactly (continuous scores, no ties), on
    fresh rows every share's routed set holds the previous share's, and the realised share is near p."""
    from linrec.analyses.routing import SHARES

    gate, x, rng = _gate_on_random_rows()
    fresh = rng.standard_normal((4000, x.shape[1]))
    assert len(SHARES) == 21 and SHARES[3] == 0.15 and SHARES[-1] == 1.0
    previous = np.zeros(len(fresh), bool)
    for p in SHARES:
        assert gate.routes(x, p).sum() == round(p * len(x)), p
        now = gate.routes(fresh, p)
        assert not (previous & ~now).any(), f"share {p} drops a token a smaller share routes"
        assert abs(now.mean() - p) < 0.04, (p, now.mean())
        previous = now


def test_share_one_routes_a_token_that_scores_below_every_train_row(affine_llama, tmp_path):
    """Guards share 1 taking the lowest train score as its threshold instead of −inf: a held-out token scoring below
    every train row would stay on the FFN, so share 1 would not be the whole-block swap. Here the token's score is 10
    below the lowest train score; in the model, the routed module at share 1 still sends every token to the map."""
    from linrec.analyses.routing import share_grid

    gate, x, _ = _gate_on_random_rows()
    low = x[np.argmin(gate.scores(x))] - 10 * gate.w / (gate.w @ gate.w)  # score: 10 below the lowest
    assert gate.scores(low[None])[0] < gate.train_scores[0] - 9
    assert gate.routes(low[None], 1.0).all() and not gate.routes(low[None], 0.95).any()
    ffn, affine = torch.nn.Linear(6, 6), torch.nn.Linear(6, 6)
    routed = RoutedFFN(ffn, affine, gate, gate.threshold(1.0))
    xs = torch.as_tensor(np.vstack([x[:5], low[None]]), dtype=torch.float32)
    assert torch.equal(routed(xs), affine(xs)) and routed.share == 1.0
    with pytest.raises(LinrecError, match="divide 1"):
        share_grid(0.3)


def _planted_curve(monkeypatch, n=30, tpw=20, seed=0):
    """A held-out part whose per-window NLL at each share is planted (`routed_nll` replaced): perplexity flat to
    share 0.3, then up by about 0.5 % of base per 0.05 with window noise, so the +1 % budget is left near 0.4 and
    some resamples stay within it a step or two longer."""
    from types import SimpleNamespace

    from linrec.analyses import routing
    from linrec.analyses.perplexity import PerplexityEvaluator

    rng = np.random.default_rng(seed)
    base = np.full(n, 3.0 * tpw) + rng.normal(0, 0.5, n)
    noise = rng.normal(0, 1.0, (len(routing.SHARES), n))
    planted = {s: base + tpw * np.log1p(0.1 * max(0.0, s - 0.3)) + 0.6 * noise[i] * (s > 0)
               for i, s in enumerate(routing.SHARES)}  # fmt: skip
    asked = []

    def fake(heldout, block, gate, share):
        asked.append(share)
        return planted[share], share

    monkeypatch.setattr(routing, "routed_nll", fake)
    ev = type("Ev", (), {"delta_of": PerplexityEvaluator.delta_of, "base_ppl": PerplexityEvaluator.base_ppl,
                         "base_nll": PerplexityEvaluator.base_nll})()  # fmt: skip
    ev.base_window_nll, ev.tokens_per_window, ev.n_windows, ev.n_tokens = base, tpw, n, n * tpw
    heldout = SimpleNamespace(capture=SimpleNamespace(model_label="m"), evaluator=ev,
                              sites={0: SimpleNamespace(module=torch.nn.Linear(4, 16))},
                              fit=lambda b: SimpleNamespace(W=np.zeros((4, 4))))  # fmt: skip
    gate = SimpleNamespace(target="quantile", n_params=5)
    return heldout, gate, asked


def test_the_curve_stops_once_no_resample_can_still_be_within_budget_and_loses_nothing(monkeypatch):
    """The curve measured with the stop is a prefix of the whole grid's, and its routable share and interval are the
    whole grid's, exactly. Guards a stop at the estimate's first failure (planted: the interval's upper end would be
    cut at the estimate, since here some resamples stay within budget a step longer) and a stop that never comes."""
    heldout, gate, asked = _planted_curve(monkeypatch)
    rows, routable = route_block(heldout, 0, gate)
    every, whole = route_block(heldout, 0, gate, stop=False)
    assert len(rows) < len(every) == 21 and routable["measured_to"] == rows[-1]["share"] < 0.7
    assert asked[: len(rows)] == [r["share"] for r in rows] and asked[len(rows) :] == [r["share"] for r in every]
    assert [r["delta_ppl"] for r in rows] == [r["delta_ppl"] for r in every[: len(rows)]]
    for k in ("routable_pct1", "routable_pct1_lo", "routable_pct1_hi"):
        assert routable[k] == whole[k], k
    assert routable["routable_pct1_hi"] > routable["routable_pct1"]  # a resample outlives the estimate
    over = [r for r in rows if r["delta_ppl"] > 0.01 * r["ppl_base"]]
    assert over and over[0]["share"] < rows[-1]["share"]  # measured past the estimate's first failure


def test_monotonicity_counts_falls_and_those_beyond_noise():
    """A planted curve on 40 windows: perplexity rises, falls by 3 % on every window (beyond noise), rises, falls by
    a hair with window noise around it (within noise), rises."""
    from linrec.analyses.routing import monotonicity

    n, tpw = 40, 10
    rng = np.random.default_rng(0)
    base = np.full(n, 2.0 * tpw)
    levels = [0.0, 0.05, 0.02, 0.06, 0.0595, 0.08]  # mean NLL per token added at each share
    nlls = np.stack([base + tpw * lv + (rng.normal(0, 0.05, n) if i == 4 else 0) for i, lv in enumerate(levels)])
    got = monotonicity([0, 0.2, 0.4, 0.6, 0.8, 1.0], nlls, tpw)
    ppl = np.exp(nlls.sum(1) / (n * tpw))
    assert got["n_steps"] == 5 and got["n_drops"] == int((np.diff(ppl) < 0).sum())
    assert got["n_drops_beyond_noise"] == 1 and not got["monotone"]
    assert got["max_drop"] == pytest.approx(-np.diff(ppl).min())
    assert monotonicity([0, 0.5, 1], nlls[[0, 1, 3]], tpw)["monotone"]


def test_the_routable_interval_is_a_run_from_share_0_by_hand():
    """A curve that is not monotone: within the budget at 0.25, near it at 0.5 (its upper bound beyond, its lower
    within), clearly beyond at 0.75, and back within at 1.0 (a share past a failure does not count). By hand, per
    share, the windows' mean ΔNLL per token with its one-sided 97.5 % t bounds (scipy); each end is the largest share
    whose whole run from share 0 passes its test: (lo, point, hi) = (0.25, 0.5, 0.5), not 1.0. Planted, each caught:
    `np.cumprod(bounds[:, col] <= c)` → `bounds[:, col] <= c` in linrec.analyses.routing.routable_share (lo and hi
    1.0); `np.cumprod(ok, axis=-1)` → `ok` in `_alive` (point 1.0)."""
    from scipy.stats import t as student

    rng = np.random.default_rng(3)
    n, tpw = 12, 100
    base_nll = tpw * (3.0 + 0.3 * rng.standard_normal(n))
    cost = {0.0: 0.0, 0.25: 0.002, 0.5: math.log(1.01) - 0.0015, 0.75: 0.05, 1.0: 0.001}
    nlls = np.stack([base_nll + tpw * (c + (0.004 * rng.standard_normal(n) if c else 0)) for c in cost.values()])
    got = routable_share(list(cost), base_nll, nlls, tpw)
    d = (nlls - base_nll) / tpw
    m, half = d.mean(axis=1), student.ppf(0.975, n - 1) * d.std(axis=1, ddof=1) / math.sqrt(n)
    c = math.log(1.01)

    def run_end(ok):
        return max(s for i, s in enumerate(cost) if ok[: i + 1].all())

    want = (run_end(m + half <= c), run_end(m <= c), run_end(m - half <= c))
    assert want == (0.25, 0.5, 0.5) and (m[-1] + half[-1] <= c)  # share 1.0 is shown within, past a failure
    assert (got["routable_pct1_lo"], got["routable_pct1"], got["routable_pct1_hi"]) == want


def test_the_routing_target_is_the_one_with_the_lowest_mean_train_error():
    """Three targets over three blocks: "b" has the lowest error on two of the three blocks, but "c" the lowest mean
    over the blocks (0.2 against b's 0.3 and a's 0.5), which is what `choose_target` reads; the held-out AUC, whatever
    it says, plays no part. Planted, each caught: `idxmin` → `idxmax` in linrec.analyses.routing.choose_target; the
    mean → the median (b then wins) or the min over blocks."""
    from linrec.analyses.routing import choose_target

    err = {"a": [0.5, 0.5, 0.5], "b": [0.1, 0.1, 0.7], "c": [0.2, 0.2, 0.2]}
    auc_heldout = {"a": 0.99, "b": 0.5, "c": 0.5}
    comparison = pd.DataFrame([{"block": k, "target": t, "err_routed_train": e[k], "gate_auc_heldout": auc_heldout[t]}
                               for t, e in err.items() for k in range(3)])  # fmt: skip
    means = {t: float(np.mean(e)) for t, e in err.items()}
    assert min(means, key=means.get) == "c" == choose_target(comparison)
    assert choose_target(comparison.sample(frac=1, random_state=0)) == "c"  # the order of the rows plays no part


# ---- the routing summary: the largest routable share, ρ with R²_lin at the effective number of blocks ------------
def test_routing_summary_picks_the_best_block_counts_and_correlates_over_the_routed_blocks():
    from scipy.stats import spearmanr

    blocks = list(range(8))
    share = [0.0, 0.25, 0.5, 0.5, 0.75, 0.2, 1.0, 1.0]
    routable = pd.DataFrame({"model": "m", "block": blocks, "routable_pct1": share,
                             "routable_pct1_lo": [s - 0.25 for s in share], "routable_pct1_hi": share,
                             "monotone": [True, True, False, True, True, True, False, True]})  # fmt: skip
    r2 = pd.DataFrame({"model": "m", "block": blocks, "r2_lin": [0.1, 0.3, 0.2, 0.6, 0.5, 0.4, 0.9, 0.8]})
    pred = pd.DataFrame([{"model": "m", "column": "r2_lin", "spearman_rho": -0.4, "rho_lo": -0.8, "rho_hi": 0.1}])
    identity = pd.DataFrame({"model": "m", "block": [0, 1, 2], "r": [0.7, 0.8, 0.9], "r_need": [0.0, 0.1, 0.5]})
    got = routing_summary(routable, r2, pred, identity).iloc[0]
    assert got["best_block"] == 6 and got["best_routable_pct1"] == 1.0  # ties go to the lower block
    assert got["n_quarter"] == 6 and got["n_monotone"] == 6  # 0.2 and 0.0 are below a quarter
    assert got["rho_r2_routable"] == pytest.approx(spearmanr(r2["r2_lin"], share)[0], abs=1e-12)
    assert got["rho_lo"] <= got["rho_r2_routable"] <= got["rho_hi"] and got["outcome"] in ("effect", "inconclusive")
    assert got["rho_r2_swap"] == -0.4
    assert got["identity_r_median"] == pytest.approx(0.8) and got["need_r_median"] == pytest.approx(0.1)
    flat = routing_summary(routable.assign(routable_pct1=0.5), r2).iloc[0]
    assert np.isnan(flat["rho_r2_routable"]) and flat["outcome"] == "inconclusive"  # every block alike: no ρ
    assert np.isnan(flat["identity_r_median"]) and np.isnan(flat["need_r_median"])


def test_the_routing_summary_reports_the_median_identity_r():
    """Guards `median()` → `max()` (or any other statistic) of the token-identity r in `routing_summary`: the
    model's r over blocks and corpus pairs is 0.1, 0.3, 0.4, 0.95 (median 0.35 by hand); another model's r does not
    enter."""
    blocks = [0, 1, 2]
    routable = pd.DataFrame({"model": "m", "block": blocks, "routable_pct1": [0.2, 0.5, 0.4],
                             "routable_pct1_lo": 0.0, "routable_pct1_hi": 1.0})  # fmt: skip
    r2 = pd.DataFrame({"model": "m", "block": blocks, "r2_lin": [0.3, 0.9, 0.6]})
    identity = pd.DataFrame({"model": ["m", "m", "m", "m", "other"], "block": [0, 1, 0, 1, 0],
                             "corpus_b": ["web", "web", "code", "code", "web"],
                             "r": [0.95, 0.1, 0.4, 0.3, -1.0]})  # fmt: skip
    got = routing_summary(routable, r2, identity=identity).iloc[0]
    assert got["identity_r_median"] == pytest.approx((0.3 + 0.4) / 2)


def test_the_routing_rho_interval_is_fishers_at_the_effective_number_of_blocks_by_hand():
    """Twenty routed blocks whose R²_lin and routable share both drift smoothly with depth (neighbours alike, so the
    effective number of blocks is well under 20): ρ is Spearman's; its 95 % and 90 % intervals are Fisher's z ± z_q
    √(1.06 / (n_eff − 3)) at Bartlett's n_eff of the ranks (by hand, `helpers.hand_effective_n`), not at n − 3 as if
    the blocks were independent; equal to 1e-12. Planted: `"lo", "hi"` read from `lo_iid`/`hi_iid` in
    linrec.analyses.routing.routing_summary fails; `dof = n_eff - 3 - extra` → `n - 3 - extra` in
    linrec.analyses.uncertainty.correlation_test fails."""
    from scipy.stats import norm, rankdata, spearmanr

    from helpers import hand_effective_n

    g = np.random.default_rng(2)
    n = 20
    depth = np.arange(n)
    r2 = 0.5 + 0.1 * np.sin(depth / 3) + 0.1 * g.standard_normal(n)
    share = np.clip(0.4 + 0.1 * np.sin(depth / 3 + 0.5) + 0.1 * g.standard_normal(n), 0, 1)
    routable = pd.DataFrame({"model": "m", "block": depth, "routable_pct1": share, "routable_pct1_lo": share - 0.1,
                             "routable_pct1_hi": share + 0.1})  # fmt: skip
    got = routing_summary(routable, pd.DataFrame({"model": "m", "block": depth, "r2_lin": r2})).iloc[0]
    rho = spearmanr(r2, share)[0]
    n_eff = hand_effective_n(rankdata(r2), rankdata(share))
    assert 5 < n_eff < n - 3  # dependent blocks (not at the floor of 5): as if independent would be narrower
    z = np.arctanh(rho)
    for q, lo, hi in ((0.975, "rho_lo", "rho_hi"), (0.95, "rho_lo90", "rho_hi90")):
        h = norm.ppf(q) * np.sqrt(1.06 / (n_eff - 3))
        assert (got[lo], got[hi]) == pytest.approx((np.tanh(z - h), np.tanh(z + h)), abs=1e-12, rel=0)
    assert got["rho_r2_routable"] == pytest.approx(rho, abs=1e-12) and got["n_eff"] == pytest.approx(n_eff, abs=1e-12)
