"""linrec.claims.profile (claim 1): direction changes, disjoint moves and their false-discovery control by hand and
against scipy, and the verdict at its thresholds, with and without the first position."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from helpers import claim1_row as _claim1_row
from linrec.base.errors import LinrecError
from linrec.claims.profile import (
    _fdr_shape,
    as_extreme_as_paper,
    direction_changes,
    disjoint_direction_changes,
    disjoint_moves,
    max_disjoint_jump,
    move_tests,
    profile_summary,
    verdict_1,
)
from linrec.claims.rules import (
    CLAIM1_JUMP,
    CLAIM1_SPAN,
    CLAIM1_TURNS,
    MOVES_FDR,
    NOT_REPRODUCED,
    PARTLY,
    REPRODUCED,
)

EPS = 1e-9


# ---- claim 1: the profile --------------------------------------------------------------------------------
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


def _moves_profile(noise: float, n_windows: int = 32, seed: int = 0):
    """A zig-zag profile 0.2, 0.8, 0.2, 0.8, 0.3 with narrow stated intervals (every step disjoint), and
    leave-one-window-out replicates whose spread makes each block's jackknife standard error about `noise`
    (independent between blocks)."""
    r = np.array([0.2, 0.8, 0.2, 0.8, 0.3])
    t = pd.DataFrame({"model": "m", "block": range(5), "r2_lin": r, "r2_lo": r - 0.01, "r2_hi": r + 0.01,
                      "r2_ex_first": r, "r2_ex_first_lo": r - 0.01, "r2_ex_first_hi": r + 0.01})  # fmt: skip
    loo = r + noise / np.sqrt(n_windows - 1) * np.random.default_rng(seed).standard_normal((n_windows, len(r)))
    return t, loo


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


def test_claim1_counts_only_the_moves_that_survive_the_false_discovery_rate():
    for noise, passes in ((0.01, True), (0.4, False)):  # the same disjoint intervals; only the replicates differ
        t, loo = _moves_profile(noise)
        moves = pd.concat([move_tests(t, loo), move_tests(t, loo, "ex_first")], ignore_index=True)
        t = t.assign(cond_gram=1.0, first_var_share=0.0)
        s = profile_summary(t, moves)
        assert s.loc[0, "max_jump_disjoint"] == pytest.approx(0.6) and s.loc[0, "direction_changes_disjoint"] == 3
        assert verdict_1(profile_summary(t)).verdict == REPRODUCED  # untested moves: the disjoint counts
        v = verdict_1(s)
        assert v.verdict == (REPRODUCED if passes else NOT_REPRODUCED), noise
        assert v.evidence[0]["passes_ex_first"] is passes
        assert s.loc[0, "moves_tested"] == 8 and bool(s.loc[0, "moves_fdr"] == 8) is passes


def test_a_move_counts_at_q_equal_to_the_rate_and_not_above():
    base = {"model": "m", "positions": "all", "from_block": 0, "to_block": 1, "change": 0.5, "p": 0.01}
    for q, counted in ((MOVES_FDR, 1), (MOVES_FDR + EPS, 0)):
        moves = pd.DataFrame([{**base, "kind": "adjacent", "q": q}, {**base, "kind": "move", "q": q}])
        moves["counts"] = moves["q"] <= MOVES_FDR
        shape = _fdr_shape(moves, "m", "all")
        assert shape["moves_fdr"] == 2 * counted and shape["max_jump_fdr"] == 0.5 * counted
        assert np.isnan(_fdr_shape(moves, "m", "ex_first")["moves_fdr_ex_first"])  # not tested: NaN, not 0


def test_claim1_span_at_its_threshold():
    assert 0.75 - 0.25 == CLAIM1_SPAN  # exact in binary: the rule meets the threshold itself
    assert verdict_1(pd.DataFrame([_claim1_row(span=CLAIM1_SPAN, r2_min=0.25)])).verdict == REPRODUCED
    assert verdict_1(pd.DataFrame([_claim1_row(span=CLAIM1_SPAN - EPS, r2_min=0.25)])).verdict == NOT_REPRODUCED


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


@pytest.mark.parametrize(
    "kw, passes",
    [
        ({}, True),
        ({"span": CLAIM1_SPAN + EPS}, True),
        ({"span": CLAIM1_SPAN - EPS}, False),
        ({"jump": CLAIM1_JUMP}, True),
        ({"jump": CLAIM1_JUMP - EPS}, False),
        ({"turns": CLAIM1_TURNS}, True),
        ({"turns": CLAIM1_TURNS - 1}, False),
    ],
)
def test_claim1_thresholds(kw, passes):
    v = verdict_1(pd.DataFrame([_claim1_row(**kw)]))
    assert v.verdict == (REPRODUCED if passes else NOT_REPRODUCED)
    assert v.evidence[0]["passes"] is passes


def test_claim1_partly_when_one_model_fails():
    v = verdict_1(pd.DataFrame([_claim1_row(model="a"), _claim1_row(jump=0.1, model="b")]))
    assert v.verdict == PARTLY and [e["passes"] for e in v.evidence] == [True, False]


# ---- every position but the first: the same rules, stated beside each verdict ------------------------------------
def test_claim1_without_the_first_position():
    row = _claim1_row() | {"r2_ex_first_min": 0.3, "r2_ex_first_max": 0.3 + CLAIM1_SPAN,
                           "max_jump_disjoint_ex_first": CLAIM1_JUMP,
                           "direction_changes_disjoint_ex_first": 2}  # fmt: skip
    v = verdict_1(pd.DataFrame([row]))
    assert v.verdict == REPRODUCED and v.without_first == REPRODUCED and v.evidence[0]["passes_ex_first"]
    v = verdict_1(pd.DataFrame([row | {"max_jump_disjoint_ex_first": CLAIM1_JUMP - EPS}]))
    assert v.verdict == REPRODUCED and v.without_first == NOT_REPRODUCED  # the verdict needs position 0
    assert verdict_1(pd.DataFrame([_claim1_row()])).without_first == ""  # not measured: no word


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
    three; two of three is sample-dependent. Claim 1's own verdict per sample is stubbed (planted per sample): only
    the word is under test. Planted: `"holds on every sample" if all(passes)` → `if 2 * sum(passes) > len(passes)` in
    linrec.claims.profile.replication_summary fails (two of three → holds)."""
    import linrec.claims.profile as profile
    from linrec.claims.profile import replication_summary
    from linrec.claims.rules import Verdict

    monkeypatch.setattr(profile, "profile_summary", lambda g: g)
    monkeypatch.setattr(
        profile, "verdict_1", lambda s: Verdict(1, REPRODUCED, [{"passes": passes[s["sample"].iloc[0]]}])
    )
    reps = pd.DataFrame([{"model": "m", "sample": k, "block": b, "r2_lin": 0.5 + 0.1 * b + 0.01 * k, "r2_lo": 0.4,
                          "r2_hi": 0.9} for k in range(3) for b in range(4)])  # fmt: skip
    got = replication_summary(reps).iloc[0]
    assert got["replication"] == word and got["n_claim1_passes"] == sum(passes) and got["n_samples"] == 3
