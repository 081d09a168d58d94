"""The cache: where each kind of entry lives, get-or-compute with its integrity checks, and listing and pruning.

Everything expensive that linrec keeps lives under `$LINREC_CACHE` (`linrec.base.files.cache_root`), one folder per
kind (`KINDS`). A computed entry (a capture, a learning curve, a trained run) is a folder named after what made it
(`entry_path`: the model's slug and the sha256 key of its whole configuration) holding its files and a sealed
`meta.json` with each file's size and sha256 (`linrec.base.files.write_entry`). `get_or_compute` reads an entry only
if every check passes, and otherwise computes it into a temporary sibling that becomes the entry by one rename when
complete, so a killed run never leaves an entry that is later read as valid. An entry is read only for the request
it was made for: its `meta.json` names the folder it was written as and the configuration it was made with, and an
entry copied or renamed to another request's name is computed again. Fetched models, wheels and corpora are
verified file by file against their pinned sha256 where they are fetched (`linrec.inputs.fetching`), and listed here.

Leases: a process that reads or writes an entry holds a shared `flock` on the entry's folder for the rest of its life
(`hold`), and `prune` removes an entry only under an exclusive lock it takes without waiting: an entry another
running process has read (a probe reading its row samples later, a notebook kernel) is kept, and said to be. A
process's own leases do not keep an entry from its own `prune`.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
import uuid
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

try:
    import fcntl
except ImportError:  # not on Windows: no leases there, and prune removes what it is asked to
    fcntl = None

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
    "evaluation": ("evaluations", True),  # a kept held-out evaluation (`linrec.analyses.memo`)
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


def other_request(entry: Path, meta: dict, expect: Mapping | None = None) -> str | None:
    """None if the entry's `meta` was made for this request: written as this folder (`meta["entry"]`, recorded by
    `write_entry`) and with each field of `expect` (e.g. {"config": …}) as asked; else what differs, in words. An
    entry written before a field (or a setting of its config) was recorded is checked on the others: its cache key
    already says whether the request is the same."""
    if meta.get("entry", entry.name) != entry.name:
        return f"it was written as {meta['entry']} and copied or renamed since"
    for name, want in (expect or {}).items():
        if name not in meta:
            continue
        want, have = json.loads(json.dumps(want)), meta[name]  # as stored: tuples are lists
        if isinstance(have, dict) and isinstance(want, dict):
            diff = [f"{k} {have[k]!r} there, {want.get(k)!r} asked" for k in sorted(have) if have[k] != want.get(k)]
            if diff:
                return f"its {name} differs: {'; '.join(diff[:3])}"
        elif have != want:
            return f"its {name} differs"
    return None


def read(entry: Path, version: str | int, load: Callable[[Path, dict], T], expect: Mapping | None = None,
         lease: bool = True) -> T | None:  # fmt: skip
    """`load(entry, meta)` of an intact entry of `version` made for this request (`other_request`, with `expect`),
    held for the rest of the process (`hold`; not with `lease` False, for an entry `load` reads whole at once);
    None if there is none, or (with a warning) if it is stale, damaged or another request's, so the caller computes
    it again."""
    if lease:
        hold(entry)  # before reading: a prune elsewhere now leaves it alone
    try:
        meta = read_entry(entry, version)
        if meta is None:
            return None
        other = other_request(entry, meta, expect)
        if other is not None:
            log.warning(
                "cache entry %s/%s was made for another request (%s); computing it again",
                entry.parent.name,
                entry.name,
                other,
            )
            return None
        return load(entry, meta)
    except DAMAGE as err:
        log.warning("cache entry %s/%s is damaged (%s); computing it again", entry.parent.name, entry.name, err)
        return None


def get_or_compute(
    entry: Path,
    version: str | int,
    load: Callable[[Path, dict], T],
    compute: Callable[[Path | None], T],
    cache: bool = True,
    expect: Mapping | None = None,
    lease: bool = True,
) -> T:
    """The entry read back if intact and made for this request (`read`, with `expect`), else `compute(tmp)`, which
    writes the entry's files and its `meta.json` into `tmp` (`write_entry`) and returns the result; `tmp` becomes
    `entry` by one rename only after `compute` returns, and is held (`hold`) from before its first file, and after
    unless `lease` is False (an entry read whole at once: a kept evaluation, of which a study reads thousands, would
    take every one of this process's `MAX_LEASES`). Without `cache`, `compute(None)`: nothing is read or written.
    The folder is checked writable before any work."""
    if not cache:
        return compute(None)
    found = read(entry, version, load, expect, lease)
    if found is not None:
        return found
    check_cache_writable(entry.parent.relative_to(cache_root()).as_posix())
    clean_stale_tmp(entry.parent)
    release(entry)  # a lease on what is about to be replaced
    fd = None
    try:
        with atomic_dir(entry, replace=True) as tmp:  # an old, damaged or other request's entry is replaced
            fd = _lock(tmp, shared=True)  # the lock goes with the folder when it is renamed into place
            result = compute(tmp)
    except BaseException:
        if fd is not None:
            os.close(fd)
        raise
    if lease:
        _keep(entry, fd)
    elif fd is not None:
        os.close(fd)
    return result


# ---- leases: an entry a running process reads is not pruned ------------------------------------------------
_HELD: dict[str, int] = {}  # entry path → a descriptor of its folder holding a shared flock, for the process's life
MAX_LEASES = 512  # one open descriptor each: a process that reads more entries leases the first ones only


def _keep(entry: Path, fd: int | None) -> None:
    if fd is None:
        return
    if len(_HELD) >= MAX_LEASES:
        os.close(fd)
        return
    _HELD[str(entry)] = fd


def _forget_inherited() -> None:
    """In a forked child: the parent's leases are the parent's (the child holds what it reads itself)."""
    for fd in _HELD.values():
        try:
            os.close(fd)
        except OSError:
            pass
    _HELD.clear()


if fcntl is not None and hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_inherited)


def _lock(folder_path: Path, shared: bool, wait: bool = True) -> int | None:
    """A descriptor of `folder_path` holding a shared (or exclusive) flock; None where there is no folder or no
    flock (another platform, a file system without locks). BlockingIOError if `wait` is False and it is held."""
    if fcntl is None:
        return None
    try:
        fd = os.open(folder_path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return None
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        os.close(fd)
        raise
    except OSError:
        os.close(fd)
        return None
    return fd


def _same(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (a.st_ino, a.st_dev) == (b.st_ino, b.st_dev)


def hold(entry: Path) -> None:
    """Lease `entry` for the rest of this process: a shared flock on its folder, so that `prune` in another process
    keeps it. Waits while a prune is removing it; nothing to hold if it is gone (or was replaced) by then."""
    fd = _HELD.get(str(entry))
    if fd is not None and _same(fd, entry):
        return
    release(entry)
    fd = _lock(entry, shared=True)
    if fd is None:
        return
    if not _same(fd, entry):  # removed or replaced while this process waited for the lock
        os.close(fd)
        return
    _keep(entry, fd)


def release(entry: Path) -> None:
    """Give up this process's lease on `entry`, if it holds one."""
    fd = _HELD.pop(str(entry), None)
    if fd is not None:
        os.close(fd)


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

    @property
    def slug(self) -> str:
        """A computed entry's model or run slug: its folder name without the key (`entry_path`: `<slug>-<key>`)."""
        return self.path.name.rsplit("-", 1)[0]


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
                f"trained run {c.get('layout', c.get('mlp'))}-i{c['init_seed']}-d{c['data_seed']} on {c['text']}: "
                f"d={c['d_model']}, {c['n_layers']} blocks, {c['steps']} steps, {len(meta['checkpoints'])} checkpoints "
                f"({meta['made_on']})"
            )
        label = meta.get("model_label", c["model"])
        if kind == "evaluation":
            return f"evaluation of {label} on {c['windows']} windows, swapped: {', '.join(c['swaps'])}"
        if kind == "curve":
            sizes = ", ".join(f"{t // 1000}k" for t in c["train_tokens"])
            return (
                f"learning curve of {label} on {c['corpus']}: train {sizes} tokens × {len(c['seeds'])} seeds, "
                f"seq {c['seq_len']}"
            )
        held = ", documents held out" if c.get("split") == "documents" else ""
        rows = f"{c['sample_rows']} sampled rows{held}"
        return f"{label} on {c['corpus']}, {c['tokens']} tokens × seq {c['seq_len']}, {rows}"
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


@dataclass
class Pruned:
    """What `prune` did: the entries it removed (with `dry_run`, would remove), and those it kept and why."""

    removed: list[Entry] = field(default_factory=list)
    in_use: list[Entry] = field(default_factory=list)  # held by a running process (`hold`)
    links: list[Entry] = field(default_factory=list)  # symbolic links: linrec removes only what it wrote
    failed: list[tuple[Entry, str]] = field(default_factory=list)  # could not be removed: (entry, why)


def prune(older_than_days: float | None = None, max_bytes: int | None = None, dry_run: bool = False) -> Pruned:
    """Remove computed entries (captures, learning curves, trained runs): those older than `older_than_days`, then
    the oldest until the rest take at most `max_bytes`. Fetched models, wheels and corpora are never touched, nor an
    entry another running process holds (`hold`; this process's own leases are given up), nor a symbolic link (it
    takes no room here, and what it points at is not linrec's to delete). An entry goes in one rename out of the
    way, then is deleted: one that cannot go (a read-only cache) stays whole, with the reason. Leftovers of killed
    runs go too, and remembered file digests whose file is gone or changed (`linrec.base.files.stale_digests`),
    where the cache can be written. Returns what was (or, with `dry_run`, would be) removed, and what was kept."""
    if older_than_days is None and max_bytes is None:
        raise LinrecError("say what to prune: --older-than DAYS and/or --max-size GB")
    for what, value in (("--older-than", older_than_days), ("--max-size", max_bytes)):
        if value is not None and not (np.isfinite(value) and value >= 0):
            raise LinrecError(f"{what} must be a finite number ≥ 0, got {value}")
    computed = tuple(k for k, (_, pruned) in KINDS.items() if pruned)
    found = entries(computed)
    out = Pruned(links=[e for e in found if e.path.is_symlink()])
    found = [e for e in found if not e.path.is_symlink()]
    doomed = [e for e in found if older_than_days is not None and e.age_days > older_than_days]
    if max_bytes is not None:
        kept = [e for e in found if e not in doomed]
        total = sum(e.size for e in kept)
        for e in kept:  # oldest first
            if total <= max_bytes:
                break
            doomed.append(e)
            total -= e.size
    for e in doomed:
        own = str(e.path) in _HELD
        release(e.path)  # this process's own lease does not count: it asked for the prune
        try:
            fd = _lock(e.path, shared=False, wait=False)
        except BlockingIOError:
            out.in_use.append(e)
        else:
            try:
                problem = None if dry_run else _remove(e.path)
            finally:
                if fd is not None:
                    os.close(fd)
            if problem is None:
                out.removed.append(e)
            elif problem:
                out.failed.append((e, problem))
        if dry_run and own:
            hold(e.path)  # a dry run changes nothing, this process's lease included
    if not dry_run:
        for kind in computed:
            _quietly(clean_stale_tmp, folder(kind))
        for p in stale_digests():
            _quietly(p.unlink, missing_ok=True)
    return out


def _remove(path: Path) -> str | None:
    """Remove the entry folder `path` (whose lock the caller holds): renamed out of the way in one step, so it is
    either whole or gone from the cache, then deleted. None when done, else why not (the entry stays whole, or as
    whole as the file system left it: a damaged entry is computed again on its next use); "" if it was gone."""
    aside = path.with_name(f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")  # what clean_stale_tmp removes
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return ""  # another prune removed it meanwhile: not this one's to claim
    except OSError as err:
        return err.strerror or type(err).__name__
    try:
        shutil.rmtree(aside)
    except OSError as err:
        _quietly(os.rename, aside, path)  # put back what is left, under its name
        return err.strerror or type(err).__name__
    return None


def _quietly(action: Callable, *args, **kwargs) -> None:
    """Housekeeping that a read-only cache refuses: not done, and nothing claimed."""
    try:
        action(*args, **kwargs)
    except OSError:
        pass
