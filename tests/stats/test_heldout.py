"""linrec.stats.heldout: held-out per-window sums and the bootstrap of R²_lin over held-out windows."""

import numpy as np
import pytest

from linrec.base.errors import LinrecError
from linrec.stats.ceiling import fit_affine, r2_rows, score
from linrec.stats.heldout import HeldOut, bootstrap_r2, r2_of_counts
from linrec.stats.moments import Moments


def _heldout(x, y, W, b, n_windows, shift=None):
    """Per-window sums of rows grouped into `n_windows` equal consecutive windows (the reference layout)."""
    k = len(x) // n_windows
    e = y - x @ W - b
    shift = np.zeros(y.shape[1]) if shift is None else shift
    yc = y - shift
    g = lambda a: a.reshape(n_windows, k, -1).sum(1)  # noqa: E731
    return HeldOut(np.arange(n_windows), np.full(n_windows, k), g(e**2), g(yc), g(yc**2), shift)


def _rows_of_map(rng, rows, A, sigma):
    x = rng.standard_normal((rows, A.shape[0]))
    return x, x @ A + sigma * rng.standard_normal((rows, A.shape[1]))


def test_bootstrap_interval_covers_the_population_r2_of_a_fixed_map():
    """x ~ N(0, I), y = xA + σε; the map (W, b) is fixed and deliberately not A, so its population
    R² = 1 − (‖A − W‖² + qσ² + ‖b‖²) / (‖A‖² + qσ²) is known in closed form."""
    _p, q, sigma = 3, 2, 0.7
    A = np.array([[1.0, -0.5], [0.3, 0.8], [-0.6, 0.2]])
    W = A + np.array([[0.4, 0.0], [-0.2, 0.3], [0.0, -0.3]])
    b = np.array([0.2, -0.1])
    truth = 1 - (((A - W) ** 2).sum() + q * sigma**2 + (b**2).sum()) / ((A**2).sum() + q * sigma**2)
    assert 0.3 < truth < 0.8
    reps, covered, widths = 200, 0, []
    for rep in range(reps):
        rng = np.random.default_rng([11, rep])
        x, y = _rows_of_map(rng, 40 * 16, A, sigma)  # 40 windows of 16 iid rows
        lo, hi = bootstrap_r2(_heldout(x, y, W, b, 40), n_boot=400, seed=rep)
        covered += lo <= truth <= hi
        widths.append(hi - lo)
    assert covered >= 0.9 * reps, covered
    assert 0.01 < np.median(widths) < 0.3  # an interval, not the whole line


def test_point_estimate_equals_score_and_r2_rows():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3000, 6)) * np.logspace(0, 2, 6) + 50.0  # large means: the shift matters
    y = np.tanh(x[:, :4] / 30) * 5 + 0.1 * rng.standard_normal((3000, 4)) + 1e3
    tr, te = slice(0, 2000), slice(2000, None)
    fit = fit_affine(Moments.of(x[tr], y[tr]))
    ref = score(fit, Moments.of(x[te], y[te])).r2
    h = _heldout(x[te], y[te], fit.W, fit.b, 40, shift=y[tr].mean(0))
    assert abs(h.r2() - ref) < 1e-9
    assert abs(h.r2() - r2_rows(y[te], fit.predict(x[te]))) < 1e-9


def test_resampled_r2_equals_r2_of_replicated_rows():
    """The vectorised count-matrix formula against R² on explicitly replicated windows."""
    rng = np.random.default_rng(2)
    x, y = _rows_of_map(rng, 12 * 10, np.array([[1.0, 2.0], [0.5, -1.0]]), 1.0)
    W, b = np.array([[0.8, 1.5], [0.2, -0.4]]), np.array([0.3, 0.0])
    h = _heldout(x, y, W, b, 12, shift=np.array([0.5, -2.0]))
    counts = rng.multinomial(12, np.full(12, 1 / 12), size=5)
    got = r2_of_counts(h, counts)
    for k, c in enumerate(counts):
        rows = np.repeat(np.arange(12), c)[:, None] * 10 + np.arange(10)
        xs, ys = x[rows.ravel()], y[rows.ravel()]
        assert abs(got[k] - r2_rows(ys, xs @ W + b)) < 1e-12


def test_bootstrap_is_seeded_and_handles_edges():
    rng = np.random.default_rng(3)
    x, y = _rows_of_map(rng, 200, np.eye(2), 1.0)
    h = _heldout(x, y, np.eye(2) * 0.9, np.zeros(2), 20)
    assert bootstrap_r2(h, seed=4) == bootstrap_r2(h, seed=4) != bootstrap_r2(h, seed=5)
    lo, hi = bootstrap_r2(h, level=0.5)
    wide = bootstrap_r2(h, level=0.99)
    assert wide[0] < lo <= h.r2() <= hi < wide[1]
    one = _heldout(x[:10], y[:10], np.eye(2), np.zeros(2), 1)  # one window: every resample is it
    assert bootstrap_r2(one) == pytest.approx((one.r2(), one.r2()), abs=1e-12)
    with pytest.raises(LinrecError, match="test split is empty"):
        bootstrap_r2(HeldOut.empty(2))
    with pytest.raises(LinrecError, match="fit failed"):
        bootstrap_r2(None)
    with pytest.raises(LinrecError, match="level"):
        bootstrap_r2(h, level=95)


def test_window_bootstrap_covers_where_a_row_bootstrap_does_not():
    """Rows of one window share an error term (as positions of one text window share its topic): y = s + u_w + ε,
    the map predicts s, so the population R² is 1 / (1 + 0.8 + 0.2) = 0.5. Resampling windows covers it at about its
    nominal 95 % (simulated 0.985); resampling rows as if independent does not (0.74)."""
    windows, rows, reps = 40, 16, 200
    truth = 1 / (1 + 0.8 + 0.2)
    cover_w = cover_r = 0
    for r in range(reps):
        rng = np.random.default_rng(r)
        s = rng.standard_normal((windows, rows))
        e = np.sqrt(0.8) * rng.standard_normal((windows, 1)) + np.sqrt(0.2) * rng.standard_normal((windows, rows))
        y = s + e
        by_window = HeldOut(np.arange(windows), np.full(windows, rows), (e**2).sum(1, keepdims=True),
                            y.sum(1, keepdims=True), (y**2).sum(1, keepdims=True), np.zeros(1))  # fmt: skip
        yf, ef = y.reshape(-1, 1), e.reshape(-1, 1)
        by_row = HeldOut(np.arange(yf.size), np.ones(yf.size, dtype=np.int64), ef**2, yf, yf**2, np.zeros(1))
        lo, hi = bootstrap_r2(by_window, 400, seed=r)
        cover_w += lo <= truth <= hi
        lo, hi = bootstrap_r2(by_row, 400, seed=r)
        cover_r += lo <= truth <= hi
    assert cover_w / reps >= 0.9 and cover_r / reps <= 0.85


def test_window_icc_is_the_anova_estimate_by_hand_and_finds_a_planted_share():
    """`window_icc`: on a small table it equals the one-way ANOVA estimate computed by hand, window by window in plain
    Python (unequal windows, two columns pooled by their sums of squares); on planted rows whose window component
    carries 0.3 of the variance (`linrec.analyses.calibration._noise`, 400 windows of 64) it finds 0.3 within 0.03,
    and on independent rows about 0; too few windows or rows give NaN. Planted: MSB without the window sizes, or n₀
    taken as the mean window size, fails the hand value."""
    from linrec.analyses.calibration import _noise
    from linrec.stats.heldout import window_icc

    win = [0, 0, 0, 1, 1, 2, 2, 2, 2]
    v = np.array([[1.0, 2.0], [2.0, 0.5], [4.0, 1.0], [7.0, 3.0], [6.0, 5.0], [0.0, 1.0], [1.5, 0.0], [2.0, 2.5],
                  [0.5, 1.0]])  # fmt: skip
    groups = {w: [r for r, g in zip(v.tolist(), win) if g == w] for w in set(win)}
    grand = [sum(r[j] for r in v.tolist()) / len(v) for j in range(2)]
    ssb = sum(len(g) * sum((sum(r[j] for r in g) / len(g) - grand[j]) ** 2 for j in range(2)) for g in groups.values())
    ssw = sum((r[j] - sum(s[j] for s in g) / len(g)) ** 2 for g in groups.values() for r in g for j in range(2))
    k, W = len(v), len(groups)
    msb, msw = ssb / (W - 1), ssw / (k - W)
    n0 = (k - sum(len(g) ** 2 for g in groups.values()) / k) / (W - 1)
    sb = (msb - msw) / n0
    assert window_icc(v, win) == pytest.approx(sb / (sb + msw), rel=1e-12)
    rng = np.random.default_rng(0)
    planted = _noise(400, 64, 0.3, rng).reshape(-1, 1)
    windows = np.repeat(np.arange(400), 64)
    assert window_icc(planted, windows) == pytest.approx(0.3, abs=0.03)
    assert window_icc(_noise(400, 64, 0.0, rng).reshape(-1, 1), windows) < 0.01
    assert np.isnan(window_icc(v[:3], [0, 0, 0])) and np.isnan(window_icc(v[:2], [0, 1]))
    assert np.isnan(window_icc(np.zeros((0, 2)), []))  # an empty held-out sample
    sizes = rng.integers(2, 60, 500)  # unequal windows, a window effect of variance 0.3 and rows of 0.7
    windows = np.repeat(np.arange(500), sizes)
    rows = (np.sqrt(0.3) * rng.standard_normal(500))[windows] + np.sqrt(0.7) * rng.standard_normal(len(windows))
    assert window_icc(rows[:, None], windows) == pytest.approx(0.3, abs=0.03)
