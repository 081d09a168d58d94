"""Small file helpers: the cache root, sha256 manifests, and atomic writes
(a killed run leaves nothing that reads as valid).

Three rules hold for every file linrec writes:
- a directory or file appears under its final name only when complete (`atomic_dir`, `atomic_file`), and a
  failed write leaves nothing behind, its temporary copy included;
- what the machine refuses while writing (a full disk, a read-only file system, a denied permission, raised or
  wrapped by a library) is one line naming the path and the fix (`writing`, around every atomic write);
- linrec never deletes what it did not write: `atomic_dir` replaces an existing directory only
  when its caller passes `replace=True`, which the cache does for its own entries and the swap
  save does only over an earlier linrec save (`linrec.inputs.surgery.check_save_target`).

Every file in a cache entry is listed in a manifest with its size and sha256 (`manifest`,
`verify_manifest`), and the manifest itself carries a checksum of its own JSON (`seal`,
`unseal`), so a flipped byte anywhere in an entry is found before the entry is used.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import signal
import tempfile
import threading
import uuid
from pathlib import Path

from linrec.base.errors import LinrecError, os_error, refused_line

CACHE_ENV = "LINREC_CACHE"


def cache_root() -> Path:
    """Root of everything linrec caches: `$LINREC_CACHE`, else `~/.cache/linrec`."""
    root = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "linrec").expanduser()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise LinrecError(
            f"cannot create the cache directory {root} ({err.strerror}); set ${CACHE_ENV} to a writable directory"
        ) from None
    return root


def find_project_root(start: str | Path | None = None) -> Path | None:
    """The linrec project folder at or above `start` (default: cwd): pyproject.toml beside notebooks/; None outside
    one."""
    here = Path(start or Path.cwd()).resolve()
    return next((d for d in (here, *here.parents) if (d / "pyproject.toml").exists() and (d / "notebooks").is_dir()),
                None)  # fmt: skip


def project_root(start: str | Path | None = None) -> Path:
    """The linrec project folder at or above `start` (default: cwd); a one-line error outside one."""
    root = find_project_root(start)
    if root is None:
        raise LinrecError(
            f"no linrec project above {Path(start or Path.cwd()).resolve()}; run from a clone of the repository"
        )
    return root


def check_writable_dir(directory: str | Path, what: str, fix: str) -> Path:
    """Create `directory` if needed and prove it writable by creating and removing a file; else one line naming `fix`.

    A real write, not `os.access`: root passes `os.access` on read-only directories, and a
    read-only mount or a path through a file is only found by trying.
    """
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / f".linrec-write-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        probe.touch()
        probe.unlink()
    except OSError as err:
        raise LinrecError(f"{what} {directory} is not writable ({err.strerror or type(err).__name__}); {fix}") from None
    return directory


def check_cache_writable(sub: str) -> Path:
    """`cache_root()/sub`, checked writable before any expensive work that will write there."""
    return check_writable_dir(
        cache_root() / sub,
        "the cache directory",
        f"set ${CACHE_ENV} to a writable directory (it is {cache_root()}), or pass --no-cache",
    )


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def manifest(directory: str | Path, skip: tuple[str, ...] = ()) -> dict[str, dict]:
    """{relative path: {"size", "sha256"}} of every file under `directory` (but `skip`)."""
    directory = Path(directory)
    out = {}
    for p in sorted(directory.rglob("*")):
        rel = p.relative_to(directory).as_posix()
        if p.is_file() and rel not in skip:
            out[rel] = {"size": p.stat().st_size, "sha256": sha256_file(p)}
    return out


def verify_manifest(directory: str | Path, files: object, digest=sha256_file) -> str | None:
    """None if every file of the manifest `files` is in `directory` with its size and sha256; else what is wrong.
    `digest`: how a file's sha256 is had (`file_digest` where a remembered one will do)."""
    directory = Path(directory)
    if not isinstance(files, dict) or not files:
        return "no file manifest"
    for rel, want in files.items():
        p = directory / rel
        if not isinstance(want, dict) or not p.is_file():
            return f"{rel} is missing"
        if p.stat().st_size != want.get("size"):
            return f"{rel} has the wrong size"
        if digest(p) != want.get("sha256"):
            return f"{rel} checksum mismatch"
    return None


def _json_digest(obj: dict) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def seal(meta: dict) -> str:
    """`meta` as JSON text carrying the sha256 of its own content (key "meta_sha256")."""
    body = {k: v for k, v in meta.items() if k != "meta_sha256"}
    return json.dumps({**body, "meta_sha256": _json_digest(body)}, indent=1)


def unseal(path: str | Path) -> dict:
    """The dict `seal` wrote to `path`; ValueError if it does not parse, is not an object, or was changed."""
    try:
        meta = json.loads(Path(path).read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{Path(path).name} does not parse ({type(err).__name__})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{Path(path).name} is not a JSON object")
    body = {k: v for k, v in meta.items() if k != "meta_sha256"}
    if meta.get("meta_sha256") != _json_digest(body):
        raise ValueError(f"{Path(path).name} checksum mismatch")
    return body


def cache_slug(name: str) -> str:
    """A model or corpus name as the start of a cache directory name: its last path part, [A-Za-z0-9-_.] kept."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(name).name or name)[:40]


def staged_name(directory: str | Path) -> str:
    """The name `directory` will have once `atomic_dir` renames it into place (its own name if it is not staged)."""
    m = re.match(r"^\.(.+)\.tmp-\d+-[0-9a-f]{8}$", Path(directory).name)
    return m[1] if m else Path(directory).name


def write_entry(directory: str | Path, meta: dict) -> None:
    """Finish a cache entry whose files are written: `meta.json` = `meta` + the manifest of every other file
    (size, sha256) + "complete" + the entry's own folder name ("entry": an entry copied or renamed to another
    request's name is found, `linrec.base.cache.read`), sealed with its own checksum. Call it last, inside
    `atomic_dir`."""
    directory = Path(directory)
    body = {**meta, "manifest": manifest(directory, skip=("meta.json",)), "complete": True}
    (directory / "meta.json").write_text(seal({**body, "entry": staged_name(directory)}))


def read_entry(directory: str | Path, version: int | str) -> dict | None:
    """The sealed `meta.json` of a cache entry written by `write_entry`, after checking that it is intact, complete,
    of `version`, and that every file has its recorded size and sha256; None if there is no entry (or an empty
    folder). ValueError (saying what is wrong) for an entry that must not be read: the caller warns and recomputes."""
    directory = Path(directory)
    if not (directory / "meta.json").exists():
        if directory.is_dir() and any(directory.iterdir()):
            raise ValueError("meta.json is missing")  # files without their record: damaged, not absent
        return None
    meta = unseal(directory / "meta.json")
    if meta.get("version") != version or not meta.get("complete"):
        raise ValueError("incomplete or made by another linrec version")
    problem = verify_manifest(directory, meta.get("manifest"))
    if problem:
        raise ValueError(problem)
    return meta


def _tmp_sibling(target: Path) -> Path:
    return target.with_name(f".{target.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")


# a library's write that failed without saying why (torch.save: "unexpected pos 576 vs 534", "basic_ios::clear:
# iostream error"): `writing` asks the file system whether it is full or read-only
_WRITE_FAILED = re.compile(r"PytorchStreamWriter failed|file write failed|unexpected pos \d+ vs \d+|iostream error")
NEARLY_FULL = 1 << 20  # bytes free below which a write that failed without a reason is taken for a full disk


def _refusal_at(path: Path) -> OSError | None:
    """ENOSPC where the file system holding `path` has (almost) no room left, EROFS where it is mounted read-only,
    else None."""
    try:
        st = os.statvfs(next(p for p in (path, *path.parents) if p.exists()))
    except (OSError, StopIteration, AttributeError):  # AttributeError: no statvfs on this platform
        return None
    if st.f_flag & getattr(os, "ST_RDONLY", 1):
        return OSError(errno.EROFS, os.strerror(errno.EROFS))
    if st.f_bavail * st.f_frsize < NEARLY_FULL:
        return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return None


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def where_else(path: str | Path) -> str:
    """Where else a refused write of `path` can go, in words: for the cache's folder, another cache; for an uncached
    command's folder in TMPDIR (`scratch_dir`), another TMPDIR; for anything else, another output path."""
    path = Path(path).expanduser().absolute()
    cache = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "linrec").expanduser().absolute()
    if _inside(path, cache):
        return f"set ${CACHE_ENV} to a folder on another disk, or pass --no-cache"
    tmp = Path(tempfile.gettempdir()).absolute()
    if any(_SCRATCH.match(p.name) and p.parent == tmp for p in (path, *path.parents)):
        return "set TMPDIR to a folder on another disk"
    return "--out, --save or the profile's paths"


@contextlib.contextmanager
def writing(path: str | Path, staged: str | Path | None = None):
    """Around a write of `path`: what the machine refuses inside the block (`linrec.base.errors.os_error`: a full
    disk, a read-only file system, a denied permission, an OSError or a library's exception wrapping one, such as
    safetensors' "... No space left on device (os error 28)"; or a library's write that failed without a reason,
    such as torch.save's, on a file system that is full or read-only) becomes one LinrecError naming the path and
    the fix. The path named is the file the error names, else `path`; `staged`, the temporary sibling the write goes
    to (`atomic_dir`, `atomic_file`), is named as `path`, since it is removed. A LinrecError passes unchanged."""
    path = Path(path)
    try:
        yield
    except LinrecError:
        raise
    except Exception as err:
        refused = os_error(err)
        if refused is None and _WRITE_FAILED.search(str(err)):
            refused = _refusal_at(Path(staged or path))
        if refused is None:
            raise
        where = Path(refused.filename) if isinstance(refused.filename, str | os.PathLike) else path
        if staged is not None and _inside(where.absolute(), Path(staged).absolute()):
            where = path / where.absolute().relative_to(Path(staged).absolute())
        bare = OSError(refused.errno, refused.strerror or os.strerror(refused.errno))
        raise LinrecError(refused_line(bare, where, where_else(where))) from err


@contextlib.contextmanager
def atomic_dir(target: str | Path, replace: bool = False):
    """Yield a temporary sibling directory; on success it becomes `target` by one rename.

    A run killed inside the block leaves only a `.NAME.tmp-*` directory, which no reader
    looks at (and `clean_stale_tmp` removes later); `target` is either absent, the old
    version, or the complete new one. An existing `target` is replaced only with
    `replace=True` (the caller vouches that linrec wrote it); otherwise it is an error, and
    nothing is deleted. What the machine refuses inside the block is one line naming `target` (`writing`), and
    the temporary directory is removed.
    """
    target = Path(target)
    tmp = _tmp_sibling(target)
    with writing(target, tmp):
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists() and not replace:
            raise LinrecError(f"{target} already exists and linrec will not overwrite it; choose a new path")
        tmp.mkdir()
    try:
        with writing(target, tmp):
            yield tmp
            if target.exists() and not replace:
                raise LinrecError(f"{target} appeared while linrec was writing it; choose a new path")
            old = None
            if target.exists():
                old = _tmp_sibling(target)
                os.replace(target, old)  # out of the way in one rename, deleted after the new one is in place
            os.replace(tmp, target)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink(missing_ok=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextlib.contextmanager
def atomic_file(target: str | Path):
    """Yield a temporary sibling path; on success it is renamed onto `target`. On any failure the temporary file is
    removed, and what the machine refuses (a full disk, …) is one line naming `target` (`writing`)."""
    target = Path(target)
    tmp = _tmp_sibling(target)
    try:
        with writing(target, tmp):
            target.parent.mkdir(parents=True, exist_ok=True)
            yield tmp
            os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _owner_gone(pid: int) -> bool:
    """True once process `pid` has ended (a zombie, killed but not yet reaped by its parent, included); False while
    it runs (or belongs to another user, who may still use it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError, ValueError):
        return False
    try:  # Linux: the state after the command's name in parentheses
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def _remove(p: Path) -> None:
    shutil.rmtree(p, ignore_errors=True) if p.is_dir() and not p.is_symlink() else p.unlink(missing_ok=True)


def clean_stale_tmp(directory: str | Path, name: str | None = None) -> None:
    """Remove `.NAME.tmp-PID-*` leftovers of killed runs whose process is gone.

    With `name`, only the leftovers of that one target (`.name.tmp-PID-xxxxxxxx`, exactly as `atomic_dir` names
    them): what a `--save` into a user's directory runs, so nothing else of the user's can match."""
    directory = Path(directory)
    if not directory.is_dir():
        return
    pattern = re.compile(rf"^\.{re.escape(name)}\.tmp-(\d+)-[0-9a-f]{{8}}$") if name is not None else None
    for p in directory.glob(".*.tmp-*"):
        if pattern is not None and not pattern.match(p.name):
            continue
        try:
            pid = int(p.name.rsplit(".tmp-", 1)[1].split("-")[0])
        except (ValueError, IndexError):
            continue
        if _owner_gone(pid):
            _remove(p)


# ---- what an uncached command writes while it runs: TMPDIR folders named after their process ------------------
# linrec-KIND-PID-xxxxxxxx (tempfile.mkdtemp's 8 characters); a folder holding FINISHED is a finished run the
# command handed to its user (`linrec train --no-cache` prints its checkpoints' paths), never swept
_SCRATCH = re.compile(r"^linrec-([a-z]+)-(\d+)-[a-z0-9_]{8}$")
FINISHED = "meta.json"


def scratch_dir(kind: str) -> Path:
    """A new folder `linrec-KIND-PID-xxxxxxxx` under TMPDIR for what an uncached command writes while it runs (a
    row sample, a swapped model checked and deleted, offloaded weights, an uncached training run). Its owner
    removes it when done; after a SIGKILL, which no process outlives to clean up, the next linrec run removes it
    (`clean_stale_scratch`, which runs here first)."""
    if not kind.isalpha() or not kind.islower():
        raise ValueError(f"a scratch folder's kind is lower-case letters, got {kind!r}")
    clean_stale_scratch()
    return Path(tempfile.mkdtemp(prefix=f"linrec-{kind}-{os.getpid()}-"))


def clean_stale_scratch(directory: str | Path | None = None) -> list[Path]:
    """Remove the `scratch_dir` folders under `directory` (default TMPDIR) whose process is gone, as
    `clean_stale_tmp` removes the cache's leftovers: not a folder whose process still runs or belongs to another
    user, not a symbolic link, not one holding a finished run (`FINISHED`), nothing whose name linrec did not
    give. Returns what it removed; a folder it cannot remove stays."""
    directory = Path(directory or tempfile.gettempdir())
    removed = []
    try:
        found = list(directory.glob("linrec-*"))
    except OSError:
        return removed
    for p in found:
        m = _SCRATCH.match(p.name)
        if m is None or p.is_symlink() or not p.is_dir() or int(m[2]) == os.getpid():
            continue
        if (p / FINISHED).exists() or not _owner_gone(int(m[2])):
            continue
        shutil.rmtree(p, ignore_errors=True)
        if not p.exists():
            removed.append(p)
    return removed


@contextlib.contextmanager
def terminate_as_exit():
    """Inside the block, SIGTERM and SIGHUP end the process through Python's exit path (SystemExit 128 + signal)
    instead of killing it outright, so every `atomic_dir` / `atomic_file` in progress removes its temporary copy.
    SIGKILL cannot be caught: its leftovers are removed by the next run (`clean_stale_tmp`). Main thread only."""

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    wanted = [s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None]
    old = {s: signal.signal(s, stop) for s in wanted}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


# ---- what a file holds, remembered: content digests for cache keys --------------------------------------------
DIGESTS = "digests"  # $LINREC_CACHE/digests/<sha256 of the resolved path>.json: one small record per hashed file


def _stat_key(st: os.stat_result) -> list[int]:
    # ctime is set by the kernel on every write or metadata change and cannot be set back by cp -p, rsync -a or
    # touch -d, so a rewrite that restores size and mtime still changes the key; inode and device catch a new file
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def file_digest(path: str | Path) -> str:
    """sha256 of a file's content, hashed once and remembered in the cache keyed by (resolved path, size, mtime,
    ctime, inode, device): a rerun on the same file costs one stat. Without a writable cache it is hashed each call."""
    path = Path(path).resolve()
    st = path.stat()
    record_path = None
    try:
        record_path = cache_root() / DIGESTS / f"{hashlib.sha256(str(path).encode()).hexdigest()[:32]}.json"
        record = json.loads(record_path.read_text())
        if record.get("path") == str(path) and record.get("stat") == _stat_key(st):
            return str(record["sha256"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError, LinrecError):
        pass
    digest = sha256_file(path)
    if record_path is not None and _stat_key(path.stat()) == _stat_key(st):  # unchanged while it was read
        try:
            record_path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_file(record_path) as tmp:
                tmp.write_text(json.dumps({"path": str(path), "stat": _stat_key(st), "sha256": digest}))
        except (OSError, LinrecError):
            pass  # a read-only cache: the digest is still right, only not remembered
    return digest


def stale_digests() -> list[Path]:
    """The remembered digests whose file is gone or has changed since (what `linrec cache prune` removes)."""
    out = []
    d = cache_root() / DIGESTS
    for p in sorted(d.glob("*.json")) if d.is_dir() else []:
        try:
            record = json.loads(p.read_text())
            if _stat_key(Path(record["path"]).stat()) == record["stat"]:
                continue
        except (OSError, ValueError, KeyError, TypeError):
            pass
        out.append(p)
    return out


def path_identity(path: str | Path) -> str:
    """ "path:<resolved path>:<digest>" of a file or directory, for cache keys: the digest covers every file's
    name and sha256 (`file_digest`), so new content under the same name, size and mtime is a new identity. Hidden
    paths (.git, whose objects can hold a second copy of the weights) are left out, and so is linrec's own cache
    should it live inside the folder; a folder inside the cache (a trained checkpoint under training/) is hashed
    like any other."""
    path = Path(path).expanduser()
    if path.is_dir():
        try:
            cache = cache_root().resolve()
        except LinrecError:  # no usable cache (a --no-cache run): nothing of it can be inside the folder
            cache = None
        if cache is not None and path.resolve() not in cache.parents:
            cache = None  # the cache is not inside this folder: nothing of the folder is left out for it
        files = [
            f
            for f in sorted(path.rglob("*"))
            if f.is_file()
            and not any(part.startswith(".") for part in f.relative_to(path).parts)  # .git, .cache: not the model
            and (cache is None or cache not in f.resolve().parents)  # linrec's own cache, living inside the folder
        ]
    else:
        files = [path]
    stamp = json.dumps([(str(f.relative_to(path)) if path.is_dir() else f.name, file_digest(f)) for f in files])
    return f"path:{path.resolve()}:{hashlib.sha256(stamp.encode()).hexdigest()[:16]}"
