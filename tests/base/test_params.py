"""Declared parameters (`linrec.base.params`): one default per field (a list or mapping fresh for each instance),
what each does read back in declaration order, and the type check and its words that the profile's one-line errors
use."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from linrec.base.params import declared, fits, param, type_words


@dataclass(frozen=True)
class Section:
    """A section of a profile, as the studies declare theirs."""

    ranks: list[int] = param([16, 64], "reduced ranks")
    rows: int | None = param(8192, "rows per block (None: all)")
    options: dict = param({}, "anything")


def test_a_mutable_default_is_fresh_for_each_section_and_what_each_does_is_read_back():
    a, b = Section(), Section()
    a.ranks.append(256)
    a.options["x"] = 1
    assert b.ranks == [16, 64] and b.options == {}  # a shared default would carry a's changes
    got = declared(Section)
    assert [(d.name, d.default, d.about) for d in got] == [
        ("ranks", [16, 64], "reduced ranks"),
        ("rows", 8192, "rows per block (None: all)"),
        ("options", {}, "anything"),
    ]
    assert got[1].declaration() == "rows: int | None = 8192"
    assert got[0].where == f"{__name__}.Section"


@pytest.mark.parametrize(
    "value, hint, ok",
    [
        (3, int, True),
        (True, int, False),  # a bool is never a number
        (3, float, True),  # a whole number is a number
        ("3", int, False),
        (None, int | None, True),
        ([1, 2], list[int], True),
        ([1, "a"], list[int], False),
        ([[1, 2]], list[list[int]], True),
        ({}, dict, True),
        ([], dict, False),
    ],
)
def test_fits_reads_yaml_values_as_the_declared_type(value, hint, ok):
    assert fits(value, hint) is ok


def test_a_type_in_words():
    assert type_words(int | None) == "a whole number or null"
    assert type_words(list[str]) == "a list of strings"
    assert type_words(list[list[str]] | None) == "a list of lists or null"
    with pytest.raises(TypeError, match="cannot check type"):
        fits(1, set[int])


def test_a_nested_mapping_is_checked_against_the_fields_it_may_set():
    """`check_settings`, which the profile's `capture:`, `training:` and `heal:` sections go through: unknown keys
    and wrong types are one line naming the key; numbers come back in their field's type."""
    from linrec.base.errors import LinrecError
    from linrec.base.params import check_settings

    @dataclass
    class Fit:
        steps: int = 10
        lr: float = 1e-3
        name: str | None = None

    got = check_settings({"steps": 20.0, "lr": 1}, Fit, "here", "fit setting")
    assert got == {"steps": 20, "lr": 1.0} and type(got["steps"]) is int and type(got["lr"]) is float
    with pytest.raises(LinrecError, match=r"^here: unknown fit setting\(s\) stpes; known: steps, lr \(note\)$"):
        check_settings({"stpes": 1}, Fit, "here", "fit setting", ["steps", "lr"], " (note)")
    with pytest.raises(LinrecError, match=r"^here: unknown fit setting\(s\) name; known: steps, lr$"):
        check_settings({"name": "x"}, Fit, "here", "fit setting", ["steps", "lr"])  # a field it may not set
    with pytest.raises(LinrecError, match=r"^here: steps must be a whole number, got 2\.5; fix that line$"):
        check_settings({"steps": 2.5}, Fit, "here", "fit setting")
    with pytest.raises(LinrecError, match=r"^here: name must be a string or null, got 3"):
        check_settings({"name": 3}, Fit, "here", "fit setting")
    with pytest.raises(LinrecError, match=r"^here must be a mapping of Fit fields, got \[1\]"):
        check_settings([1], Fit, "here", "fit setting")
