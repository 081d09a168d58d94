"""Learning curves (linrec.collect.curves) against independent references: lstsq on the same rows for every seed and
train size, a tiny llama end to end, and the cache."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from helpers import feed_curve as _feed
from helpers import tiny_tokenizer
from linrec.analyses.large_n import curve_table
from linrec.base.errors import LinrecError
from linrec.collect.curves import CurveAccumulator, CurveConfig, get_curve, run_curve, split_plan
from linrec.inputs.hf import LoadedModel
from linrec.inputs.sites import ffn_hooks, find_ffn_sites


def _lstsq_r2(xtr, ytr, xte, yte):
    A = np.c_[xtr, np.ones(len(xtr))]
    coef = np.linalg.lstsq(A, ytr, rcond=None)[0]
    pred = np.c_[xte, np.ones(len(xte))] @ coef
    fit_in = A @ coef
    r2 = 1 - ((yte - pred) ** 2).sum() / ((yte - yte.mean(0)) ** 2).sum()
    r2_in = 1 - ((ytr - fit_in) ** 2).sum() / ((ytr - ytr.mean(0)) ** 2).sum()
    return r2, r2_in


def test_split_plan_nests_train_sets_and_keeps_held_out_windows_apart():
    cfg = CurveConfig("m", seq_len=4, train_tokens=(8, 20, 40), test_tokens=12, seeds=(0, 1, 2))
    chunk, tests = split_plan(30, cfg)
    sizes = [2, 5, 10]
    for s in range(3):
        assert len(tests[s]) == 3
        assert (chunk[s, tests[s]] == -1).all()  # held out: never in that seed's train set
        for k, m in enumerate(sizes):
            assert ((chunk[s] >= 0) & (chunk[s] <= k)).sum() == m  # the first m windows of the pool
    assert not all(np.array_equal(tests[0], t) for t in tests[1:])  # the seeds hold out different windows
    with pytest.raises(LinrecError, match="too small for this curve.*lower the largest train size"):
        split_plan(12, cfg)


def test_every_seed_and_size_equals_lstsq_on_the_same_rows():
    """Held-out and in-sample R² of each (seed, size, block) map equal numpy lstsq on exactly those rows."""
    rng = np.random.default_rng(1)
    W_, T, d_in, d_out = 120, 6, 5, 3
    X = rng.normal(size=(W_, T, d_in)) * np.array([1e2, 1, 1, 0.1, 3]) + 40  # badly scaled, large mean
    Y = [np.tanh(X @ rng.normal(size=(d_in, d_out)) / 50) + 0.1 * rng.normal(size=(W_, T, d_out)) for _ in range(2)]
    X, Y = X.astype(np.float32).astype(np.float64), [y.astype(np.float32).astype(np.float64) for y in Y]
    cfg = CurveConfig("m", seq_len=T, train_tokens=(60, 180, 480), test_tokens=120, seeds=(0, 5))
    acc = CurveAccumulator([(d_in, d_out)] * 2, cfg, W_)
    _feed(acc, X, Y)
    curve = acc.result({"dims": [[d_in, d_out]] * 2})
    r2 = curve.r2()
    for s in range(2):
        te = acc.tests[s]
        for k in range(3):
            tr = np.flatnonzero((acc.chunk[s] >= 0) & (acc.chunk[s] <= k))
            for b in range(2):
                ref, ref_in = _lstsq_r2(
                    X[tr].reshape(-1, d_in), Y[b][tr].reshape(-1, d_out), X[te].reshape(-1, d_in),
                    Y[b][te].reshape(-1, d_out),
                )  # fmt: skip
                assert abs(r2[s, k, b] - ref) < 1e-9
                assert abs(curve.train_r2[s, k, b] - ref_in) < 1e-9
                assert curve.n_train[s, k, b] == len(tr) * T
    # the bootstrap with every window counted once is the point estimate
    ones = np.ones((1, len(acc.tests[1])))
    np.testing.assert_allclose(curve.r2_counts(1, 0, ones)[0], r2[1, :, 0], atol=1e-12)
    table = curve_table(curve)
    assert len(table) == 2 * 3 * 2 and table["r2"].between(-1, 1).all()


def test_tiny_llama_curve_equals_lstsq_on_hooked_rows_and_is_cached(tiny_model, tiny_corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("LINREC_CACHE", str(tmp_path / "cache"))
    model, tok = tiny_model("llama"), tiny_tokenizer()
    loaded = LoadedModel(model=model, tokenizer=tok, name="tiny", identity="tiny", source="test")
    corpus = tiny_corpus(9000)
    cfg = CurveConfig(corpus, corpus=corpus, seq_len=16, train_tokens=(1024, 2048, 4096), test_tokens=1024)
    curve = run_curve(loaded, cfg, batch_size=7, progress=False)
    from linrec.inputs.corpora import WindowCut, load_windows

    ids = load_windows(corpus, tok, WindowCut(16, cfg.total_tokens, 0, 0.5)).ids
    rows: dict[int, list] = {}
    with ffn_hooks(find_ffn_sites(model), lambda b, x, y: rows.setdefault(b, []).append((x, y))), torch.no_grad():
        model(input_ids=ids)
    chunk, tests = split_plan(len(ids), cfg)
    r2 = curve.r2()
    for b, ((x, y),) in rows.items():
        x, y = x.double().numpy(), y.double().numpy()
        for s in range(3):
            for k in (0, 2):
                tr = np.flatnonzero((chunk[s] >= 0) & (chunk[s] <= k))
                ref, _ = _lstsq_r2(x[tr].reshape(-1, 32), y[tr].reshape(-1, 32), x[tests[s]].reshape(-1, 32),
                                   y[tests[s]].reshape(-1, 32))  # fmt: skip
                assert abs(r2[s, k, b] - ref) < 1e-8
    # through the cache: computed once, then read back with the same numbers; a damaged entry is recomputed
    monkeypatch.setattr("linrec.collect.curves.load_model", lambda *a, **k: loaded)
    config = CurveConfig(corpus, corpus, seq_len=16, train_tokens=(1024, 2048, 4096), test_tokens=1024)
    first = get_curve(config, progress=False)
    again = get_curve(config, progress=False)
    assert not first.cached and again.cached
    np.testing.assert_array_equal(first.r2(), again.r2())
    np.testing.assert_allclose(again.r2(), r2, atol=1e-12)
    blob = again.path / "curve.npz"
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 0xFF
    blob.write_bytes(bytes(data))
    assert not get_curve(config, progress=False).cached


def test_bad_curve_configs_name_the_fix():
    with pytest.raises(LinrecError, match="must increase"):
        CurveConfig("m", train_tokens=(2048, 1024)).validate()
    with pytest.raises(LinrecError, match="distinct"):
        CurveConfig("m", seeds=(1, 1)).validate()
    with pytest.raises(LinrecError, match="test_tokens"):
        CurveConfig("m", test_tokens=10).validate()
