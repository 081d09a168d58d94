"""Zero-shot FFN swaps on tiny models: exactness of the swap and of the cached-prefix path, perplexity,
reduced-rank regression, greedy budget, save → reload."""

import numpy as np
import pytest
import torch

from helpers import perturbed_test_windows, swap_study, tiny_tokenizer, tiny_windows
from linrec.analyses.perplexity import PerplexityEvaluator, perplexity
from linrec.analyses.screening import GREEDY_ORDERS, greedy_swap, screening_ids
from linrec.analyses.swap import SwapStudy
from linrec.analyses.uncertainty import delta_ppl_interval
from linrec.base.errors import LinrecError
from linrec.inputs.corpora import Windows
from linrec.inputs.hf import LoadedModel
from linrec.inputs.surgery import AffineFFN, swapped
from linrec.measure.capture import run_capture
from linrec.measure.config import CaptureConfig
from linrec.stats.ceiling import fit_affine

KINDS = ["gpt2", "gpt_neox", "gpt_neox_seq", "llama", "qwen2", "gemma3_text"]  # every causal LM with an FFN site


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


def test_perplexity_equals_hf_loss(tiny_model):
    model = tiny_model("llama")
    ids = tiny_windows(tiny_tokenizer(), 1024).ids
    ev = PerplexityEvaluator(model, ids, batch_size=5)
    with torch.no_grad():
        hf = float(torch.exp(model(input_ids=ids, labels=ids).loss.double()))
    assert abs(ev.base_ppl - hf) / hf < 1e-6
    assert (
        abs(ev.base_ppl - perplexity(model, ids, batch_size=5)) / hf < 1e-6
    )  # models.perplexity returns exp taken in float32
    assert ev.n_tokens == ids.shape[0] * (ids.shape[1] - 1)


@pytest.mark.parametrize("kind", KINDS)
def test_cached_prefix_equals_full_forward(tiny_model, kind):
    """Blocks before the first swap answer from the base run: same logits and ppl as a plain forward."""
    model = tiny_model(kind)
    st = swap_study(model, tokens=640, seq_len=16, batch_size=3)  # seq_len 16 > Gemma's sliding window 4
    ev = st.heldout.evaluator
    assert ev._cache is not None  # the cached path is in use
    plain = PerplexityEvaluator(model, st.windows.split("test"), batch_size=3, reuse_prefix=False)
    assert plain.base_ppl == ev.base_ppl
    n = len(ev.sites)
    sets = [{i: st.heldout.module(i)} for i in range(n)] + [
        {0: st.heldout.module(0), n - 1: st.heldout.module(n - 1)},
        {n - 1: st.heldout.module(n - 1, rank=3)},
    ]
    calls = []
    handle = ev.sites[0].module.register_forward_hook(lambda *a: calls.append(1))
    try:
        for swaps in sets:
            for b, ids in enumerate(ev.batches):
                with swapped(model, swaps), torch.no_grad():
                    ref = model(input_ids=ids).logits
                assert (ev.logits(swaps, batch=b) - ref).abs().max() <= 1e-5
            q = plain.ppl(swaps)
            calls.clear()
            p = ev.ppl(swaps)
            assert abs(p - q) <= 1e-9 * q, (kind, sorted(swaps), p, q)
            if min(swaps) > 0:
                assert not calls  # block 0 really was skipped
    finally:
        handle.remove()


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


def test_screening_fit_leaves_the_screening_windows_out(tiny_model):
    """The leave-screening-out map equals a fit on a capture of the other train windows only."""
    st = swap_study(tiny_model("qwen2"), screening_windows=3)
    ids = screening_ids(st.windows, 3)
    w = st.windows
    keep = np.array([i for i in w.train if not any(torch.equal(w.ids[i], r) for r in ids)])
    assert len(keep) == len(w.train) - 3
    rest = Windows(w.ids, keep, w.test, w.corpus, w.identity, w.bos)
    ref = run_capture(st.loaded, rest, CaptureConfig("tiny", tokens=2048, seq_len=32, sample_rows=0), progress=False)
    for i in range(2):
        a, b = st.screening.screening_fit(i).W, fit_affine(ref.stats["train"][i]).W
        assert np.abs(a - b).max() <= 1e-6 * np.abs(b).max()


def test_greedy_respects_the_budget(affine_llama):
    st = swap_study(affine_llama)
    ev = st.screening.evaluator
    d0 = st.screening.alone(0)
    r = st.greedy(budget_ppl=d0 / 10)  # block 1 (R² = 1) first, costs ~0; block 0 exceeds the budget alone
    assert r.swapped == [1] and r.order == "r2_lin"
    assert list(r.steps["block"]) == [1, 0] and list(r.steps["kept"]) == [True, False]
    assert list(r.steps["tried"]) == [True, False]  # block 0 is over the budget alone: not tried
    assert r.delta_ppl <= d0 / 10
    assert r.params_removed == 32 * 32 + 32 and r.params_added == 32 * 32 + 32
    assert r.test is not None and abs(r.test.delta) < 1e-6 * r.test.ppl_base  # the affine block costs nothing
    everything = st.greedy(budget_ppl=1e12, order="screening")
    assert sorted(everything.swapped) == [0, 1] and list(everything.steps["block"]) == [1, 0]
    mods = {i: st.screening.screening_module(i) for i in (0, 1)}  # selection used the leave-screening-out maps …
    assert abs(everything.ppl_final - ev.ppl(mods)) <= 1e-12 * everything.ppl_final
    joint = st.heldout.joint([0, 1])  # … and the held-out report the capture's maps
    assert abs(everything.test.ppl - joint["ppl"]) <= 1e-12 * joint["ppl"]
    assert (everything.test.lo, everything.test.hi) == (joint["delta_lo"], joint["delta_hi"])
    row = everything.row()
    assert row["blocks_swapped"] == "0 1" and row["heldout_minus_screening"] == pytest.approx(
        everything.test.delta - everything.delta_ppl
    )
    assert everything.params_removed == 3 * 32 * 64 + 32 * 32 + 32
    assert "blocks [0, 1] kept" in everything.summary()
    nothing = greedy_swap(ev, {0: st.heldout.module(0)}, [0], budget_ppl=0.0, progress=False)
    assert nothing.swapped == [] and nothing.ppl_final == ev.base_ppl and nothing.row()["test_delta_ppl"] == 0
    with pytest.raises(LinrecError, match="budget"):
        st.greedy(budget_ppl=-1)
    with pytest.raises(LinrecError, match="greedy order"):
        st.greedy(order="test")


def test_no_choice_reads_the_test_windows(tiny_model):
    """Orderings, the reduced-rank block, greedy acceptance and the predictors stay the same when every test window
    is replaced by random tokens (capture included); the reported test numbers do change."""
    model = tiny_model("llama", seed=3)
    tok = tiny_tokenizer()
    w = tiny_windows(tok, 2048, 32)
    loaded = LoadedModel(model=model, tokenizer=tok, name="tiny", identity="tiny", source="test")
    cfg = CaptureConfig("tiny", tokens=2048, seq_len=32, sample_rows=0)

    def choices(windows):
        cap = run_capture(loaded, windows, cfg, progress=False)
        st = SwapStudy(cap, loaded, windows=windows, batch_size=8, progress=False, screening_windows=4)
        p = st.screening.predictors()
        greedy = {o: st.greedy(budget_ppl=1e12 if o == "r2_lin" else 0.0,
                               order=o) for o in GREEDY_ORDERS}  # fmt: skip
        out = {
            "predictors": p.drop(columns=["model"]).to_numpy(),
            "orders": [st.screening.order(o) for o in GREEDY_ORDERS],
            "curve_block": st.screening.curve_block(p),
            "greedy": [(g.swapped, g.steps["tried"].tolist(), g.ppl_final) for g in greedy.values()],
            "first_share": [st.screening.first_share(i) for i in range(st.n_blocks)],
        }
        # the screening part is built from train statistics and train windows only: it holds nothing held out
        held = {id(cap), id(windows), id(cap.stats["test"]), id(cap.heldout), id(st.heldout.report_ids)}
        assert not [k for k, v in vars(st.screening).items() if id(v) in held or isinstance(v, Windows)]
        assert {tuple(r) for r in st.screening.ids.tolist()} <= {tuple(r) for r in windows.split("train").tolist()}
        return out, st.heldout.table()["delta_ppl"].to_numpy()

    a, test_a = choices(w)
    b, test_b = choices(perturbed_test_windows(w))
    assert np.array_equal(a.pop("predictors"), b.pop("predictors"), equal_nan=True)
    assert a == b
    assert not np.allclose(test_a, test_b)  # the perturbation reached what is reported


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


def test_predictors_against_stored_rows(tiny_model, tmp_path):
    """Every predictor recomputed from the capture's stored rows, numpy least squares and HF hidden states."""
    model = tiny_model("gemma3_text")  # post-FFN norm
    tok = tiny_tokenizer()
    w = tiny_windows(tok, 2048, 32)
    loaded = LoadedModel(model=model, tokenizer=tok, name="tiny", identity="tiny", source="test")
    cap = run_capture(loaded, w, CaptureConfig("tiny", tokens=2048, seq_len=32, sample_rows=4096),
                      out_dir=tmp_path / "cap", progress=False)  # fmt: skip
    st = SwapStudy(cap, loaded, windows=w, progress=False, screening_windows=5)
    p = st.screening.predictors(alone=False).set_index("block")
    ids = st.screening.ids
    screen = [i for i in w.train if any(torch.equal(w.ids[i], r) for r in ids)]
    index = cap.row_index()
    with torch.no_grad():
        hidden = model(input_ids=ids, output_hidden_states=True).hidden_states
    for block in range(st.n_blocks - 1):  # HF's last hidden state is after the final norm
        x, y = (np.asarray(a, dtype=np.float64) for a in cap.rows(block))
        train = index[:, 2] == 0
        in_screen = np.isin(index[:, 0], screen)
        fit_rows = train & ~in_screen
        X = np.hstack([x[fit_rows], np.ones((fit_rows.sum(), 1))])
        coef = np.linalg.lstsq(X, y[fit_rows], rcond=None)[0]
        sel = train & in_screen
        order = np.lexsort((index[sel, 1], [screen.index(i) for i in index[sel, 0]]))  # screening window, position
        xs, ys, pos = x[sel][order], y[sel][order], index[sel, 1][order]
        e = ys - (xs @ coef[:-1] + coef[-1])
        r2 = 1 - (e**2).sum() / ((ys - ys.mean(0)) ** 2).sum()
        rest = pos > 0
        r2_ex = 1 - (e[rest] ** 2).sum() / ((ys[rest] - ys[rest].mean(0)) ** 2).sum()
        h = hidden[block + 1].reshape(-1, hidden[block + 1].shape[-1]).double().numpy()
        post = st.heldout.sites[block].post_norm
        with torch.no_grad():
            ny = post(torch.from_numpy(ys).float()).double().numpy()
            nh = post(torch.from_numpy(ys - e).float()).double().numpy()
        row = p.loc[block]
        assert row["r2_lin"] == pytest.approx(r2, rel=1e-4, abs=1e-5)
        assert row["r2_ex_first"] == pytest.approx(r2_ex, rel=1e-4, abs=1e-5)
        assert row["mse_out"] == pytest.approx((e**2).sum() / len(e), rel=1e-4)
        assert row["err_rel_resid"] == pytest.approx((e**2).sum() / (h**2).sum(), rel=1e-4)
        assert row["err_post_norm_rel_resid"] == pytest.approx(((nh - ny) ** 2).sum() / (h**2).sum(), rel=1e-3)
        assert row["depth_from_end"] == min(block, st.n_blocks - 1 - block)
    llama = swap_study(tiny_model("llama"), screening_windows=4).screening.predictors(alone=False)
    assert llama["err_post_norm_rel_resid"].isna().all()  # llama adds y as it is: no post-FFN norm


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


def test_run_model_is_notebook_06_for_one_model(tiny_model_dir, tiny_corpus, tmp_path, monkeypatch):
    """`run_model` (notebook 06's per-model step): a table row per block and variant, the rank curve on the block
    `curve_block` picks, one greedy row per order, a reload that reproduces the in-memory perplexity, and the
    temporary save directory gone afterwards."""
    import tempfile

    from linrec.analyses.swap import SwapSettings
    from linrec.analyses.swap_run import run_model

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    kw = dict(corpus=tiny_corpus(), seq_len=32, tokens=2048, sample_rows=0, progress=False)
    run = run_model(tiny_model_dir, kw, SwapSettings(ranks=[4], variant_min_first_share=0.0))
    n = run.ceiling.shape[0]
    assert (run.table["first"] == "map").sum() == n and {"ffn", "mean"} <= set(run.table["first"])
    assert run.curve["block"].nunique() == 1 and list(run.curve["rank"].iloc[:1]) == [4]
    assert [g["order"] for g in run.greedy] == list(GREEDY_ORDERS)
    assert run.reload["abs_diff"] <= 1e-6 * run.reload["ppl_in_memory"]
    assert list((tmp_path / "tmp").iterdir()) == []  # the 0.5–1 GB scratch copy is deleted
    kept = run_model(tiny_model_dir, kw, SwapSettings(ranks=[]), save_dir=tmp_path / "keep")
    assert (tmp_path / "keep").is_dir() and str(tmp_path / "keep") in kept.reload["directory"]
