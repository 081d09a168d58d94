"""Bilinear residual probe and trained linear baselines on planted problems."""

import torch

from linrec.probe import Rows, closed_form_on_rows, fit_probe, train_affine


def _inputs(n, d, seed, spread=1.0):
    g = torch.Generator().manual_seed(seed)
    scales = torch.logspace(0, spread, d)
    return torch.randn(n, d, generator=g) * scales + 0.5, scales, g


def _split(x, y, n_train):
    return Rows(x[:n_train], y[:n_train], x[n_train:], y[n_train:])


def test_probe_recovers_a_planted_bilinear_residual():
    n, d, do, k = 8000, 24, 16, 6
    x, scales, g = _inputs(n, d, 0)
    A = torch.randn(d, do, generator=g) / d**0.5
    U = torch.randn(k, d, generator=g) / d**0.5 / scales
    V = torch.randn(k, d, generator=g) / d**0.5 / scales
    C = torch.randn(do, k, generator=g)
    y = x @ A + ((x @ U.T) * (x @ V.T)) @ C.T + 0.01 * torch.randn(n, do, generator=g)
    rows = _split(x, y, 6400)
    fit, r2_cf = closed_form_on_rows(rows)
    res = fit_probe(rows, fit, rank=16, max_epochs=60)
    assert res.r2_lin < 0.95  # the linear map clearly misses the bilinear part …
    assert res.r2_poly >= 0.99  # … which the probe recovers
    assert res.converged
    assert abs(res.r2_lin - r2_cf) < 1e-6


def test_gain_is_zero_on_a_linear_target():
    n, d, do = 6000, 24, 16
    x, _, g = _inputs(n, d, 1)
    y = x @ torch.randn(d, do, generator=g) + 0.3 * torch.randn(n, do, generator=g)
    rows = _split(x, y, 4800)
    fit, _ = closed_form_on_rows(rows)
    res = fit_probe(rows, fit, rank=16)
    assert abs(res.gain) < 2e-3  # noise level: 0.3² / Var(y) ≈ 4e-3 of the variance is noise
    assert res.gain > -2e-3


def test_trained_baseline_reaches_the_ceiling_only_when_well_conditioned():
    n, d, do = 24000, 32, 8  # 20k train rows: 5 epochs of batch 256 are ~390 Adam steps
    g = torch.Generator().manual_seed(2)
    W = torch.randn(d, do, generator=g) / (4 * d**0.5)  # weights ~0.04 on unit-scale inputs: in reach of 390 steps
    well = torch.randn(n, d, generator=g)
    ill = well * torch.logspace(-3, 0, d)  # feature scales over 3 decades: κ(Gram) ≈ 1e6
    for x, expect_gap in ((well, False), (ill, True)):
        y = x @ (W / x.std(0)[:, None]) + 0.01 * torch.randn(n, do, generator=g)
        rows = _split(x, y, 20000)
        fit, ceiling = closed_form_on_rows(rows)
        adam = train_affine(rows, "adam", epochs=5, seed=0)
        if expect_gap:
            assert fit.cond_gram >= 1e6
            assert ceiling - adam.r2_test > 0.05  # same budget, clearly short of the ceiling
            whitened = train_affine(rows, "adam", epochs=5, whiten=True, seed=0)
            assert ceiling - whitened.r2_test < 5e-3  # conditioning, not capacity
        else:
            assert (
                ceiling - adam.r2_test < 5e-3
            )  # within 0.5 % of the ceiling, 10x closer than the ill-conditioned case


def test_results_are_bit_identical_for_a_fixed_seed():
    n, d, do = 3000, 16, 8
    x, _, g = _inputs(n, d, 3)
    y = torch.tanh(x @ torch.randn(d, do, generator=g) / 4)
    rows = _split(x, y, 2400)
    fit, _ = closed_form_on_rows(rows)
    a, b = fit_probe(rows, fit, rank=4, max_epochs=5, seed=7), fit_probe(rows, fit, rank=4, max_epochs=5, seed=7)
    assert a.r2_poly == b.r2_poly and a.losses == b.losses
    s1, s2 = train_affine(rows, "sgd", seed=3), train_affine(rows, "sgd", seed=3)
    assert s1.r2_test == s2.r2_test and s1.losses == s2.losses
    assert train_affine(rows, "sgd", seed=4).losses != s1.losses
