"""The summaries the claims read, against references computed here by hand or with numpy: the numbers a one-character
slip would change without any other test noticing (issue 45, item 7). Each test's docstring names the planted bug it
guards; each was run with that bug planted and failed."""

import numpy as np
import pandas as pd
import pytest

from linrec.claims.learned import learned_summary, random_init_summary, verdict_2a
from linrec.claims.probe import pitfall_summary, verdict_7a
from linrec.claims.routing import routing_summary
from linrec.claims.rules import CLAIM2_MIN_EFFECT, CLAIM7_SHORTFALL, NOT_REPRODUCED, REPRODUCED

EPS = 1e-9


# ---- claim 2a: the trained profile's distance from the untrained one ------------------------------------------
def _crossing_profiles(trained, inits):
    rows = [{"model": "m", "block": b, "r2_lin": r, "r2_train": r + 0.1, "weights": "trained"}
            for b, r in enumerate(trained)]  # fmt: skip
    for s, init in enumerate(inits):
        rows += [{"model": "m", "block": b, "r2_lin": r, "r2_train": r + 0.1, "weights": f"random init, seed {s}"}
                 for b, r in enumerate(init)]  # fmt: skip
    return pd.DataFrame(rows)


def test_the_twin_distance_is_a_mean_absolute_difference_when_the_profiles_cross():
    """Guards `abs(tr - i).mean()` → `(tr - i).mean()` in `random_init_summary` (claim 2a's trained-vs-twin
    distance): the trained profile lies above its twin on one block and below it on the other, so the signed mean
    difference is 0 while the profiles are 0.3 apart on every block."""
    trained, twins = [0.8, 0.2], [[0.5, 0.5], [0.4, 0.6]]
    s = random_init_summary(_crossing_profiles(trained, twins), [0, 1]).iloc[0]
    by_hand = (np.mean([0.3, 0.3]) + np.mean([0.4, 0.4])) / 2  # |0.8 − 0.5|, |0.2 − 0.5|; |0.8 − 0.4|, |0.2 − 0.6|
    assert s["mean_abs_trained_init"] == pytest.approx(by_hand)
    assert s["mean_abs_init_seeds"] == pytest.approx(0.1)  # |0.5 − 0.4|, |0.5 − 0.6|
    assert verdict_2a(learned_summary(pd.DataFrame([s]))).verdict == REPRODUCED  # 0.35 against a noise of 0.1


def test_the_null_ensemble_distance_is_a_mean_absolute_difference_when_the_profiles_cross():
    """Guards `.abs().mean()` → `.mean()` in `learned_summary`'s `effect_null` (claim 2a's trained-vs-untrained
    distance where the twin is degenerate; on the real data the slip flips 2a to "not reproduced"): the trained R²
    lies 0.3 above the random-init ensemble's mean on one block and 0.3 below it on the other."""
    init = pd.DataFrame([{"model": "m", "init_r2_train_median": 1.0, "init_r2_test_median": 0.0,
                          "trained_gap_median": 0.1, "mean_abs_trained_init": 0.0,
                          "mean_abs_init_seeds": 1.0}])  # fmt: skip
    blocks = pd.DataFrame({"model": "m", "block": [0, 1], "r2_trained": [0.8, 0.2], "init_mean": [0.5, 0.5],
                           "n_init": 3, "init_pair_gap": [0.01, 0.03]})  # fmt: skip
    row = learned_summary(init, blocks).iloc[0]
    assert row["twin_degenerate"]  # its train − held-out gap (1.0) exceeds the trained model's (0.1) by far
    assert row["effect_null"] == pytest.approx(0.3) and row["effect"] == pytest.approx(0.3)
    assert row["noise_null"] == pytest.approx(0.02)
    assert 0.3 >= CLAIM2_MIN_EFFECT and verdict_2a(learned_summary(init, blocks)).verdict == REPRODUCED


def test_the_routing_summary_reports_the_median_identity_r():
    """Guards `median()` → `max()` (or any other statistic) of the token-identity r in `routing_summary`: the
    model's r over blocks and corpus pairs is 0.1, 0.3, 0.4, 0.95 (median 0.35 by hand); another model's r does not
    enter."""
    blocks = [0, 1, 2]
    routable = pd.DataFrame({"model": "m", "block": blocks, "routable_pct1": [0.2, 0.5, 0.4],
                             "routable_pct1_lo": 0.0, "routable_pct1_hi": 1.0})  # fmt: skip
    r2 = pd.DataFrame({"model": "m", "block": blocks, "r2_lin": [0.3, 0.9, 0.6]})
    identity = pd.DataFrame({"model": ["m", "m", "m", "m", "other"], "block": [0, 1, 0, 1, 0],
                             "corpus_b": ["web", "web", "code", "code", "web"],
                             "r": [0.95, 0.1, 0.4, 0.3, -1.0]})  # fmt: skip
    got = routing_summary(routable, r2, identity=identity).iloc[0]
    assert got["identity_r_median"] == pytest.approx((0.3 + 0.4) / 2)


# ---- claim 7a: how many blocks fall short of the ceiling ----------------------------------------------------------
def _probe_at_zero_baseline(shortfalls):
    """A probe table whose better baseline (Adam) sits at 0, so each block's shortfall is its ceiling, exactly."""
    n = len(shortfalls)
    return pd.DataFrame({"model": "m", "block": range(n), "r2_ceiling_rows": np.asarray(shortfalls, float),
                         "r2_trained_adam": 0.0, "r2_trained_sgd": -0.2, "cond_gram": np.arange(1.0, n + 1),
                         "cond_scaled": np.arange(1.0, n + 1), "adam_reach": np.arange(1.0, n + 1),
                         "n_train_rows": 8192})  # fmt: skip


def test_a_block_short_by_exactly_the_threshold_is_not_short():
    """Guards `>` → `>=` in `pitfall_summary`'s per-block shortfall count (claim 7a): CLAIM7_SHORTFALL at exact
    equality, a hair below and a hair above; "short" means more than the threshold below the ceiling."""
    s = pitfall_summary(
        _probe_at_zero_baseline([CLAIM7_SHORTFALL - EPS, CLAIM7_SHORTFALL, CLAIM7_SHORTFALL + EPS, 0.0]), n_boot=50
    )
    assert s["n_short"].iloc[0] == 1 and s["share_short"].iloc[0] == pytest.approx(1 / 4)
    at = pitfall_summary(_probe_at_zero_baseline([CLAIM7_SHORTFALL] * 4), n_boot=50)
    assert at["n_short"].iloc[0] == 0 and verdict_7a(at).verdict == NOT_REPRODUCED
    above = pitfall_summary(_probe_at_zero_baseline([CLAIM7_SHORTFALL + EPS] * 4), n_boot=50)
    assert above["n_short"].iloc[0] == 4 and verdict_7a(above).verdict == REPRODUCED
