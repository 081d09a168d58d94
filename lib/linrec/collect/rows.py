"""The rows a capture keeps beside its statistics: a bounded, seeded sample of raw rows per block written straight to
disk (`RowSampler`: float32 memory-maps, so memory stays flat; what the probes and the gates read back through
`linrec.collect.capture.Capture.rows`), and each window's first-position rows per split and block (`FirstRows`, held
on the host and turned into float64 `Moments` by `first_moments`, the same way for a fresh capture and a cached one).
Under torchrun the ranks write their own rows into rank 0's files, and the first rows are summed across ranks.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from linrec.collect.config import SPLITS
from linrec.collect.reuse import row_selection
from linrec.stats import moments
from linrec.stats.distributed import barrier, sum_, world
from linrec.stats.moments import Moments


class RowSampler:
    """Writes a fixed, seeded subset of rows straight into per-block .npy memmaps (memory stays flat: on an
    accelerator at most `PENDING_BYTES` of rows wait there for their transfer)."""

    PENDING_BYTES = 256 * 2**20

    def __init__(
        self,
        directory: Path,
        n_rows: int,
        k: int,
        seed: int,
        dims: list[tuple[int, int]],
        seq_len: int,
        order: np.ndarray,
        split_of: np.ndarray,
    ):
        self.selected = row_selection(n_rows, k, seed)
        rank, _ = world()
        if rank == 0:  # rank 0 creates the files; under torchrun the other ranks write their rows into them
            directory.mkdir(parents=True, exist_ok=True)
            win = order[self.selected // seq_len]
            index = np.stack([win, self.selected % seq_len, split_of[win]], axis=1).astype(np.int64)
            np.save(directory / "index.npy", index)
        n, mode = len(self.selected), "w+" if rank == 0 else "r+"
        if rank > 0:
            barrier()
        self.x = [
            np.lib.format.open_memmap(directory / f"x_{i:03d}.npy", mode, np.float32, (n, dx))
            for i, (dx, _) in enumerate(dims)
        ]
        self.y = [
            np.lib.format.open_memmap(directory / f"y_{i:03d}.npy", mode, np.float32, (n, dy))
            for i, (_, dy) in enumerate(dims)
        ]
        if rank == 0:
            barrier()
        self.start, self.lo, self.hi = 0, 0, 0  # the batch's first global row; the slice of `selected` in the batch
        self._pending: list = []  # rows kept on an accelerator until the next flush
        self._pending_bytes = 0
        self._local_on: dict = {}

    def begin(self, n_rows_batch: int) -> None:
        self.lo = int(np.searchsorted(self.selected, self.start))
        self.hi = int(np.searchsorted(self.selected, self.start + n_rows_batch))
        self.local = torch.from_numpy(self.selected[self.lo : self.hi] - self.start)
        self._local_on = {}  # the batch's row indices on each accelerator, copied once
        self.start += n_rows_batch

    def write(self, block: int, x: torch.Tensor, y: torch.Tensor) -> None:
        """Rows of the batch that the sample keeps. On the host they go straight into the memory maps; on an
        accelerator they wait there (a copy) and reach the maps in one transfer per `PENDING_BYTES`, so the
        forward pass is not stopped for a host copy every batch."""
        if self.hi <= self.lo:
            return
        if not moments.accelerated(x.device):
            local = self.local
            self.x[block][self.lo : self.hi] = x.reshape(-1, x.shape[-1])[local].float().numpy()
            self.y[block][self.lo : self.hi] = y.reshape(-1, y.shape[-1])[local].float().numpy()
            return
        local = self._local_on.get(x.device)
        if local is None:
            local = self._local_on[x.device] = self.local.to(x.device, non_blocking=True)
        xs = x.reshape(-1, x.shape[-1])[local].float()
        ys = y.reshape(-1, y.shape[-1])[local].float()
        self._pending.append((block, self.lo, self.hi, xs, ys))
        self._pending_bytes += (xs.numel() + ys.numel()) * 4
        if self._pending_bytes > self.PENDING_BYTES:
            self.flush()

    def flush(self) -> None:
        """Rows waiting on an accelerator into the memory maps (one wait for the device, then copies)."""
        for block, lo, hi, xs, ys in self._pending:
            self.x[block][lo:hi] = xs.cpu().numpy()
            self.y[block][lo:hi] = ys.cpu().numpy()
        self._pending, self._pending_bytes = [], 0

    def close(self) -> None:
        self.flush()
        for m in [*self.x, *self.y]:
            m.flush()
        self.x = self.y = []


class FirstRows:
    """Each window's first-position rows (x, y) per split and block, float32 on the host, in the split's window order.

    A few hundred rows per block where a `Moments` would hold a [d, d] float64 matrix (for an 8B model, as much
    device memory as the main statistics); the activations are float32 or narrower, so float32 keeps them exactly.
    `moments()` turns them into float64 `Moments` in one pass, the same way for a fresh capture and a cached one.
    Under torchrun each window's row is written by one rank, zeros elsewhere, so a sum merges them exactly."""

    def __init__(self, dims: list[tuple[int, int]], n_windows: dict[str, int], devices=None):
        devices = devices or [torch.device("cpu")] * len(dims)

        def buffer(n, d, dev):  # host rows as numpy (as a cached capture reads them); an accelerator's stay there
            if not moments.accelerated(dev):
                return np.zeros((n, d), np.float32)
            return torch.zeros(n, d, dtype=torch.float32, device=dev)

        self.x = {s: [buffer(n_windows[s], dx, dev) for (dx, _), dev in zip(dims, devices)] for s in SPLITS}
        self.y = {s: [buffer(n_windows[s], dy, dev) for (_, dy), dev in zip(dims, devices)] for s in SPLITS}

    def write(self, split: str, block: int, position: int, x0: torch.Tensor, y0: torch.Tensor) -> None:
        """Rows of windows `position` … (in the split's order) of `block`: x0 [windows, d_in], y0 [windows, d_out]."""
        k = x0.shape[0]
        bx, by = self.x[split][block], self.y[split][block]
        if isinstance(bx, torch.Tensor):  # on the accelerator: no host copy in the hot loop
            bx[position : position + k].copy_(x0.detach())
            by[position : position + k].copy_(y0.detach())
            return
        bx[position : position + k] = x0.detach().float().cpu().numpy()
        by[position : position + k] = y0.detach().float().cpu().numpy()

    def all_reduce(self, split: str, blocks=None) -> None:
        """Sum `split`'s rows of `blocks` (default all) over ranks, in place (shared memory)."""
        blocks = range(len(self.x[split])) if blocks is None else blocks
        as_tensor = lambda a: a if isinstance(a, torch.Tensor) else torch.from_numpy(a)  # noqa: E731
        sum_([as_tensor(a) for i in blocks for a in (self.x[split][i], self.y[split][i])])

    def moments_of(self, split: str, block: int) -> Moments:
        return first_moments(self.x[split][block], self.y[split][block])

    def moments(self) -> dict[str, list[Moments]]:
        return {s: [first_moments(x, y) for x, y in zip(self.x[s], self.y[s])] for s in SPLITS}

    def arrays(self) -> dict[str, np.ndarray]:
        host = lambda a: a.cpu().numpy() if isinstance(a, torch.Tensor) else a  # noqa: E731
        out = {}
        for s in SPLITS:
            for i, (x, y) in enumerate(zip(self.x[s], self.y[s])):
                out[f"first/{s}/{i}/x"], out[f"first/{s}/{i}/y"] = host(x), host(y)
        return out


def first_moments(x: np.ndarray | torch.Tensor, y: np.ndarray | torch.Tensor) -> Moments:
    """float64 `Moments` of first-position rows (all at once: one batch, so the result depends on the rows alone);
    rows held on an accelerator give statistics there."""
    if isinstance(x, torch.Tensor):
        m = Moments.zeros(x.shape[1], y.shape[1], x.device)
        m.update(x.to(torch.float64), y.to(torch.float64))
        return m
    m = Moments(x.shape[1], y.shape[1])
    m.update(torch.from_numpy(np.asarray(x, np.float64)), torch.from_numpy(np.asarray(y, np.float64)))
    return m
