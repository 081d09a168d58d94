"""linrec.inputs.plateau: the plateau rule on a run's held-out losses, at its thresholds on both sides (the held-out
loss itself, evaluated while a run trains, is tested with the training: tests/inputs/test_training.py)."""

import pandas as pd
import pytest

from linrec.base.errors import LinrecError
from linrec.inputs.plateau import LEARNED_MIN_DROP, PLATEAU_MAX_GAIN, PLATEAU_WINDOW, plateau


def _evals(pairs) -> pd.DataFrame:
    return pd.DataFrame(pairs, columns=["step", "heldout_loss"])


def test_the_plateau_rule_at_its_thresholds():
    """Plateaued: the held-out loss fell by less than PLATEAU_MAX_GAIN (1 %) of its value from the last evaluation at
    or before 80 % of the steps to the last step (just under: plateaued; at it or just over: not; a rise counts);
    learned: the final loss at least LEARNED_MIN_DROP (20 %) below step 0's (at it: learned, just under: not);
    converged is both. The window's start is the evaluation at or before 80 %, never a later one (the planted 5.0 at
    step 90 would make every run look plateaued); evaluations that cannot decide are refused in one line."""
    assert (PLATEAU_WINDOW, PLATEAU_MAX_GAIN, LEARNED_MIN_DROP) == (0.2, 0.01, 0.2)

    def rule(final: float, init: float = 200.0, start: float = 100.0):  # numbers exact in binary
        return plateau(_evals([(0, init), (50, 150.0), (80, start), (90, 120.0), (100, final)]), 100)

    under, at, over = rule(99.0001), rule(99.0), rule(98.9999)  # gains just under, at and just over 1 %
    assert at.gain == PLATEAU_MAX_GAIN and under.start_step == 80
    assert under.plateaued and under.converged
    assert not at.plateaued and not over.plateaued and not over.converged
    rising = rule(101.0)
    assert rising.plateaued and rising.best_step == 80 and rising.best_loss == 100.0
    learned = rule(99.5, init=124.375)  # (124.375 − 99.5) / 124.375 = 0.2 exactly
    assert learned.drop == LEARNED_MIN_DROP and learned.learned and learned.converged
    flat = rule(99.5, init=124.37)
    assert flat.plateaued and not flat.learned and not flat.converged
    # the start is the last evaluation at or before 80 % of the steps: 79 here, not 85
    r = plateau(_evals([(0, 8.0), (79, 3.1), (85, 3.0), (100, 3.0)]), 100)
    assert r.start_step == 79 and not r.plateaued  # 3.1 → 3.0 is 3.2 %
    for pairs in ([(50, 5.0), (100, 3.0)], [(0, 8.0), (90, 3.0), (100, 3.0)], [(0, 8.0), (50, 3.0)]):
        with pytest.raises(LinrecError, match="n_evals"):
            plateau(_evals(pairs), 100)
