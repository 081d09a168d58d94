"""Every repository path and every `linrec.…` name that the written pages (README.md, paper/claims.md, docs/*.md) and
the notebooks' sources (notebooks/*.py) point at exists: the package was split into layers (linrec/analyses, …)
and paper/claims.md kept pointing at lib/linrec/controls.py and lib/linrec/pitfall.py for a while (issue 45)."""

import importlib
import re
from pathlib import Path

import pytest

from helpers import ROOT

PAGES = sorted([ROOT / "README.md", ROOT / "paper" / "claims.md", *(ROOT / "docs").glob("*.md"),
                *(ROOT / "notebooks").glob("*.py")])  # fmt: skip
TOP = ("lib", "notebooks", "params", "docs", "results", "tests", "benchmarks", "paper", "figures", "jupyter")
# A path starts at a top-level folder of the repository (or at `linrec/`, the package inside lib/, or `../` from the
# page's own folder) and is not the tail of a longer path (`.venv/share/jupyter/…`); it runs over name characters and
# stops at a placeholder (`results/<profile>/…`: the literal part is checked).
PATH = re.compile(r"(?<![\w./~-])((?:\.\./)*)((?:" + "|".join((*TOP, "linrec")) + r")/[\w.*/-]*)")
# what .gitignore names a reader makes (notebooks/overrides.yaml, Lab's experiment): named, never committed
IGNORED = set((ROOT / ".gitignore").read_text().split())
MODULE = re.compile(r"(?<![\w./-])linrec(?:\.[A-Za-z_][\w]*)+")


def named_paths(text: str) -> list[tuple[str, str]]:
    """(prefix of `../`, path) for each repository path in `text`, a sentence's closing punctuation removed."""
    return [(up, path.rstrip(".,;:")) for up, path in PATH.findall(text)]


def resolve(page: Path, up: str, path: str) -> Path:
    """Where a path named on `page` lies: `../x` from the page's folder, `linrec/x` in lib/, anything else from the
    repository root."""
    if up:
        return (page.parent / up / path).resolve()
    return ROOT / "lib" / path if path.startswith("linrec/") else ROOT / path


def exists(where: Path) -> bool:
    return any(where.parent.glob(where.name)) if "*" in where.name else where.exists()


def test_paths_are_found_where_they_are_written():
    text = "see `lib/linrec/analyses/controls.py`, results/<profile>/report.md and (../paper/claims.md). Also "
    text += "`.venv/share/jupyter/lab/settings/overrides.json`, notebooks/*.py, linrec/stats/ceiling.py; ~/docs/x"
    assert named_paths(text) == [("", "lib/linrec/analyses/controls.py"), ("", "results/"),
                                 ("../", "paper/claims.md"), ("", "notebooks/*.py"),
                                 ("", "linrec/stats/ceiling.py")]  # fmt: skip
    page = ROOT / "notebooks" / "07_controls.py"
    assert resolve(page, "../", "paper/claims.md") == ROOT / "paper" / "claims.md"
    assert resolve(page, "", "linrec/stats/ceiling.py") == ROOT / "lib" / "linrec" / "stats" / "ceiling.py"
    assert exists(ROOT / "notebooks" / "*.py") and not exists(ROOT / "notebooks" / "*.nothing")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_a_page_names_exists(page):
    """Plant a stale path (`lib/linrec/controls.py` in paper/claims.md, `linrec/probe.py` in notebook 03) and this
    fails naming it."""
    named = named_paths(page.read_text())
    missing = sorted({p for up, p in named if not exists(resolve(page, up, p)) and f"/{p}" not in IGNORED})
    assert not missing, f"{page.relative_to(ROOT)} names paths that do not exist: {missing}"


def _resolves(name: str) -> bool:
    """Whether `linrec.a.b.c` is a module, or an attribute of the longest importable module prefix."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ModuleNotFoundError:
            continue
        for attr in parts[k:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_linrec_name_a_page_names_resolves(page):
    """`linrec.analyses.controls`, `linrec.claims.rules.Rule`, …: each is a module or something in one. Plant
    `linrec.controls` on a page and this fails naming it."""
    stale = sorted({m for m in MODULE.findall(page.read_text()) if not _resolves(m)})
    assert not stale, f"{page.relative_to(ROOT)} names what linrec does not have: {stale}"
