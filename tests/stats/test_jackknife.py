"""The leave-one-window-out jackknife (`linrec.stats.jackknife`) against textbook references: for a mean its standard
error is exactly s/√n with n − 1 degrees of freedom (scipy's t interval), and for a difference of two independent
means it is Welch's standard error with the Welch–Satterthwaite degrees of freedom."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from linrec.base.errors import LinrecError
from linrec.stats.jackknife import from_replicates, hall_inverse, jackknife, leave_one_out, skew_corrected, skewness


def _mean_of(values: np.ndarray):
    return lambda counts: counts @ values / counts.sum(axis=1)


def test_the_jackknife_of_a_mean_is_the_t_interval():
    x = np.random.default_rng(0).standard_normal(17) * 3 + 1
    j = jackknife(_mean_of(x), len(x))
    assert j.point == pytest.approx(x.mean()) and j.dof == len(x) - 1
    assert j.se == pytest.approx(stats.sem(x), rel=1e-12)
    lo, hi = j.interval(0.9)
    want = stats.t.interval(0.9, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    assert (lo, hi) == pytest.approx(want, rel=1e-12)
    assert j.p() == pytest.approx(stats.ttest_1samp(x, 0).pvalue, rel=1e-10)
    loo = leave_one_out(len(x)) @ x / (len(x) - 1)
    assert from_replicates(x.mean(), loo).se == pytest.approx(j.se, rel=1e-12)  # the same from stored replicates


def test_independent_window_sets_add_their_variances_with_welchs_degrees_of_freedom():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(12), rng.standard_normal(30) * 2 + 0.5
    j = jackknife(lambda ca, cb: _mean_of(a)(ca) - _mean_of(b)(cb), [len(a), len(b)])
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    assert j.se == pytest.approx(np.sqrt(va + vb), rel=1e-12)
    assert j.dof == pytest.approx((va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1)), rel=1e-12)
    assert j.p() == pytest.approx(stats.ttest_ind(a, b, equal_var=False).pvalue, rel=1e-10)


def test_too_few_windows_and_a_bad_level_are_refused():
    with pytest.raises(LinrecError, match="at least 2 held-out windows"):
        jackknife(_mean_of(np.ones(1)), 1)
    with pytest.raises(LinrecError, match="level"):
        jackknife(_mean_of(np.arange(4.0)), 4).interval(95)


def test_skew_corrected_against_a_hand_computation_of_halls_transformation():
    """Five planted values, one far out: the pseudo-values of a mean are the values themselves, so the interval is
    Hall's (1992) skew-corrected t of the sample, worked out here from its formulas; with no skew it is the jackknife-t
    interval, and the skewness is scipy's adjusted G₁."""
    x = np.array([1.0, 1.2, 0.8, 1.1, 5.0])
    n, q = len(x), stats.t.ppf(0.975, 4)
    m, s = x.mean(), x.std(ddof=1)
    g = float(stats.skew(x, bias=False))
    assert skewness(x) == pytest.approx(g, rel=1e-12) and skewness([1.0, 2.0]) == 0.0
    a, shift = g / (3 * np.sqrt(n)), g / (6 * np.sqrt(n))

    def ginv(v):  # the inverse of T + a·T² + a²·T³/3 + shift
        return (np.cbrt(1 + 3 * a * (v - shift)) - 1) / a

    for v in (-q, 0.3, q):  # the inverse inverts
        t_ = ginv(v)
        assert t_ + a * t_**2 + a**2 * t_**3 / 3 + shift == pytest.approx(v, rel=1e-12)
    point, lo, hi, skew = skew_corrected(_mean_of(x), n)
    se = s / np.sqrt(n)
    assert (point, skew) == pytest.approx((m, g), rel=1e-12)
    assert (lo, hi) == pytest.approx((m - se * ginv(q), m - se * ginv(-q)), rel=1e-12)
    assert hi - m > m - lo  # the long right tail lifts the upper end more than the lower
    sym = np.array([1.0, 2.0, 3.0, 4.0, 5.0])  # no skew: the jackknife-t interval
    assert skew_corrected(_mean_of(sym), 5)[1:3] == pytest.approx(jackknife(_mean_of(sym), 5).interval(), rel=1e-12)
    assert hall_inverse(1.5, 0.0, 5) == pytest.approx(1.5)


@pytest.mark.parametrize("level", [0.9, 0.8, 0.99])
def test_skew_corrected_at_a_level_other_than_95_percent_by_hand(level):
    """The same hand computation of Hall's skew-corrected t (six planted values, one far out; the pseudo-values of a
    mean are the values) at `level`: the t quantile at 1 − (1 − level)/2 on n − 1 degrees of freedom, to 1e-12, and
    the interval nested in the 95 % one as a lower level should be (wider at 99 %). Planted, each caught: the level
    not passed on (`hall_interval(..., level)` → `hall_interval(...)` in linrec.stats.jackknife.skew_corrected); the
    quantile at `1 - (1 - level)` (one-sided) in hall_interval."""
    x = np.array([2.0, 2.3, 1.7, 2.1, 1.9, 7.5])
    n = len(x)
    m, se = x.mean(), x.std(ddof=1) / np.sqrt(n)
    g = float(stats.skew(x, bias=False))
    a, shift = g / (3 * np.sqrt(n)), g / (6 * np.sqrt(n))
    q = stats.t.ppf(1 - (1 - level) / 2, n - 1)

    def ginv(v):
        return (np.cbrt(1 + 3 * a * (v - shift)) - 1) / a

    point, lo, hi, skew = skew_corrected(_mean_of(x), n, level=level)
    assert (point, skew) == pytest.approx((m, g), rel=1e-12)
    assert (lo, hi) == pytest.approx((m - se * ginv(q), m - se * ginv(-q)), abs=1e-12, rel=0)
    _, lo95, hi95, _ = skew_corrected(_mean_of(x), n)
    assert (lo95 < lo < hi < hi95) if level < 0.95 else (lo < lo95 < hi95 < hi)
