"""linrec.base.cache: the cache listed and pruned, oldest first; prune never removes an entry a running process
reads, removes nothing on a read-only cache and says so, and leaves a symbolic link without claiming it (issue 51)."""

import errno
import os
import shutil
import time

import pytest
import torch

from helpers import CAPTURE_KW as KW
from helpers import capture_with, save_tiny_model, tiny_text
from helpers import main_captured as _main
from linrec.base.errors import LinrecError


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LINREC_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def corpus(tmp_path):
    p = tmp_path / "text.txt"
    p.write_text(tiny_text(6000))
    return str(p)


# ---- case 8: prune never removes an entry in use, and says what it did --------------------------------------------
def _reader(entry_args, flag):
    """A child forked from this process that reads the capture of `entry_args` from the cache (as `linrec probe`
    does before its probes read the rows), writes `flag`, and waits to be killed. Returns its pid."""
    pid = os.fork()
    if pid:
        return pid
    code = 70
    try:
        torch.set_num_threads(1)
        capture = capture_with(**entry_args)
        part = flag.with_suffix(".part")  # written whole, then renamed: the parent waits for the name, and read
        part.write_text("cached" if capture.cached else "computed")  # an empty file once, under load (2026-11-27)
        part.rename(flag)
        time.sleep(120)
        capture.rows(0)
    finally:
        os._exit(code)


def test_prune_leaves_an_entry_another_process_is_reading(cache, corpus, tmp_path):
    import signal

    from linrec.base.cache import prune

    model = save_tiny_model(tmp_path / "model")
    args = dict(model=model, corpus=corpus, **KW)
    used = capture_with(**args)
    idle = capture_with(**{**args, "seed": 1})
    flag = tmp_path / "flag"
    pid = _reader(args, flag)
    try:
        deadline = time.time() + 60
        while not flag.exists() and time.time() < deadline:
            time.sleep(0.05)
        assert flag.read_text() == "cached"
        assert [e.path for e in prune(older_than_days=0, dry_run=True).removed] == [idle.path]
        code, out, err = _main("cache", "prune", "--older-than", 0)
        assert code == 0 and not idle.path.exists() and used.path.is_dir(), err
        assert f"kept {used.path.name}: in use by a running process" in out
        assert "removed 1 entries" in err and "kept 1 in use" in err
        assert capture_with(**args).cached  # untouched: still intact
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    gone = prune(older_than_days=0)  # the reader has gone: nothing holds it now
    assert [e.path for e in gone.removed] == [used.path] and not used.path.exists()


def test_prune_in_the_reading_process_itself_removes_what_it_read(cache, corpus, tmp_path):
    from linrec.base.cache import prune

    capture = capture_with(save_tiny_model(tmp_path / "model"), corpus, **KW)
    assert [e.path for e in prune(older_than_days=0).removed] == [capture.path] and not capture.path.exists()


def test_prune_on_a_read_only_cache_removes_nothing_and_says_so(cache, corpus, tmp_path, monkeypatch):
    """As root a folder cannot be made read-only, so the file system's answer is planted: every unlink, rmdir and
    rename under the cache fails with EROFS, as on a read-only mount."""
    model = save_tiny_model(tmp_path / "model")
    entries = [capture_with(model, corpus, **{**KW, "seed": s}).path for s in (0, 1)]
    before = sorted(str(p.relative_to(cache)) for p in cache.rglob("*"))

    def read_only(real):
        def refuse(*args, **kwargs):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(args[0]))

        return refuse

    for name in ("unlink", "rmdir", "rename", "replace", "remove"):
        monkeypatch.setattr(os, name, read_only(getattr(os, name)))
    code, out, err = _main("cache", "prune", "--older-than", 0)
    monkeypatch.undo()
    assert sorted(str(p.relative_to(cache)) for p in cache.rglob("*")) == before and all(p.is_dir() for p in entries)
    assert code == 2 and "removed 2" not in err and "removed 0 entries" in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("linrec: error: could not remove 2 entries") and "Read-only file system" in last
    assert "writable" in last and "Traceback" not in err


def test_prune_does_not_claim_a_symbolic_link_it_leaves(cache, corpus, tmp_path):
    from linrec.base.cache import prune

    capture = capture_with(save_tiny_model(tmp_path / "model"), corpus, **KW)
    shared = tmp_path / "shared-entry"
    shutil.copytree(capture.path, shared)
    link = capture.path.parent / "linked-0123"
    link.symlink_to(shared, target_is_directory=True)
    code, out, err = _main("cache", "prune", "--older-than", 0)
    assert code == 0 and not capture.path.exists(), err
    assert link.is_symlink() and (shared / "meta.json").is_file()  # neither the link nor what it points at
    assert "removed 1 entries" in err and f"kept {link.name}: a symbolic link" in out
    assert [e.path for e in prune(older_than_days=0).removed] == []


@pytest.fixture
def saved_tiny(tiny_model_dir, tiny_corpus, cache):
    """get_capture arguments for a tiny llama saved to disk and a small local corpus."""
    return dict(
        model=tiny_model_dir, corpus=tiny_corpus(8000), seq_len=32, tokens=2048, sample_rows=500, progress=False
    )


# ---- the cache: listed, pruned by age and size, nothing else touched ------------------------------------------
def test_cache_is_listed_and_pruned_oldest_first(saved_tiny, cache, capsys):
    import os
    import time as _time

    from linrec.app.cli import main
    from linrec.base.cache import entries as cache_entries
    from linrec.base.cache import prune as prune_cache

    a = capture_with(**saved_tiny)
    b = capture_with(**{**saved_tiny, "seed": 1})
    c = capture_with(**{**saved_tiny, "seed": 2, "sample_rows": 0})
    now = _time.time()
    for cap, days in ((a, 10), (b, 5), (c, 1)):
        os.utime(cap.path, (now - days * 86400, now - days * 86400))
    (cache / "models").mkdir()
    keep = cache / "models" / "weights.bin"
    keep.write_bytes(b"x" * 1000)
    stale = cache / "captures" / ".m-dead.tmp-999999999-abcdef01"  # a killed run's leftover (no such pid)
    stale.mkdir()
    entries = cache_entries(("capture",))
    assert [e.path for e in entries] == [a.path, b.path, c.path]  # oldest first; the leftover is not an entry
    assert [(e.kind, e.path) for e in cache_entries() if e.kind == "model"] == [("model", keep)]  # listed too
    assert "2048 tokens × seq 32, 500 sampled rows" in entries[0].made_by
    assert entries[0].size == sum(p.stat().st_size for p in a.path.rglob("*") if p.is_file())
    assert main(["cache"]) == 0 and "4 entries (capture" in capsys.readouterr().out
    assert [e.path for e in prune_cache(older_than_days=7, dry_run=True).removed] == [a.path] and a.path.exists()
    gone = prune_cache(max_bytes=entries[2].size + 1).removed  # room for the newest only
    assert [e.path for e in gone] == [a.path, b.path]
    assert not a.path.exists() and not b.path.exists() and c.path.exists() and keep.exists() and not stale.exists()
    assert main(["cache", "prune", "--older-than", "0"]) == 0 and not c.path.exists()
    assert keep.read_bytes() == b"x" * 1000  # models, wheels and corpora are never pruned
    with pytest.raises(LinrecError, match="--older-than"):
        prune_cache()


def test_learning_curves_are_listed_and_pruned(saved_tiny, cache, capsys, caplog):
    import os
    import time as _time

    from linrec.app.cli import main
    from linrec.base.cache import entries as cache_entries
    from linrec.base.cache import prune as prune_cache
    from linrec.collect.curves import CurveConfig, get_curve

    cap = capture_with(**saved_tiny)
    config = CurveConfig(saved_tiny["model"], saved_tiny["corpus"], 32, (256, 512), 512, (0,))
    curve = get_curve(config, progress=False)
    entries = {e.kind: e for e in cache_entries()}
    assert entries["curve"].path == curve.path and entries["capture"].path == cap.path
    assert "learning curve of" in entries["curve"].made_by and "× 1 seeds" in entries["curve"].made_by
    assert main(["cache"]) == 0 and "2 entries" in capsys.readouterr().out
    old = _time.time() - 30 * 86400
    os.utime(curve.path, (old, old))
    assert [e.path for e in prune_cache(older_than_days=7).removed] == [curve.path] and not curve.path.exists()
    assert cap.path.exists()
    (curve.path).mkdir()  # a curve entry without its meta.json: warned and recomputed
    (curve.path / "curve.npz").write_bytes(b"x")
    caplog.clear()
    again = get_curve(config, progress=False)
    assert not again.cached and "meta.json is missing" in caplog.text


# ---- the cache's own guards, each seen to fail when its check is removed (issue 60) -------------------------------
VERSION = 7


def _entry_of(cache, key: str):
    from linrec.base.cache import entry_path

    return entry_path("capture", "model", key)


def _get(entry, config: dict, calls: list):
    """`get_or_compute` of a small entry made for `config` (one data file and its sealed meta.json): the meta read
    back, or the one computed; `calls` counts the computations."""
    from linrec.base.cache import get_or_compute
    from linrec.base.files import write_entry

    def compute(tmp):
        calls.append(config)
        (tmp / "data.bin").write_bytes(repr(config).encode())
        write_entry(tmp, {"version": VERSION, "config": config})
        return {"computed": True, **config}

    def load(directory, meta):
        return {"computed": False, **meta["config"]}

    return get_or_compute(entry, VERSION, load, compute, expect={"config": config})


def test_an_edited_meta_json_is_computed_again(cache, caplog):
    """A value edited in meta.json, its checksum left as it was: damaged, computed again (the seal's check)."""
    import json

    entry, calls = _entry_of(cache, "k1"), []
    _get(entry, {"seed": 0}, calls)
    meta = json.loads((entry / "meta.json").read_text())
    meta["note"] = "edited by hand"
    (entry / "meta.json").write_text(json.dumps(meta))
    got = _get(entry, {"seed": 0}, calls)
    assert got["computed"] and len(calls) == 2 and "meta.json checksum mismatch" in caplog.text
    assert not _get(entry, {"seed": 0}, calls)["computed"] and len(calls) == 2  # repaired for good


@pytest.mark.parametrize("how", ["copied", "renamed"])
def test_an_entry_under_another_requests_name_is_computed_again(cache, caplog, how):
    """An intact entry moved to the path of another request with the same stored configuration (what other weights
    under the same model path make: the key differs, the configuration does not): only the folder name it records
    tells, and it is computed again with a warning, never read."""
    entry, other, calls = _entry_of(cache, "k1"), _entry_of(cache, "k2"), []
    _get(entry, {"seed": 0}, calls)
    (shutil.copytree if how == "copied" else os.rename)(entry, other)
    got = _get(other, {"seed": 0}, calls)
    assert got["computed"] and len(calls) == 2
    assert f"was made for another request (it was written as {entry.name} and copied or renamed" in caplog.text
    assert not _get(other, {"seed": 0}, calls)["computed"]  # what replaced it is its own


def test_a_request_that_differs_in_one_field_is_computed_again(cache, caplog):
    """The same folder asked for with one setting changed (an entry of an older key scheme, a key that does not
    cover the field): the stored configuration tells, field by field."""
    entry, calls = _entry_of(cache, "k1"), []
    _get(entry, {"seed": 0, "tokens": 2048, "corpus": "wiki"}, calls)
    assert not _get(entry, {"seed": 0, "tokens": 2048, "corpus": "wiki"}, calls)["computed"]
    got = _get(entry, {"seed": 0, "tokens": 4096, "corpus": "wiki"}, calls)
    assert got["computed"] and got["tokens"] == 4096 and len(calls) == 2
    assert "its config differs: tokens 2048 there, 4096 asked" in caplog.text


def test_prune_at_exactly_its_size_limit_keeps_everything(cache):
    """--max-size exactly what the entries take: nothing goes; one byte less: the oldest goes, and no more."""
    from linrec.base.cache import entries, prune

    paths, calls = [_entry_of(cache, f"k{i}") for i in range(3)], []
    now = time.time()
    for i, p in enumerate(paths):
        _get(p, {"seed": i}, calls)
        os.utime(p, (now - (3 - i) * 86400, now - (3 - i) * 86400))  # k0 oldest
    total = sum(e.size for e in entries(("capture",)))
    assert prune(max_bytes=total).removed == [] and all(p.is_dir() for p in paths)
    assert [e.path for e in prune(max_bytes=total - 1).removed] == [paths[0]]
    assert not paths[0].exists() and paths[1].is_dir() and paths[2].is_dir()


def test_a_capture_held_out_by_document_is_listed_so(tmp_path):
    """`describe`: a capture entry says "documents held out" where its config's split is documents, and nothing of a
    split where it is the default (or the entry predates the setting)."""
    from linrec.base.cache import describe
    from linrec.base.files import seal

    config = {"model": "m", "corpus": "wiki", "tokens": 2048, "seq_len": 32, "sample_rows": 500}
    for split, words in (("documents", "500 sampled rows, documents held out"), ("windows", "500 sampled rows"),
                         (None, "500 sampled rows")):  # fmt: skip
        entry = tmp_path / f"m-{split}"
        entry.mkdir()
        given = config if split is None else {**config, "split": split}
        (entry / "meta.json").write_text(seal({"config": given, "model_label": "m"}))
        assert describe(entry, "capture") == f"m on wiki, 2048 tokens × seq 32, {words}"
