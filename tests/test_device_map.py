"""Models placed with a device map (accelerate): the capture follows each block's device, and its numbers are the
one-device numbers. This machine and CI have one CPU, so the placement itself is exercised with accelerate's disk
offload (weights on "meta" between calls, loaded by its hooks), and the per-device memory check with a fake plan."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from helpers import tiny_windows
from linrec.base.errors import LinrecError
from linrec.inputs.models import load_model
from linrec.inputs.sites import find_ffn_sites
from linrec.measure import plan as plan_mod
from linrec.measure.capture import run_capture
from linrec.measure.config import CaptureConfig
from linrec.measure.plan import block_groups, check_fits, memory_plan, plan_text, site_devices

SPLITS = ("train", "test")


def _same_capture(a, b) -> None:
    for s in SPLITS:
        for ma, mb in zip(a.stats[s], b.stats[s], strict=True):
            assert ma.n == mb.n
            np.testing.assert_allclose(ma.M, mb.M, rtol=1e-12, atol=1e-12 * np.abs(mb.M).max())
            np.testing.assert_allclose(ma.mean.numpy(), mb.mean.numpy(), rtol=1e-12, atol=1e-14)
    for ha, hb in zip(a.heldout, b.heldout, strict=True):
        np.testing.assert_allclose(ha.sse, hb.sse, rtol=1e-10)
    for i in range(a.n_blocks):
        assert a.score(i).r2 == pytest.approx(b.score(i).r2, abs=1e-12)


def _capture(loaded, tmp_path, name):
    w = tiny_windows(loaded.tokenizer, tokens=2048)
    cfg = CaptureConfig("t", sample_rows=0)
    return run_capture(loaded, w, cfg, None, progress=False), w


def test_disk_offloaded_blocks_give_the_one_device_capture(tiny_model_dir, tmp_path):
    """Layer 1 and the LM head offloaded to disk: their weights are on "meta" outside the forward, accelerate's hooks
    load them per call, and every statistic equals the plain model's to 1e-12."""
    plain = load_model(tiny_model_dir)
    dm = {"model.embed_tokens": "cpu", "model.layers.0": "cpu", "model.layers.1": "disk"}
    dm |= {"model.norm": "cpu", "model.rotary_emb": "cpu", "lm_head": "disk"}
    mapped = load_model(tiny_model_dir, device_map=dm)
    assert mapped.model.hf_device_map == dm
    offloaded = find_ffn_sites(mapped.model)[1].module
    assert {p.device.type for p in offloaded.parameters()} == {"meta"}  # the offload path really runs
    assert any("device_map over cpu, disk" in n for n in mapped.notes)
    a, w = _capture(mapped, tmp_path, "mapped")
    b, _ = _capture(plain, tmp_path, "plain")
    _same_capture(a, b)
    assert [d.type for d in site_devices(mapped, find_ffn_sites(mapped.model), w)] == ["cpu", "cpu"]
    for s in SPLITS:  # the statistics were allocated where the activations appeared
        assert {m._M.device.type for m in a.stats[s]} == {"cpu"}


def test_device_map_auto_places_a_model_on_the_devices_there_are(tiny_model_dir, tmp_path):
    mapped = load_model(tiny_model_dir, device_map="auto")
    want = {"cpu"} if not torch.cuda.is_available() else {str(i) for i in range(torch.cuda.device_count())}
    assert {str(v) for v in mapped.model.hf_device_map.values()} <= want | {"cpu"}
    a, _ = _capture(mapped, tmp_path, "auto")
    b, _ = _capture(load_model(tiny_model_dir), tmp_path, "plain")
    _same_capture(a, b)


def test_the_memory_check_is_per_device(monkeypatch):
    """Blocks 0–1 on cuda:0 and 2–3 on cuda:1: each device is checked against its own free memory, on a GPU for the
    largest block group that it holds at once."""
    devices = [torch.device("cuda", 0)] * 2 + [torch.device("cuda", 1)] * 2
    plan = memory_plan([(64, 64)] * 4, n_test_windows=8, devices=devices)
    per_block = int(plan["device_total"].iloc[0])
    assert plan["device"].tolist() == ["cuda:0", "cuda:0", "cuda:1", "cuda:1"]
    free = {"cuda:0": 10 * per_block, "cuda:1": int(1.5 * per_block)}
    monkeypatch.setattr(plan_mod, "free_bytes", lambda device: free[str(device)])
    text = plan_text(plan)
    assert "on cuda:0 (blocks 0–1)" in text and "on cuda:1 (blocks 2–3)" in text
    with pytest.raises(LinrecError, match="needed at once on cuda:1 does not fit; pass --blocks-per-pass") as err:
        check_fits(plan, block_groups(4, None))  # cuda:1 would hold blocks 2 and 3 at once
    assert "\n" not in str(err.value)
    check_fits(plan, block_groups(4, 1))  # one block per pass: cuda:1 holds one block's at a time
