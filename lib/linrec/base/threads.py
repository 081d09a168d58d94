"""Thread control for small dense linear algebra between or beside torch's own work."""

from __future__ import annotations

import contextlib
import os
import time

import torch


@contextlib.contextmanager
def one_thread(device: torch.device | str | None = None):
    """Run the enclosed torch ops on one thread, restoring the caller's thread count afterwards (also a decorator:
    `@one_thread()`). Given a `device` that is not the CPU (a training loop on a GPU), it does nothing.

    For d×d eigensolvers at d ≈ 600 and the small float64 products of the capture, a second
    thread gains little, and on a busy 2-core machine two synchronising threads made an
    eigensolve take 0.05–8 s per block instead of a steady 0.04 s.

    It is also what makes a result independent of how many threads the process has: LAPACK's eigensolvers and
    least squares, and torch's reductions of a whole tensor to one number (`x.sum()`), split their work by thread
    and add the parts in another order on another thread count (an eigenvalue moved by 7e-15 between 1 and 2
    threads). A trained fit amplifies that: the probes and trained baselines of notebook 03 moved by 1e-7 (smoke
    profile) to 1e-3 (the default's gain) between `linrec figures` (one thread per notebook on 2 cores) and a rerun
    in Jupyter (every core). Every trained fit and every eigensolver or least-squares solve whose result is written
    runs under it, so a notebook writes the same bytes whichever way and wherever it runs. The capture's batched
    products and a forward pass need nothing: matrix products split their output, not their sums, and came out
    bit for bit the same on 1 and 2 threads (`tests/test_reproducible.py` checks the trained fits).

    The same holds for every training loop on the CPU (issue 64, item 8): the small decoders of notebook 08
    (`linrec.inputs.training.train_model`: the GPT-2 layout's losses moved by 5e-7 in 20 steps between 1 and 2
    threads) and the healing fine-tunes (`linrec.analyses.healing.fine_tune`) run under it too, so the thread count
    a notebook gets (`linrec.app.notebooks`: the free CPUs split between the kernels) changes its seconds, never
    its numbers.
    """
    if device is not None and torch.device(device).type != "cpu":
        yield
        return
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


def busy_cpu_seconds() -> float | None:
    """CPU-seconds every process has spent busy since boot, summed over CPUs (/proc/stat); None where unreadable."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = v[3] + (v[4] if len(v) > 4 else 0)  # idle + iowait
    return (sum(v[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def busy_cpus(seconds: float = 1.0) -> float:
    """How many CPUs other processes keep busy, measured over `seconds` while this one sleeps (0.0 where /proc/stat
    cannot be read)."""
    b0, t0 = busy_cpu_seconds(), time.perf_counter()
    if b0 is None:
        return 0.0
    time.sleep(seconds)
    b1 = busy_cpu_seconds()
    return max(0.0, (b1 - b0) / (time.perf_counter() - t0)) if b1 is not None else 0.0


def free_cpus(seconds: float = 1.0) -> int:
    """CPUs not kept busy by other processes (at least 1): a process using more than half a CPU takes one.

    Thread pools sized to every CPU on a machine where another job holds one of them stall each other: on 2 cores
    beside one busy process, a two-thread notebook ran 2.4–6.7× slower, where losing a core explains 2×. Sizing the
    pools to the free CPUs is what `linrec figures` does before each stage."""
    n = os.cpu_count() or 1
    return max(1, n - int(busy_cpus(seconds) + 0.5))


def available_memory() -> int | None:
    """Bytes of memory the system could give a new allocation now (Linux MemAvailable), else the physical total;
    None where neither is readable."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
