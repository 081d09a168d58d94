"""linrec.inputs.hf: a missing device named with the ones there are, and `LoadedModel.sites`, found once and equal to
a fresh search."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import linrec.inputs.hf as hf
import linrec.inputs.sites as sites_module
from linrec.base.errors import LinrecError
from linrec.inputs.models import load_model
from linrec.inputs.sites import find_ffn_sites
from linrec.inputs.surgery import AffineFFN, save_swapped


def _one_line(err: pytest.ExceptionInfo) -> str:
    msg = str(err.value)
    assert msg and "\n" not in msg
    return msg


def test_check_device_names_what_is_available():
    from linrec.inputs.hf import check_device

    assert check_device("cpu") == "cpu"
    assert check_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    for bad in ("cuda", "mps", "tpu", "nonsense", ""):
        with pytest.raises(LinrecError, match="available: cpu") as err:
            check_device(bad)
        _one_line(err)
    with pytest.raises(LinrecError, match=r"unknown device 'gpu' \(a device is cpu, cuda, cuda:N, mps or auto\)"):
        check_device("gpu")  # not a torch device at all: not "not available in this build"


# ---- the sites, found once -------------------------------------------------------------------------------------------
def _same_sites(have, want) -> None:
    """Two site lists name the same modules at the same paths."""
    assert [s.path for s in have] == [s.path for s in want]
    for a, b in zip(have, want, strict=True):
        assert (a.block, a.ffn_in, a.ffn_out, a.post_norm, a.pre_norm) == (b.block, b.ffn_in, b.ffn_out, b.post_norm,
                                                                           b.pre_norm)  # fmt: skip


def test_loaded_sites_are_found_once_and_are_what_a_fresh_search_finds(tiny_model_dir, monkeypatch):
    """Plain, first-blocks and swapped-save loads: `sites` is what `find_ffn_sites` finds on the loaded model, found
    at most once per model; the cut model's are its first N, a save's swapped blocks hold their affine maps."""
    calls = []

    def counting(model):
        calls.append(model)
        return find_ffn_sites(model)

    monkeypatch.setattr(sites_module, "find_ffn_sites", counting)
    monkeypatch.setattr(hf, "find_ffn_sites", counting)
    loaded = load_model(tiny_model_dir)
    assert loaded.sites is loaded.sites and len(calls) == 1
    _same_sites(loaded.sites, find_ffn_sites(loaded.model))

    calls.clear()
    cut = load_model(f"first:1:{tiny_model_dir}")
    assert len(cut.sites) == 1 and len(calls) == 1  # the full model's, once; the cut one's are their first
    _same_sites(cut.sites, find_ffn_sites(cut.model))

    out = save_swapped(loaded.model, loaded.tokenizer, {1: AffineFFN(32, 32)}, Path(tiny_model_dir).parent / "s")
    back = load_model(str(out))
    assert isinstance(back.sites[1].module, AffineFFN) and not isinstance(back.sites[0].module, AffineFFN)
    _same_sites(back.sites, find_ffn_sites(back.model))
