"""The cache: where each kind of entry lives, get-or-compute with its integrity checks, and listing and pruning.

Everything expensive that linrec keeps lives under `$LINREC_CACHE` (`linrec.base.files.cache_root`), one folder per
kind (`KINDS`). A computed entry (a capture, a learning curve, a trained run) is a folder named after what made it
(`entry_path`: the model's slug and the sha256 key of its whole configuration) holding its files and a sealed
`meta.json` with each file's size and sha256 (`linrec.base.files.write_entry`). `get_or_compute` reads an entry only
if every check passes, and otherwise computes it into a temporary sibling that becomes the entry by one rename when
complete, so a killed run never leaves an entry that is later read as valid. Fetched models, wheels and corpora are
verified file by file against their pinned sha256 where they are fetched (`linrec.inputs.fetching`), and listed here.
"""

from __future__ import annotations

import logging
import shutil
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np

from linrec.base.errors import LinrecError
from linrec.base.files import (
    DIGESTS,
    atomic_dir,
    cache_root,
    cache_slug,
    check_cache_writable,
    clean_stale_tmp,
    read_entry,
    stale_digests,
    unseal,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

# kind → (its folder under the cache, pruned by `prune`?). Computed entries are pruned; what `linrec fetch` made is
# only listed, since every run needs it and fetching it again takes minutes.
KINDS = {
    "capture": ("captures", True),
    "curve": ("curves", True),
    "training": ("training", True),
    "model": ("models", False),
    "wheel": ("wheels", False),
    "corpus": ("corpora", False),
}
# what a damaged entry can raise while it is read (a truncated npz, a missing key, a wrong dtype)
DAMAGE = (ValueError, KeyError, TypeError, OSError, EOFError, zipfile.BadZipFile)


def folder(kind: str) -> Path:
    """The cache folder of `kind` (one of `KINDS`)."""
    return cache_root() / KINDS[kind][0]


def writable(kind: str, *parts: str) -> Path:
    """The cache folder of `kind` (or `parts` below it), checked writable before expensive work that writes there."""
    return check_cache_writable("/".join([KINDS[kind][0], *parts]))


def entry_path(kind: str, name: str, key: str) -> Path:
    """Where the entry of `name` (a model spec or run name) with configuration key `key` lives."""
    return folder(kind) / f"{cache_slug(name)}-{key}"


def read(entry: Path, version: str | int, load: Callable[[Path, dict], T]) -> T | None:
    """`load(entry, meta)` of an intact entry of `version`; None if there is none, or (with a warning) if it is
    stale or damaged, so the caller computes it again."""
    try:
        meta = read_entry(entry, version)
        return None if meta is None else load(entry, meta)
    except DAMAGE as err:
        log.warning("cache entry %s/%s is damaged (%s); computing it again", entry.parent.name, entry.name, err)
        return None


def get_or_compute(
    entry: Path,
    version: str | int,
    load: Callable[[Path, dict], T],
    compute: Callable[[Path | None], T],
    cache: bool = True,
) -> T:
    """The entry read back if intact (`read`), else `compute(tmp)`, which writes the entry's files and its
    `meta.json` into `tmp` (`write_entry`) and returns the result; `tmp` becomes `entry` by one rename only after
    `compute` returns. Without `cache`, `compute(None)`: nothing is read or written. The folder is checked writable
    before any work."""
    if not cache:
        return compute(None)
    found = read(entry, version, load)
    if found is not None:
        return found
    check_cache_writable(entry.parent.relative_to(cache_root()).as_posix())
    clean_stale_tmp(entry.parent)
    with atomic_dir(entry, replace=True) as tmp:  # an old or damaged entry is replaced
        return compute(tmp)


# ---- what the cache holds, and pruning it ------------------------------------------------------------------
@dataclass
class Entry:
    """One folder in the cache: a computed entry, or one fetched model, wheel or corpus."""

    path: Path
    kind: str  # a key of KINDS
    size: int  # bytes on disk
    mtime: float  # when it was written (seconds since the epoch)
    made_by: str  # what made it, in words

    @property
    def age_days(self) -> float:
        return max(0.0, (time.time() - self.mtime) / 86400)


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def describe(entry: Path, kind: str) -> str:
    """What made `entry`, from its meta.json (computed kinds) or its name (fetched ones)."""
    if not KINDS[kind][1]:
        return f"fetched {kind} {entry.name}"
    try:
        meta = unseal(entry / "meta.json")
        c = meta["config"]
        if kind == "training":
            return (
                f"trained run {c['mlp']}-i{c['init_seed']}-d{c['data_seed']} on {c['text']}: d={c['d_model']}, "
                f"{c['n_layers']} blocks, {c['steps']} steps, {len(meta['checkpoints'])} checkpoints "
                f"({meta['made_on']})"
            )
        label = meta.get("model_label", c["model"])
        if kind == "curve":
            sizes = ", ".join(f"{t // 1000}k" for t in c["train_tokens"])
            return (
                f"learning curve of {label} on {c['corpus']}: train {sizes} tokens × {len(c['seeds'])} seeds, "
                f"seq {c['seq_len']}"
            )
        return f"{label} on {c['corpus']}, {c['tokens']} tokens × seq {c['seq_len']}, {c['sample_rows']} sampled rows"
    except (OSError, ValueError, KeyError, TypeError):
        return "incomplete or damaged (computed again on next use)"


def entries(kinds: tuple[str, ...] = tuple(KINDS)) -> list[Entry]:
    """Every entry of `kinds` in the cache, oldest first (temporary leftovers of killed runs are not listed)."""
    out = []
    for kind in kinds:
        d = folder(kind)
        if not d.is_dir():
            continue
        for p in sorted(d.iterdir()):
            if p.name.startswith(".") or (KINDS[kind][1] and not p.is_dir()):
                continue
            out.append(Entry(p, kind, _size(p), p.stat().st_mtime, describe(p, kind)))
    return sorted(out, key=lambda e: e.mtime)


def digests_size() -> int:
    """Bytes of the remembered file digests (`linrec.base.files.file_digest`)."""
    d = cache_root() / DIGESTS
    return _size(d) if d.is_dir() else 0


def prune(older_than_days: float | None = None, max_bytes: int | None = None, dry_run: bool = False) -> list[Entry]:
    """Remove computed entries (captures, learning curves, trained runs): those older than `older_than_days`, then
    the oldest until the rest take at most `max_bytes`. Fetched models, wheels and corpora are never touched. Leftovers
    of killed runs go too, and remembered file digests whose file is gone or changed
    (`linrec.base.files.stale_digests`). Returns what was (or, with `dry_run`, would be) removed."""
    if older_than_days is None and max_bytes is None:
        raise LinrecError("say what to prune: --older-than DAYS and/or --max-size GB")
    for what, value in (("--older-than", older_than_days), ("--max-size", max_bytes)):
        if value is not None and not (np.isfinite(value) and value >= 0):
            raise LinrecError(f"{what} must be a finite number ≥ 0, got {value}")
    computed = tuple(k for k, (_, pruned) in KINDS.items() if pruned)
    found = entries(computed)
    doomed = [e for e in found if older_than_days is not None and e.age_days > older_than_days]
    if max_bytes is not None:
        kept = [e for e in found if e not in doomed]
        total = sum(e.size for e in kept)
        for e in kept:  # oldest first
            if total <= max_bytes:
                break
            doomed.append(e)
            total -= e.size
    if not dry_run:
        for e in doomed:
            shutil.rmtree(e.path, ignore_errors=True)
        for kind in computed:
            clean_stale_tmp(folder(kind))
        for p in stale_digests():
            p.unlink(missing_ok=True)
    return doomed
