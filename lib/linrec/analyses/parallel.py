"""Independent jobs of one table on the caller's threads, each on one BLAS thread, their results in the jobs' order.

The trained baselines of claim 7b (`linrec.analyses.pitfall_train.tune_many`) fit one learning-rate grid at a time,
each fit on one thread (`linrec.base.threads.one_thread`), so a second core sat idle. Here the fits of a table run
side by side on a pool of Python threads (torch's products release the interpreter lock). Each job computes what it
would alone: every fit already runs on one thread and draws from its own seeded generator, and nothing a job computes
depends on another job or on when it runs. So the table is the same at any number of threads, and the same as the
serial loop's.

`run_processes` does the same for jobs that hold the interpreter (the coverage simulations of
`linrec.analyses.calibration`: many small numpy steps), in worker processes started fresh, each on one BLAS thread.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from functools import partial

import torch

from linrec.base.progress import bar as progress_bar
from linrec.base.threads import one_thread


def thread_count(workers: int | None, jobs: int) -> int:
    """How many threads run `jobs` jobs: `workers`, else the caller's torch thread count (what
    `linrec.app.notebooks` gives a notebook: its share of the free CPUs), at most one per job, at least one."""
    return max(1, min(jobs, torch.get_num_threads() if workers is None else int(workers)))


def run_jobs(fn, jobs, workers: int | None = None, desc: str = "", unit: str = "job", progress: bool = True) -> list:
    """[fn(job) for job in jobs], the calls spread over `thread_count(workers, len(jobs))` threads, each with one
    torch thread; a progress bar counts the jobs done. The first error a job raises is raised here (the jobs still
    running finish first; those not started are cancelled)."""

    jobs = list(jobs)
    workers = thread_count(workers, len(jobs))
    done: dict[int, object] = {}
    with progress_bar(total=len(jobs), desc=desc, unit=unit, disable=not progress) as bar, one_thread():
        if workers == 1:
            for i, job in enumerate(jobs):
                done[i] = fn(job)
                bar.update()
        else:  # started after one_thread, the pool's threads get torch's one thread (and set it again, to be sure)
            with ThreadPoolExecutor(workers, initializer=torch.set_num_threads, initargs=(1,)) as pool:
                _gather(pool, [partial(fn, job) for job in jobs], done, bar)
    return [done[i] for i in range(len(jobs))]


def _gather(pool, calls, done: dict, bar) -> None:
    """Submit `calls` to `pool`, putting each result in `done` under its call's index as it comes; the first error is
    raised here once the calls still running have finished (those not started are cancelled)."""
    futures = {pool.submit(call): i for i, call in enumerate(calls)}
    try:
        for f in as_completed(futures):
            done[futures[f]] = f.result()
            bar.update()
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise


ONE_THREAD_ENV = {var: "1" for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}


def run_processes(calls, workers: int | None = None, desc: str = "", unit: str = "job", progress: bool = True) -> list:
    """[call() for call in calls] (each a picklable callable: a module-level function or a `functools.partial` of
    one), spread over `thread_count(workers, len(calls))` worker processes, freshly spawned (never a fork of this
    process and its threads) with one BLAS thread each; results in the calls' order. With one worker the calls run
    here, on one BLAS thread too (`one_thread`; numpy's own pool is sized when numpy loads, and the workers load it on
    one), so the results are the same whichever way they ran. The first error a call raises is raised here."""

    calls = list(calls)
    workers = thread_count(workers, len(calls))
    done: dict[int, object] = {}
    with progress_bar(total=len(calls), desc=desc, unit=unit, disable=not progress) as bar:
        if workers == 1:
            with one_thread():
                for i, call in enumerate(calls):
                    done[i] = call()
                    bar.update()
            return [done[i] for i in range(len(calls))]
        before = {var: os.environ.get(var) for var in ONE_THREAD_ENV}
        os.environ.update(ONE_THREAD_ENV)  # the workers start (on submit) with this environment; restored after
        try:
            with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
                _gather(pool, calls, done, bar)  # the workers start on submit, with the environment above
        finally:
            for var, value in before.items():
                os.environ.pop(var, None) if value is None else os.environ.__setitem__(var, value)
    return [done[i] for i in range(len(calls))]
