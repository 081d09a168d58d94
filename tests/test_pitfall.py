"""Claim 7b's measurements on planted least-squares problems: the batched trainer against torch.optim, exact
gradient descent against its spectrum, the re-expression that sets κ and keeps the ceiling."""

import numpy as np
import pytest
import torch

from linrec.analyses.pitfall import (
    Split,
    covariance_kappa,
    gd_curve,
    log_steps,
    output_subset,
    reexpress,
    steps_to_reach,
    train_curves,
    tuned,
)
from linrec.analyses.probe import Rows, train_affine


def _problem(n=3000, d=12, m=6, kappa=1.0, noise=0.05, seed=0, mean=0.0, equal_share=False):
    """Inputs whose covariance has condition number `kappa` (rotated log-spaced axes), a linear target plus noise.
    `equal_share`: every axis carries the same share of the target's variance (else each in proportion to its own
    variance, so the low-variance axes hardly matter to R²)."""
    g = np.random.default_rng(seed)
    q, _ = np.linalg.qr(g.standard_normal((d, d)))
    z = g.standard_normal((n, d))
    x = (z * np.geomspace(1, np.sqrt(kappa), d)) @ q.T + mean
    signal = z if equal_share else x - mean
    y = signal @ g.standard_normal((d, m)) / np.sqrt(d) + noise * g.standard_normal((n, m))
    t = lambda a: torch.from_numpy(a.astype(np.float32))  # noqa: E731
    return t(x), t(y)


def _split(x, y, n_fit, n_val):
    return Split(x[:n_fit], y[:n_fit], x[n_fit : n_fit + n_val], y[n_fit : n_fit + n_val], x[n_fit + n_val :],
                 y[n_fit + n_val :])  # fmt: skip


@pytest.mark.parametrize("optimizer,lr", [("adam", 1e-2), ("sgd", 1e-3)])
def test_batched_trainer_takes_torch_optims_steps(optimizer, lr):
    """Same initialisation, same mini-batches, same updates as linrec.analyses.probe.train_affine (torch.optim): the
    held-out R² after its 3 epochs agrees, and a learning rate trains the same beside others as alone."""
    x, y = _problem(n=2600, kappa=30.0, mean=0.5)
    rows = Rows(x[:2000], y[:2000], x[2000:], y[2000:])
    reference = train_affine(rows, optimizer, epochs=3, lr=lr, batch_size=256, seed=3).r2_test
    split = Split(rows.xtr, rows.ytr, rows.xte[:100], rows.yte[:100], rows.xte, rows.yte)
    steps = 3 * -(-2000 // 256)
    curves = train_curves(split, optimizer, [lr / 10, lr, lr * 10], [steps], seed=3)
    assert curves.loc[curves["lr"] == lr, "r2_test"].item() == pytest.approx(reference, abs=1e-5)
    alone = train_curves(split, optimizer, [lr], [steps], seed=3)
    assert alone["r2_test"].item() == pytest.approx(reference, abs=1e-5)


def test_tuning_picks_the_best_validation_step_per_budget_and_never_looks_at_held_out_rows():
    import pandas as pd

    curves = pd.DataFrame({"optimizer": "sgd", "lr": [0.1, 0.01, 0.1, 0.01], "step": [10, 10, 100, 100],
                           "r2_val": [0.5, 0.6, 0.9, 0.8], "r2_test": [0.99, 0.1, 0.7, 0.99]})  # fmt: skip
    best = tuned(curves)
    assert list(zip(best["step"], best["lr"], best["r2_test"])) == [(10, 0.01, 0.1), (100, 0.1, 0.7)]


def test_gradient_descent_from_the_spectrum_equals_running_it():
    """gd_curve's closed-form trajectory is the one plain full-batch GD follows step by step."""
    x, y = _problem(n=900, d=6, m=3, kappa=50.0, mean=1.0)
    split = _split(x.double(), y.double(), 600, 100)
    curve = gd_curve(split, [1, 7, 40])
    xa = torch.cat([split.xtr, torch.ones(600, 1, dtype=torch.float64)], 1)
    eta = curve["lr"].iloc[0]
    gen = torch.Generator().manual_seed(0)
    w0 = torch.empty(3, 6).uniform_(-(6**-0.5), 6**-0.5, generator=gen)
    b0 = torch.empty(3).uniform_(-(6**-0.5), 6**-0.5, generator=gen)
    theta = torch.cat([w0.T, b0[None]], 0).double()
    xte = torch.cat([split.xte, torch.ones(len(split.xte), 1, dtype=torch.float64)], 1)
    from linrec.stats.ceiling import r2_rows

    got = {}
    for k in range(1, 41):
        theta = theta - eta * (2 * xa.T @ (xa @ theta - split.ytr) / 600)
        got[k] = r2_rows(split.yte, xte @ theta)
    for k, r2 in zip(curve["step"], curve["r2_test"]):
        assert r2 == pytest.approx(got[k], abs=1e-9)


@pytest.mark.parametrize("kappa", [1e2, 1e4, 1e6, 1e8])
def test_reexpression_sets_kappa_and_keeps_the_ceiling(kappa):
    """κ as asked (within 10 %), the largest variance kept (the stable step sizes too), the ceiling to 1e-9."""
    x, y = _problem(n=1500, d=10, m=4, kappa=20.0, mean=3.0)
    split = _split(x.double(), y.double(), 1000, 200)
    T = reexpress(split.xtr, kappa, seed=1)
    again = split.reexpressed(T)
    assert covariance_kappa(again.xtr) == pytest.approx(kappa, rel=0.1)
    top = lambda a: torch.linalg.eigvalsh(torch.cov(a.T))[-1].item()  # noqa: E731
    assert top(again.xtr) == pytest.approx(top(split.xtr), rel=1e-9)
    assert again.ceiling() == pytest.approx(split.ceiling(), abs=1e-9)


def test_sgd_steps_to_the_ceiling_grow_with_kappa_as_the_spectrum_predicts_and_not_when_whitened():
    """On planted problems with κ = 50, 500, 5000 whose every input axis carries the same share of the target: the steps
    SGD (momentum 0.9, half the largest stable step) needs to come within 0.01 of the ceiling grow in proportion to
    κ, within a factor 2, as gradient descent's do (its error along λ_min shrinks by 1 − ηλ_min per step); on the
    same inputs whitened (κ = 1) they do not grow."""
    need, need_white = {}, {}
    for kappa in (50.0, 500.0, 5000.0):
        x, y = _problem(n=3500, d=6, m=3, kappa=kappa, noise=0.01, seed=2, equal_share=True)
        split = _split(x, y, 3000, 250)
        ceiling = split.ceiling()
        lam_max = float(torch.linalg.eigvalsh(torch.cov(split.xtr.double().T))[-1])
        lr = 0.5 * (1 - 0.9) / (2 * lam_max)  # the heavy ball's effective step lr/(1 − β) is half of 1/λ_max(2Σ)
        checkpoints = log_steps(10, int(10 * kappa), per_decade=10)  # about 2.4 κ steps are needed here
        need[kappa] = steps_to_reach(train_curves(split, "sgd", [lr], checkpoints, seed=0), ceiling)
        unit = reexpress(split.xtr, 1.0, dtype=torch.float32)  # every variance λ_max; scaled to 1 (and the bias's)
        white = split.reexpressed(lambda a, unit=unit, s=lam_max**0.5: unit(a) / s)
        white_curve = train_curves(white, "sgd", [0.5 * 0.1 / 2], log_steps(10, 300, per_decade=10), seed=0)
        need_white[kappa] = steps_to_reach(white_curve, ceiling)
    for lo, hi in ((50.0, 500.0), (500.0, 5000.0)):
        ratio = need[hi] / need[lo]
        assert 10 / 2 <= ratio <= 10 * 2, (need, ratio)
    assert max(need_white.values()) <= 2 * min(need_white.values()), need_white


def test_output_subset_and_budgets_are_drawn_by_seed_alone():
    a, b = output_subset(576, 32, seed=0), output_subset(576, 32, seed=0)
    assert np.array_equal(a, b) and len(set(a)) == 32 and np.all(np.diff(a) > 0)
    assert np.array_equal(output_subset(10, None), np.arange(10))
    assert np.array_equal(output_subset(10, 99), np.arange(10))
    assert log_steps(100, 10000, per_decade=2) == [100, 316, 1000, 3162, 10000]
