"""One forward pass over a corpus; every FFN block's additive float64 statistics, per split.

`get_capture(CaptureConfig(model, corpus, …), CaptureRun(…))` returns a `Capture`: for each split ("train", "test")
and each block, a `Moments` of the rows (x, y) = (FFN input, FFN output), one row per token position;
a second `Moments` of the rows at each window's *first* position alone (`Capture.first`, built
from those rows, which are kept: one per window, float32, `Capture.first_rows`; a subset of the
rows above, so `Capture.without_first` gives the statistics of every other position exactly).
Without a BOS token the first position is where a model parks its attention sink, and a few
blocks put almost all their output variance on that one token (notebook 04);
and a bounded, seeded sample of raw rows per block on disk (float32, memory-mapped) for the
later probes (both kinds of rows are kept by `linrec.collect.rows`). The forward pass stops after the last hooked
block (no final norm, no LM head).

Held-out sums for the bootstrap (`linrec.stats.heldout`): train windows run first, then test windows.
Before the first test batch every block's affine map is fitted from the finished train
statistics with `linrec.stats.ceiling.fit_affine` (the ceiling's own solver), and each test batch
then adds, per held-out window and block, n, Σe², Σ(y − c) and Σ(y − c)² (float64, c the
train mean of y) into `Capture.heldout[block]` (a `linrec.stats.heldout.HeldOut`). The cost is one
float64 [rows, d_in] × [d_in, d_out] product per block on test rows only, plus one fit per block (on one CUDA
device the fits run beside the test windows' forward passes and the sums after them: `linrec.collect.overlap`).
A block whose fit raises (NaN, or too few train rows for a block wider than the others) gets
`heldout[block] = None` and its error in `meta["heldout_errors"]`; the capture itself still
succeeds, and the ceiling raises that same error when asked for the block. Train rows too few
for every block are refused before the pass (`linrec.collect.reuse.say_rows`), with nothing cached.

Results are cached under `$LINREC_CACHE/captures/` keyed by everything that determines them
(model weights identity, corpus identity, seq_len, token budget, seed, test fraction, sample
size, product precision, `CAPTURE_VERSION`). The batch size is not in the key: it changes
only the order of float64 additions, so R²_lin differs between batch sizes by rounding alone
(≤ 1e-12, checked by `tests/collect/test_capture.py`). A cached capture keeping more rows serves a request for fewer
(`linrec.collect.reuse`, which also says what one not cached will cost). An entry is written to a temporary directory
and renamed into place only when complete; its manifest (`meta.json`, itself checksummed)
records every file's size and sha256, statistics and row samples alike, and every file is
verified before the entry is used, so a truncated, half-written or bit-flipped entry is
detected and rebuilt, never read.

`get_captures([config of each corpus…], run)` returns one capture per corpus, loading the model at most once.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import sys
import time
import weakref
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path

import numpy as np
import torch

from linrec.base.cache import entry_path, get_or_compute
from linrec.base.cache import read as read_entry_or_none
from linrec.base.errors import LinrecError
from linrec.base.files import scratch_dir, unseal, write_entry, writing
from linrec.base.progress import bar as progress_bar
from linrec.base.progress import write as progress_write
from linrec.collect.config import CAPTURE_VERSION, SPLITS, CaptureConfig, CaptureRun
from linrec.collect.overlap import Overlap
from linrec.collect.plan import block_groups, check_disk, check_fits, memory_plan, plan_text, probe_sites
from linrec.collect.reuse import (
    Pace,
    compute_params,
    larger_capture,
    notice_short,
    say_cost,
    say_entry,
    say_rows,
    served,
)
from linrec.collect.rows import FirstRows, RowSampler, first_moments
from linrec.inputs.corpora import WindowCut, Windows, load_windows
from linrec.inputs.hf import LoadedModel, check_context, check_device, input_device, model_dtype, no_tf32
from linrec.inputs.models import load_model
from linrec.inputs.sites import ffn_hooks, run_until_stop
from linrec.inputs.source import ModelSource, as_source
from linrec.stats.ceiling import NON_FINITE, AffineFit, Score, fit_affine, gram_condition, scaled_condition, score
from linrec.stats.distributed import barrier, broadcast_path, merge_moments, world
from linrec.stats.heldout import HeldOut, HeldOutSums
from linrec.stats.moments import Moments, remove_rows

log = logging.getLogger(__name__)


@dataclass
class Capture:
    """Per-block statistics of one model on one corpus (see module docstring)."""

    config: CaptureConfig
    meta: dict
    stats: dict[str, list[Moments]]  # split → [block] → Moments
    path: Path | None = None  # cache entry, holding rows/ when sample_rows > 0
    cached: bool = False  # True when read from the cache
    heldout: list[HeldOut | None] | None = None  # [block] → per-test-window sums (None: that block's fit failed)
    first: dict[str, list[Moments]] | None = None  # split → [block] → Moments of the windows' first positions
    first_rows: dict[str, np.ndarray] = field(default_factory=dict, repr=False)  # what `first` is built from
    heldout_rest: list[HeldOut | None] | None = None  # [block] → the same sums over positions 1 …, map fitted on them
    row_subset: np.ndarray | None = field(default=None, repr=False)  # served by a larger entry: its rows kept here
    _index: np.ndarray | None = field(default=None, repr=False)
    _fits: dict = field(default_factory=dict, repr=False)
    _rest_fits: dict = field(default_factory=dict, repr=False)  # block → the map fitted without the first positions
    _scores: dict = field(default_factory=dict, repr=False)

    @property
    def n_blocks(self) -> int:
        return len(self.stats["train"])

    @property
    def model_label(self) -> str:
        return self.meta.get("model_label", self.config.model)

    def fit(self, block: int) -> AffineFit:
        """The closed-form affine map of `block` from its train statistics (`linrec.stats.ceiling.fit_affine`), fitted
        once.

        Every analysis takes its map from here, so one block has one map everywhere: the
        ceiling table, the spectrum, the probes, the swap and the controls.
        """
        fit = self._fits.get(block)
        if fit is None:
            fit = self._fits[block] = fit_affine(self.stats["train"][block], block=block)
        elif np.isnan(fit.cond_gram):  # the capture's map for its held-out sums, which skips κ (and, solved by
            train = self.stats["train"][block]  # Cholesky, the scaled κ): the same map, its κ computed here
            Cxx = train.symmetric()[: train.d_in, : train.d_in] if train.on_device else train.Cxx
            scaled = scaled_condition(Cxx) if np.isnan(fit.cond_scaled) else fit.cond_scaled
            fit = self._fits[block] = replace(fit, cond_gram=gram_condition(Cxx), cond_scaled=scaled)
        return fit

    def fit_rest(self, block: int) -> AffineFit | None:
        """The map of `block` fitted without the windows' first positions, where the capture fitted it for its
        held-out sums (`linrec.stats.ceiling.first_position` fits it otherwise)."""
        return self._rest_fits.get(block)

    def score(self, block: int, split: str = "test") -> Score:
        """`fit(block)` scored on `split`'s statistics (`linrec.stats.ceiling.score`): held-out by default,
        in-sample with "train"."""
        key = (block, split)
        if key not in self._scores:
            self._scores[key] = score(self.fit(block), self.stats[split][block], block=block)
        return self._scores[key]

    def without_first(self, block: int) -> tuple[Moments, Moments] | None:
        """(train, test) statistics of `block` over every position but the windows' first; None if not captured."""
        if self.first is None:
            return None
        return tuple(remove_rows(self.stats[s][block], self.first[s][block]) for s in SPLITS)

    def rows(self, block: int, split: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Stored sample rows (x [k, d_in], y [k, d_out]) of `block`, memory-mapped float32; one split or both."""
        if self.path is None or not self.config.sample_rows or not (self.path / "rows").exists():
            raise LinrecError("this capture kept no raw rows; capture with --sample-rows > 0 (a profile's sample_rows)")
        x, y = (np.load(self.path / "rows" / f"{a}_{block:03d}.npy", mmap_mode="r") for a in "xy")
        if self.row_subset is not None:  # a larger entry's rows: those a capture of this config keeps
            x, y = x[self.row_subset], y[self.row_subset]
        if split is None:
            return x, y
        sel = self.row_index()[:, 2] == SPLITS.index(split)
        return x[sel], y[sel]

    def row_index(self) -> np.ndarray:
        """[k, 3] int64: window, position and split (0 train, 1 test) of each stored row."""
        if self._index is None:
            index = np.load(self.path / "rows" / "index.npy")
            self._index = index if self.row_subset is None else index[self.row_subset]
        return self._index


@torch.no_grad()
def run_capture(
    loaded: LoadedModel,
    windows: Windows,
    config: CaptureConfig,
    out_dir: Path | None = None,
    batch_size: int = 8,
    progress: bool = True,
    blocks_per_pass: int | None = None,
) -> Capture:
    """Capture statistics (and, with `out_dir`, the row sample) of every FFN block in one pass, or with
    `blocks_per_pass` in block groups: one pass over the corpus per group of that many consecutive blocks, each
    pass stopping the forward after its group's last block. The numbers are the same bit for bit (each block sees
    the same batches in the same order); on a GPU only one group's statistics are on the device at a time (a
    finished group's move to host memory), which is what lets a large model's statistics fit."""
    with no_tf32():
        return _run_capture(loaded, windows, config, out_dir, batch_size, progress, blocks_per_pass)


def _run_capture(
    loaded: LoadedModel,
    windows: Windows,
    config: CaptureConfig,
    out_dir: Path | None,
    batch_size: int,
    progress: bool,
    blocks_per_pass: int | None = None,
) -> Capture:
    model = loaded.model
    sites = loaded.sites
    device = input_device(model)
    probed = probe_sites(loaded, sites, windows)
    dims = [d for d, _ in probed]
    devices = [dev for _, dev in probed]  # each block's statistics live where its activations appear
    groups = block_groups(len(sites), blocks_per_pass)
    order = np.concatenate([windows.train, windows.test])  # train windows first, then test
    T = windows.seq_len
    rows = config.sample_rows if out_dir is not None else 0  # asked for; the sample keeps at most the rows there are
    plan = memory_plan(dims, len(windows.test), rows, devices, len(windows.ids), n_rows=len(order) * T)
    check_disk(plan, out_dir)
    if progress and world()[0] == 0:  # under torchrun every rank checks the plan; rank 0 alone prints it
        progress_write(plan_text(plan), file=sys.stderr)
    check_fits(plan, groups)
    n_params = compute_params(model)
    n_train_rows = len(windows.train) * windows.seq_len
    say_rows(config, len(windows.ids), n_train_rows, dims)  # a short corpus, too few rows: said before the pass
    threads = torch.get_num_threads() if all(d.type == "cpu" for d in devices) else None
    estimate = say_cost(loaded.name, config, n_params, int(windows.ids.numel()), threads)  # checks passed: its cost
    stats = {s: [Moments.zeros(dx, dy, dev) for (dx, dy), dev in probed] for s in SPLITS}
    # In one pass the first rows stay where each block's statistics are (copied to the host at the end); in block
    # groups, which exist to bound device memory, they go to the host as they come.
    first = FirstRows(dims, {s: len(getattr(windows, s)) for s in SPLITS}, devices if len(groups) == 1 else None)
    ordered_ids = windows.ids[torch.from_numpy(order)].to(device)  # one transfer; each batch is a slice of it
    split_of = np.zeros(len(windows.ids), dtype=np.int64)
    split_of[windows.test] = 1
    sampler = None
    if out_dir is not None and config.sample_rows > 0:
        sampler = RowSampler(
            out_dir / "rows", len(order) * T, config.sample_rows, config.seed, dims, T, order, split_of
        )
    heldout = HeldOutSums(dims, windows.test)
    reduced: set[int] = set()  # blocks whose train first rows were summed over ranks before their fit
    current = {"split": "train", "position": 0}

    item = next(model.parameters()).element_size()  # the test rows a fit beside the test windows keeps:
    kept = len(windows.test) * T * sum(dx + dy for dx, dy in dims) * item if len(groups) == 1 else float("inf")
    overlap = Overlap(devices, kept if world()[1] == 1 else float("inf"))  # in line on a CPU (see its module)

    def update(x: torch.Tensor, y: torch.Tensor, block: int) -> None:
        stats[current["split"]][block].update(x, y, config.product)
        first.write(current["split"], block, current["position"], x[:, 0], y[:, 0])  # [batch, seq, d] → first rows
        if current["split"] == "test":
            overlap.held_out(heldout, block, x, y)

    def on_ffn(block: int, x: torch.Tensor, y: torch.Tensor) -> None:
        overlap.run(partial(update, block=block), x, y)
        if sampler is not None:
            sampler.write(block, x, y)

    kwargs = {"use_cache": False} if loaded.is_causal else {}
    t0 = time.perf_counter()
    rank, size = world()
    batches = []  # (split, windows, first row of the batch in train-then-test order, position in the split)
    for split, idx, offset in (("train", windows.train, 0), ("test", windows.test, len(windows.train))):
        batches += [(split, idx[i : i + batch_size], (offset + i) * T, i) for i in range(0, len(idx), batch_size)]
    mine = batches[rank::size]  # under torchrun: batch i on rank i mod N (linrec.stats.distributed)
    pace = Pace(estimate if progress and rank == 0 else None, len(mine) * len(groups))  # revised by the measured pace

    def run(batch) -> None:
        split, idx, row0, position = batch
        current["split"], current["position"] = split, position
        if split == "test":
            heldout.seek(position, len(idx))
        ids = ordered_ids[row0 // T : row0 // T + len(idx)]
        if sampler is not None:
            sampler.start = row0
            sampler.begin(ids.numel())
        run_until_stop(model, input_ids=ids, **kwargs)

    for group in groups:
        name = loaded.name if len(groups) == 1 else f"{loaded.name} blocks {group.start}-{group.stop - 1}"
        if size > 1:
            name += f" (rank {rank} of {size})"
        with (
            ffn_hooks([sites[i] for i in group], on_ffn, stop_after_last=True),
            progress_bar(total=len(mine), desc=f"capture {name}", unit="batch", disable=not progress) as bar,
        ):
            for batch in (b for b in mine if b[0] == "train"):
                run(batch)
                bar.update()
                pace.tick()
            overlap.join()
            merge_moments([stats["train"][i] for i in group])  # every rank: the whole train split, merged exactly
            if len(windows.test):  # this group's train split is complete: fit its blocks once
                if size > 1:  # each rank holds its own train windows' first rows: every rank needs all of them
                    first.all_reduce("train", group)
                    reduced.update(group)
                train_first = {i: first.moments_of("train", i) for i in group}
                overlap.fit(partial(heldout.fit, stats["train"], group, train_first))
            for batch in (b for b in mine if b[0] == "test"):
                run(batch)
                bar.update()
                pace.tick()
            overlap.join()
            overlap.finish(heldout)
        if len(groups) > 1:  # a finished group leaves its device
            moved = [i for i in group if devices[i].type != "cpu"]
            for i in moved:
                for m in (stats[s][i] for s in SPLITS):
                    m.to("cpu")
            heldout.to("cpu", moved)
    if size > 1:
        merge_moments(stats["test"])
        first.all_reduce("test")
        first.all_reduce("train", [i for i in range(len(sites)) if i not in reduced])
        heldout.all_reduce()
    first_rows, first = first.arrays(), first.moments()
    seconds = time.perf_counter() - t0
    if sampler is not None:
        sampler.close()
        barrier()  # every rank's rows are on disk before rank 0 hashes the files
    for s in SPLITS:
        for i, m in enumerate(stats[s]):
            if first[s][i].n * T != m.n:
                raise LinrecError(
                    f"block {i}: the FFN saw {m.n} rows but {first[s][i].n} windows of {T}; "
                    "its input is not [batch, seq, d], which linrec.inputs.sites must hook"
                )
            if not m.is_finite():
                raise LinrecError(f"block {i} ({s} split): {NON_FINITE}")
    meta = {
        "config": asdict(config),
        "model_label": loaded.name,
        "model_type": loaded.model_type,
        "identity": loaded.identity,
        "corpus_identity": windows.identity,
        "n_blocks": len(sites),
        "sites": [s.path for s in sites],
        "dims": dims,
        "n_windows": {s: int(len(getattr(windows, s))) for s in SPLITS},
        "n_rows": {s: int(stats[s][0].n) for s in SPLITS},
        "tokens_used": int(windows.ids.numel()),
        "bos": windows.bos,
        "seconds": seconds,
        "heldout_seconds": heldout.seconds,  # of `seconds`: fits + held-out sums (host time; asynchronous on a GPU)
        "fit_seconds": heldout.fit_seconds,
        "heldout_errors": {str(i): msg for i, msg in heldout.errors.items()},
        "device": str(device) if len(set(devices)) == 1 else ", ".join(sorted({str(d) for d in devices})),
        "dtype": str(next(model.parameters()).dtype).removeprefix("torch."),
        "notes": loaded.notes,
        "compute_params": n_params,  # what the next capture's cost is estimated from (`compute_params`), with:
        "threads": threads,  # the CPU threads it ran on (None: an accelerator)
        "version": CAPTURE_VERSION,
    }
    rest = heldout.result(rest=True)
    fits, rest_fits = heldout.maps(), heldout.maps(rest=True)  # the maps the sums were taken against
    heldout = heldout.result()
    capture = Capture(
        config, meta, stats, out_dir, heldout=heldout, first=first, first_rows=first_rows, heldout_rest=rest
    )
    capture._fits.update(fits)
    capture._rest_fits.update(rest_fits)
    return capture


# ---- the cache entry ---------------------------------------------------------------------------
def _write(capture: Capture, directory: Path) -> None:
    arrays = {
        f"{s}/{i}/{k}": v for s in SPLITS for i, m in enumerate(capture.stats[s]) for k, v in m.state(True).items()
    }
    arrays.update(capture.first_rows)
    for prefix, held in (("heldout", capture.heldout), ("heldout_rest", capture.heldout_rest)):
        arrays.update(
            {f"{prefix}/{i}/{k}": v for i, h in enumerate(held or []) if h is not None for k, v in h.state().items()}
        )
    np.savez(directory / "stats.npz", **arrays)
    write_entry(directory, capture.meta)


def _load(directory: Path, meta: dict, config: CaptureConfig) -> Capture:
    """The capture in an entry whose files `linrec.base.cache.read` has checked against its manifest (row samples
    included: a flipped byte in a row file would otherwise reach the probes)."""
    n_blocks = int(meta["n_blocks"])
    with np.load(directory / "stats.npz") as z:
        stats = {
            s: [
                Moments.from_state({k: z[f"{s}/{i}/{k}"] for k in ("n", "mean", "Mu", "dims")}) for i in range(n_blocks)
            ]
            for s in SPLITS
        }
        first_rows = {
            f"first/{s}/{i}/{a}": z[f"first/{s}/{i}/{a}"] for s in SPLITS for i in range(n_blocks) for a in "xy"
        }
        first = {
            s: [first_moments(first_rows[f"first/{s}/{i}/x"], first_rows[f"first/{s}/{i}/y"]) for i in range(n_blocks)]
            for s in SPLITS
        }
        heldout = [
            None
            if str(i) in meta["heldout_errors"]
            else HeldOut.from_state({k: z[f"heldout/{i}/{k}"] for k in HeldOut.KEYS})
            for i in range(n_blocks)
        ]
        rest = [
            HeldOut.from_state({k: z[f"heldout_rest/{i}/{k}"] for k in HeldOut.KEYS})
            if f"heldout_rest/{i}/n" in z.files
            else None
            for i in range(n_blocks)
        ]
    return Capture(config, meta, stats, directory, True, heldout, first, first_rows, rest)


def get_capture(
    config: CaptureConfig,
    run: CaptureRun = CaptureRun(),
    *,
    source: ModelSource | None = None,
    loaded: LoadedModel | None = None,
    cache: bool = True,
    progress: bool = True,
) -> Capture:
    """The capture `config` asks for (its model on its corpus, with its settings): read from the cache if intact, else
    computed, run as `run` says (`CaptureRun`: batch size, device or device map, blocks per pass), and cached (not
    with `cache` False). `source`: `config.model` parsed (`linrec.inputs.source.ModelSource`), where the caller has it;
    `loaded` (from `linrec.inputs.models.load_model`) reuses a model already loaded; `get_captures` takes several
    corpora with one load."""
    return get_captures([config], run, source=source, loaded=loaded, cache=cache, progress=progress)[config.corpus]


def get_captures(
    configs: Sequence[CaptureConfig],
    run: CaptureRun = CaptureRun(),
    *,
    source: ModelSource | None = None,
    loaded: LoadedModel | None = None,
    cache: bool = True,
    progress: bool = True,
) -> dict[str, Capture]:
    """{corpus: capture} of each of `configs` (one model, each config on its own corpus, each with its own settings:
    e.g. raw rows kept for one corpus only), run as `run` says; `source`, `loaded`, `cache` as in `get_capture`.

    Captures found intact in the cache are read, never recomputed; the model is loaded at most
    once, and only if some corpus needs computing (not at all when `loaded` is given).
    """
    configs = list(dict.fromkeys(configs))  # each request once, in the order given
    if not configs:
        raise LinrecError("no corpora given; name at least one, e.g. wiki")
    models = sorted({c.model for c in configs})
    if len(models) > 1:
        raise ValueError(f"get_captures() captures one model, got {models}; call it once per model")
    corpora = [c.corpus for c in configs]
    if len(set(corpora)) < len(corpora):
        raise ValueError(f"get_captures() got two requests for one corpus: {corpora}; one per corpus")
    device = check_device(run.device)  # "auto" resolved here
    source = as_source(configs[0].model if source is None else source)  # parsed once: the keys and the load read it
    plan = {}  # every config validated before any work
    for config in configs:
        config.validate()
        plan[config.corpus] = config, entry_path("capture", source.spec, config.key(source))
    out: dict[str, Capture] = {}
    for corpus, (config, entry) in plan.items():
        load = partial(_load, config=config)

        def compute(tmp: Path | None, config=config) -> Capture:
            nonlocal loaded
            if loaded is None:
                loaded = load_model(source, device=device, dtype=model_dtype(config.dtype), device_map=run.device_map)
            _check_dtype(loaded, config)
            return _compute(loaded, config, tmp, cache, run.batch_size, progress, run.blocks_per_pass)

        asked = {"config": asdict(config)}  # an entry made for another request is computed again
        capture = _from_larger(source, config, entry) if cache and world()[1] == 1 else None
        if capture is None and cache and world()[0] > 0:  # under torchrun: rank 0 writes the entry, the others rows
            capture = read_entry_or_none(entry, CAPTURE_VERSION, load, asked) or compute(None)
        elif capture is None:
            capture = get_or_compute(entry, CAPTURE_VERSION, load, compute, cache, asked)
        if cache and not capture.cached:
            barrier()  # the entry is complete and in place before any rank reads it
            capture.path, capture.meta = entry, unseal(entry / "meta.json")
        if capture.cached:  # one that ran said so before its pass (`say_rows`)
            notice_short(capture)
        if cache:
            say_entry(capture)
        out[corpus] = capture
    return out


def _from_larger(source: ModelSource, config: CaptureConfig, entry: Path) -> Capture | None:
    """The capture of `config` read from a cached one of the same settings that keeps more rows
    (`linrec.collect.reuse`); None where there is none (or `config`'s own entry is there)."""
    larger = None if entry.exists() else larger_capture(source.spec, config, source)
    if larger is None:
        return None
    big = read_entry_or_none(
        larger[0], CAPTURE_VERSION, partial(_load, config=larger[1]), {"config": asdict(larger[1])}
    )
    return None if big is None else served(big, config, larger[2])


def replicate_captures(configs: Sequence[CaptureConfig], samples: list[int], run: CaptureRun = CaptureRun()) -> dict:
    """{(model, sample): capture} of each of `configs` on each disjoint stretch `samples` of its corpus (`get_capture`
    with `sample=k` and `sample_rows=0`: moments only, which is all a replication of the profile or the regimes needs),
    in the order given, then samples; run as `run` says."""
    return {
        (c.model, int(k)): get_capture(replace(c, sample=int(k), sample_rows=0), run) for c in configs for k in samples
    }


def _check_dtype(loaded: LoadedModel, config: CaptureConfig) -> None:
    """A model passed in must run in the dtype the capture's key records."""
    have = next(loaded.model.parameters()).dtype
    if have != model_dtype(config.dtype):
        raise LinrecError(
            f"the loaded model runs in {str(have).removeprefix('torch.')} but the capture asks for {config.dtype}; "
            f"pass dtype='{str(have).removeprefix('torch.')}' or load the model with that dtype"
        )


def _compute(
    loaded: LoadedModel,
    config: CaptureConfig,
    tmp: Path | None,
    cached: bool,
    batch_size: int,
    progress: bool,
    blocks_per_pass: int | None = None,
) -> Capture:
    """Run the capture of `config` with `loaded`. Cached: rank 0 writes it into `tmp` (what becomes the entry), and
    under torchrun the other ranks write their row samples into rank 0's `tmp`."""
    c = config
    check_context(loaded, c.seq_len)
    windows = load_windows(c.corpus, loaded.tokenizer, WindowCut.of(c))
    if not cached:
        return _scratch_capture(loaded, windows, config, batch_size, progress, blocks_per_pass)
    directory = broadcast_path(tmp)  # rank 0's tmp on every rank
    capture = run_capture(loaded, windows, config, directory, batch_size, progress, blocks_per_pass)
    if tmp is not None:
        _write(capture, tmp)
    return capture


def _scratch_capture(loaded: LoadedModel, windows, config: CaptureConfig, *run_args) -> Capture:
    """Uncached: the row sample (a probe's, a gate's) in a TMPDIR folder named after this process
    (`linrec.base.files.scratch_dir`, `linrec-rows-PID-*`), removed when the capture is dropped, when the process
    exits, or when it fails (a full disk: one line naming the folder); after a SIGKILL, by the next linrec run."""

    scratch = scratch_dir("rows") if config.sample_rows > 0 and world()[0] == 0 else None
    try:
        with writing(scratch) if scratch is not None else contextlib.nullcontext():
            capture = run_capture(loaded, windows, config, broadcast_path(scratch), *run_args)
    except BaseException:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        raise
    if scratch is not None:
        weakref.finalize(capture, shutil.rmtree, scratch, True)
    return capture
