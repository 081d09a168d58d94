"""The rows a capture keeps beside its statistics: a bounded, seeded sample of raw rows per block written straight to
disk (`RowSampler`: float32 memory-maps, so memory stays flat; what the probes and the gates read back through
`linrec.measure.capture.Capture.rows`), and each window's first-position rows per split and block (`FirstRows`, held
on the host and turned into float64 `Moments` by `first_moments`, the same way for a fresh capture and a cached one).
Under torchrun the ranks write their own rows into rank 0's files, and the first rows are summed across ranks.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from linrec.measure.config import SPLITS
from linrec.measure.reuse import row_selection
from linrec.stats.distributed import barrier, sum_, world
from linrec.stats.moments import Moments


class RowSampler:
    """Writes a fixed, seeded subset of rows straight into per-block .npy memmaps (memory stays flat)."""

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

    def begin(self, n_rows_batch: int) -> None:
        self.lo = int(np.searchsorted(self.selected, self.start))
        self.hi = int(np.searchsorted(self.selected, self.start + n_rows_batch))
        self.local = torch.from_numpy(self.selected[self.lo : self.hi] - self.start)
        self.start += n_rows_batch

    def write(self, block: int, x: torch.Tensor, y: torch.Tensor) -> None:
        if self.hi > self.lo:
            local = self.local.to(x.device)
            self.x[block][self.lo : self.hi] = x.reshape(-1, x.shape[-1])[local].float().cpu().numpy()
            self.y[block][self.lo : self.hi] = y.reshape(-1, y.shape[-1])[local].float().cpu().numpy()

    def close(self) -> None:
        for m in [*self.x, *self.y]:
            m.flush()
        self.x = self.y = []


class FirstRows:
    """Each window's first-position rows (x, y) per split and block, float32 on the host, in the split's window order.

    A few hundred rows per block where a `Moments` would hold a [d, d] float64 matrix (for an 8B model, as much
    device memory as the main statistics); the activations are float32 or narrower, so float32 keeps them exactly.
    `moments()` turns them into float64 `Moments` in one pass, the same way for a fresh capture and a cached one.
    Under torchrun each window's row is written by one rank, zeros elsewhere, so a sum merges them exactly."""

    def __init__(self, dims: list[tuple[int, int]], n_windows: dict[str, int]):
        self.x = {s: [np.zeros((n_windows[s], dx), np.float32) for dx, _ in dims] for s in SPLITS}
        self.y = {s: [np.zeros((n_windows[s], dy), np.float32) for _, dy in dims] for s in SPLITS}

    def write(self, split: str, block: int, position: int, x0: torch.Tensor, y0: torch.Tensor) -> None:
        """Rows of windows `position` … (in the split's order) of `block`: x0 [windows, d_in], y0 [windows, d_out]."""
        k = x0.shape[0]
        self.x[split][block][position : position + k] = x0.detach().float().cpu().numpy()
        self.y[split][block][position : position + k] = y0.detach().float().cpu().numpy()

    def all_reduce(self, split: str, blocks=None) -> None:
        """Sum `split`'s rows of `blocks` (default all) over ranks, in place (shared memory)."""
        blocks = range(len(self.x[split])) if blocks is None else blocks
        sum_([torch.from_numpy(a) for i in blocks for a in (self.x[split][i], self.y[split][i])])

    def moments_of(self, split: str, block: int) -> Moments:
        return first_moments(self.x[split][block], self.y[split][block])

    def moments(self) -> dict[str, list[Moments]]:
        return {s: [first_moments(x, y) for x, y in zip(self.x[s], self.y[s])] for s in SPLITS}

    def arrays(self) -> dict[str, np.ndarray]:
        out = {}
        for s in SPLITS:
            for i, (x, y) in enumerate(zip(self.x[s], self.y[s])):
                out[f"first/{s}/{i}/x"], out[f"first/{s}/{i}/y"] = x, y
        return out


def first_moments(x: np.ndarray, y: np.ndarray) -> Moments:
    """float64 `Moments` of first-position rows (all at once: one batch, so the result depends on the rows alone)."""
    m = Moments(x.shape[1], y.shape[1])
    m.update(torch.from_numpy(np.asarray(x, np.float64)), torch.from_numpy(np.asarray(y, np.float64)))
    return m
