"""The fast trainer of claim 7b against its reference arithmetic, bit for bit: the same curves with diverging rates
dropped, the same tunings on any number of threads, each split's curves where they belong."""

import numpy as np
import pandas as pd
import pytest
import torch

from linrec.analyses.pitfall import Split
from linrec.analyses.pitfall_train import LR_GRID, Training, train_curves, train_curves_reference, tune, tune_many


def _split(n=1100, d=10, m=5, scale=1.0, seed=0):
    """Rows with features over 1.5 decades and a saturating target; 1100 fit rows (a last batch of 76 at batch 128)."""
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(n + 400, d, generator=g) * torch.logspace(0, 1.5, d) + 0.5) * scale
    y = torch.tanh(x / (10 * scale)) @ torch.randn(d, m, generator=g) + 0.1 * torch.randn(n + 400, m, generator=g)
    return Split(x[:n], y[:n], x[n : n + 200], y[n : n + 200], x[n + 200 :], y[n + 200 :])


@pytest.mark.parametrize("optimizer,lrs", [("adam", [1e-3, 3e-2, 10.0]), ("sgd", [1e-5, 1.0, 1e-4, 0.3, 1e-3, 1e-2])])
def test_the_fast_trainer_gives_the_reference_curves_bit_for_bit(optimizer, lrs):
    """Both optimizers, checkpoints inside and at the end of epochs, partial last batches, and (SGD) rates that
    diverge at different steps: every R² the same float, the diverged ones −inf from their first non-finite step."""
    split = _split()
    checkpoints = [1, 2, 9, 26, 60, 301]
    new = train_curves(split, optimizer, lrs, checkpoints, batch_size=128, seed=4)
    ref = train_curves_reference(split, optimizer, lrs, checkpoints, batch_size=128, seed=4)
    pd.testing.assert_frame_equal(new, ref, check_exact=True)
    if optimizer == "sgd":  # the case the dropping guards: some rate diverged, after training a while
        dead = ref[np.isinf(ref["r2_test"])]
        assert 0 < dead["lr"].nunique() < len(lrs) and dead["step"].min() > 1


def test_a_diverged_rate_stays_minus_inf_in_the_reference_too():
    """What dropping a diverged rate relies on: once a rate's held-out R² is −inf, the reference (which keeps
    training it) never brings it back, and the other rates train as they would alone."""
    split = _split()
    ref = train_curves_reference(split, "sgd", [1e-3, 1.0], range(1, 40), batch_size=128)
    curve = ref[ref["lr"] == 1.0].sort_values("step")["r2_test"].to_numpy()
    first = int(np.argmax(np.isinf(curve)))
    assert np.isinf(curve).any() and np.isinf(curve[first:]).all()
    alone = train_curves(split, "sgd", [1e-3], range(1, 40), batch_size=128)
    assert np.array_equal(alone["r2_test"], ref.loc[ref["lr"] == 1e-3, "r2_test"])


@pytest.mark.parametrize("workers", [1, 2])
def test_tune_many_is_the_per_split_loop_of_the_reference_on_any_thread_count(workers):
    """Three splits of different scales (so a mixed-up split changes the numbers), both optimizers tuned with grid
    extension: tune_many equals tune(split, optimizer) with the reference trainer, one split after another."""
    splits = [_split(seed=0), _split(seed=1, scale=30.0), _split(seed=2, scale=0.03)]
    checkpoints = [5, 40, 120]
    got = tune_many(splits, checkpoints, seed=2, training=Training(batch_size=128, workers=workers, progress=False))
    for split, table in zip(splits, got):
        want = pd.concat([tune(split, o, checkpoints, 128, 2, trainer=train_curves_reference) for o in LR_GRID],
                         ignore_index=True)  # fmt: skip
        pd.testing.assert_frame_equal(table, want, check_exact=True)
    assert any(len(t[t["optimizer"] == o]["lr"].unique()) > 3 for t in got for o in LR_GRID)  # some grid extended
