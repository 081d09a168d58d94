"""linrec.analyses.profile (claim 1's numbers): direction changes, disjoint moves and their false-discovery control by
hand and against scipy, the profile's shape with and without the first position, and its replication's word."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from helpers import moves_profile as _moves_profile
from linrec.analyses.profile import (
    MOVES_FDR,
    _fdr_shape,
    as_extreme_as_paper,
    direction_changes,
    disjoint_direction_changes,
    disjoint_moves,
    max_disjoint_jump,
    move_tests,
    profile_summary,
)
from linrec.base.errors import LinrecError

EPS = 1e-9


def test_direction_changes_counts_strict_turns():
    assert direction_changes([0, 1, 0, 1]) == 2
    assert direction_changes([0, 1, 2, 3]) == 0
    assert direction_changes([0, 1, 1, 0]) == 0  # a flat step is not a turn
    assert direction_changes([0.5]) == 0


def test_profile_summary_against_hand_computed_numbers():
    r2 = pd.DataFrame(
        {
            "model": ["a"] * 4 + ["b"] * 3,
            "block": [3, 0, 1, 2, 0, 1, 2],  # unsorted: the summary sorts by block
            "r2_lin": [0.4, 0.2, 0.9, 0.3, 0.5, 0.6, 0.7],
            "cond_gram": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
            "r2_ex_first": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7],
            "first_var_share": [0.5, 0.49, 0.0, 0.9, 0.0, 0.0, 0.0],
        }
    )
    r2["r2_lo"], r2["r2_hi"] = r2["r2_lin"] - 0.05, r2["r2_lin"] + 0.05
    s = profile_summary(r2).set_index("model")
    # every interval has width 0.1; a: 0.4 (block 3) and 0.3 (block 2) overlap, so the 0.1 step is not resolved
    assert s.loc["a", "max_jump_disjoint"] == pytest.approx(0.7) and s.loc["a", "direction_changes_disjoint"] == 2
    assert s.loc["b", "max_jump_disjoint"] == 0.0 and s.loc["b", "direction_changes_disjoint"] == 0
    # block order a: 0.2, 0.9, 0.3, 0.4 → jumps 0.7, 0.6, 0.1; turns at 0.9 and 0.3
    assert s.loc["a", "r2_min"] == 0.2 and s.loc["a", "r2_max"] == 0.9
    assert s.loc["a", "max_adjacent_jump"] == pytest.approx(0.7) and s.loc["a", "direction_changes"] == 2
    assert s.loc["a", "cond_gram_median"] == 2.5 and s.loc["a", "r2_ex_first_max"] == 0.4
    assert s.loc["a", "first_token_blocks"] == "2 3"  # share ≥ 0.5 (0.49 is not), in block order
    assert s.loc["b", "direction_changes"] == 0 and s.loc["b", "first_token_blocks"] == ""
    with pytest.raises(LinrecError, match="columns"):
        profile_summary(r2.drop(columns=["cond_gram"]))


def test_disjoint_moves_ignore_what_the_intervals_do_not_resolve():
    r = [0.50, 0.55, 0.45, 0.80, 0.30]
    lo = [v - 0.06 for v in r]
    hi = [v + 0.06 for v in r]
    assert direction_changes(r) == 3  # as seen: up, down, up, down
    assert disjoint_moves(r, lo, hi) == pytest.approx([0.30, -0.50])  # 0.50 → 0.80 → 0.30; the wiggle is noise
    assert disjoint_direction_changes(r, lo, hi) == 1
    assert max_disjoint_jump(r, lo, hi) == pytest.approx(0.50)
    # at the boundary: intervals that touch are not disjoint, a hair apart they are
    assert disjoint_moves([0.0, 1.0], [0.0, 0.5], [0.5, 1.0]) == []
    assert disjoint_moves([0.0, 1.0], [0.0, 0.5 + EPS], [0.5, 1.0]) == pytest.approx([1.0])
    assert max_disjoint_jump([0.0, 1.0], [0.0, 0.5], [0.5, 1.0]) == 0.0
    assert disjoint_moves([0.0, 1.0], [np.nan, 0.9], [np.nan, 1.1]) == []  # a missing interval resolves nothing


def test_move_tests_p_and_q_against_scipy():
    t, loo = _moves_profile(noise=0.3)
    m = move_tests(t, loo)
    # the family: the 4 adjacent disjoint steps and the 4 anchor moves (the same pairs here)
    assert list(m["kind"]) == ["adjacent"] * 4 + ["move"] * 4
    assert list(zip(m["from_block"], m["to_block"])) == [(0, 1), (1, 2), (2, 3), (3, 4)] * 2
    np.testing.assert_allclose(m["change"], [0.6, -0.6, 0.6, -0.5] * 2)
    w = len(loo)
    for row in m.itertuples():  # the jackknife t test of the paired difference, computed by hand
        d = loo[:, row.to_block] - loo[:, row.from_block]
        se = np.sqrt((w - 1) / w * ((d - d.mean()) ** 2).sum())
        assert row.p == pytest.approx(2 * stats.t.sf(abs(row.change) / se, w - 1), rel=1e-12)
    assert 0.01 < m["p"].max() < 0.5  # the noise is large enough for the test to matter
    np.testing.assert_allclose(m["q"], stats.false_discovery_control(m["p"], method="bh"), rtol=1e-12)
    assert (m["counts"] == (m["q"] <= MOVES_FDR)).all()
    with pytest.raises(LinrecError, match="replicates of shape"):
        move_tests(t, loo[:, :4])


def test_a_move_counts_at_q_equal_to_the_rate_and_not_above():
    base = {"model": "m", "positions": "all", "from_block": 0, "to_block": 1, "change": 0.5, "p": 0.01}
    for q, counted in ((MOVES_FDR, 1), (MOVES_FDR + EPS, 0)):
        moves = pd.DataFrame([{**base, "kind": "adjacent", "q": q}, {**base, "kind": "move", "q": q}])
        moves["counts"] = moves["q"] <= MOVES_FDR
        shape = _fdr_shape(moves, "m", "all")
        assert shape["moves_fdr"] == 2 * counted and shape["max_jump_fdr"] == 0.5 * counted
        assert np.isnan(_fdr_shape(moves, "m", "ex_first")["moves_fdr_ex_first"])  # not tested: NaN, not 0


@pytest.mark.parametrize(
    "profile, extreme",
    [
        ([0.5, 0.991, 0.29, 0.6], True),
        ([0.5, 0.99, 0.29, 0.6], False),  # > 0.99 is strict
        ([0.5, 0.995, 0.3, 0.6], False),  # < 0.3 is strict
        ([0.995, 0.5, 0.2], False),  # both extremes, but not in adjacent blocks
        ([0.2, 0.6, 0.999], False),
        ([0.1, 0.999], True),  # either order
    ],
)
def test_as_extreme_as_the_paper(profile, extreme):
    assert as_extreme_as_paper(profile) is extreme


def test_profile_summary_judges_the_profile_without_the_first_position_on_its_own_intervals():
    t = pd.DataFrame({"model": "m", "block": range(4), "r2_lin": [0.9, 0.2, 0.9, 0.2],
                      "r2_lo": [0.85, 0.15, 0.85, 0.15], "r2_hi": [0.95, 0.25, 0.95, 0.25],
                      "cond_gram": 1.0, "first_var_share": 0.0,
                      "r2_ex_first": [0.5, 0.45, 0.5, 0.45], "r2_ex_first_lo": [0.4, 0.35, 0.4, 0.35],
                      "r2_ex_first_hi": [0.6, 0.55, 0.6, 0.55]})  # fmt: skip
    s = profile_summary(t).iloc[0]
    assert s["max_jump_disjoint"] == pytest.approx(0.7) and s["direction_changes_disjoint"] == 2
    assert s["max_jump_disjoint_ex_first"] == 0.0 and s["direction_changes_disjoint_ex_first"] == 0  # overlapping
    assert s["r2_ex_first_min"] == 0.45


@pytest.mark.parametrize(
    "passes, word",
    [
        ((True, True, True), "holds on every sample"),
        ((True, True, False), "sample-dependent"),
        ((False, True, False), "sample-dependent"),
        ((False, False, False), "fails on every sample"),
    ],
)
def test_replication_holds_on_every_sample_not_most(monkeypatch, passes, word):
    """`replication_summary`'s word over three samples of text: "holds on every sample" only if claim 1 holds on all
    three; two of three is sample-dependent. Claim 1's rule per sample (`holds`, the caller's) is planted per sample:
    only the word is under test. Planted: `"holds on every sample" if all(passes)` → `if 2 * sum(passes) >
    len(passes)` in linrec.analyses.profile.replication_summary fails (two of three → holds)."""
    import linrec.analyses.profile as profile

    monkeypatch.setattr(profile, "profile_summary", lambda g: g)
    reps = pd.DataFrame([{"model": "m", "sample": k, "block": b, "r2_lin": 0.5 + 0.1 * b + 0.01 * k, "r2_lo": 0.4,
                          "r2_hi": 0.9} for k in range(3) for b in range(4)])  # fmt: skip
    got = profile.replication_summary(reps, lambda s: passes[s["sample"].iloc[0]]).iloc[0]
    assert got["replication"] == word and got["n_claim1_passes"] == sum(passes) and got["n_samples"] == 3
