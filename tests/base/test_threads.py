"""linrec.base.threads: the CPU-seconds other processes spend, read from /proc/stat, and the CPUs they leave free,
on a clock of the test's own."""

import os
import time

import pytest


def _fake_machine(monkeypatch, cpus: int, busy_rate: float | None):
    """`linrec.base.threads` on a clock of its own: sleeping advances it, and /proc/stat's busy CPU-seconds grow by
    `busy_rate` per second of it (None: /proc/stat unreadable). The seconds it was asked to sleep are returned."""
    from types import SimpleNamespace

    import linrec.base.threads as threads

    clock, busy, slept = [100.0], [5000.0], []

    def sleep(seconds):
        slept.append(seconds)
        clock[0] += seconds
        busy[0] += (busy_rate or 0.0) * seconds

    monkeypatch.setattr(threads, "time", SimpleNamespace(perf_counter=lambda: clock[0], sleep=sleep))
    monkeypatch.setattr(threads, "busy_cpu_seconds", lambda: None if busy_rate is None else busy[0])
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    return slept


@pytest.mark.parametrize(
    "cpus,rate,busy,free",
    [(2, 1.0, 1.0, 1), (4, 1.0, 1.0, 3), (2, 0.4, 0.4, 2), (2, 0.6, 0.6, 1), (2, 2.0, 2.0, 1), (8, 2.6, 2.6, 5),
     (2, None, 0.0, 2)],
)  # fmt: skip
def test_busy_cpus_counts_what_other_processes_spend_while_it_sleeps(monkeypatch, cpus, rate, busy, free):
    """busy_cpus: CPU-seconds spent by every process over the seconds it slept; free_cpus: the CPUs left, a process
    using more than half a CPU taking one, and at least 1. On an injected clock: how they read beside a real
    spinning process depends on the machine's other work, and is measured by benchmarks/clocks.py."""
    from linrec.base.threads import busy_cpus, free_cpus

    slept = _fake_machine(monkeypatch, cpus, rate)
    assert busy_cpus(1.5) == pytest.approx(busy)
    assert free_cpus(0.5) == free
    assert slept == ([1.5, 0.5] if rate is not None else [])  # over the seconds asked for (none: nothing to read)


def test_busy_cpu_seconds_reads_proc_stat(monkeypatch):
    """The busy CPU-seconds are /proc/stat's first line without idle and iowait, in clock ticks; and on this machine
    the CPU time this process spends shows there (other processes only add to it)."""
    import io

    import linrec.base.threads as threads

    # user nice system idle iowait irq softirq steal guest guest_nice, then one line per CPU
    line = "cpu  100 20 30 800 50 5 5 3 7 0\ncpu0 1 2 3 4 5 6 7 8 9 0\n"

    def unreadable(*a, **k):
        raise OSError("no /proc here")

    with monkeypatch.context() as m:
        m.setattr(threads, "open", lambda *a, **k: io.StringIO(line), raising=False)
        m.setattr(os, "sysconf", lambda name: 100)  # SC_CLK_TCK: ticks per second
        assert threads.busy_cpu_seconds() == pytest.approx((100 + 20 + 30 + 5 + 5 + 3) / 100)
        m.setattr(threads, "open", unreadable, raising=False)
        assert threads.busy_cpu_seconds() is None
    b0, p0 = threads.busy_cpu_seconds(), time.process_time()
    while time.process_time() - p0 < 0.5:  # half a CPU-second of this process's own
        pass
    spent, b1 = time.process_time() - p0, threads.busy_cpu_seconds()
    assert b1 - b0 >= spent - 0.1, (b1 - b0, spent)  # a tick or two of sampling


def test_one_thread_sets_one_thread_on_the_cpu_restores_the_count_and_leaves_another_device_alone():
    import torch

    from linrec.base.threads import one_thread

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with one_thread():
            assert torch.get_num_threads() == 1
        with one_thread("cpu"):
            assert torch.get_num_threads() == 1
        with one_thread(torch.device("meta")):  # a training loop on a GPU keeps its process's threads
            assert torch.get_num_threads() == 2
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
