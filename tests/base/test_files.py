"""linrec.base.files: a file's digest is remembered, and never trusted once the file has changed; a write the machine
refuses (a full disk, raised or wrapped by a library) is one line naming the path and leaves no temporary file; an
uncached command's TMPDIR folder is swept once its process is gone (issue 60)."""

import pytest


def test_file_digest_is_remembered_and_never_trusted_after_a_change(tmp_path, monkeypatch):
    import os

    import linrec.base.files as files

    monkeypatch.setenv("LINREC_CACHE", str(tmp_path / "cache"))
    f = tmp_path / "w.bin"
    f.write_bytes(b"a" * 4096)
    calls = []
    real = files.sha256_file
    monkeypatch.setattr(files, "sha256_file", lambda p, *a: calls.append(p) or real(p, *a))
    first = files.file_digest(f)
    assert files.file_digest(f) == first and len(calls) == 1  # remembered
    st = f.stat()
    with open(f, "r+b") as fh:  # rewritten in place: same inode, same size, mtime put back
        fh.write(b"b")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert files.file_digest(f) == real(f) != first and len(calls) == 2
    assert files.stale_digests() == []
    f.unlink()
    assert len(files.stale_digests()) == 1  # what prune removes


# ---- issue 60: a refused write is one line naming the path, and leaves nothing behind ---------------------------
def _full_disk(kind: str):
    """A writer that puts a few bytes on disk, then fails as a full disk does through `kind`: a plain OSError, a
    library's wrapped one (safetensors' SafetensorError), or torch.save's, which says no why."""
    import errno

    from safetensors import SafetensorError

    def write(path):
        with open(path, "wb") as f:
            f.write(b"partial")
        if kind == "oserror":
            raise OSError(errno.ENOSPC, "No space left on device")
        if kind == "safetensors":
            raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")
        if kind == "torch":
            raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 576 vs 534")
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    return write


def _no_room(monkeypatch, free: int = 4096):
    """The file system reports `free` bytes left (what `writing` asks when a library says no why)."""
    import os
    from collections import namedtuple

    stat = namedtuple("statvfs", "f_flag f_bavail f_frsize")
    monkeypatch.setattr(os, "statvfs", lambda p: stat(0, free // 4096, 4096))


@pytest.mark.parametrize("kind", ["oserror", "safetensors", "torch", "erofs"])
def test_a_full_disk_in_an_atomic_file_is_one_line_naming_it_and_leaves_nothing(tmp_path, monkeypatch, kind):
    from linrec.base.errors import LinrecError
    from linrec.base.files import atomic_file

    _no_room(monkeypatch)
    target = tmp_path / "out" / "report.md"
    target.parent.mkdir()
    target.write_text("the old report")
    with pytest.raises(LinrecError) as err:
        with atomic_file(target) as tmp:
            _full_disk(kind)(tmp)
    line = str(err.value)
    assert "\n" not in line and f": {target};" in line and ".tmp-" not in line, line
    assert ("read-only" if kind == "erofs" else "the disk is full") in line
    assert "--out, --save or the profile's paths" in line  # an output: where else to write it
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.md"] and target.read_text() == "the old report"


@pytest.mark.parametrize("kind", ["oserror", "safetensors", "torch"])
def test_a_full_disk_in_an_atomic_dir_names_the_entry_and_removes_its_staging(tmp_path, monkeypatch, kind):
    from linrec.base.errors import LinrecError
    from linrec.base.files import atomic_dir

    monkeypatch.setenv("LINREC_CACHE", str(tmp_path / "cache"))
    _no_room(monkeypatch)
    target = tmp_path / "cache" / "training" / "run-0123"
    with pytest.raises(LinrecError) as err:
        with atomic_dir(target, replace=True) as tmp:
            (tmp / "step_000000").mkdir()
            _full_disk(kind)(tmp / "step_000000" / "model.safetensors")
    line = str(err.value)
    assert f"No space left on device: {target};" in line and "$LINREC_CACHE" in line and "\n" not in line, line
    assert list(target.parent.iterdir()) == []


def test_a_failure_that_is_not_the_disks_passes_unchanged(tmp_path, monkeypatch):
    from linrec.base.files import atomic_file

    _no_room(monkeypatch, free=10 * 2**30)  # room enough: torch's "unexpected pos" is then not the disk's doing
    with pytest.raises(RuntimeError, match="unexpected pos"):
        with atomic_file(tmp_path / "t.pt") as tmp:
            _full_disk("torch")(tmp)
    with pytest.raises(ValueError, match="a bug"):
        with atomic_file(tmp_path / "t.csv") as tmp:
            tmp.write_text("x")
            raise ValueError("a bug")
    assert list(tmp_path.iterdir()) == []


def test_scratch_folders_carry_their_process_and_are_swept_once_it_is_gone(tmp_path, monkeypatch):
    """An uncached command's TMPDIR folder is linrec-KIND-PID-*: one whose process is gone is removed by the next
    run (as the cache's .tmp folders are), unless it holds a finished run its command handed over (train
    --no-cache's checkpoints); a running process's folder, a link and a name linrec did not give stay."""
    import os
    import subprocess
    import sys
    import tempfile

    from linrec.base.files import FINISHED, clean_stale_scratch, scratch_dir

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    gone = int(dead.stdout)  # that process has exited and been reaped
    mine = scratch_dir("rows")
    assert mine.parent == tmp_path and mine.name.startswith(f"linrec-rows-{os.getpid()}-")
    stale = tmp_path / f"linrec-rows-{gone}-abcd_123"
    (stale / "rows").mkdir(parents=True)
    (stale / "rows" / "x_000.npy").write_bytes(b"x" * 100)
    finished = tmp_path / f"linrec-train-{gone}-abcd_124"
    finished.mkdir()
    (finished / FINISHED).write_text("{}")
    running = tmp_path / f"linrec-rows-{os.getppid()}-abcd_125"
    running.mkdir()
    unnamed = [tmp_path / "linrec-rows-abcd_126", tmp_path / f"linrec-rows-{gone}", tmp_path / f"other-{gone}-abcd_127"]
    for p in unnamed:
        p.mkdir()
    target = tmp_path / "kept-target"
    target.mkdir()
    link = tmp_path / f"linrec-rows-{gone}-abcd_128"
    link.symlink_to(target, target_is_directory=True)
    assert clean_stale_scratch() == [stale]
    assert not stale.exists() and all(p.is_dir() for p in (mine, finished, running, target, *unnamed))
    assert link.is_symlink()
    stale.mkdir()  # the next scratch folder made sweeps first
    scratch_dir("swapped")
    assert not stale.exists()


def test_where_else_to_write_follows_the_path(tmp_path, monkeypatch):
    import tempfile

    from linrec.base.files import where_else

    monkeypatch.setenv("LINREC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    assert "$LINREC_CACHE" in where_else(tmp_path / "cache" / "captures" / "m-01")
    assert "TMPDIR" in where_else(tmp_path / "tmp" / "linrec-rows-12-abcdefgh" / "rows" / "x_000.npy")
    assert (
        where_else(tmp_path / "tmp" / "report.md")
        == where_else("/srv/out.csv")
        == ("--out, --save or the profile's paths")
    )


def test_a_killed_process_not_yet_reaped_counts_as_gone(tmp_path, monkeypatch):
    """A process killed but not yet waited for by its parent (a zombie) still answers kill(pid, 0): its folder is
    swept all the same (a shell's `kill -9` then the next linrec command, before the shell reaps it)."""
    import os
    import tempfile
    import time

    from linrec.base.files import clean_stale_scratch

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    try:
        deadline = time.time() + 10
        while time.time() < deadline and " Z " not in open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1][:3]:
            time.sleep(0.01)
        os.kill(pid, 0)  # still there: not reaped
        left = tmp_path / f"linrec-rows-{pid}-abcd_123"
        left.mkdir()
        assert clean_stale_scratch() == [left]
    finally:
        os.waitpid(pid, 0)
