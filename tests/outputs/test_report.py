"""linrec.outputs.report: the report builder reads results files, applies its stated rules, and changes when a
result changes; its setup, robustness and limitations sections, the README block, and the default report's first
screen."""

import filecmp
import re
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import yaml

from helpers import DEFAULT, ROOT, planted
from helpers import claims_1_3_results as _results
from helpers import project_with_a_curve_run as _project_with_a_curve_run
from linrec.analyses.coverage import coverage
from linrec.app.profile import load_profile
from linrec.base.errors import LinrecError
from linrec.base.registry import TABLES
from linrec.base.tables import load_table, save_table
from linrec.outputs import catalog, methods
from linrec.outputs.catalog import CATALOG
from linrec.outputs.claim_text import CELL_LIMIT
from linrec.outputs.refresh import curve_split, stand_alone
from linrec.outputs.report import (
    README_END,
    README_START,
    build_report,
    per_block_table,
    profile_table,
    readme_section,
    render,
    report_setup,
    write_report,
)


def test_a_changed_result_changes_the_report(tmp_path):
    d = _results(tmp_path)
    out = tmp_path / "paper" / "report.md"
    before = build_report(d, tmp_path / "figs", out).read_text()
    _results(tmp_path, max_r2=0.876)
    after = build_report(d, tmp_path / "figs", out).read_text()
    assert "0.990" in before and "0.990" not in after and "0.876" in after
    assert out.with_suffix(".html").read_text().count("<table>") >= 2


def test_the_html_report_links_another_profiles_html_report_and_leaves_other_links_as_written(tmp_path):
    """The default's routing section links results/full's report: in the .html that link is to full's .html."""
    from linrec.outputs.report import html_page

    text = ("[`results/full/report.md`](../results/full/report.md#routing) · [a](../results/full/report.md) · "
            "[claims](claims.md) · [1](report.md#claim-1) · ![f](../figures/f.png)")  # fmt: skip
    page = html_page(text, tmp_path)
    assert 'href="../results/full/report.html#routing"' in page and 'href="../results/full/report.html"' in page
    assert 'href="claims.md"' in page and 'href="report.md#claim-1"' in page and "../figures/f.png" in page


def test_the_curve_profiles_measured_bias_is_quoted_with_where_it_came_from(tmp_path):
    """The default profile skips the learning curve; once params/curve.yaml has run, the report's limitation quotes
    the bias that run measured (the large-n gain per model) and names the run, instead of only pointing at it."""
    curve, _ = _project_with_a_curve_run(tmp_path, stale=False)
    overview = planted("r2_curve_overview", fill=0.0, model="m", n_blocks=12, ref_tokens=16384.0,
                       largest_tokens=204800.0, gain_inf_median=0.028, gain_inf_max=0.056)  # fmt: skip
    save_table(overview, "r2_curve_overview", curve)
    d = tmp_path / "project" / "results"
    text = render(d, tmp_path / "project" / "figures", tmp_path / "project" / "paper" / "report.md")
    assert (
        "Measured by notebook 02's learning curve (its last run under `params/curve.yaml`, in `results/curve/`), the "
        "default train size sits below the large-n estimate by m 0.028 (median over blocks, up to 0.056)" in text
    )
    assert "This profile skips it" not in text
    assert "80/20 split draws on" not in text  # no row of that run's r2_curve at this run's train rows: no comparison

    # the same run's per-block curve at this profile's 16,384 train rows (and at twice that, not read): blocks 0 and 1
    # of this run's r2_lin (± 0.02) planted 0.01 and 0.05 below, so both lower and block 1 outside
    blocks = load_table("r2_lin", d).assign(n_train=16384)
    save_table(blocks.assign(r2_lo=blocks["r2_lin"] - 0.02, r2_hi=blocks["r2_lin"] + 0.02), "r2_lin", d)
    rows = [planted("r2_curve", fill=0.0, model="m", block=b, train_tokens=16384.0, n_train=16384, r2=r - x)
            for b, r, x in zip(blocks["block"], blocks["r2_lin"], (0.01, 0.05))]  # fmt: skip
    rows.append(planted("r2_curve", fill=0.0, model="m", block=0, train_tokens=32768.0, n_train=32768, r2=0.0))
    save_table(pd.concat(rows, ignore_index=True), "r2_curve", curve)
    text = render(d, tmp_path / "project" / "figures", tmp_path / "project" / "paper" / "report.md")
    assert "80/20 split draws on" not in text  # computed before rendering (refresh, the study), never while it
    save_table(curve_split(d), "curve_split", d)  # as `linrec.outputs.refresh` writes it
    text = render(d, tmp_path / "project" / "figures", tmp_path / "project" / "paper" / "report.md")
    assert (
        "At this run's train rows the curve, whose held-out windows come from more text than this run's 80/20 split "
        "draws on, scores R²_lin in m 2 of 2 blocks lower (median change -0.030, largest drop 0.050 at block 1), 1 "
        "outside this run's window interval (docs/limitations.md)." in text
    )


def test_missing_results_directory_names_the_fix(tmp_path):
    with pytest.raises(LinrecError, match="linrec figures"):
        render(tmp_path / "nothing", tmp_path, tmp_path / "r.md")


def test_readme_block_is_replaced_between_markers_only(tmp_path):
    from linrec.outputs.report import README_END, README_START, update_readme

    d = _results(tmp_path)
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{README_START}\nold numbers\n{README_END}\noutro\n")
    assert update_readme(readme, d)
    text = readme.read_text()
    assert text.startswith("intro\n") and text.endswith("\noutro\n") and "old numbers" not in text
    assert (
        "R²_lin spans 0.20–0.99 in m (largest resolved jump 0.70, 5 turns)." in text and text.count(README_START) == 1
    )
    assert "| [1](paper/report.md#claim-1) |" in text  # each claim links to its section of the report
    plain = tmp_path / "plain.md"
    plain.write_text("no markers")
    assert not update_readme(plain, d) and plain.read_text() == "no markers"


def test_setup_states_the_profiles_analysis_budget(tmp_path):
    d = _results(tmp_path)
    lesson = {"probe_rows": 8192, "test_windows": 12, "screening_windows": 4, "control_rows": 4096}
    text = render(d, tmp_path / "figures", tmp_path / "report.md", {"tokens": 20480, **lesson})
    line = next(ln for ln in text.splitlines() if ln.startswith("- Analysis budget"))
    for needle in ("8,192 seeded train rows", "12 seeded held-out windows", "4 screening", "4,096 seeded stored rows"):
        assert needle in line, line
    full = {k: None for k in lesson} | {"screening_windows": 8}
    line = next(ln for ln in render(d, tmp_path, tmp_path / "r.md", full).splitlines() if "Analysis budget" in ln)
    assert "every train row per block" in line and "every held-out window;" in line and "8 screening" in line
    assert "Analysis budget" not in render(d, tmp_path, tmp_path / "r.md", {"tokens": 20480})


def test_setup_names_the_encoder_of_the_controls(tmp_path):
    d = _results(tmp_path)
    text = render(
        d, tmp_path / "figures", tmp_path / "r.md", {"models": ["smollm2-135m"], "encoder_models": ["minilm-l6"]}
    )
    assert "- **smollm2-135m**: SmolLM2-135M-Instruct, Q4_1 GGUF" in text and "dequantised to float32" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("- **minilm-l6**"))
    assert "all-MiniLM-L6-v2, float32" in line and "float32 as released" in line and "no LM head" in line
    assert "dequantised" not in line


def test_the_report_states_robustness_and_where_fresh_text_lives(tmp_path):
    d = _results(tmp_path)
    text = render(d, tmp_path / "figs", tmp_path / "paper" / "report.md")
    assert "| without position 0 | fresh text | verdict |" in text and "**Fresh text.** Not run in this profile" in text
    assert re.search(r"^\| \[1\]\(#claim-1\) \|.*\| one sample \| \*\*reproduced\*\* \|$", text, flags=re.M)
    rep = {"model": "m", "n_samples": 3, "samples": "0 1 2", "sd_median": 0.012, "sd_max": 0.034, "sd_max_block": 25,
           "ci_half_width_median": 0.021, "n_claim1_passes": 3, "replication": "holds on every sample"}  # fmt: skip
    save_table(pd.DataFrame([rep]), "r2_replicates_summary", d)
    text = render(d, tmp_path / "figs", tmp_path / "paper" / "report.md")
    assert "over samples 0 1 2, between-sample SD per block median 0.012" in text
    assert "claim 1 holds on every sample" in text
    assert re.search(r"^\| \[1\]\(#claim-1\) \|.*\| same on 3 samples \|", text, flags=re.M)
    save_table(pd.DataFrame([{**rep, "replication": "sample-dependent"}]), "r2_replicates_summary", d)
    text = render(d, tmp_path / "figs", tmp_path / "paper" / "report.md")
    assert re.search(r"^\| \[1\]\(#claim-1\) \|.*\| sample-dependent \|", text, flags=re.M)


def test_claim3_without_position_0_and_claim4_on_fresh_text_from_the_full_profile(tmp_path):
    """Claim 3's robustness cell is claim 3's rule on `probe_summary_ex_first` (not a fixed "not measured"), and
    claim 4's fresh-text cell reads `spectrum_replicates_summary` from results/full when this profile has none."""
    from linrec.claims.probe import verdict_3

    d = _results(tmp_path)
    row = lambda text, n: [r for r in _claim_rows(text) if r[0].startswith(f" [{n}]")][0]  # noqa: E731
    text = render(d, tmp_path / "figs", tmp_path / "paper" / "report.md")
    assert row(text, 3)[4].strip() == "not measured" and row(text, 4)[5].strip() == "one sample"
    probe = load_table("probe_summary", d).assign(seconds_probe_total=1.0)  # timings are kept apart
    wide = probe.assign(ci_lo=-0.6, ci_hi=0.5, ci_lo90=-0.5, ci_hi90=0.4)  # too wide to decide: not testable
    save_table(wide, "probe_summary_ex_first", d)
    assert verdict_3(probe).verdict != verdict_3(wide).verdict
    text = render(d, tmp_path / "figs", tmp_path / "paper" / "report.md")
    assert row(text, 3)[4].strip() == verdict_3(wide).verdict and "without position 0 (probe and map refitted" in text
    save_table(probe, "probe_summary_ex_first", d)
    assert row(render(d, tmp_path / "figs", tmp_path / "paper" / "report.md"), 3)[4].strip() == "same"
    rep = {"model": "m", "samples": "0 1 2", "n_samples": 3, "n_broadly_linear": "3 2 3", "n_outlier_concentrated":
           "1 1 1", "outlier_blocks": "2 | 2 | 2", "outlier_blocks_every_sample": "2", "n_claim4_passes": 3,
           "replication": "holds on every sample"}  # fmt: skip
    save_table(pd.DataFrame([rep]), "spectrum_replicates_summary", tmp_path / "full")
    text = render(d, tmp_path / "figs", tmp_path / "paper" / "report.md")
    assert row(text, 4)[5].strip() == "same on 3 samples (full profile)"
    two = pd.DataFrame([rep, {**rep, "model": "m2", "outlier_blocks_every_sample": ""}])  # read back as 2.0 and NaN
    save_table(two, "spectrum_replicates_summary", tmp_path / "full")
    text = render(d, tmp_path / "figs", tmp_path / "paper" / "report.md")
    assert "outlier-concentrated on every sample: 2;" in text and "on every sample: none" in text
    assert "nan" not in text and "2.0" not in text
    save_table(pd.DataFrame([{**rep, "replication": "sample-dependent"}]), "spectrum_replicates_summary", d)
    assert row(render(d, tmp_path / "figs", tmp_path / "paper" / "report.md"), 4)[5].strip() == "sample-dependent"


def _default_table():
    """The committed default run's claim table as its profile asks for it: full's and the zoo's verdicts beside."""
    return profile_table(load_profile("default", root=ROOT).values(), ROOT)


def _claim_rows(text: str) -> list[list[str]]:
    rows = re.findall(r"^\| \[[0-9ab]+\]\(#claim-.*$", text, flags=re.M)
    return [re.split(r"(?<!\\)\|", row)[1:-1] for row in rows]


def test_the_default_report_answers_on_its_first_screen(tmp_path):
    """The committed default run: the tally, then one row per claim whose cells fit, before anything else; each
    rule as a paragraph (a Markdown list would renumber 6a/6b), every figure drawn or named with its profile."""
    out = tmp_path / "paper" / "report.md"
    table = _default_table()
    text = render(DEFAULT, ROOT / "figures", out, table=table)
    head = text[: text.index("## Setup")]
    # the answer from the widest evidence leads (issue 87): its tally first, its column after the paper's words
    tally = re.search(rf"^- \*\*Does the paper hold\?\*\* On the widest evidence .*?, of {len(CATALOG)} checks: "
                      r"([^.]*)\.", head, flags=re.M)  # fmt: skip
    own = re.search(rf"^- \*\*This run\*\* \(`results/default/`.*, of {len(CATALOG)} checks: ([^.]*)\.", head, re.M)
    rows = _claim_rows(head)
    assert tally and own and len(rows) == len(CATALOG) and all(len(r) == 8 + len(table.beside) for r in rows)
    assert head.index("On the widest evidence") < head.index("**This run**")
    for line, column in ((tally, 3), (own, 7)):  # the answer's cells, this profile's (r[8:]: the others')
        counted = {w: int(k) for k, w in re.findall(r"(\d+) ([a-z ]+?)(?:,|$)", line[1])}
        cells = [r[column].strip().split("**")[1 if column == 3 else 0].strip() for r in rows]
        assert counted == {w: cells.count(w) for w in set(cells)}
    too_long = [(r[0], len(c.strip())) for r in rows for c in r if len(c.strip()) > CELL_LIMIT]
    assert not too_long
    assert "missing" not in text and "not drawn" not in text
    assert not re.search(r"^\d+[ab]?\. ", text, flags=re.M)  # no rule written as a list item
    assert text.count("**Rule.**") == len(CATALOG)
    for rel in re.findall(r"!\[\w+\]\(([^)]+)\)", text):
        assert (out.parent / rel).resolve().is_file(), rel


def test_the_per_block_table_has_one_row_per_block_and_the_swap_variants_as_columns():
    r2 = pd.DataFrame({"model": ["a", "a", "b"], "block": [0, 1, 0], "r2_lin": [0.5, 0.6, 0.7]})
    swap = pd.DataFrame(
        {"model": ["a", "a", "a", "a", "b"], "block": [0, 1, 1, 1, 0], "first": ["map", "map", "ffn", "mean", "map"],
         "delta_ppl": [1.0, 244.0, 51.0, 51.1, 3.0]}
    )  # fmt: skip
    t = per_block_table(r2, swap)
    assert len(t) == 3 and not t.duplicated(["model", "block"]).any()
    row = t.set_index(["model", "block"]).loc[("a", 1)]
    assert row["ΔPPL swap"] == 244.0 and row["ΔPPL swap, FFN at position 0"] == 51.0
    assert row["ΔPPL swap, mean at position 0"] == 51.1
    assert np.isnan(t.set_index(["model", "block"]).loc[("b", 0), "ΔPPL swap, FFN at position 0"])
    assert per_block_table(r2, None).equals(r2)


def test_the_report_shows_no_nan_cell_and_drops_a_variant_never_run(tmp_path):
    """The per-block table showed "nan" in both position-0 variant columns on every block the variants did not run
    on (issue 50): a number not measured is "–", and a variant run on no block has no column."""
    d = _results(tmp_path)
    swap = pd.DataFrame(
        {"model": "m", "block": [0, 1, 1], "first": ["map", "map", "ffn"], "delta_ppl": [1.5, 2.0, 0.5]}
    )
    t = per_block_table(load_table("r2_lin", d), swap)
    assert "ΔPPL swap, mean at position 0" not in t.columns and "ΔPPL swap, FFN at position 0" in t.columns
    blocks = load_table("r2_lin", d)
    blocks.loc[1, "r2_ex_first"] = np.nan  # not measured for that block
    save_table(blocks, "r2_lin", d)
    report = tmp_path / "report.md"
    build_report(d, tmp_path / "figures", report, html=False)
    text = report.read_text()
    rows = [ln for ln in text.splitlines() if ln.startswith("| m | 1 |")]
    assert len(rows) == 1 and "| – |" in rows[0] and not re.search(r"\|\s*nan\s*\|", text)


def test_the_report_prints_the_rules_words_as_the_threshold_stands(tmp_path, monkeypatch):
    """The report's rule and "what would change it" for claim 6a, rendered from the committed default results with
    the budget planted at 2.5: both say +2.5, where the committed report says +1."""
    planted = tuple(replace(e, rule=e.rule.planted(CLAIM6_BUDGET=2.5)) if e.id == "6a" else e for e in CATALOG)
    monkeypatch.setattr(catalog, "CATALOG", planted)  # the catalog's claim 6a, built with a budget of 2.5
    text = render(DEFAULT, tmp_path / "figures", tmp_path / "report.md")
    section = text.split("### Claim 6a:")[1].split("### Claim 6b:")[0]
    rule_line = next(ln for ln in section.splitlines() if ln.startswith("**Rule.**"))
    change_line = next(ln for ln in section.splitlines() if ln.startswith("**What would change it.**"))
    assert "ΔPPL ≤ +2.5" in rule_line and "+2.5 perplexity" in change_line


def test_notebook_09_and_linrec_report_write_the_same_report_from_one_profile(tmp_path, cli, monkeypatch):
    """Notebook 09's `write_report(p)` measures the coverage at the profile's seed and `coverage_reps` (table
    `calibration`), writes the report with the profile's setup and the README's block; `linrec report` on the same
    profile writes the same report byte for byte. The window intervals run 5 simulated data sets here, in both
    measurements (`coverage` floors them at 50, which took 112 of this test's 121 s under cProfile, 2026-11-29): the
    correlations' rows still carry the profile's 20 and its seed, so a `coverage_reps` or `seed` that did not reach
    `coverage` still fails the comparison."""
    import linrec.analyses.coverage as cov

    windows = cov.window_table
    monkeypatch.setattr(cov, "window_table", lambda *a, reps, **k: windows(*a, reps=5, **k))
    d = _results(tmp_path)
    capture = {"model": "m", "model_type": "llama", "n_blocks": 12, "d_model": 64, "n_train_rows": 2048,
               "n_test_rows": 512, "tokens": 2560, "bos": False, "seconds": 1.0, "from_cache": True}  # fmt: skip
    save_table(pd.DataFrame([capture]), "capture", d)  # the window intervals' coverage, at 8 held-out windows
    rng = np.random.default_rng(0)  # a probe table: the coverage of claims 3 and 7b's correlations over 6 blocks
    probe = pd.DataFrame({c: rng.uniform(0.1, 0.9, 6) for c in TABLES["probe"].columns})
    save_table(probe.assign(model="m", block=range(6), cond_gram=10 ** rng.uniform(2, 8, 6)), "probe", d)
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n{README_START}\nold\n{README_END}\nrest\n")
    given = {"models": ["m"], "encoder_models": [], "results_dir": str(d), "figures_dir": str(tmp_path / "figures"),
             "report_path": str(tmp_path / "paper" / "report.md"), "readme": str(readme), "seed": 3,
             "capture": {"seq_len": 64, "tokens": 2560, "sample_rows": 2000}, "probe_rows": 500,
             "coverage_reps": 20}  # fmt: skip
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(given))  # coverage_reps 20, not 1,000: the same code in seconds

    written = write_report(load_profile(tmp_path / "p.yaml").notebook("09"))
    save_table(coverage(d, reps=20, seed=3, chosen=methods.claim_6a_blocks(d)), "calibration", tmp_path / "direct")
    assert filecmp.cmp(d / "calibration.csv", tmp_path / "direct" / "calibration.csv", shallow=False)
    text = written.path.read_text()
    assert written.path == tmp_path / "paper" / "report.md" and written.path.with_suffix(".html").exists()
    assert "seq_len = 64, tokens = 2560, seed = 3, sample_rows = 2000 (80/20" in text  # the profile's setup
    assert "probes and trained baselines on 500 seeded train rows per block" in text
    assert readme.read_text() == f"# x\n{readme_section(d, given['report_path'])}\nrest\n"
    assert str(written) == f"wrote report.md and its .html beside it\nupdated the results block of {readme}"
    assert written.first_screen() == text.split("## Setup")[0] and "| # | claim |" in written.first_screen()

    written.path.unlink()
    code, _, err = cli("report", "--params", str(tmp_path / "p.yaml"))
    assert code == 0, err
    assert written.path.read_text() == text


def test_linrec_report_on_a_full_disk_is_one_line_naming_the_report_and_leaves_no_temporary_file(
    tmp_path, cli, monkeypatch
):
    """Issue 60: the report's temporary copy (report.md.tmp, 0 bytes) stayed beside it, and the message said "free
    space there" without saying where. Now the old report stays whole, nothing else is left, and the line names it."""
    import errno
    from pathlib import Path

    d = _results(tmp_path)
    paper = tmp_path / "paper"
    paper.mkdir()
    (paper / "report.md").write_text("the old report")
    given = {"models": ["m"], "results_dir": str(d), "figures_dir": str(tmp_path / "figures"),
             "report_path": str(paper / "report.md")}  # fmt: skip
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(given))
    real = Path.write_text

    def full(self, text, *args, **kwargs):
        if paper not in self.parents:
            return real(self, text, *args, **kwargs)
        real(self, "")  # the file is made, then nothing fits
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    code, _, err = cli("report", "--params", str(tmp_path / "p.yaml"))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"linrec: error: No space left on device: {paper / 'report.md'}; the disk is full"), err
    assert "profile's paths" in err
    assert [p.name for p in paper.iterdir()] == ["report.md"] and (paper / "report.md").read_text() == "the old report"


@pytest.mark.parametrize("profile", ["default", "full"])
def test_every_claim_cell_reads_as_a_sentence(tmp_path, profile):
    """Issue 65 item 6: claim 7b's cell read "cause: dose, blocks: smollm2-135m not conditioning: unclear, equal", and
    every cell began with a list of labels ("span, largest resolved jump, turns: …"). Each cell of the committed runs'
    claim tables now starts with a capital, ends with a full stop, opens with no label before a colon, and fits."""
    text = render(ROOT / "results" / profile, ROOT / "figures", tmp_path / "report.md")
    cells = [r[3].strip() for r in _claim_rows(text[: text.index("## Setup")])]
    assert len(cells) == len(CATALOG)
    for c in cells:
        assert c[:1].isupper() and c.endswith(".") and ":" not in c[:40] and len(c) <= CELL_LIMIT, c
    planted = "cause: dose, blocks: smollm2-135m not conditioning: unclear, equal."  # the old 7b cell fails
    assert ":" in planted[:40]


def test_claim_4_states_the_zoos_verdict(tmp_path):
    """Issue 64: claim 4's section omitted the zoo's verdict (0 outlier-concentrated of 96 blocks: not reproduced);
    it now states the zoo's regimes summed over its trained models and its verdict by claim 4's own rule."""
    from linrec.claims.regimes import verdict_4

    regimes = load_table("zoo_regimes", ROOT / "results" / "zoo")
    text = render(DEFAULT, tmp_path / "figs", tmp_path / "report.md")
    section = text.split("### Claim 4:")[1].split("### Claim 5:")[0]
    line = next(ln for ln in section.splitlines() if "Trained zoo" in ln)
    assert (f"{int(regimes['n_outlier_concentrated'].sum())} outlier-concentrated of {int(regimes['n_blocks'].sum())} "
            f"blocks over {len(regimes)} trained models") in line  # fmt: skip
    assert f"the zoo alone is {verdict_4(regimes).verdict}" in line


def test_the_readme_block_is_todays_rules_on_the_committed_tables():
    """No stale word on the front page: the README's results block is what `readme_section` writes today from the
    committed default run with the profiles it names beside it (rerun `linrec report` after changing a rule or a
    sentence, or after a run)."""
    text = (ROOT / "README.md").read_text()
    block = README_START + text.split(README_START)[1].split(README_END)[0] + README_END
    assert block == readme_section(DEFAULT, "paper/report.md", _default_table())


# ---- the committed reports are today's ------------------------------------------------------------------------------
# A change to a rule, a sentence or the report's layout must be followed by `linrec report` (and, for the default,
# `make figures`), or a reader sees words no rule gives any more: results/curve/report.md said claim 2a was
# "reproduced" for two days after the rule said "partly reproduced" on the same tables (found 2026-11-28). Each report
# is rendered here the way `linrec report --params params/<name>.yaml` renders it, into memory, and compared with the
# committed file line by line. It names no date (the folder's run record, `notebooks/run.csv`, holds the runs'), so the
# same tables give the same bytes on any day and machine, and during a figures run as after it.


def _rendered(name: str) -> tuple[str, str, dict]:
    """(today's text, the committed text, the profile's values) of profile `name`'s report, set up as `linrec report`
    sets it up (linrec.app.commands.cmd_report)."""
    profile = load_profile(f"params/{name}.yaml", root=ROOT)
    values, setup = profile.values(), report_setup(profile)
    table = profile_table(values, ROOT)
    text = render(ROOT / values["results_dir"], ROOT / values["figures_dir"], ROOT / values["report_path"], setup,
                  table)  # fmt: skip
    return text, (ROOT / values["report_path"]).read_text(), values


@pytest.mark.parametrize("name", ["default", "full", "curve"])
def test_a_committed_report_is_what_linrec_report_writes_from_its_tables_today(name):
    text, committed, values = _rendered(name)
    today, then = text.splitlines(), committed.splitlines()
    changed = [f"line {i + 1}: {a[:90]!r} -> {b[:90]!r}" for i, (a, b) in enumerate(zip(then, today)) if a != b]
    assert today == then, (
        f"{values['report_path']} is not what today's code writes from {values['results_dir']}: rerun "
        f"`linrec report --params params/{name}.yaml` ({len(then)} -> {len(today)} lines; {changed[:3]})"
    )


def test_the_document_split_goes_into_the_limitations_and_the_setup_names_the_split(tmp_path):
    """`results/split/split_shift.csv` beside the results folder (benchmarks/split.py) becomes one limitation with
    `split_summary`'s counts, for this profile's models only; silent without it; a run held out by document says so
    in its setup and its limitation."""
    from linrec.analyses.large_n import split_shift

    d = _results(tmp_path)
    out = tmp_path / "paper" / "report.md"
    assert "Held out by whole document" not in render(d, tmp_path / "figs", out)
    rows = [{"model": m, "split": split, "seed": s, "block": b,
             "r2_lin": 0.5 + shift * (split == "documents") + 0.01 * s}
            for m, shift in (("m", -0.05), ("other", 0.3)) for b in range(3) for s in range(4)
            for split in ("windows", "documents")]  # fmt: skip
    (tmp_path / "split").mkdir()
    split_shift(pd.DataFrame(rows)).to_csv(tmp_path / "split" / "split_shift.csv", index=False)
    assert "Held out by whole document" not in render(d, tmp_path / "figs", out)  # not summarised while rendering
    stand_alone(tmp_path / "split")  # its summary, as benchmarks/split.py and `linrec.outputs.refresh` write it
    text = render(d, tmp_path / "figs", out)
    (line,) = [ln for ln in text.splitlines() if ln.startswith("- Held out by whole document")]
    assert "4 split seeds each" in line and "m 3 of 3 blocks lower and 0 higher" in line
    assert "median shift -0.050" in line and "This run holds out windows;" in line and "other" not in line
    assert "split of windows, seeded" in text
    docs = render(d, tmp_path / "figs", out, params={"split": "documents"})
    assert "This run holds out whole documents;" in docs and "whole documents held out)." in docs
    (tmp_path / "split" / "split_shift.csv").write_bytes(b'"\x00\xff')
    assert "Held out by whole document" not in render(d, tmp_path / "figs", out)


def _forbid_analyses(monkeypatch) -> list[str]:
    """Every function of `linrec.analyses` (each of its modules imported) made to raise, wherever a loaded linrec
    module holds it; the names patched."""
    import importlib
    import inspect
    import pkgutil
    import sys

    import linrec.analyses

    for info in pkgutil.iter_modules(linrec.analyses.__path__):
        importlib.import_module(f"linrec.analyses.{info.name}")
    forbidden = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("linrec.analyses.") and module is not None:
            for key, value in vars(module).items():
                if inspect.isfunction(value) and value.__module__ == name:
                    forbidden[id(value)] = f"{name}.{key}"

    def raiser(what):
        def called(*args, **kwargs):
            raise AssertionError(f"rendering called {what}; compute it before rendering (a stored summary)")

        return called

    for name, module in list(sys.modules.items()):
        if name.startswith("linrec") and module is not None:
            for key, value in list(vars(module).items()):
                if id(value) in forbidden:
                    monkeypatch.setattr(module, key, raiser(forbidden[id(value)]))
    return sorted(forbidden.values())


def test_linrec_report_calls_no_function_of_analyses(tmp_path, monkeypatch):
    """`linrec report --params full` on a copy of the committed project (every folder its report quotes: the
    profiles beside it, its alternatives, the seeds experiment, the zoos, the quantisation and split benchmarks) with
    every function of `linrec.analyses` made to raise: rendering reads stored summaries and judges by the claims'
    rules only. Planted: `linrec.outputs.quant_text` calling `linrec.analyses.quant.summary` again fails it."""
    import shutil

    from linrec.app.cli import main

    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    for name in ("params", "paper", "results"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("*.html", "*.png", "*.pdf"))
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path)
    patched = _forbid_analyses(monkeypatch)
    assert "linrec.analyses.quant.summary" in patched and "linrec.analyses.large_n.other_split" in patched
    assert main(["report", "--params", "params/full.yaml"]) == 0
    assert "## Setup" in (tmp_path / "results" / "full" / "report.md").read_text()
