"""linrec.collect.capture end to end on tiny models: statistics equal the hooked rows, planted maps, the cache,
held-out sums, several corpora; nothing stale served (a save or checkpoint identified by every file's content, an
entry read only for the request it was made for, issue 51); models placed with a device map give the one-device
capture; an uncached capture keeps its rows while it lives."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

from helpers import CAPTURE_KW as KW
from helpers import capture_with, make_tiny_model, save_tiny_model, tiny_text, tiny_tokenizer, tiny_windows
from helpers import linrec_left_in as _ours
from helpers import main_captured as _main
from helpers import save_affine_swap as _save
from linrec.analyses.recoverability import ceiling_table
from linrec.base.cache import folder
from linrec.base.errors import LinrecError
from linrec.collect import capture as cap_mod
from linrec.collect.capture import get_captures, run_capture
from linrec.collect.config import CAPTURE_VERSION, CaptureConfig
from linrec.collect.plan import probe_sites
from linrec.inputs.hf import LoadedModel
from linrec.inputs.models import load_model
from linrec.inputs.sites import ffn_hooks, find_ffn_sites
from linrec.stats.ceiling import fit_affine, r2_rows, score
from linrec.stats.heldout import bootstrap_r2
from linrec.stats.moments import Moments


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LINREC_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def saved_tiny(tiny_model_dir, tiny_corpus, cache):
    """`capture_with` arguments for a tiny llama saved to disk and a small local corpus."""
    return dict(
        model=tiny_model_dir, corpus=tiny_corpus(8000), seq_len=32, tokens=2048, sample_rows=500, progress=False
    )


def _loaded(model, tok, name="tiny"):
    return LoadedModel(model=model, tokenizer=tok, name=name, identity=name, source="test")


def _hooked_rows(model, ids):
    """Every (x, y) row per block, by hooking the model directly: the independent reference."""
    rows = {}
    with (
        ffn_hooks(
            find_ffn_sites(model),
            lambda i, x, y: rows.setdefault(i, []).append(
                (x.reshape(-1, x.shape[-1]).double(), y.reshape(-1, y.shape[-1]).double())
            ),
        ),
        torch.no_grad(),
    ):
        model(input_ids=ids)
    return {i: (torch.cat([a for a, _ in v]).numpy(), torch.cat([b for _, b in v]).numpy()) for i, v in rows.items()}


@pytest.mark.parametrize("kind", ["llama", "gpt2", "gemma3_text", "bert"])
def test_capture_statistics_equal_hooked_rows(tiny_model, kind):
    model = tiny_model(kind)
    tok = tiny_tokenizer()
    w = tiny_windows(tok, tokens=2048)
    c = run_capture(
        _loaded(model, tok), w, CaptureConfig("tiny", tokens=2048, sample_rows=0), batch_size=5, progress=False
    )
    for split in ("train", "test"):
        ref = _hooked_rows(model, w.split(split))
        for i, (x, y) in ref.items():
            m = c.stats[split][i]
            z = np.c_[x, y]
            M = (z - z.mean(0)).T @ (z - z.mean(0))
            assert m.n == len(x)
            assert np.abs(m.M - M).max() <= 1e-12 * np.abs(M).max()
            z0 = z[:: w.seq_len]  # rows are window-major: each window's first position
            f = c.first[split][i]
            assert f.n == len(z0) == len(w.split(split))
            assert np.abs(f.M - (z0 - z0.mean(0)).T @ (z0 - z0.mean(0))).max() <= 1e-12 * np.abs(M).max()


def test_block_replaced_by_affine_map_has_r2_one(tiny_model):
    model = tiny_model("llama")
    torch.manual_seed(0)
    lin = torch.nn.Linear(32, 32)  # the planted FFN of block 1: exactly affine
    model.model.layers[1].mlp = lin
    tok = tiny_tokenizer()
    c = run_capture(_loaded(model, tok), tiny_windows(tok), CaptureConfig("tiny", sample_rows=0), progress=False)
    table = ceiling_table(c)
    assert abs(table.loc[1, "r2_lin"] - 1) < 1e-9
    assert table.loc[0, "r2_lin"] < 0.999  # the untouched SwiGLU block is not affine
    fit = fit_affine(c.stats["train"][1])
    assert np.allclose(fit.W, lin.weight.detach().double().numpy().T, atol=1e-4)


def test_closed_form_on_statistics_equals_lstsq_on_stored_rows(tiny_model, cache, tmp_path):
    """The row sample keeps every row here, so lstsq on the stored rows is an independent reference."""
    model = tiny_model("qwen2")
    tok = tiny_tokenizer()
    model_dir = tmp_path / "m"
    model.save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    corpus = tmp_path / "text.txt"
    corpus.write_text(tiny_text(8000))
    c = capture_with(str(model_dir), str(corpus), seq_len=32, tokens=3200, sample_rows=10_000, progress=False)
    assert len(c.row_index()) == 3200  # all rows kept
    table = ceiling_table(c)
    for i in range(c.n_blocks):
        xtr, ytr = c.rows(i, "train")
        xte, yte = c.rows(i, "test")
        A = np.c_[xtr, np.ones(len(xtr))].astype(np.float64)
        coef = np.linalg.lstsq(A, ytr.astype(np.float64), rcond=None)[0]
        ref = r2_rows(yte, np.c_[xte, np.ones(len(xte))] @ coef)
        assert abs(table.loc[i, "r2_lin"] - ref) < 1e-9
        assert abs(table.loc[i, "r2_train"] - r2_rows(ytr, A @ coef)) < 1e-9  # in-sample, same map
        # the windows' first positions left out of fit and score, against lstsq on the other stored rows
        pos = {s: c.row_index()[c.row_index()[:, 2] == k, 1] for k, s in enumerate(("train", "test"))}
        keep_tr, keep_te = pos["train"] > 0, pos["test"] > 0
        coef = np.linalg.lstsq(A[keep_tr], ytr[keep_tr].astype(np.float64), rcond=None)[0]
        ref = r2_rows(yte[keep_te], np.c_[xte[keep_te], np.ones(keep_te.sum())] @ coef)
        assert abs(table.loc[i, "r2_ex_first"] - ref) < 1e-9
        sst = lambda y: ((y.astype(np.float64) - y.astype(np.float64).mean(0)) ** 2).sum()  # noqa: E731
        assert abs(table.loc[i, "first_var_share"] - (1 - sst(yte[keep_te]) / sst(yte))) < 1e-9
        assert c.stats["train"][i].n == len(xtr)


def test_cache_hit_miss_and_truncation(saved_tiny):
    args = saved_tiny
    first = capture_with(**args)
    assert not first.cached
    again = capture_with(**args)
    assert again.cached and again.path == first.path
    assert np.array_equal(again.stats["test"][1].M, first.stats["test"][1].M)
    other = capture_with(**{**args, "seed": 1})
    assert not other.cached and other.path != first.path
    assert not capture_with(**{**args, "tokens": 1024}).cached
    # truncate a file: the entry is detected as damaged and rebuilt, not read
    victim = first.path / "rows" / "x_001.npy"
    victim.write_bytes(victim.read_bytes()[:100])
    rebuilt = capture_with(**args)
    assert not rebuilt.cached
    assert np.array_equal(rebuilt.stats["test"][1].M, first.stats["test"][1].M)
    assert capture_with(**args).cached
    # a flipped byte in the statistics fails the checksum
    stats = first.path / "stats.npz"
    raw = bytearray(stats.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    stats.write_bytes(bytes(raw))
    assert not capture_with(**args).cached


def test_killed_run_leaves_no_valid_entry(saved_tiny, cache, monkeypatch):
    args = saved_tiny

    def killed(*a, **k):
        raise KeyboardInterrupt  # as if the user pressed Ctrl-C mid-capture

    real_write = cap_mod._write
    monkeypatch.setattr(cap_mod, "_write", killed)
    with pytest.raises(KeyboardInterrupt):
        capture_with(**args)
    entries = list((cache / "captures").iterdir())
    assert not [e for e in entries if not e.name.startswith(".")]  # nothing under a real key
    monkeypatch.setattr(cap_mod, "_write", real_write)
    fresh = capture_with(**args)
    assert not fresh.cached and json.loads((fresh.path / "meta.json").read_text())["complete"]


def test_nan_activations_are_a_one_line_error(tiny_model):
    model = tiny_model("llama")
    with torch.no_grad():
        model.model.layers[0].mlp.down_proj.weight[0, 0] = float("nan")
    tok = tiny_tokenizer()
    with pytest.raises(LinrecError, match="NaN") as err:
        run_capture(
            _loaded(model, tok), tiny_windows(tok, tokens=512), CaptureConfig("tiny", sample_rows=0), progress=False
        )
    assert "\n" not in str(err.value)


def test_row_sample_is_bounded_seeded_and_exact(tiny_model, tmp_path):
    model = tiny_model("gpt2")
    tok = tiny_tokenizer()
    w = tiny_windows(tok, tokens=2048)
    cfg = CaptureConfig("tiny", tokens=2048, sample_rows=300, seed=7)
    c = run_capture(_loaded(model, tok), w, cfg, out_dir=tmp_path / "a", progress=False)
    idx = c.row_index()
    assert len(idx) == 300 and set(idx[:, 2]) == {0, 1}
    ref = _hooked_rows(model, w.ids)  # all windows in natural order
    x, y = c.rows(1)
    flat = idx[:, 0] * w.seq_len + idx[:, 1]
    assert np.array_equal(x, ref[1][0][flat].astype(np.float32))
    assert np.array_equal(y, ref[1][1][flat].astype(np.float32))
    assert np.array_equal(idx[:, 2], np.isin(idx[:, 0], w.test).astype(int))
    again = run_capture(_loaded(model, tok), w, cfg, out_dir=tmp_path / "b", progress=False)
    assert np.array_equal(again.row_index(), idx)


# ---- held-out per-window sums (bootstrap input) ------------------------------------------
def _sums_from_rows(c, block, rest=False):
    """Reference: per test window n, Σe², Σ(y − shift), Σ(y − shift)² from the stored rows (all rows kept); with
    `rest`, over positions 1 … only, against the map fitted on the train rows at those positions."""
    idx = c.row_index()
    test = (idx[:, 2] == 1) & ((idx[:, 1] > 0) if rest else True)
    x, y = (a[test].astype(np.float64) for a in c.rows(block))
    win = idx[test, 0]
    train = c.without_first(block)[0] if rest else c.stats["train"][block]
    fit = fit_affine(train)
    shift = train.mean_y
    e2, yc = (y - fit.predict(x)) ** 2, y - shift
    windows = np.unique(win)
    per = lambda a: np.stack([a[win == w].sum(0) for w in windows])  # noqa: E731
    return windows, np.array([(win == w).sum() for w in windows]), per(e2), per(yc), per(yc**2)


def test_heldout_sums_equal_sums_from_stored_rows(tiny_model, cache, tmp_path):
    model = tiny_model("llama")
    tok = tiny_tokenizer()
    model.save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    corpus = tmp_path / "text.txt"
    corpus.write_text(tiny_text(8000))
    args = dict(
        model=str(tmp_path / "m"),
        corpus=str(corpus),
        seq_len=32,
        tokens=3200,
        sample_rows=10_000,
        batch_size=3,
        progress=False,
    )
    c = capture_with(**args)
    assert len(c.row_index()) == 3200  # every row kept
    assert len(c.heldout) == c.n_blocks and c.meta["heldout_errors"] == {}
    table = ceiling_table(c)
    for i in range(c.n_blocks):
        h = c.heldout[i]
        windows, n, sse, sy, syy = _sums_from_rows(c, i)
        assert np.array_equal(h.windows, windows) and np.array_equal(h.n, n) and n.sum() == c.stats["test"][i].n
        assert np.array_equal(h.shift, c.stats["train"][i].mean_y)
        for got, ref in ((h.sse, sse), (h.sy, sy), (h.syy, syy)):
            assert got.shape == ref.shape == (len(windows), c.stats["test"][i].d_out)
            assert np.abs(got - ref).max() <= 1e-10 * np.abs(ref).max()
        # the bootstrap's point estimate is the ceiling's R²_lin
        assert abs(h.r2() - score(fit_affine(c.stats["train"][i]), c.stats["test"][i]).r2) < 1e-9
        row = table.loc[i]
        assert row.n_test_windows == len(windows) == c.meta["n_windows"]["test"]
        assert row.r2_lo < row.r2_lin < row.r2_hi
        # positions 1 …, against the map fitted without the first position: its R² is r2_ex_first, its interval
        # comes from these sums
        r = c.heldout_rest[i]
        windows, n, sse, sy, syy = _sums_from_rows(c, i, rest=True)
        assert np.array_equal(r.n, n) and n.sum() == c.stats["test"][i].n - c.meta["n_windows"]["test"]
        for got, ref in ((r.sse, sse), (r.sy, sy), (r.syy, syy)):
            assert np.abs(got - ref).max() <= 1e-10 * np.abs(ref).max()
        assert abs(r.r2() - row.r2_ex_first) < 1e-9 and row.r2_ex_first_lo < row.r2_ex_first < row.r2_ex_first_hi
    again = capture_with(**args)  # the sums survive the cache
    assert again.cached
    for h, g in zip(c.heldout + c.heldout_rest, again.heldout + again.heldout_rest):
        assert all(np.array_equal(getattr(h, k), getattr(g, k)) for k in h.KEYS)
    assert ceiling_table(again).equals(table)
    loose = capture_with(**args, cache=False)  # and are the same without it
    assert all(np.array_equal(h.sse, g.sse) for h, g in zip(c.heldout, loose.heldout))
    # its row sample (what a probe reads) lives outside the cache while it does, the same rows
    assert loose.path is not None and loose.path.parent != c.path.parent and not loose.cached
    assert np.array_equal(loose.rows(0)[0], c.rows(0)[0]) and np.array_equal(loose.row_index(), c.row_index())


def test_heldout_with_no_test_windows_and_with_singular_train_stats(tiny_model, saved_tiny):
    model = tiny_model("llama")
    tok = tiny_tokenizer()
    w = tiny_windows(tok, tokens=512)
    w.train, w.test = np.arange(len(w.ids)), np.zeros(0, dtype=np.int64)
    c = run_capture(_loaded(model, tok), w, CaptureConfig("tiny", tokens=512, sample_rows=0), progress=False)
    assert [h.n_windows for h in c.heldout] == [0, 0] and c.meta["fit_seconds"] == 0
    with pytest.raises(LinrecError, match="test split is empty"):
        bootstrap_r2(c.heldout[0])
    # 3 train windows of 8 rows: fewer rows than the 33 parameters per output of every block: refused before the
    # pass (the fix named), nothing cached, every time; the fit's own one-line error where statistics that few reach it
    args = {**saved_tiny, "seq_len": 8, "tokens": 32}
    before = sorted(p.name for p in (folder("capture")).iterdir()) if folder("capture").is_dir() else []
    for _ in range(2):
        with pytest.raises(LinrecError, match="24 train rows for a 32-wide block: no affine map.*raise --tokens"):
            capture_with(**args)
    assert (sorted(p.name for p in folder("capture").iterdir()) if folder("capture").is_dir() else []) == before
    few = Moments.zeros(32, 32)
    few.update(torch.randn(24, 32, dtype=torch.float64), torch.randn(24, 32, dtype=torch.float64))
    with pytest.raises(LinrecError, match="block 0: singular statistics: 24 train rows.*raise --tokens"):
        fit_affine(few, block=0)


def test_get_captures_loads_the_model_once_and_not_at_all_when_cached(saved_tiny, tmp_path, monkeypatch):
    loads = []
    real = cap_mod.load_model

    def counting(*a, **k):
        loads.append(a)
        return real(*a, **k)

    monkeypatch.setattr(cap_mod, "load_model", counting)
    args = {k: v for k, v in saved_tiny.items() if k not in ("corpus", "progress")}
    corpora = []
    for s in range(3):
        (tmp_path / f"c{s}.txt").write_text(tiny_text(3000, seed=s))
        corpora.append(str(tmp_path / f"c{s}.txt"))
    config = {c: CaptureConfig(corpus=c, **args) for c in corpora}  # one request per corpus

    def captures(names, cache=True):
        return get_captures([config[c] for c in names], cache=cache, progress=False)

    first = captures(corpora[:2])
    assert len(loads) == 1 and list(first) == corpora[:2] and not any(c.cached for c in first.values())
    again = captures(corpora[:2])
    assert len(loads) == 1 and all(c.cached for c in again.values())
    assert all(np.array_equal(again[k].stats["test"][0].M, first[k].stats["test"][0].M) for k in first)
    mixed = captures([corpora[1], corpora[2], corpora[1]])  # one cached, one new; a request repeated, taken once
    assert len(loads) == 2 and list(mixed) == [corpora[1], corpora[2]]
    assert mixed[corpora[1]].cached and not mixed[corpora[2]].cached
    assert capture_with(corpus=corpora[2], progress=False, **args).cached  # the same cache entries as get_capture's
    loose = captures(corpora[:2], cache=False)  # no cache: computed, one load
    assert len(loads) == 3 and not any(c.cached for c in loose.values())
    with pytest.raises(LinrecError, match="no corpora given"):
        get_captures([])
    with pytest.raises(ValueError, match="one model"):
        get_captures([config[corpora[0]], replace(config[corpora[1]], model="init:0:" + args["model"])])
    with pytest.raises(ValueError, match="one per corpus"):  # two settings for one corpus: which would it return?
        get_captures([config[corpora[0]], replace(config[corpora[0]], seed=1)])
    assert len(loads) == 3  # each refused before any load


def test_get_captures_takes_row_counts_per_corpus(saved_tiny, tmp_path):
    args = {k: v for k, v in saved_tiny.items() if k not in ("corpus", "sample_rows", "progress")}
    corpora = []
    for s in range(2):
        (tmp_path / f"d{s}.txt").write_text(tiny_text(3000, seed=10 + s))
        corpora.append(str(tmp_path / f"d{s}.txt"))
    configs = [CaptureConfig(corpus=c, sample_rows=n, **args) for c, n in zip(corpora, (64, 0))]
    caps = get_captures(configs, progress=False)
    assert caps[corpora[0]].config.sample_rows == 64 and caps[corpora[1]].config.sample_rows == 0
    assert (caps[corpora[0]].path / "rows").is_dir() and not (caps[corpora[1]].path / "rows").exists()
    assert capture_with(corpus=corpora[1], sample_rows=0, progress=False, **args).cached  # a plain capture's entry


# ---- a damaged entry is never used: every file checksummed, every subcommand recomputes ----------------------
def _flip(path, rng):
    data = bytearray(path.read_bytes())
    data[int(rng.integers(len(data)))] ^= int(rng.integers(1, 256))
    path.write_bytes(bytes(data))


def _entry(cache_dir):
    (entry,) = [p for p in (cache_dir / "captures").iterdir() if not p.name.startswith(".")]
    return entry


@pytest.mark.parametrize("content", ["null", "[]", '"text"', "{}", '{"version": "4", "complete": true}'])
def test_meta_json_that_parses_but_is_wrong_is_recomputed(saved_tiny, cache, content, caplog):
    first = capture_with(**saved_tiny)
    (first.path / "meta.json").write_text(content)
    again = capture_with(**saved_tiny)
    assert not again.cached and "damaged" in caplog.text
    assert np.array_equal(again.stats["train"][1].M, first.stats["train"][1].M)
    assert capture_with(**saved_tiny).cached  # repaired for good


def test_every_file_flipped_in_turn_is_found_by_every_subcommand(
    tmp_path, tiny_model_dir, tiny_corpus, monkeypatch, capsys, caplog
):
    """Property: one random byte flipped in any file of an entry → each subcommand recomputes, with the same table."""

    from linrec.app.cli import main

    monkeypatch.setenv("LINREC_CACHE", str(tmp_path / "cache"))
    args = ["--model", tiny_model_dir, "--corpus", tiny_corpus(4000), "--seq-len", "32", "--tokens", "1024"]
    args += ["--sample-rows", "1000"]  # one entry for all four (measure alone would keep no rows)
    commands = {"measure": [], "spectrum": [], "probe": ["--rank", "2"], "swap": ["--blocks", "0"]}

    def run(cmd):
        out = tmp_path / f"{cmd}.csv"
        caplog.clear()
        assert main([cmd, *args, *commands[cmd], "--out", str(out)]) == 0, capsys.readouterr().err
        capsys.readouterr()
        return pd.read_csv(out)

    clean = {cmd: run(cmd) for cmd in commands}
    entry = _entry(tmp_path / "cache")
    files = sorted(p.relative_to(entry) for p in entry.rglob("*") if p.is_file())
    assert {"meta.json", "stats.npz", "rows/index.npy", "rows/x_000.npy", "rows/y_001.npy"} <= {str(f) for f in files}
    rng = np.random.default_rng(0)
    for f in files:
        for cmd in commands:
            _flip(entry / f, rng)
            table = run(cmd)
            assert "is damaged" in caplog.text, (f, cmd)  # the message the stats path prints
            num = [c for c in table.select_dtypes("number").columns if "seconds" not in c]
            pd.testing.assert_frame_equal(table[num], clean[cmd][num], check_exact=False, rtol=0, atol=1e-12)
            assert _entry(tmp_path / "cache") == entry
    caplog.clear()
    run("measure")
    assert "damaged" not in caplog.text  # the last recompute left a valid entry


def test_batch_size_changes_r2_by_rounding_only(saved_tiny, monkeypatch, tmp_path):
    """The batch size is not in the cache key: R²_lin must not depend on it beyond 1e-12."""
    tables = [ceiling_table(capture_with(**saved_tiny, batch_size=b, cache=False)) for b in (1, 3, 8, 64)]
    for t in tables[1:]:
        assert (t["r2_lin"] - tables[0]["r2_lin"]).abs().max() <= 1e-12
        assert (t["r2_ex_first"] - tables[0]["r2_ex_first"]).abs().max() <= 1e-12


@pytest.mark.parametrize("kind", ["llama", "gemma3_text"])
def test_half_precision_models_keep_float64_statistics_and_the_float32_r2(tiny_model, kind):
    """A bfloat16 or float16 copy of a model, captured into float64 statistics, gives its float32 twin's R²_lin within a
    measured tolerance. Measured on the tiny llama, gpt2 and gemma3 (8k tokens): |ΔR²| ≤ 3.3e-4 in bfloat16 and
    ≤ 4.4e-5 in float16 (its 10-bit mantissa beats bfloat16's 7); the bounds below are about 6× and 10× those."""
    tok = tiny_tokenizer()
    w = tiny_windows(tok, tokens=8192)
    r2 = {}
    for dtype, bound in (("float32", None), ("bfloat16", 2e-3), ("float16", 5e-4)):
        model = tiny_model(kind).to(getattr(torch, dtype))
        c = run_capture(_loaded(model, tok), w, CaptureConfig("t", dtype=dtype, sample_rows=0), None, progress=False)
        assert c.meta["dtype"] == dtype and c.stats["train"][0].mean.dtype == torch.float64
        r2[dtype] = np.array([c.score(i).r2 for i in range(c.n_blocks)])
        if bound is not None:
            assert np.abs(r2[dtype] - r2["float32"]).max() <= bound
            assert np.abs(r2[dtype] - r2["float32"]).max() > 0  # the model really ran in another precision


def test_a_loaded_model_in_another_dtype_is_one_line(tiny_model_dir, tiny_corpus, cache):
    from linrec.inputs.models import load_model

    loaded = load_model(tiny_model_dir, dtype=torch.bfloat16)
    with pytest.raises(LinrecError, match="runs in bfloat16 but the capture asks for float32"):
        capture_with(tiny_model_dir, tiny_corpus(3000), seq_len=32, tokens=1024, loaded=loaded, progress=False)
    c = capture_with(
        tiny_model_dir, tiny_corpus(3000), seq_len=32, tokens=1024, loaded=loaded, dtype="bfloat16", progress=False
    )
    assert c.meta["dtype"] == "bfloat16"


@pytest.mark.parametrize("kind, per_pass", [("gemma3_text", 2), ("llama", 1)])
def test_block_groups_equal_one_pass_bit_for_bit(tiny_model, tmp_path, kind, per_pass):
    """Capturing in groups of blocks (one pass each, the forward stopped after the group's last block) gives the
    one-pass statistics, held-out sums and row sample exactly: each block sees the same batches in the same order."""
    model, tok = tiny_model(kind), tiny_tokenizer()
    w = tiny_windows(tok, tokens=2048)
    cfg = CaptureConfig("t", sample_rows=300)
    one = run_capture(_loaded(model, tok), w, cfg, tmp_path / "one", batch_size=5, progress=False)
    grouped = run_capture(
        _loaded(model, tok), w, cfg, tmp_path / "grouped", batch_size=5, progress=False, blocks_per_pass=per_pass
    )
    for b in range(one.n_blocks):
        for split in ("train", "test"):
            for a, g in ((one.stats, grouped.stats), (one.first, grouped.first)):
                assert a[split][b].n == g[split][b].n
                assert np.array_equal(a[split][b].M, g[split][b].M)
                assert np.array_equal(a[split][b].mean_y, g[split][b].mean_y)
        for k in ("n", "sse", "sy", "syy", "shift"):
            assert np.array_equal(getattr(one.heldout[b], k), getattr(grouped.heldout[b], k))
        for xy_one, xy_grouped in zip(one.rows(b), grouped.rows(b)):
            assert np.array_equal(xy_one, xy_grouped)
    with pytest.raises(LinrecError, match="blocks_per_pass must be at least 1"):
        run_capture(_loaded(model, tok), w, cfg, None, progress=False, blocks_per_pass=0)


def test_moment_matrices_are_stored_as_upper_triangles_and_read_back_exactly(tiny_model, tmp_path):
    """The cache keeps each symmetric moment matrix as its upper triangle (half the bytes); reading rebuilds it
    bit for bit, first-position moments included."""
    tok = tiny_tokenizer()
    loaded = LoadedModel(model=tiny_model("llama"), tokenizer=tok, name="tiny", identity="tiny", source="test")
    cfg = CaptureConfig("tiny", tokens=1024, seq_len=32, sample_rows=0)
    (tmp_path / "entry").mkdir()
    cap = run_capture(loaded, tiny_windows(tok, 1024, 32), cfg, tmp_path / "entry", progress=False)
    cap_mod._write(cap, tmp_path / "entry")
    with np.load(tmp_path / "entry" / "stats.npz") as z:
        d = cap.stats["train"][0].d_in + cap.stats["train"][0].d_out
        assert "train/0/M" not in z.files and z["train/0/Mu"].shape == (d * (d + 1) // 2,)
    from linrec.base.cache import read

    back = read(tmp_path / "entry", CAPTURE_VERSION, lambda d, meta: cap_mod._load(d, meta, cfg))
    for s in ("train", "test"):
        for got, want in ((back.stats[s], cap.stats[s]), (back.first[s], cap.first[s])):
            for g, w in zip(got, want):
                assert g.n == w.n and np.array_equal(g.M, w.M) and np.array_equal(g.mean.numpy(), w.mean.numpy())


# ---- issue 30: a changed local model is a new capture; every damaged file warns; every entry is listed ----------
def test_new_weights_under_the_same_name_size_and_mtime_are_a_new_capture(saved_tiny, tiny_model, tmp_path):
    """Rewrite model.safetensors with other weights of the same size and restore its mtime (cp -p, rsync -a): the
    capture must be the new weights', equal to a --no-cache run, not the cached one of the old weights."""
    import os
    import shutil

    from linrec.base.files import cache_root

    old = ceiling_table(capture_with(**saved_tiny))
    weights = os.path.join(saved_tiny["model"], "model.safetensors")
    st = os.stat(weights)
    other = tmp_path / "other"
    tiny_model("llama", seed=7).save_pretrained(other)
    assert os.path.getsize(other / "model.safetensors") == st.st_size
    shutil.copyfile(other / "model.safetensors", weights)
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(weights).st_mtime_ns == st.st_mtime_ns and os.stat(weights).st_size == st.st_size
    again = capture_with(**saved_tiny)
    assert not again.cached
    fresh = ceiling_table(capture_with(**saved_tiny, cache=False))
    assert np.abs(ceiling_table(again)["r2_lin"] - fresh["r2_lin"]).max() <= 1e-12
    assert np.abs(fresh["r2_lin"] - old["r2_lin"]).max() > 1e-3  # the weights did change the answer
    # the digest is remembered: a rerun reads one small record per file instead of hashing it again
    records = list((cache_root() / "digests").glob("*.json"))
    assert any(json.loads(r.read_text())["path"] == os.path.realpath(weights) for r in records)
    assert capture_with(**saved_tiny).cached


def test_a_deleted_meta_json_warns_like_any_damaged_file(saved_tiny, caplog):
    first = capture_with(**saved_tiny)
    (first.path / "meta.json").unlink()
    caplog.clear()
    again = capture_with(**saved_tiny)
    assert not again.cached and "meta.json is missing" in caplog.text and "damaged" in caplog.text
    assert np.array_equal(again.stats["train"][1].M, first.stats["train"][1].M)


def test_replicate_captures_are_each_models_disjoint_samples(tiny_model_dir, tiny_corpus):
    """One capture per (model, sample), in that order, each on its own stretch of the corpus (its windows are not
    sample 0's), moments only."""
    from linrec.collect.capture import replicate_captures

    corpus = tiny_corpus(20000)
    kw = dict(seq_len=32, tokens=1024)
    reps = replicate_captures([CaptureConfig(tiny_model_dir, corpus, **kw)], [2, 1])
    assert list(reps) == [(tiny_model_dir, 2), (tiny_model_dir, 1)]
    base = capture_with(tiny_model_dir, corpus, sample_rows=0, progress=False, **kw)
    for (_, k), cap in reps.items():
        assert cap.config.sample == k and cap.config.sample_rows == 0
        assert cap.stats["train"][0].n == base.stats["train"][0].n
        assert not np.allclose(cap.fit(0).W, base.fit(0).W)  # other text, another map


@pytest.fixture
def corpus(tmp_path):
    p = tmp_path / "text.txt"
    p.write_text(tiny_text(6000))
    return str(p)


def _flip_keeping_mtime(path, offset=None):
    """One byte of `path` changed in place, its size and mtime as they were (as `cp -p` would leave them)."""
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2 if offset is None else offset] ^= 0x01
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


# ---- case 3: a saved swapped model is identified by every file's content ----------------------------------------
def test_a_flipped_byte_in_a_measured_save_is_refused_not_served_from_the_cache(cache, corpus, tmp_path):
    save = _save(tmp_path / "save")
    first = capture_with(str(save), corpus, **KW)
    assert capture_with(str(save), corpus, **KW).cached
    weights = save / "model.safetensors"
    good = weights.read_bytes()
    _flip_keeping_mtime(weights)
    with pytest.raises(LinrecError, match="damaged") as err:
        capture_with(str(save), corpus, **KW)
    assert "model.safetensors" in str(err.value) and "save it again" in str(err.value)
    code, out, err = _main("measure", "--model", save, "--corpus", corpus, "--seq-len", 32, "--tokens", 2048)
    assert code == 2 and out == "" and err.count("\n") == 1 and "damaged" in err, err  # as --no-cache says it
    weights.write_bytes(good)  # put back: the same save, the same capture
    again = capture_with(str(save), corpus, **KW)
    assert again.cached and again.path == first.path


def test_a_save_rewritten_with_other_weights_is_a_new_capture(cache, corpus, tmp_path):
    save = _save(tmp_path / "save")
    old = ceiling_table(capture_with(str(save), corpus, **KW))
    _save(tmp_path / "other", seed=1)
    for name in ("model.safetensors", "linrec_swaps.json"):  # a whole save copied over the first, mtimes kept
        shutil.copy2(tmp_path / "other" / name, save / name)
    again = capture_with(str(save), corpus, **KW)
    fresh = ceiling_table(capture_with(str(save), corpus, **{**KW, "cache": False}))
    assert not again.cached and np.abs(ceiling_table(again)["r2_lin"] - fresh["r2_lin"]).max() <= 1e-12
    assert np.abs(fresh["r2_lin"] - old["r2_lin"]).max() > 1e-6


# ---- case 4: a checkpoint inside the cache is identified by its content too ------------------------------------
def test_a_changed_checkpoint_under_the_cache_is_a_new_capture(cache, corpus, tmp_path):
    from linrec.base.files import cache_root
    from linrec.inputs.models import model_identity

    step = save_tiny_model(cache_root() / "training" / "gelu-i0-d0-0123" / "step_000060")
    weights = cache_root() / "training" / "gelu-i0-d0-0123" / "step_000060" / "model.safetensors"
    first = model_identity(step)
    old = ceiling_table(capture_with(step, corpus, **KW))
    assert capture_with(step, corpus, **KW).cached
    good = weights.read_bytes()
    _flip_keeping_mtime(weights)  # one byte
    assert model_identity(step) != first
    weights.write_bytes(good)
    assert model_identity(step) == first
    st = weights.stat()
    make_tiny_model("llama", seed=5).save_pretrained(tmp_path / "other")  # other weights of the same size
    shutil.copyfile(tmp_path / "other" / "model.safetensors", weights)
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))
    again = capture_with(step, corpus, **KW)
    fresh = ceiling_table(capture_with(step, corpus, **{**KW, "cache": False}))
    assert not again.cached and np.abs(ceiling_table(again)["r2_lin"] - fresh["r2_lin"]).max() <= 1e-12
    assert np.abs(fresh["r2_lin"] - old["r2_lin"]).max() > 1e-6  # the weights did change the answer


# ---- case 8: a cached entry is read only for the request it was made for ---------------------------------------
def _request_entry(model, corpus, **settings):
    from linrec.base.cache import entry_path
    from linrec.collect.config import CaptureConfig

    return entry_path("capture", model, CaptureConfig(model, corpus, **settings).key())


@pytest.mark.parametrize("changed", ["seed", "weights", "seed-older-entry"])
def test_an_entry_copied_to_another_requests_name_is_not_served(cache, corpus, tmp_path, caplog, changed):
    """A capture copied (or renamed) to the name of another request (another seed, or the same spec with other
    weights) is computed again for that request, with a warning, never read as its answer; an entry written before
    entries recorded their own name is checked by the configuration it stores."""
    from linrec.base.files import seal, unseal

    model = save_tiny_model(tmp_path / "model")
    settings = {k: v for k, v in KW.items() if k != "progress"}
    first = capture_with(model, corpus, **KW)
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
    got = capture_with(model, corpus, **asked)
    want = ceiling_table(capture_with(model, corpus, **{**asked, "cache": False}))
    assert not got.cached and "another request" in caplog.text
    assert np.abs(ceiling_table(got)["r2_lin"] - want["r2_lin"]).max() <= 1e-12
    assert capture_with(model, corpus, **asked).cached  # what replaced the copy is its own


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
    assert [d.type for _, d in probe_sites(mapped, find_ffn_sites(mapped.model), w)] == ["cpu", "cpu"]
    for s in SPLITS:  # the statistics were allocated where the activations appeared
        assert {m._M.device.type for m in a.stats[s]} == {"cpu"}


def test_device_map_auto_places_a_model_on_the_devices_there_are(tiny_model_dir, tmp_path):
    mapped = load_model(tiny_model_dir, device_map="auto")
    want = {"cpu"} if not torch.cuda.is_available() else {str(i) for i in range(torch.cuda.device_count())}
    assert {str(v) for v in mapped.model.hf_device_map.values()} <= want | {"cpu"}
    a, _ = _capture(mapped, tmp_path, "auto")
    b, _ = _capture(load_model(tiny_model_dir), tmp_path, "plain")
    _same_capture(a, b)


def test_an_uncached_capture_keeps_its_rows_while_it_lives(tiny_model_dir, own_cache, tmp_path):
    import gc

    from helpers import capture_with

    _, scratch = own_cache
    corpus = tmp_path / "c.txt"
    corpus.write_text(tiny_text(6000))
    kw = dict(seq_len=32, tokens=2048, sample_rows=300, cache=False, progress=False)
    cap = capture_with(tiny_model_dir, str(corpus), **kw)
    x, y = cap.rows(0)
    assert x.shape == (300, 32) and y.shape == (300, 32) and len(cap.row_index()) == 300
    assert [p[: len(f"linrec-rows-{os.getpid()}-")] for p in _ours(scratch)] == [f"linrec-rows-{os.getpid()}-"]
    del cap, x, y
    gc.collect()
    assert _ours(scratch) == []


# ---- the accelerator's paths, run on the CPU (issue 63) -------------------------------------------------------------
def _accelerated(monkeypatch):
    """Every path a GPU takes (statistics, first rows, row sample, fits and scores kept where the activations are),
    here on the CPU: the one switch those paths read."""
    from linrec.stats import moments

    monkeypatch.setattr(moments, "accelerated", lambda device: True)


def _capture_pair(tiny_model, tmp_path, monkeypatch, kind="llama"):
    model, tok = tiny_model(kind), tiny_tokenizer()
    w = tiny_windows(tok, tokens=2048)
    cfg = CaptureConfig("t", sample_rows=300)
    host = run_capture(_loaded(model, tok), w, cfg, tmp_path / "host", batch_size=5, progress=False)
    with monkeypatch.context() as m:
        _accelerated(m)
        dev = run_capture(_loaded(model, tok), w, cfg, tmp_path / "dev", batch_size=5, progress=False)
        dev_table = ceiling_table(dev)
    return host, dev, dev_table


@pytest.mark.parametrize("kind", ["llama", "gemma3_text"])
def test_the_accelerator_paths_agree_with_the_host_paths(tiny_model, tmp_path, monkeypatch, kind):
    """Fits, scores, leave-outs and held-out sums solved in torch where the statistics live give the host's numbers
    to rounding; the rows the sample keeps are the same bits (gemma3: a dead input feature, zero weights there)."""
    host, dev, dev_table = _capture_pair(tiny_model, tmp_path, monkeypatch, kind)
    host_table = ceiling_table(host)
    numeric = host_table.select_dtypes("number").columns.drop(["cond_gram", "cond_scaled"])
    assert np.allclose(dev_table[numeric], host_table[numeric], rtol=1e-9, atol=1e-10, equal_nan=True)
    assert np.allclose(np.log(dev_table.cond_gram), np.log(host_table.cond_gram), atol=1e-6)
    assert np.allclose(np.log(dev_table.cond_scaled), np.log(host_table.cond_scaled), atol=1e-6)
    assert {f.solver for f in dev._fits.values()} == {"cholesky"}  # the guarded solve took every block's map here
    for b in range(host.n_blocks):
        for k in ("n", "sse", "sy", "syy", "shift"):
            a, d = getattr(host.heldout[b], k), getattr(dev.heldout[b], k)
            assert np.allclose(a, d, rtol=1e-9, atol=1e-12 * np.abs(a).max()), (b, k)
        for a, d in zip(host.rows(b), dev.rows(b)):
            assert np.array_equal(a, d)
        for s in ("train", "test"):
            assert np.array_equal(host.first_rows[f"first/{s}/{b}/x"], dev.first_rows[f"first/{s}/{b}/x"])


def test_no_host_copy_or_sync_in_the_capture_hot_loop(tiny_model, tmp_path, monkeypatch):
    """On an accelerator every per-batch update stays there: while the hooks run, nothing is copied to the host or
    read back as a Python number (each of those stops the forward pass until the device catches up). Counted on
    the CPU by running the accelerator's paths and wrapping the host-bound tensor methods."""
    counts: dict[str, int] = {}
    inside = {"hook": False}

    def counting(name):
        original = getattr(torch.Tensor, name)

        def method(self, *a, **k):
            if inside["hook"]:
                counts[name] = counts.get(name, 0) + 1
            return original(self, *a, **k)

        return method

    real_hooks = cap_mod.ffn_hooks

    def hooks(sites, callback, **kw):
        def watched(*args):
            inside["hook"] = True
            try:
                callback(*args)
            finally:
                inside["hook"] = False

        return real_hooks(sites, watched, **kw)

    model, tok = tiny_model("llama"), tiny_tokenizer()
    w = tiny_windows(tok, tokens=2048)
    _accelerated(monkeypatch)
    monkeypatch.setattr(cap_mod, "ffn_hooks", hooks)
    for name in ("cpu", "numpy", "item", "tolist", "__bool__", "__float__", "__int__"):
        monkeypatch.setattr(torch.Tensor, name, counting(name))
    run_capture(
        _loaded(model, tok), w, CaptureConfig("t", sample_rows=300), tmp_path / "c", batch_size=5, progress=False
    )
    assert counts == {}, f"host work inside the capture's hooks: {counts}"
    assert sum(1 for _ in w.train) > 5  # several batches ran through the watched hooks


def test_the_ceiling_reuses_the_captures_own_maps_bit_for_bit(tiny_model, tmp_path):
    """A fresh capture hands its held-out maps (all positions, and without the first) to the ceiling instead of
    solving them again; the table is the one the statistics alone give, bit for bit (as a cached capture's)."""
    model, tok = tiny_model("llama"), tiny_tokenizer()
    c = run_capture(
        _loaded(model, tok), tiny_windows(tok), CaptureConfig("t", sample_rows=0), batch_size=5, progress=False
    )
    assert c._fits and c._rest_fits  # the capture kept them
    reused = ceiling_table(c)
    c._fits.clear(), c._rest_fits.clear(), c._scores.clear()
    fresh = ceiling_table(c)
    pd.testing.assert_frame_equal(reused, fresh, check_exact=True)


# ---- issue 60: a full disk while a capture writes is one line naming where; nothing outlives a failure ----------
def _last_line(code, err, *needles):
    """Exit 2 and a last stderr line of linrec's naming every needle (a capture says its plan and cost first)."""
    assert code == 2 and "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("linrec: error: ") and "a bug" not in last and "unexpected" not in last, last
    for n in needles:
        assert n in last, last


def test_a_full_disk_while_a_capture_writes_is_one_line_naming_where(cli, own_cache, tiny_args, monkeypatch):
    """The entry's statistics (np.savez) and an uncached probe's row sample (np.save of its index) meet a full disk:
    one line naming the entry (or the TMPDIR folder) and where else to write, exit 2, and no folder left behind."""
    import errno

    from linrec.collect import rows as rows_mod

    cache, scratch = own_cache

    def full(path, *args, **kwargs):
        with open(path, "wb") as f:
            f.write(b"PK")
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(cap_mod.np, "savez", full)
        code, _, err = cli("measure", *tiny_args)
    _last_line(code, err, f"No space left on device: {cache / 'captures'}/", "$LINREC_CACHE")
    assert list((cache / "captures").iterdir()) == []  # no entry, no staging folder
    monkeypatch.setattr(rows_mod.np, "save", full)
    code, _, err = cli("probe", *tiny_args, "--rank", "4", "--no-cache")
    _last_line(code, err, f"No space left on device: {scratch}/linrec-rows-{os.getpid()}-", "TMPDIR")
    assert _ours(scratch) == []


def test_an_edited_meta_json_is_not_trusted(saved_tiny, caplog):
    """meta.json edited by hand (a block's held-out fit marked failed; its checksum left as it was): the entry is
    damaged, computed again, and never read with the edit."""
    first = capture_with(**saved_tiny)
    meta = json.loads((first.path / "meta.json").read_text())
    meta["heldout_errors"] = {"0": "edited"}
    (first.path / "meta.json").write_text(json.dumps(meta, indent=1))
    again = capture_with(**saved_tiny)
    assert not again.cached and "meta.json checksum mismatch" in caplog.text
    assert again.heldout[0] is not None and again.meta["heldout_errors"] == {}


def test_a_killed_uncached_capture_leaves_a_folder_the_next_run_removes(tiny_model_dir, own_cache, tmp_path):
    """SIGKILL in the middle of an uncached capture (`probe --no-cache`), after its row sample is on disk: nothing
    can clean up then, so the folder carries the process id (linrec-rows-PID-*) and the next linrec run, finding
    that process gone, removes it (issue 60: it stayed in TMPDIR for ever)."""
    import signal

    _, scratch = own_cache
    corpus = tmp_path / "c.txt"
    corpus.write_text(tiny_text(6000))
    pid = os.fork()
    if pid == 0:  # the child: capture, and be killed once the rows are written
        try:
            torch.set_num_threads(1)
            cap_mod.RowSampler.close = lambda self: os.kill(os.getpid(), signal.SIGKILL)
            capture_with(tiny_model_dir, str(corpus), **{**KW, "sample_rows": 300, "cache": False})
        finally:
            os._exit(70)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    (left,) = _ours(scratch)
    assert left.startswith(f"linrec-rows-{pid}-") and (scratch / left / "rows" / "x_000.npy").is_file()
    code, _, err = _main("cache")
    assert code == 0 and _ours(scratch) == [], err
