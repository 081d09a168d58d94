"""Jobs on the caller's threads: results in the jobs' order, one torch thread per job, errors raised."""

import threading
import time

import pytest
import torch

from linrec.analyses.parallel import run_jobs, thread_count
from linrec.base.errors import LinrecError


def test_results_come_back_in_the_jobs_order_whatever_finishes_first():
    def slow_first(i):
        time.sleep(0.05 * (3 - i))
        return i * i, threading.get_ident()

    out = run_jobs(slow_first, range(4), workers=2, progress=False)
    assert [v for v, _ in out] == [0, 1, 4, 9]
    assert len({t for _, t in out}) == 2  # two threads ran them


def test_each_job_runs_on_one_torch_thread_and_the_callers_count_comes_back():
    before = torch.get_num_threads()
    seen = run_jobs(lambda _: torch.get_num_threads(), range(4), workers=2, progress=False)
    assert seen == [1, 1, 1, 1]
    assert torch.get_num_threads() == before


def test_a_jobs_error_is_raised_and_the_thread_count_is_capped_by_the_jobs():
    def fail(i):
        if i == 1:
            raise LinrecError("job 1 failed")
        return i

    with pytest.raises(LinrecError, match="job 1 failed"):
        run_jobs(fail, range(3), workers=2, progress=False)
    assert thread_count(8, 3) == 3 and thread_count(None, 1) == 1 and thread_count(0, 5) == 1


def test_run_processes_returns_the_calls_results_in_their_order_from_one_blas_thread_each(monkeypatch):
    """Worker processes (freshly spawned) return each call's result in the calls' order, on one BLAS thread (the
    environment they start with); the caller's environment is as it was after; a call's error is raised here."""
    import os
    from functools import partial

    from linrec.analyses.parallel import run_processes

    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    assert run_processes([partial(pow, 2, k) for k in range(7)], workers=2, progress=False) == [2**k for k in range(7)]
    threads = run_processes([partial(os.getenv, "OMP_NUM_THREADS")] * 2, workers=2, progress=False)
    assert threads == ["1", "1"] and os.environ["OMP_NUM_THREADS"] == "7"
    with pytest.raises(ValueError):
        run_processes([partial(int, "12"), partial(int, "x")], workers=2, progress=False)
