"""What every study returns: a `Result`, a dataclass whose table fields are named as the results registry names
them (`linrec.base.registry.TABLES`), so `result.write(results_dir)` writes each through `save_table` (columns
checked there) and a notebook reads `result.corpora` rather than a file.

A study's `run(p)` takes the profile a notebook binds (`linrec.studies.stages.Profile`: `p.models`, `p.results_dir`,
its own section `p.section(NAME)`, …), computes its tables, writes them and returns its `Result`; fields that are
not registered tables (a capture, a figure's inputs) are carried but not written, and a table field left `None` (a
stage the profile switched off) is not written either: its file from an earlier run is removed, so a report never
reads an earlier run's table as this run's (`Result.pieces`: a result written in pieces leaves that to its study).

Each stage that judges is split at a table boundary: its measuring part (models and captures → per-block tables) and
its `Summary`, a pure `summarise(tables, p)` (tables in, summaries and verdicts out) that its study calls after
measuring and `linrec.outputs.refresh` calls on the tables of a results folder, so every summary is computed in one
place."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import ClassVar

import pandas as pd

from linrec.base.errors import LinrecError
from linrec.base.files import project_root
from linrec.base.registry import TABLES
from linrec.base.tables import save_table, table_path
from linrec.stats import N_BOOT

Tables = dict[str, pd.DataFrame]  # {registry name: table}; a table not written is absent


@dataclass(frozen=True)
class Settings:
    """What a `summarise` reads besides tables (a `Profile` has both): the bootstrap's resamples and seed."""

    n_boot: int = N_BOOT
    seed: int = 0


@dataclass(frozen=True)
class Summary:
    """One stage's summaries: `summarise(tables, p)` → {name: table}, pure, from the tables it `reads` (one absent:
    the summaries that need it are left out). `as_written`: tables read as written, whatever linrec wrote them (the
    summary adds the columns a newer registry has); `where_present`: summaries a results folder gets only where it
    holds them already (`linrec.outputs.refresh`)."""

    name: str
    reads: tuple[str, ...]
    summarise: Callable[[Tables, Settings], Tables]
    as_written: tuple[str, ...] = ()
    where_present: tuple[str, ...] = ()


@dataclass
class Result:
    """A study's tables (and whatever else its notebook shows), field by field."""

    # True for a result its study writes in several calls, each filling some fields (notebook 08's): a None field
    # there may be another call's table, so `write` leaves absent tables alone and the study drops its own
    pieces: ClassVar[bool] = False
    # the fields holding a table its notebook shows but that is not a results table (a figure's inputs): every other
    # field holding a table must be named as the registry names a table, so a misspelt one fails instead of going
    # unwritten
    carried: ClassVar[tuple[str, ...]] = ()

    def tables(self) -> dict[str, pd.DataFrame]:
        """{registry name: table} of every registered table field that holds a table; a field holding a table that
        is neither registered nor `carried` is an error naming both fixes."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if isinstance(getattr(self, f.name), pd.DataFrame)}
        if unknown := [name for name in out if name not in TABLES and name not in self.carried]:
            raise LinrecError(
                f"{type(self).__name__}.{unknown[0]} holds a table the results registry does not list: name it as "
                f"linrec.base.registry.TABLES does, add it there, or list it in {type(self).__name__}.carried"
            )
        return {name: t for name, t in out.items() if name in TABLES}

    def write(self, results_dir: str | Path) -> Result:
        """Write every table (`save_table`) under `results_dir` (relative paths from the project root), and those of
        any field that is itself a `Result` (a part of the study with its own tables); remove the file of every table
        field left None (`drop_absent`; not for a result written in `pieces`); itself."""
        out = Path(results_dir)
        out = out if out.is_absolute() else project_root() / out
        out.mkdir(parents=True, exist_ok=True)
        for name, table in self.tables().items():
            save_table(table, name, out)
        if not self.pieces:
            self.drop_absent(out)
        for part in (getattr(self, f.name) for f in fields(self)):
            if isinstance(part, Result):
                part.write(out)
        return self

    def drop_absent(self, results_dir: str | Path, names: tuple[str, ...] | None = None) -> None:
        """Remove the file under `results_dir` of every registered table field left None (a stage this profile
        switched off, e.g. routing with `route_blocks: 0`; with `names`, of those fields only): an earlier run's
        table must not be read as this run's."""
        out = Path(results_dir)
        out = out if out.is_absolute() else project_root() / out
        for f in fields(self):
            if f.name in TABLES and (names is None or f.name in names) and getattr(self, f.name) is None:
                table_path(f.name, out).unlink(missing_ok=True)
