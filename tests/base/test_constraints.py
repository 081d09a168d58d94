"""linrec.base.constraints: each declared rule against the values a caller gives, the normalised value or the one
line that names the argument, and the exception types (a LinrecError that is also a TypeError or ValueError)."""

import numpy as np
import pytest

from linrec.base.constraints import Blocks, Boolean, Integer, Optional, Options, OptionsList, Real, Text, validate
from linrec.base.errors import LinrecError, LinrecTypeError, LinrecValueError


def _refused(constraint, name, value, kind, *needles):
    with pytest.raises(kind) as caught:
        constraint.check(name, value)
    message = str(caught.value)
    assert isinstance(caught.value, LinrecError) and "\n" not in message and message.startswith(name), message
    for n in needles:
        assert n in message, message
    return message


def test_integral_floats_are_the_whole_number_they_name():
    """`tokens=2e4`, `4096.0`, `1e12` and numpy's integers are read as ints (issue 89: they were a bare TypeError from
    a slice deep in the windows); the int, not the float, comes back."""
    rule = Integer(low=1)
    cases = ((2e4, 20_000), (4096.0, 4096), (1e12, 10**12), (np.int64(7), 7), (np.float32(64.0), 64), (5, 5))
    for given, want in cases:
        got = rule.check("tokens", given)
        assert got == want and type(got) is int, (given, got)


def test_fractions_bools_strings_and_non_finite_numbers_are_refused_by_name():
    rule = Integer(low=1, example=20_480)
    _refused(rule, "tokens", 2.5, LinrecValueError, "tokens=2.5 is not a whole number", "tokens=20480")
    _refused(rule, "tokens", float("inf"), LinrecValueError, "not a whole number")
    _refused(rule, "tokens", float("nan"), LinrecValueError, "not a whole number")
    _refused(rule, "tokens", True, LinrecTypeError, "is a bool, not a number")
    _refused(rule, "tokens", np.True_, LinrecTypeError, "is a bool, not a number")
    _refused(rule, "tokens", "4096", LinrecTypeError, "is a str, not a number")
    _refused(rule, "tokens", None, LinrecTypeError, "NoneType")
    _refused(Integer(low=1), "batch_size", 0, LinrecValueError, "batch_size=0 is out of range", "≥ 1")
    _refused(Integer(low=1), "batch_size", -2, LinrecValueError, "batch_size=-2 is out of range")
    _refused(Integer(low=2, high=4), "n", 5, LinrecValueError, "from 2 to 4")


def test_the_errors_are_value_and_type_errors_too():
    """Code that catches ValueError or TypeError catches them; code that catches LinrecError still does (issue 89:
    every error was a plain LinrecError(RuntimeError))."""
    with pytest.raises(ValueError):
        Integer(low=1).check("tokens", 0)
    with pytest.raises(TypeError):
        Integer().check("tokens", True)
    assert issubclass(LinrecValueError, LinrecError) and issubclass(LinrecTypeError, LinrecError)
    assert issubclass(LinrecError, RuntimeError)  # as before: `except RuntimeError` keeps catching every one


def test_reals_options_booleans_text_and_optional():
    assert Real(0, 1).check("test_frac", 0.25) == 0.25 and Real(0, 1).check("test_frac", np.float32(0.5)) == 0.5
    _refused(Real(0, 1, example=0.2), "test_frac", 1.0, LinrecValueError, "out of range", "test_frac=0.2")
    _refused(Real(0, 1), "test_frac", 0, LinrecValueError, "out of range")
    _refused(Real(0, 1), "test_frac", False, LinrecTypeError, "bool")
    _refused(Real(0, 1), "test_frac", float("nan"), LinrecValueError, "out of range")
    assert Options(("a", "b")).check("product", "b") == "b"
    said = _refused(Options(("float64", "float32")), "product", "float16", LinrecValueError, "'float64', 'float32'")
    assert said.startswith("product='float16' is not one of 'float64', 'float32';"), said
    _refused(Options(("a",)), "product", 3, LinrecTypeError, "int")
    assert Boolean().check("progress", np.bool_(False)) is False
    _refused(Boolean(), "progress", 0, LinrecTypeError, "progress=True or progress=False")
    _refused(Text(), "name", "  ", LinrecValueError, "empty")
    assert Optional(Integer(low=2)).check("test_windows", None) is None
    _refused(Optional(Integer(low=2)), "test_windows", 1, LinrecValueError, "test_windows=1 is out of range")
    assert OptionsList(("map", "ffn")).check("first", ["map", "ffn"]) == ["map", "ffn"]
    _refused(OptionsList(("map", "ffn")), "first", ["map", "map"], LinrecValueError, "twice")
    _refused(OptionsList(("map", "ffn")), "first", [], LinrecValueError, "names nothing")
    _refused(OptionsList(("map", "ffn")), "first", "MAP", LinrecValueError, "not one of")


def test_blocks_are_distinct_ints_and_nothing_else():
    """Issue 89: `blocks=[1.7]` silently meant block 1, `blocks=[0, 0]` evaluated block 0 twice, `blocks=[]` ran the
    whole pass for a 0×0 table, `blocks=["12"]` was block 12. Each is refused by name now; ints, numpy's ints and one
    int are taken."""
    rule = Blocks()
    assert rule.check("blocks", None) is None
    assert rule.check("blocks", 3) == [3] and rule.check("blocks", (0, np.int32(2))) == [0, 2]
    assert rule.check("blocks", np.arange(2)) == [0, 1]
    _refused(rule, "blocks", [1.7], LinrecTypeError, "1.7 (float)")
    _refused(rule, "blocks", [1.0], LinrecTypeError, "1.0 (float)")  # an index, not a number that happens to be whole
    _refused(rule, "blocks", ["12"], LinrecTypeError, "'12' (str)")
    _refused(rule, "blocks", "12", LinrecTypeError, "is a str")
    _refused(rule, "blocks", [True], LinrecTypeError, "bool")
    _refused(rule, "blocks", [0, 0], LinrecValueError, "[0] twice")
    _refused(rule, "blocks", [], LinrecValueError, "names no block", "blocks=None")
    _refused(rule, "blocks", [-1], LinrecValueError, "negative")


def test_validate_checks_in_order_and_passes_the_rest_through():
    rules = {"seq_len": Integer(low=2), "tokens": Integer(low=1)}
    assert validate(rules, {"seq_len": 64.0, "tokens": 2e3, "other": "x"}) == {"seq_len": 64, "tokens": 2000,
                                                                                 "other": "x"}  # fmt: skip
    with pytest.raises(LinrecValueError, match=r"^seq_len=1\b"):
        validate(rules, {"tokens": 0, "seq_len": 1})  # the rules' order: seq_len is named first


def test_closed_ends_and_their_words():
    """scikit-learn's `Interval(Real, 0, None, closed="left")`: an end named in `closed` is allowed; infinite and NaN
    numbers never are (a budget of inf or a NaN learning rate would act on everything or nothing)."""
    assert Real(0, None, "left").check("budget_ppl", 0) == 0.0 and Real(0, 1, "both").check("route", 1) == 1.0
    _refused(Real(0, None), "lr", 0.0, LinrecValueError, "lr=0.0 is out of range", "a finite number > 0")
    _refused(Real(0, None, "left"), "max_size", float("inf"), LinrecValueError, "a finite number ≥ 0")
    _refused(Real(0, 1, "both"), "route", 1.5, LinrecValueError, "a number from 0 to 1;")
    assert Real(0, 1).describe() == "a number from 0 to 1 (both excluded)"
    assert Real(0, 1, "left").describe() == "a number from 0 to 1 (1 excluded)"


def test_a_word_typed_on_the_command_line_is_parsed_by_its_rule_and_said_in_flags():
    """`read` parses as the rule's kind ("2e4" a whole number, "0,3" block numbers, "5120,20480" a list) and checks;
    `flag_words` says the message as the command line writes it, the inverse of `python_words`."""
    from linrec.base.constraints import Many, flag_words, read
    from linrec.base.voice import python_words

    assert read(Integer(low=1), "tokens", "2e4") == 20_000 and read(Integer(low=1), "tokens", "20_480") == 20_480
    assert read(Blocks(), "blocks", "3, 0") == [3, 0] and read(Many(Integer(low=1)), "t", "5,6") == (5, 6)
    assert read(Optional(Real(0, 1, "both")), "route", "0.5") == 0.5 and read(Options(("a", "b")), "o", "b") == "b"
    said = _refused_read(Integer(low=1, example=20_480), "tokens", "lots", LinrecTypeError, "not a number")
    assert (
        flag_words(said, "tokens", "--tokens")
        == "--tokens lots is not a number; pass a whole number, e.g. --tokens 20480"
    )
    said = _refused_read(Blocks(), "blocks", "0,0", LinrecValueError, "twice")
    assert flag_words(said, "blocks", "--blocks") == "--blocks 0,0 names block(s) [0] twice; name each block once"
    _refused_read(Blocks(), "blocks", "-1", LinrecValueError, "separated by commas")
    _refused_read(Integer(low=1), "tokens", "2.5", LinrecValueError, "not a whole number")
    said = _refused_read(Options(("auto", "yes")), "bos", "x", LinrecValueError, "not one of")
    assert flag_words(said, "bos", "--bos") == "--bos x is not one of 'auto', 'yes'; e.g. --bos auto"
    assert flag_words(said, "bos", "bos") == "x is not one of 'auto', 'yes'; e.g. auto"  # a positional: the value
    assert python_words(flag_words("seq_len=1 is out of range: seq_len must be ≥ 2", "seq_len", "--seq-len")) == (
        "seq_len=1 is out of range: seq_len must be ≥ 2"
    )
    assert flag_words("sample_rows=3; sample=2", "sample", "--sample") == "sample_rows=3; --sample 2"  # a whole name


def test_blocks_below_a_models_count():
    """`Blocks(below=n)`: block numbers of a model of n blocks (the rule `linrec.swap` and `linrec swap --blocks`
    check against the model); a one-block model's example names block 0 alone (not [0, 0], which the rule refuses).
    Planted: `b > below` (the last block + 1 let through) fails."""
    assert Blocks(below=4).check("blocks", [3, 0]) == [3, 0] and Blocks(below=4).check("blocks", None) is None
    with pytest.raises(LinrecValueError) as said:
        Blocks(below=4).check("blocks", [0, 4, 9])
    assert str(said.value) == "blocks=[0, 4, 9]: this model's last block is 3 (no 4, 9); e.g. blocks=[0, 3]"
    with pytest.raises(LinrecValueError) as said:
        Blocks(below=1).check("blocks", 1)
    assert str(said.value) == "blocks=[1]: this model's last block is 0 (no 1); e.g. blocks=[0]"


def _refused_read(constraint, name, text, kind, needle) -> str:
    from linrec.base.constraints import read

    with pytest.raises(kind, match=needle) as caught:
        read(constraint, name, text)
    return str(caught.value)
