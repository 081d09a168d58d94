"""The stages (`linrec.studies.stages.STUDIES`): one row per study, whose parts agree with the package, the
registry, the notebooks and the claims; the runner, the profile, the report and the command line read the stages
from it (issue 47, item 1)."""

from __future__ import annotations

import re
from dataclasses import fields, is_dataclass

import pytest

from helpers import ROOT
from linrec.app.notebooks import notebooks, select, stage_files
from linrec.base.errors import LinrecError
from linrec.base.registry import TABLES
from linrec.outputs.catalog import CATALOG, of_study
from linrec.studies.base import Result
from linrec.studies.stages import REPORT_FILE, REPORT_NOTEBOOK, SECTIONS, STUDIES, study


def test_each_row_names_its_notebook_module_tables_and_section():
    """Each study: its notebook file exists, is numbered as the row and imports the row's module as `study`; the
    module has `run(p)` returning a `Result` whose registered fields are tables of this notebook; its `finding` is one
    of its tables; its parameters dataclass is its section of the profile, under its name."""
    assert [s.notebook for s in STUDIES] == sorted({s.notebook for s in STUDIES})  # in order, each once
    assert len({s.name for s in STUDIES}) == len(STUDIES)
    for s in STUDIES:
        source = ROOT / "notebooks" / f"{s.file}.py"
        assert source.is_file() and s.file.startswith(s.notebook + "_"), s.name
        name = s.module.rsplit(".", 1)[1]
        assert f"from linrec.studies import {name} as study" in source.read_text(), s.name
        module = s.load()
        assert callable(s.run) and s.run is module.run
        assert module.__doc__.startswith(f"Notebook {s.notebook}'s"), s.name
        results = [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, Result)]
        results = [cls for cls in results if cls is not Result]
        assert results, s.name
        for cls in results:  # every registered table field it carries is one its notebook writes
            registered = {f.name for f in fields(cls)} & set(TABLES)
            assert {TABLES[t].notebook for t in registered} <= {s.notebook}, (s.name, cls.__name__)
        if s.params is not None:
            assert is_dataclass(s.params) and SECTIONS[s.name] is s.params
            assert s.parameters and all(d.about for d in s.parameters)


def test_every_table_and_claim_belongs_to_a_stage():
    stages = {s.notebook for s in STUDIES}
    assert {spec.notebook for spec in TABLES.values()} <= stages | {REPORT_NOTEBOOK}
    assert all(s.tables for s in STUDIES)  # each study writes something
    for entry in CATALOG:
        assert set(entry.notebooks) <= stages, entry.id
    assert sorted({str(c.id) for s in STUDIES for c in of_study(s.notebook)}) == sorted(str(c.id) for c in CATALOG)


def test_a_study_is_found_by_number_or_name_and_an_unknown_one_is_one_line():
    assert study("02") is study("ceiling") is study("02_linear_ceiling")
    with pytest.raises(
        LinrecError,
        match=r"no study 'ceilings' \(did you mean 'ceiling'\?\); the studies are 01 \(capture\), 02 \(ceiling\)",
    ):
        study("ceilings")


def test_the_runner_runs_the_stages_notebooks_in_their_order_then_the_report():
    assert [nb.stem for nb in notebooks(ROOT)] == [*(s.file for s in STUDIES), REPORT_FILE] == list(stage_files())
    every = notebooks(ROOT)
    assert [nb.stem for nb in select(every, ["ceiling", "06"])] == ["02_linear_ceiling", "06_swap"]
    assert select(every, None) == every
    with pytest.raises(
        LinrecError,
        match=r"no notebooks match ceilings \(did you mean 'ceiling'\?\); available: 01_capture \(capture\)",
    ):
        select(every, ["ceilings"])


def test_a_notebook_the_stages_do_not_list_or_a_missing_one_is_one_line(tmp_path, monkeypatch):
    """A numbered notebook added without its row would never run (and one whose row stays after it is gone would
    stop the run in its middle): both stop before anything runs, naming the fix."""
    import linrec.app.notebooks

    (tmp_path / "notebooks").mkdir()
    for name in ("01_a", "02_b"):
        (tmp_path / "notebooks" / f"{name}.py").write_text("")
    monkeypatch.setattr(linrec.app.notebooks, "stage_files", lambda: ("01_a", "02_b"))
    assert [nb.stem for nb in notebooks(tmp_path)] == ["01_a", "02_b"]
    (tmp_path / "notebooks" / "10_new.py").write_text("")
    with pytest.raises(LinrecError, match=re.escape("notebooks/10_new.py is not a stage: add its row")):
        notebooks(tmp_path)
    (tmp_path / "notebooks" / "10_new.py").unlink()
    (tmp_path / "notebooks" / "02_b.py").unlink()
    with pytest.raises(LinrecError, match=re.escape("notebooks/02_b.py missing")):
        notebooks(tmp_path)
