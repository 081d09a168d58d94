"""The leave-one-window-out jackknife (`linrec.stats.jackknife`) against textbook references: for a mean its standard
error is exactly s/√n with n − 1 degrees of freedom (scipy's t interval), and for a difference of two independent
means it is Welch's standard error with the Welch–Satterthwaite degrees of freedom."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from linrec.base.errors import LinrecError
from linrec.stats.jackknife import from_replicates, jackknife, leave_one_out


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
