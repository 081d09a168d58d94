"""Data-parallel capture with torch.distributed: windows sharded by rank, statistics merged exactly.

Under `torchrun --nproc-per-node N linrec measure …` (NCCL on GPUs, gloo on CPU) every rank runs the
same capture code (`linrec.collect.capture.run_capture`) on its share of the batches: batch i goes to rank
i mod N. The statistics are additive, but adding uncentred float64 sums Σzzᵀ across ranks loses
digits when a feature's mean is large against its spread (a few LLM features are like that). So
each rank keeps its own (n, μ, M = Σ(z − μ)(z − μ)ᵀ), the ranks exchange them, and every rank
merges them in rank order with Chan's update (`Moments.merge`), which is exact in exact arithmetic.
The result differs from a one-process capture only by the order of float64 additions
(≤ 1e-12 relative, `tests/stats/test_distributed.py`).

The train split is merged before the first held-out batch (every rank fits the same maps from the
merged train statistics); the held-out per-window sums are exact under a plain sum, since each
window's row is non-zero on exactly one rank; the row sample is written by every rank into the same
memory-mapped files (disjoint rows; the ranks share one filesystem, i.e. one machine). Rank 0
writes the cache entry.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
import torch.distributed as dist

from linrec.base.errors import LinrecError
from linrec.stats.moments import Moments


def world() -> tuple[int, int]:
    """(rank, number of ranks); (0, 1) outside torch.distributed."""

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def init_from_env(device: str) -> str:
    """Under torchrun (WORLD_SIZE > 1 in the environment): join the process group, NCCL for CUDA and gloo
    otherwise, and give each rank its own GPU (cuda:LOCAL_RANK). Returns the device this rank runs on."""

    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or dist.is_initialized():
        return device
    cuda = device.startswith("cuda") or (device == "auto" and torch.cuda.is_available())
    if cuda and not torch.cuda.is_available():
        raise LinrecError(f"device '{device}' is not available in this torch build; run torchrun with --device cpu")
    dist.init_process_group("nccl" if cuda else "gloo")
    if cuda:
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        return f"cuda:{local}"
    return "cpu"


def _comm_device() -> torch.device:
    return torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")


def merge_moments(moments: list[Moments]) -> None:
    """Replace each rank's `Moments` by the merge of every rank's, in rank order (Chan's update); in place, one
    block at a time (peak memory: one block's statistics × the number of ranks)."""

    rank, size = world()
    if size == 1:
        return
    dev = _comm_device()
    for m in moments:
        home = m.mean.device
        n = torch.tensor([m.n], dtype=torch.int64, device=dev)
        ns = [torch.empty_like(n) for _ in range(size)]
        dist.all_gather(ns, n)
        means = [torch.empty_like(m.mean, device=dev) for _ in range(size)]
        dist.all_gather(means, m.mean.to(dev))
        Ms = [torch.empty_like(m.upper, device=dev) for _ in range(size)]
        dist.all_gather(Ms, m.upper.to(dev))
        total = Moments(m.d_in, m.d_out).to(home)
        for r in range(size):
            part = Moments(m.d_in, m.d_out, int(ns[r].item()), means[r].to(home), Ms[r].to(home))
            total.merge(part)
        m.assign(total)


def sum_(tensors: list[torch.Tensor]) -> None:
    """All-reduce (sum) each tensor in place: for sums whose rows each rank holds alone (zeros elsewhere)."""

    if world()[1] == 1:
        return
    dev = _comm_device()
    for t in tensors:
        buf = t.to(dev)
        dist.all_reduce(buf)
        t.copy_(buf.to(t.device))


def broadcast_path(path: Path | None) -> Path | None:
    """Rank 0's `path`, on every rank."""

    if world()[1] == 1:
        return path
    box = [None if path is None else str(path)]
    dist.broadcast_object_list(box, src=0)
    return None if box[0] is None else Path(box[0])


def barrier() -> None:
    if world()[1] > 1:
        dist.barrier()
