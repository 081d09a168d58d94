"""The notebook runner's parameter profiles: one-line errors for malformed files and unknown keys."""

import os
import re
import time
from pathlib import Path

import pandas as pd
import pytest

from linrec.app.params import declared_parameters, known_parameters, load_params, notebooks
from linrec.base.errors import LinrecError
from linrec.base.files import project_root

ROOT = project_root(__file__)


def test_every_shipped_profile_uses_known_keys_only():
    for profile in sorted((ROOT / "params").glob("*.yaml")):
        assert load_params(profile, ROOT)


def test_known_keys_are_what_the_notebooks_declare(tmp_path):
    nb = tmp_path / "notebooks" / "01_x.py"
    nb.parent.mkdir()
    nb.write_text(
        '# %% [markdown]\n# text\n\n# %% tags=["parameters"]\nalpha = 1\nbeta: int = 2\ngamma, delta = 3, 4\n\n# %%\n'
        "epsilon = 5\n"
    )
    assert declared_parameters(nb) == {"alpha", "beta"}  # tuple targets are not papermill parameters
    assert known_parameters(tmp_path) == {"alpha", "beta", "results_dir"}
    assert {"models", "capture", "figures_dir", "report_path"} <= known_parameters(ROOT)
    assert len(notebooks(ROOT)) == 9


def test_the_capture_settings_are_one_section_that_every_capturing_notebook_takes_whole():
    """No notebook declares a capture setting of its own (they would have to be kept equal by hand): each one that
    captures declares `capture` (a mapping, {} = CaptureConfig's defaults) and passes it on; the profiles set it
    once."""
    from linrec.app.params import declared_defaults
    from linrec.measure.config import SETTINGS

    for nb in notebooks(ROOT):
        declared = declared_defaults(nb)
        own = sorted(set(declared) & (set(SETTINGS) - {"seed"}))
        assert not own, f"{nb.name} declares capture settings {own}; read them from its `capture` section"
        if "get_capture" in nb.read_text() or "replicate_captures" in nb.read_text():
            assert declared.get("capture", (None,))[0] == {}, f"{nb.name} captures without a `capture` section"
            assert "capture_settings(capture)" in nb.read_text()
    for profile in sorted((ROOT / "params").glob("*.yaml")):
        load_params(profile, ROOT)  # every profile's capture section is known and well typed


@pytest.mark.parametrize(
    "text, needles",
    [
        ("models: [a, b\ntokens: 5\n", ["line 2", "not valid YAML"]),
        ("models: a\n  tokens: 5\n", ["line 2"]),
        ("- a\n- b\n", ["mapping"]),
        ("tokenz: 2560\n", ["tokenz", "known:", "tokens"]),
        # values of the wrong type (issue 30): the type each notebook's parameters cell declares
        ("capture: {tokens: lots}\n", ["capture: tokens must be a whole number", "'lots'", "fix that line"]),
        ("capture: {tokens: 20480.5}\n", ["tokens must be a whole number"]),
        ("capture: {tokenz: 2560}\n", ["capture: unknown capture setting(s) tokenz", "known: seq_len, tokens"]),
        ("capture: [1, 2]\n", ["capture must be a mapping"]),
        ("models: smollm2-135m\n", ["models must be a list of strings"]),
        ("models: [1, 2]\n", ["models must be a list of strings"]),
        ("probe_rows: many\n", ["probe_rows must be a whole number or null"]),
        ("readme: true\n", ["readme must be a string or null"]),
        ("seed: true\n", ["seed must be a whole number"]),  # a bool is not a number here
        ("budget_ppl: [1]\n", ["budget_ppl must be a number"]),
        ("results_dir: 3\n", ["results_dir must be a string"]),
    ],
)
def test_bad_profiles_are_one_line_errors(tmp_path, text, needles):
    f = tmp_path / "p.yaml"
    f.write_text(text)
    with pytest.raises(LinrecError) as err:
        load_params(f, ROOT)
    msg = str(err.value)
    assert "\n" not in msg and str(f) in msg
    for n in needles:
        assert n in msg, msg


def test_without_a_project_any_key_is_read(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("tokenz: 2560\n")
    assert load_params(f) == {"tokenz": 2560}  # no notebooks to check against: read as written
    with pytest.raises(LinrecError, match="tokenz"):
        load_params(f, ROOT)


def test_timings_are_recorded_per_cell_and_notebook(tmp_path):
    import nbformat
    import pandas as pd

    from linrec.app.notebooks import TIMINGS, record_timings

    def executed(stem, durations):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_markdown_cell("# title")]
        for k, d in enumerate(durations):
            cell = nbformat.v4.new_code_cell(f"# comment\nx{k} = {k}")
            cell.metadata["papermill"] = {"duration": d}
            nb.cells.append(cell)
        path = tmp_path / f"{stem}.ipynb"
        nbformat.write(nb, path)
        return path

    record_timings(executed("01_a", [0.5, 2.0]))
    record_timings(executed("02_b", [1.0]))
    record_timings(executed("01_a", [3.0]))  # a rerun replaces that notebook's rows only
    t = pd.read_csv(tmp_path / TIMINGS)
    assert list(zip(t["notebook"], t["cell"], t["seconds"], t["code"])) == [
        ("01_a", 0, 3.0, "x0 = 0"),
        ("02_b", 0, 1.0, "x0 = 0"),
    ]


def test_stages_run_01_alone_then_the_rest_longest_first_then_08():
    from pathlib import Path

    from linrec.app.notebooks import stages

    nbs = [Path(f"notebooks/{n}.py") for n in ("01_capture", "02_a", "03_b", "04_c", "09_report")]
    got = stages(nbs, {"02_a": 5.0, "03_b": 50.0, "04_c": 20.0})
    assert [[p.stem for p in s] for s in got] == [["01_capture"], ["03_b", "04_c", "02_a"], ["09_report"]]
    assert [[p.stem for p in s] for s in stages(nbs[1:3])] == [["02_a", "03_b"]]  # no timings: numbered order


def test_the_order_comes_from_the_last_full_run_not_from_a_later_partial_one(tmp_path):
    """A rerun of one notebook from cached captures rewrites its cell timings with a shorter time; the last run of
    every notebook (run.csv) still says it is the slowest, and it is what orders the next full run."""
    import pandas as pd

    from linrec.app.notebooks import RUN, TIMINGS, _last_timings

    nb = tmp_path / "results" / "notebooks"
    nb.mkdir(parents=True)
    pd.DataFrame({"notebook": ["06_swap", "07_controls", "07_controls"], "cell": [0, 0, 1], "seconds": [440, 200, 98],
                  "code": ""}).to_csv(nb / TIMINGS, index=False)  # fmt: skip
    assert _last_timings(tmp_path / "results", tmp_path) == {"06_swap": 440, "07_controls": 298}
    pd.DataFrame([{"date": "2026-11-24", "cpus": 2, "torch": "x", "jobs": 2, "notebooks": "06_swap 07_controls",
                   "notebook_seconds": "440 693", "wall_seconds": 1069.1, "captures_made": 13}]).to_csv(
        nb / RUN, index=False)  # fmt: skip
    assert _last_timings(tmp_path / "results", tmp_path) == {"06_swap": 440.0, "07_controls": 693.0}


HEADER = (
    "# ---\n# jupyter:\n#   kernelspec:\n#     display_name: Python 3\n#     language: python\n"
    "#     name: python3\n# ---\n\n"
)


def _project(root, names, sleep=1.5):
    """A tiny project: each notebook records its parameter, the thread count its kernel was given (OMP_NUM_THREADS,
    which torch and the BLAS libraries read when they load: the runner sets it, as for the real notebooks, whose
    torch imports cost a kernel seconds that these tests do not need to spend) and its start/end times, and shows
    an object with a rich display (its plain-text fallback a repr with a memory address)."""
    (root / "pyproject.toml").write_text("")
    (root / "notebooks").mkdir()
    for n in names:
        (root / "notebooks" / f"{n}.py").write_text(
            HEADER + '# %% tags=["parameters"]\nvalue = 0\nresults_dir = "out"\n\n# %%\nimport json, os, time\n'
            f"t0 = time.time()\ntime.sleep({sleep})\nthreads = int(os.environ['OMP_NUM_THREADS'])\n"
            f'json.dump({{"value": value, "threads": threads, "start": t0, "end": time.time()}}, '
            f'open(os.path.join(results_dir, "{n}.json"), "w"))\n\n'
            "# %%\nclass Shown:\n    def _repr_html_(self):\n        return '<b>shown</b>'\n\n\nShown()\n"
        )
    (root / "p.yaml").write_text("value: 7\nresults_dir: out\n")


def _last_run(directory, names, seconds):
    pd.DataFrame([{"date": "2026-11-24", "cpus": 2, "torch": "x", "jobs": 2, "notebooks": " ".join(names),
                   "notebook_seconds": seconds, "wall_seconds": 40.0, "captures_made": 0}]).to_csv(
        directory / "run.csv", index=False)  # fmt: skip


def test_a_full_run_stages_splits_the_cpus_reports_progress_and_records_itself(tmp_path, monkeypatch, capfd):
    """One run of four notebooks, two at a time, on a machine whose CPUs are all free (a busy host has its own test):
    - 01 ends before anything else starts, 02 and 03 run side by side on half the CPUs each, 08 starts last;
    - the console: a line per start and end (with the last full run's time and what is left), the stage of a running
      notebook at least every STAGE_EVERY seconds, no TCP warning (the kernels use Unix sockets) and no
      KeyboardInterrupt from a kernel's shutdown;
    - run.csv and timings.csv record it, and docs/performance.md's block is rewritten from that run.csv;
    - the executed notebooks keep no clock readings, random ids, temporary paths or memory addresses, so a partial
      rerun (--only 02) rewrites 02's notebook byte for byte, and leaves run.csv, the full run's record, alone."""
    import json

    import nbformat

    import linrec.app.notebooks
    import linrec.base.threads
    from linrec.app.bench import PERFORMANCE_SCRIPT, performance_script
    from linrec.app.notebooks import run_notebooks

    perf = performance_script(ROOT)  # the fake project carries a copy of it, as a clone does
    PERF_END, PERF_START = perf.PERF_END, perf.PERF_START

    monkeypatch.setattr(linrec.base.threads, "free_cpus", lambda seconds=1.0: os.cpu_count() or 1)
    monkeypatch.setattr(linrec.app.notebooks, "STAGE_EVERY", 0.5)
    names = ["01_first", "02_a", "03_b", "09_last"]
    _project(tmp_path, names)
    nb = tmp_path / "notebooks" / "02_a.py"
    nb.write_text(nb.read_text().replace('results_dir = "out"\n', 'results_dir = "out"\nreadme = None\n', 1))
    (tmp_path / "p.yaml").write_text("value: 7\nresults_dir: out\nreadme: README.md\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "performance.md").write_text(f"# x\n\n{PERF_START}\nold\n{PERF_END}\n")
    (tmp_path / "results" / "bench").mkdir(parents=True)
    for f in ("capture.csv", "swap.csv"):
        (tmp_path / "results" / "bench" / f).write_bytes((ROOT / "results" / "bench" / f).read_bytes())
    (tmp_path / PERFORMANCE_SCRIPT).parent.mkdir()
    (tmp_path / PERFORMANCE_SCRIPT).write_bytes((ROOT / PERFORMANCE_SCRIPT).read_bytes())
    executed = tmp_path / "out" / "notebooks"
    executed.mkdir(parents=True)
    _last_run(executed, names, "6 30 12 3")  # a last full run to go by

    done = run_notebooks(tmp_path / "p.yaml", root=tmp_path, jobs=2)
    assert sorted(p.stem for p in done) == names
    rec = {n: json.loads((tmp_path / "out" / f"{n}.json").read_text()) for n in names}
    assert all(r["value"] == 7 for r in rec.values())
    assert all(rec["01_first"]["end"] <= rec[n]["start"] for n in names[1:])
    assert all(rec[n]["end"] <= rec["09_last"]["start"] for n in names[:-1])
    assert max(rec["02_a"]["start"], rec["03_b"]["start"]) < min(rec["02_a"]["end"], rec["03_b"]["end"])
    if (os.cpu_count() or 1) >= 2:
        assert rec["02_a"]["threads"] == rec["03_b"]["threads"] == (os.cpu_count() or 1) // 2

    out, err = capfd.readouterr()
    for n in names:
        assert f"[linrec] {n} started → " in out and f"[linrec] {n} done in " in out
    assert "02_a started → " in out and "(the last full run: 0.5 min)" in out and "min left" in out
    assert re.search(r"\[linrec\] 0[23]_\w+: 0\.\d min in, cell \d of \d", out), out
    assert "without encryption" not in err + out and "KeyboardInterrupt" not in err + out

    timings = pd.read_csv(executed / "timings.csv")
    assert sorted(timings["notebook"].unique()) == names
    run = pd.read_csv(executed / "run.csv")
    assert run["notebooks"].iloc[0] == " ".join(names) and run["jobs"].iloc[0] == 2
    text = (tmp_path / "docs" / "performance.md").read_text()
    assert "old" not in text and "Figures (`linrec figures`" in text
    assert f"{run['wall_seconds'].iloc[0] / 60:.1f} min" in text

    saved = nbformat.read(str(executed / "02_a.ipynb"), as_version=4)
    assert saved.metadata.papermill["input_path"] == "notebooks/02_a.py"
    assert saved.metadata.papermill["output_path"] == "out/notebooks/02_a.ipynb"
    assert not {"start_time", "end_time", "duration"} & set(saved.metadata.papermill)
    assert [c.id for c in saved.cells] == [f"cell-{i}" for i in range(len(saved.cells))]
    shown = saved.cells[-1].outputs[0]["data"]
    assert shown["text/html"] == "<b>shown</b>" and shown["text/plain"] == "<__main__.Shown>"
    for cell in saved.cells:
        assert "execution" not in cell.metadata and "start_time" not in cell.metadata.get("papermill", {})
    before = {p.name: p.read_bytes() for p in executed.iterdir()}
    run_notebooks(tmp_path / "p.yaml", only=["02"], root=tmp_path, jobs=2)
    after = {p.name: p.read_bytes() for p in executed.iterdir()}
    assert after["02_a.ipynb"] == before["02_a.ipynb"] and after["run.csv"] == before["run.csv"]


def test_a_failing_notebook_is_one_line_naming_it_and_what_never_ran(tmp_path, monkeypatch):
    import linrec.base.threads
    from linrec.app.notebooks import TIMINGS, run_notebooks

    monkeypatch.setattr(linrec.base.threads, "free_cpus", lambda seconds=1.0: max(2, os.cpu_count() or 1))
    _project(tmp_path, ["01_first", "02_a", "03_b", "09_last"], sleep=0)
    (tmp_path / "out").mkdir()
    (tmp_path / "notebooks" / "03_b.py").write_text(HEADER + '# %% tags=["parameters"]\nvalue = 0\n\n# %%\n1 / 0\n')
    with pytest.raises(LinrecError, match=r"03_b\.py failed in cell .*ZeroDivisionError") as err:
        run_notebooks(tmp_path / "p.yaml", root=tmp_path, jobs=2)
    msg = str(err.value)
    assert "\n" not in msg and msg.endswith("; not run: 09_last") and "02_a" not in msg  # 02_a ran beside it
    import pandas as pd

    assert set(pd.read_csv(tmp_path / "out" / "notebooks" / TIMINGS)["notebook"]) == {"01_first", "02_a"}


def test_the_console_estimates_only_from_this_profiles_own_last_run():
    from linrec.app.notebooks import _Console

    assert _Console({}, ["01_a", "02_b"]).left() == ""  # nothing to go by: no estimate rather than another's
    c = _Console({"01_a": 60.0, "02_b": 120.0, "03_c": 240.0, "09_z": 60.0}, ["01_a", "02_b", "03_c", "09_z"], jobs=2)
    assert c.left() == "; about 5 min left"  # 01 and 09 alone (2 min), 02 and 03 side by side (3 min)
    c.done("01_a", 50.0, Path("x"))
    assert c.left() == "; about 4 min left"


def test_beside_a_busy_process_fewer_notebooks_and_threads_run(tmp_path, monkeypatch, capsys):
    """With one CPU left free by other work, the middle stage runs one notebook at a time on one thread (what
    --jobs 1 runs too); it looks again after each notebook, and once the other work has ended the rest of the stage
    runs side by side."""
    import json

    import linrec.base.threads
    from linrec.app.notebooks import run_notebooks

    free = iter([1, 1, 2, 2, 2])  # stage 01; stage 02-04 (busy); after 02 (the other work has ended); …
    monkeypatch.setattr(linrec.base.threads, "free_cpus", lambda seconds=1.0: next(free))
    names = ["01_first", "02_a", "03_b", "04_c"]
    _project(tmp_path, names, sleep=0.5)
    (tmp_path / "out").mkdir()
    run_notebooks(tmp_path / "p.yaml", root=tmp_path, jobs=2)
    rec = {n: json.loads((tmp_path / "out" / f"{n}.json").read_text()) for n in names}
    assert rec["02_a"]["threads"] == 1
    a, b, c = rec["02_a"], rec["03_b"], rec["04_c"]
    assert a["end"] <= min(b["start"], c["start"])  # 02 alone, while the CPU was busy
    # then 03 and 04 side by side: handed to the pool together, one thread each. Checked on that decision, not on
    # clock overlap: a kernel that starts slowly on a loaded machine can begin after its neighbour's half-second
    # notebook has ended (seen in a fresh clone's make test: 0.58 s late).
    assert "03_b, 04_c: 2 at a time, 1 thread(s) each" in capsys.readouterr().out
    assert b["threads"] == c["threads"] == 1


def test_busy_cpus_sees_a_spinning_process():
    import subprocess
    import sys

    from linrec.base.threads import busy_cpus, free_cpus

    spin = subprocess.Popen([sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 4: pass"])
    try:
        time.sleep(0.5)
        assert busy_cpus(1.5) >= 0.7  # one process spinning on one CPU (more if the machine has other work)
        assert 1 <= free_cpus(0.5) <= max(1, (os.cpu_count() or 1) - 1)
    finally:
        spin.kill()


def test_profile_values_of_the_declared_types_pass(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("capture: {tokens: 4096, test_frac: 0.25}\nbudget_ppl: 2\nprobe_rows: null\ntest_windows: 3\n"
                 "readme: README.md\nmodels: [a]\n")  # fmt: skip
    assert load_params(f, ROOT)["budget_ppl"] == 2  # a whole number where a float is declared is fine


def test_every_parameter_that_defaults_to_none_has_a_declared_type():
    from linrec.app.params import OPTIONAL_TYPES, declared_defaults

    declared = {n: v for nb in notebooks(ROOT) for n, (v, _) in declared_defaults(nb).items()}
    assert {n for n, v in declared.items() if v is None} <= set(OPTIONAL_TYPES) <= set(declared)
    assert isinstance(declared["cross_band"], int)  # a number by default; None (every pair) is allowed too
    f = ROOT / "params" / "p.yaml"
    try:
        f.write_text("cross_band: null\ndecomposition_rows: null\n")
        assert load_params(f, ROOT)["cross_band"] is None
    finally:
        f.unlink()


def test_under_the_runner_a_loop_prints_one_line_on_the_console_not_into_the_notebook(monkeypatch, capfd):
    """A kernel's sys.stdout/sys.stderr are the notebook's outputs; its own stderr (fd 2) is the runner's console.
    A loop that runs only on a cache miss must not write into the saved notebook, or a rerun would differ."""
    import io
    import sys

    from linrec.base.progress import bar, write

    monkeypatch.setenv("LINREC_PROGRESS", "0")
    monkeypatch.setenv("LINREC_NOTEBOOK", "02_x")
    cell_out, cell_err = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", cell_out)
    monkeypatch.setattr(sys, "stderr", cell_err)
    assert list(bar(range(3), desc="capture m", unit="batch")) == [0, 1, 2]
    write("memory plan: 1 block")
    monkeypatch.undo()
    console = capfd.readouterr().err
    assert cell_out.getvalue() == cell_err.getvalue() == ""
    assert console.splitlines() == ["[linrec] 02_x: capture m: 3 batches", "[linrec] 02_x: memory plan: 1 block"]
