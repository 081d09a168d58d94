"""linrec.app.bench: benchmarks/performance.py, loaded by its path, renders docs/performance.md's block from the
committed bench CSVs (the peers table and the figures run line included), and leaves it as it was when the folder is
missing or partial."""

import shutil

import pandas as pd
import pytest

from linrec.base.errors import LinrecError


@pytest.fixture
def perf():
    """benchmarks/performance.py, the renderer of docs/performance.md's block, loaded by its path as the package
    loads it (`linrec.app.bench`)."""
    from linrec.app.bench import performance_script
    from linrec.base.files import project_root

    return performance_script(project_root())


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


def test_figures_run_line_reads_run_csv(tmp_path, perf):
    from linrec.app.records import record_run

    figures_run_line = perf.figures_run_line

    assert "is missing" in figures_run_line(tmp_path / "results" / "x" / "notebooks" / "run.csv")
    path = record_run(tmp_path, {"01_capture": 130.2, "06_swap": 510.0, "02_x": 22.0}, 1260.0, 2, 10)
    line = figures_run_line(path)
    assert "3 notebooks in **21.0 min**" in line and "2 at a time" in line
    assert "10 captures computed during the run" in line
    assert "01 130 s, 02 22 s, 06 510 s" in line
    record_run(tmp_path, {"02_x": 20.0}, 20.0, 1, 0)
    assert "every capture read from the cache" in figures_run_line(path) and "in **0.3 min**" in figures_run_line(path)


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


def test_the_gpu_section_follows_its_csv_and_judges_each_target(tmp_path, perf):
    """benchmarks/gpu.py's table on the performance page: every number from the CSV, each target judged at its
    threshold (a planted run exactly at 1.3× passes, one a hair above misses)."""
    from linrec.base.files import project_root

    shutil.copytree(project_root() / "results" / "bench", tmp_path, dirs_exist_ok=True)
    row = dict(date="2026-01-02", card="Planted GPU", torch="9.9", model="m", params_m=88.3, blocks=12, batch_size=32,
               tokens=204800, windows=1600, text_repeated=1, plain_s=1.0, plain_peak_gib=0.6, exact_s=1.3,
               exact_peak_gib=2.5, ceiling_s=0.5, fast_s=1.1500001, fast_peak_gib=2.5, ratio_exact=1.3,
               ratio_fast=1.1500001, peer_s=9.0, peer_peak_gib=20.0, peer_status="ok", peer_vs_linrec_max_abs_dr2=1e-7,
               peer_vs_exact_ratio=5.0, cmp_tokens=20480, device_vs_cpu_max_abs_dr2=1e-7)  # fmt: skip
    big = {**row, "tokens": 2048000, "text_repeated": 4, "peer_status": "out of memory (x)", "peer_s": float("nan")}
    pd.DataFrame([row, big]).to_csv(tmp_path / "gpu.csv", index=False)
    text = perf.performance_section(tmp_path).split("On an accelerator", 1)[1]
    assert "Planted GPU" in text and "| 2,048,000 (text ×4) |" in text and "out of memory |" in text
    assert "exact capture 1.30× the plain forward (<= 1.3 PASS)" in text
    assert "fast 1.15× (<= 1.15 MISS)" in text
    assert "0.50 s (<= 0.5 s PASS)" in text and "1.0e-07 (<= 1e-07 PASS)" in text  # issue 91's target, at it
