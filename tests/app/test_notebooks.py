"""The notebook runner (linrec.app.notebooks): waves in the order the last full run gives, CPUs split between
notebooks beside other work, timings recorded per cell and notebook, a failing notebook named in one line, and an
override that reaches every notebook."""

import json
import os
import re
from pathlib import Path

import pandas as pd
import pytest

from linrec.base.errors import LinrecError
from linrec.base.files import project_root

ROOT = project_root(__file__)


def test_timings_are_recorded_per_cell_and_notebook(tmp_path):
    import nbformat
    import pandas as pd

    from linrec.app.records import TIMINGS, record_timings

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


def test_waves_run_01_alone_then_the_rest_longest_first_then_08():
    from pathlib import Path

    from linrec.app.notebooks import waves

    nbs = [Path(f"notebooks/{n}.py") for n in ("01_capture", "02_a", "03_b", "04_c", "09_report")]
    got = waves(nbs, {"02_a": 5.0, "03_b": 50.0, "04_c": 20.0})
    assert [[p.stem for p in s] for s in got] == [["01_capture"], ["03_b", "04_c", "02_a"], ["09_report"]]
    assert [[p.stem for p in s] for s in waves(nbs[1:3])] == [["02_a", "03_b"]]  # no timings: numbered order


def test_the_order_comes_from_the_last_full_run_not_from_a_later_partial_one(tmp_path):
    """A rerun of one notebook from cached captures rewrites its cell timings with a shorter time; the last run of
    every notebook (run.csv) still says it is the slowest, and it is what orders the next full run."""
    import pandas as pd

    from linrec.app.notebooks import _last_timings
    from linrec.app.records import RUN, TIMINGS

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


# what a real notebook's first two cells do: papermill injects the profile and the overrides, the next cell loads it
# (`value` is the profile's seed: any parameter would do)
PARAMETERS = (
    '# %% tags=["parameters"]\nprofile_file = "p.yaml"\noverrides = {}\n\n# %%\n'
    "from linrec.app.profile import load_profile\n\np = load_profile(profile_file, overrides).notebook('02')\n"
    "value, results_dir = p.seed, p.results_dir\n\n"
)


WAIT = 120.0  # seconds a test notebook waits for each file it waits for (see _project): only a broken runner waits


def _project(root, names, monkeypatch, waits=None):
    """A tiny project: each notebook records its parameter, the thread count its kernel was given (OMP_NUM_THREADS,
    which torch and the BLAS libraries read when they load: the runner sets it, as for the real notebooks, whose
    torch imports cost a kernel seconds that these tests do not need to spend) and the order it ran in, by events
    rather than clock readings: which notebooks had ended when it started (each leaves `<name>.started` in the results
    folder as it starts and `<name>.done` as it ends), and, for each file `waits[name]` names, whether that file
    appeared while it ran (it waits up to WAIT seconds for each: another notebook's `.started` appearing while this
    one waits shows the two ran side by side, however slowly their kernels start on a loaded machine). It also shows
    an object with a rich display (its plain-text fallback a repr with a memory address)."""
    import linrec.app.notebooks

    monkeypatch.setattr(linrec.app.notebooks, "stage_files", lambda: tuple(names))  # its stages: these notebooks
    waits = waits or {}
    (root / "pyproject.toml").write_text("")
    (root / "notebooks").mkdir()
    for n in names:
        (root / "notebooks" / f"{n}.py").write_text(
            HEADER + PARAMETERS + "# %%\nimport json, os, time\nfrom pathlib import Path\n\n"
            "here = Path(results_dir)\n"
            'ended = sorted(p.stem for p in here.glob("*.done"))\n'
            f'(here / "{n}.started").touch()\nseen = []\n'
            f"for name in {waits.get(n, [])!r}:\n"
            "    t = time.monotonic()\n"
            f"    while not (here / name).exists() and time.monotonic() - t < {WAIT}:\n"
            "        time.sleep(0.02)\n"
            "    seen.append((here / name).exists())\n"
            "threads = int(os.environ['OMP_NUM_THREADS'])\n"
            'record = {"value": value, "threads": threads, "ended": ended, "seen": seen,'
            ' "mark": os.environ.get("LINREC_TEST_MARK")}\n'
            f'(here / "{n}.json").write_text(json.dumps(record))\n(here / "{n}.done").touch()\n\n'
            "# %%\nclass Shown:\n    def _repr_html_(self):\n        return '<b>shown</b>'\n\n\nShown()\n"
        )
    (root / "p.yaml").write_text("seed: 7\nresults_dir: out\n")


def _last_run(directory, names, seconds):
    pd.DataFrame([{"date": "2026-11-24", "cpus": 2, "torch": "x", "jobs": 2, "notebooks": " ".join(names),
                   "notebook_seconds": seconds, "wall_seconds": 40.0, "captures_made": 0}]).to_csv(
        directory / "run.csv", index=False)  # fmt: skip


def test_a_full_run_stages_splits_the_cpus_reports_progress_and_records_itself(tmp_path, monkeypatch, capfd):
    """One run of four notebooks, two at a time, on a machine whose CPUs are all free (a busy host has its own test):
    - 01 ends before anything else starts, 02 and 03 run side by side on half the CPUs each, 08 starts last;
    - the console: a line per start and end (with the last full run's time and what is left), the stage of a running
      notebook at least every PLACE_EVERY seconds, no TCP warning (the kernels use Unix sockets) and no
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
    monkeypatch.setattr(linrec.app.notebooks, "PLACE_EVERY", 0.5)
    say = linrec.app.notebooks._Console._say

    def say_and_leave_a_file(console, text):  # what the console says, as files the notebooks can wait for
        say(console, text)
        staged = re.match(r"(\w+): [\d.]+ min in, cell \d+ of \d+", text)
        if staged:
            (tmp_path / "out" / f"{staged[1]}.staged").touch()

    monkeypatch.setattr(linrec.app.notebooks._Console, "_say", say_and_leave_a_file)
    names = ["01_first", "02_a", "03_b", "09_last"]
    # 02 and 03 each wait for the other to start, and for the console's line on where it is (which it prints only
    # for a notebook it announced as started): however fast or slow the machine, both lines are printed
    _project(
        tmp_path,
        names,
        monkeypatch,
        waits={"02_a": ["03_b.started", "02_a.staged"], "03_b": ["02_a.started", "03_b.staged"]},
    )
    nb = tmp_path / "notebooks" / "02_a.py"
    nb.write_text(nb.read_text().replace('results_dir = "out"\n', 'results_dir = "out"\nreadme = None\n', 1))
    (tmp_path / "p.yaml").write_text("seed: 7\nresults_dir: out\nreadme: README.md\n")
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
    assert rec["01_first"]["ended"] == [] and rec["09_last"]["ended"] == names[:-1]  # 01 first, 09 after the rest
    assert rec["02_a"]["ended"] == rec["03_b"]["ended"] == ["01_first"]
    assert rec["02_a"]["seen"] == rec["03_b"]["seen"] == [True, True]  # each saw the other start: side by side
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
    from linrec.app.notebooks import run_notebooks
    from linrec.app.records import TIMINGS

    monkeypatch.setattr(linrec.base.threads, "free_cpus", lambda seconds=1.0: max(2, os.cpu_count() or 1))
    _project(
        tmp_path, ["02_a", "03_b", "09_last"], monkeypatch
    )  # no 01: a first stage of its own would add a kernel, not a case
    (tmp_path / "out").mkdir()
    (tmp_path / "notebooks" / "03_b.py").write_text(HEADER + '# %% tags=["parameters"]\nvalue = 0\n\n# %%\n1 / 0\n')
    with pytest.raises(LinrecError, match=r"03_b\.py failed in cell .*ZeroDivisionError") as err:
        run_notebooks(tmp_path / "p.yaml", root=tmp_path, jobs=2)
    msg = str(err.value)
    assert "\n" not in msg and msg.endswith("; not run: 09_last") and "02_a" not in msg  # 02_a ran beside it
    import pandas as pd

    assert set(pd.read_csv(tmp_path / "out" / "notebooks" / TIMINGS)["notebook"]) == {"02_a"}


def test_a_profile_for_one_stage_runs_only_the_notebooks_it_names(tmp_path, monkeypatch, capsys):
    """`notebooks: ["02"]` in a profile (the zoo, training and curve profiles) is what `linrec figures` runs without
    --only: here the failing 03 never runs; --only still wins; a malformed value is one line naming the fix."""
    import linrec.base.threads
    from linrec.app.notebooks import run_notebooks

    monkeypatch.setattr(linrec.base.threads, "free_cpus", lambda seconds=1.0: 2)
    _project(tmp_path, ["02_a", "03_b"], monkeypatch)
    (tmp_path / "out").mkdir()
    (tmp_path / "notebooks" / "03_b.py").write_text(HEADER + '# %% tags=["parameters"]\nvalue = 0\n\n# %%\n1 / 0\n')
    (tmp_path / "p.yaml").write_text('seed: 7\nresults_dir: out\nnotebooks: ["02"]\n')
    done = run_notebooks(tmp_path / "p.yaml", root=tmp_path, jobs=1)
    assert [p.stem for p in done] == ["02_a"] and not (tmp_path / "out" / "03_b.started").exists()
    assert "p.yaml runs notebook(s) 02 (its `notebooks` key)" in capsys.readouterr().out
    assert json.loads((tmp_path / "out" / "02_a.json").read_text())["value"] == 7  # the key is not injected
    with pytest.raises(LinrecError, match=r"03_b\.py failed"):
        run_notebooks(tmp_path / "p.yaml", only=["03"], root=tmp_path, jobs=1)
    (tmp_path / "p.yaml").write_text("results_dir: out\nnotebooks: 2\n")
    with pytest.raises(LinrecError, match=r"notebooks must be a list of notebook numbers as strings"):
        run_notebooks(tmp_path / "p.yaml", root=tmp_path, jobs=1)


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
    runs side by side. The kernels see the runner's environment as it is when they run, also where their drivers
    are forked from a server started before it changed."""
    import json
    import multiprocessing.forkserver

    import linrec.base.threads
    from linrec.app.notebooks import _drivers, run_notebooks

    if _drivers().get_start_method() == "forkserver":
        multiprocessing.forkserver.ensure_running()  # started now, before the variable below is set
    monkeypatch.setenv("LINREC_TEST_MARK", "set after the server started")
    free = iter([1, 2, 2, 2])  # stage 02-04 (busy); after 02 (the other work has ended); …
    monkeypatch.setattr(linrec.base.threads, "free_cpus", lambda seconds=1.0: next(free))
    names = ["02_a", "03_b", "04_c"]  # no 01: its stage runs alone whatever the CPUs, so it adds a kernel, not a case
    _project(tmp_path, names, monkeypatch, waits={"03_b": ["04_c.started"], "04_c": ["03_b.started"]})
    (tmp_path / "out").mkdir()
    run_notebooks(tmp_path / "p.yaml", root=tmp_path, jobs=2)
    rec = {n: json.loads((tmp_path / "out" / f"{n}.json").read_text()) for n in names}
    assert rec["02_a"]["threads"] == 1 and rec["02_a"]["ended"] == []
    b, c = rec["03_b"], rec["04_c"]
    assert b["ended"] == c["ended"] == ["02_a"]  # 02 alone, while the CPU was busy
    # then 03 and 04 side by side (each saw the other start), handed to the pool together, one thread each
    assert b["seen"] == c["seen"] == [True]
    assert "03_b, 04_c: 2 at a time, 1 thread(s) each" in capsys.readouterr().out
    assert b["threads"] == c["threads"] == 1
    assert {r["mark"] for r in rec.values()} == {"set after the server started"}


def test_a_kernels_socket_folder_goes_when_the_kernel_shuts_down():
    """The runner's kernels talk over Unix sockets in a folder of their own; the folder goes with the kernel's other
    resources at shutdown, not at the driver's exit (a driver forked from the runner's server runs no exit
    handlers: before this, every notebook run left one behind). A restart keeps it."""
    import asyncio

    from linrec.app.notebooks import _ipc_kernel_manager

    async def start_restart_stop():
        manager = _ipc_kernel_manager()(kernel_name="python3")
        folder = Path(manager.folder)
        await manager.start_kernel()
        assert manager.transport == "ipc" and folder.is_dir() and Path(manager.ip).parent == folder
        await manager._async_cleanup_resources(restart=True)
        kept = folder.is_dir()
        await manager.shutdown_kernel(now=True)
        return kept, folder.exists()

    kept, left = asyncio.run(start_restart_stop())
    assert kept and not left


def test_a_parameter_override_reaches_the_notebooks_and_out_moves_every_output(tmp_path, monkeypatch, capsys):
    """`linrec figures -p value 9 --out scratch`: the notebook runs with 9 instead of the profile's 7, writes under
    scratch/ (executed notebook included) and nothing under the profile's folder; the run.csv of the profile's own
    last run is not rewritten by a run with overrides."""
    import json

    import linrec.base.threads
    from linrec.app.cli import main

    monkeypatch.setattr(linrec.base.threads, "free_cpus", lambda seconds=1.0: 1)
    _project(tmp_path, ["01_first"], monkeypatch)
    monkeypatch.chdir(tmp_path)
    assert main(["figures", "--params", "p.yaml", "-p", "seed", "9", "--out", "scratch"]) == 0
    record = json.loads((tmp_path / "scratch" / "01_first.json").read_text())
    assert record["value"] == 9  # the notebook bound the override, not the profile's 7
    assert (tmp_path / "scratch" / "notebooks" / "01_first.ipynb").exists()
    assert not (tmp_path / "out").exists() and not (tmp_path / "scratch" / "notebooks" / "run.csv").exists()
    assert "p.yaml with seed=9" in capsys.readouterr().out


def test_a_notebook_run_from_the_callers_process_leaves_its_environment_as_it_was(tmp_path, monkeypatch):
    """A notebook run one at a time runs from the caller's process (`_execute`), which sets the kernel's thread counts,
    LINREC_NOTEBOOK and KERNEL_ENV in its environment for the kernel to inherit; afterwards, and after a failure too,
    the environment is as it was. Left set, a pytest worker's later `linrec` commands printed their notices as a
    notebook's console lines (tests/app/test_commands.py failed after this file, 2026-11-29)."""
    import linrec.app.notebooks as runner

    def run(nb, params, out, root, progress, threads, env):  # what the real one sets before papermill starts
        os.environ.update({"OMP_NUM_THREADS": str(threads), "LINREC_NOTEBOOK": nb.stem, **runner.KERNEL_ENV})
        if params.get("fail"):
            raise LinrecError(f"{nb.name} failed")
        return 1.0

    monkeypatch.setattr(runner, "_execute_here", run)
    monkeypatch.delenv("LINREC_NOTEBOOK", raising=False)
    before = dict(os.environ)
    assert runner._execute(Path("notebooks/01_x.py"), {}, tmp_path / "01_x.ipynb", tmp_path, False, threads=3) == 1.0
    assert dict(os.environ) == before
    with pytest.raises(LinrecError):
        runner._execute(Path("notebooks/02_y.py"), {"fail": True}, tmp_path / "02_y.ipynb", tmp_path, False, threads=3)
    assert dict(os.environ) == before
