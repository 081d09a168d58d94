"""Where the capture's per-block work runs beside the forward pass on one CUDA device (issue 91).

A capture's own work is three things besides the forward pass: each block's statistics per batch, the held-out maps'
fits between the train and the test windows (two float64 eigensolves per block: latency-bound on a GPU, and on one
H200 about a sixth of the capture, `results/bench/gpu_profile.json`), and the held-out sums per test batch. On one
CUDA device `Overlap` runs them beside the forward pass instead of after it:

- the statistics and the held-out sums on a second stream (`SIDE_STREAM`): a block's updates wait for its
  activations, then run while the next blocks' forward kernels do; the activations are kept (`record_stream`) until
  that stream has read them;
- the fits on a thread and a stream of their own (`FITS_BESIDE`), started when the train windows are done, while the
  test windows' forward passes run; each test batch's rows are kept on the device (float32, as the model made them)
  until the fits are done, then summed in the order they came. Only where the kept rows fit in a quarter of the
  device's free memory; else the fits run before the test windows, as elsewhere.

The same kernels in the same order on each block's numbers, so the same statistics and sums bit for bit; on the CPU
(and across several devices) everything runs in line, as before. The switches exist for `benchmarks/gpu_profile.py`,
which measures each on and off.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import torch

from linrec.base.errors import LinrecError

_KIND = "cuda"  # the device type the streams run on
SIDE_STREAM = True  # on one CUDA device: each block's statistics on a second stream, beside the forward pass
FITS_BESIDE = True  # and the held-out maps' fits on a thread of their own while the test windows run
KEEP_SHARE = 0.25  # the kept test rows may take at most this share of the device's free memory


class Overlap:
    """The capture's streams and the fits' thread (module docstring); every method runs its work in line where there
    is no side stream."""

    def __init__(self, devices: list[torch.device], kept_bytes: int):
        one_cuda = len(set(devices)) == 1 and devices[0].type == _KIND
        self.device = devices[0]
        self.side = _new_stream(self.device) if SIDE_STREAM and one_cuda else None
        self.beside = self.side is not None and FITS_BESIDE and kept_bytes <= KEEP_SHARE * _free(self.device)
        self.kept: list[tuple] = []  # (start, stop, block, x, y, x's version, y's version) of each kept test batch
        self._thread: threading.Thread | None = None
        self._error: list[BaseException] = []
        self._last: list[tuple[torch.Tensor, int]] = []  # the previous block's activations and their versions

    def run(self, work: Callable[[torch.Tensor, torch.Tensor], None], x: torch.Tensor, y: torch.Tensor) -> None:
        """`work(x, y)` after the kernels that made x and y, on the side stream (x and y kept until it has run)."""
        if self.side is None:
            work(x, y)
            return
        _unchanged(self._last)
        self._last = [(x, x._version), (y, y._version)]
        self.side.wait_stream(_current(self.device))
        _keep(x, self.side), _keep(y, self.side)
        with _on(self.side):
            work(x, y)

    def join(self) -> None:
        """The forward's stream waits for the side stream: what it wrote may be read from here on."""
        if self.side is not None:
            _unchanged(self._last)
            self._last = []
            _current(self.device).wait_stream(self.side)

    def fit(self, fit: Callable[[], None]) -> None:
        """Run `fit()` (the held-out maps' fits): in line, or started on its own thread and stream (`beside`)."""
        if not self.beside:
            fit()
            return
        stream = _new_stream(self.device)
        stream.wait_stream(_current(self.device))

        def target() -> None:
            try:
                with _on(stream):
                    fit()
                stream.synchronize()
            except BaseException as err:  # raised again in the capture's own thread (`finish`)
                self._error.append(err)

        self._thread = threading.Thread(target=target, name="linrec-fits", daemon=True)
        self._thread.start()

    def held_out(self, heldout, block: int, x: torch.Tensor, y: torch.Tensor) -> None:
        """Add a test batch to `heldout` (a `linrec.stats.heldout.HeldOutSums`, at the batch's windows): now, or
        kept until the fits running beside are done."""
        if self._thread is None:
            heldout.update(block, x, y)
        else:
            self.kept.append((heldout.start, heldout.stop, block, x, y, x._version, y._version))

    def finish(self, heldout) -> None:
        """Wait for the fits started beside, then add the kept test rows to `heldout` in the order they came."""
        if self._thread is None:
            return
        self._thread.join()
        self._thread = None
        if self._error:
            raise self._error[0]
        _current(self.device).wait_stream(self.side)
        for start, stop, block, x, y, vx, vy in self.kept:
            _unchanged([(x, vx), (y, vy)])
            heldout.start, heldout.stop = start, stop
            heldout.update(block, x, y)
        self.kept.clear()


def _unchanged(seen: list[tuple[torch.Tensor, int]]) -> None:
    """The side stream reads activations after the forward pass has moved on: one changed in place since its hook
    (a model that adds into its FFN's output, say) would be read changed. Checked by the tensors' versions."""
    if any(t._version != version for t, version in seen):
        raise LinrecError(
            "this model changes an FFN's input or output in place after the block; capture it with "
            "linrec.collect.overlap.SIDE_STREAM = False"
        )


# The CUDA calls, one place each (tests stand CPU look-alikes in for them to run these paths on a CPU).
def _free(device: torch.device) -> int:
    """Free bytes on a CUDA device (no synchronisation)."""
    return torch.cuda.mem_get_info(device)[0]


def _new_stream(device: torch.device) -> torch.cuda.Stream:
    return torch.cuda.Stream(device)


def _current(device: torch.device) -> torch.cuda.Stream:
    return torch.cuda.current_stream(device)


def _on(stream: torch.cuda.Stream):
    return torch.cuda.stream(stream)


def _keep(t: torch.Tensor, stream: torch.cuda.Stream) -> None:
    """`t`'s memory is not reused before `stream` has run what it was given so far."""
    t.record_stream(stream)
