"""linrec.outputs.claim_table: the claim table judged once, other profiles' verdicts beside this one's (a tally line
and a column each, the zoo's on the claims it judges), and the notebooks' conclusions worded by today's rules."""

import re

import pandas as pd

from helpers import DEFAULT, ROOT
from linrec.base.tables import load_table, save_table
from linrec.outputs import catalog
from linrec.outputs.claim_table import claim_table
from linrec.outputs.report import render


def _claim_rows(text: str) -> list[list[str]]:
    rows = re.findall(r"^\| \[[0-9ab]+\]\(#claim-.*$", text, flags=re.M)
    return [re.split(r"(?<!\\)\|", row)[1:-1] for row in rows]


def _tables_of(run, tmp_path):
    """A copy of the results tables of `run` (no executed notebooks), to plant in."""
    import shutil

    d = tmp_path / run.name
    shutil.copytree(run, d, ignore=shutil.ignore_patterns("notebooks", "figures", "timings", "report.*"))
    return d


def test_what_the_notebooks_concluded_says_only_what_no_claim_section_says(tmp_path, monkeypatch):
    """Issue 86 (one narrator): the section once worded claims 5, 6a, 6b, 2a and 2b a second time, beside their own
    sections (and issue 64: with a word stored under an older rule). It now holds only what notebooks 06 and 07
    measured beside their claims (`linrec.outputs.findings.beside`), in the stages' order, from the tables; no claim
    is worded there, and a study left out leaves its lines out. Guards the claims' second wording coming back
    (planted: a claim's evidence line among them)."""
    import linrec.outputs.report
    from linrec.outputs.findings import controls_beside, swap_beside
    from linrec.outputs.results import Results
    from linrec.studies.stages import STUDIES

    d = _tables_of(DEFAULT, tmp_path)

    def concluded() -> list[str]:
        text = render(d, tmp_path / "figs", tmp_path / "report.md")
        return text.split("## What the notebooks concluded\n\n")[1].split("\n\n")[1].splitlines()

    r = Results(d)
    swap, controls = swap_beside(r), controls_beside(r)
    assert len(swap) > 2 and len(controls) > 2
    lines = concluded()
    assert lines == [f"- {x}" for x in swap + controls]
    evidence = [d for c in catalog.build(r) for d in c.details]
    assert not any(x[2:] in evidence for x in lines) and not any("Claim 6" in x for x in lines)
    monkeypatch.setattr(linrec.outputs.report, "STUDIES", [s for s in STUDIES if s.name != "swap"])
    assert concluded() == [f"- {x}" for x in controls]


def test_the_default_report_shows_every_profiles_verdicts_beside_its_own(tmp_path):
    """Issue 64: the front page showed the default's verdicts alone (and full's as a default-only column). A profile
    names the results folders whose verdicts it shows (`beside`): a tally line each and a column each, the zoo's only
    on the claims it judges (2a, 3, 4, 6b), judged by today's rules on the zoo's measured tables, not read from the
    words notebook 08 stored. Guards a column dropped, a folder read in another's place, the zoo's stored words
    (planted stale here) shown, and this profile's own folder listed beside itself."""
    import shutil

    from helpers import claims_1_3_results
    from linrec.claims.probe import verdict_3
    from linrec.claims.regimes import verdict_4
    from linrec.claims.swap import verdict_6b
    from linrec.claims.zoo import zoo_verdict
    from linrec.outputs.claim_table import beside

    one = claims_1_3_results(tmp_path / "one")  # claim 1 reproduced here
    two = claims_1_3_results(tmp_path / "two", max_r2=0.5, jump=0.05)  # and not there
    project = tmp_path / "project"
    shutil.copytree(one, project / "results" / "default")
    shutil.copytree(two, project / "results" / "full")
    zoo = _tables_of(ROOT / "results" / "zoo", project / "results")
    claims = load_table("zoo_claims", zoo)
    save_table(claims.assign(verdict="stale"), "zoo_claims", zoo)  # stale words: never shown
    save_table(load_table("zoo_verdict", zoo).assign(claim2a="stale"), "zoo_verdict", zoo)
    folders = [project / "results" / n for n in ("default", "full", "zoo")]
    table = claim_table(folders[0], folders, project)
    assert [b.name for b in table.beside] == ["full", "zoo"]  # its own folder is not beside itself
    text = render(folders[0], tmp_path / "figs", tmp_path / "paper" / "report.md", table=table)
    head = text[: text.index("## Setup")]
    n = len(catalog.CATALOG)
    assert f"- **Does the paper hold?** Of {n} checks:" in head
    assert f"- **Profile full** (its column; `results/full/`: its models), of {n} checks:" in head  # no capture table
    n_runs = len(load_table("zoo_runs", zoo))
    runs = load_table("zoo_runs", zoo)
    kept = runs[runs["converged"].astype(bool)]["run"].astype(str).tolist()
    assert len(kept) == n_runs  # every committed zoo run converged: the decomposition on disk is theirs
    two_a = zoo_verdict(load_table("zoo_components", zoo), load_table("training_comparisons", zoo), runs)["claim2a"]
    expected = {"2a": two_a, "3": verdict_3(load_table("zoo_probe_summary", zoo)).verdict,
                "4": verdict_4(load_table("zoo_regimes", zoo)).verdict,
                "6b": verdict_6b(load_table("zoo_swap_predictors", zoo)).verdict}  # fmt: skip
    size = f"{runs['block_params'].median() / 1e6:.3g}"  # the zoo's miniature: 1.59 M block parameters a run
    zoo_tally = re.search(rf"- \*\*Profile zoo\*\* \(its column; `results/zoo/`: {n_runs} decoders trained here"
                          rf", about {size} M block parameters each\), of 4 checks: (.*)\.", head)  # fmt: skip
    assert zoo_tally, head
    counted = {w: int(k) for k, w in re.findall(r"(\d+) ([a-z ]+?)(?:,|$)", zoo_tally[1])}
    assert counted == {w: list(expected.values()).count(w) for w in set(expected.values())}
    assert "| verdict | full | zoo |" in head
    for row in _claim_rows(head):
        claim = row[0].strip()[1:].split("]")[0]
        own, full, in_zoo = (c.strip().strip("*") for c in row[6:9])
        assert in_zoo == expected.get(claim, "—"), (claim, in_zoo)
        assert in_zoo != "stale"
        if claim == "1":
            assert own == "reproduced" and full in {"not reproduced", "not testable", "partly reproduced"}
    assert beside(folders[0], folders[0]) is None and beside(project / "results" / "absent", folders[0]) is None
    smoke = render(folders[0], tmp_path / "figs", tmp_path / "paper" / "smoke.md")  # a profile that names none
    assert "Profile full" not in smoke and "| verdict |\n" in smoke


def test_the_widest_evidence_leads_where_the_subset_says_reproduced_and_it_says_partly(tmp_path):
    """Issue 87, item 1: the front page led with the default's tally although the default measured one model of the
    full profile's two (c33e794). Planted: a subset folder (model m) reproduces claim 1; the wider folder (m and m2,
    m2 failing) reproduces it in part; a document-split alternative (m alone) reproduces it. The table's first line
    is the answer's tally, claim 1's answer is 'partly reproduced' decided by the wider folder, this run's own
    'reproduced' sits in its 'this run' column, and an alternative that does not confirm a reproduced claim lowers it
    (the alternative's probe fails claim 3 there). Planted bugs: the subset deciding (claim 1 reads
    reproduced on top) and an alternative raising a verdict (claim 3 reads reproduced)."""
    import shutil

    from helpers import claims_1_3_results
    from linrec.outputs.claim_table import claim_rows
    from linrec.outputs.report import readme_section

    sub = claims_1_3_results(tmp_path / "sub")
    wide = claims_1_3_results(tmp_path / "wide")
    for name in ("r2_lin_summary", "r2_lin"):
        t = load_table(name, wide)
        if name == "r2_lin_summary":  # m holds without position 0 too (the helper's row fails there)
            t = t.assign(r2_ex_first_max=0.99, direction_changes_disjoint_ex_first=5)
        other = t.assign(model="m2")
        if name == "r2_lin_summary":
            other = other.assign(r2_max=0.5, max_jump_disjoint=0.05, max_jump_fdr=0.05, max_jump_disjoint_ex_first=0.05)
        save_table(pd.concat([t, other], ignore_index=True), name, wide)
    alt = tmp_path / "documents"
    shutil.copytree(claims_1_3_results(tmp_path / "alt", gain=0.2), alt)  # the probe gains too much here: 3 fails
    t = claim_table(sub, [wide], tmp_path, [alt])
    e = t.answers
    assert e is not None and e.widest == "wide/results" and e.models == ("m", "m2") and e.alternatives == ("documents",)
    assert {str(c.number): c.verdict for c in t.claims}["1"] == "reproduced"  # the subset's own verdict
    assert e.answers["1"].verdict == "partly reproduced" and e.answers["1"].decided.models == ("m", "m2")
    three = e.answers["3"]
    assert (three.decided.verdict, three.verdict, three.unconfirmed) == ("reproduced", "partly reproduced",
                                                                         ("documents",))  # fmt: skip
    rows = claim_rows(t)
    assert rows[2].startswith("- **Does the paper hold?** On the widest evidence (each claim judged on `wide/results/`")
    assert "2 partly reproduced" in rows[2] and "claims 1 and 3 hold in part" in rows[2]
    assert rows[3].startswith("- **This run** (`sub/results/`: m;")
    one = next(r for r in rows if r.startswith("| [1]("))
    cells = [c.strip() for c in one.split(" | ")]
    assert cells[3] == "**partly reproduced** (results: m, m2)" and cells[7] == "reproduced"
    (tmp_path / "report.md").write_text("")
    assert "On the widest evidence" in readme_section(sub, tmp_path / "report.md", t).splitlines()[3]
    assert claim_table(sub, [], tmp_path).answers is None  # nothing beyond this profile: the table as before


def test_a_zoos_folder_is_judged_by_the_catalog_and_its_own_report_records_only_the_zoos_claims(tmp_path):
    """Issue 86 item 2: the catalog judges a zoo's folder like any other (claims 2a, 3, 4 and 6b on the zoo's own
    tables, `Rule.zoo`: the verdicts the column beside the default shows), and `linrec report --params zoo`
    (`publish` on that folder) records those four verdicts, the ones the default's report records for the folder
    beside it, not the per-model claims its notebooks did not run (until now: ten rows, claim 3 "not testable" where
    the zoo says "not reproduced"). Guards the record's filter (planted: `record(…, table.claims)` again in `publish`:
    ten rows) and the zoo folder's verdicts (planted: a zoo's own tables quoted beside an untestable verdict)."""
    from linrec.outputs.claim_table import beside, built, judged_here
    from linrec.outputs.report import publish
    from linrec.outputs.results import Results

    project = tmp_path / "project"
    zoo = _tables_of(ROOT / "results" / "zoo", project / "results")
    (project / "pyproject.toml").write_text("")  # the checkout's root: the folder is one of its results/
    want = beside(ROOT / "results" / "zoo", ROOT / "results" / "default").verdicts
    assert set(want) == {"2a", "3", "4", "6b"}
    claims = {str(c.number): c.verdict for c in judged_here(Results(zoo), built(zoo))}
    assert claims == want
    assert claims["3"] == "not reproduced"  # the zoo's pooled rule, not "notebook 03 not run"
    values = {
        "results_dir": "results/zoo",
        "figures_dir": "results/zoo/figures",
        "report_path": "results/zoo/report.md",
    }
    publish(values, project, {})
    recorded = load_table("rule_hashes", zoo)
    assert dict(zip(recorded["claim"].astype(str), recorded["verdict"])) == want
    assert load_table("rule_changes", zoo).equals(load_table("rule_changes", ROOT / "results" / "zoo"))  # none new
