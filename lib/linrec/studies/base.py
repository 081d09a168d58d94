"""What every study returns: a `Result`, a dataclass whose table fields are named as the results registry names
them (`linrec.claims.registry.TABLES`), so `result.write(results_dir)` writes each through `save_table` (columns
checked there) and a notebook reads `result.corpora` rather than a file.

A study's `run(p)` takes the profile a notebook binds (`linrec.studies.stages.Profile`: `p.models`, `p.results_dir`,
its own section `p.section(NAME)`, …), computes its tables, writes them and returns its `Result`; fields that are
not registered tables (a capture, a figure's inputs) are carried but not written, and a table field left `None` (a
stage the profile switched off) is not written either."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

import pandas as pd

from linrec.base.files import project_root
from linrec.claims.registry import TABLES
from linrec.claims.tables import save_table, table_path


@dataclass
class Result:
    """A study's tables (and whatever else its notebook shows), field by field."""

    def tables(self) -> dict[str, pd.DataFrame]:
        """{registry name: table} of every registered table field that holds a table."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name in TABLES and isinstance(getattr(self, f.name), pd.DataFrame)
        }

    def write(self, results_dir: str | Path) -> Result:
        """Write every table (`save_table`) under `results_dir` (relative paths from the project root), and those of
        any field that is itself a `Result` (a part of the study with its own tables); itself."""
        out = Path(results_dir)
        out = out if out.is_absolute() else project_root() / out
        out.mkdir(parents=True, exist_ok=True)
        for name, table in self.tables().items():
            save_table(table, name, out)
        for part in (getattr(self, f.name) for f in fields(self)):
            if isinstance(part, Result):
                part.write(out)
        return self

    def drop_absent(self, results_dir: str | Path) -> None:
        """Remove the file under `results_dir` of every registered table field left None (a stage this profile
        switched off, e.g. routing with `route_blocks: 0`): an earlier run's table must not be read as this run's."""
        out = Path(results_dir)
        out = out if out.is_absolute() else project_root() / out
        for f in fields(self):
            if f.name in TABLES and getattr(self, f.name) is None:
                table_path(f.name, out).unlink(missing_ok=True)
