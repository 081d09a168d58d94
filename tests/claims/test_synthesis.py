"""linrec.claims.synthesis: the answer from the widest evidence, which alternative analyses can lower and never raise
(issue 87, item 1): every outcome reached on planted verdicts, and the widest profile chosen by the models measured."""

import pytest

from linrec.claims.rules import NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED, VERDICTS
from linrec.claims.synthesis import Analysis, answer, plain_sentence, widest

BOTH = ("smollm2-135m", "gemma3-270m")
ONE = ("smollm2-135m",)


def _main(verdict):
    return Analysis("full", verdict, BOTH)


def test_the_widest_profile_is_the_one_that_measured_every_model():
    """The default (SmolLM2 alone) is a subset of the full profile and never decides; two profiles each with a model
    the other lacks leave no widest one. Planted: the first candidate taken (the default would decide)."""
    assert widest({"default": ONE, "full": BOTH, "documents": ONE}) == "full"
    assert widest({"full": BOTH, "curve": BOTH}) == "full"  # equal: the first
    assert widest({"a": ("x",), "b": ("y",)}) is None
    assert widest({}) is None


@pytest.mark.parametrize(
    "main, alternatives, verdict, unconfirmed",
    [
        (REPRODUCED, [], REPRODUCED, ()),
        (REPRODUCED, [("documents", REPRODUCED, ONE)], REPRODUCED, ()),
        (REPRODUCED, [("documents", PARTLY, ONE)], PARTLY, ("documents",)),
        (REPRODUCED, [("documents", NOT_TESTABLE, ONE)], PARTLY, ("documents",)),  # an analysis that cannot confirm
        (REPRODUCED, [("documents", NOT_REPRODUCED, BOTH)], PARTLY, ("documents",)),
        (PARTLY, [("documents", PARTLY, ONE)], PARTLY, ()),  # the same verdict confirms it
        (PARTLY, [("documents", REPRODUCED, ONE)], PARTLY, ()),  # never raised
        (PARTLY, [("documents", NOT_TESTABLE, ONE)], PARTLY, ("documents",)),
        (PARTLY, [("documents", NOT_REPRODUCED, ONE)], PARTLY, ("documents",)),  # one model of two: still in part
        (PARTLY, [("documents", NOT_REPRODUCED, BOTH)], NOT_REPRODUCED, ("documents",)),  # every model: lowered
        (NOT_REPRODUCED, [("documents", REPRODUCED, BOTH)], NOT_REPRODUCED, ()),  # never raised
        (NOT_TESTABLE, [("documents", REPRODUCED, BOTH)], NOT_TESTABLE, ()),
        (REPRODUCED, [("documents", REPRODUCED, ONE), ("without position 0", NOT_TESTABLE, BOTH)], PARTLY,
         ("without position 0",)),
    ],
)  # fmt: skip
def test_an_alternative_analysis_can_lower_a_verdict_and_never_raise_it(main, alternatives, verdict, unconfirmed):
    """Every outcome of the rule on planted verdicts. Planted: an alternative's verdict taken when higher (the 'never
    raised' rows fail), 'partly' lowered by a one-model alternative (the one-of-two row fails), a not testable
    alternative ignored (the reproduced row with it fails)."""
    a = answer(_main(main), [Analysis(*x) for x in alternatives])
    assert (a.verdict, a.unconfirmed) == (verdict, unconfirmed)
    assert a.decided.name == "full" and a.lowered == (verdict != main)
    assert a.verdict in VERDICTS


def test_the_subset_says_reproduced_and_the_widest_evidence_partly():
    """The issue's case: the default (SmolLM2 alone) reproduces claim 1, the full profile (both models) reproduces it
    in part; the answer is the widest's, partly, whatever the subset says."""
    models = {"default": ONE, "full": BOTH}
    verdicts = {"default": REPRODUCED, "full": PARTLY}
    main = widest(models)
    a = answer(Analysis(main, verdicts[main], models[main]), [])
    assert (main, a.verdict) == ("full", PARTLY)


def test_the_plain_sentence_names_the_models_and_each_group():
    answers = {k: answer(_main(v), []) for k, v in (("1", PARTLY), ("3", NOT_TESTABLE), ("4", REPRODUCED),
                                                    ("7a", REPRODUCED), ("6b", NOT_REPRODUCED))}  # fmt: skip
    assert plain_sentence(answers, BOTH) == (
        "On smollm2-135m and gemma3-270m, claims 4 and 7a hold; claim 1 holds in part; claim 6b does not hold; "
        "claim 3 cannot be decided with these data."
    )


def test_an_unknown_verdict_is_refused():
    with pytest.raises(ValueError, match="unknown verdict"):
        answer(_main("mostly"), [])
