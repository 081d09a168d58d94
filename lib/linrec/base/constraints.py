"""Declared argument constraints: what each argument of a Python entry point may be, written once beside the function
(`linrec.api`'s `CONSTRAINTS`), and checked in one place (`validate`) before any work starts.

A constraint checks one value and returns it normalised (an integral float as the int it names, a list of blocks as
a list of ints), or raises one line naming the argument, what it got and the fix: `LinrecTypeError` for a value of
the wrong kind (a bool or a string for a number), `LinrecValueError` for one of the right kind out of range. Both are
`LinrecError`s, and also a TypeError or ValueError for code that catches those.

The rules, decided here once for every number:

- a whole number (`Integer`) is an int or anything `operator.index` takes (numpy's integers, a 0-d integer tensor),
  or a float that names a whole number (`tokens=2e4`, `seq_len=64.0`: read as 20000 and 64); a float with a fraction
  (`2.5`), an infinite or NaN one, a bool (`True` is not a count) and a string (`"64"`) are refused by name;
- a real number (`Real`) is an int or a float, finite, never a bool;
- `Blocks` takes block numbers only: ints (not bools, not floats, not `1.0`, not strings), none twice, at least one,
  each one of the model's where its block count is given (`below`); None means every block.

The command line reads the same rules (`linrec.app.cli` builds its options from the declarations, `linrec.base.params`):
`read(constraint, name, text)` is a word typed there, parsed by the constraint (`parse`: "2e4" is a number, "0,3" block
numbers) and checked, and `flag_words` says its message in the command line's words (`--tokens 0`, not `tokens=0`),
so both speak one rule.

No torch here: `base` is the lowest layer, and a 0-d tensor is taken through `operator.index` / `float` alone.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from linrec.base.errors import LinrecTypeError, LinrecValueError


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class Constraint:
    """One argument's rule: `check(name, value)` returns the value normalised or raises one line naming `name`."""

    def check(self, name: str, value):  # pragma: no cover - every constraint defines it
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover
        raise NotImplementedError

    def parse(self, name: str, text: str):
        """A word typed on the command line as the value `check` takes: here the text itself."""
        return text


@dataclass(frozen=True)
class Integer(Constraint):
    """A whole number in [low, high] (either end None: open); an integral float is taken as its int."""

    low: int | None = None
    high: int | None = None
    example: int | None = None  # the fix's example value

    def check(self, name: str, value):
        if _is_bool(value):
            raise LinrecTypeError(f"{name}={value!r} is a bool, not a number; pass a whole number, "
                                  f"{self._example(name)}")  # fmt: skip
        try:
            number = operator.index(value)
        except TypeError:
            number = self._from_float(name, value)
        if (self.low is not None and number < self.low) or (self.high is not None and number > self.high):
            raise LinrecValueError(f"{name}={number} is out of range: {name} must be {self.describe()}; "
                                   f"{self._example(name)}")  # fmt: skip
        return int(number)

    def _from_float(self, name: str, value) -> int:
        if isinstance(value, (str, bytes)) or not hasattr(value, "__float__"):
            raise LinrecTypeError(f"{name}={_shown(value)} is a {type(value).__name__}, not a number; pass a whole "
                                  f"number, {self._example(name)}")  # fmt: skip
        number = float(value)
        if not math.isfinite(number) or not number.is_integer():
            raise LinrecValueError(f"{name}={_shown(value)} is not a whole number; pass one, {self._example(name)}")
        return int(number)

    def parse(self, name: str, text: str):
        try:
            return int(text)
        except ValueError:
            return _number(name, text, f"a whole number, {self._example(name)}")  # "2e4"; "2.5" is refused by check

    def describe(self) -> str:
        if self.low is not None and self.high is not None:
            return f"a whole number from {self.low} to {self.high}"
        if self.low is not None:
            return f"a whole number ≥ {self.low}"
        if self.high is not None:
            return f"a whole number ≤ {self.high}"
        return "a whole number"

    def _example(self, name: str) -> str:
        value = self.example if self.example is not None else (self.low if self.low is not None else 0)
        return f"e.g. {name}={value}"


@dataclass(frozen=True)
class Real(Constraint):
    """A finite real number between `low` and `high` (None: unbounded), each end excluded unless `closed` names it
    ("left", "right", "both"; "neither": scikit-learn's `Interval`)."""

    low: float | None = None
    high: float | None = None
    closed: str = "neither"
    example: float | None = None

    def check(self, name: str, value):
        example = f"e.g. {name}={self.example}" if self.example is not None else "a number"
        if _is_bool(value) or isinstance(value, (str, bytes)) or not hasattr(value, "__float__"):
            raise LinrecTypeError(f"{name}={_shown(value)} is a {type(value).__name__}, not a number; pass {example}")
        number = float(value)
        left, right = self.closed in ("left", "both"), self.closed in ("right", "both")
        above = self.low is None or number > self.low or (left and number == self.low)
        below = self.high is None or number < self.high or (right and number == self.high)
        if not (math.isfinite(number) and above and below):
            raise LinrecValueError(f"{name}={_shown(value)} is out of range: {name} must be {self.describe()}; "
                                   f"pass {example}")  # fmt: skip
        return number

    def parse(self, name: str, text: str):
        example = f"e.g. {name}={self.example}" if self.example is not None else "a number"
        return _number(name, text, example)

    def describe(self) -> str:
        lo, hi, left, right = self.low, self.high, self.closed in ("left", "both"), self.closed in ("right", "both")
        if lo is not None and hi is not None:
            ends = {(True, True): "", (False, False): " (both excluded)", (True, False): f" ({hi:g} excluded)",
                    (False, True): f" ({lo:g} excluded)"}[left, right]  # fmt: skip
            return f"a number from {lo:g} to {hi:g}{ends}"
        if lo is not None:
            return f"a finite number {'≥' if left else '>'} {lo:g}"
        if hi is not None:
            return f"a finite number {'≤' if right else '<'} {hi:g}"
        return "a finite number"


@dataclass(frozen=True)
class Options(Constraint):
    """One of `values` (strings)."""

    values: tuple[str, ...]

    def check(self, name: str, value):
        if not isinstance(value, str):
            raise LinrecTypeError(f"{name}={_shown(value)} is a {type(value).__name__}; {name} must be "
                                  f"{self.describe()}")  # fmt: skip
        if value not in self.values:
            raise LinrecValueError(f"{name}={value!r} is not {self.describe()}; e.g. {name}={self.values[0]!r}")
        return value

    def describe(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)


@dataclass(frozen=True)
class OptionsList(Constraint):
    """One of `values`, or a non-empty list of them, none twice (returned as given: a string or a list)."""

    values: tuple[str, ...]

    def check(self, name: str, value):
        if isinstance(value, str):
            return Options(self.values).check(name, value)
        if not isinstance(value, Iterable) or isinstance(value, (bytes, Mapping)):
            raise LinrecTypeError(f"{name}={_shown(value)} is a {type(value).__name__}; {name} must be "
                                  f"{self.describe()}")  # fmt: skip
        items = [Options(self.values).check(name, v) for v in value]
        if not items:
            raise LinrecValueError(f"{name}=[] names nothing; pass {self.describe()}")
        if len(set(items)) < len(items):
            raise LinrecValueError(f"{name}={items!r} names one twice; name each once")
        return items

    def describe(self) -> str:
        return f"one of {', '.join(repr(v) for v in self.values)} or a list of them"


@dataclass(frozen=True)
class Boolean(Constraint):
    """True or False (numpy's bool too); 0, 1 and strings refused."""

    def check(self, name: str, value):
        if _is_bool(value):
            return bool(value)
        raise LinrecTypeError(f"{name}={_shown(value)} is a {type(value).__name__}; pass {name}=True or {name}=False")

    def describe(self) -> str:
        return "True or False"


@dataclass(frozen=True)
class Text(Constraint):
    """A non-empty string."""

    def check(self, name: str, value):
        if not isinstance(value, str):
            raise LinrecTypeError(f"{name}={_shown(value)} is a {type(value).__name__}; pass a string")
        if not value.strip():
            raise LinrecValueError(f"{name} is empty; pass a non-empty string")
        return value

    def describe(self) -> str:
        return "a string"


@dataclass(frozen=True)
class Optional(Constraint):
    """None, or what `inner` takes."""

    inner: Constraint

    def check(self, name: str, value):
        return None if value is None else self.inner.check(name, value)

    def parse(self, name: str, text: str):
        return self.inner.parse(name, text)

    def describe(self) -> str:
        return f"None or {self.inner.describe()}"


@dataclass(frozen=True)
class Blocks(Constraint):
    """Block numbers: an int, or a non-empty list of distinct ints ≥ 0 (None: every block), each below `below` where
    it is given (a model's block count). Floats (even `1.0`), bools and strings are refused: a block number is an
    index, and `1.7` is not one."""

    below: int | None = None

    def check(self, name: str, value):
        if value is None:
            return None
        many = not _is_index(value)
        if many and (isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable)):
            raise LinrecTypeError(f"{name}={_shown(value)} is a {type(value).__name__}; pass block numbers, "
                                  f"e.g. {name}=[0, 3]")  # fmt: skip
        items = list(value) if many else [value]
        odd = next((b for b in items if not _is_index(b)), None)
        if odd is not None:
            raise LinrecTypeError(f"{name} must hold block numbers (ints), and one is {_shown(odd)} "
                                  f"({type(odd).__name__}); e.g. {name}=[0, 3]")  # fmt: skip
        if not items:
            raise LinrecValueError(f"{name}=[] names no block; name at least one, e.g. {name}=[0], or pass "
                                   f"{name}=None for every block")  # fmt: skip
        numbers = [operator.index(b) for b in items]
        negative = [b for b in numbers if b < 0]
        if negative:
            raise LinrecValueError(f"{name} {negative} are negative; blocks count from 0, e.g. {name}=[0, 3]")
        twice = sorted({b for b in numbers if numbers.count(b) > 1})
        if twice:
            raise LinrecValueError(f"{name}={numbers} names block(s) {twice} twice; name each block once")
        beyond = [b for b in numbers if self.below is not None and b >= self.below]
        if beyond:
            last, beyond = self.below - 1, ", ".join(map(str, beyond))
            raise LinrecValueError(f"{name}={numbers}: this model's last block is {last} (no {beyond}); e.g. "
                                   f"{name}={[0, last] if last else [0]}")  # fmt: skip
        return numbers

    def parse(self, name: str, text: str):
        parts = text.replace(" ", "").split(",")
        if not text.strip() or not all(p.isdigit() for p in parts):
            raise LinrecValueError(f"{name}={text!r} is not block numbers (0, 1, …) separated by commas; e.g. "
                                   f"{name}=[0, 3]")  # fmt: skip
        return [int(p) for p in parts]

    def describe(self) -> str:
        return "block numbers (ints, each once)"


@dataclass(frozen=True)
class Many(Constraint):
    """A non-empty list of what `inner` takes (returned as a tuple); on the command line, separated by commas."""

    inner: Constraint

    def check(self, name: str, value):
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
            raise LinrecTypeError(f"{name}={_shown(value)} is a {type(value).__name__}; pass a list of "
                                  f"{self.inner.describe()}s")  # fmt: skip
        items = tuple(self.inner.check(name, v) for v in value)
        if not items:
            raise LinrecValueError(f"{name}=[] names nothing; pass at least one")
        return items

    def parse(self, name: str, text: str):
        return [self.inner.parse(name, t) for t in text.split(",")]

    def describe(self) -> str:
        return f"a list of {self.inner.describe()}s"


def _is_index(value) -> bool:
    """Whether `value` is a whole number given as one (an int, numpy integer, 0-d integer tensor), not a bool or a
    float."""
    if _is_bool(value):
        return False
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def _is_bool(value) -> bool:
    """Python's bool or numpy's (`numpy.bool_`, which is no int subclass)."""
    return isinstance(value, bool) or type(value).__name__ in ("bool_", "bool")


def _number(name: str, text: str, example: str) -> float:
    """A command line's word as a float ("2e4", "nan" and "inf" too: `check` refuses what it must)."""
    try:
        return float(text)
    except ValueError:
        raise LinrecTypeError(f"{name}={text!r} is not a number; pass {example}") from None


def read(constraint: Constraint, name: str, text: str):
    """A word typed on the command line for `name`: parsed and checked by `constraint` (its message in Python's
    words: `flag_words` puts them in the command line's)."""
    return constraint.check(name, constraint.parse(name, text))


def flag_words(message: str, name: str, flag: str) -> str:
    """A constraint's message about `name` in the command line's words: `tokens=0` is `--tokens 0`, `bos='x'` is
    `--bos x`, `blocks=[0, 3]` is `--blocks 0,3`, and `name` alone is `flag` (the inverse of
    `linrec.base.voice.python_words`); for a positional argument (`flag` without a dash) the value alone."""

    def given(m: re.Match) -> str:
        value = m[1]
        if value[0] in "'\"" and value[-1] == value[0]:
            value = value[1:-1]
        elif value.startswith("["):
            value = value[1:-1].replace(" ", "")
        return f"{flag} {value}" if flag.startswith("-") else value

    said = re.sub(rf"(?<![\w.-]){name}=('[^']*'|\"[^\"]*\"|\[[^\]]*\]|[^\s;,)]+)", given, message)
    return re.sub(rf"(?<![\w.-]){name}(?![\w=])", flag, said)


def validate(constraints: Mapping[str, Constraint], values: Mapping) -> dict:
    """Every value of `values` checked by its constraint (in `constraints`' order), normalised; the first bad one
    raises its one line. A value without a constraint is passed through as it is."""
    checked = dict(values)
    for name, constraint in constraints.items():
        if name in checked:
            checked[name] = constraint.check(name, checked[name])
    return checked
