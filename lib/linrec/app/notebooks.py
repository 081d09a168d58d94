"""Run the numbered notebooks in order with papermill: one parameter profile in, executed notebooks and figures out.

The jupytext percent-format `notebooks/NN_name.py` files are the source; each is converted to
`.ipynb` in memory and executed with the profile's file and the run's overrides injected into its `parameters` cell
(`profile_file`, `overrides`), from which its next cell loads the profile (`linrec.app.profile.load_profile`).
Executed notebooks go to `<results_dir>/notebooks/`, figures to `<figures_dir>/`, both relative to the project root.
"""

from __future__ import annotations

import atexit
import json
import logging
import multiprocessing
import os
import shutil
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager

from linrec.app.bench import performance_script
from linrec.app.profile import LAB_OVERRIDES, load_profile, profile_path
from linrec.app.records import RUN, TIMINGS, record_run, record_stages, record_timings, stages_partial, tidy_executed
from linrec.base.errors import LinrecError
from linrec.base.files import project_root
from linrec.base.progress import NOTEBOOK_ENV
from linrec.base.stages import ENV as STAGES_ENV
from linrec.inputs.offline import suggest
from linrec.studies.stages import PRIMER_FILE, REPORT_FILE, REPORT_NOTEBOOK, STUDIES

log = logging.getLogger(__name__)


FIRST, LAST = STUDIES[0].notebook, REPORT_NOTEBOOK  # the capture notebook every other one reads; the report


def default_jobs() -> int:
    """Notebooks run at once by `linrec figures`: 2 where there are at least 2 CPUs (see `run_notebooks`)."""

    return 2 if (os.cpu_count() or 1) >= 2 else 1


def waves(selected: list[Path], timings: dict[str, float] | None = None) -> list[list[Path]]:
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
    than the runner's. This process's environment is as it was again once the notebook has run: a notebook run one
    at a time runs from the caller's process, and its thread counts, LINREC_NOTEBOOK and the kernel's variables had
    stayed there (in a pytest worker, the `linrec` commands later tests started printed their notices as notebook
    01_first's console lines, and imported matplotlib's inline backend)."""
    before = dict(os.environ)
    try:
        return _execute_here(nb, params, out, root, progress, threads, env)
    finally:
        os.environ.clear()
        os.environ.update(before)


def _execute_here(
    nb: Path,
    params: dict,
    out: Path,
    root: Path,
    progress: bool,
    threads: int | None,
    env: dict[str, str] | None,
) -> float:

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
    partial = stages_partial(out)  # each loop's seconds and model work (linrec.base.stages), gathered after the run
    partial.unlink(missing_ok=True)  # a killed run's rows never join this run's
    os.environ[STAGES_ENV] = str(partial)
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
    """Where the notebooks of a side-by-side wave are driven from (each driver starts its notebook's kernel and
    feeds it cells): processes forked from a server that has imported papermill, jupytext and nbformat once, where
    the platform has one (multiprocessing's forkserver), so a wave's drivers start at once instead of each importing
    them again (2-3 s per wave on 2 cores); freshly spawned interpreters elsewhere. Never a fork of this process,
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
    """Execute every stage's notebook and the report's (or those `only` names: `select`) under `params_file`, with
    `overrides` {name: value} replacing the profile's values (`linrec figures -p NAME VALUE`, checked as a profile's
    are) and, with `out`, every table, executed notebook, figure and the report written under that folder.

    `jobs` notebooks run at once (default `default_jobs()`), in the `waves` order: 01, then 02–08 side by side,
    then 09. With several jobs the CPUs are split between them (each kernel's thread pools get
    cpu_count // jobs threads), so no two pools fight over a core; on 2 cores, two one-thread kernels got 15 %
    more forward-pass throughput than one two-thread kernel, and more on the probes' small products. Before each
    wave the CPUs that other processes keep busy are left out (`linrec.base.threads.free_cpus`): beside another job,
    fewer kernels and threads run instead of stalling each other, and a wave that started one at a time looks again
    after each notebook, so the rest of it runs side by side once that work has ended. The threads chosen change the
    seconds, not the numbers: every trained fit and solve whose result is written runs on one thread
    (`linrec.base.threads.one_thread`; docs/numerics.md)."""

    root = root or project_root()
    params_path = profile_path(params_file, root)
    injected = _with_overrides(overrides or {}, out)
    # every value checked (keys, types, sections, corpus and model names) before anything is imported or started:
    # a wrong one is one line in about a second (the imports below, torch among them, take seconds more)
    params = load_profile(params_path, injected, root).values()  # what every notebook loads again (`_injected`)
    given = _injected(params_path, injected, root)  # the same for every notebook
    if not only and params.get("notebooks"):  # a profile for one stage (zoo, training, curve) names its notebooks
        only = list(params["notebooks"])
        print(f"[linrec] {params_path.name} runs notebook(s) {', '.join(only)} (its `notebooks` key)", flush=True)
    every = notebooks(root)
    selected = select(every, only)
    jobs = default_jobs() if jobs is None else jobs
    if jobs < 1:
        raise LinrecError(f"--jobs must be at least 1, got {jobs}")
    lab = root / LAB_OVERRIDES
    if lab.is_file() and lab.read_text(errors="replace").strip():  # Lab's experiment in the checkout: said, not read
        print(f"[linrec] {LAB_OVERRIDES} is for Jupyter Lab: linrec figures does not read it (give -p NAME VALUE)")
    results = root / params["results_dir"]
    if overrides:
        shown = ", ".join(f"{k}={v!r}" for k, v in overrides.items())
        print(f"[linrec] {params_path.name} with {shown}: writing under {params['results_dir']}", flush=True)
    (results / "notebooks").mkdir(parents=True, exist_ok=True)

    # here, not at the top: the drivers' forkserver imports this module, and must hold no numpy or torch (`_drivers`)
    from linrec.base.threads import free_cpus

    done, seconds = [], {}
    captures_before = _capture_entries()
    t_all = time.perf_counter()
    expected = _last_timings(results, root)
    console = _Console(_last_timings(results, root, own=True), [nb.stem for nb in selected], jobs)

    def complete(nb: Path, out: Path, secs: float) -> None:
        seconds[nb.stem] = secs
        record_timings(out)
        record_stages(out)
        tidy_executed(out, nb, root)
        done.append(out)
        console.done(nb.stem, secs, out)

    failure: str | None = None
    never: list[str] = []
    with console:
        for wave in waves(selected, expected):
            if failure is not None:
                never += [nb.stem for nb in wave]
                continue
            outs = {nb: results / "notebooks" / f"{nb.stem}.ipynb" for nb in wave}
            free = free_cpus()  # before each wave: CPUs that other processes leave free
            if free < (os.cpu_count() or 1):
                print(f"[linrec] {(os.cpu_count() or 1) - free} CPU(s) busy with other work: using {free}", flush=True)
            queue = list(wave)
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
            wave = queue  # the rest of the wave, side by side now that CPUs are free
            n = min(jobs, len(wave), free)
            threads = max(1, free // n)
            print(f"[linrec] {', '.join(nb.stem for nb in wave)}: {n} at a time, {threads} thread(s) each", flush=True)
            t_stage = time.time()
            with ProcessPoolExecutor(max_workers=n, mp_context=_drivers()) as pool:
                env = dict(os.environ)
                futures = {pool.submit(_execute, nb, given, outs[nb], root, False, threads, env): nb for nb in wave}
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
    elif len(selected) == len(every):  # the figures run the README reports: every notebook
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


def stage_files() -> tuple[str, ...]:
    """The notebooks' file stems in order: every study's, as `linrec.studies.stages.STUDIES` lists them, then the
    report's."""
    return (*(s.file for s in STUDIES), REPORT_FILE)


def notebooks(root: Path) -> list[Path]:
    """The sources of the notebooks `stage_files` names, in its order; a numbered notebook the stages do not list
    (other than the primer, notebooks/00_method.py, which no run executes), or one they list that is missing, is one
    line naming the fix."""
    listed = [root / "notebooks" / f"{name}.py" for name in stage_files()]
    missing = [p.name for p in listed if not p.is_file()]
    if missing:
        raise LinrecError(
            f"notebooks/{', '.join(missing)} missing: restore it, or drop its row in linrec.studies.stages"
        )
    unlisted = sorted(
        set((root / "notebooks").glob("[0-9][0-9]_*.py")) - {*listed, root / "notebooks" / f"{PRIMER_FILE}.py"}
    )
    if unlisted:
        raise LinrecError(
            f"notebooks/{unlisted[0].name} is not a stage: add its row to linrec.studies.stages.STUDIES (or rename it)"
        )
    return listed


def select(nbs: list[Path], only: list[str] | None) -> list[Path]:
    """The notebooks among `nbs` that `only` names, each by a prefix of its file name ("02") or its study's name
    ("ceiling"); all of them without `only`; a name that matches none is one line listing them."""
    if not only:
        return nbs
    names = {f"{s.file}.py": s.name for s in STUDIES}
    named = lambda nb, o: nb.name.startswith(o) or names.get(nb.name) == o  # noqa: E731
    unknown = [o for o in only if not any(named(nb, o) for nb in nbs)]
    if unknown:
        known = ", ".join(f"{nb.stem}" + (f" ({names[nb.name]})" if nb.name in names else "") for nb in nbs)
        hint = suggest(unknown[0], [*names.values(), *(nb.stem for nb in nbs)])
        raise LinrecError(f"no notebooks match {', '.join(unknown)}{hint}; available: {known}")
    return [nb for nb in nbs if any(named(nb, o) for o in only)]


PLACE_EVERY = 60.0  # seconds between the console's lines on where each running notebook is


class _Console:
    """What `linrec figures` prints while it runs: a line when each notebook starts and ends (with the time the last
    full run took, and about how long the rest will take), and once a minute the stage each running notebook is at
    (its current cell and the heading above it, read from the output notebook papermill saves at every cell)."""

    def __init__(self, expected: dict[str, float], stems: list[str], jobs: int = 1, interval: float | None = None):
        self.expected, self.todo, self.jobs = expected, list(stems), max(jobs, 1)
        self.interval = PLACE_EVERY if interval is None else interval
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
                where = notebook_place(out)
                self._say(f"{stem}: {(time.perf_counter() - t0) / 60:.1f} min in{', ' + where if where else ''}")


def notebook_place(executed: str | Path) -> str | None:
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


def _capture_entries() -> set[str]:
    # here, not at the top: the drivers' forkserver imports this module, and must hold no numpy or torch (`_drivers`)
    from linrec.base.cache import folder

    d = folder("capture")
    return {p.name for p in d.iterdir() if p.is_dir() and not p.name.startswith(".")} if d.is_dir() else set()
