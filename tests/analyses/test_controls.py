"""linrec.analyses.controls, the controls of notebook 07: Gaussian inputs, re-colouring, shuffled weights, feeding
FFNs other inputs (cross feeds), the shared scores and rows they are measured with, and claim 2a's summaries by hand."""

import numpy as np
import pandas as pd
import pytest
import torch

from helpers import capture_with
from linrec.analyses.controls import (
    _split_rows,
    cross_feed,
    gaussian_like,
    input_control_summary,
    input_controls,
    r2_of_map,
    random_init_summary,
    recolour,
)
from linrec.collect.config import CaptureConfig
from linrec.inputs.models import load_model, random_init_spec
from linrec.inputs.sites import find_ffn_sites
from linrec.stats.ceiling import fit_affine, score
from linrec.stats.moments import Moments


def test_gaussian_inputs_reproduce_the_captured_moments():
    rng = np.random.default_rng(0)
    d = 6
    A = rng.standard_normal((d, d)) * np.logspace(0, 2, d)  # anisotropic, strongly scaled
    x = rng.standard_normal((5000, d)) @ A + rng.standard_normal(d) * 10
    m = Moments.of(torch.from_numpy(x), torch.from_numpy(x[:, :1]))
    n = 200_000
    g = gaussian_like(m, n, seed=1).astype(np.float64)
    cov = m.Cxx / (m.n - 1)
    se = np.sqrt(np.diag(cov) / n)
    assert (np.abs(g.mean(0) - m.mean_x) < 5 * se).all()
    rel = np.linalg.norm(np.cov(g.T) - cov) / np.linalg.norm(cov)
    assert rel < 0.02
    assert np.array_equal(gaussian_like(m, 10, seed=3), gaussian_like(m, 10, seed=3))


def test_recolour_maps_source_moments_onto_target_moments():
    rng = np.random.default_rng(1)
    xa = rng.standard_normal((4000, 5)) @ rng.standard_normal((5, 5)) + 3
    xb = rng.standard_normal((4000, 5)) @ rng.standard_normal((5, 5)) * 7 - 1
    ma, mb = (Moments.of(torch.from_numpy(x), torch.from_numpy(x[:, :1])) for x in (xa, xb))
    out = recolour(xa, ma, mb).astype(np.float64)  # whitened with xa's own statistics: exact in-sample
    assert np.allclose(out.mean(0), mb.mean_x, atol=1e-4 * np.abs(mb.mean_x).max())
    assert np.allclose(np.cov(out.T), mb.Cxx / (mb.n - 1), rtol=1e-4, atol=1e-4 * np.abs(mb.Cxx).max() / mb.n)
    assert np.allclose(recolour(xa, ma, ma), xa, atol=1e-4)  # re-colouring to itself changes nothing


class _Square(torch.nn.Module):
    """y = x² element-wise: for x ~ N(μ, σ²) per feature the best affine map has R² = 2μ²/(σ² + 2μ²)."""

    def __init__(self):
        super().__init__()
        self.dummy = torch.nn.Parameter(torch.zeros(1))

    def forward(self, x):
        return x**2


def test_gaussian_control_on_a_known_quadratic_map():
    mu, sigma = 1.0, 2.0
    rng = np.random.default_rng(2)
    x = mu + sigma * rng.standard_normal((20_000, 4))
    m = Moments.of(torch.from_numpy(x), torch.from_numpy(x))
    r = r2_of_map(_Square(), gaussian_like(m, 40_000, seed=0), gaussian_like(m, 10_000, seed=1))
    assert abs(r["r2"] - 2 * mu**2 / (sigma**2 + 2 * mu**2)) < 0.02  # 1/3


def test_own_inputs_reproduce_the_captured_r2_lin(tiny_setup):
    model_dir, kw = tiny_setup
    c = capture_with(model_dir, **kw)
    loaded = load_model(model_dir)
    sites = find_ffn_sites(loaded.model)
    assert len(c.row_index()) == 3200  # every row stored
    for i in range(c.n_blocks):
        cap = score(fit_affine(c.stats["train"][i]), c.stats["test"][i]).r2
        again = r2_of_map(sites[i].module, *_split_rows(c, i, None, 0), block=i)["r2"]
        assert abs(again - cap) < 1e-9
    t = input_controls(c, loaded, progress=False)
    sub = input_controls(c, loaded, n_rows=1600, progress=False)  # the re-computed path, on half the rows
    for i in range(c.n_blocks):
        assert t.loc[i, "r2_own"] == pytest.approx(
            score(fit_affine(c.stats["train"][i]), c.stats["test"][i]).r2, abs=1e-12
        )
        assert sub.loc[i, "n_train"] + sub.loc[i, "n_test"] == 1600
    assert t["r2_gaussian"].between(-1, 1).all() and t["r2_other_block"].notna().all()
    assert list(t["other_block"]) == [1, 0]


def test_cross_feed_of_a_model_with_itself_is_the_identity(tiny_setup):
    model_dir, kw = tiny_setup
    c = capture_with(model_dir, **kw)
    loaded = load_model(model_dir)
    t = cross_feed(c, c, loaded, progress=False)
    assert np.allclose(t["r2_raw"], t["r2_ffn_own_inputs"], atol=1e-9)
    assert np.allclose(t["r2_recoloured"], t["r2_ffn_own_inputs"], atol=1e-4)


def test_cross_feed_between_trained_and_random_init(tiny_setup):
    model_dir, kw = tiny_setup
    trained = capture_with(model_dir, **kw)
    init_spec = random_init_spec(model_dir, 0)
    init = capture_with(init_spec, **kw)
    t = cross_feed(trained, init, load_model(init_spec), progress=False)
    assert len(t) == trained.n_blocks and t[["r2_raw", "r2_recoloured"]].notna().all().all()
    assert (t["inputs_from"] == trained.model_label).all() and (t["ffn_of"] == init_spec).all()


# ---- claim 2, decomposed ------------------------------------------------------------------------------------
def test_shuffled_weights_keep_each_matrix_multiset():
    from linrec.analyses.controls import shuffled_weights

    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(6, 10), torch.nn.GELU(), torch.nn.Linear(10, 4))
    out = shuffled_weights(mlp, seed=3)
    for (name, a), b in zip(mlp.named_parameters(), out.parameters()):
        assert torch.equal(torch.sort(a.flatten()).values, torch.sort(b.flatten()).values), name  # same multiset
        if a.ndim >= 2:
            assert not torch.equal(a, b), name  # but permuted
        else:
            assert torch.equal(a, b), name  # vectors kept
    assert torch.equal(next(shuffled_weights(mlp, seed=3).parameters()), next(out.parameters()))  # seeded
    assert not torch.equal(next(shuffled_weights(mlp, seed=4).parameters()), next(out.parameters()))


def test_shared_scores_give_the_same_tables_and_score_each_pair_once(tiny_setup):
    """One `MapScores` across the null ensembles, the input controls and both cross feeds (as notebook 07 runs them,
    on a row budget) changes no number and runs each (FFN, rows) pair once."""
    from linrec.analyses.controls import MapScores
    from linrec.analyses.decomposition import NullDraws, inputs_or_weights

    model_dir, kw = tiny_setup
    trained, init_spec = capture_with(model_dir, **kw), random_init_spec(model_dir, 0)
    init = capture_with(init_spec, **kw)
    loaded, init_loaded = load_model(model_dir), load_model(init_spec)
    n, rows = trained.n_blocks, 200  # a row budget: every score is computed, none read off the capture

    def run(scores):
        kw = dict(n_rows=rows, seed=0, progress=False)
        iow = inputs_or_weights(trained, loaded, NullDraws(1, 1), band=1, scores=scores() if scores else None,
                                **kw)  # fmt: skip
        return [
            input_controls(trained, loaded, scores=scores() if scores else None, **kw),
            cross_feed(trained, init, init_loaded, scores=scores() if scores else None, **kw),
            cross_feed(init, trained, loaded, scores=scores() if scores else None, **kw),
            iow.nulls,
            iow.matrix,
        ]

    shared = MapScores()
    for alone, together in zip(run(None), run(lambda: shared), strict=True):
        assert alone.equals(together)  # bit for bit
    # distinct pairs: trained FFN i on its own rows and on the next block's, init FFN i on its own rows and on the
    # trained rows, trained FFN i on the init rows; the trained FFN on its own rows is asked for three times (the
    # trained entry of inputs_or_weights, input_controls' reference, the second cross feed's own inputs)
    assert shared.computed == 5 * n
    assert shared.reused == n + 2 * n + 2 * n + 2 * n - shared.computed == 2 * n


def test_each_rows_gram_and_each_covariance_is_factored_once_at_any_thread_count(tiny_setup, monkeypatch):
    """Across the input controls, both cross feeds and the decomposition (one `MapScores`, a row budget so nothing is
    read off the capture): every stored rows' Gram matrix is factored once (the trained rows of each block: the
    trained entry, input controls' own and next-block scores, the twin FFN's raw cross feed; the twin's rows: its own
    and the trained FFN's raw cross feed; plus the decomposition's normalised rows u_j), every block's input
    covariance is decomposed once (the Gaussian control and both re-colourings), the counts are the work done
    (counted at `factor_gram` and `_sqrt_and_isqrt` themselves), and every table is the same bit for bit with the
    blocks on one thread or on two."""
    import linrec.analyses.controls as controls
    from linrec.analyses.controls import MapScores
    from linrec.analyses.decomposition import NullDraws, inputs_or_weights

    model_dir, kw = tiny_setup
    trained, init_spec = capture_with(model_dir, **kw), random_init_spec(model_dir, 0)
    init = capture_with(init_spec, **kw)
    loaded, init_loaded = load_model(model_dir), load_model(init_spec)
    n = trained.n_blocks
    calls = {"factor": 0, "eigh": 0}

    def counted(fn, key):
        def wrapper(*a, **k):
            calls[key] += 1
            return fn(*a, **k)

        return wrapper

    monkeypatch.setattr(controls, "factor_gram", counted(controls.factor_gram, "factor"))
    monkeypatch.setattr(controls, "_sqrt_and_isqrt", counted(controls._sqrt_and_isqrt, "eigh"))

    def run(workers):
        scores = MapScores()
        kw = dict(n_rows=200, seed=0, progress=False, scores=scores, workers=workers)
        tables = [
            input_controls(trained, loaded, **kw),
            cross_feed(trained, init, init_loaded, **kw),
            cross_feed(init, trained, loaded, **kw),
        ]
        threads = torch.get_num_threads()
        torch.set_num_threads(workers)  # inputs_or_weights runs its blocks on the caller's threads
        try:
            iow = inputs_or_weights(
                trained, loaded, NullDraws(2, 2), band=1, **{k: v for k, v in kw.items() if k != "workers"}
            )
        finally:
            torch.set_num_threads(threads)
        return [*tables, iow.nulls, iow.matrix], scores

    for workers in (1, 2):
        calls.update(factor=0, eigh=0)
        tables, scores = run(workers)
        assert (scores.factored, scores.decomposed) == (2 * n, 2 * n)
        assert calls == {"factor": 2 * n + n, "eigh": 2 * n}  # + n: the decomposition's u_j, one per block
        if workers == 1:
            one = tables
    for a, b in zip(one, tables, strict=True):
        assert a.equals(b)  # bit for bit at 1 and 2 threads


def test_shared_rows_score_equals_the_moments_path_and_lstsq():
    """`SharedRows` (one Gram factorisation, many targets) gives the R² of `ceiling.score(fit_affine(…))` and of
    numpy lstsq, and its per-window sums give the same R² under the window bootstrap's all-ones counts."""
    from linrec.analyses.controls import SharedRows
    from linrec.stats.ceiling import r2_rows
    from linrec.stats.heldout import r2_of_counts

    rng = np.random.default_rng(0)
    d, n, nt = 12, 400, 150
    scale = np.logspace(0, 3, d)
    xtr, xte = rng.standard_normal((n, d)) * scale, rng.standard_normal((nt, d)) * scale
    A = rng.standard_normal((d, 5)) / scale[:, None] / np.sqrt(d)
    f = lambda x: x @ A + 0.5 * (x @ A) ** 2  # noqa: E731 — a known nonlinear map (R² about 2/3)
    rows = SharedRows(xtr.astype(np.float32), xte.astype(np.float32), rng.integers(0, 10, nt))
    x32, xt32 = (np.asarray(a, np.float32).astype(np.float64) for a in (xtr, xte))
    h = rows.heldout(f(x32), f(xt32))
    fit = fit_affine(Moments.of(torch.from_numpy(x32), torch.from_numpy(f(x32))))
    ref = score(fit, Moments.of(torch.from_numpy(xt32), torch.from_numpy(f(xt32)))).r2
    coef = np.linalg.lstsq(np.c_[x32, np.ones(n)], f(x32), rcond=None)[0]
    lstsq = r2_rows(f(xt32), np.c_[xt32, np.ones(nt)] @ coef)
    assert abs(h.r2() - ref) < 1e-10 and abs(h.r2() - lstsq) < 1e-9 and 0.1 < h.r2() < 0.99
    assert h.n.sum() == nt and r2_of_counts(h, np.ones((1, h.n_windows)))[0] == pytest.approx(h.r2(), abs=1e-12)


def test_cross_feed_pairs_runs_each_pair_and_captures_what_is_missing(tiny_setup):
    """Notebook 07's section 3: each model with its random-init twin both ways; the twin's capture and model are made
    on demand and kept, and the summary is each pair's median over blocks of its own `cross_feed` table."""
    from linrec.analyses.controls import cross_feed_pairs, twin_pairs

    model_dir, kw = tiny_setup
    init_spec = random_init_spec(model_dir, 0)
    pairs = twin_pairs([model_dir], 0)
    assert pairs == [(model_dir, init_spec), (init_spec, model_dir)]
    trained = capture_with(model_dir, **kw)
    captures, loaded = {model_dir: trained}, {}
    config = CaptureConfig(model_dir, **{k: v for k, v in kw.items() if k != "progress"})
    cross, summary = cross_feed_pairs(pairs, captures, loaded, config)
    assert set(captures) == {model_dir, init_spec} and set(loaded) == {model_dir, init_spec}
    assert len(cross) == 2 * trained.n_blocks and len(summary) == 2
    direct = cross_feed(captures[init_spec], trained, loaded[model_dir], progress=False)
    row = summary[summary["ffn_of"] == trained.model_label].iloc[0]
    assert np.isclose(row["r2_raw"], direct["r2_raw"].median()) and np.isclose(
        row["r2_recoloured"], direct["r2_recoloured"].median()
    )


# ---- the Gaussian-input control ---------------------------------------------------------------------------------
def test_gaussian_inputs_have_the_unbiased_covariance_of_the_rows_they_imitate():
    """Guards the Gaussian-input control's covariance divided by n instead of n − 1 (`gaussian_like`): the rows'
    moments come from six stored rows, where the two differ by 6/5; numpy's np.cov (n − 1) of those rows is the
    reference, and 300,000 draws estimate the control's covariance to well under 1 %."""
    rng = np.random.default_rng(4)
    rows = rng.standard_normal((6, 3)) @ np.array([[2.0, 0.5, 0.0], [0.0, 1.0, -0.7], [0.0, 0.0, 3.0]]) + [1, -2, 5]
    m = Moments.of(torch.from_numpy(rows), torch.from_numpy(rows[:, :1]))
    g = gaussian_like(m, 300_000, seed=0).astype(np.float64)
    want = np.cov(rows.T)
    assert np.allclose(g.mean(0), rows.mean(0), atol=0.02)
    assert np.allclose(np.diag(np.cov(g.T)) / np.diag(want), 1, atol=0.015)  # by n: 5/6 = 0.83
    assert np.linalg.norm(np.cov(g.T) - want) / np.linalg.norm(want) < 0.015


# ---- claim 2a's summaries: the random-init twins, the Gaussian inputs --------------------------------------------
def _profiles(trained, inits):
    rows = [
        {"model": "m", "block": b, "r2_lin": r, "r2_train": r + 0.1, "weights": "trained"}
        for b, r in enumerate(trained)
    ]
    for s, init in enumerate(inits):
        rows += [{"model": "m", "block": b, "r2_lin": r, "r2_train": 0.9, "weights": f"random init, seed {s}"}
                 for b, r in enumerate(init)]  # fmt: skip
    return pd.DataFrame(rows)


def test_random_init_summary_hand_computed():
    s = random_init_summary(_profiles([0.9, 0.5, 0.7], [[0.1, 0.2, 0.3], [0.2, 0.2, 0.2]]), [0, 1]).iloc[0]
    assert s["trained_r2_min"] == 0.5 and s["init_r2_max"] == 0.3
    assert s["mean_abs_trained_init"] == pytest.approx((np.mean([0.8, 0.3, 0.4]) + np.mean([0.7, 0.3, 0.5])) / 2)
    assert s["mean_abs_init_seeds"] == pytest.approx(np.mean([0.1, 0.0, 0.1]))
    assert s["init_r2_train_median"] == 0.9 and s["init_r2_test_median"] == 0.2
    assert s["init_r2_spread"] == pytest.approx(np.std([0.1, 0.2, 0.3]))
    assert s["trained_gap_median"] == pytest.approx(0.1)
    one = random_init_summary(_profiles([0.9, 0.5, 0.7], [[0.1, 0.2, 0.3]]), [0]).iloc[0]
    assert np.isnan(one["mean_abs_init_seeds"]) and np.isnan(one["spearman_init_seeds"])


def test_input_control_summary():
    t = pd.DataFrame({"model": "m", "r2_own": [0.5, 0.6, 0.7], "r2_gaussian": [0.45, 0.4, 0.7],
                      "r2_other_block": [0.1, 0.2, 0.3]})  # fmt: skip
    s = input_control_summary(t).iloc[0]
    assert s["r2_own_median"] == 0.6 and s["r2_gaussian_median"] == 0.45 and s["n_gaussian_drop"] == 1
    assert s["r2_next_block_median"] == 0.2
