"""The answer from the widest evidence (issue 87, item 1): one verdict per claim over every profile that judged it.

A profile that measured fewer models than another with the same analysis adds no evidence (the default measures
SmolLM2 alone, a subset of the full profile), so it never decides; the widest profile (`widest`: the one whose models
include every other candidate's) does. An alternative analysis (another split, more train tokens, the windows'
first position removed, fresh text) is an analyst's choice the verdict must survive: it can lower the widest
profile's verdict, never raise it (`answer`):
- a claim reproduced on the widest profile stays reproduced only if every alternative that judged it reproduces it
  too, else it is partly reproduced (it holds under some analyses, not all);
- a claim partly reproduced there becomes not reproduced only where an alternative that measured every one of its
  models does not reproduce it either; otherwise it stays partly;
- not reproduced and not testable stand as they are (no alternative can raise them).
An alternative judges a claim only where it holds the tables the claim's rule reads (a folder that ran one notebook
is no evidence on the others); which folders are alternatives is the profile's `alternatives`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from linrec.claims.rules import NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED, VERDICTS, joined


@dataclass(frozen=True)
class Analysis:
    """One analysis's verdict on one claim: its `name` (a results folder's, or "without position 0"), the `verdict`
    and the `models` it measured."""

    name: str
    verdict: str
    models: tuple[str, ...]


@dataclass(frozen=True)
class Answer:
    """A claim's answer: its `verdict`, the analysis that `decided` it (the widest profile's) and the alternatives
    that did not confirm it (`unconfirmed`, each named: an alternative confirms with the same verdict or with
    reproduced; where the verdict moved, these are why)."""

    verdict: str
    decided: Analysis
    unconfirmed: tuple[str, ...] = ()

    @property
    def lowered(self) -> bool:
        """Whether an alternative moved the verdict below the widest profile's."""
        return self.verdict != self.decided.verdict


def widest(models: Mapping[str, Iterable[str]]) -> str | None:
    """The candidate (name → models measured) whose models include every other candidate's, the first such in
    `models`' order; None where no candidate does (two profiles each with a model the other lacks)."""
    sets = {name: set(ms) for name, ms in models.items()}
    every = set().union(*sets.values()) if sets else set()
    return next((name for name, s in sets.items() if s == every), None)


def answer(main: Analysis, alternatives: Iterable[Analysis]) -> Answer:
    """The claim's answer from the widest profile's analysis `main`, lowered (never raised) by `alternatives` (the
    rule in the module's docstring)."""
    if main.verdict not in VERDICTS:
        raise ValueError(f"{main.name}: unknown verdict {main.verdict!r}")
    if main.verdict not in (REPRODUCED, PARTLY):
        return Answer(main.verdict, main)
    others = [a for a in alternatives if a.verdict not in (REPRODUCED, main.verdict)]  # those that do not confirm it
    names = tuple(a.name for a in others)
    if main.verdict == REPRODUCED:
        return Answer(PARTLY if others else REPRODUCED, main, names)
    whole = any(a.verdict == NOT_REPRODUCED and set(main.models) <= set(a.models) for a in others)
    return Answer(NOT_REPRODUCED if whole else PARTLY, main, names)


def plain_sentence(answers: Mapping[str, Answer], models: Iterable[str]) -> str:
    """The answer in one plain sentence: on which models, which claims hold, hold in part, do not hold, and cannot
    be decided here."""
    groups = {REPRODUCED: "hold", PARTLY: "hold in part", NOT_REPRODUCED: "do not hold",
              NOT_TESTABLE: "cannot be decided with these data"}  # fmt: skip
    said = []
    for verdict, words in groups.items():
        ids = [k for k, a in answers.items() if a.verdict == verdict]
        if ids:
            one = {"hold": "holds", "do not hold": "does not hold", "hold in part": "holds in part"}.get(words, words)
            said.append(f"claim{'s' if len(ids) > 1 else ''} {joined(ids)} {one if len(ids) == 1 else words}")
    return f"On {joined(list(models))}, " + "; ".join(said) + "."
