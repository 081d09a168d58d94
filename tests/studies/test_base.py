"""linrec.studies.base: a study's `Result` writes each registered table field through `save_table`, the tables of a
nested part (a field that is itself a `Result`) beside them, and nothing for a field left None or not registered."""

from dataclasses import dataclass

import pandas as pd

from helpers import planted
from linrec.base.tables import load_table
from linrec.studies.base import Result


@dataclass
class _Part(Result):
    corpora_verdict: pd.DataFrame | None = None


@dataclass
class _Whole(Result):
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
