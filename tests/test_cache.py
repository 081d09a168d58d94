"""Issue 51: nothing stale is served and nothing in use is pruned. A save or a trained checkpoint is identified by
every file's content; a cached entry is read only for the request it was made for; `linrec cache prune` never
removes an entry a running process reads and says exactly what it removed, and why not the rest; an interrupted
`linrec train --no-cache` leaves no temporary folder."""

import os
import shutil

import numpy as np
import pytest
import torch

from helpers import make_tiny_model, save_tiny_model, tiny_text, tiny_tokenizer
from linrec.analyses.recoverability import ceiling_table
from linrec.base.errors import LinrecError
from linrec.measure.capture import get_capture


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LINREC_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def corpus(tmp_path):
    p = tmp_path / "text.txt"
    p.write_text(tiny_text(6000))
    return str(p)


KW = dict(seq_len=32, tokens=2048, sample_rows=64, progress=False)


def _main(*args):
    """`linrec ARGS` in this process: (exit code, stdout, stderr)."""
    import contextlib
    import io

    from linrec.app.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def _flip_keeping_mtime(path, offset=None):
    """One byte of `path` changed in place, its size and mtime as they were (as `cp -p` would leave them)."""
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2 if offset is None else offset] ^= 0x01
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _save(directory, seed=0):
    """A tiny llama with block 0 swapped for a random affine map, saved by `save_swapped`."""
    from linrec.inputs.surgery import AffineFFN, save_swapped

    model = make_tiny_model("llama")
    d = model.config.hidden_size
    torch.manual_seed(seed)
    m = AffineFFN(d, d)
    m.weight.data.normal_(0, 0.2)
    return save_swapped(model, tiny_tokenizer(), {0: m}, directory)


# ---- case 3: a saved swapped model is identified by every file's content ----------------------------------------
def test_a_flipped_byte_in_a_measured_save_is_refused_not_served_from_the_cache(cache, corpus, tmp_path):
    save = _save(tmp_path / "save")
    first = get_capture(str(save), corpus, **KW)
    assert get_capture(str(save), corpus, **KW).cached
    weights = save / "model.safetensors"
    good = weights.read_bytes()
    _flip_keeping_mtime(weights)
    with pytest.raises(LinrecError, match="damaged") as err:
        get_capture(str(save), corpus, **KW)
    assert "model.safetensors" in str(err.value) and "save it again" in str(err.value)
    code, out, err = _main("measure", "--model", save, "--corpus", corpus, "--seq-len", 32, "--tokens", 2048)
    assert code == 2 and out == "" and err.count("\n") == 1 and "damaged" in err, err  # as --no-cache says it
    weights.write_bytes(good)  # put back: the same save, the same capture
    again = get_capture(str(save), corpus, **KW)
    assert again.cached and again.path == first.path


def test_a_save_rewritten_with_other_weights_is_a_new_capture(cache, corpus, tmp_path):
    save = _save(tmp_path / "save")
    old = ceiling_table(get_capture(str(save), corpus, **KW))
    _save(tmp_path / "other", seed=1)
    for name in ("model.safetensors", "linrec_swaps.json"):  # a whole save copied over the first, mtimes kept
        shutil.copy2(tmp_path / "other" / name, save / name)
    again = get_capture(str(save), corpus, **KW)
    fresh = ceiling_table(get_capture(str(save), corpus, **{**KW, "cache": False}))
    assert not again.cached and np.abs(ceiling_table(again)["r2_lin"] - fresh["r2_lin"]).max() <= 1e-12
    assert np.abs(fresh["r2_lin"] - old["r2_lin"]).max() > 1e-6


# ---- case 4: a checkpoint inside the cache is identified by its content too ------------------------------------
def test_a_changed_checkpoint_under_the_cache_is_a_new_capture(cache, corpus, tmp_path):
    from linrec.base.files import cache_root
    from linrec.inputs.models import model_identity

    step = save_tiny_model(cache_root() / "training" / "gelu-i0-d0-0123" / "step_000060")
    weights = cache_root() / "training" / "gelu-i0-d0-0123" / "step_000060" / "model.safetensors"
    first = model_identity(step)
    old = ceiling_table(get_capture(step, corpus, **KW))
    assert get_capture(step, corpus, **KW).cached
    good = weights.read_bytes()
    _flip_keeping_mtime(weights)  # one byte
    assert model_identity(step) != first
    weights.write_bytes(good)
    assert model_identity(step) == first
    st = weights.stat()
    make_tiny_model("llama", seed=5).save_pretrained(tmp_path / "other")  # other weights of the same size
    shutil.copyfile(tmp_path / "other" / "model.safetensors", weights)
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))
    again = get_capture(step, corpus, **KW)
    fresh = ceiling_table(get_capture(step, corpus, **{**KW, "cache": False}))
    assert not again.cached and np.abs(ceiling_table(again)["r2_lin"] - fresh["r2_lin"]).max() <= 1e-12
    assert np.abs(fresh["r2_lin"] - old["r2_lin"]).max() > 1e-6  # the weights did change the answer


# ---- case 8: a cached entry is read only for the request it was made for ---------------------------------------
def _request_entry(model, corpus, **settings):
    from linrec.base.cache import entry_path
    from linrec.measure.config import CaptureConfig

    return entry_path("capture", model, CaptureConfig(model, corpus, **settings).key())


@pytest.mark.parametrize("changed", ["seed", "weights", "seed-older-entry"])
def test_an_entry_copied_to_another_requests_name_is_not_served(cache, corpus, tmp_path, caplog, changed):
    """A capture copied (or renamed) to the name of another request (another seed, or the same spec with other
    weights) is computed again for that request, with a warning, never read as its answer; an entry written before
    entries recorded their own name is checked by the configuration it stores."""
    from linrec.base.files import seal, unseal

    model = save_tiny_model(tmp_path / "model")
    settings = {k: v for k, v in KW.items() if k != "progress"}
    first = get_capture(model, corpus, **KW)
    if changed == "seed-older-entry":
        meta = unseal(first.path / "meta.json")
        del meta["entry"]
        (first.path / "meta.json").write_text(seal(meta))
    if changed.startswith("seed"):
        asked = {**KW, "seed": 1}
    else:
        make_tiny_model("llama", seed=3).save_pretrained(tmp_path / "model")
        asked = KW
    target = _request_entry(model, corpus, **{**settings, **{k: v for k, v in asked.items() if k != "progress"}})
    assert target != first.path and not target.exists()
    shutil.copytree(first.path, target)
    got = get_capture(model, corpus, **asked)
    want = ceiling_table(get_capture(model, corpus, **{**asked, "cache": False}))
    assert not got.cached and "another request" in caplog.text
    assert np.abs(ceiling_table(got)["r2_lin"] - want["r2_lin"]).max() <= 1e-12
    assert get_capture(model, corpus, **asked).cached  # what replaced the copy is its own
