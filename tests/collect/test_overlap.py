"""linrec.collect.overlap: the capture's work beside the forward pass (a side stream; the fits on a thread of their own
while the test windows run, their rows kept until then) gives the in-line capture's numbers bit for bit; a model that
changes an activation in place after its hook is refused; a failed fit surfaces in the capture's own thread. Run on
the CPU with look-alikes standing in for the CUDA calls, so the same code paths run here."""

from __future__ import annotations

import contextlib

import numpy as np
import pandas as pd
import pytest

from helpers import tiny_tokenizer, tiny_windows
from linrec.analyses.recoverability import ceiling_table
from linrec.base.errors import LinrecError
from linrec.collect import capture as cap_mod
from linrec.collect import overlap
from linrec.collect.capture import run_capture
from linrec.collect.config import CaptureConfig
from linrec.inputs.hf import LoadedModel
from linrec.stats.heldout import HeldOutSums


class _Stream:
    """A CPU look-alike of a CUDA stream: every call a no-op (work on a CPU runs in order anyway)."""

    def wait_stream(self, other) -> None:
        pass

    def synchronize(self) -> None:
        pass


@pytest.fixture
def streams(monkeypatch):
    """The side stream and the fits' thread on the CPU; {'kept': [...]} counts the test batches kept per finish."""
    monkeypatch.setattr(overlap, "_KIND", "cpu")
    monkeypatch.setattr(overlap, "_free", lambda device: 1 << 40)
    monkeypatch.setattr(overlap, "_new_stream", lambda device: _Stream())
    monkeypatch.setattr(overlap, "_current", lambda device: _Stream())
    monkeypatch.setattr(overlap, "_on", lambda stream: contextlib.nullcontext())
    monkeypatch.setattr(overlap, "_keep", lambda t, stream: None)
    seen = {"kept": [], "threads": 0}
    finish, fit = overlap.Overlap.finish, overlap.Overlap.fit

    def counting_finish(self, heldout):
        seen["kept"].append(len(self.kept))
        return finish(self, heldout)

    def counting_fit(self, work):
        fit(self, work)
        seen["threads"] += self._thread is not None

    monkeypatch.setattr(overlap.Overlap, "finish", counting_finish)
    monkeypatch.setattr(overlap.Overlap, "fit", counting_fit)
    return seen


def _capture(tiny_model, kind="llama"):
    model, tok = tiny_model(kind), tiny_tokenizer()
    loaded = LoadedModel(model=model, tokenizer=tok, name="tiny", identity="tiny", source="test")
    return run_capture(loaded, tiny_windows(tok, tokens=2048), CaptureConfig("t", sample_rows=0), None, 5, False)


def _same(a, b) -> None:
    pd.testing.assert_frame_equal(ceiling_table(a), ceiling_table(b), check_exact=True)
    for block in range(a.n_blocks):
        for held_a, held_b in ((a.heldout[block], b.heldout[block]), (a.heldout_rest[block], b.heldout_rest[block])):
            for k in ("n", "sse", "sy", "syy", "shift"):
                assert np.array_equal(getattr(held_a, k), getattr(held_b, k)), (block, k)


@pytest.mark.parametrize("kind", ["llama", "gemma3_text"])
def test_beside_the_forward_pass_the_numbers_are_the_in_line_ones(tiny_model, streams, kind):
    """Fits on their own thread while the test windows run, every test batch kept and summed after: the table and
    the held-out sums are the in-line capture's bit for bit."""
    beside = _capture(tiny_model, kind)
    assert streams["threads"] == 1 and streams["kept"][-1] > 0  # the fits did run beside, rows were kept
    overlap.FITS_BESIDE, overlap.SIDE_STREAM = False, False
    try:
        in_line = _capture(tiny_model, kind)
    finally:
        overlap.FITS_BESIDE, overlap.SIDE_STREAM = True, True
    assert streams["threads"] == 1 and streams["kept"][-1] == 0
    _same(beside, in_line)


def test_rows_that_would_not_fit_are_summed_in_line(tiny_model, streams, monkeypatch):
    """Where the kept test rows would take over a quarter of the free memory, the fits run before the test windows."""
    monkeypatch.setattr(overlap, "_free", lambda device: 1000)
    _capture(tiny_model)
    assert streams["threads"] == 0 and streams["kept"] == [0]


def test_an_activation_changed_in_place_after_its_hook_is_refused(tiny_model, streams, monkeypatch):
    """The side stream reads a block's activations after the forward pass has moved on: a model that adds into an
    FFN's output afterwards (planted here after every hook) would be read changed, so it is a one-line error."""
    real = cap_mod.ffn_hooks

    def changing(sites, callback, **kw):
        def after(block, x, y):
            callback(block, x, y)
            y.add_(0.0)  # the version moves, as any in-place change moves it

        return real(sites, after, **kw)

    monkeypatch.setattr(cap_mod, "ffn_hooks", changing)
    with pytest.raises(LinrecError, match="in place") as err:
        _capture(tiny_model)
    assert "\n" not in str(err.value) and "SIDE_STREAM = False" in str(err.value)


def test_a_fit_that_fails_beside_fails_the_capture(tiny_model, streams, monkeypatch):
    """An error on the fits' thread is raised in the capture's own thread, not lost with the thread."""

    def failing(self, *a, **k):
        raise RuntimeError("planted failure of the fits")

    monkeypatch.setattr(HeldOutSums, "fit", failing)
    with pytest.raises(RuntimeError, match="planted failure"):
        _capture(tiny_model)
