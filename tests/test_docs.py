"""No measurement typed by hand into the docs (issue 86, item 5): a measured number on a written page is either written
there from its table, between a generated block's markers (`<!-- NAME:start -->` … `<!-- NAME:end -->`:
`linrec.outputs.doc_blocks`, the README's results block, `docs/performance.md`'s), or left out.

The rule, on README.md, benchmarks/README.md and docs/*.md with code (fenced and `inline`), generated blocks, link
targets, dates and version numbers taken out: a number is measurement-shaped when it has a decimal point (0.93) or
an exponent (3e-8), or carries a unit of time (343 s, 14.6 min, 2 h), a percent sign (83 %) or a factor sign (2.5×).
It may stand where its value is
- a parameter: a number a profile sets (params/*.yaml) or a constant of the package (a numeric literal in the code
  of lib/linrec, read with `ast`: thresholds, margins, levels, precisions); a percent counts as its fraction too;
- the paper's own: a number of paper/claims.md, which quotes arXiv 2606.19379;
- or one of `ALLOWED` below (the pages' time budgets and a format's precision).
A factor (2.5×) and a time are never a parameter here.
"""

import ast
import re
from pathlib import Path

import pytest

from helpers import ROOT

PAGES = sorted([ROOT / "README.md", ROOT / "benchmarks" / "README.md", *(ROOT / "docs").glob("*.md")])

# Not a measurement although shaped like one, each with its reason (a page's exact phrase).
ALLOWED = {
    "20 minutes": "the default profile's time budget, a target (profiles.md, limitations.md)",
    "20 min": "the same budget",
    "5 min": "make test's time budget, a target",
    "1e-10 pt": "the precision a PDF stores coordinates to, a property of the format (numerics.md)",
}
NUMBER = r"\d[\d,]*(?:\.\d+)?"
SHAPES = re.compile(
    rf"(?<![\w.]){NUMBER}(?:e[-+]?\d+)?(?:\s?(?:ms|s|min|minutes|seconds|h|hours)\b|\s?%|×)"  # a unit
    rf"|(?<![\w.])\d+\.\d+(?:e[-+]?\d+)?(?![\w.]*\d)"  # a decimal point
    rf"|(?<![\w.])\d+e[-+]?\d+\b"  # an exponent
)
# taken out before the rule: fenced code, inline code, a generated block, a link target, a date, a version
MASKS = [
    re.compile(r"```.*?```", re.S),
    re.compile(r"`[^`]+`"),  # a span may wrap a line
    re.compile(r"<!-- ([\w:-]+):start -->.*?<!-- \1:end -->", re.S),
    re.compile(r"\]\([^)]*\)"),
    re.compile(r"\b\d{4}-\d{2}-\d{2}\b"),
    re.compile(r"(?:Python|torch|ipykernel|pytest-xdist|CUDA|v)\s?\d+(?:\.\d+)+"),
    re.compile(r"\b\d+\.\d+\.\d+\b"),
    re.compile(r"arXiv \d{4}\.\d{4,5}"),
]


def _literals(path: Path) -> set[float]:
    """The numeric literals of a Python file's code (docstrings are strings, so they do not count)."""
    tree = ast.parse(path.read_text())
    nodes = (n for n in ast.walk(tree) if isinstance(n, ast.Constant) and not isinstance(n.value, bool))
    return {float(n.value) for n in nodes if isinstance(n.value, (int, float))}


def _numbers(text: str) -> set[float]:
    return {float(m.replace(",", "")) for m in re.findall(r"\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?", text)}


def parameters() -> set[float]:
    """Every value a parameter or the paper may give: the numbers of params/*.yaml and paper/claims.md, and the
    numeric literals of lib/linrec's code."""
    values = set()
    for p in (ROOT / "params").glob("*.yaml"):
        values |= _numbers("\n".join(line.split("#", 1)[0] for line in p.read_text().splitlines()))
    values |= _numbers((ROOT / "paper" / "claims.md").read_text())
    for p in (ROOT / "lib" / "linrec").rglob("*.py"):
        values |= _literals(p)
    return values


def _value(token: str) -> tuple[float, bool]:
    """The number a token states and whether it is a percent."""
    number = re.match(r"\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?", token).group(0)
    return float(number.replace(",", "")), token.rstrip().endswith("%")


def typed_measurements(text: str, allowed: set[float]) -> list[str]:
    """The measurement-shaped tokens of `text` that no rule above allows, in order."""
    for phrase in ALLOWED:
        text = text.replace(phrase, " ")
    for mask in MASKS:
        text = mask.sub(" ", text)
    found = []
    for m in SHAPES.finditer(text):
        token = m.group(0)
        value, percent = _value(token)
        timed = re.search(r"(ms|s|min|minutes|seconds|h|hours)$", token)
        ok = not timed and not token.endswith("×") and (value in allowed or (percent and value / 100 in allowed))
        if not ok:
            found.append(token)
    return found


@pytest.fixture(scope="module")
def allowed():
    return parameters()


def test_the_rule_finds_a_typed_measurement_and_passes_a_parameter(allowed):
    text = (
        "R²_lin moves by a median 0.009 (upwards in 83 % of draws), in 343 s, 2.5× wider, within 3.7e-9; "
        "a 95 % interval, the +1 budget, ±0.3, `0.123 in code`, 2026-11-29, Python 3.11, torch 2.13.0, "
        "<!-- numbers:x:start -->0.941 of 20 s<!-- numbers:x:end -->, the paper's +0.77"
    )
    assert typed_measurements(text, allowed) == ["0.009", "83 %", "343 s", "2.5×", "3.7e-9"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_measurement_is_typed_by_hand(page, allowed):
    """Type a measured number into a page outside a generated block ("covers 0.93 of refits", "took 343 s") and this
    fails naming it: write it from its table (`linrec.outputs.doc_blocks`) or leave it out."""
    found = typed_measurements(page.read_text(), allowed)
    assert not found, (
        f"{page.relative_to(ROOT)} types measured numbers by hand: {found}; write each from its table between "
        "generated-block markers (linrec.outputs.doc_blocks), or leave it out and name the table or benchmark"
    )
