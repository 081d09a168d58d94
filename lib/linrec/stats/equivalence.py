"""An interval's three outcomes for a correlation: an effect shown, its absence shown within an equivalence margin,
or neither (`correlation_outcome`). Here, below both, because the statistics that simulate and store the outcome
(`linrec.analyses.uncertainty.correlation_test`, `linrec.analyses.calibration`) and the claims' rules that decide on it
at their own margin (`linrec.claims.probe`, `linrec.claims.routing`) read the one definition.
"""

from __future__ import annotations

import numpy as np

# The equivalence margin for a correlation across blocks: |ρ| < 0.3. A correlation of 0.3 explains 9 % of the
# variance across blocks, Cohen's (1988) boundary between a small and a medium effect; a relation weaker than that
# cannot sort blocks usefully (with ρ = 0.3 a block in the better half is still in the worse half of the other
# measure 40 % of the time), so "uncorrelated" (claim 3) and "does not flag" (claim 6b) mean |ρ| < 0.3.
EQUIVALENCE_MARGIN = 0.3
EFFECT, NO_EFFECT, INCONCLUSIVE = "effect", "no effect", "inconclusive"


def correlation_outcome(lo95: float, hi95: float, lo90: float, hi90: float, margin: float = EQUIVALENCE_MARGIN) -> str:
    """Three outcomes for a correlation (Schuirmann's two one-sided tests at 5 % each, as a 90 % interval):
    `NO_EFFECT` if the 90 % interval lies strictly inside (−margin, margin) — a correlation at least `margin` in size
    is ruled out; else `EFFECT` if the 95 % interval excludes 0; else `INCONCLUSIVE` (neither is shown: the data
    are too few or too noisy). A missing interval is inconclusive. Equivalence is checked first: a correlation shown
    both nonzero and smaller than the margin is one the margin calls negligible."""
    if not all(np.isfinite(v) for v in (lo95, hi95, lo90, hi90)):
        return INCONCLUSIVE
    if -margin < lo90 and hi90 < margin:
        return NO_EFFECT
    if lo95 > 0 or hi95 < 0:
        return EFFECT
    return INCONCLUSIVE
