"""linrec.collect.plan: the memory plan is what a capture holds, statistics that cannot fit are refused before any
pass (per device where blocks sit on several), and the disk a capture needs is checked before it writes."""

from __future__ import annotations

import pytest
import torch

from helpers import linrec_left_in as _ours
from helpers import single_line as _single_line
from helpers import tiny_tokenizer, tiny_windows
from linrec.base.errors import LinrecError
from linrec.collect import capture as cap_mod
from linrec.collect import plan as plan_mod
from linrec.collect.capture import run_capture
from linrec.collect.config import CaptureConfig
from linrec.collect.plan import block_groups, check_fits, memory_plan, plan_text
from linrec.inputs.hf import LoadedModel


def _loaded(model, tok, name="tiny"):
    return LoadedModel(model=model, tokenizer=tok, name=name, identity=name, source="test")


def test_memory_plan_is_what_a_capture_holds(tiny_model, tmp_path):
    """Each column of `memory_plan` equals the bytes of the tensors and files a finished capture holds."""
    from linrec.collect.plan import memory_plan

    model, tok = tiny_model("gemma3_text"), tiny_tokenizer()
    w = tiny_windows(tok, tokens=2048)
    c = run_capture(_loaded(model, tok), w, CaptureConfig("t", sample_rows=300), tmp_path / "c", progress=False)
    plan = memory_plan(c.meta["dims"], len(w.test), 300, n_windows=len(w.ids))
    nbytes = lambda m: m.mean.element_size() * m.mean.numel() + m._M.element_size() * m._M.numel()  # noqa: E731
    for b in range(c.n_blocks):
        row = plan.iloc[b]
        assert row["stats"] == sum(nbytes(c.stats[s][b]) for s in ("train", "test"))
        assert row["first_host"] == sum(
            c.first_rows[f"first/{s}/{b}/{a}"].nbytes for s in ("train", "test") for a in "xy"
        )
        fit = c.fit(b)
        for h in (c.heldout[b], c.heldout_rest[b]):  # all positions, and every position but the first
            sums = sum(getattr(h, k).nbytes for k in h.KEYS if k != "windows")  # n, Σe², Σ(y − c), Σ(y − c)², c
            assert row["heldout"] == 2 * (sums + fit.W.nbytes + fit.b.nbytes)
        assert row["rows_disk"] == sum(a.nbytes for a in c.rows(b))
        assert row["device_total"] == row["stats"] + row["heldout"]


def test_statistics_that_cannot_fit_are_refused_before_any_pass(tiny_model, monkeypatch):
    model, tok = tiny_model("llama"), tiny_tokenizer()
    w = tiny_windows(tok, tokens=1024)
    monkeypatch.setattr(plan_mod, "free_bytes", lambda device: 1000)
    monkeypatch.setattr(cap_mod, "HeldOutSums", None)  # built after the check: reaching it would be a TypeError
    with pytest.raises(LinrecError, match="does not fit; run on a machine with more memory") as err:
        run_capture(_loaded(model, tok), w, CaptureConfig("t", sample_rows=0), None, progress=False)
    assert "\n" not in str(err.value)


def _cached(cache) -> list[str]:
    kinds = ("captures", "curves", "training")
    return sorted(str(p.relative_to(cache)) for kind in kinds for p in (cache / kind).glob("*"))


def test_a_capture_checks_free_space_before_writing(cli, own_cache, tiny_args, monkeypatch):
    """A full disk was a SIGBUS with no message in the middle of a capture (its row sample is memory-mapped): the
    capture's disk need (`linrec.collect.plan.disk_bytes`) is checked against the free space before any pass."""
    import shutil
    from collections import namedtuple

    from linrec.base.errors import LinrecError
    from linrec.collect.plan import check_disk, disk_bytes, memory_plan

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**6, 10**6 - 4096, 4096))
    code, _, err = cli("measure", *tiny_args)
    _single_line(code, err, "GiB are free", "$LINREC_CACHE", "--sample-rows")
    code, _, err = cli("probe", *tiny_args, "--rank", "4", "--no-cache")
    _single_line(code, err, "GiB are free", "TMPDIR")
    assert _cached(own_cache[0]) == [] and _ours(own_cache[1]) == []
    plan = memory_plan([(32, 32)] * 2, 10, sample_rows=1000)
    assert disk_bytes(plan) >= plan["rows_disk"].sum() == 2 * 1000 * 64 * 4
    check_disk(plan, own_cache[1], free=disk_bytes(plan))
    with pytest.raises(LinrecError, match="lower --sample-rows"):
        check_disk(plan, own_cache[1], free=disk_bytes(plan) - 1)
    check_disk(plan, None, free=0)  # writes nothing


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


def test_the_row_sample_is_sized_by_the_rows_the_windows_make(
    tiny_model, tmp_path, cli, own_cache, tiny_args, monkeypatch
):
    """Issue 60: --sample-rows beyond the rows that --tokens makes keeps them all, and the free-space check sizes
    the sample by those rows; it sized it by the rows asked for and refused a valid request ("the capture writes
    about 17166137.76 GiB")."""
    monkeypatch.setenv("LINREC_PROGRESS", "1")  # the cost line on stderr, as on a terminal (a runner sets "0")
    model, tok = tiny_model("llama"), tiny_tokenizer()
    w = tiny_windows(tok, tokens=2048)
    asked = 999_999_999_999
    c = run_capture(_loaded(model, tok), w, CaptureConfig("t", sample_rows=asked), tmp_path / "c", progress=False)
    n_rows = w.ids.numel()
    assert len(c.row_index()) == n_rows
    plan = memory_plan(c.meta["dims"], len(w.test), asked, n_windows=len(w.ids), n_rows=n_rows)
    assert plan["rows_disk"].sum() == sum(a.nbytes for b in range(c.n_blocks) for a in c.rows(b))
    assert memory_plan([(32, 32)], 4, sample_rows=100, n_rows=n_rows)["rows_disk"].sum() == 100 * 64 * 4
    code, out, err = cli("measure", *tiny_args, "--sample-rows", str(asked))
    assert code == 0 and "are free there" not in err, err
    assert f"{n_rows:,} rows kept" in err  # what the capture keeps, not what was asked


def test_the_scaling_pages_worked_example_is_what_memory_plan_says():
    """docs/scaling.md's 8B example (32 blocks of 4096 → 4096, 160 windows, 32 held out, 30k sampled rows) quotes
    `memory_plan`'s numbers: per block, all blocks, 8 blocks, first-position rows and the row sample (it quoted
    1.13 / 36.1 / 9.0 GiB after the plan had grown to 1.26 / 40.2 / 10.0)."""
    import re

    from linrec.base.files import project_root

    text = " ".join((project_root(__file__) / "docs" / "scaling.md").read_text().split())
    plan = memory_plan([(4096, 4096)] * 32, 32, sample_rows=30_000, n_windows=160)
    gib = 2**30
    quoted = {
        "per block": plan["device_total"].iloc[0] / gib,
        "for all 32": plan["device_total"].sum() / gib,
        "of first-position rows": plan["first_host"].sum() / gib,
        "of row sample": plan["rows_disk"].sum() / gib,
    }
    quoted["8 blocks"] = plan["device_total"].iloc[:8].sum() / gib
    for words, value in quoted.items():
        pattern = r"holds 8 blocks \((\d+\.\d+) GiB\)" if words == "8 blocks" else rf"(\d+\.\d+) GiB {words}"
        found = re.search(pattern, text)
        assert found, f"docs/scaling.md no longer quotes the GiB {words}"
        number = found.group(1)  # as quoted: the plan's value to the decimals the page gives
        assert float(number) == round(value, len(number.split(".")[1])), (words, number, value)
