"""Controls of notebook 07: random init, Gaussian inputs, re-colouring, feeding FFNs other inputs."""

import numpy as np
import pytest
import torch

from linrec.capture import get_capture
from linrec.ceiling import fit_affine, score
from linrec.controls import _split_rows, cross_feed, gaussian_like, input_controls, r2_of_map, recolour
from linrec.models import load_model, model_identity, random_init_spec
from linrec.moments import Moments
from linrec.sites import find_ffn_sites


@pytest.fixture
def tiny_setup(tiny_model_dir, tiny_corpus, tmp_path, monkeypatch):
    """A tiny trained-looking llama on disk, a local corpus, and a capture that stores every row."""
    monkeypatch.setenv("LINREC_CACHE", str(tmp_path / "cache"))
    kw = dict(corpus=tiny_corpus(8000), seq_len=32, tokens=3200, sample_rows=10_000, progress=False)
    return tiny_model_dir, kw


def test_random_init_is_the_architectures_own_init_and_reproducible(tiny_setup):
    model_dir, _ = tiny_setup
    trained = load_model(model_dir).model
    a = load_model(random_init_spec(model_dir, 0)).model
    b = load_model(random_init_spec(model_dir, 0)).model
    c = load_model(random_init_spec(model_dir, 1)).model
    std = a.config.initializer_range
    for (name, pa), pb, pc, pt in zip(a.named_parameters(), b.parameters(), c.parameters(), trained.parameters()):
        assert torch.equal(pa, pb), name  # same seed, same weights
        if pa.ndim == 2:  # linear and embedding weights: normal(0, initializer_range), not zeros, not the trained ones
            assert not torch.equal(pa, pc) and not torch.allclose(pa, pt), name
            assert 0.8 * std < float(pa.std()) < 1.2 * std, name
            assert abs(float(pa.mean())) < 0.2 * std, name
        elif "norm" in name:  # llama's RMSNorm gains start at 1 (the trained tiny model's are randomised)
            assert torch.equal(pa, torch.ones_like(pa)), name
    assert model_identity(random_init_spec(model_dir, 0)) != model_identity(random_init_spec(model_dir, 1))


def test_random_init_spec_errors_name_the_fix():
    from linrec.errors import LinrecError

    with pytest.raises(LinrecError, match="init:SEED:MODEL"):
        load_model("init:x:smollm2-135m")


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
    c = get_capture(model_dir, **kw)
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
    c = get_capture(model_dir, **kw)
    loaded = load_model(model_dir)
    t = cross_feed(c, c, loaded, progress=False)
    assert np.allclose(t["r2_raw"], t["r2_ffn_own_inputs"], atol=1e-9)
    assert np.allclose(t["r2_recoloured"], t["r2_ffn_own_inputs"], atol=1e-4)


def test_cross_feed_between_trained_and_random_init(tiny_setup):
    model_dir, kw = tiny_setup
    trained = get_capture(model_dir, **kw)
    init_spec = random_init_spec(model_dir, 0)
    init = get_capture(init_spec, **kw)
    t = cross_feed(trained, init, load_model(init_spec), progress=False)
    assert len(t) == trained.n_blocks and t[["r2_raw", "r2_recoloured"]].notna().all().all()
    assert (t["inputs_from"] == trained.model_label).all() and (t["ffn_of"] == init_spec).all()


# ---- claim 2, decomposed ------------------------------------------------------------------------------------
def test_shuffled_weights_keep_each_matrix_multiset():
    from linrec.controls import shuffled_weights

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


def test_cross_matrix_diagonal_is_the_ceiling_and_off_diagonal_is_lstsq(tiny_setup):
    """The diagonal equals the capture's R²_lin; an off-diagonal entry equals numpy lstsq of FFN_i(x_j) on x_j."""
    from linrec.ceiling import r2_rows
    from linrec.controls import cross_matrix, ffn_outputs, weight_nulls
    from linrec.recoverability import ceiling_table

    model_dir, kw = tiny_setup
    c = get_capture(model_dir, **kw)
    loaded = load_model(model_dir)
    m = cross_matrix(c, loaded, progress=False)
    assert len(m) == c.n_blocks**2
    ceiling = ceiling_table(c).set_index("block")["r2_lin"]
    diag = m[m["ffn_block"] == m["input_block"]].set_index("ffn_block")["r2"]
    assert np.allclose(diag.sort_index(), ceiling.sort_index(), atol=1e-12)
    # FFN 0 on block 1's inputs, by hand
    xtr, xte = _split_rows(c, 1, None, 0)
    ffn = find_ffn_sites(loaded.model)[0].module
    ytr, yte = (
        ffn_outputs(ffn, torch.from_numpy(xtr)).double().numpy(),
        ffn_outputs(ffn, torch.from_numpy(xte)).double().numpy(),
    )
    A = np.c_[np.asarray(xtr, np.float64), np.ones(len(xtr))]
    coef = np.linalg.lstsq(A, ytr, rcond=None)[0]
    ref = r2_rows(yte, np.c_[np.asarray(xte, np.float64), np.ones(len(xte))] @ coef)
    got = m[(m["ffn_block"] == 0) & (m["input_block"] == 1)]["r2"].iloc[0]
    assert abs(got - ref) < 1e-6
    init = load_model(random_init_spec(model_dir, 0))
    nulls = weight_nulls(c, loaded, init, progress=False)
    assert np.allclose(nulls["r2_trained"], ceiling.sort_index(), atol=1e-12)
    assert nulls[["r2_init_ffn", "r2_shuffled"]].notna().all().all()


def test_shared_scores_give_the_same_tables_and_score_each_pair_once(tiny_setup):
    """One `MapScores` across the four controls (as notebook 07 runs them, on a row budget) changes no number and
    runs each (FFN, rows) pair once: the trained FFN on its own rows, on the next block's rows, and the init FFN on
    the trained rows are each asked for by two or more controls."""
    from linrec.controls import MapScores, cross_matrix, weight_nulls

    model_dir, kw = tiny_setup
    trained, init_spec = get_capture(model_dir, **kw), random_init_spec(model_dir, 0)
    init = get_capture(init_spec, **kw)
    loaded, init_loaded = load_model(model_dir), load_model(init_spec)
    n, rows = trained.n_blocks, 200  # a row budget: every score is computed, none read off the capture

    def run(scores):
        kw = dict(n_rows=rows, seed=0, progress=False)
        return [
            input_controls(trained, loaded, scores=scores() if scores else None, **kw),
            cross_feed(trained, init, init_loaded, scores=scores() if scores else None, **kw),
            cross_feed(init, trained, loaded, scores=scores() if scores else None, **kw),
            weight_nulls(trained, loaded, init_loaded, scores=scores() if scores else None, **kw),
            cross_matrix(trained, loaded, band=1, scores=scores() if scores else None, **kw),
        ]

    shared = MapScores()
    for alone, together in zip(run(None), run(lambda: shared), strict=True):
        assert alone.equals(together)  # bit for bit
    # distinct pairs: trained FFN i on rows j for |i − j| ≤ 1, init FFN i on its own rows and on the trained rows,
    # trained FFN i on the init rows
    matrix_pairs = sum(1 for i in range(n) for j in range(n) if abs(i - j) <= 1)
    assert shared.computed == matrix_pairs + 3 * n
    asked = 2 * n + 2 * n + 2 * n + 2 * n + matrix_pairs  # own + other per control, as called above
    assert shared.reused == asked - shared.computed > 0
