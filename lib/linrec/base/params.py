"""Declared parameters: `param(default, about, check)` declares one field of a parameters dataclass (a profile's
section, `linrec.studies.stages`; a capture's settings, `linrec.collect.config`; a request of the command line) with
its one default, what it does and its rule (a `linrec.base.constraints.Constraint`, checked before any work), and how
the command line gives it where not as `--its-name VALUE` (`cli`); `declared(cls)` reads them back for the command
line (its options, `linrec.app.cli`; `linrec studies NAME`), the Python API's rules (`checks`) and the errors; `fits`
checks a value read from YAML against a field's type, and `type_words` puts that type in words for the one-line
error. `check_settings` checks a profile's nested mapping (`capture:`, `training:`, `heal:`) against the dataclass
whose fields it sets, with the same words."""

from __future__ import annotations

import collections.abc
import copy
import functools
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, dataclass, field, fields

from linrec.base.constraints import Constraint
from linrec.base.errors import LinrecError

ABOUT, CHECK, CLI = "about", "check", "cli"  # the metadata keys of a field's description, rule and command line


def param(default: object = MISSING, about: str = "", check: Constraint | None = None, **cli):
    """A dataclass field with `default` (a list or mapping copied afresh for each instance; none: a required field),
    `about`, one line on what it does, and `check`, its rule. `cli`, how the command line gives it where not as
    `--its-name VALUE` defaulting to `default`: `flags` (its names; one without a dash: a positional argument),
    `metavar`, `nargs` or `action` (argparse's), `help` (where not `about`), `unset` (there its default is None, and
    this says what None does) or `const` (a switch taking no value: given, it sets this)."""
    metadata = {ABOUT: about, CHECK: check, CLI: cli}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: copy.deepcopy(default), metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class Declared:
    """One declared parameter: its name, default, what it does and the class that declares it, its rule and how the
    command line gives it (`param`), and its type."""

    name: str
    default: object
    about: str
    owner: type
    check: Constraint | None = None
    cli: Mapping = field(default_factory=dict)

    @property
    def hint(self) -> object:
        """Its type, evaluated when first asked for (the command line's options need none)."""
        return _hints(self.owner)[self.name]

    @property
    def where(self) -> str:
        """The class that declares it, as a reader finds it: "linrec.studies.stages.CeilingParams"."""
        return f"{self.owner.__module__}.{self.owner.__qualname__}"

    def declaration(self) -> str:
        """The declaration as written: "n_boot: int = 2000"."""
        return f"{self.name}: {type_source(self.hint)} = {self.default!r}"


def declared(cls: type) -> list[Declared]:
    """Every field of the parameters dataclass `cls`, in order, with its default, `about`, rule, command line and
    type (evaluated when asked for; one named for type checkers alone is left as written)."""
    out = []
    for f in fields(cls):
        default = f.default if f.default_factory is MISSING else f.default_factory()
        m = f.metadata
        out.append(Declared(f.name, default, m.get(ABOUT, ""), cls, m.get(CHECK), m.get(CLI, {})))
    return out


@functools.cache
def _hints(cls: type) -> dict:
    """`cls`' field types, evaluated once (the command line reads a class's declarations for every subcommand)."""
    try:
        return typing.get_type_hints(cls)
    except NameError:
        return {f.name: f.type for f in fields(cls)}


def checks(cls: type, names: Iterable[str] | None = None) -> dict:
    """{field: its rule} of every field of `cls` that declares one (of `names`, in their order, where given): the
    constraints `linrec.base.constraints.validate` checks."""
    rules = {d.name: d.check for d in declared(cls) if d.check is not None}
    return {n: rules[n] for n in (names if names is not None else rules)}


def fits(value: object, hint: object) -> bool:
    """Whether `value` (read from YAML) has type `hint`: a float takes a whole number too; a bool is never a number."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        return any(fits(value, a) for a in args)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if hint is dict or origin is dict:
        return isinstance(value, dict)
    if origin in (list, collections.abc.Sequence):  # YAML gives a list for either
        return isinstance(value, list) and all(fits(v, args[0]) for v in value)
    raise TypeError(f"linrec.base.params cannot check type {hint!r}")  # a field of a type `fits` does not know


_WORDS = {type(None): "null", int: "a whole number", float: "a number", str: "a string", bool: "true or false",
          dict: "a mapping"}  # fmt: skip
_PLURAL = {int: "whole numbers", float: "numbers", str: "strings", bool: "booleans"}


def type_words(hint: object) -> str:
    """A type in words: `int | None` is "a whole number or null", `list[str]` "a list of strings"."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        return " or ".join(type_words(a) for a in args)
    if origin in (list, collections.abc.Sequence):
        return f"a list of {_PLURAL.get(args[0], 'lists')}"
    return _WORDS.get(hint, _WORDS.get(origin, str(hint)))


def type_source(hint: object) -> str:
    """A type as its declaration writes it: "int", "list[str]", "int | None"."""
    return getattr(hint, "__name__", None) if isinstance(hint, type) else str(hint).replace("NoneType", "None")


def check_settings(section: object, cls: type, where: str, what: str, names: Iterable[str] | None = None,
                   note: str = "") -> dict:  # fmt: skip
    """A profile's nested mapping `section` checked against the fields of dataclass `cls` it may set (`names`, default
    all): a mapping, every key one of them (else one line: "unknown {what}(s) …; known: …" and `note`), every value
    of its field's type (`fits`; a whole number given as 2560.0 is a whole number). Returns it with each number in
    its field's type (2560.0 → 2560 for an int, 3 → 3.0 for a float); `where` starts every message."""
    if not isinstance(section, Mapping):
        raise LinrecError(f"{where} must be a mapping of {cls.__name__} fields, got {section!r}; fix that line")
    hints = typing.get_type_hints(cls)
    names = list(names) if names is not None else [f.name for f in fields(cls)]
    unknown = sorted(str(k) for k in section if k not in names)
    if unknown:
        raise LinrecError(f"{where}: unknown {what}(s) {', '.join(unknown)}; known: {', '.join(names)}{note}")
    out = {}
    for name, value in section.items():
        hint = hints[name]
        kinds = {a for a in (typing.get_args(hint) or (hint,)) if a is not type(None)}  # int | None: {int}
        if isinstance(value, float) and value.is_integer() and int in kinds:
            value = int(value)
        elif isinstance(value, int) and not isinstance(value, bool) and kinds == {float}:
            value = float(value)
        if not fits(value, hint):
            raise LinrecError(f"{where}: {name} must be {type_words(hint)}, got {value!r}; fix that line")
        out[name] = value
    return out
