"""The one convention for shape and level (`linrec.claims.rules`, issue 45): claim 5 overlays only if both the shape
and the level share lie below their thresholds; the seeds experiment's contrasts are judged on shape with the level
named beside; the centred (shape) distance against a hand computation; the refresh that brings stored tables to it.
Every threshold at equality and on both sides, every outcome from a planted table."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from linrec.claims.corpora import corpus_verdicts, overlay_word, verdict_5
from linrec.claims.learned import comparison_words, distance_word, seeds_verdict
from linrec.claims.registry import TABLES
from linrec.claims.rules import (
    CLAIM2_MIN_EFFECT,
    CLAIM5_LEVEL,
    CLAIM5_SHAPE,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    PARTLY,
    REPRODUCED,
    SEEDS_LEVEL_MARGIN,
    SEEDS_SHAPE_MARGIN,
)
from linrec.claims.tables import load_table, save_table

EPS = 1e-9
SMALL, LARGE = (0.01, 0.05), (0.2, 0.3)  # intervals well below and well above 0.1


# ---- claim 5: an overlay needs both ------------------------------------------------------------------------------
def _row(shape, level, model="m", **more):
    return {"model": model, "verdict": "mixed", "shape_lo": shape[0], "shape_hi": shape[1], "level_lo": level[0],
            "level_hi": level[1], **more}  # fmt: skip


@pytest.mark.parametrize(
    "shape, level, word",
    [
        (SMALL, SMALL, "a property of the model"),
        ((0.01, CLAIM5_SHAPE - EPS), SMALL, "a property of the model"),  # the shape just below
        ((0.01, CLAIM5_SHAPE), SMALL, "undecided"),  # the shape's interval reaches its threshold
        ((CLAIM5_SHAPE - EPS, 0.3), SMALL, "undecided"),
        ((CLAIM5_SHAPE, 0.3), SMALL, "shaped by the corpus"),  # at the threshold: at or above
        (SMALL, (0.01, CLAIM5_LEVEL - EPS), "a property of the model"),  # the level just below
        (SMALL, (0.01, CLAIM5_LEVEL), "undecided"),
        (SMALL, (CLAIM5_LEVEL - EPS, 0.3), "undecided"),
        (SMALL, (CLAIM5_LEVEL, 0.3), "shaped by the corpus"),
        (SMALL, (0.243, 0.460), "shaped by the corpus"),  # Gemma-3's level on the committed default run
        (SMALL, (0.040, 0.120), "undecided"),  # SmolLM2's
        (LARGE, LARGE, "shaped by the corpus"),
        ((0.01, 0.2), LARGE, "shaped by the corpus"),  # either at or above decides, the other may straddle
        (SMALL, (np.nan, np.nan), "undecided"),  # a level not measured: never an overlay
        ((np.nan, np.nan), SMALL, "undecided"),
        ((np.nan, np.nan), LARGE, "shaped by the corpus"),  # the level alone at or above suffices
    ],
)
def test_claim5_overlays_only_when_shape_and_level_are_both_small(shape, level, word):
    assert CLAIM5_SHAPE == CLAIM5_LEVEL == 0.1
    assert overlay_word(_row(shape, level)) == word
    expected = {"a property of the model": REPRODUCED, "shaped by the corpus": NOT_REPRODUCED}
    assert verdict_5(pd.DataFrame([_row(shape, level)])).verdict == expected.get(word, NOT_TESTABLE)


def test_claim5_tallies_the_decided_models_and_judges_without_position_0_on_both():
    rows = [_row(SMALL, SMALL, "a"), _row(SMALL, LARGE, "b"), _row(SMALL, (0.05, 0.2), "c")]
    v = verdict_5(pd.DataFrame(rows))
    assert v.verdict == PARTLY and [e["overlay_verdict"] for e in v.evidence] == [
        "a property of the model", "shaped by the corpus", "undecided"]  # fmt: skip
    assert verdict_5(pd.DataFrame(rows[1:])).verdict == NOT_REPRODUCED
    assert verdict_5(pd.DataFrame(rows[2:])).verdict == NOT_TESTABLE
    assert verdict_5(pd.DataFrame(rows[:1])).verdict == REPRODUCED
    ex = {"shape_lo_ex_first": 0.01, "shape_hi_ex_first": 0.05}  # the shape small without position 0, ...
    v = verdict_5(pd.DataFrame([_row(SMALL, SMALL, **ex)]))  # ... the level not measured there (an older table)
    assert v.verdict == REPRODUCED and v.without_first == NOT_TESTABLE
    v = verdict_5(pd.DataFrame([_row(SMALL, SMALL, **ex, level_lo_ex_first=0.01, level_hi_ex_first=0.05)]))
    assert v.without_first == REPRODUCED
    v = verdict_5(pd.DataFrame([_row(SMALL, SMALL, **ex, level_lo_ex_first=0.2, level_hi_ex_first=0.3)]))
    assert v.without_first == NOT_REPRODUCED


def test_corpus_verdicts_writes_the_overlay_word():
    from linrec.analyses.uncertainty import profile_agreement

    t = pd.DataFrame([{"model": "a", "corpus": c, "block": b, "r2_lin": 0.1 * b + k * 0.05, "r2_lo": 0.0, "r2_hi": 1.0}
                      for k, c in enumerate(("wiki", "code")) for b in range(4)])  # fmt: skip
    for level, word in ((SMALL, "a property of the model"), (LARGE, "shaped by the corpus")):
        out = corpus_verdicts(t, profile_agreement(t), shapes=pd.DataFrame([_row(SMALL, level, "a")]))
        assert out.loc[0, "overlay_verdict"] == word and out.loc[0, "shape_hi"] == 0.05
        assert np.isnan(out.loc[0, "level_lo_ex_first"])  # a decomposition without it: NaN, not missing


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
         REPRODUCED),
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
         "changes neither; data order changes the shape", REPRODUCED),
        (_experiment(order=("inconclusive", "agree")), "learned; architecture sets the level, not the shape; init "
         "seed changes neither; data order inconclusive", REPRODUCED),
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


# ---- the centred distance, by hand ---------------------------------------------------------------------------------
A = np.array([0.90, 0.70, 0.50, 0.80])
B = np.array([0.60, 0.45, 0.20, 0.55])  # A shifted down by 0.25, blocks 1 and 2 moved by ∓0.05 and +0.05


def _profiles(runs: dict) -> pd.DataFrame:
    return pd.DataFrame([{"run": run, "step": step, "block": b, "r2_lin": v} for run, steps in runs.items()
                         for step, p in steps.items() for b, v in enumerate(p)])  # fmt: skip


# ---- refresh: the committed tables brought to the convention without models -----------------------------------------
def test_refresh_rewrites_claim5s_word_and_the_seeds_tables(tmp_path: Path):
    from linrec.outputs.refresh import refresh_corpora, refresh_training

    new = ("overlay_verdict", "level_share_ex_first", "level_lo_ex_first", "level_hi_ex_first")
    cols = [c for c in TABLES["corpora_verdict"].columns if c not in new]
    old = pd.DataFrame([{c: 0.0 for c in cols} | _row(SMALL, (0.243, 0.46), "gemma")]).assign(shape_verdict="x")
    old.to_csv(tmp_path / "corpora_verdict.csv", index=False)  # as a former linrec wrote it
    assert refresh_corpora(tmp_path) == ["corpora_verdict"]
    t = load_table("corpora_verdict", tmp_path)
    assert t.loc[0, "overlay_verdict"] == "shaped by the corpus" and np.isnan(t.loc[0, "level_lo_ex_first"])
    assert verdict_5(t).verdict == NOT_REPRODUCED

    prof = _profiles({"g": {0: B, 600: A}, "s": {0: A, 600: B}})
    prof = prof.assign(mlp="gelu", init_seed=0, data_seed=0, tokens_seen=0, r2_lo=0.0, r2_hi=1.0, ppl_test=9.0,
                       train_loss=1.0, n_test_windows=8)  # fmt: skip
    save_table(prof, "training_profiles", tmp_path)
    old = pd.DataFrame([{"kind": "trained vs init", "a": "g", "b": "g step 0", "step": 600, "distance": 0.275,
                         "distance_lo": 0.27, "distance_hi": 0.28, "corr": 1.0, "corr_lo": 1.0, "corr_hi": 1.0,
                         "floor": 0.01, "beyond_noise": True, "within_noise": False, "outcome": "differ"},
                        {"kind": "variant", "a": "g", "b": "s", "step": 600, "distance": 0.275, "distance_lo": 0.27,
                         "distance_hi": 0.28, "corr": 1.0, "corr_lo": 1.0, "corr_hi": 1.0, "floor": 0.01,
                         "beyond_noise": True, "within_noise": False, "outcome": "differ"}])  # fmt: skip
    old.to_csv(tmp_path / "training_comparisons.csv", index=False)
    old[old["kind"] == "variant"].drop(columns="outcome").to_csv(tmp_path / "training_distance_curve.csv", index=False)
    assert refresh_training(tmp_path) == ["training_comparisons", "training_distance_curve", "training_verdict"]
    comp = load_table("training_comparisons", tmp_path)
    assert comp["level"].tolist() == pytest.approx([0.275, 0.275]) and comp["shape"].tolist() == pytest.approx(
        [0.025] * 2
    )
    assert load_table("training_distance_curve", tmp_path)["shape"].tolist() == pytest.approx([0.025])
    assert load_table("training_verdict", tmp_path).loc[0, "word"] == (
        "learned; level and shape not measured apart (rerun notebook 08)")  # fmt: skip
    measured = comp.assign(level_lo=0.25, level_hi=0.3, level_floor=0.01, shape_lo=0.01, shape_hi=0.04,
                           shape_floor=0.01)  # fmt: skip
    save_table(measured, "training_comparisons", tmp_path)  # as the next notebook 08 writes it
    refresh_training(tmp_path)
    assert load_table("training_comparisons", tmp_path)["shape_hi"].tolist() == [0.04, 0.04]  # kept, not refreshed
    verdict = load_table("training_verdict", tmp_path).iloc[0]  # no seed pairs here: nothing decided past learned
    assert verdict["word"] == "learned; seed to seed inconclusive"
    assert verdict["variant_words"] == "differ (level differ, shape agree)"
