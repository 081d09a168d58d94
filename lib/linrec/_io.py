"""Small file helpers: the cache root, sha256, and atomic writes (a killed run leaves nothing that reads as valid)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import uuid
from pathlib import Path


def cache_root() -> Path:
    """Root of everything linrec caches: `$LINREC_CACHE`, else `~/.cache/linrec`."""
    root = Path(os.environ.get("LINREC_CACHE") or Path.home() / ".cache" / "linrec")
    root.mkdir(parents=True, exist_ok=True)
    return root


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def _tmp_sibling(target: Path) -> Path:
    return target.with_name(f".{target.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")


@contextlib.contextmanager
def atomic_dir(target: str | Path):
    """Yield a temporary sibling directory; on success it replaces `target` by one rename.

    A run killed inside the block leaves only a `.NAME.tmp-*` directory, which no reader
    looks at (and `clean_stale_tmp` removes later); `target` is either absent, the old
    version, or the complete new one.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_sibling(target)
    tmp.mkdir()
    try:
        yield tmp
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextlib.contextmanager
def atomic_file(target: str | Path):
    """Yield a temporary sibling path; on success it is renamed onto `target`."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_sibling(target)
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def clean_stale_tmp(directory: str | Path) -> None:
    """Remove `.NAME.tmp-PID-*` leftovers of killed runs whose process is gone."""
    directory = Path(directory)
    if not directory.is_dir():
        return
    for p in directory.glob(".*.tmp-*"):
        try:
            pid = int(p.name.rsplit(".tmp-", 1)[1].split("-")[0])
            os.kill(pid, 0)  # still running: leave it alone
        except (ValueError, IndexError):
            continue
        except ProcessLookupError:
            shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
        except PermissionError:
            continue
