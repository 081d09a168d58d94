"""The catalog of the paper's claims (`linrec.outputs.catalog`): one row per claim, whose parts agree with each other,
rule words that follow the thresholds the verdict reads (issue 45, item 6; issue 47, item 1), and `claims`, which
follows its rules on the tables there are and decides nothing without evidence (issue 51)."""

from __future__ import annotations

import itertools
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers import DEFAULT
from helpers import claims_1_3_results as _results
from linrec.base.errors import LinrecError
from linrec.base.registry import TABLES
from linrec.base.tables import load_table, result_columns, table_path
from linrec.claims import probe, swap
from linrec.claims.rules import NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED, VERDICTS, Rule, judge
from linrec.outputs.catalog import CATALOG, claims, of_study, row, rule
from linrec.outputs.catalog import render as render_claim
from linrec.outputs.claim_table import tally_line
from linrec.outputs.report import render
from linrec.outputs.report_figures import FIGURES
from linrec.outputs.results import Results
from linrec.studies.stages import STUDIES


def test_the_catalog_holds_each_claim_once():
    ids = [str(entry.id) for entry in CATALOG]
    assert len(ids) == len(set(ids)), ids
    assert all(isinstance(entry.rule, Rule) for entry in CATALOG)
    assert row("6a").id == "6a" and row(3) is row("3") and rule("7b") is row("7b").rule
    with pytest.raises(LinrecError, match="no claim '6c'"):
        row("6c")


def test_each_row_pairs_the_rule_templates_and_figures_of_one_claim():
    """A row holds claim n's verdict, templates (`lines_n`, `head_n`) and `RULE_n` (named so in the verdict's own
    module), figures the report knows, a title, the paper's words and a caveat. A row that paired claim 3's rule with
    claim 7a's templates, or named a figure no notebook draws, fails here."""
    stems = {stem for stem, _, _ in FIGURES}
    for entry in CATALOG:
        n = str(entry.id)
        assert entry.rule.verdict.__name__ == f"verdict_{n}", n
        assert (entry.lines.__name__, entry.head.__name__) == (f"lines_{n}", f"head_{n}"), n
        assert getattr(sys.modules[entry.rule.verdict.__module__], f"RULE_{n.upper()}") is entry.rule, n
        assert set(entry.figures) <= stems, (n, set(entry.figures) - stems)
        assert entry.title and entry.paper and entry.caveat, n
        assert entry.rule.names() and all(isinstance(v, (int, float)) for v in vars(entry.rule.values()).values())
        assert entry.rule.reads and set(entry.rule.reads) <= set(TABLES), n  # what it reads: results tables
        assert {TABLES[t].notebook for t in entry.rule.reads} <= set(entry.notebooks), n  # written by its studies
        v = entry.rule(*[None] * len(entry.rule.reads))  # no tables: "not run", under its own id
        assert v.claim == entry.id, n


def test_the_claims_in_words_come_in_the_catalogs_order_with_its_words():
    out = claims(DEFAULT)
    assert [c.number for c in out] == [entry.id for entry in CATALOG]
    assert [(c.title, c.paper) for c in out] == [(entry.title, entry.paper) for entry in CATALOG]


def _moved(value):
    """A value no threshold has, of the threshold's kind (a count stays a whole number)."""
    return value + 5 if isinstance(value, int) else round(value * 1.37 + 0.0123, 4)


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: f"claim {e.id}")
def test_every_named_threshold_moves_the_rules_words(entry):
    """Plant each threshold a rule names, in a rule built with that one threshold moved: the rule's words or its
    "what would change it" must move. A number typed into the words beside the threshold (say '+1 perplexity'
    instead of the budget) leaves them as they were and fails here."""
    before = (entry.rule.words, entry.rule.change)
    for name in entry.rule.names():
        planted = entry.rule.planted(**{name: _moved(getattr(entry.rule.thresholds, name))})
        assert (planted.words, planted.change) != before, f"claim {entry.id}: {name} is not in its words"
    assert (entry.rule.words, entry.rule.change) == before  # the catalog's own rule is untouched


def _written(value) -> set[str]:
    """The ways the rules write a threshold: as it is, with :g, two decimals, or as a percentage."""
    out = {str(value), f"{value:g}"}
    if isinstance(value, float):
        out |= {f"{value:.2f}"} | ({f"{value:.0%}", f"{value * 100:g} %", f"{1 - value:.0%}"} if value < 1 else set())
    return out


# a number in a rule's words that equals a threshold's but is not it, by claim: claim 3's "two one-sided tests at
# 5 %" is the level of its 90 % interval, not the 0.05 of CLAIM3_MAX_GAIN
NOT_A_THRESHOLD = {"3": {"5 %"}}


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: f"claim {e.id}")
def test_no_threshold_is_typed_beside_its_name(entry):
    """With every threshold a rule names planted at once, none of their former values may still stand in its words:
    a threshold typed at one place and read at another (claim 4's R²_lin ≥ 0.6 typed in the rule, read in the
    change) fails here, which the test above cannot see."""
    before = vars(entry.rule.values())
    planted = entry.rule.planted(**{name: before[name] + 5 if isinstance(before[name], int) else 0.4321 + i * 1e-4
                                    for i, name in enumerate(entry.rule.names())})  # fmt: skip
    text = f"{planted.words} || {planted.change}"
    typed = {
        (name, s)
        for name, value in before.items()
        for s in _written(value) - NOT_A_THRESHOLD.get(str(entry.id), set())
        if re.search(rf"(?<![\d.]){re.escape(s)}(?!\d)", text)
    }
    assert not typed, f"claim {entry.id}: {sorted(typed)} typed in its words"


def test_a_planted_threshold_changes_the_decision_and_both_texts_together():
    """Claim 7a's share and claim 6a's budget planted in a rule built with them (no module touched): the verdict on
    the same table flips and the rule and its "what would change it" state the planted number."""
    table = pd.DataFrame([{"model": "m", "n_blocks": 10, "n_short": 3, "share_short": 0.3}])  # 30 % of blocks short
    assert judge(rule("7a"), {"pitfall_summary": table}).verdict == REPRODUCED
    assert "at least 25% of all blocks" in rule("7a").words
    half = rule("7a").planted(CLAIM7_SHARE=0.5)
    assert judge(half, {"pitfall_summary": table}).verdict == NOT_REPRODUCED
    assert "at least 50% of all blocks" in half.words and "more than 50% of the" in half.change
    assert judge(rule("7a"), {"pitfall_summary": table}).verdict == REPRODUCED and probe.CLAIM7_SHARE == 0.25

    wide = rule("6a").planted(CLAIM6_BUDGET=2.5)
    words, change = wide.words, wide.change
    assert "ΔPPL ≤ +2.5" in words and "within +2.5 perplexity" in change and "+1" not in words + change
    tables = {n: load_table(n, DEFAULT) for n in wide.reads}
    held = [e["delta_hi"] for e in judge(rule("6a"), tables).evidence]
    budget = max(held) + 0.01  # every screened block within this budget: claim 6a holds for every model
    assert judge(rule("6a").planted(CLAIM6_BUDGET=budget), tables).verdict == REPRODUCED
    margin = rule(3).planted(EQUIVALENCE_MARGIN=0.2)  # claim 3's margin; 6b's is its own
    assert "±0.2" in margin.words and "±0.2" in margin.change and "±0.3" not in margin.words + margin.change
    assert np.isclose(swap.EQUIVALENCE_MARGIN, 0.3) and "−0.3" in rule("6b").words and "±0.3" in rule(3).words


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
    assert tally_line(c.verdict for c in out).endswith(f"Of {len(CATALOG)} checks: {len(CATALOG)} not testable.")


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


def test_claims_follow_their_rules(tmp_path):
    c = {x.number: x for x in claims(_results(tmp_path))}
    assert c[1].verdict == "reproduced" and "0.200 to 0.990" in c[1].ours and "(9 of 10 moves)" in c[1].ours
    assert c[3].verdict == "reproduced"
    untested = ("2a", "2b", 4, 5, "6a", "6b", "7a", "7b")
    assert all(c[n].verdict == "not testable" for n in untested)  # their tables were never written
    assert "notebook 07 not run" in c["2a"].ours and "notebook 07 not run" in c["2b"].ours
    c = {x.number: x for x in claims(_results(tmp_path, jump=0.1, gain=0.2))}
    assert c[1].verdict == "not reproduced" and c[3].verdict == "not reproduced"
    c = {x.number: x for x in claims(_results(tmp_path, ci=(0.10, 0.60), ci90=(0.15, 0.55)))}
    assert c[3].verdict == "not reproduced"  # a CI that excludes 0: the gain does track nonlinearity
    c = {x.number: x for x in claims(_results(tmp_path, ci90=(-0.2, 0.35)))}
    assert c[3].verdict == "not testable" and "inconclusive (not testable at this power)" in c[3].ours


def test_a_table_with_old_columns_names_its_notebook_and_decides_nothing(tmp_path):
    """A table an older linrec wrote is left out: its claim is not testable and says which notebook to rerun, the
    report lists it, and the other claims are judged as before (it stopped the whole report before)."""
    d = _results(tmp_path)
    pd.DataFrame([{"model": "m", "min R²_lin": 0.2}]).to_csv(d / "r2_lin_summary.csv", index=False)
    c = {x.number: x for x in claims(d)}
    assert c[1].verdict == "not testable" and "older linrec (r2_lin_summary); rerun notebook 02" in c[1].ours
    assert c[3].verdict == "reproduced"
    text = render(d, tmp_path / "figs", tmp_path / "paper" / "report.md")
    assert (
        "Left out, because an older linrec wrote them (a claim that reads one says so): notebook 02's r2_lin_summary"
        in text
    )
    t = pd.read_csv(d / "probe_summary.csv").astype({"gain_median": object})
    t.loc[0, "gain_median"] = "lots"  # a damaged table (not an old one) still stops the report, naming its notebook
    t.to_csv(d / "probe_summary.csv", index=False)
    with pytest.raises(LinrecError, match="rerun notebook 03"):
        claims(d)


def test_every_claim_is_not_testable_without_its_tables():
    """Every rule of the catalog, given no tables, says "not run" under its own id."""
    for entry in CATALOG:
        args = [None] * entry.rule.verdict.__code__.co_argcount
        v = entry.rule(*args)
        assert v.claim == entry.id and v.verdict == NOT_TESTABLE and "not run" in v.reason


def test_each_claim_reads_the_studies_it_names_and_no_other(tmp_path):
    """A row's `notebooks` are the studies its rule reads (`of_study` lists a study's claims by them): with every
    table of the other studies gone, each claim's verdict and sentence are as before; with its own studies' tables
    header-only, it is not testable, and each of those studies alone moves its words. (The copies have no other
    profile's folder beside them, so no claim quotes one.) A row that named too few studies fails the first; one that
    named a study it does not read, the second."""

    def judged(entry, folder) -> tuple[str, str]:
        c = render_claim(entry, entry.decide(Results(folder), entry.rule))
        return c.verdict, c.ours

    base = {c.number: (c.verdict, c.ours) for c in claims(_copy(tmp_path / "all"))}
    stages = {s.notebook for s in STUDIES}
    for entry in CATALOG:
        assert set(entry.notebooks) <= stages and entry in of_study(entry.notebooks[0]), entry.id
        assert {nb for stem, nb, _ in FIGURES if stem in entry.figures} <= set(entry.notebooks), entry.id
        work = _copy(tmp_path / f"claim{entry.id}")
        for name, spec in TABLES.items():
            path = table_path(name, work)
            if path.is_file() and spec.notebook not in entry.notebooks:
                path.unlink()
        assert judged(entry, work) == base[entry.id], entry.id
        for nb in entry.notebooks:  # each study it names, alone, moves it (where this run wrote that study's tables)
            paths = [table_path(n, work) for n, spec in TABLES.items() if spec.notebook == nb]
            kept = {p: p.read_bytes() for p in paths if p.is_file()}
            if not kept:
                continue
            for p in kept:
                pd.read_csv(p).iloc[:0].to_csv(p, index=False)
            assert judged(entry, work) != base[entry.id], (entry.id, nb)
            for p, data in kept.items():
                p.write_bytes(data)
        for name, spec in TABLES.items():
            path = table_path(name, work)
            if path.is_file() and spec.notebook in entry.notebooks:
                pd.read_csv(path).iloc[:0].to_csv(path, index=False)
        assert judged(entry, work)[0] == NOT_TESTABLE, (entry.id, judged(entry, work))


def test_claim_7b_states_the_real_blocks_rho_or_why_there_is_none(tmp_path):
    """Beside the dose, the real mechanism blocks' ρ of steps to the ceiling with scaled κ: the default's four blocks
    give one (0.95), stated without the caveat; with fewer than 3 blocks there is none, and the sentence says why."""
    shutil.copy(DEFAULT / "pitfall_summary.csv", tmp_path / "pitfall_summary.csv")
    ours = {c.number: c for c in claims(tmp_path)}["7b"].ours
    assert "4 mechanism blocks" in ours and "against it ρ = 0.95;" in ours and "none under 3" not in ours
    t = pd.read_csv(tmp_path / "pitfall_summary.csv").assign(blocks_n=2, blocks_rho_scaled=np.nan)
    t.to_csv(tmp_path / "pitfall_summary.csv", index=False)
    ours = {c.number: c for c in claims(tmp_path)}["7b"].ours
    assert "2 mechanism blocks" in ours and "against it no ρ (none under 3 blocks);" in ours


# One threshold per claim, planted through its catalog row, with the verdict it gives on the committed default run
# (the claim's verdict as the report states it: 2a's joined with the seeds experiment's and the zoo's; None: no value
# of that claim's thresholds moves the default's verdict, e.g. claim 4's regime cut-offs, which act where notebook 04
# builds its summary; there the planted number must still reach the words).
PLANTS = {
    "1": ("CLAIM1_SPAN", 1.0, NOT_REPRODUCED),
    "2a": ("CLAIM2_MIN_EFFECT", 0.5, NOT_REPRODUCED),
    "2b": ("CLAIM2B_MIN_BAND", 5, None),
    "3": ("EQUIVALENCE_MARGIN", 0.6, REPRODUCED),
    "4": ("OUTLIER_RANK", 5.0, None),
    "5": ("CLAIM5_MARGIN", 0.08, NOT_REPRODUCED),
    "6a": ("CLAIM6_BUDGET", 0.5, NOT_TESTABLE),
    "6b": ("EQUIVALENCE_MARGIN", 0.2, None),
    "7a": ("CLAIM7_SHARE", 0.95, NOT_REPRODUCED),
    "7b": ("CLAIM7B_FLAT", 0.1, NOT_REPRODUCED),
}


def test_a_planted_threshold_reaches_the_verdict_and_every_narrator_alike(tmp_path, monkeypatch):
    """Issue 86: notebook 06's findings read the module constants `CLAIM6_BUDGET` and `EQUIVALENCE_MARGIN` while the
    verdict and the report read the rule's thresholds, so a planted threshold changed the verdict and the report,
    not the notebook's words; the report's robustness paragraph likewise stated 3's and 6b's margin from the module.
    One threshold per claim is planted through its catalog row (all at once: one report) and each narrator is read:
    the verdict (`judge` on the row's rule, what notebooks 02-07 print), the claim's section of the report, the README
    block's row, and the findings each claim's notebooks print (`linrec.outputs.findings`: the section's evidence,
    word for word, since one narrator words both). Planted: notebook 06 wording 6a/6b itself again with
    `CLAIM6_BUDGET` / `EQUIVALENCE_MARGIN` (its words keep +1 and 0.3), `_robustness` reading
    `linrec.analyses.uncertainty.EQUIVALENCE_MARGIN` (its ±0.3 stays)."""
    from dataclasses import replace

    import linrec.outputs.catalog as cat
    from linrec.outputs.catalog import build
    from linrec.outputs.findings import findings
    from linrec.outputs.report import readme_section

    assert set(PLANTS) == {str(entry.id) for entry in CATALOG}, "one plant per claim"
    before = {str(c.number): c.verdict for c in build(Results(DEFAULT))}
    rows = tuple(replace(e, rule=e.rule.planted(**{PLANTS[str(e.id)][0]: PLANTS[str(e.id)][1]})) for e in CATALOG)
    monkeypatch.setattr(cat, "CATALOG", rows)
    r = Results(DEFAULT)
    report = render(DEFAULT, tmp_path / "figures", tmp_path / "report.md")
    (tmp_path / "report.md").write_text(report)
    readme = readme_section(DEFAULT, tmp_path / "report.md")
    after = {str(c.number): c.verdict for c in build(r)}
    for cid, (name, value, expected) in PLANTS.items():
        verdict = after[cid]
        if expected is not None:
            assert before[cid] != expected and verdict == expected, f"claim {cid}: {name}={value} gives {verdict}"
        section = report.split(f'<a id="claim-{cid}"></a>')[1].split("<a id=")[0]
        assert f"**Verdict: {verdict}.**" in section, f"claim {cid}: the report's section says another verdict"
        words = section.split("**Rule.**")[1].split("**Evidence.**")[0]
        assert f"{value:g}" in words or f"{value:.0%}" in words, f"claim {cid}: {name} is not in the rule's words"
        line = next(x for x in readme.splitlines() if x.startswith(f"| [{cid}]("))
        assert f"| **{verdict}** |" in line, f"claim {cid}: the README block's row says another verdict"
    swap_words = findings(r, "06")  # notebook 06's findings: the catalog's words for 6a and 6b
    assert any("intervals within +0.5" in x for x in swap_words)
    assert not any("intervals within +1" in x for x in swap_words)
    assert any("ρ ≤ −0.2" in x for x in swap_words) and not any("ρ ≤ −0.3" in x for x in swap_words)
    for entry in rows:  # each claim in its notebooks' findings: the verdict, and its section's evidence word for word
        cid = str(entry.id)
        section = report.split(f'<a id="claim-{cid}"></a>')[1].split("<a id=")[0]
        for nb in entry.notebooks:
            lines = findings(r, nb)
            head = lines.index(f"Claim {cid} ({entry.title}): {after[cid]}.")
            said = [x[4:] for x in itertools.takewhile(lambda x: x.startswith("  - "), lines[head + 1 :])]
            assert said and all(f"- {x}" in section for x in said), f"claim {cid}: notebook {nb} words it otherwise"
    robustness = report.split("**Robustness.**")[1].split("\n\n")[0]
    assert "±0.6" in robustness and "ρ ≤ −0.2" in robustness and "0.3" not in robustness
