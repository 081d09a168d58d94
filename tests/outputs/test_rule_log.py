"""linrec.outputs.rule_log: each rule's hash moves with its thresholds, words and code and with nothing else (not
comments, docstrings, formatting, the process or the machine), is recorded with the results it judged, and a changed
rule after results exist is logged with the verdict before and after and shown in the generated changelog."""

import os
import shutil
import subprocess
import sys
from dataclasses import replace

import pytest

from helpers import DEFAULT, ROOT
from linrec.base.errors import LinrecError
from linrec.base.tables import load_table
from linrec.outputs import catalog, rule_log
from linrec.outputs.catalog import CATALOG
from linrec.outputs.results import Results
from linrec.outputs.rule_log import (
    BEFORE_THE_RECORD,
    HASH_DIGITS,
    changelog,
    normalised,
    record,
    rule_code,
    rule_hash,
    rule_text,
)


def test_a_rules_hash_moves_with_each_threshold_and_its_code_and_never_with_layout():
    """Every threshold of every rule, planted one at a time, moves that rule's hash and no other part of it but the
    threshold's line and the words built from it; the code is normalised: comments, docstrings and formatting do
    not move it, an operator does."""
    hashes = {entry.id: rule_hash(entry.rule) for entry in CATALOG}
    assert len(set(hashes.values())) == len(CATALOG) and all(len(h) == HASH_DIGITS for h in hashes.values())
    for entry in CATALOG:
        for name in entry.rule.names():
            value = getattr(entry.rule.thresholds, name)
            moved = value + 1 if isinstance(value, (int, float)) and not isinstance(value, bool) else None
            if moved is None:
                continue
            planted = entry.rule.planted(**{name: moved})
            assert rule_hash(planted) != hashes[entry.id], (entry.id, name)
            assert f"{name} = {moved!r}" in rule_text(planted) and f"{name} = {value!r}" in rule_text(entry.rule)
    plain = "def f(x, t=1):\n    return x <= t\n"
    dressed = 'def f(x,\n      t=1):  # the rule\n    """Its words."""\n\n    return (x <= t)  # at equality too\n'
    assert normalised(plain) == normalised(dressed) and normalised(plain) != normalised(plain.replace("<=", "<"))


def test_a_rules_hash_follows_the_verdicts_it_joins():
    """Claim 2a's verdict is the weakest of its own, the seeds experiment's and the zoo's: their code (down to the zoo's
    `part_word`) is in its hash, which moves without them; every rule's joins name functions that exist."""
    rule_2a = next(entry.rule for entry in CATALOG if entry.id == "2a")
    alone = replace(rule_2a, joins=())
    for name in ("def seeds_verdict", "def zoo_verdict", "def part_word", "def combine_2a"):
        assert name in rule_code(rule_2a) and name not in rule_code(alone), name
    assert rule_hash(alone) != rule_hash(rule_2a)
    for entry in CATALOG:
        rule_code(entry.rule)  # an unknown module or function in `joins` raises here
    with pytest.raises(LinrecError, match="outside linrec.claims"):
        rule_code(replace(rule_2a, joins=("os.path.join",)))


def test_a_rules_hash_covers_the_tables_of_values_its_code_names():
    """A dict or list of simple values named by a rule's code (which column is the noise floor, a predictor's sign)
    is hashed by value, as a number or a tuple is: changing which way a predictor points moves 6b's hash."""
    from linrec.claims import swap

    rule_6b = next(entry.rule for entry in CATALOG if entry.id == "6b")
    before = rule_hash(rule_6b)
    assert "PREDICTOR_SIGNS = [(" in rule_code(rule_6b)
    flipped = {k: -v for k, v in swap.PREDICTOR_SIGNS.items()}
    with pytest.MonkeyPatch.context() as m:
        m.setattr(swap, "PREDICTOR_SIGNS", flipped)
        rule_log._code_from.cache_clear()  # the code is read once per process: read it again with the flip
        assert rule_hash(rule_6b) != before
    rule_log._code_from.cache_clear()
    assert rule_hash(rule_6b) == before


def test_a_rules_hash_is_the_same_in_another_process_with_other_string_hashing():
    code = "from linrec.outputs.catalog import CATALOG; from linrec.outputs.rule_log import rule_hash; " \
           "print(' '.join(rule_hash(e.rule) for e in CATALOG))"  # fmt: skip
    here = " ".join(rule_hash(e.rule) for e in CATALOG)
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT / "lib")}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == here


def test_a_threshold_changed_after_results_exist_is_logged_with_the_verdicts_before_and_after(tmp_path, monkeypatch):
    """Results recorded under today's rules; claim 6a's budget then planted at -1 (its chosen block's ΔPPL, +0.31
    [-0.38, +0.76], no longer within it): the record logs the change with both hashes, the verdict before (recorded
    with the old rule) and after, on the same tables; the changelog lists it and keeps the entry on what predates the
    record.
    Guards a hash that ignores the thresholds (planted: no change logged) and a log that records the new verdict as
    the old one."""
    results = tmp_path / "results" / "default"
    shutil.copytree(DEFAULT, results, ignore=shutil.ignore_patterns("notebooks", "figures", "timings", "report.*",
                                                                    "rule_*.csv"))  # fmt: skip
    before = catalog.build(Results(results))
    assert record(results, before, today="2026-11-27").empty  # nothing recorded before: nothing changed
    hashes = load_table("rule_hashes", results)
    assert list(hashes["claim"]) == [str(e.id) for e in CATALOG] and set(hashes["recorded"]) == {"2026-11-27"}
    assert record(results, before, today="2026-11-28").empty  # the same rules: still nothing, dates kept
    assert set(load_table("rule_hashes", results)["recorded"]) == {"2026-11-27"}

    old = catalog.rule("6a")
    planted = tuple(replace(e, rule=e.rule.planted(CLAIM6_BUDGET=-1.0)) if e.id == "6a" else e for e in CATALOG)
    monkeypatch.setattr(catalog, "CATALOG", planted)
    after = catalog.build(Results(results))
    v_before, v_after = (next(c.verdict for c in cl if c.number == "6a") for cl in (before, after))
    assert v_before == "reproduced" and v_after != v_before
    logged = record(results, after, today="2026-11-29")
    assert logged.to_dict("records") == [
        {"claim": "6a", "recorded": "2026-11-29", "hash_before": rule_hash(old),
         "hash_after": rule_hash(catalog.rule("6a")), "verdict_before": v_before, "verdict_after": v_after,
         "tables": "same", "why": "the rule changed"}
    ]  # fmt: skip
    assert rule_hash(old) != rule_hash(catalog.rule("6a"))
    assert len(load_table("rule_changes", results)) == 1
    text = changelog(tmp_path)
    new = rule_hash(catalog.rule("6a"))
    entry = (f"- 2026-11-29, `results/default/`, claim 6a: rule `{rule_hash(old)}` → `{new}`; "
             f"verdict {v_before} → {v_after} (same tables).")  # fmt: skip
    assert entry in text and BEFORE_THE_RECORD in text
    assert f"| 6a | `{rule_hash(catalog.rule('6a'))}` | {v_after}, since 2026-11-29 |" in text


def test_a_verdict_moved_by_its_evidence_under_the_same_rule_is_logged_with_why(tmp_path):
    """Issue 87, item 2: c33e794 dropped Gemma-3 from the default profile and moved claims 1, 5 and 6a, and the
    changelog, which logged only changes of a rule's hash, recorded none of it. A verdict that moves under the same
    rule is now logged (hash_before = hash_after) with what changed in the evidence: a model no longer measured, or
    the tables rewritten; an unchanged verdict logs nothing. Planted: the verdict's move ignored (only a hash logs:
    nothing here is logged) and the models left out of the record (the why names the tables, not the model)."""
    import pandas as pd

    from linrec.base.tables import save_table

    results = tmp_path / "results" / "default"
    shutil.copytree(DEFAULT, results, ignore=shutil.ignore_patterns("notebooks", "figures", "timings", "report.*",
                                                                    "rule_*.csv"))  # fmt: skip
    r2 = load_table("r2_lin", results)
    two = pd.concat([r2, r2.assign(model="gemma3-270m")], ignore_index=True)
    save_table(two, "r2_lin", results)
    claims = catalog.build(Results(results))
    assert record(results, claims, today="2026-11-27").empty
    assert set(load_table("rule_hashes", results)["models"]) == {"smollm2-135m gemma3-270m"}
    save_table(r2, "r2_lin", results)  # the profile now measures one model
    c1 = next(c for c in claims if c.number == 1)
    moved = [replace(c, verdict="partly reproduced") if c is c1 else c for c in claims]
    logged = record(results, moved, today="2026-11-28").to_dict("records")
    h = rule_hash(catalog.rule(1))
    assert logged == [{"claim": "1", "recorded": "2026-11-28", "hash_before": h, "hash_after": h,
                       "verdict_before": c1.verdict, "verdict_after": "partly reproduced", "tables": "same",
                       "why": "the evidence changed: gemma3-270m no longer measured"}]  # fmt: skip
    assert record(results, moved, today="2026-11-29").empty  # the same verdict again: nothing new
    assert (f"- 2026-11-28, `results/default/`, claim 1: the evidence changed: gemma3-270m no longer measured, under "
            f"the same rule `{h}`; verdict {c1.verdict} → partly reproduced.") in changelog(tmp_path)  # fmt: skip
    again = [replace(c, verdict=c1.verdict) if c.number == 1 else c for c in moved]
    save_table(load_table("r2_lin", results).assign(r2_lin=0.5), "r2_lin", results)  # claim 1 reads r2_lin_summary
    assert record(results, again, today="2026-11-30")["why"].tolist() == [
        "the evidence changed: neither the rule nor the tables it reads here moved (a joined experiment's folder, "
        "or the statistics below the rule, did)"
    ]


def test_the_committed_changelog_records_c33e794():
    """The default's move to SmolLM2 alone (c33e794) is in the changelog: claims 1, 5 and 6a, before and after."""
    text = (ROOT / "paper" / "rules-changelog.md").read_text()
    for claim, before, after in (("1", "partly reproduced", "reproduced"), ("5", "not reproduced", "not testable"),
                                 ("6a", "partly reproduced", "reproduced")):  # fmt: skip
        line = next(
            x for x in text.splitlines() if x.startswith(f"- 2026-11-27, `results/default/`, claim {claim}: c33e")
        )
        assert line.endswith(f"verdict {before} → {after}.") and "gemma3-270m" in line


def test_the_committed_changelog_is_generated_from_the_committed_records():
    """paper/rules-changelog.md is `changelog` of the checkout's results folders (rerun `linrec report` after a
    rule changes), and says honestly what predates the record: the 2b, 5, 6b and 7b changes, not captured."""
    text = (ROOT / "paper" / "rules-changelog.md").read_text()
    assert text == changelog(ROOT)
    assert "2b, 5, 6b and 7b" in BEFORE_THE_RECORD and "not captured" in BEFORE_THE_RECORD


def test_the_report_prints_each_rules_hash_under_its_words(tmp_path):
    from linrec.outputs.report import render

    text = render(DEFAULT, tmp_path / "figs", tmp_path / "report.md")
    for entry in CATALOG:
        section = text.split(f"### Claim {entry.id}:")[1]
        rule_line = next(ln for ln in section.splitlines() if ln.startswith("**Rule.**"))
        assert rule_line.endswith(f"*Rule `{rule_hash(entry.rule)}`.*"), entry.id


def test_the_smoke_profiles_scratch_folder_never_enters_the_changelog(tmp_path):
    """`make smoke` records its rules in results/smoke/ (git-ignored); the committed changelog must not list it, or
    a fresh clone, which has no such folder, would generate another text. Planted: SCRATCH emptied fails."""
    import shutil

    for name in ("default", "smoke"):
        (tmp_path / "results" / name).mkdir(parents=True)
        shutil.copy(ROOT / "results" / "default" / "rule_hashes.csv", tmp_path / "results" / name)
    text = changelog(tmp_path)
    assert "`results/default/`" in text and "results/smoke" not in text
