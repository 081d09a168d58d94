"""Zero-shot FFN swaps on tiny models: exactness of the swap and of the cached-prefix path, perplexity,
reduced-rank regression, greedy budget, save → reload."""

import json

import numpy as np
import pytest
import torch

from helpers import tiny_tokenizer, tiny_windows
from linrec.capture import CaptureConfig, run_capture
from linrec.ceiling import fit_affine, output_directions, reduce_rank, score
from linrec.corpora import Windows
from linrec.errors import LinrecError
from linrec.hf import LoadedModel
from linrec.models import load_model
from linrec.moments import Moments, remove_rows
from linrec.perplexity import PerplexityEvaluator, perplexity
from linrec.sites import find_ffn_sites
from linrec.surgery import AffineFFN, load_swapped, params_linear, swapped
from linrec.swap import SwapStudy, greedy_swap, screening_ids

KINDS = ["gpt2", "gpt_neox", "gpt_neox_seq", "llama", "qwen2", "gemma3_text"]  # every causal LM with an FFN site


def _study(model, tokens=2048, seq_len=32, batch_size=8):
    """SwapStudy of a tiny model on the tiny corpus (statistics from the real capture path)."""
    tok = tiny_tokenizer()
    loaded = LoadedModel(model=model, tokenizer=tok, name="tiny", identity="tiny", source="test")
    w = tiny_windows(tok, tokens, seq_len)
    cap = run_capture(loaded, w, CaptureConfig("tiny", tokens=tokens, seq_len=seq_len, sample_rows=0), progress=False)
    return SwapStudy(cap, loaded, windows=w, batch_size=batch_size, progress=False)


@pytest.fixture
def planted(tiny_model):
    """Tiny llama whose block 1 FFN is an affine map (a Linear); block 0 is its random SwiGLU."""
    model = tiny_model(
        "llama", seed=2
    )  # a seed where swapping block 0 raises perplexity (random models can go either way)
    torch.manual_seed(0)
    model.model.layers[1].mlp = torch.nn.Linear(32, 32)
    return model


def test_swapping_an_affine_ffn_changes_nothing(planted):
    st = _study(planted)
    original = planted.model.layers[1].mlp
    m = st.module(1)
    assert isinstance(m, AffineFFN) and m.weight.dtype == torch.float32
    assert abs(st.score(1).r2 - 1) < 1e-9
    ev = st.evaluator
    for b in range(len(ev.batches)):
        base = ev.logits({}, batch=b)
        assert (ev.logits({1: m}, batch=b) - base).abs().max() < 1e-5
    assert abs(ev.delta_ppl({1: m})) < 1e-6 * ev.base_ppl
    assert planted.model.layers[1].mlp is original  # restored
    assert ev.delta_ppl({0: st.module(0)}) > 0.1  # the SwiGLU block is not affine: the swap costs perplexity


def test_swap_restores_the_original_on_exceptions(tiny_model):
    model = tiny_model("qwen2")
    before = [s.module for s in find_ffn_sites(model)]
    with pytest.raises(KeyError):
        with swapped(model, {0: AffineFFN(32, 32), 1: AffineFFN(32, 32)}):
            assert isinstance(model.model.layers[1].mlp, AffineFFN)
            raise KeyError("boom")
    assert [s.module for s in find_ffn_sites(model)] == before
    with pytest.raises(LinrecError, match="blocks 0..1"):
        with swapped(model, {5: AffineFFN(32, 32)}):
            pass


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
    st = _study(model, tokens=640, seq_len=16, batch_size=3)  # seq_len 16 > Gemma's sliding window 4
    ev = st.evaluator
    assert ev._cache is not None  # the cached path is in use
    plain = PerplexityEvaluator(model, st.windows.split("test"), batch_size=3, reuse_prefix=False)
    assert plain.base_ppl == ev.base_ppl
    n = len(ev.sites)
    sets = [{i: st.module(i)} for i in range(n)] + [
        {0: st.module(0), n - 1: st.module(n - 1)},
        {n - 1: st.module(n - 1, rank=3)},
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


def test_reduced_rank_regression_is_optimal():
    rng = np.random.default_rng(0)
    n, d_in, d_out = 600, 12, 8
    x = rng.normal(size=(n, d_in)) * np.logspace(0, 1.5, d_in) + 3.0
    y = np.tanh(x @ rng.normal(size=(d_in, d_out)) / 10) + 0.2 * rng.normal(size=(n, d_out)) + 1.0
    train = Moments.of(x, y)
    fit = fit_affine(train)
    full = reduce_rank(fit, train, d_out)
    assert np.abs(full.W - fit.W).max() <= 1e-10 * np.abs(fit.W).max()
    assert np.abs(full.b - fit.b).max() <= 1e-10 * np.abs(fit.b).max()
    # independent reference on the rows: X_c = QR, SSE_r = ‖(I − QQᵀ)Y_c‖² + Σ_{k>r} σ_k²(QᵀY_c)
    xc, yc = x - x.mean(0), y - y.mean(0)
    Q, _ = np.linalg.qr(xc)
    resid = ((yc - Q @ (Q.T @ yc)) ** 2).sum()
    sig = np.linalg.svd(Q.T @ yc, compute_uv=False)
    dirs = output_directions(fit, train)
    for r in range(1, d_out + 1):
        low = reduce_rank(fit, train, r, dirs)
        sse = ((y - low.predict(x)) ** 2).sum()
        optimum = resid + (sig[r:] ** 2).sum()
        assert abs(sse - optimum) <= 1e-9 * optimum, (r, sse, optimum)
        assert abs(score(low, train).sse.sum() - sse) <= 1e-9 * sse  # the statistics path agrees
        assert np.linalg.matrix_rank(low.W) == r
        assert AffineFFN.from_fit(low).n_params == params_linear(d_in, d_out, r) == r * (d_in + d_out) + d_out
    assert AffineFFN.from_fit(fit).n_params == params_linear(d_in, d_out) == d_in * d_out + d_out
    with pytest.raises(LinrecError, match="rank"):
        reduce_rank(fit, train, d_out + 1)


def test_rank_curve_and_parameter_counts(tiny_model):
    st = _study(tiny_model("llama"))
    curve = st.rank_curve(0, [1, 4, 32])
    assert list(curve["rank"]) == [1, 4, 32, 32] and list(curve["factored"]) == [True, True, True, False]
    assert list(curve["params"]) == [1 * 64 + 32, 4 * 64 + 32, 32 * 64 + 32, 32 * 32 + 32]
    # rank d_out factored is the dense map: same perplexity, to float32 rounding
    assert abs(curve["ppl"][2] - curve["ppl"][3]) <= 1e-5 * curve["ppl"][3]
    assert curve["var_kept"].is_monotonic_increasing
    t = st.table([0])
    assert t.loc[0, "params_ffn"] == 3 * 32 * 64  # SwiGLU: gate, up, down without biases
    assert t.loc[0, "params_linear"] == 32 * 32 + 32
    assert abs(t.loc[0, "delta_ppl"] - curve["delta_ppl"][3]) < 1e-12


def test_table_and_screening(planted):
    st = _study(planted)
    t = st.table(screening_windows=3)
    for col in [
        "model",
        "block",
        "r2_lin",
        "ppl_base",
        "ppl_swapped",
        "delta_ppl",
        "params_ffn",
        "params_linear",
        "param_ratio",
        "screening_delta_ppl",
        "mse_out",
    ]:
        assert col in t.columns
    assert list(t["block"]) == [0, 1]
    assert np.allclose(t["delta_ppl"], t["ppl_swapped"] - t["ppl_base"])
    assert t.loc[1, "params_ffn"] == 32 * 32 + 32  # the planted Linear
    assert (
        abs(t.loc[1, "screening_delta_ppl"]) < 1e-6 * t.loc[1, "screening_ppl_base"]
        and t.loc[0, "screening_delta_ppl"] > 0
    )
    ids = screening_ids(st.windows, 3)
    train = st.windows.split("train")
    assert len(ids) == 3 and all(any(torch.equal(r, s) for s in train) for r in ids)  # train windows only
    assert torch.equal(ids, screening_ids(st.windows, 3))  # seeded


def test_screening_fit_leaves_the_screening_windows_out(tiny_model):
    """The leave-screening-out map equals a fit on a capture of the other train windows only."""
    st = _study(tiny_model("qwen2"))
    ids = screening_ids(st.windows, 3)
    w = st.windows
    keep = np.array([i for i in w.train if not any(torch.equal(w.ids[i], r) for r in ids)])
    assert len(keep) == len(w.train) - 3
    rest = Windows(w.ids, keep, w.test, w.corpus, w.identity, w.bos)
    ref = run_capture(st.loaded, rest, CaptureConfig("tiny", tokens=2048, seq_len=32, sample_rows=0), progress=False)
    for i in range(2):
        a, b = st.screening_fit(i, 3).W, fit_affine(ref.stats["train"][i]).W
        assert np.abs(a - b).max() <= 1e-6 * np.abs(b).max()


def test_remove_rows_is_exact():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(300, 5)) * 100 + 1e3, rng.normal(size=(300, 3)) - 50
    rest = remove_rows(Moments.of(x, y), Moments.of(x[200:], y[200:]))
    ref = Moments.of(x[:200], y[:200])
    assert rest.n == 200
    assert np.abs(rest.mean.numpy() - ref.mean.numpy()).max() <= 1e-10 * 1e3
    assert np.abs(rest.M - ref.M).max() <= 1e-9 * np.abs(ref.M).max()
    with pytest.raises(LinrecError, match="fewer screening windows"):
        remove_rows(ref, Moments.of(x, y))


def test_greedy_respects_the_budget(planted):
    st = _study(planted)
    ev = st.evaluator
    d0 = ev.delta_ppl({0: st.module(0)})
    r = st.greedy(budget_ppl=d0 / 10)  # block 1 (R² = 1) first, costs ~0; block 0 exceeds the budget
    assert r.swapped == [1]
    assert list(r.steps["block"]) == [1, 0] and list(r.steps["kept"]) == [True, False]
    assert r.delta_ppl <= d0 / 10 and r.steps.loc[1, "delta_ppl"] > d0 / 10
    assert r.params_removed == 32 * 32 + 32 and r.params_added == 32 * 32 + 32
    everything = st.greedy(budget_ppl=1e12)
    assert sorted(everything.swapped) == [0, 1]
    assert abs(everything.ppl_final - st.joint([0, 1])["ppl"]) <= 1e-12 * everything.ppl_final
    assert everything.params_removed == 3 * 32 * 64 + 32 * 32 + 32
    assert "blocks [0, 1] swapped" in everything.summary()
    nothing = greedy_swap(ev, {0: st.module(0)}, {0: 1.0}, budget_ppl=0.0, progress=False)
    assert nothing.swapped == [] and nothing.ppl_final == ev.base_ppl
    with pytest.raises(LinrecError, match="budget"):
        st.greedy(budget_ppl=-1)


def test_greedy_can_select_on_screening_windows_and_report_on_test(planted):
    st = _study(planted)
    r = st.greedy(budget_ppl=1e12, select_on="screening", screening_windows=4)
    screen, test = st.screening(4), st.evaluator
    assert sorted(r.swapped) == [0, 1] and r.ppl_base == screen.base_ppl  # selection ran on the screening windows
    mods = {i: st.screening_module(i, 4) for i in (0, 1)}  # the leave-screening-out maps, not the full-train ones
    assert abs(r.ppl_final - screen.ppl(mods)) <= 1e-12 * r.ppl_final
    assert r.holdout_ppl_base == test.base_ppl
    assert abs(r.holdout_ppl_final - test.ppl(mods)) <= 1e-12 * r.holdout_ppl_final
    assert (
        abs(r.holdout_ppl_final - test.ppl({i: st.module(i) for i in (0, 1)})) > 0
    )  # and they differ from the full fits
    with pytest.raises(LinrecError, match="select_on"):
        st.greedy(select_on="train")


@pytest.mark.parametrize("kind", ["llama", "gpt2"])  # gpt2 ties its LM head to the embeddings
def test_save_and_reload_give_identical_logits(tiny_model, tmp_path, kind):
    model = tiny_model(kind)
    st = _study(model)
    out = st.save(tmp_path / "swapped", [0, 1], ranks={0: 5})
    meta = json.loads((out / "linrec_swaps.json").read_text())
    assert [(s["block"], s["rank"]) for s in meta["swaps"]] == [(0, 5), (1, None)]
    from safetensors import safe_open

    with safe_open(str(out / "model.safetensors"), "pt") as f:
        keys = set(f.keys())
    ffn = {s.path for s in st.sites}
    stale = [
        k
        for k in keys
        if any(k.startswith(p + ".") for p in ffn) and k.rsplit(".", 1)[1] not in ("weight", "bias", "down", "up")
    ]
    assert not stale
    assert f"{st.sites[0].path}.down" in keys and f"{st.sites[1].path}.weight" in keys
    base_dir = tmp_path / "base"
    model.save_pretrained(base_dir)
    assert (out / "model.safetensors").stat().st_size < (base_dir / "model.safetensors").stat().st_size
    back = load_swapped(out)
    mods = {0: st.module(0, 5), 1: st.module(1)}
    ids = st.windows.split("test")
    with swapped(model, mods), torch.no_grad():
        want = model(input_ids=ids).logits
    with torch.no_grad():
        got = back.model(input_ids=ids).logits
    assert (got - want).abs().max() <= 1e-6
    reloaded = PerplexityEvaluator(back.model, ids).base_ppl
    in_memory = st.joint([0, 1], ranks={0: 5})["ppl"]
    assert abs(reloaded - in_memory) <= 1e-9 * in_memory
    assert back.tokenizer is not None and back.tokenizer("w1 w2").input_ids == st.loaded.tokenizer("w1 w2").input_ids
    assert find_ffn_sites(model)[0].module is st.sites[0].module  # saving left the in-memory model as it was
    via_load_model = load_model(str(out))  # what `linrec measure --model DIR` does: hands off to load_swapped
    assert via_load_model.source == "swapped"
    with torch.no_grad():
        assert (via_load_model.model(input_ids=ids).logits - want).abs().max() <= 1e-6


def test_load_swapped_refuses_a_plain_directory(tmp_path, tiny_model):
    tiny_model("llama").save_pretrained(tmp_path / "m")
    with pytest.raises(LinrecError, match="linrec swap --save"):
        load_swapped(tmp_path / "m")
