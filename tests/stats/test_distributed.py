"""Data-parallel capture (linrec.stats.distributed) on 2 gloo ranks equals a one-process capture: statistics merged with
Chan's update to 1e-12, R²_lin the same, held-out sums and the row sample identical; and `linrec measure` runs
under torchrun."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from helpers import TESTS, make_tiny_model, save_tiny_model, tiny_text, tiny_tokenizer, tiny_windows
from linrec.collect.capture import run_capture
from linrec.collect.config import CaptureConfig
from linrec.inputs.hf import LoadedModel
from linrec.stats.ceiling import fit_affine, score
from linrec.stats.moments import Moments


def _torchrun(*args, env=None, timeout=300):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    """One torchrun launch of 2 gloo ranks (tests/dist_worker.py): `linrec measure` on a tiny llama saved to disk,
    with a cache of its own, then both tiny models captured directly (the gemma3 one in groups of 2 blocks)."""
    out = tmp_path_factory.mktemp("dist")
    model, corpus = save_tiny_model(out / "model"), out / "text.txt"
    corpus.write_text(tiny_text(6000))
    args = ["--model", model, "--corpus", corpus, "--seq-len", "32", "--tokens", "2048"]
    # TMPDIR: torchrun's own log folder (torchelastic_*) goes there too, not into /tmp for good
    env = {"LINREC_CACHE": str(out / "cache-2"), "HF_HUB_OFFLINE": "1", "TMPDIR": str(out)}
    proc = _torchrun(
        TESTS / "dist_worker.py",
        out,
        "llama:0",
        "gemma3_text:2",
        "--",
        "measure",
        *args,
        "--out",
        out / "two.csv",
        env=env,
    )
    return SimpleNamespace(out=out, proc=proc, args=[str(a) for a in args], cache=out / "cache-2")


@pytest.mark.parametrize("kind", ["llama", "gemma3_text"])
def test_two_gloo_ranks_equal_one_process(two_ranks, tmp_path, kind):
    out, rows = two_ranks.out / f"{kind}.npz", two_ranks.out / kind
    tok = tiny_tokenizer()
    loaded = LoadedModel(model=make_tiny_model(kind), tokenizer=tok, name="tiny", identity="tiny", source="test")
    one = run_capture(
        loaded, tiny_windows(tok, tokens=2048), CaptureConfig("t", sample_rows=300), tmp_path / "one", 3, False
    )
    with np.load(out) as z:
        for b in range(one.n_blocks):
            merged = {}
            for s in ("train", "test"):
                for pre, st in (("", one.stats), ("first/", one.first)):
                    m = Moments.from_state({k: z[f"{pre}{s}/{b}/{k}"] for k in ("n", "mean", "M", "dims")})
                    ref = st[s][b]
                    assert m.n == ref.n
                    scale = np.abs(ref.M).max()
                    assert np.abs(m.M - ref.M).max() <= 1e-12 * scale  # Chan's merge: rounding only
                    assert np.abs(m.mean.numpy() - ref.mean.numpy()).max() <= 1e-12 * np.abs(ref.mean.numpy()).max()
                    merged[pre + s] = m
            fit = fit_affine(merged["train"], block=b)
            assert abs(score(fit, merged["test"]).r2 - one.score(b).r2) < 1e-12
            for k in ("n", "sse", "sy", "syy"):  # each window's sums come from one rank: the same up to rounding
                np.testing.assert_allclose(z[f"heldout/{b}/{k}"], getattr(one.heldout[b], k), rtol=1e-9, atol=1e-12)
            for a, ref in zip(
                (np.load(rows / "rows" / f"{xy}_{b:03d}.npy") for xy in "xy"), one.rows(b)
            ):  # every rank wrote its own rows into rank 0's files
                assert np.array_equal(a, ref)


def test_linrec_measure_under_torchrun_writes_the_one_process_table(two_ranks, tmp_path, monkeypatch, capsys):
    """Each rank runs the command line's `main` as `torchrun -m linrec measure` would (`python -m linrec` is that
    `main`: tests/app/test_cli.py starts it once); the one-process runs to compare with run in this process."""
    from linrec.app.cli import main

    proc, args = two_ranks.proc, two_ranks.args
    assert proc.stdout.count("r2_lin") == 1  # rank 0 alone prints the table
    assert proc.stderr.count("memory plan") == 1  # checked on every rank, printed by rank 0 alone
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("LINREC_CACHE", str(tmp_path / "cache-1"))
    assert main(["measure", *args, "--out", str(tmp_path / "one.csv")]) == 0
    two, one = pd.read_csv(two_ranks.out / "two.csv"), pd.read_csv(tmp_path / "one.csv")
    assert (two["n_train"] == one["n_train"]).all()
    np.testing.assert_allclose(two["r2_lin"], one["r2_lin"], atol=1e-12)
    np.testing.assert_allclose(two["r2_lo"], one["r2_lo"], atol=1e-9)
    # the entry rank 0 wrote is a valid cache entry: a one-process run reads it
    monkeypatch.setenv("LINREC_CACHE", str(two_ranks.cache))
    capsys.readouterr()
    assert main(["measure", *args, "--out", str(tmp_path / "again.csv")]) == 0
    assert "memory plan" not in capsys.readouterr().err  # read from the cache, not recomputed
    np.testing.assert_array_equal(pd.read_csv(tmp_path / "again.csv")["r2_lin"], two["r2_lin"])
