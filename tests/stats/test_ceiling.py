"""linrec.stats.ceiling: the closed-form ceiling against independent references (lstsq on stored rows, planted
maps, analytic R²), and the reduced-rank map that is optimal at its rank."""

import numpy as np
import pytest

from helpers import moments_of
from linrec.base.errors import LinrecError
from linrec.inputs.surgery import AffineFFN, params_linear
from linrec.stats.ceiling import fit_affine, output_directions, r2_rows, reduce_rank, score
from linrec.stats.moments import Moments


def _lstsq_r2(xtr, ytr, xte, yte):
    """Reference: numpy lstsq with an intercept column on the stored train rows, R² on the test rows."""
    A = np.c_[xtr, np.ones(len(xtr))]
    coef = np.linalg.lstsq(A, ytr, rcond=None)[0]
    return r2_rows(yte, np.c_[xte, np.ones(len(xte))] @ coef), coef


def _problem(cond_exp, n=4000, d=40, k=16, seed=0):
    """Inputs with feature scales over 3 decades and correlations giving κ(Gram) ≈ 10^cond_exp; a nonlinear target."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    spread = np.logspace(0, -cond_exp / 4, d)  # correlation part of the conditioning
    x = (rng.standard_normal((n, d)) * spread) @ Q.T * np.logspace(0, cond_exp / 4, d) + 3.0
    h = x @ rng.standard_normal((d, k))
    y = 2 * np.tanh(h / h.std()) + 0.5 * x[:, :k] / x[:, :k].std(0) + 0.1 * rng.standard_normal((n, k))
    return x, y


@pytest.mark.parametrize("cond_exp", [0, 6, 11])
def test_matches_lstsq_on_stored_rows(cond_exp):
    x, y = _problem(cond_exp)
    tr, te = slice(0, 3200), slice(3200, None)
    fit = fit_affine(moments_of(x[tr], y[tr]))
    got = score(fit, moments_of(x[te], y[te]))
    ref, coef = _lstsq_r2(x[tr], y[tr], x[te], y[te])
    assert abs(got.r2 - ref) < 1e-9
    assert np.allclose(fit.predict(x[te]), np.c_[x[te], np.ones(800)] @ coef, rtol=1e-6, atol=1e-6 * np.abs(y).max())
    if cond_exp == 11:
        assert fit.cond_gram >= 1e8


def test_naive_float32_normal_equations_fail_where_ours_do_not():
    x, y = _problem(11)
    tr, te = slice(0, 3200), slice(3200, None)
    ref, _ = _lstsq_r2(x[tr], y[tr], x[te], y[te])
    A = np.c_[x[tr], np.ones(3200)].astype(np.float32)
    coef32 = np.linalg.solve(A.T @ A, A.T @ y[tr].astype(np.float32))
    naive = r2_rows(y[te], np.c_[x[te], np.ones(800)] @ coef32)
    ours = score(fit_affine(moments_of(x[tr], y[tr])), moments_of(x[te], y[te])).r2
    assert fit_affine(moments_of(x[tr], y[tr])).cond_gram >= 1e8
    assert abs(naive - ref) > 1e-6  # the float32 solve misses by over 1000× the tolerance …
    assert abs(ours - ref) < 1e-9  # … the conditioned float64 one is not


def test_known_affine_map_gives_r2_one():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2000, 24)) * np.logspace(0, 3, 24)
    W, b = rng.standard_normal((24, 24)), rng.standard_normal(24)
    y = x @ W + b
    fit = fit_affine(moments_of(x[:1500], y[:1500]))
    s = score(fit, moments_of(x[1500:], y[1500:]))
    assert abs(s.r2 - 1) < 1e-9
    assert np.nanmax(np.abs(s.r2_feature - 1)) < 1e-9
    assert np.allclose(fit.W, W, rtol=1e-6, atol=1e-8) and np.allclose(fit.b, b, atol=1e-6)


def test_known_quadratic_map_has_analytic_r2():
    """y_j = x_j + c·x_j² with x ~ N(0, 1): the linear part explains Var(x)/Var(y) = 1/(1 + 2c²)."""
    rng = np.random.default_rng(2)
    c, d = 0.75, 8
    x = rng.standard_normal((200_000, d))
    y = x + c * x**2
    fit = fit_affine(moments_of(x[:150_000], y[:150_000]))
    s = score(fit, moments_of(x[150_000:], y[150_000:]))
    expected = 1 / (1 + 2 * c**2)
    assert abs(s.r2 - expected) < 0.01
    assert np.all(np.abs(s.r2_feature - expected) < 0.03)


def test_rank_deficient_inputs_give_lstsq_minimum_norm_predictions():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1000, 10))
    x = np.c_[x, x[:, :3] @ rng.standard_normal((3, 2)), np.full(1000, 4.0)]  # 2 dependent + 1 constant column
    y = np.sin(x[:, :4]) + 0.1 * rng.standard_normal((1000, 4))
    fit = fit_affine(moments_of(x[:800], y[:800]))
    ref, coef = _lstsq_r2(x[:800], y[:800], x[800:], y[800:])
    assert fit.rank == 10 and fit.dead_inputs == 1 and fit.cond_gram == float("inf")
    assert abs(score(fit, moments_of(x[800:], y[800:])).r2 - ref) < 1e-9


def test_too_few_rows_is_a_one_line_error():
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((30, 40)), rng.standard_normal((30, 3))
    with pytest.raises(LinrecError, match="raise --tokens") as err:
        fit_affine(moments_of(x, y), block=5)
    assert "\n" not in str(err.value) and "block 5" in str(err.value)


def test_constant_output_on_test_split_is_an_error():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((300, 4))
    fit = fit_affine(moments_of(x[:200], rng.standard_normal((200, 2))))
    with pytest.raises(LinrecError, match="constant"):
        score(fit, moments_of(x[200:], np.ones((100, 2))))


def test_skipping_the_condition_number_leaves_the_map_unchanged():
    """The capture fits with condition=False (one eigensolve, not two); the map must be the ceiling's, bit for bit."""
    x, y = _problem(6)
    m = moments_of(x, y)
    full, quick = fit_affine(m), fit_affine(m, condition=False)
    assert np.array_equal(full.W, quick.W) and np.array_equal(full.b, quick.b)
    assert (full.rank, full.cond_scaled) == (quick.rank, quick.cond_scaled)
    assert np.isnan(quick.cond_gram) and full.cond_gram > 1


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


# ---- the guarded Cholesky solve of the accelerator's held-out maps (issue 91) ----------------------------------------
def _on_device(monkeypatch):
    """The accelerator's paths, here on the CPU (the one switch they read)."""
    from linrec.stats import moments

    monkeypatch.setattr(moments, "accelerated", lambda device: True)


def _threshold(m: Moments) -> float:
    """rcond at which the bound tr(A)·‖L⁻¹‖²_F·rcond < 1 turns over, from the scaled Gram of `m` (dead features given
    a unit diagonal, as the solve does)."""
    C = m.Cxx
    diag = np.diag(C)
    s = np.where(diag > 0, 1 / np.sqrt(np.where(diag > 0, diag, 1)), 0)
    A = C * np.outer(s, s)
    Ap = A + np.diag(diag <= 0)
    return 1 / (np.trace(A) * np.trace(np.linalg.inv(Ap)))


@pytest.mark.parametrize("cond_exp", [0, 6])
def test_the_guarded_cholesky_solves_the_eigensolvers_system(monkeypatch, cond_exp):
    """Where the bound holds, the Cholesky map is the eigensolver's to rounding (lstsq on the stored rows agrees),
    its rank every live feature, its scaled κ left for the table to compute (and then the eigensolver's)."""
    from linrec.stats.ceiling import scaled_condition

    x, y = _problem(cond_exp)
    x = np.c_[x, np.full(len(x), 2.0)]  # a dead input feature, as Gemma-3 has
    eig = fit_affine(moments_of(x[:3200], y[:3200]), condition=False)
    _on_device(monkeypatch)
    m = moments_of(x[:3200], y[:3200])
    chol = fit_affine(m, condition=False, cholesky=True)
    assert chol.solver == "cholesky" and eig.solver == "eigh"
    assert chol.rank == eig.rank == 40 and chol.dead_inputs == 1 and np.isnan(chol.cond_scaled)
    assert np.allclose(chol.W, eig.W, rtol=1e-8, atol=1e-10 * np.abs(eig.W).max()) and np.all(chol.W[-1] == 0)
    test = moments_of(x[3200:], y[3200:])
    ref, _ = _lstsq_r2(x[:3200], y[:3200], x[3200:], y[3200:])
    assert abs(score(chol, test).r2 - ref) < 1e-9
    assert scaled_condition(m.Cxx) == pytest.approx(eig.cond_scaled, rel=1e-6)


def test_the_cholesky_guard_turns_over_at_its_bound(monkeypatch):
    """Just inside the bound the Cholesky solve runs; just outside it the eigensolver does, its map as without the
    switch, bit for bit (a guard that always passes, planted, fails the second half)."""
    x, y = _problem(6)
    _on_device(monkeypatch)
    m = moments_of(x, y)
    t = _threshold(m)
    assert fit_affine(m, rcond=t * (1 - 1e-6), condition=False, cholesky=True).solver == "cholesky"
    outside = fit_affine(m, rcond=t * (1 + 1e-6), condition=False, cholesky=True)
    plain = fit_affine(m, rcond=t * (1 + 1e-6), condition=False)
    assert outside.solver == "eigh" and np.array_equal(outside.W, plain.W) and outside.rank == plain.rank


def test_an_ill_conditioned_gram_goes_to_the_eigensolver(monkeypatch):
    """Two inputs equal to rounding (the scaled Gram singular to float64): the eigensolver's minimum-norm map."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2000, 6))
    x = np.c_[x, x[:, 0] * (1 + 1e-15)]
    y = np.sin(x[:, :3]) + 0.1 * rng.standard_normal((2000, 3))
    _on_device(monkeypatch)
    fit = fit_affine(moments_of(x, y), condition=False, cholesky=True)
    assert fit.solver == "eigh" and fit.rank == 6
