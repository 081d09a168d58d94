"""No verdict without evidence (issue 51): a claim whose tables are empty, header-only or lack a model's rows is "not
testable" (or is judged on the models that remain), never "reproduced" on an empty list of outcomes.

The committed default run (`results/default`) is the table every case starts from; each case empties or trims one
of its tables in a copy."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from helpers import DEFAULT
from linrec.claims.registry import TABLES
from linrec.claims.rules import NOT_TESTABLE, REPRODUCED, VERDICTS, Verdict
from linrec.claims.swap import verdict_6a
from linrec.claims.tables import load_table, result_columns, table_path
from linrec.outputs.catalog import CATALOG, claims
from linrec.outputs.report import tally_line


def _copy(tmp_path: Path) -> Path:
    out = tmp_path / "default"
    shutil.copytree(DEFAULT, out, ignore=shutil.ignore_patterns("notebooks", "*.png", "*.html"))
    return out


def test_a_decided_verdict_needs_evidence():
    v = Verdict("6a", REPRODUCED, [])
    assert v.verdict == NOT_TESTABLE and "no evidence" in v.reason
    assert Verdict("6a", REPRODUCED, [{"model": "m"}]).verdict == REPRODUCED
    with pytest.raises(Exception, match="unknown verdict"):
        Verdict("6a", "probably", [{"model": "m"}])


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


def test_claim6a_judges_only_models_with_screening_and_heldout_rows():
    swap = load_table("swap", DEFAULT)
    values = load_table("swap_predictor_values", DEFAULT)
    models = list(swap["model"].unique())
    assert len(models) == 2
    full = verdict_6a(swap, values)
    assert full.verdict != NOT_TESTABLE and len(full.evidence) == 2
    # header-only swap table, screening values present: nothing to judge
    v = verdict_6a(swap.iloc[:0], values)
    assert v.verdict == NOT_TESTABLE and not v.evidence and "no rows" in v.reason
    # header-only screening values: every model unjudged, each named
    v = verdict_6a(swap, values.iloc[:0])
    assert v.verdict == NOT_TESTABLE and all(m in v.reason for m in models)
    # one model without screening values: judged on the other alone
    v = verdict_6a(swap, values[values["model"] != models[0]])
    assert [e["model"] for e in v.evidence] == [models[1]]
    assert v.verdict == verdict_6a(swap[swap["model"] == models[1]], values).verdict
    # the screened block's held-out row gone: that model is not judged
    chosen = full.evidence[0]["chosen_block"]
    drop = (swap["model"] == models[0]) & (swap["block"] == chosen)
    v = verdict_6a(swap[~drop], values)
    assert [e["model"] for e in v.evidence] == [models[1]]
