"""The report builder reads results files, applies its stated rules, and changes when a result changes."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers import DEFAULT, ROOT, planted
from linrec.base.errors import LinrecError
from linrec.claims.registry import TABLES
from linrec.claims.tables import load_table, save_table
from linrec.outputs.catalog import claims
from linrec.outputs.claim_text import CELL_LIMIT
from linrec.outputs.report import build_report, per_block_table, render
from linrec.outputs.report_figures import FIGURES, OTHER_PROFILE, stale_tables


@pytest.fixture
def perf():
    """benchmarks/performance.py, the renderer of docs/performance.md's block, loaded by its path as the package
    loads it (`linrec.app.bench`)."""
    from linrec.app.bench import performance_script
    from linrec.base.files import project_root

    return performance_script(project_root())


def _results(
    tmp_path: Path, max_r2: float = 0.99, jump: float = 0.7, gain: float = 0.01, ci=(-0.30, 0.25), ci90=(-0.2, 0.2)
) -> Path:
    """A results directory with the tables of claims 1 and 3, written through the registry."""
    d = tmp_path / "results"
    summary = {
        "model": "m", "n_blocks": 12, "r2_min": 0.2, "r2_max": max_r2, "max_adjacent_jump": 0.9,
        "direction_changes": 7, "max_jump_disjoint": jump, "direction_changes_disjoint": 5,
        "as_extreme_as_paper": False, "r2_ex_first_min": 0.2, "max_jump_disjoint_ex_first": jump,
        "direction_changes_disjoint_ex_first": 1, "cond_gram_median": 1e6, "r2_ex_first_max": 0.5,
        "moves_tested": 10, "moves_fdr": 9, "max_jump_fdr": jump, "direction_changes_fdr": 5,
        "moves_tested_ex_first": np.nan, "moves_fdr_ex_first": np.nan, "max_jump_fdr_ex_first": np.nan,
        "direction_changes_fdr_ex_first": np.nan, "first_token_blocks": "",
        "profile_tokens": 16384.0,
    }  # fmt: skip
    save_table(pd.DataFrame([summary]), "r2_lin_summary", d)
    probe = {
        "model": "m", "n_blocks": 12, "gain_median": gain, "gain_max": 0.05, "gain_min": 0.0, "gain_quad_median": gain,
        "quad_excess_median": 0.0, "pearson_r": 0.02, "p": 0.9, "ci_lo": ci[0], "ci_hi": ci[1], "ci_lo90": ci90[0],
        "ci_hi90": ci90[1], "ci_lo_iid": ci[0], "ci_hi_iid": ci[1], "n_eff": 10.0, "n_needed": 120, "correlation": "",
        "detectable_r": 0.7,
        "n_stop_validation": 12, "n_stop_flattened": 0, "n_stop_max_epochs": 0, "seconds_probe_total": 1.0,
        "sweep_rank_min": 16, "sweep_gain_median_rank_min": gain, "sweep_rank_max": 256,
        "sweep_gain_median_rank_max": 0.04,
    }  # fmt: skip
    save_table(pd.DataFrame([probe, {**probe, "model": "all"}]), "probe_summary", d)  # one model and its pool
    blocks = pd.DataFrame({c: [0.5, 0.6] for c in TABLES["r2_lin"].columns}).assign(model="m", block=[0, 1])
    save_table(blocks, "r2_lin", d)
    return d


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


def test_claim1_states_the_other_profile_and_the_learning_curve(tmp_path):
    from linrec.claims.tables import load_table

    d = _results(tmp_path)
    other = load_table("r2_lin_summary", d).assign(max_jump_disjoint=0.05, max_jump_fdr=np.nan, profile_tokens=204800.0)
    save_table(other, "r2_lin_summary_other", d)
    overview = planted("r2_curve_overview", fill=0.0, model="m", n_blocks=12, ref_tokens=16384.0,
                       largest_tokens=204800.0, gain_largest_median=0.041, gain_largest_min=0.002,
                       gain_largest_max=0.12, gain_inf_median=0.052, gain_inf_max=0.2, ci_width_inf_median=0.03,
                       rank_spearman_ref_inf=0.97)  # fmt: skip
    save_table(overview, "r2_curve_overview", d)
    c1 = {x.number: x for x in claims(d)}[1]
    assert c1.verdict == "reproduced"  # judged on the profile r2_lin_summary holds …
    assert "on the profile at 16384 train tokens" in c1.ours
    assert "at 204800 train tokens: not reproduced" in c1.ours  # … and the other profile's verdict is stated
    assert "rises by 0.041" in c1.ours and "0.002 to 0.120" in c1.ours and "0.052 above" in c1.ours
    text = render(d, tmp_path / "figs", tmp_path / "paper" / "report.md")
    assert "sits below the large-n estimate by m 0.052 (median over blocks, up to 0.200)" in text


def test_a_table_with_old_columns_names_its_notebook_and_decides_nothing(tmp_path):
    """A table an older linrec wrote is left out: its claim is not testable and says which notebook to rerun, the
    report lists it, and the other claims are judged as before (it stopped the whole report before)."""
    d = _results(tmp_path)
    pd.DataFrame([{"model": "m", "min R²_lin": 0.2}]).to_csv(d / "r2_lin_summary.csv", index=False)
    c = {x.number: x for x in claims(d)}
    assert c[1].verdict == "not testable" and "older linrec (r2_lin_summary); rerun notebook 02" in c[1].ours
    assert c[3].verdict == "reproduced"
    text = render(d, tmp_path / "figs", tmp_path / "paper" / "report.md")
    assert "Left out, because an older linrec wrote them (their claims say so): notebook 02's r2_lin_summary" in text
    t = pd.read_csv(d / "probe_summary.csv").astype({"gain_median": object})
    t.loc[0, "gain_median"] = "lots"  # a damaged table (not an old one) still stops the report, naming its notebook
    t.to_csv(d / "probe_summary.csv", index=False)
    with pytest.raises(LinrecError, match="rerun notebook 03"):
        claims(d)


def test_a_changed_result_changes_the_report(tmp_path):
    d = _results(tmp_path)
    out = tmp_path / "paper" / "report.md"
    before = build_report(d, tmp_path / "figs", out).read_text()
    _results(tmp_path, max_r2=0.876)
    after = build_report(d, tmp_path / "figs", out).read_text()
    assert "0.990" in before and "0.990" not in after and "0.876" in after
    assert out.with_suffix(".html").read_text().count("<table>") >= 2


def test_figures_are_linked_relative_to_the_report_or_named_missing(tmp_path):
    d, figs = _results(tmp_path), tmp_path / "figs"
    figs.mkdir()
    (figs / "fig1_method.png").write_bytes(b"png")
    text = render(d, figs, tmp_path / "paper" / "report.md")
    assert "](../figs/fig1_method.png)" in text
    for stem, nb, _ in FIGURES[1:]:
        if stem in OTHER_PROFILE:  # drawn by another profile: named, with where to find it
            assert f"Drawn by `{OTHER_PROFILE[stem][0]}`, not by this profile" in text
        else:
            assert f"not drawn: notebook {nb} has not run in this profile" in text
    assert "missing" not in text
    rows = re.findall(r"^\| \[(?:1|2a|2b|[3-5]|6a|6b|7a|7b)\]\(#claim-", text, flags=re.M)
    assert len(rows) == 10  # a row per claim (2, 6 and 7 in two)


def _project_with_a_curve_run(tmp_path: Path, stale: bool) -> tuple[Path, str]:
    """A project folder (pyproject.toml beside notebooks/) whose results/curve/ holds a last run of params/curve.yaml
    (its Figure 2c and notebook 02's r2_lin table, with its registered columns or, `stale`, without two of them as
    an older linrec wrote it), and the default profile's report rendered into paper/."""
    root = tmp_path / "project"
    (root / "notebooks").mkdir(parents=True)
    (root / "pyproject.toml").write_text("")
    d = _results(root)
    curve = root / "results" / "curve"
    blocks = load_table("r2_lin", d)
    if stale:
        curve.mkdir(parents=True)
        blocks.drop(columns=["r2_ex_first_lo", "r2_ex_first_hi"]).to_csv(curve / "r2_lin.csv", index=False)
    else:
        save_table(blocks, "r2_lin", curve)
    (curve / "figures").mkdir()
    (curve / "figures" / "fig2c_learning_curves.png").write_bytes(b"png")
    return curve, render(d, root / "figures", root / "paper" / "report.md")


def test_another_profiles_figure_is_shown_only_when_its_run_is_current(tmp_path):
    """results/curve/ was written by an older linrec (its r2_lin.csv lacks r2_ex_first_lo/hi) and the default report
    embedded its Figure 2c as if current (issue 45). Now: a current run's figure is shown, with where it came from;
    an old one's is not, and the report says which tables are old and the command that refreshes them, beside the
    figure's caption and in the limitation that points at the learning curve."""
    refresh = "`linrec figures --params params/curve.yaml --only 02` refreshes it"
    curve, text = _project_with_a_curve_run(tmp_path / "current", stale=False)
    assert stale_tables(curve, "02") == []
    assert "![fig2c_learning_curves](../results/curve/figures/fig2c_learning_curves.png)" in text
    assert "from the last run of `params/curve.yaml`: `results/curve/`" in text
    assert "its last run is in `results/curve/`" in text and "older linrec" not in text
    curve, text = _project_with_a_curve_run(tmp_path / "stale", stale=True)
    assert stale_tables(curve, "02") == ["r2_lin"]
    assert "results/curve/figures" not in text  # neither embedded nor linked
    assert text.count("was written by an older linrec") == 2 and text.count(refresh) == 2
    assert "Drawn by `params/curve.yaml`, not by this profile: its last run, in `results/curve/`, was written" in text
    assert "`r2_lin.csv` lack columns this linrec writes" in text
    assert "learning curve measures both. This profile skips it and `params/curve.yaml` runs it; its last run" in text


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
    assert "m 0.20–0.99, 0.70, 5" in text and text.count(README_START) == 1
    assert "| [1](paper/report.md#claim-1) |" in text  # each claim links to its section of the report
    plain = tmp_path / "plain.md"
    plain.write_text("no markers")
    assert not update_readme(plain, d) and plain.read_text() == "no markers"


def test_readme_performance_block_is_generated_from_the_committed_bench_csvs(perf):
    """Every number of docs/performance.md's block comes from results/bench/*.csv: re-rendering the committed
    files reproduces the block exactly."""
    from linrec.base.files import project_root

    PERF_END, PERF_START, performance_section = perf.PERF_END, perf.PERF_START, perf.performance_section

    root = project_root()
    text = (root / "docs" / "performance.md").read_text()
    block = PERF_START + text.split(PERF_START, 1)[1].split(PERF_END, 1)[0] + PERF_END
    assert block == performance_section(root / "results" / "bench", root / "results/default/notebooks/run.csv")
    assert "capture.csv` is missing" not in block and "swap.csv` is missing" not in block
    assert "run.csv` is missing" not in block


def test_performance_section_follows_the_csv_and_names_a_missing_file(tmp_path, perf):
    performance_section = perf.performance_section

    machine = {"machine": "cpu", "cpus": 2, "torch": "2.13.0", "threads": 2, "date": "2026-11-23"}
    values = {"capture_f64_over_plain": 1.5, "capture_f64_over_plain_median_batch": 1.4, "capture_f64_over_body": 1.9,
              "capture_f32_over_plain": 1.2, "fast_mode_max_abs_dr2": 1e-7, "capture_f64_rows_over_plain": 1.6,
              "ours_s": 40.0, "paper_s": 70.0, "ours_peak_mib": 2000, "paper_peak_mib": 4000,
              "agreement_max_abs_dr2": 6e-15, "plain_runs_spread": 0.02, "other_cpu_share_max": 0.05}  # fmt: skip
    rows = [{"benchmark": "capture", "model": "m", "tokens": 20480, "measure": k, "value": v,
             "target": "<= 1.1" if k == "capture_f64_over_plain" else "", "status": "", **machine}
            for k, v in values.items()]  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "capture.csv", index=False)
    out = performance_section(tmp_path)
    assert "1.50 (median per batch 1.40" in out and "<= 1.1" in out and "40.0 s vs 70.0 s" in out
    assert "swap.csv` is missing" in out and "not measured in this run" in out
    rows += [{**rows[0], "measure": k, "value": v} for k, v in
             {"capture_f64_over_plain_rounds": 3, "capture_f64_over_plain_min": 1.45,
              "capture_f64_over_plain_max": 1.62}.items()]  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "capture.csv", index=False)
    assert "1.50 (median of 3 rounds, 1.45–1.62; median per batch 1.40" in performance_section(tmp_path)
    assert "neighbour" not in out  # optional: no file, no line
    near = {"quiet_s": 150.0, "beside_busy_s": 290.0, "slowdown": 290 / 150, "other_cpu_share_before": 0.01}
    rows = [{"benchmark": "neighbour 03", "model": "m", "tokens": 20480, "measure": k, "value": v,
             "target": "<= 2.5" if k == "slowdown" else "", "status": "PASS" if k == "slowdown" else "", **machine}
            for k, v in near.items()]  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "neighbour.csv", index=False)
    line = performance_section(tmp_path).split("Beside a busy process", 1)[1]
    assert "03 took 150 s on a quiet machine and 290 s" in line and "**1.93×** (<= 2.5 PASS)" in line
    assert "Tests (" not in line  # optional too
    tests = {"make_test_s": 252.7, "pytest_s": 168.1, "passed": 413, "other_cpu_share_before": 0.0}
    rows = [{"benchmark": "make test at abc1234", "model": "", "tokens": 0, "measure": k, "value": v,
             "target": "<= 300" if k == "make_test_s" else "", "status": "PASS" if k == "make_test_s" else "",
             **machine} for k, v in tests.items()]  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "tests.csv", index=False)
    line = performance_section(tmp_path).split("Tests (", 1)[1]
    assert "fresh clone (abc1234)" in line and "**4.2 min** (253 s; <= 300 s PASS)" in line and "413 tests" in line
    assert "not models" not in line  # measured since issue 36; an older tests.csv has no such line
    rows += [{**rows[0], "measure": k, "value": v, "target": t, "status": st} for k, v, t, st in
             [("unfetched_pytest_s", 41.2, "<= 45", "PASS"), ("unfetched_passed", 687, "", "")]]  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "tests.csv", index=False)
    line = performance_section(tmp_path).split("Tests (", 1)[1]
    shown = '(`pytest -m "not models"`, 687 tests, an empty cache) took **41 s** in the same clone (<= 45 s PASS)'
    assert shown in line


def test_performance_section_shows_the_peers_table_when_there_is_a_peers_csv(tmp_path, perf):
    """benchmarks/peers.py's CSV becomes a sentence on the run and its table, memory growth and goal lines; no file,
    no peers lines (the benchmark needs the optional bench extra)."""
    assert "nnsight" not in perf.performance_section(tmp_path)
    run = {"benchmark": "peers", "model": "smollm2-135m", "corpus": "wiki", "batch_size": 8, "seq_len": 128,
           "mem_cap_gib": 17.6, "machine": "cpu", "cpus": 2, "torch": "2.13.0", "threads": 2, "date": "2026-12-01",
           "note": "", "error": "", "version": ""}  # fmt: skip
    rows = [
        {**run, "tokens": 20480, "method": "linrec", "label": "linrec exact", "version": "0.1.0", "rounds": 3,
         "seconds": 40.0, "peak_mib": 2560, "seconds_over_linrec": 1, "peak_over_linrec": 1, "max_abs_dr2": 0},
        {**run, "tokens": 20480, "method": "nnsight", "label": "nnsight + fit_affine", "version": "0.8.1",
         "rounds": 3, "seconds": 100.0, "peak_mib": 6144, "seconds_over_linrec": 2.5, "peak_over_linrec": 2.4,
         "max_abs_dr2": 2e-7, "collect_s": 85.0, "fit_s": 15.0},
        {**run, "tokens": 204800, "method": "linrec", "label": "linrec exact", "version": "0.1.0", "rounds": 3,
         "seconds": 400.0, "peak_mib": 2816, "seconds_over_linrec": 1, "peak_over_linrec": 1, "max_abs_dr2": 0},
        {**run, "tokens": 204800, "method": "nnsight", "label": "nnsight + fit_affine", "version": "0.8.1",
         "rounds": 0, "peak_mib": 900, "error": "MemoryError: Unable to allocate 270. MiB"},
    ]  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "peers.csv", index=False)
    out = perf.performance_section(tmp_path).split("Against nnsight and TransformerLens", 1)[1]
    assert "one run on 2026-12-01): smollm2-135m on wiki, batches of 8 × 128 tokens, the fastest of 3 rounds" in out
    assert "capped at 17.6 GiB" in out and "nnsight 0.8.1, transformer-lens not run" in out
    assert "| nnsight + fit_affine | 20,480 | 100.0 | 85.0 + 15.0 | 2.50 | 6.00 | 2.40 | 2.0e-07 |" in out
    assert "| linrec exact | 20,480 | 40.0 |  | 1.00 |" in out  # no collect/fit split in the row: an empty cell
    assert "| 204,800 | failed: MemoryError: Unable to allocate 270. MiB | | | 0.9 at failure | | |" in out
    growth = "Peak memory from 20,480 to 204,800 tokens: linrec exact 1.10×; nnsight + fit_affine more than 2.9× (out"
    assert growth in out
    assert "- 20,480 tokens: the fastest peer (nnsight + fit_affine) takes 2.50× linrec exact's time (>= 2 PASS)" in out
    assert "needs 0.42× the peak memory of the leanest peer (nnsight + fit_affine; <= 0.5 PASS)" in out
    assert "- 204,800 tokens: no peer method finished" in out and out.rstrip().endswith(perf.PERF_END)


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


def test_figures_run_line_reads_run_csv(tmp_path, perf):
    from linrec.app.notebooks import record_run

    figures_run_line = perf.figures_run_line

    assert "is missing" in figures_run_line(tmp_path / "results" / "x" / "notebooks" / "run.csv")
    path = record_run(tmp_path, {"01_capture": 130.2, "06_swap": 510.0, "02_x": 22.0}, 1260.0, 2, 10)
    line = figures_run_line(path)
    assert "3 notebooks in **21.0 min**" in line and "2 at a time" in line
    assert "10 captures computed during the run" in line
    assert "01 130 s, 02 22 s, 06 510 s" in line
    record_run(tmp_path, {"02_x": 20.0}, 20.0, 1, 0)
    assert "every capture read from the cache" in figures_run_line(path) and "in **0.3 min**" in figures_run_line(path)


def test_setup_names_the_encoder_of_the_controls(tmp_path):
    d = _results(tmp_path)
    text = render(
        d, tmp_path / "figures", tmp_path / "r.md", {"models": ["smollm2-135m"], "encoder_models": ["minilm-l6"]}
    )
    assert "- **smollm2-135m**: SmolLM2-135M-Instruct, Q4_1 GGUF" in text and "dequantised to float32" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("- **minilm-l6**"))
    assert "all-MiniLM-L6-v2, float32" in line and "float32 as released" in line and "no LM head" in line
    assert "dequantised" not in line


def test_performance_block_is_not_rewritten_from_a_missing_or_partial_bench_folder(tmp_path, perf):
    PERF_END, PERF_START, update_readme_performance = perf.PERF_END, perf.PERF_START, perf.update_readme_performance

    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n{PERF_START}\nold\n{PERF_END}\n")
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "swap.csv").write_text("benchmark,measure,value\n")
    for bench, needle in ((tmp_path / "nope", "does not exist"), (tmp_path / "half", "has no capture.csv")):
        with pytest.raises(LinrecError, match=needle):
            update_readme_performance(readme, bench)
        assert readme.read_text() == f"# x\n{PERF_START}\nold\n{PERF_END}\n"


def test_the_performance_script_is_loaded_by_its_path_and_a_missing_one_is_one_line(tmp_path, perf, capsys):
    """The package finds benchmarks/performance.py in the project folder; without it, one line naming the fix. Run as
    a script, a bench folder without the CSVs is one line on stderr and leaves docs/performance.md as it was."""
    from linrec.app.bench import performance_script
    from linrec.base.files import project_root

    with pytest.raises(LinrecError, match=r"performance\.py not found; restore it from git") as err:
        performance_script(tmp_path)
    assert "\n" not in str(err.value)
    page = project_root() / perf.PERFORMANCE_PAGE
    before = page.read_bytes()
    assert perf.main(["--bench", str(tmp_path / "nope")]) == 1
    assert "does not exist" in capsys.readouterr().err and page.read_bytes() == before


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


def _claim_rows(text: str) -> list[list[str]]:
    rows = re.findall(r"^\| \[[0-9ab]+\]\(#claim-.*$", text, flags=re.M)
    return [re.split(r"(?<!\\)\|", row)[1:-1] for row in rows]


def test_the_default_report_answers_on_its_first_screen(tmp_path):
    """The committed default run: the tally, then one row per claim whose cells fit, before anything else; each
    rule as a paragraph (a Markdown list would renumber 6a/6b), every figure drawn or named with its profile."""
    out = tmp_path / "paper" / "report.md"
    text = render(DEFAULT, ROOT / "figures", out)
    head = text[: text.index("## Setup")]
    tally = re.search(r"\*\*Does the paper hold\?\*\* Of 10 checks: (.*)\.", head)
    rows = _claim_rows(head)
    assert tally and len(rows) == 10 and all(len(r) == 7 for r in rows)
    counted = {w: int(k) for k, w in re.findall(r"(\d+) ([a-z ]+?)(?:,|$)", tally[1])}
    verdict_cells = [r[-1].strip().strip("*") for r in rows]
    assert counted == {w: verdict_cells.count(w) for w in set(verdict_cells)}
    too_long = [(r[0], len(c.strip())) for r in rows for c in r if len(c.strip()) > CELL_LIMIT]
    assert not too_long
    assert "missing" not in text and "not drawn" not in text
    assert not re.search(r"^\d+[ab]?\. ", text, flags=re.M)  # no rule written as a list item
    assert text.count("**Rule.**") == 10
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


def _v(claim, evidence):
    from linrec.claims.rules import Verdict

    return Verdict(claim, "reproduced", evidence)


def test_swap_findings_word_each_result_and_the_sign_of_the_correlation():
    from linrec.outputs.findings import swap_findings

    e6a = {
        "model": "m",
        "ffn_over_linear": 8.04,
        "chosen_block": 3,
        "delta_ppl": 0.51,
        "delta_lo": -0.2,
        "delta_hi": 1.3,
        "ppl_base": 30.0,
        "outcome": "holds",
        "n_within_budget": 4,
        "n_blocks": 12,
    }
    e6b = {"model": "m", "spearman_rho": 0.25, "rho_lo": -0.1, "rho_hi": 0.6, "n_eff": 9.0, "n_blocks": 12,
           "rho_lo_iid": 0.0, "rho_hi_iid": 0.5, "partial_rho_depth": 0.1, "partial_lo": -0.3, "partial_hi": 0.4,
           "depth_rho": -0.8,
           "outcome": "inconclusive", "best": None, "best_rho": np.nan, "best_partial": "depth_frac",
           "best_partial_rho": 0.55}  # fmt: skip
    first = pd.DataFrame([{"model": "m", "block": 11, "first_var_share": 0.62, "delta_ppl_map": 244.0,
                           "delta_ppl_ffn": 51.0, "delta_lo_ffn": 40.0, "delta_hi_ffn": 60.0, "delta_ppl_mean": 51.1,
                           "share_of_cost_at_first": 0.79}])  # fmt: skip
    greedy = pd.DataFrame([{"model": "m", "order": "r2_lin", "budget_ppl": 1.0, "blocks_swapped": "3 5",
                            "screening_delta_ppl": 0.9, "test_delta_ppl": 1.2, "test_delta_lo": 0.4,
                            "test_delta_hi": 2.0, "params_removed": 5_000_000, "params_added": 600_000,
                            "params_model": 100_000_000}])  # fmt: skip
    lines = swap_findings(_v("6a", [e6a]), _v("6b", [e6b]), first, greedy)
    assert len(lines) == 4
    assert "8.0× the parameters" in lines[0] and "costs +0.51 held out (95 % CI [-0.20, +1.30]" in lines[0]
    assert "4 of 12 blocks have held-out intervals within +1" in lines[0]
    assert "*larger* cost" in lines[1] and "none (no predictor survives Holm's correction)" in lines[1]
    assert "the best partial ρ given depth: depth_frac (+0.55)" in lines[1]
    assert "62% of its held-out output variance" in lines[2] and "79% of the cost" in lines[2]
    assert "kept blocks [3 5]" in lines[3] and "(4.4% of the model)" in lines[3]
    for rho in (0.0, -0.25):  # only a positive ρ is worded as the wrong way round
        assert (
            "*larger* cost" not in swap_findings(_v("6a", []), _v("6b", [{**e6b, "spearman_rho": rho}]), None, None)[0]
        )
    assert swap_findings(_v("6a", []), _v("6b", []), None, None) == []


def test_controls_findings_word_each_control_and_leave_out_what_was_not_run():
    from linrec.claims.rules import GAUSSIAN_DROP
    from linrec.outputs.findings import controls_findings

    init = pd.DataFrame(
        [
            {
                "model": "m",
                "trained_r2_min": 0.3,
                "trained_r2_max": 0.9,
                "init_r2_min": 0.95,
                "init_r2_max": 0.99,
                "mean_abs_trained_init": 0.28,
                "mean_abs_init_seeds": np.nan,
                "init_r2_train_median": 0.99,
                "init_r2_test_median": 0.2,
                "trained_gap_median": 0.06,
            }
        ]
    )
    inputs = pd.DataFrame([{"model": "m", "r2_gaussian_median": 0.41, "r2_own_median": 0.52, "n_gaussian_drop": 3}])
    e2a = {
        "model": "m",
        "outcome": "learned",
        "twin_degenerate": True,
        "twin_gap": 1.58,
        "trained_gap": 0.06,
        "reference": "random-init FFNs on the trained inputs",
        "effect": 0.279,
        "noise": 0.007,
    }
    e2b = {"model": "m", "outcome": None, "share_weights": 0.4, "share_weights_lo": 0.39, "share_weights_hi": 0.42,
           "share_inputs": 0.14, "share_inputs_lo": 0.13, "share_inputs_hi": 0.15, "share_shared": 0.3,
           "share_residual": 0.16, "n_standout": 6, "n_below_init": 23, "n_blocks": 30,
           "share_weights_minus_inputs": 0.26, "wmi_lo": -0.08, "wmi_hi": 0.6, "wmi_se_jack": 0.165,
           "wmi_se_windows": 0.0096, "wmi_band1": 0.13}  # fmt: skip
    lines = controls_findings(init, inputs, None, _v("2a", [e2a]), _v("2b", [e2b]))
    assert len(lines) == 4  # no cross feeding ran: no sentence for it
    assert "mean |trained − init| = 0.280;" in lines[0] and "between two init seeds" not in lines[0]
    assert f"3 blocks lose more than {GAUSSIAN_DROP}." in lines[1]
    assert "(2a: learned): the twin is degenerate" in lines[2] and "= 0.279, 0.007 between" in lines[2]
    assert "(2b: not testable)" in lines[3] and "0.26 [-0.08, 0.60] with the blocks' variability" in lines[3]
    assert "6 of 30 blocks are more linear than both null ensembles, 23 less linear" in lines[3]
    assert "(standard error 0.17 leaving one block out, 0.010 over held-out windows; 0.13 on |i − j| ≤ 1" in lines[3]
    seeds = controls_findings(init.assign(mean_abs_init_seeds=0.01), None, None, _v("2a", []), _v("2b", []))
    assert seeds == [seeds[0]] and "against 0.010 between two init seeds" in seeds[0]
    one_draw = controls_findings(init, None, None, _v("2a", [{**e2a, "noise": np.nan}]), _v("2b", []))
    assert "no noise between untrained draws measured (one draw)" in one_draw[1] and "nan" not in one_draw[1]


def _comparisons(seed_distance: float, variant_shape: float = 0.02) -> pd.DataFrame:
    """Planted comparisons: each run far from its step 0 in level; the seeds `seed_distance` apart in shape (level 0);
    GELU 0.3 above SwiGLU in level and `variant_shape` apart in shape."""
    rows = []
    for kind, a, b, d, lvl, shp in (("trained vs init", "gelu-i0-d0", "gelu-i0-d0 step 0", 0.4, 0.4, 0.02),
                                    ("trained vs init", "gelu-i1-d0", "gelu-i1-d0 step 0", 0.4, 0.4, 0.02),
                                    ("seed", "gelu-i0-d0", "gelu-i1-d0", seed_distance, 0.0, seed_distance),
                                    ("variant", "gelu-i0-d0", "swiglu-i0-d0", 0.3, 0.3, variant_shape)):  # fmt: skip
        rows.append({"kind": kind, "a": a, "b": b, "step": 600, "distance": d, "distance_lo": d - 0.02,
                     "distance_hi": d + 0.02, "level": lvl, "level_lo": lvl - 0.02, "level_hi": lvl + 0.02,
                     "level_floor": 0.01, "shape": shp, "shape_lo": max(shp - 0.02, 0.0), "shape_hi": shp + 0.02,
                     "shape_floor": 0.01, "corr": 0.9, "corr_lo": 0.8, "corr_hi": 0.95, "floor": 0.01,
                     "beyond_noise": True, "within_noise": False, "outcome": "", "level_outcome": "",
                     "shape_outcome": ""})  # fmt: skip
    return pd.DataFrame(rows)


def test_claim2a_states_the_seeds_experiment_and_takes_the_weaker_verdict(tmp_path):
    """Claim 2a reads the seeds experiment from this profile or results/training (named as such), level and shape
    apart: seeds alike while GELU and SwiGLU differ in shape make it 'partly' (architecture sets the shape) whatever
    the offline models say; a GELU–SwiGLU difference in level alone, or seeds that differ in shape, leave the offline
    models' verdict; the claim table's cell names it."""
    d = _results(tmp_path)
    row = lambda text: [r for r in _claim_rows(text) if r[0].startswith(" [2a]")][0]  # noqa: E731
    save_table(_comparisons(0.04, variant_shape=0.3), "training_comparisons", tmp_path / "training")
    c = {x.number: x for x in claims(d)}
    assert c["2a"].verdict == "partly reproduced" and "architecture sets the level and the shape" in c["2a"].ours
    assert "training profile" in c["2a"].ours
    assert ("gelu-i0-d0 vs gelu-i1-d0 0.040 [0.020, 0.060] (floor 0.010, agree; level +0.000 [-0.020, 0.020] agree, "
            "shape 0.040 [0.020, 0.060] agree)") in c["2a"].ours  # fmt: skip
    save_table(_comparisons(0.04), "training_comparisons", tmp_path / "training")
    c = {x.number: x for x in claims(d)}
    assert c["2a"].verdict == "reproduced"
    assert "learned; architecture sets the level, not the shape; init seed changes neither" in c["2a"].ours
    prof = pd.DataFrame([{"run": run, "mlp": "gelu", "init_seed": 0, "data_seed": 0, "step": step, "tokens_seen": step,
                          "block": b, "r2_lin": r2 + 0.1 * b, "r2_lo": 0.0, "r2_hi": 1.0, "ppl_test": 9.0,
                          "train_loss": 2.0, "n_test_windows": 8}
                         for run, path in (("settles", (0.2, 0.61, 0.6)), ("moves", (0.2, 0.4, 0.6)))
                         for step, r2 in zip((0, 10, 600), path) for b in range(3)])  # fmt: skip
    save_table(prof, "training_profiles", tmp_path / "training")
    ours = {x.number: x for x in claims(d)}["2a"].ours
    assert "settles (every later checkpoint within 0.05 of the last) at step 10 (settles)" in ours
    assert "not before the last checkpoint in moves (still moving" in ours and "longer" not in ours
    save_table(_comparisons(0.3), "training_comparisons", tmp_path / "training_long")  # a longer run, seeds apart
    ours = {x.number: x for x in claims(d)}["2a"].ours
    assert "longer (`params/training_long.yaml`): learned, individual to each run" in ours
    assert "gelu-i0-d0 vs gelu-i1-d0 0.300 [0.280, 0.320]" in ours
    learned = pd.DataFrame([{"model": "m", "twin_gap": 0.0, "trained_gap": 0.0, "twin_degenerate": False,
                             "effect_twin": 0.3, "noise_twin": 0.01, "effect_null": 0.3, "noise_null": 0.01,
                             "reference": "random-init twin", "effect": 0.3, "noise": 0.01}])  # fmt: skip
    save_table(learned, "controls_learned", d)
    save_table(_comparisons(0.04, variant_shape=0.3), "training_comparisons", tmp_path / "training")
    assert {x.number: x for x in claims(d)}["2a"].verdict == "partly reproduced"  # offline reproduced, seeds partly
    save_table(_comparisons(0.3), "training_comparisons", tmp_path / "training")
    c = {x.number: x for x in claims(d)}
    assert c["2a"].verdict == "reproduced" and "learned, individual to each run" in c["2a"].ours
    text = render(d, tmp_path / "figs", tmp_path / "paper" / "report.md")
    assert "seeds: learned, individual to each run" in row(text)[3]


def test_routing_findings_state_each_number_beside_the_anchor_and_say_the_pick_is_optimistic():
    from linrec.outputs.routing_text import routing_findings

    row = {"model": "m", "n_blocks_routed": 6, "best_block": 3, "best_routable_pct1": 0.75, "best_lo": 0.5,
           "best_hi": 1.0, "n_quarter": 4, "n_monotone": 5, "rho_r2_routable": 0.2, "rho_lo": -0.5, "rho_hi": 0.8,
           "outcome": "inconclusive", "rho_r2_swap": -0.1, "rho_r2_swap_lo": -0.6, "rho_r2_swap_hi": 0.4}  # fmt: skip
    (line,) = routing_findings(pd.DataFrame([row]))
    needles = ("block 3, routes 75%", "[0.50, 1.00]", "25–56 % in GPT-2", "optimistic", "+0.20 [-0.50, 0.80]",
               "inconclusive", "6b's ρ(R²_lin, whole-block ΔPPL) = -0.10", "every 0.05", "4 of 6 routed blocks",
               "5 of 6 curves")  # fmt: skip
    for needle in needles:
        assert needle in line, needle
    assert routing_findings(None) == [] and routing_findings(pd.DataFrame()) == []


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


def test_the_zoo_is_read_from_results_zoo_into_claims_2a_3_and_6b(tmp_path):
    """A profile without the zoo's tables reads them from results/zoo (named as the zoo profile): claim 2a states
    what sets the shape and the level with every kind's distance and every share with its interval, and takes the
    zoo's verdict into the weakest of the tested ones; claims 3 and 6b state the pooled row with its block count and
    whether it reaches the blocks the equivalence test needs, and keep the offline models' verdict."""
    from linrec.analyses.factors import FACTOR_NAMES
    from linrec.claims.zoo import CLAIM_COLUMNS

    d = _results(tmp_path)
    zoo = tmp_path / "zoo"
    comp = pd.DataFrame([{"part": p, "factor": f, "n_runs": 12, "n_pairs": 9, "component": 0.01, "component_lo": 0.005,
                          "component_hi": 0.02, "share": {"layout": 0.7}.get(f, 0.1), "share_lo": 0.5,
                          "share_hi": 0.9} for p in ("level", "shape") for f in FACTOR_NAMES])  # fmt: skip
    save_table(comp, "zoo_components", zoo)
    dist = pd.DataFrame([{"kind": "gpt2 vs pythia", "group": "layout", "n_pairs": 9, "interval": "runs",
                          "level": 0.05, "level_lo": 0.03, "level_hi": 0.07, "shape": 0.12, "shape_lo": 0.1,
                          "shape_hi": 0.14}])  # fmt: skip
    save_table(dist, "zoo_distances", zoo)
    save_table(pd.DataFrame([{"word": "layout sets the shape; layout sets the level", "claim2a": "not reproduced",
                              "shape_factor": "layout", "level_factor": "layout"}]), "zoo_verdict", zoo)  # fmt: skip
    claims_row = dict.fromkeys(CLAIM_COLUMNS, np.nan) | {"claim": "3", "verdict": "not testable", "reason": "",
                 "n_models": 12, "n_blocks": 96, "n_eff": 60.0, "n_needed": 120.0, "powered": False, "rho": 0.05,
                 "lo": -0.2, "hi": 0.3, "lo90": -0.16, "hi90": 0.26, "outcome": "inconclusive"}  # fmt: skip
    save_table(pd.DataFrame([claims_row, {**claims_row, "claim": "6b", "n_needed": 90.0, "powered": True}]),
               "zoo_claims", zoo)  # fmt: skip
    c = {x.number: x for x in claims(d)}
    assert "the zoo (notebook 08, zoo profile" in c["2a"].ours and "layout sets the shape" in c["2a"].ours
    assert "gpt2 vs pythia (9 pairs) shape 0.120 [0.100, 0.140], level 0.050 [0.030, 0.070]" in c["2a"].ours
    assert "shape: layout 0.70 [0.50, 0.90]" in c["2a"].ours
    assert c["2a"].verdict == "not reproduced" and "zoo: shape by layout, level by layout" in c["2a"].headline
    assert c[3].verdict == "reproduced"  # the offline models' verdict stands
    assert "every block of 12 trained models pooled with a model effect" in c[3].ours
    assert "of 96 blocks: inconclusive; the block count falls short of the 120" in c[3].ours
    assert "reaches the 90" not in c[3].ours and "the block count reaches the 90" in c["6b"].ours
    assert c["6b"].verdict == "not testable"  # no offline swap study here: the zoo does not decide it


def test_the_anchor_findings_name_which_r_is_the_anchors_and_quote_both_verdicts():
    from linrec.outputs.routing_text import anchor_findings, heal_findings

    row = {"model": "m", "need_pairs": 8, "need_context": 2, "need_token": 5, "need_r_median": 0.41, "need_r_min": 0.1,
           "need_r_max": 0.7, "lookup_r2_median": 0.12, "gate_r_median": 0.72, "need_verdict": "partly reproduced",
           "split_blocks": 4, "split_context": 3, "split_token": 0, "auc_full_median": 0.71,
           "auc_token_median": 0.55, "auc_context_median": 0.7, "split_verdict": "reproduced"}  # fmt: skip
    (line,) = anchor_findings(pd.DataFrame([row]))
    needles = ("the anchor's quantity", "median r = +0.41 (from +0.10 to +0.70) over 8", "2 shown near 0",
               "5 shown away from it", "median 0.12", "**partly reproduced**", "median r = +0.72",
               "not the anchor's quantity", "0.55, 0.70, 0.71", "3 of 4 blocks", "**reproduced**")  # fmt: skip
    for needle in needles:
        assert needle in line, needle
    heal = pd.DataFrame({"model": "m", "mode": "all", "k": [0, 1, 2], "blocks": ["", "3", "3 5"], "steps": 50,
                         "batch_size": 8, "ppl_control": 20.0, "delta_before": [0.0, 1.5, 4.0],
                         "delta_after": [0.0, 0.1, 0.9], "delta_after_lo": [0.0, -0.05, 0.5],
                         "delta_after_hi": [0.0, 0.15, 1.3], "outcome": ["", "healed", "costs"]})  # fmt: skip
    (line,) = heal_findings(heal, " (params/healing.yaml)")
    for needle in ("m (params/healing.yaml), healing (every weight", "50 steps of 8", "control perplexity 20.00",
                   "k = 1 (blocks 3): +1.50 before, +0.10 [-0.05, 0.15] after, healed",
                   "k = 2 (blocks 3 5): +4.00 before, +0.90 [0.50, 1.30] after, costs"):  # fmt: skip
        assert needle in line, needle


def test_the_routing_section_quotes_the_anchor_tables_and_the_healing_profile(tmp_path):
    """The report's routing section on planted tables: the summary, the anchor's verdicts, the need and gate tables
    with their intervals, this profile's healing and params/healing.yaml's (results/healing/) beside it."""
    from linrec.claims.routing import anchor_table, heal_table
    from linrec.outputs.report import _table
    from linrec.outputs.results import Results
    from linrec.outputs.routing_text import routing_section

    d, other = tmp_path / "default", tmp_path / "healing"

    save_table(planted("routing_summary", model="m", n_blocks_routed=4, best_block=2, outcome="inconclusive"),
               "routing_summary", d)  # fmt: skip
    identity = planted(
        "routing_identity",
        model="m",
        block=2,
        corpus_a="wiki",
        corpus_b="web",
        r_need=0.41,
        r_need_lo=0.3,
        r_need_hi=0.52,
        r_need_lo90=0.32,
        r_need_hi90=0.5,
        r=0.8,
        r_lo=0.7,
        r_hi=0.9,
    )
    split = pd.concat([planted("routing_split_auc", model="m", block=2, target="quantile", part=p, auc=a)
                       for p, a in (("full", 0.71), ("token", 0.55), ("context", 0.7))])  # fmt: skip
    save_table(identity, "routing_identity", d)
    save_table(split, "routing_split_auc", d)
    save_table(anchor_table(identity, split), "routing_anchor", d)
    heal = planted("routing_heal", model="tiny", mode="all", k=1, blocks="3", steps=10, batch_size=4,
                   delta_after=0.02, delta_after_lo=-0.01, delta_after_hi=0.05, ppl_control=20.0).drop(
        columns=["outcome", "healed_share"])  # fmt: skip
    save_table(heal_table(heal), "routing_heal", d)
    save_table(heal_table(heal.assign(model="smollm2-135m", delta_after_lo=0.3, delta_after_hi=0.9)), "routing_heal",
               other)  # fmt: skip
    text = "\n".join(routing_section(Results(d), _table))
    for needle in ("## Beyond the paper", "block 2, routes 50%", "median r = +0.41", "**not reproduced**",
                   "not the anchor's quantity", "+0.41 [0.30, 0.52]", "+0.80 [0.70, 0.90]", "0.55 [0.50, 0.50]",
                   "tiny, healing (every weight", "healed", "smollm2-135m (params/healing.yaml)", "costs",
                   "The rule: per model, mode and k"):  # fmt: skip
        assert needle in text, needle
    assert routing_section(Results(other), _table) == []  # no routing summary: no section
