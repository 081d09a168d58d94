"""linrec.claims.bands (claim 2b over every cross band, issue 64): each word at its thresholds (equality and both
sides), and the verdict's every outcome reached by planted band tables; the per-band interval itself is
tests/analyses/test_decomposition.py's."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from helpers import decomposition_rows as _dec
from linrec.claims.bands import CLAIM2B_MIN_BAND, band_word, bands_text, covered, lean_word, sign_word
from linrec.claims.learned import RULE_2B, T_2B, verdict_2b
from linrec.claims.rules import NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED

EPS = 1e-9


def test_covered_names_the_bands_a_table_holds():
    """The bands a `band_table` covers, in words (its every band written by tests/analyses/test_decomposition.py)."""
    t = pd.DataFrame({"model": "m", "band": [1, 2, 3]})
    assert covered(t) == "1–3" and covered(t[t["band"] == 1]) == "1"


@pytest.mark.parametrize(
    "lo, hi, word",
    [(EPS, 1, "weights"), (0.0, 1, "undecided"), (-EPS, 1, "undecided"), (-1, -EPS, "inputs"), (-1, 0.0, "undecided"),
     (-1, EPS, "undecided"), (np.nan, 1, None)],
)  # fmt: skip
def test_sign_word_at_zero_and_both_sides(lo, hi, word):
    assert sign_word({"wmi_lo": lo, "wmi_hi": hi}) == word


def _bands(*signs, model="m"):
    """A band table with bands 1, 2, … whose intervals have the signs given: + (above 0), − (below), 0 (across)."""
    iv = {"+": (0.1, 0.5), "-": (-0.5, -0.1), "0": (-0.1, 0.1)}
    return pd.DataFrame([{"model": model, "band": k, "wmi": sum(iv[s]) / 2, "wmi_lo": iv[s][0], "wmi_hi": iv[s][1]}
                         for k, s in enumerate(signs, start=1)])  # fmt: skip


@pytest.mark.parametrize(
    "signs, word",
    [
        ("0++", "weights"),  # band 1 does not decide
        ("-++++", "weights"),
        ("+--", "inputs"),
        ("++0", "undecided"),  # the widest band includes 0: a rule reading band 2 alone would say "weights"
        ("+0+", "undecided"),  # band 2 includes 0: a rule reading the widest band alone would say "weights"
        ("++-", "undecided"),  # the sign changes
        ("+", None),  # no band ≥ 2
    ],
)
def test_a_model_is_decided_only_at_every_band_from_two(signs, word):
    assert CLAIM2B_MIN_BAND == 2
    assert band_word(_bands(*signs)) == word


def test_the_narrowest_deciding_band_is_a_threshold():
    assert band_word(_bands(*"+0+"), min_band=3) == "weights"
    assert band_word(_bands(*"+0+"), min_band=2) == "undecided"
    assert band_word(_bands(*"0++"), min_band=1) == "undecided"
    v = verdict_2b(_dec(), _bands(*"+0+"), t=replace(T_2B, CLAIM2B_MIN_BAND=3))
    assert v.verdict == REPRODUCED
    assert "band ≥ 3" in RULE_2B.says(replace(T_2B, CLAIM2B_MIN_BAND=3))


@pytest.mark.parametrize(
    "models, verdict",
    [
        ({"a": "+++", "b": "+++"}, REPRODUCED),
        ({"a": "+++", "b": "+0+"}, PARTLY),  # an undecided model blocks "reproduced": every model must be decided
        ({"a": "+++", "b": "---"}, PARTLY),  # a model decided the other way blocks "reproduced"
        ({"a": "---", "b": "+0-"}, NOT_REPRODUCED),
        ({"a": "---", "b": "---"}, NOT_REPRODUCED),
        ({"a": "++0", "b": "-0-"}, NOT_TESTABLE),  # none decided
        ({"a": "+", "b": "-"}, NOT_TESTABLE),  # no band ≥ 2
    ],
)
def test_every_outcome_of_the_verdict(models, verdict):
    dec = pd.concat([_dec(m) for m in models], ignore_index=True)
    bands = pd.concat([_bands(*s, model=m) for m, s in models.items()], ignore_index=True)
    v = verdict_2b(dec, bands)
    assert v.verdict == verdict
    assert [e["outcome"] for e in v.evidence] == [band_word(_bands(*s)) for s in models.values()]
    if verdict == NOT_TESTABLE:
        assert ("band 2" in v.reason) if all(len(s) < 2 for s in models.values()) else "undecided" in v.reason


def test_bands_text_lists_the_deciding_bands_and_folds_a_run_of_three():
    """Each band ≥ 2 as itself, but three or more consecutive bands with one sign as one item with their range (the
    full profile's 29 bands were one long list); two alike stay listed, a change of sign starts a new item."""
    t = _bands(*"+0+++-")
    t.loc[t["band"] == 4, ["wmi", "wmi_lo"]] = [0.4, 0.05]
    assert bands_text(t) == (
        "band 2 +0.00 [-0.10, 0.10]; bands 3–5 each above 0 (+0.30 to +0.40, lower bounds from 0.05); "
        "band 6 -0.30 [-0.50, -0.10]"
    )
    assert bands_text(_bands(*"0++")) == "band 2 +0.30 [0.10, 0.50]; band 3 +0.30 [0.10, 0.50]"
    assert bands_text(_bands(*"0---")) == "bands 2–4 each below 0 (-0.30 to -0.30, upper bounds up to -0.10)"
    assert bands_text(_bands(*"+000")) == "bands 2–4 each includes 0 (+0.00 to +0.00, intervals within [-0.10, 0.10])"


@pytest.mark.parametrize(
    "signs, word, vetoed_by",
    [
        ("0++0+", "weights", "band 4"),  # 3 of the 4 bands ≥ 2 above 0, none below: band 4 vetoes the strict word
        ("0+00++", "weights", "bands 3–4"),
        ("0++0", "weights", "band 4"),  # 2 of 3: more than half
        ("0+0", "undecided", ""),  # 1 of 2: exactly half is not a majority
        ("0+00", "undecided", ""),
        ("0-0--", "inputs", "band 3"),
        ("0++-+", "undecided", ""),  # a band below 0: the bands point both ways
        ("0000", "undecided", ""),
        ("+", None, ""),  # no band ≥ 2
    ],
)
def test_a_model_s_word_at_most_bands_names_the_bands_that_veto_it(signs, word, vetoed_by):
    """Issue 87, item 5: a model's sign at more than half of the bands ≥ 2 and the other sign at none is its word at
    most bands, the bands whose interval includes 0 named. Planted: `2 * count > len` as `>=` (exactly half would
    decide) and the opposite-sign check dropped (a band below 0 would be outvoted): each fails a row here."""
    assert lean_word(_bands(*signs)) == (word, vetoed_by)


@pytest.mark.parametrize(
    "models, verdict, said",
    [
        # full profile's pattern: each model decided at most bands, the two the other way round, a third undecided
        (
            {"a": "0+0++", "b": "0-0--", "c": "000"},
            PARTLY,
            "weights in a (band 3 includes 0), inputs in b (band 3 includes 0), c undecided",
        ),
        (
            {"a": "0++0+", "b": "0+00++"},
            PARTLY,  # every word vetoed by a band: at most partly, never reproduced
            "weights in a (band 4 includes 0), weights in b (bands 3–4 include 0)",
        ),
        ({"a": "0-0--", "b": "0000"}, NOT_REPRODUCED, "inputs in a (band 3 includes 0), b undecided"),
        ({"a": "0+0", "b": "0-0"}, NOT_TESTABLE, None),  # half the bands each: no word even at most bands
    ],
)
def test_models_decided_at_most_bands_give_a_verdict_that_says_so_per_model(models, verdict, said):
    """Issue 87, item 5: the full profile's 2b was 'not testable' while SmolLM2 was weights-driven at 27 of 28 bands
    and Gemma-3 inputs-driven at 14 of 16, each vetoed by a band including 0. Where no model is decided at every
    band, each model's word at most bands decides (at most partly), and the reason names every model's word and the
    vetoing bands. Planted: the lean words not read (the first three rows give not testable), and the cap dropped
    (the second row gives reproduced)."""
    dec = pd.concat([_dec(m) for m in models], ignore_index=True)
    bands = pd.concat([_bands(*s, model=m) for m, s in models.items()], ignore_index=True)
    v = verdict_2b(dec, bands)
    assert v.verdict == verdict
    assert [e["outcome"] for e in v.evidence] == ["undecided"] * len(models)
    if said:
        assert v.reason.endswith(f"read at most bands: {said}")


def test_a_strict_decision_is_never_read_at_most_bands():
    """Where some model is decided at every band, the strict tally stands and no lean word is read (a majority of
    bands can only speak where every model is undecided)."""
    dec = pd.concat([_dec(m) for m in "ab"], ignore_index=True)
    bands = pd.concat([_bands(*"+++", model="a"), _bands(*"0-0--", model="b")], ignore_index=True)
    v = verdict_2b(dec, bands)
    assert v.verdict == PARTLY and v.reason == "" and all("lean" not in e for e in v.evidence)


@pytest.mark.parametrize("signs", ["0++0", "0++-", "0+0+", "0--0", "0-+-"])
def test_a_model_is_weights_only_if_every_band_is_not_most(signs):
    """Three deciding bands (2, 3, 4), two of one sign and the third not: undecided, however the third leans; all three
    of one sign decide. Planted: `all(w == words[0] for w in words)` → `2 * sum(w == words[0] for w in words) >
    len(words)` in linrec.claims.bands.band_word fails (most → weights or inputs)."""
    assert band_word(_bands(*signs)) == "undecided"
    assert band_word(_bands(*(signs[:1] + signs[1] * 3))) == {"+": "weights", "-": "inputs"}[signs[1]]
