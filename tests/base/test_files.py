"""linrec.base.files: a file's digest is remembered, and never trusted once the file has changed."""


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
