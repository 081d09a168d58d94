"""linrec.stats.equivalence: a correlation's three outcomes at the edges of its margin and of 0, against the two
one-sided tests written out by hand."""

import numpy as np

from linrec.stats.equivalence import EFFECT, EQUIVALENCE_MARGIN, INCONCLUSIVE, NO_EFFECT, correlation_outcome


def test_each_outcome_at_the_edges_of_the_margin_and_of_zero():
    m, eps = EQUIVALENCE_MARGIN, 1e-9
    assert correlation_outcome(-0.5, 0.5, -m + eps, m - eps) == NO_EFFECT  # the 90 % interval strictly inside
    assert correlation_outcome(-0.5, 0.5, -m, m - eps) == INCONCLUSIVE  # touching the margin is not inside it
    assert correlation_outcome(0.01, 0.2, 0.05, 0.15) == NO_EFFECT  # nonzero, but within the margin: equivalence first
    assert correlation_outcome(eps, 0.9, 0.1, 0.8) == EFFECT
    assert correlation_outcome(0.0, 0.9, 0.1, 0.8) == INCONCLUSIVE  # a 95 % interval touching 0 includes it
    assert correlation_outcome(-0.9, -eps, -0.8, -0.1) == EFFECT
    assert correlation_outcome(np.nan, 0.2, 0.05, 0.15) == INCONCLUSIVE  # a missing end decides nothing


def test_the_margin_is_the_callers():
    """A rule that plants its own margin decides by it (claims 3 and 7b pass theirs)."""
    assert correlation_outcome(-0.5, 0.5, -0.25, 0.25, margin=0.2) == INCONCLUSIVE
    assert correlation_outcome(-0.5, 0.5, -0.25, 0.25, margin=0.3) == NO_EFFECT
