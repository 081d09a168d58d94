"""linrec.claims.corpora (claim 5): the corpus word at its thresholds, the depth ratio by hand, and the one
convention for shape and level (issue 45): claim 5 overlays only if both the shape and the level share lie below
their thresholds, tallied over the decided models and judged without position 0 on both."""

import numpy as np
import pandas as pd
import pytest

from linrec.claims.corpora import corpus_depth_ratio, corpus_verdicts, corpus_word, overlay_word, verdict_5
from linrec.claims.rules import (
    CLAIM5_LEVEL,
    CLAIM5_SHAPE,
    CORPUS_MODEL_RATIO,
    CORPUS_MODEL_RHO,
    CORPUS_SHAPED_RATIO,
    CORPUS_SHAPED_RHO,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    PARTLY,
    REPRODUCED,
)

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


def test_claim5_counts_every_model_and_judges_without_position_0_on_both():
    rows = [_row(SMALL, SMALL, "a"), _row(SMALL, LARGE, "b"), _row(SMALL, (0.05, 0.2), "c")]
    v = verdict_5(pd.DataFrame(rows))
    assert v.verdict == PARTLY and [e["overlay_verdict"] for e in v.evidence] == [
        "a property of the model", "shaped by the corpus", "undecided"]  # fmt: skip
    assert verdict_5(pd.DataFrame(rows[1:])).verdict == NOT_REPRODUCED
    assert verdict_5(pd.DataFrame(rows[2:])).verdict == NOT_TESTABLE
    assert verdict_5(pd.DataFrame(rows[:1])).verdict == REPRODUCED
    # every model counts: an undecided one beside one that overlays is partly, not reproduced (issue 64)
    assert verdict_5(pd.DataFrame([rows[0], rows[2]])).verdict == PARTLY
    ex = {"shape_lo_ex_first": 0.01, "shape_hi_ex_first": 0.05}  # the shape small without position 0, ...
    v = verdict_5(pd.DataFrame([_row(SMALL, SMALL, **ex)]))  # ... the level not measured there (an older table)
    assert v.verdict == REPRODUCED and v.without_first == NOT_TESTABLE
    v = verdict_5(pd.DataFrame([_row(SMALL, SMALL, **ex, level_lo_ex_first=0.01, level_hi_ex_first=0.05)]))
    assert v.without_first == REPRODUCED
    v = verdict_5(pd.DataFrame([_row(SMALL, SMALL, **ex, level_lo_ex_first=0.2, level_hi_ex_first=0.3)]))
    assert v.without_first == NOT_REPRODUCED
    undecided = {**ex, "level_lo_ex_first": 0.05, "level_hi_ex_first": 0.2}  # straddles without position 0
    v = verdict_5(pd.DataFrame([_row(SMALL, SMALL, "a", **ex, level_lo_ex_first=0.01, level_hi_ex_first=0.05),
                                _row(SMALL, SMALL, "b", **undecided)]))  # fmt: skip
    assert v.verdict == REPRODUCED and v.without_first == PARTLY


def test_corpus_verdicts_writes_the_overlay_word():
    from linrec.analyses.uncertainty import profile_agreement

    t = pd.DataFrame([{"model": "a", "corpus": c, "block": b, "r2_lin": 0.1 * b + k * 0.05, "r2_lo": 0.0, "r2_hi": 1.0}
                      for k, c in enumerate(("wiki", "code")) for b in range(4)])  # fmt: skip
    for level, word in ((SMALL, "a property of the model"), (LARGE, "shaped by the corpus")):
        out = corpus_verdicts(t, profile_agreement(t), shapes=pd.DataFrame([_row(SMALL, level, "a")]))
        assert out.loc[0, "overlay_verdict"] == word and out.loc[0, "shape_hi"] == 0.05
        assert np.isnan(out.loc[0, "level_lo_ex_first"])  # a decomposition without it: NaN, not missing


# ---- claim 5: corpora ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "rho, ratio, word",
    [
        (CORPUS_MODEL_RHO, CORPUS_MODEL_RATIO - EPS, "a property of the model"),
        (CORPUS_MODEL_RHO - EPS, 0.1, "mixed"),
        (0.9, CORPUS_MODEL_RATIO, "mixed"),
        (CORPUS_SHAPED_RHO, 0.9, "mixed"),
        (CORPUS_SHAPED_RHO - EPS, 0.1, "shaped by the corpus"),
        (0.9, CORPUS_SHAPED_RATIO, "shaped by the corpus"),
        (0.9, CORPUS_SHAPED_RATIO - EPS, "mixed"),
    ],
)
def test_corpus_word_thresholds(rho, ratio, word):
    assert corpus_word(rho, ratio) == word


def test_corpus_depth_ratio_hand_computed():
    wide = pd.DataFrame({"wiki": [0.1, 0.5, 0.9], "code": [0.3, 0.5, 0.7]})
    corpus_sd = np.mean([0.1, 0.0, 0.1])  # population std of each row's two values
    depth_sd = np.std([0.2, 0.5, 0.8])
    assert corpus_depth_ratio(wide) == pytest.approx(corpus_sd / depth_sd)


def test_corpus_verdicts_and_claim5():
    from linrec.analyses.uncertainty import profile_agreement

    rows = []
    for corpus, shift in (("wiki", 0.0), ("web", 0.01), ("code", -0.01)):
        for b, r in enumerate([0.2, 0.8, 0.4, 0.9, 0.3]):
            rows.append({"model": "m", "corpus": corpus, "block": b, "r2_lin": r + shift * (b % 2), "r2_lo": r - 0.05,
                         "r2_hi": r + 0.05})  # fmt: skip
    t = pd.DataFrame(rows)
    v = corpus_verdicts(t, profile_agreement(t), ["wiki", "web", "code"]).iloc[0]
    assert v["verdict"] == "a property of the model" and v["spearman_min"] == pytest.approx(1.0)
    assert v["n_ci_compared"] == 15 and v["n_ci_disjoint"] == 0 and v["ci_width_median"] == pytest.approx(0.1)
    assert verdict_5(pd.DataFrame([v])).verdict == REPRODUCED
    two = pd.DataFrame([v.to_dict(), {**v.to_dict(), "model": "n", "verdict": "mixed"}])
    assert verdict_5(two).verdict == PARTLY
    assert verdict_5(two.assign(verdict="shaped by the corpus")).verdict == NOT_REPRODUCED
