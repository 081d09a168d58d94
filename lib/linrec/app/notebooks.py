"""Run the numbered notebooks in order with papermill: one parameter profile in, executed notebooks and figures out.

The jupytext percent-format `notebooks/NN_name.py` files are the source; each is converted to
`.ipynb` in memory and executed with the profile's file and the run's overrides injected into its `parameters` cell
(`profile_file`, `overrides`), from which its next cell loads the profile (`linrec.app.profile.load_profile`).
Executed notebooks go to `<results_dir>/notebooks/`, figures to `<figures_dir>/`, both relative to the project root.
"""

from __future__ import annotations

import atexit
import datetime
import json
import logging
import multiprocessing
import os
import re
import shutil
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager

from linrec.app.bench import performance_script
from linrec.app.profile import load_profile, profile_path
from linrec.base.errors import LinrecError
from linrec.base.files import atomic_file, project_root
from linrec.base.progress import NOTEBOOK_ENV

log = logging.getLogger(__name__)


FIRST, LAST = "01", "09"  # the capture notebook every other one reads; the report, which reads them all


def default_jobs() -> int:
    """Notebooks run at once by `linrec figures`: 2 where there are at least 2 CPUs (see `run_notebooks`)."""

    return 2 if (os.cpu_count() or 1) >= 2 else 1


def stages(selected: list[Path], timings: dict[str, float] | None = None) -> list[list[Path]]:
    """The order `run_notebooks` runs `selected` in: notebook 01 alone (it makes the captures the others read),
    then every notebook between (they read only the cache, never each other's tables; longest first by
    `timings` {stem: seconds}, the last run's, so the slowest one starts first), then 09 (it reads their tables)."""
    timings = timings or {}
    first = [nb for nb in selected if nb.name.startswith(FIRST)]
    last = [nb for nb in selected if nb.name.startswith(LAST)]
    middle = [nb for nb in selected if nb not in first and nb not in last]
    middle.sort(key=lambda nb: -timings.get(nb.stem, 0.0))
    return [s for s in (first, middle, last) if s]


def _last_timings(results: Path, root: Path, own: bool = False) -> dict[str, float]:
    """Seconds per notebook in the last full run of this profile (`run.csv`) or, without one, in its last per-cell
    timings, or (unless `own`: the console's time estimates are this profile's or none) in the default profile's
    (a guide to which notebook is slowest, nothing more); {} without any.

    `run.csv` comes first because only a run of every notebook writes it: a later `--only` run, or a rerun of one
    notebook from cached captures, rewrites that notebook's cell timings with a time that leaves out its captures
    (notebook 07: 298 s instead of 693 s), and started it third instead of first."""
    # here, not at the top: the drivers' forkserver imports this module, and must hold no numpy or torch (`_drivers`)
    import pandas as pd

    places = [results / "notebooks"] if own else [results / "notebooks", root / "results" / "default" / "notebooks"]
    for d in places:
        try:
            run = pd.read_csv(d / RUN).iloc[-1]
            names, secs = str(run["notebooks"]).split(), str(run["notebook_seconds"]).split()
            if len(names) == len(secs) and names:
                return {n: float(x) for n, x in zip(names, secs)}
        except (OSError, ValueError, KeyError, IndexError):
            pass
        try:
            return pd.read_csv(d / TIMINGS).groupby("notebook")["seconds"].sum().to_dict()
        except (OSError, ValueError, KeyError):
            continue
    return {}


def _ipc_kernel_manager():
    """A kernel manager whose kernel talks over Unix sockets in a private temporary folder instead of TCP on
    localhost: nothing else on the machine can connect to it, and the kernel has no reason to print its
    "running over TCP without encryption" warning on every notebook's console.

    It also shuts a finished kernel down without jupyter_client's opening SIGINT: that interrupt lands in whatever
    the idle kernel is doing and, now and then, prints "[IPKernelApp] ERROR | KeyboardInterrupt caught in kernel"
    on the console of a run that went well. The shutdown request, then SIGTERM and SIGKILL after
    `shutdown_wait_time`, still follow (a kernel busy in a cell at shutdown is ended by them, not by SIGINT).
    nbclient's own interrupt, on a cell that times out, is sent before the shutdown and still goes through.

    The folder goes with the kernel's other resources once it has shut down: a driver forked from the runner's
    server (`_drivers`) ends without running exit handlers, so a folder left to one stayed behind (one per notebook
    run). An exit handler still removes it where a kernel never got that far."""

    class IpcKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.folder = tempfile.mkdtemp(prefix="linrec-kernel-")
            atexit.register(shutil.rmtree, self.folder, ignore_errors=True)
            self.transport, self.ip = "ipc", str(Path(self.folder) / "k")

        async def _async_cleanup_resources(self, restart: bool = False) -> None:
            await super()._async_cleanup_resources(restart=restart)
            if not restart:  # a restarted kernel binds its sockets in the same folder again
                shutil.rmtree(self.folder, ignore_errors=True)

        async def _async_interrupt_kernel(self) -> None:
            if not self.shutting_down:  # an interrupt asked for (nbclient's, on a cell timeout) still goes through
                await super()._async_interrupt_kernel()

    return IpcKernelManager


KERNEL_ENV = {
    "MPLBACKEND": "module://matplotlib_inline.backend_inline",  # every figure a cell draws becomes its image output
    "LINREC_PROGRESS": "0",  # no redrawn bars saved into the notebook: one line per loop (linrec.base.progress)
}


def _execute(
    nb: Path,
    params: dict,
    out: Path,
    root: Path,
    progress: bool,
    threads: int | None = None,
    env: dict[str, str] | None = None,
) -> float:
    """Run one notebook under papermill (in a fresh kernel); its seconds. With `threads`, the kernel's torch and
    BLAS pools get that many threads (set in this process's environment, which the kernel inherits). `env` replaces
    this process's environment first: a driver forked from the pool's server has the server's, which may be older
    than the runner's."""

    # here, not at the top: `linrec figures` checks its profile before it imports the notebook tools (~3 s)
    import jupytext
    import nbformat
    import papermill as pm

    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    if threads is not None:
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ[var] = str(threads)
    os.environ.update(KERNEL_ENV)  # the kernel inherits this process's environment
    os.environ[NOTEBOOK_ENV] = nb.stem  # its console lines name it (linrec.base.progress)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / f"{nb.stem}.ipynb"
        nbformat.write(jupytext.read(nb), source)
        declared = pm.inspect_notebook(str(source))
        chosen = {k: v for k, v in params.items() if k in declared}
        t0 = time.perf_counter()
        try:
            pm.execute_notebook(
                str(source),
                str(out),
                parameters=chosen,
                kernel_name="python3",
                cwd=str(root),
                progress_bar=progress,
                kernel_manager_class=_ipc_kernel_manager(),
                # the kernel's own stdout/stderr stay the runner's console (where linrec.base.progress writes under the
                # runner) instead of being forwarded into the notebook's outputs
                extra_arguments=["--IPKernelApp.capture_fd_output=False"],
            )
        except pm.PapermillExecutionError as err:
            raise LinrecError(
                f"{nb.name} failed in cell {err.exec_count}: {err.ename}: "
                f"{str(err.evalue).splitlines()[0] if err.evalue else ''} (see {out})"
            ) from None
        return time.perf_counter() - t0


def _drivers():
    """Where the notebooks of a side-by-side stage are driven from (each driver starts its notebook's kernel and
    feeds it cells): processes forked from a server that has imported papermill, jupytext and nbformat once, where
    the platform has one (multiprocessing's forkserver), so a stage's drivers start at once instead of each importing
    them again (2-3 s per stage on 2 cores); freshly spawned interpreters elsewhere. Never a fork of this process,
    whose threads (the console's) and imported torch a fork would copy mid-state."""

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["papermill", "jupytext", "nbformat", __name__])
    return ctx


def run_notebooks(
    params_file: str | Path,
    only: list[str] | None = None,
    root: Path | None = None,
    jobs: int | None = None,
    overrides: dict | None = None,
    out: str | Path | None = None,
) -> list[Path]:
    """Execute every numbered notebook (or those whose names start with one of `only`) under `params_file`, with
    `overrides` {name: value} replacing the profile's values (`linrec figures -p NAME VALUE`, checked as a profile's
    are) and, with `out`, every table, executed notebook, figure and the report written under that folder.

    `jobs` notebooks run at once (default `default_jobs()`), in the `stages` order: 01, then 02–08 side by side,
    then 09. With several jobs the CPUs are split between them (each kernel's thread pools get
    cpu_count // jobs threads), so no two pools fight over a core; on 2 cores, two one-thread kernels got 15 %
    more forward-pass throughput than one two-thread kernel, and more on the probes' small products. Before each
    stage the CPUs that other processes keep busy are left out (`linrec.base.threads.free_cpus`): beside another job,
    fewer kernels and threads run instead of stalling each other, and a stage that started one at a time looks again
    after each notebook, so the rest of it runs side by side once that work has ended."""

    # here, not at the top: the drivers' forkserver imports this module, and must hold no numpy or torch (`_drivers`)
    from linrec.base.threads import free_cpus

    root = root or project_root()
    params_path = profile_path(params_file, root)
    injected = _with_overrides(overrides or {}, out)
    params = load_profile(params_path, injected, root).values()  # what every notebook loads again (`_injected`)
    given = _injected(params_path, injected, root)  # the same for every notebook
    results = root / params["results_dir"]
    if overrides:
        shown = ", ".join(f"{k}={v!r}" for k, v in overrides.items())
        print(f"[linrec] {params_path.name} with {shown}: writing under {params['results_dir']}", flush=True)
    (results / "notebooks").mkdir(parents=True, exist_ok=True)
    if not only and params.get("notebooks"):  # a profile for one stage (zoo, training, curve) names its notebooks
        only = list(params["notebooks"])
        print(f"[linrec] {params_path.name} runs notebook(s) {', '.join(only)} (its `notebooks` key)", flush=True)
    selected = [nb for nb in notebooks(root) if not only or any(nb.name.startswith(o) for o in only)]
    if not selected:
        raise LinrecError(f"no notebooks match {only}; available: {', '.join(nb.stem for nb in notebooks(root))}")
    jobs = default_jobs() if jobs is None else jobs
    if jobs < 1:
        raise LinrecError(f"--jobs must be at least 1, got {jobs}")
    done, seconds = [], {}
    captures_before = _capture_entries()
    t_all = time.perf_counter()
    expected = _last_timings(results, root)
    console = _Console(_last_timings(results, root, own=True), [nb.stem for nb in selected], jobs)

    def complete(nb: Path, out: Path, secs: float) -> None:
        seconds[nb.stem] = secs
        record_timings(out)
        tidy_executed(out, nb, root)
        done.append(out)
        console.done(nb.stem, secs, out)

    failure: str | None = None
    never: list[str] = []
    with console:
        for stage in stages(selected, expected):
            if failure is not None:
                never += [nb.stem for nb in stage]
                continue
            outs = {nb: results / "notebooks" / f"{nb.stem}.ipynb" for nb in stage}
            free = free_cpus()  # before each stage: CPUs that other processes leave free
            if free < (os.cpu_count() or 1):
                print(f"[linrec] {(os.cpu_count() or 1) - free} CPU(s) busy with other work: using {free}", flush=True)
            queue = list(stage)
            while queue and (jobs == 1 or len(queue) == 1 or free == 1):  # one at a time, on every free CPU
                nb = queue.pop(0)
                if failure is not None:
                    never.append(nb.stem)
                    continue
                console.start(nb.stem, outs[nb], parallel=1)
                try:
                    complete(nb, outs[nb], _execute(nb, given, outs[nb], root, progress=False, threads=free))
                except LinrecError as err:
                    failure = str(err)
                if queue and failure is None and jobs > 1:  # the other work may have ended: look again
                    free = free_cpus(0.3)  # a short look: this runs between notebooks
            if not queue or failure is not None:
                never += [nb.stem for nb in queue]
                continue
            stage = queue  # the rest of the stage, side by side now that CPUs are free
            n = min(jobs, len(stage), free)
            threads = max(1, free // n)
            print(f"[linrec] {', '.join(nb.stem for nb in stage)}: {n} at a time, {threads} thread(s) each", flush=True)
            t_stage = time.time()
            with ProcessPoolExecutor(max_workers=n, mp_context=_drivers()) as pool:
                env = dict(os.environ)
                futures = {pool.submit(_execute, nb, given, outs[nb], root, False, threads, env): nb for nb in stage}
                pending = set(futures)
                while pending:
                    finished, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
                    for f in pending:  # started: papermill writes the output notebook as its first step
                        out = outs[futures[f]]
                        if out.exists() and out.stat().st_mtime >= t_stage:
                            console.start(futures[f].stem, out, parallel=n)
                    for f in finished:
                        nb = futures[f]
                        if f.cancelled():
                            never.append(nb.stem)
                        elif f.exception() is not None:
                            if failure is None:
                                failure = str(f.exception())
                                for p in pending:  # those not started yet: never run; the running ones finish
                                    p.cancel()
                            else:  # a second failure beside the first
                                failure += f"; also {f.exception()}"
                        else:
                            complete(nb, outs[nb], f.result())
    if failure is not None:
        later = f"; not run: {', '.join(never)}" if never else ""
        raise LinrecError(f"{failure}{later}")
    wall = time.perf_counter() - t_all
    made = len(_capture_entries() - captures_before)
    if overrides:  # not the profile's own run: its run.csv (the console's estimates, the performance page) stays
        print(f"[linrec] a run with parameters overridden: {RUN} keeps the profile's last run", flush=True)
    elif len(selected) == len(notebooks(root)):  # the figures run the README reports: every notebook
        record_run(results / "notebooks", seconds, wall, jobs, made)
        if params.get("readme"):  # the profile that owns the repository's pages: its performance page cites this run
            bench = root / "results" / "bench"
            try:
                perf = performance_script(root)  # benchmarks/performance.py, which renders docs/performance.md's block
                if perf.update_readme_performance(root / perf.PERFORMANCE_PAGE, bench, results / "notebooks" / RUN):
                    print(f"[linrec] updated the performance block of {perf.PERFORMANCE_PAGE}", flush=True)
            except LinrecError as err:  # the figures are made: a missing benchmark or script leaves the block
                print(f"[linrec] performance block of docs/performance.md left as it was: {err}", flush=True)
    else:
        print(f"[linrec] a partial run (--only): {RUN} keeps the last run of every notebook", flush=True)
    print(f"[linrec] {len(done)} notebook(s) in {wall:.0f} s ({made} capture(s) made, the rest read from the cache)")
    return done


def _with_overrides(overrides: dict, out: str | Path | None) -> dict:
    """The run's `overrides` (`linrec figures -p NAME VALUE`, `--device`) and, with `out`, every output path under
    that folder (relative to the current directory) and the README left alone: what the notebooks load the profile
    with (checked there, as a profile's values are)."""
    overrides = dict(overrides)
    if out is not None:
        where = Path(out).resolve()
        overrides.update(results_dir=str(where), figures_dir=str(where / "figures"), readme=None)
        overrides["report_path"] = str(where / "report.md")
    return overrides


def _injected(params_path: Path, overrides: dict, root: Path) -> dict:
    """What papermill injects into a notebook's parameters cell: the profile's file (relative to the project: the
    executed notebook reads the same on every machine) and the overrides. Each notebook loads the profile from them."""
    shown = params_path.relative_to(root) if params_path.is_relative_to(root) else params_path
    return {"profile_file": str(shown), "overrides": overrides}


def notebooks(root: Path) -> list[Path]:
    """The numbered notebooks' sources (notebooks/NN_name.py), in order."""
    return sorted((root / "notebooks").glob("[0-9][0-9]_*.py"))


STAGE_EVERY = 60.0  # seconds between the console's lines on where each running notebook is


class _Console:
    """What `linrec figures` prints while it runs: a line when each notebook starts and ends (with the time the last
    full run took, and about how long the rest will take), and once a minute the stage each running notebook is at
    (its current cell and the heading above it, read from the output notebook papermill saves at every cell)."""

    def __init__(self, expected: dict[str, float], stems: list[str], jobs: int = 1, interval: float | None = None):
        self.expected, self.todo, self.jobs = expected, list(stems), max(jobs, 1)
        self.interval = STAGE_EVERY if interval is None else interval
        self.running: dict[str, tuple[float, Path, int]] = {}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=5)

    def _say(self, text: str) -> None:
        print(f"[linrec] {text}", flush=True)

    def _took(self, stem: str) -> str:
        secs = self.expected.get(stem)
        return f" (the last full run: {secs / 60:.1f} min)" if secs else ""

    def left(self) -> str:
        """About how long the notebooks not yet finished will take, from the last full run's times: 01 and 08 run
        alone, the ones between `jobs` at a time."""
        now = time.perf_counter()
        alone, side_by_side = 0.0, 0.0
        for stem in self.todo:
            secs = self.expected.get(stem)
            if secs is None:
                return ""
            if stem in self.running:
                secs = max(secs - (now - self.running[stem][0]), 0.0)
            if stem.startswith((FIRST, LAST)):
                alone += secs
            else:
                side_by_side += secs
        return f"; about {(alone + side_by_side / self.jobs) / 60:.0f} min left" if self.todo else ""

    def start(self, stem: str, out: Path, parallel: int) -> None:
        with self._lock:
            if stem in self.running:
                return
            self.running[stem] = (time.perf_counter(), out, parallel)
        self._say(f"{stem} started → {out}{self._took(stem)}")

    def done(self, stem: str, secs: float, out: Path) -> None:
        with self._lock:
            self.running.pop(stem, None)
            if stem in self.todo:
                self.todo.remove(stem)
        self._say(f"{stem} done in {secs:.0f} s{self.left()}")

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                running = dict(self.running)
            for stem, (t0, out, _) in running.items():
                where = notebook_stage(out)
                self._say(f"{stem}: {(time.perf_counter() - t0) / 60:.1f} min in{', ' + where if where else ''}")


def notebook_stage(executed: str | Path) -> str | None:
    """Where a notebook under papermill is: "cell K of N · <the heading above it>", from the output notebook papermill
    saves as each cell starts; None before it is written."""

    try:
        nb = json.loads(Path(executed).read_text())
    except (OSError, ValueError):
        return None
    heading, code, at = None, 0, None
    cells = nb.get("cells", [])
    total = sum(c.get("cell_type") == "code" for c in cells)
    for c in cells:
        source = "".join(c.get("source", ""))
        if c.get("cell_type") == "markdown":
            heading = next((ln.lstrip("# ").strip() for ln in source.splitlines() if ln.startswith("#")), heading)
        elif c.get("cell_type") == "code":
            code += 1
            if c.get("metadata", {}).get("papermill", {}).get("status") == "running":
                at = code
                break
    if at is None:
        return None
    return f"cell {at} of {total}" + (f" · {heading}" if heading else "")


RUN = "run.csv"  # beside the executed notebooks: the last run's wall time, how it ran, what it had to capture


def _capture_entries() -> set[str]:
    # here, not at the top: the drivers' forkserver imports this module, and must hold no numpy or torch (`_drivers`)
    from linrec.base.cache import folder

    d = folder("capture")
    return {p.name for p in d.iterdir() if p.is_dir() and not p.name.startswith(".")} if d.is_dir() else set()


def record_run(directory: Path, seconds: dict[str, float], wall: float, jobs: int, captures_made: int) -> Path:
    """Write `run.csv` in `directory`: one row for the run that just finished (date, CPUs, torch, jobs, the
    notebooks with their seconds, wall seconds, and how many captures it computed rather than read)."""

    # here, not at the top: the drivers' forkserver imports this module, and must hold no numpy or torch (`_drivers`)
    import pandas as pd
    import torch

    row = {
        "date": datetime.date.today().isoformat(),
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "jobs": jobs,
        "notebooks": " ".join(sorted(seconds)),
        "notebook_seconds": " ".join(f"{seconds[k]:.0f}" for k in sorted(seconds)),
        "wall_seconds": round(wall, 1),
        "captures_made": captures_made,
    }
    path = Path(directory) / RUN
    with atomic_file(path) as tmp:
        pd.DataFrame([row]).to_csv(tmp, index=False)
    return path


TIMINGS = "timings.csv"  # beside the executed notebooks: where each notebook's time went


def cell_timings(executed: str | Path) -> list[dict]:
    """Per code cell of an executed notebook: its number, papermill's recorded duration and its first source line."""
    # here, not at the top: `linrec figures` checks its profile before it imports the notebook tools (~3 s)
    import nbformat

    nb = nbformat.read(str(executed), as_version=4)
    rows = []
    for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        meta = cell.get("metadata", {}).get("papermill", {})
        first = next((ln.strip() for ln in cell.source.splitlines() if ln.strip() and not ln.startswith("#")), "")
        rows.append({"notebook": Path(executed).stem, "cell": i, "seconds": meta.get("duration"), "code": first[:80]})
    return rows


def record_timings(executed: Path) -> Path:
    """Replace this notebook's rows in `timings.csv` beside it (one row per code cell), keeping the other notebooks'."""
    # here, not at the top: the drivers' forkserver imports this module, and must hold no numpy or torch (`_drivers`)
    import pandas as pd

    path = executed.parent / TIMINGS
    old = pd.read_csv(path) if path.exists() else pd.DataFrame(columns=["notebook", "cell", "seconds", "code"])
    new = pd.DataFrame(cell_timings(executed))
    table = pd.concat([old[old["notebook"] != executed.stem], new], ignore_index=True).sort_values(["notebook", "cell"])
    with atomic_file(path) as tmp:
        table.to_csv(tmp, index=False)
    return path


_ADDRESS = re.compile(r" at 0x[0-9a-f]+>")  # "<pandas.io.formats.style.Styler at 0x7f…>": where it lay in memory
_CLOCK_KEYS = ("start_time", "end_time", "duration")  # papermill's clock readings, in the notebook's and each cell's


def tidy_executed(executed: Path, source: Path, root: Path) -> Path:
    """Drop what records when and where a run happened from an executed notebook, once `record_timings` has read it:
    papermill's start/end times and durations, Jupyter's per-cell `execution` timestamps, and the temporary and
    absolute paths papermill notes (they become the repository-relative source and output). So a rerun that
    reproduces every number rewrites the notebook byte for byte; the seconds stay in `timings.csv` and `run.csv`."""
    # here, not at the top: `linrec figures` checks its profile before it imports the notebook tools (~3 s)
    import nbformat

    nb = nbformat.read(str(executed), as_version=4)
    meta = nb.metadata.get("papermill", {})
    for k in _CLOCK_KEYS:
        meta.pop(k, None)

    def rel(p: Path) -> str:
        p = Path(p).resolve()
        return str(p.relative_to(root.resolve())) if p.is_relative_to(root.resolve()) else p.name

    if meta:
        meta["input_path"], meta["output_path"] = rel(source), rel(executed)
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i}"  # by position: papermill gives the parameters cell it injects a random one
        cell.metadata.pop("execution", None)
        for k in _CLOCK_KEYS:
            cell.metadata.get("papermill", {}).pop(k, None)
        for out in cell.get("outputs", []):  # a rich output's plain-text fallback may be a repr with an address
            plain = out.get("data", {}).get("text/plain")
            if isinstance(plain, str) and len(out["data"]) > 1:
                out["data"]["text/plain"] = _ADDRESS.sub(">", plain)
    with atomic_file(executed) as tmp:
        nbformat.write(nb, str(tmp))
    return executed
