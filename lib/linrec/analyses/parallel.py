"""Independent jobs of one table on the caller's threads, each on one BLAS thread, their results in the jobs' order.

The trained baselines of claim 7b (`linrec.analyses.pitfall_train.tune_many`) fit one learning-rate grid at a time,
each fit on one thread (`linrec.base.threads.one_thread`), so a second core sat idle. Here the fits of a table run
side by side on a pool of Python threads (torch's products release the interpreter lock). Each job computes what it
would alone: every fit already runs on one thread and draws from its own seeded generator, and nothing a job computes
depends on another job or on when it runs. So the table is the same at any number of threads, and the same as the
serial loop's.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, as_completed

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
                futures = {pool.submit(fn, job): i for i, job in enumerate(jobs)}
                try:
                    for f in as_completed(futures):
                        done[futures[f]] = f.result()
                        bar.update()
                except BaseException:
                    pool.shutdown(wait=True, cancel_futures=True)
                    raise
    return [done[i] for i in range(len(jobs))]
