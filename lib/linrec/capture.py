"""One forward pass over a corpus; every FFN block's additive float64 statistics, per split.

`get_capture(model, corpus, …)` returns a `Capture`: for each split ("train", "test") and each
block, a `Moments` of the rows (x, y) = (FFN input, FFN output), one row per token position;
and a bounded, seeded sample of raw rows per block on disk (float32, memory-mapped) for the
later probes. The forward pass stops after the last hooked block (no final norm, no LM head).

Results are cached under `$LINREC_CACHE/captures/` keyed by everything that determines them
(model weights identity, corpus identity, seq_len, token budget, seed, test fraction, sample
size, product precision, `CAPTURE_VERSION`). An entry is written to a temporary directory and
renamed into place only when complete; its manifest records every file's size and the stats
file's sha256, so a truncated or half-written entry is detected and rebuilt, never read.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm  # text bars: they survive papermill and render in executed notebooks

from linrec._io import atomic_dir, cache_root, clean_stale_tmp, sha256_file
from linrec.corpora import Windows, corpus_identity, load_windows
from linrec.errors import LinrecError
from linrec.models import LoadedModel, load_model, model_identity
from linrec.sites import ffn_hooks, find_ffn_sites, run_until_stop
from linrec.stats import PRODUCTS, Moments

log = logging.getLogger(__name__)

CAPTURE_VERSION = "1"  # bump when what a capture contains or means changes
SPLITS = ("train", "test")


@dataclass(frozen=True)
class CaptureConfig:
    """Everything that determines a capture's numbers (and so its cache key)."""

    model: str
    corpus: str = "wiki"
    seq_len: int = 128  # the paper's window
    tokens: int = 20_480  # token budget per model (80/20 train/test by window)
    seed: int = 0  # train/test split and row sample
    test_frac: float = 0.2
    sample_rows: int = 30_000  # raw (x, y) rows kept per block for probes
    product: str = "float64"  # "float64" exact, "float32" fast (see linrec.stats)

    def validate(self) -> None:
        if self.tokens <= 0:
            raise LinrecError(f"token budget must be positive, got {self.tokens}; try --tokens 20480")
        if self.seq_len < 2:
            raise LinrecError(f"seq_len must be at least 2, got {self.seq_len}")
        if self.product not in PRODUCTS:
            raise LinrecError(f"product must be one of {', '.join(PRODUCTS)}, got '{self.product}'")
        if self.sample_rows < 0:
            raise LinrecError(f"sample_rows must be ≥ 0, got {self.sample_rows}")

    def key(self) -> str:
        ident = {**asdict(self), "model": model_identity(self.model), "corpus": corpus_identity(self.corpus), "version": CAPTURE_VERSION}
        return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:20]


@dataclass
class Capture:
    """Per-block statistics of one model on one corpus (see module docstring)."""

    config: CaptureConfig
    meta: dict
    stats: dict[str, list[Moments]]  # split → [block] → Moments
    path: Path | None = None  # cache entry, holding rows/ when sample_rows > 0
    cached: bool = False  # True when read from the cache
    _index: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_blocks(self) -> int:
        return len(self.stats["train"])

    @property
    def model_label(self) -> str:
        return self.meta.get("model_label", self.config.model)

    def rows(self, block: int, split: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Stored sample rows (x [k, d_in], y [k, d_out]) of `block`, memory-mapped float32; one split or both."""
        if self.path is None or not (self.path / "rows").exists():
            raise LinrecError("this capture kept no raw rows; capture again with sample_rows > 0")
        x = np.load(self.path / "rows" / f"x_{block:03d}.npy", mmap_mode="r")
        y = np.load(self.path / "rows" / f"y_{block:03d}.npy", mmap_mode="r")
        if split is None:
            return x, y
        sel = self.row_index()[:, 2] == SPLITS.index(split)
        return x[sel], y[sel]

    def row_index(self) -> np.ndarray:
        """[k, 3] int64: window, position and split (0 train, 1 test) of each stored row."""
        if self._index is None:
            self._index = np.load(self.path / "rows" / "index.npy")
        return self._index


class _RowSampler:
    """Writes a fixed, seeded subset of rows straight into per-block .npy memmaps (memory stays flat)."""

    def __init__(self, directory: Path, n_rows: int, k: int, seed: int, dims: list[tuple[int, int]], seq_len: int, order: np.ndarray, split_of: np.ndarray):
        rng = np.random.default_rng([seed, 1])
        self.selected = np.sort(rng.choice(n_rows, size=min(k, n_rows), replace=False))
        directory.mkdir(parents=True, exist_ok=True)
        win = order[self.selected // seq_len]
        index = np.stack([win, self.selected % seq_len, split_of[win]], axis=1).astype(np.int64)
        np.save(directory / "index.npy", index)
        self.x = [np.lib.format.open_memmap(directory / f"x_{i:03d}.npy", "w+", np.float32, (len(self.selected), dx)) for i, (dx, _) in enumerate(dims)]
        self.y = [np.lib.format.open_memmap(directory / f"y_{i:03d}.npy", "w+", np.float32, (len(self.selected), dy)) for i, (_, dy) in enumerate(dims)]
        self.start = 0  # global row index of the current batch's first row
        self.lo = self.hi = 0  # slice of `selected` falling in the current batch

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


@torch.no_grad()
def run_capture(loaded: LoadedModel, windows: Windows, config: CaptureConfig, out_dir: Path | None = None, batch_size: int = 8, progress: bool = True) -> Capture:
    """Capture statistics (and, with `out_dir`, the row sample) of every FFN block in one pass."""
    model = loaded.model
    tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False  # never TF32 here …
    try:
        return _run_capture(loaded, windows, config, out_dir, batch_size, progress)
    finally:  # … and the caller's setting back afterwards
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32


def _run_capture(loaded: LoadedModel, windows: Windows, config: CaptureConfig, out_dir: Path | None, batch_size: int, progress: bool) -> Capture:
    model = loaded.model
    sites = find_ffn_sites(model)
    device = next(model.parameters()).device
    dims = _site_dims(loaded, sites, windows)
    stats = {s: [Moments(dx, dy) for dx, dy in dims] for s in SPLITS}
    order = np.concatenate([windows.train, windows.test])  # train windows first, then test
    split_of = np.zeros(len(windows.ids), dtype=np.int64)
    split_of[windows.test] = 1
    T = windows.seq_len
    sampler = None
    if out_dir is not None and config.sample_rows > 0:
        sampler = _RowSampler(out_dir / "rows", len(order) * T, config.sample_rows, config.seed, dims, T, order, split_of)
    current = {"split": "train"}

    def on_ffn(block: int, x: torch.Tensor, y: torch.Tensor) -> None:
        stats[current["split"]][block].update(x, y, config.product)
        if sampler is not None:
            sampler.write(block, x, y)

    kwargs = {"use_cache": False} if loaded.is_causal else {}
    t0 = time.perf_counter()
    batches = [(split, idx[i : i + batch_size]) for split, idx in (("train", windows.train), ("test", windows.test)) for i in range(0, len(idx), batch_size)]
    with ffn_hooks(sites, on_ffn, stop_after_last=True):
        for split, idx in tqdm(batches, desc=f"capture {loaded.name}", unit="batch", disable=not progress):
            current["split"] = split
            ids = windows.ids[idx].to(device)
            if sampler is not None:
                sampler.begin(ids.numel())
            run_until_stop(model, input_ids=ids, **kwargs)
    seconds = time.perf_counter() - t0
    if sampler is not None:
        sampler.close()
    for s in SPLITS:
        for i, m in enumerate(stats[s]):
            if not m.is_finite():
                raise LinrecError(f"block {i}: NaN or inf in the captured activations ({s} split); load the model in float32 and check its weights")
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
        "device": str(device),
        "notes": loaded.notes,
        "version": CAPTURE_VERSION,
    }
    return Capture(config=config, meta=meta, stats=stats, path=out_dir)


def _site_dims(loaded: LoadedModel, sites, windows: Windows) -> list[tuple[int, int]]:
    """(d_in, d_out) of every FFN, read off one short forward pass."""
    dims: dict[int, tuple[int, int]] = {}

    def grab(block, x, y):
        dims[block] = (x.shape[-1], y.shape[-1])

    device = next(loaded.model.parameters()).device
    kwargs = {"use_cache": False} if loaded.is_causal else {}
    with ffn_hooks(sites, grab, stop_after_last=True), torch.no_grad():
        ids = windows.ids[:1, :2].to(device)
        run_until_stop(loaded.model, input_ids=ids, **kwargs)
    return [dims[s.index] for s in sites]


# ---- cache -------------------------------------------------------------------------------
def _captures_dir() -> Path:
    return cache_root() / "captures"


def _write(capture: Capture, directory: Path) -> None:
    arrays = {f"{s}/{i}/{k}": v for s in SPLITS for i, m in enumerate(capture.stats[s]) for k, v in m.state().items()}
    np.savez(directory / "stats.npz", **arrays)
    manifest = {str(p.relative_to(directory)): p.stat().st_size for p in sorted(directory.rglob("*")) if p.is_file()}
    meta = {**capture.meta, "manifest": manifest, "stats_sha256": sha256_file(directory / "stats.npz"), "complete": True}
    (directory / "meta.json").write_text(json.dumps(meta, indent=1))


def _read(directory: Path, config: CaptureConfig) -> Capture | None:
    """The cached capture in `directory`, or None (with a warning) if it is missing, stale or damaged."""
    meta_file = directory / "meta.json"
    if not meta_file.exists():
        return None
    try:
        meta = json.loads(meta_file.read_text())
        bad = [f for f, size in meta["manifest"].items() if not (directory / f).is_file() or (directory / f).stat().st_size != size]
        if bad or not meta.get("complete") or meta.get("version") != CAPTURE_VERSION:
            raise ValueError(f"files {bad[:3]} missing or truncated" if bad else "incomplete or old version")
        if sha256_file(directory / "stats.npz") != meta["stats_sha256"]:
            raise ValueError("stats.npz checksum mismatch")
        with np.load(directory / "stats.npz") as z:
            stats = {s: [Moments.from_state({k: z[f"{s}/{i}/{k}"] for k in ("n", "mean", "M", "dims")}) for i in range(meta["n_blocks"])] for s in SPLITS}
    except (ValueError, KeyError, OSError, json.JSONDecodeError) as err:
        log.warning("capture cache %s is damaged (%s); recomputing it", directory.name, err)
        return None
    return Capture(config=config, meta=meta, stats=stats, path=directory, cached=True)


def get_capture(
    model: str,
    corpus: str = "wiki",
    seq_len: int = 128,
    tokens: int = 20_480,
    seed: int = 0,
    test_frac: float = 0.2,
    sample_rows: int = 30_000,
    product: str = "float64",
    batch_size: int = 8,
    device: str = "cpu",
    loaded: LoadedModel | None = None,
    cache: bool = True,
    progress: bool = True,
) -> Capture:
    """The capture of `model` on `corpus`: from the cache if present and intact, else computed and cached.

    Pass `loaded` (from `linrec.models.load_model`) to reuse a model across corpora.
    """
    config = CaptureConfig(model, corpus, seq_len, tokens, seed, test_frac, sample_rows, product)
    config.validate()
    entry = _captures_dir() / f"{_slug(model)}-{config.key()}"
    if cache:
        found = _read(entry, config)
        if found is not None:
            return found
    if loaded is None:
        loaded = load_model(model, device=device)
    windows = load_windows(corpus, loaded.tokenizer, seq_len, tokens, seed, test_frac)
    if not cache:
        return run_capture(loaded, windows, config, None, batch_size, progress)
    clean_stale_tmp(entry.parent)
    with atomic_dir(entry) as tmp:
        capture = run_capture(loaded, windows, config, tmp, batch_size, progress)
        _write(capture, tmp)
    capture.path, capture.meta = entry, json.loads((entry / "meta.json").read_text())
    return capture


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(name).name or name)[:40]
