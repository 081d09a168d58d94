"""The memory plan of a capture: what it will hold per block and where, checked against the free memory before any
pass (`memory_plan`, `plan_text`, `check_fits`), the blocks hooked per pass (`block_groups`), and each FFN's widths and
device read off a two-token forward pass (`site_dims`, `probe_sites`). docs/scaling.md explains the plan."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import torch

from linrec.base.errors import LinrecError
from linrec.inputs.corpora import Windows
from linrec.inputs.hf import LoadedModel, input_device
from linrec.inputs.sites import ffn_hooks, run_until_stop

if TYPE_CHECKING:
    import pandas


# ---- memory plan -----------------------------------------------------------------------------------------------
F64 = 8  # bytes


def memory_plan(
    dims: list[tuple[int, int]],
    n_test_windows: int,
    sample_rows: int = 0,
    devices: list | None = None,
    n_windows: int | None = None,
    n_rows: int | None = None,
) -> pandas.DataFrame:
    """Bytes one capture holds per block, before it starts (the test `test_memory_plan_is_what_a_capture_holds`
    checks each column against the tensors and arrays a finished capture holds):

    - `stats`: train and test `Moments`, each a float64 [d, d] accumulator and [d] mean, d = d_in + d_out;
    - `heldout`: per held-out window n (int64) and Σe², Σ(y − c), Σ(y − c)² ([d_out] float64 each), plus the
      fitted map (W [d_in, d_out], b and c [d_out], float64) while the test split runs; twice, for all positions and
      for every position but the first (`HeldOutSums`' `rest`);
    - `first_host`: each window's first-position row, float32 x and y, in host memory (`n_windows` in all, train
      and test; default 5 × the held-out windows, the default 80/20 split);
    - `rows_disk`: the row sample on disk, float32 x and y: `sample_rows` rows, or all `n_rows` rows the windows make
      where that is fewer (the sample keeps no more rows than there are); 0 without one.

    `stats` and `heldout` live on the block's device (`devices`, default all "cpu"; with a device map, each
    block's own); `device_total` is their sum.
    """

    n_windows = 5 * n_test_windows if n_windows is None else n_windows
    kept = sample_rows if n_rows is None else min(sample_rows, n_rows)
    rows = []
    for b, (d_in, d_out) in enumerate(dims):
        d = d_in + d_out
        rows.append(
            {
                "block": b,
                "device": str(devices[b]) if devices is not None else "cpu",
                "d_in": d_in,
                "d_out": d_out,
                "stats": 2 * (d * d + d) * F64,
                "heldout": 2 * (n_test_windows * (8 + 3 * d_out * F64) + (d_in * d_out + 2 * d_out) * F64),
                "first_host": n_windows * d * 4,
                "rows_disk": kept * d * 4,
            }
        )
    t = pd.DataFrame(rows)
    t["device_total"] = t["stats"] + t["heldout"]
    return t


def free_bytes(device: torch.device) -> int | None:
    """Free memory where the statistics will live: the CUDA device's, else the host's available memory."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        with open("/proc/meminfo") as f:
            info = dict(line.split(":", 1) for line in f)
        return int(info["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return None


def plan_text(plan: pandas.DataFrame) -> str:
    """One paragraph: what the capture will hold, against the free memory where it lives (per device)."""
    gib = 2**30
    per_block = plan["device_total"].max()
    text = (
        f"memory plan: {len(plan)} blocks × up to {per_block / gib:.2f} GiB = {plan['device_total'].sum() / gib:.2f} "
        f"GiB of float64 statistics (moments {plan['stats'].sum() / gib:.2f}, held-out sums "
        f"{plan['heldout'].sum() / gib:.2f}); first-position rows {plan['first_host'].sum() / gib:.2f} GiB in host "
        f"memory; row sample {plan['rows_disk'].sum() / gib:.2f} GiB on disk"
    )
    places = []
    for name, part in plan.groupby("device", sort=False):
        free = free_bytes(torch.device(name))
        where = f"{part['device_total'].sum() / gib:.2f} GiB on {name}"
        if len(part) < len(plan):
            where += f" (blocks {part['block'].min()}–{part['block'].max()})"
        places.append(where + (f", {free / gib:.1f} GiB free there" if free is not None else ""))
    return text + "; " + "; ".join(places)


@torch.no_grad()
def site_dims(loaded: LoadedModel, sites, windows: Windows) -> list[tuple[int, int]]:
    """(d_in, d_out) of every FFN in `sites`, read off one two-token forward pass of the first window."""
    return [dims for dims, _ in probe_sites(loaded, sites, windows)]


@torch.no_grad()
def probe_sites(loaded: LoadedModel, sites, windows: Windows) -> list[tuple[tuple[int, int], torch.device]]:
    found: dict[int, tuple[tuple[int, int], torch.device]] = {}

    def grab(block, x, y):
        found[block] = ((x.shape[-1], y.shape[-1]), x.device)

    kwargs = {"use_cache": False} if loaded.is_causal else {}
    with ffn_hooks(sites, grab, stop_after_last=True), torch.no_grad():
        ids = windows.ids[:1, :2].to(input_device(loaded.model))
        run_until_stop(loaded.model, input_ids=ids, **kwargs)
    return [found[s.index] for s in sites]


def block_groups(n_sites: int, blocks_per_pass: int | None) -> list[range]:
    k = n_sites if blocks_per_pass is None else blocks_per_pass
    if k < 1:
        raise LinrecError(f"blocks_per_pass must be at least 1, got {k}")
    return [range(i, min(i + k, n_sites)) for i in range(0, n_sites, k)]


def disk_bytes(plan: pandas.DataFrame) -> int:
    """Bytes a capture writes to its folder, about: the row sample, and the entry's stats.npz (the moments as upper
    triangles, a little over half of `stats`; the held-out sums; the first-position rows)."""
    stats = plan["stats"].sum() // 2 + 2 * (plan["d_in"] + plan["d_out"]).sum() * F64
    return int(plan["rows_disk"].sum() + stats + plan["heldout"].sum() + plan["first_host"].sum())


def check_disk(plan: pandas.DataFrame, directory, free: int | None = None) -> None:
    """One line naming the fix when the folder a capture writes to (`directory`; None writes nothing) has less free
    space than `disk_bytes(plan)`: checked before any pass, since a row sample's memory-mapped file on a full disk
    ends the process with SIGBUS and no message."""

    if directory is None:
        return
    need = disk_bytes(plan)
    if free is None:
        try:
            free = shutil.disk_usage(_existing(directory)).free
        except OSError:
            return
    if need > free:
        gib, rows = 2**30, plan["rows_disk"].sum()
        raise LinrecError(
            f"the capture writes about {need / gib:.2f} GiB to {directory} (row sample {rows / gib:.2f} "
            f"GiB), and only {free / gib:.2f} GiB are free there; free space, point $LINREC_CACHE (TMPDIR with "
            "--no-cache) to a disk with room, or lower --sample-rows"
        )


def _existing(path):
    path = Path(path)
    return next((p for p in (path, *path.parents) if p.exists()), path)


def check_fits(plan: pandas.DataFrame, groups: list[range]) -> None:
    """One line naming the fix when the statistics cannot fit where they will live (checked before any pass), device
    by device: on a GPU, the most that one block group puts there; in host memory, every block kept there."""
    for name, part in plan.groupby("device", sort=False):
        device = torch.device(name)
        if device.type == "cuda":
            need = max(int(part["device_total"].loc[[b for b in g if b in part.index]].sum()) for g in groups)
            if len(groups) == 1:  # in one pass the first-position rows wait on the device too (host in groups)
                need += int(part["first_host"].sum())
        else:  # on the CPU every group stays in RAM
            need = int(part["device_total"].sum())
        free = free_bytes(device)
        if free is not None and need > free:
            fix = (
                "pass --blocks-per-pass with fewer blocks (finished groups move to host memory)"
                if device.type == "cuda"
                else "run on a machine with more memory, or on a GPU with --blocks-per-pass"
            )
            raise LinrecError(f"{plan_text(plan)}: {need / 2**30:.1f} GiB needed at once on {name} does not fit; {fix}")
