"""No verdict without evidence (issue 51): a claim whose tables are empty, header-only or lack a model's rows is "not
testable" (or is judged on the models that remain), never "reproduced" on an empty list of outcomes.

The committed default run (`results/default`) is the table every case starts from; each case empties or trims one
of its tables in a copy."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from helpers import DEFAULT
from linrec.claims.registry import TABLES
from linrec.claims.rules import NOT_TESTABLE, VERDICTS
from linrec.claims.tables import result_columns, table_path
from linrec.outputs.catalog import CATALOG, claims
from linrec.outputs.report import tally_line


def _copy(tmp_path: Path) -> Path:
    out = tmp_path / "default"
    shutil.copytree(DEFAULT, out, ignore=shutil.ignore_patterns("notebooks", "*.png", "*.html"))
    return out


def test_every_claim_is_not_testable_on_header_only_tables(tmp_path):
    for name in TABLES:
        path = table_path(name, tmp_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(columns=list(result_columns(name))).to_csv(path, index=False)
    out = claims(tmp_path)
    assert len(out) == len(CATALOG)
    assert [c.verdict for c in out] == [NOT_TESTABLE] * len(CATALOG), [(c.number, c.verdict) for c in out]
    assert tally_line(out).endswith(f"Of {len(CATALOG)} checks: {len(CATALOG)} not testable.")


def test_emptying_any_one_table_never_decides_a_claim(tmp_path):
    """Each table of the default run made header-only in turn: no claim crashes, and a claim whose verdict changes
    becomes "not testable" (it never gains a verdict from rows that are gone). The swap table was the case that
    made claim 6a "reproduced" with an empty evidence cell."""
    base = {c.number: c.verdict for c in claims(DEFAULT)}
    assert sum(v != NOT_TESTABLE for v in base.values()) >= 5  # the default run decides most claims
    work = _copy(tmp_path)
    changed = {}
    for name in TABLES:
        path = table_path(name, work)
        if not path.is_file():
            continue
        original = path.read_bytes()
        pd.read_csv(path).iloc[:0].to_csv(path, index=False)
        try:
            for c in claims(work):
                assert c.verdict in VERDICTS
                if c.verdict != base[c.number]:
                    assert c.verdict == NOT_TESTABLE, (name, c.number, base[c.number], c.verdict)
                    changed.setdefault(name, []).append(c.number)
                if c.verdict != NOT_TESTABLE:
                    assert c.ours.strip(), (name, c.number)  # a decided claim states its evidence
        finally:
            path.write_bytes(original)
    assert "6a" in changed["swap"] and "6a" in changed["swap_predictor_values"]
    assert changed["r2_lin_summary"] == [1]
