"""A results folder as the report reads it: `Results` (the tables the numbered notebooks wrote, through the registry,
`linrec.claims.tables`), a table taken from another profile's folder where this one has none (`other_profile`,
`replicated`), and the words for a number or a list of blocks (`fmt`, `listed`) that every text of the report uses.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from linrec.base.errors import LinrecError, StaleTableError
from linrec.claims.registry import TABLES
from linrec.claims.tables import load_table, table_path


class Results:
    """The results tables of one directory, read through the registry (`linrec.claims.tables`).

    `get(name)` is None for a table its notebook has not written."""

    def __init__(self, directory: str | Path):
        self.dir = Path(directory)
        if not self.dir.is_dir():
            raise LinrecError(f"results directory {self.dir} not found; run `linrec figures` (or `make figures`) first")
        if not any(table_path(name, self.dir).is_file() for name in TABLES):  # a report of "missing" everywhere
            raise LinrecError(
                f"results directory {self.dir} holds no results table; run `linrec figures` (or `make figures`) "
                "first, or give the folder it wrote"
            )

        self.stale: dict[str, str] = {}  # table → its notebook, for tables an older linrec wrote (left out)

    def get(self, name: str) -> pd.DataFrame | None:
        """Table `name`, or None where its notebook has not written it or an older linrec did (then listed in
        `stale`, and the claims that read it say which notebook to rerun instead of "not run")."""
        try:
            return load_table(name, self.dir)
        except StaleTableError:
            self.stale[name] = TABLES[name].notebook
            return None


def fmt(x, nd: int = 3) -> str:
    """`x` to `nd` decimals; "n/a" for None or a float that is not finite."""
    return "n/a" if x is None or (isinstance(x, float) and not np.isfinite(x)) else f"{x:.{nd}f}"


def listed(blocks) -> str:
    """Block numbers as a list: "1, 2"; "none" for none. A CSV column of block lists reads back as a float where it
    holds one block (2.0) and NaN where it holds none."""
    if blocks is None or (isinstance(blocks, float) and not np.isfinite(blocks)):
        return "none"
    if isinstance(blocks, (int, float, np.integer, np.floating)):
        return str(int(blocks))
    return ", ".join(str(blocks).split()) or "none"


def other_profile(r: Results, name: str, profile: str) -> pd.DataFrame | None:
    """Table `name` of `results/<profile>/` when that is another profile's folder than this one's; None without it."""
    other = r.dir.parent / profile
    if not other.is_dir() or other.resolve() == r.dir.resolve():
        return None
    return table_in(other, name)


def table_in(folder: Path, name: str) -> pd.DataFrame | None:
    """Table `name` of results folder `folder`; None where it is absent, empty, or older than its registered columns
    (another profile's run that predates them is not quoted)."""
    try:
        table = load_table(name, folder)
    except StaleTableError:
        return None
    return table if table is not None and not table.empty else None


def replicated(r: Results, name: str, profile: str = "full") -> tuple[pd.DataFrame | None, str]:
    """Table `name` of this profile, else of `results/<profile>/` (with where it came from: " (<profile> profile)")."""
    rep = r.get(name)
    if rep is not None and not rep.empty:
        return rep, ""
    rep = other_profile(r, name, profile)
    return (rep, f" ({profile} profile)") if rep is not None else (None, "")
