"""linrec.studies.base: a study's `Result` writes each registered table field through `save_table`, the tables of a
nested part (a field that is itself a `Result`) beside them, and nothing for a field left None or not registered."""

import importlib
import pkgutil
import typing
from dataclasses import dataclass, fields
from typing import ClassVar

import pandas as pd
import pytest

import linrec.studies
from helpers import planted
from linrec.base.errors import LinrecError
from linrec.base.registry import TABLES
from linrec.base.tables import load_table
from linrec.studies.base import Result


@dataclass
class _Part(Result):
    corpora_verdict: pd.DataFrame | None = None


@dataclass
class _Whole(Result):
    carried: ClassVar[tuple[str, ...]] = ("shown",)
    corpora: pd.DataFrame
    corpora_agreement: pd.DataFrame | None  # switched off: not written
    shown: pd.DataFrame  # not a registered table: carried, not written
    part: _Part


def test_a_result_writes_its_tables_and_its_parts_and_nothing_else(tmp_path):
    """Guards a nested part left unwritten (planted: the loop over parts removed, corpora_verdict.csv is missing) and
    a None or unregistered field written (planted: `tables()` without its filters, save_table refuses the columns)."""
    whole = _Whole(planted("corpora", model="m"), None, pd.DataFrame({"x": [1]}),
                   _Part(planted("corpora_verdict", model="m")))  # fmt: skip
    assert whole.write(tmp_path) is whole
    assert sorted(p.name for p in tmp_path.glob("*.csv")) == ["corpora.csv", "corpora_verdict.csv"]
    assert load_table("corpora", tmp_path)["model"].tolist() == ["m"]
    assert load_table("corpora_verdict", tmp_path)["model"].tolist() == ["m"]
    _Part().write(tmp_path / "empty")  # a part with nothing to write makes the folder and no file
    assert list((tmp_path / "empty").iterdir()) == []


@dataclass
class _Misspelt(Result):
    corpora_verdicts: pd.DataFrame  # the registry says corpora_verdict


def test_a_table_field_the_registry_does_not_name_is_refused_not_left_unwritten(tmp_path):
    with pytest.raises(LinrecError, match="_Misspelt.corpora_verdicts holds a table the results registry does not"):
        _Misspelt(planted("corpora_verdict", model="m")).write(tmp_path)
    assert not list(tmp_path.glob("*.csv"))


def _results() -> list[type[Result]]:
    for m in pkgutil.iter_modules(linrec.studies.__path__):
        importlib.import_module(f"linrec.studies.{m.name}")
    found, todo = [], list(Result.__subclasses__())
    while todo:
        c = todo.pop()
        found += [c] if c.__module__.startswith("linrec.") else []
        todo += c.__subclasses__()
    return found


def test_every_table_field_of_every_study_is_a_results_table_or_said_to_be_carried():
    """Read from the classes, before any run: a field typed as a table is written (its name is the registry's) or
    listed in `carried`; and `carried` names no results table, which would then go unwritten."""
    results = _results()
    assert len(results) >= 9
    for cls in results:
        hints = typing.get_type_hints(cls)
        for f in fields(cls):
            if "DataFrame" in str(hints[f.name]):
                assert f.name in TABLES or f.name in cls.carried, f"{cls.__name__}.{f.name}"
        assert not set(cls.carried) & set(TABLES), cls.__name__


def test_drop_absent_removes_an_earlier_runs_table_of_a_stage_switched_off_and_nothing_else(tmp_path):
    """The default profile stopped routing (`route_blocks: 0`); its folder still held the last run's routing tables,
    which the report would have quoted as this run's. Guards: the None field's file left (planted: the unlink
    removed) and a written table removed with it (planted: every registered field unlinked)."""
    whole = _Whole(planted("corpora", model="m"), None, pd.DataFrame({"x": [1]}), _Part())
    earlier = _Whole(planted("corpora", model="old"), planted("corpora_agreement", model="old"), pd.DataFrame(),
                     _Part())  # fmt: skip
    earlier.write(tmp_path)
    whole.write(tmp_path).drop_absent(tmp_path)
    assert sorted(p.name for p in tmp_path.glob("*.csv")) == ["corpora.csv"]
    assert load_table("corpora", tmp_path)["model"].tolist() == ["m"]


def test_drop_absent_with_names_removes_only_those_fields_files(tmp_path):
    """The zoo writes its verdict tables apart from the stage's other tables (`studies.training.zoo`): a None field
    outside `names` keeps its file (planted: names ignored), one inside loses it (planted: never unlinked)."""
    earlier = _Whole(planted("corpora", model="old"), planted("corpora_agreement", model="old"), pd.DataFrame(),
                     _Part())  # fmt: skip
    earlier.write(tmp_path)
    _Whole(None, None, pd.DataFrame(), _Part()).drop_absent(tmp_path, ("corpora_agreement",))
    assert sorted(p.name for p in tmp_path.glob("*.csv")) == ["corpora.csv"]
    assert load_table("corpora", tmp_path)["model"].tolist() == ["old"]
