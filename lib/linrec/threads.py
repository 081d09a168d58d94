"""Thread control for small dense linear algebra between or beside torch's own work."""

from __future__ import annotations

import contextlib

import torch


@contextlib.contextmanager
def one_thread():
    """Run the enclosed torch ops on one thread, restoring the caller's thread count afterwards.

    For d×d eigensolvers at d ≈ 600 and the small float64 products of the capture, a second
    thread gains little, and on a busy 2-core machine two synchronising threads made an
    eigensolve take 0.05–8 s per block instead of a steady 0.04 s.
    """
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)
