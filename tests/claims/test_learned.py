"""linrec.claims.learned (claims 2a and 2b): each verdict on both sides of each threshold, read from the controls'
summaries (whose own numbers are tests/analyses/test_controls.py's and test_decomposition.py's), the decomposition's
interval deciding 2b, and the seeds experiment's comparisons judged on shape with the level named beside (issue 45)."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from helpers import null_rows as _null_rows
from helpers import planted_matrix as _planted_matrix
from linrec.analyses.controls import CLAIM2_DEGENERATE_GAP, learned_summary, random_init_summary
from linrec.analyses.decomposition import decomposition_intervals, null_blocks
from linrec.claims.bands import sign_word
from linrec.claims.learned import (
    combine_2a,
    comparison_words,
    distance_word,
    seeds_verdict,
    verdict_2a,
    verdict_2b,
)
from linrec.claims.rules import (
    CLAIM2_MIN_EFFECT,
    CLAIM2_NOISE_FACTOR,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    PARTLY,
    REPRODUCED,
    SEEDS_LEVEL_MARGIN,
    SEEDS_SHAPE_MARGIN,
)

EPS = 1e-9


# ---- claim 2: controls ---------------------------------------------------------------------------------------


def _init_row(twin_gap=0.5, trained_gap=0.5, diff=0.5, noise=0.1, model="m"):
    return {"model": model, "init_r2_train_median": twin_gap, "init_r2_test_median": 0.0,
            "trained_gap_median": trained_gap, "mean_abs_trained_init": diff, "mean_abs_init_seeds": noise}  # fmt: skip


def _learned(twin_gap=0.5, trained_gap=0.5, diff=0.5, noise=0.1, null_effect=None, null_noise=0.01):
    """`learned_summary` of one model, with a null ensemble whose mean sits `null_effect` below the trained R²."""
    blocks = None
    if null_effect is not None:
        d = null_noise * 3 / 4  # three draws m − d, m, m + d: mean pairwise |gap| = 4d/3
        trained = [0.8, 0.7]
        blocks = null_blocks(_null_rows(trained, [[t - null_effect - d, t - null_effect, t - null_effect + d]
                                                    for t in trained]))  # fmt: skip
    return learned_summary(pd.DataFrame([_init_row(twin_gap, trained_gap, diff, noise)]), blocks)


@pytest.mark.parametrize(
    "kw, word",
    [
        ({}, REPRODUCED),
        # the twin as reference: beyond noise and the minimum effect
        ({"diff": CLAIM2_NOISE_FACTOR * 0.1 + EPS}, REPRODUCED),
        ({"diff": CLAIM2_NOISE_FACTOR * 0.1}, NOT_REPRODUCED),
        ({"diff": CLAIM2_MIN_EFFECT, "noise": 0.001}, REPRODUCED),
        ({"diff": CLAIM2_MIN_EFFECT - EPS, "noise": 0.001}, NOT_REPRODUCED),
        ({"noise": np.nan}, NOT_TESTABLE),
        # a degenerate twin (gap beyond the trained model's by > 0.1): the null ensemble is the reference
        ({"twin_gap": 0.5 + CLAIM2_DEGENERATE_GAP, "null_effect": 0.0}, REPRODUCED),  # exactly 0.1: not degenerate
        ({"twin_gap": 0.5 + CLAIM2_DEGENERATE_GAP + 1e-6, "null_effect": 0.0}, NOT_REPRODUCED),
        ({"twin_gap": 1.0, "null_effect": CLAIM2_MIN_EFFECT + 1e-6}, REPRODUCED),
        ({"twin_gap": 1.0, "null_effect": CLAIM2_MIN_EFFECT - 1e-6}, NOT_REPRODUCED),
        ({"twin_gap": 1.0, "null_effect": 0.3, "null_noise": 0.3 / CLAIM2_NOISE_FACTOR + 1e-6}, NOT_REPRODUCED),
        ({"twin_gap": 1.0, "null_effect": 0.3, "null_noise": 0.3 / CLAIM2_NOISE_FACTOR - 1e-6}, REPRODUCED),
        ({"twin_gap": 1.0}, NOT_TESTABLE),  # degenerate twin and no null ensemble
    ],
)
def test_claim2a_thresholds(kw, word):
    v = verdict_2a(_learned(**kw))
    assert v.verdict == word, v.evidence


def test_claim2a_noise_of_the_null_ensemble_is_its_mean_pairwise_gap():
    row = _learned(twin_gap=1.0, null_effect=0.2, null_noise=0.04).iloc[0]
    assert row["twin_degenerate"] and row["reference"].startswith("random-init FFNs")
    assert row["effect"] == pytest.approx(0.2) and row["noise"] == pytest.approx(0.04)
    two = pd.DataFrame([_init_row(model="a"), _init_row(diff=0.01, model="b")])
    assert verdict_2a(learned_summary(two)).verdict == PARTLY


def _dec_row(lo=0.1, hi=0.3, n_standout=4, n_blocks=8, model="m"):
    return {"model": model, "n_blocks": n_blocks, "n_standout": n_standout, "share_weights": 0.5,
            "share_inputs": 0.3, "wmi_lo": lo, "wmi_hi": hi}  # fmt: skip


@pytest.mark.parametrize(
    "kw, outcome",
    [
        ({}, "weights"),
        ({"lo": 0.0}, "undecided"),  # the interval must lie above 0
        ({"lo": EPS}, "weights"),
        ({"n_standout": 0}, "weights"),  # the null ensembles are reported, they do not decide
        ({"lo": -0.3, "hi": -EPS}, "inputs"),
        ({"lo": -0.3, "hi": 0.0}, "undecided"),
        ({"lo": np.nan}, None),
    ],
)
def test_claim2b_outcome_thresholds(kw, outcome):
    assert sign_word(_dec_row(**kw)) == outcome


def test_claim2b_verdict_reads_the_bands_table():
    """The widest band's row decides nothing alone: the verdict reads the per-band table (`linrec.claims.bands`, where
    its outcomes are tested), and without one it is not testable."""
    dec = pd.DataFrame([_dec_row()])
    bands = pd.DataFrame([{"model": "m", "band": k, "wmi": 0.2, "wmi_lo": lo, "wmi_hi": 0.4}
                          for k, lo in ((1, -0.1), (2, 0.1), (3, -0.01))])  # fmt: skip
    v = verdict_2b(dec, bands)
    assert v.verdict == NOT_TESTABLE and v.evidence[0]["outcome"] == "undecided"  # band 3 includes 0
    assert verdict_2b(dec, bands[bands["band"] < 3]).verdict == REPRODUCED  # band 1 does not decide
    assert "controls_decomposition_bands" in verdict_2b(dec, None).reason
    assert verdict_2b(None, bands).verdict == NOT_TESTABLE


def _decomposed(matrix, window_halfwidth=0.01):
    from linrec.analyses.decomposition import two_factor_shares

    m = matrix
    s = two_factor_shares(m["ffn_block"], m["input_block"], m["r2"].to_numpy(float))
    wmi = float(s["weights"] - s["inputs"])
    return pd.DataFrame([{"model": "m", "n_blocks": m["ffn_block"].nunique(), "n_standout": 0,
                          "share_weights": s["weights"], "share_inputs": s["inputs"],
                          "share_weights_minus_inputs": wmi, "share_weights_minus_inputs_lo": wmi - window_halfwidth,
                          "share_weights_minus_inputs_hi": wmi + window_halfwidth}])  # fmt: skip


def test_decomposition_interval_is_the_jackknife_over_blocks_by_hand():
    """`decomposition_intervals` against a leave-one-block-out jackknife written out here, combined with the
    windows' half-width, and the three outcomes reached by planted matrices: strong weights, strong inputs, and
    neither (the same spread on both factors)."""
    from linrec.analyses.decomposition import two_factor_shares

    n = 14
    rng = np.random.default_rng(0)
    m = _planted_matrix(rng.normal(0, 0.2, n), rng.normal(0, 0.05, n), noise=0.02)
    d = decomposition_intervals(_decomposed(m), m).iloc[0]

    def wmi(t):
        s = two_factor_shares(t["ffn_block"], t["input_block"], t["r2"].to_numpy(float))
        return s["weights"] - s["inputs"]

    jack = np.array([wmi(m[(m["ffn_block"] != b) & (m["input_block"] != b)]) for b in range(n)])
    se = np.sqrt((n - 1) / n * ((jack - jack.mean()) ** 2).sum())
    assert d["wmi_se_jack"] == pytest.approx(se) and d["wmi_se_windows"] == pytest.approx(0.01 / 1.959964)
    half = stats.t.ppf(0.975, n - 1) * np.sqrt(se**2 + (0.01 / 1.959964) ** 2)
    assert (d["wmi_lo"], d["wmi_hi"]) == pytest.approx((wmi(m) - half, wmi(m) + half))
    assert d["wmi_band1"] == pytest.approx(wmi(m[(m["ffn_block"] - m["input_block"]).abs() <= 1]))
    assert sign_word(d) == "weights"
    rng = np.random.default_rng(0)
    m = _planted_matrix(rng.normal(0, 0.05, n), rng.normal(0, 0.2, n), noise=0.02)
    assert sign_word(decomposition_intervals(_decomposed(m), m).iloc[0]) == "inputs"
    rng = np.random.default_rng(0)
    m = _planted_matrix(rng.normal(0, 0.1, n), rng.normal(0, 0.1, n), noise=0.05)
    assert sign_word(decomposition_intervals(_decomposed(m), m).iloc[0]) == "undecided"


# ---- the seeds experiment (notebook 08) ---------------------------------------------------------------------------
def test_claim2a_takes_the_weaker_of_the_offline_and_the_seeds_verdicts():
    assert combine_2a(REPRODUCED, PARTLY) == PARTLY
    assert combine_2a(PARTLY, NOT_REPRODUCED) == NOT_REPRODUCED
    assert combine_2a(PARTLY, NOT_TESTABLE) == PARTLY and combine_2a(NOT_TESTABLE, REPRODUCED) == REPRODUCED
    assert combine_2a(NOT_TESTABLE, NOT_TESTABLE) == NOT_TESTABLE


# ---- the seeds experiment: the shape decides "sharply different", the level is named -------------------------------
@pytest.mark.parametrize(
    "d, lo, hi, floor, word",
    [
        (0.30, 0.25, 0.35, 0.02, "differ"),
        (0.30, 0.019, 0.35, 0.02, "inconclusive"),  # lower bound under the floor
        (0.0999, 0.09, 0.11, 0.02, "inconclusive"),  # beyond noise but under the minimum effect, and not inside it
        (0.10, 0.09, 0.11, 0.02, "differ"),  # at the minimum effect
        (0.05, 0.04, 0.0999, 0.02, "agree"),  # beyond noise yet inside the margin: agree at 0.1
        (0.05, 0.04, 0.10, 0.02, "inconclusive"),  # upper bound at the margin: not inside
        (0.05, 0.0, 0.08, 0.09, "agree"),
        (np.nan, 0.0, 0.08, 0.09, "inconclusive"),
    ],
)
def test_each_part_of_a_comparison_at_its_thresholds(d, lo, hi, floor, word):
    """The raw distance, the shape (both ≥ 0) and the signed level, mirrored below 0, read by one rule."""
    assert CLAIM2_MIN_EFFECT == SEEDS_LEVEL_MARGIN == SEEDS_SHAPE_MARGIN == 0.1
    assert distance_word({"distance": d, "distance_lo": lo, "distance_hi": hi, "floor": floor}) == word
    assert distance_word({"shape": d, "shape_lo": lo, "shape_hi": hi, "shape_floor": floor}, part="shape") == word
    assert distance_word({"level": d, "level_lo": lo, "level_hi": hi, "level_floor": floor}, part="level") == word
    neg = {"level": -d, "level_lo": -hi, "level_hi": -lo, "level_floor": floor}
    assert distance_word(neg, part="level") == word


@pytest.mark.parametrize(
    "lo, hi, word",
    [
        (-0.0999, 0.0999, "agree"),  # a signed level inside ±0.1
        (-0.10, 0.05, "inconclusive"),  # its lower bound at −0.1: not inside
        (-0.05, 0.10, "inconclusive"),
        (-0.30, -0.021, "differ"),  # below −floor, and |level| ≥ 0.1
        (-0.30, -0.02, "inconclusive"),  # its upper bound at −floor: not clear of it
    ],
)
def test_a_signed_level_around_zero(lo, hi, word):
    assert distance_word({"level": (lo + hi) / 2, "level_lo": lo, "level_hi": hi, "level_floor": 0.02},
                         part="level") == word  # fmt: skip


VALUES = {"differ": (0.3, 0.25, 0.35), "agree": (0.03, 0.02, 0.05), "inconclusive": (0.1, 0.0, 0.2)}


def _cmp(kind, raw, level="agree", shape="agree"):
    row = {"kind": kind, "a": "x", "b": "y", "step": 9, "floor": 0.01, "level_floor": 0.01, "shape_floor": 0.01}
    for part, word in (("distance", raw), ("level", level), ("shape", shape)):
        row.update(dict(zip((part, f"{part}_lo", f"{part}_hi"), VALUES[word])))
    return row


def _experiment(trained="differ", seeds=("agree", "agree"), variants=("differ", "agree"), order=("agree", "agree")):
    """Two runs against their step 0, two init-seed pairs, one data-order pair and two GELU–SwiGLU pairs, each
    (level word, shape word) as given."""
    rows = [_cmp("trained vs init", trained, "differ", "agree") for _ in range(2)]
    rows += [_cmp("seed", "agree", *seeds) for _ in range(2)] + [_cmp("data order", "agree", *order)]
    return rows + [_cmp("variant", "differ", *variants) for _ in range(2)]


@pytest.mark.parametrize(
    "table, word, c2",
    [
        (_experiment(), "learned; architecture sets the level, not the shape; init seed and data order change neither",
         PARTLY),
        (_experiment(variants=("agree", "differ")), "learned; architecture sets the shape; init seed and data order "
         "change neither", PARTLY),
        (_experiment(variants=("differ", "differ")), "learned; architecture sets the level and the shape; init seed "
         "and data order change neither", PARTLY),
        (_experiment(variants=("agree", "agree")), "learned, the same for both variants; init seed and data order "
         "change neither", REPRODUCED),
        (_experiment(variants=("differ", "inconclusive")), "learned; GELU against SwiGLU inconclusive; init seed and "
         "data order change neither", NOT_TESTABLE),
        (_experiment(variants=("inconclusive", "agree")), "learned; GELU against SwiGLU inconclusive; init seed and "
         "data order change neither", NOT_TESTABLE),
        (_experiment(seeds=("agree", "differ")), "learned, individual to each run", REPRODUCED),
        (_experiment(seeds=("differ", "agree")), "learned; init seed changes the level, not the shape", NOT_TESTABLE),
        (_experiment(seeds=("agree", "inconclusive")), "learned; seed to seed inconclusive", NOT_TESTABLE),
        (_experiment(order=("agree", "differ")), "learned; architecture sets the level, not the shape; init seed "
         "changes neither; data order changes the shape", PARTLY),
        (_experiment(order=("inconclusive", "agree")), "learned; architecture sets the level, not the shape; init "
         "seed changes neither; data order inconclusive", PARTLY),
        (_experiment(trained="agree"), "not learned", NOT_REPRODUCED),
        (_experiment(trained="inconclusive"), "inconclusive", NOT_TESTABLE),
    ],
)  # fmt: skip
def test_every_outcome_of_the_seeds_verdict(table, word, c2):
    got = seeds_verdict(pd.DataFrame(table))
    assert (got["word"], got["claim2a"]) == (word, c2)
    assert "architecture and data" not in got["word"] and "text" not in got["word"]  # the text never changed
    assert got["variant_words"].startswith("differ (level ")


def test_the_training_text_is_named_only_where_it_changed():
    text = [_cmp("text", "agree")]
    got = seeds_verdict(pd.DataFrame(_experiment() + text))["word"]
    assert got.endswith("init seed and data order and training text change neither")
    got = seeds_verdict(pd.DataFrame(_experiment() + [_cmp("text", "differ", "differ", "agree")]))["word"]
    assert got.endswith("; training text changes the level, not the shape")
    assert seeds_verdict(pd.DataFrame(_experiment() + text))["text_words"] == "agree (level agree, shape agree)"


def test_a_table_without_level_and_shape_intervals_is_not_decided_on_them():
    """A comparisons table from before the convention, refreshed from its profiles (points, no intervals): learned is
    still read on the raw distance; what architecture sets is not, and says how to get it."""
    t = pd.DataFrame(_experiment())
    for c in ("level_lo", "level_hi", "shape_lo", "shape_hi"):
        t.loc[t["kind"] != "trained vs init", c] = np.nan
    got = seeds_verdict(t)
    assert got["word"] == "learned; level and shape not measured apart (rerun notebook 08)"
    assert got["claim2a"] == NOT_TESTABLE
    words = comparison_words(t)
    assert set(words.loc[words["kind"] == "variant", "shape_outcome"]) == {"not measured"}
    assert seeds_verdict(pd.DataFrame(_experiment(trained="agree")).drop(columns=["shape_lo"]))["word"] == "not learned"


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


def _fv(claim, evidence):
    from linrec.claims.rules import Verdict

    return Verdict(claim, "reproduced", evidence)


# ---- issue 92: each boundary at its threshold exactly and one ulp either side --------------------------------------
def test_differ_needs_the_interval_strictly_clear_of_the_noise_floor_to_the_ulp():
    """A part "differs" only when its lower bound lies strictly above its floor (the signed level: its upper bound
    strictly below minus the floor): at the floor exactly it is inconclusive, one ulp beyond it differs. The floor and
    the margin are planted at 0.02 and the rule's own SEEDS_SHAPE_MARGIN. Planted: `lo > floor` → `lo >= floor` in
    linrec.claims.learned.distance_word fails (at → differ); `hi < -floor` → `hi <= -floor` fails likewise."""
    from helpers import edge_tables
    from linrec.claims.learned import RULE_2A

    margin, floor = RULE_2A.thresholds.SEEDS_SHAPE_MARGIN, 0.02
    for part, col in (("distance", "floor"), ("shape", "shape_floor"), ("level", "level_floor")):
        rows = edge_tables(lambda lo, p=part, c=col: {p: 0.3, f"{p}_lo": lo, f"{p}_hi": 0.35, c: floor}, floor)
        got = {k: distance_word(r, margin, part) for k, r in rows.items()}
        assert got == {"below": "inconclusive", "at": "inconclusive", "above": "differ"}, part
    rows = edge_tables(lambda hi: {"level": -0.3, "level_lo": -0.35, "level_hi": hi, "level_floor": floor}, -floor)
    got = {k: distance_word(r, margin, "level") for k, r in rows.items()}
    assert got == {"below": "differ", "at": "inconclusive", "above": "inconclusive"}


def test_differ_needs_the_size_at_least_the_margin_to_the_ulp():
    """The size test is ≥ the margin (the rule's SEEDS_SHAPE_MARGIN): at it and one ulp above "differ", one ulp below
    inconclusive (its interval, 0.05 to 0.35, is not inside ±margin). Planted: `abs(d) >= margin` → `abs(d) > margin`
    fails (at → inconclusive)."""
    from helpers import edge_tables
    from linrec.claims.learned import RULE_2A

    margin = RULE_2A.thresholds.SEEDS_SHAPE_MARGIN
    rows = edge_tables(lambda d: {"shape": d, "shape_lo": 0.05, "shape_hi": 0.35, "shape_floor": 0.02}, margin)
    got = {k: distance_word(r, margin, "shape") for k, r in rows.items()}
    assert got == {"below": "inconclusive", "at": "differ", "above": "differ"}


def test_a_twin_is_degenerate_only_beyond_the_gap_to_the_ulp():
    """The twin's train − held-out gap minus the trained model's (0: the difference is the planted gap exactly) at
    the rule's CLAIM2_DEGENERATE_GAP is not degenerate (the twin stays the reference); one ulp above it is (the null
    ensemble becomes the reference, and with the null's effect planted at 0 the model is "not learned"). Planted:
    `twin_gap - trained_gap > CLAIM2_DEGENERATE_GAP` → `>=` in linrec.analyses.controls.learned_summary fails."""
    from helpers import edge_tables
    from linrec.claims.learned import RULE_2A

    gap = RULE_2A.thresholds.CLAIM2_DEGENERATE_GAP
    tables = edge_tables(lambda g: _learned(twin_gap=g, trained_gap=0.0, null_effect=0.0), gap)
    assert {k: bool(t["twin_degenerate"].iloc[0]) for k, t in tables.items()} == {
        "below": False, "at": False, "above": True}  # fmt: skip
    assert {k: RULE_2A(t).verdict for k, t in tables.items()} == {
        "below": REPRODUCED, "at": REPRODUCED, "above": NOT_REPRODUCED}  # fmt: skip


def test_the_seeds_verdict_needs_every_pair_not_most():
    """Three comparisons of each kind, two of them one way and the third not: "learned" needs every run's distance to
    its step 0 to differ (two of three: inconclusive), "individual to each run" every init-seed pair to differ in
    shape (two of three: seed to seed inconclusive), and what GELU against SwiGLU sets every variant pair (two of
    three: inconclusive); all three: decided. Planted: `all(w == word for w in words)` → `2 * sum(w == word for w in
    words) > len(words)` in linrec.claims.learned._all fails (most → reproduced)."""

    def table(trained=("differ",) * 3, seed_shapes=("agree",) * 3, variant_shapes=("agree",) * 3):
        rows = [_cmp("trained vs init", w, "differ", "agree") for w in trained]
        rows += [_cmp("seed", "agree", "agree", s) for s in seed_shapes]
        return pd.DataFrame(rows + [_cmp("variant", "differ", "agree", s) for s in variant_shapes])

    cases = [
        (table(trained=("differ", "differ", "agree")), "inconclusive", NOT_TESTABLE),
        (table(trained=("differ", "agree", "differ")), "inconclusive", NOT_TESTABLE),
        (table(seed_shapes=("differ", "differ", "agree")), "learned; seed to seed inconclusive", NOT_TESTABLE),
        (table(seed_shapes=("differ",) * 3), "learned, individual to each run", REPRODUCED),
        (table(variant_shapes=("differ", "agree", "differ")), "learned; GELU against SwiGLU inconclusive",
         NOT_TESTABLE),
        (table(variant_shapes=("differ",) * 3), "learned; architecture sets the shape", PARTLY),
        (table(), "learned, the same for both variants", REPRODUCED),
    ]  # fmt: skip
    for t, word, c2 in cases:
        got = seeds_verdict(t)
        assert (got["word"].split("; init seed")[0], got["claim2a"]) == (word, c2)
