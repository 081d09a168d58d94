"""linrec.stats.moments: streaming float64 moments equal one-shot statistics computed directly with numpy, and
rows removed from them leave the statistics of the rest."""

import numpy as np
import pytest
import torch

from linrec.base.errors import LinrecError
from linrec.stats.moments import Moments, output_sum_squares, remove_rows


def _rows(n=3000, dx=12, dy=5, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dx)) * np.logspace(-2, 3, dx) + 50.0  # big means, scales over 5 decades
    y = np.tanh(x[:, :dy] / 100) * 7 + rng.standard_normal((n, dy)) - 20.0
    return x.astype(np.float32), y.astype(np.float32)


def _reference(x, y):
    z = np.concatenate([x, y], axis=1).astype(np.float64)
    mu = z.mean(0)
    return mu, (z - mu).T @ (z - mu)


def _rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


@pytest.mark.parametrize("batch", [1, 7, 128, 3000])
def test_streaming_equals_one_shot(batch):
    x, y = _rows()
    m = Moments(x.shape[1], y.shape[1])
    for i in range(0, len(x), batch):
        m.update(torch.from_numpy(x[i : i + batch]), torch.from_numpy(y[i : i + batch]))
    mu, M = _reference(x, y)
    assert m.n == len(x)
    assert _rel(m.mean.numpy(), mu) < 1e-12
    assert _rel(m.M, M) < 1e-12


def test_shards_merge_exactly():
    x, y = _rows()
    shards = [Moments(12, 5) for _ in range(3)]
    for k, (lo, hi) in enumerate([(0, 1000), (1000, 1001), (1001, 3000)]):
        shards[k].update(torch.from_numpy(x[lo:hi]), torch.from_numpy(y[lo:hi]))
    merged = Moments(12, 5).merge(shards[0]).merge(shards[1]).merge(shards[2])
    mu, M = _reference(x, y)
    assert merged.n == 3000
    assert _rel(merged.M, M) < 1e-12 and _rel(merged.mean.numpy(), mu) < 1e-12


def test_float32_products_are_close_but_not_exact():
    x, y = _rows()
    exact, fast = Moments(12, 5), Moments(12, 5)
    for i in range(0, 3000, 256):
        exact.update(torch.from_numpy(x[i : i + 256]), torch.from_numpy(y[i : i + 256]))
        fast.update(torch.from_numpy(x[i : i + 256]), torch.from_numpy(y[i : i + 256]), product="float32")
    err = _rel(fast.M, exact.M)
    assert 0 < err < 1e-5


def test_state_round_trip_and_nan_detection():
    x, y = _rows(n=200)
    m = Moments.of(torch.from_numpy(x), torch.from_numpy(y))
    back = Moments.from_state(m.state())
    assert back.n == m.n and np.array_equal(back.M, m.M) and torch.equal(back.mean, m.mean)
    assert m.is_finite()
    y[3, 1] = np.nan
    assert not Moments.of(torch.from_numpy(x), torch.from_numpy(y)).is_finite()


def test_packed_state_stores_the_upper_triangle_and_rebuilds_M_exactly():
    g = torch.Generator().manual_seed(0)
    m = Moments.of(torch.randn(50, 3, generator=g, dtype=torch.float64) + 4, torch.randn(50, 2, generator=g).double())
    s = m.state(packed=True)
    assert "M" not in s and s["Mu"].shape == (15,)
    back = Moments.from_state(s)
    assert back.n == m.n and np.array_equal(back.M, m.M) and np.array_equal(back.M, back.M.T)
    assert np.array_equal(Moments.from_state(m.state()).M, m.M)


@pytest.mark.parametrize("dx,dy", [(70, 50), (200, 77)])
def test_panelled_upper_product_equals_one_shot_on_wide_rows(dx, dy):
    """Widths past one panel (`panel_width`: 64 columns for these, 80 for 277), with a last panel that is cut
    short: the accumulated upper triangle, mirrored, is zᵀz of the centred rows, float32 products included."""
    from linrec.stats.moments import panel_width, upper_product

    x, y = _rows(n=700, dx=dx, dy=dy, seed=3)
    w = panel_width(dx + dy)
    assert -(-(dx + dy) // w) >= 2 and (dx + dy) % w  # two panels or more, the last one short
    m = Moments(dx, dy)
    for i in range(0, len(x), 128):
        m.update(torch.from_numpy(x[i : i + 128]), torch.from_numpy(y[i : i + 128]))
    mu, M = _reference(x, y)
    assert _rel(m.M, M) < 1e-12
    z = torch.randn(33, dx + dy, dtype=torch.float64)
    acc = torch.zeros(dx + dy, dx + dy, dtype=torch.float64)
    upper_product(acc, z)
    ref = (z.T @ z).numpy()
    assert np.allclose(np.triu(acc.numpy()), np.triu(ref), rtol=0, atol=1e-12)
    acc32 = torch.zeros_like(acc)
    upper_product(acc32, z.float())
    assert acc32.dtype == torch.float64
    assert np.allclose(np.triu(acc32.numpy()), np.triu(ref), rtol=0, atol=1e-4)


def test_symmetric_M_is_built_once_per_state_and_read_only():
    """`M` is kept until the statistics change (update or merge), for the few statistics read last (bounded memory),
    and handed out read-only, so no reader can change what the next one sees."""
    from linrec.stats.moments import _SYMMETRIC_KEEP, _symmetric

    x, y = _rows(n=400)
    m = Moments(x.shape[1], y.shape[1])
    m.update(torch.from_numpy(x[:200]), torch.from_numpy(y[:200]))
    first = m.M
    assert m.M is first and m.Cxx.base is first and not first.flags.writeable
    with pytest.raises(ValueError):
        m.Cxx[0, 0] += 1.0
    m.update(torch.from_numpy(x[200:]), torch.from_numpy(y[200:]))
    assert m.M is not first and _rel(m.M, _reference(x, y)[1]) < 1e-12
    other = Moments.of(torch.from_numpy(x[:10]), torch.from_numpy(y[:10]))
    before = m.M
    m.merge(other)
    assert m.M is not before and m.n == 410
    many = [Moments.of(torch.from_numpy(x[i : i + 20]), torch.from_numpy(y[i : i + 20])) for i in range(0, 200, 20)]
    built = [s.M for s in many]
    assert len(_symmetric()) <= _SYMMETRIC_KEEP and many[-1].M is built[-1] and many[0].M is not built[0]
    assert np.array_equal(many[0].M, built[0])


def test_moments_on_threads_share_no_scratch():
    """Statistics of the same shape built on two threads at once (jobs of `linrec.analyses.parallel.run_jobs`) equal
    those built alone: each thread has its own batch buffer and its own recent symmetric matrices. With one buffer
    for every thread (as it was) one thread's rows overwrote the other's between centring and product."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(3)
    parts = [(rng.normal(size=(2000, 40)) + k, rng.normal(size=(2000, 30)) * (k + 1)) for k in range(8)]
    alone = [Moments.of(x, y).M.copy() for x, y in parts]
    for _ in range(3):
        with ThreadPoolExecutor(2) as pool:
            together = list(pool.map(lambda xy: Moments.of(*xy).M.copy(), parts))
        assert all(np.array_equal(a, b) for a, b in zip(alone, together, strict=True))


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
    # the outputs' sum of squares, with and without the removed rows, against numpy on the rows themselves
    ss = lambda v: float(((v - v.mean(0)) ** 2).sum())  # noqa: E731
    assert abs(output_sum_squares(Moments.of(x, y)) - ss(y)) <= 1e-12 * ss(y)
    assert abs(output_sum_squares(Moments.of(x, y), Moments.of(x[200:], y[200:])) - ss(y[:200])) <= 1e-10 * ss(y)
