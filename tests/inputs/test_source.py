"""A model loaded once (issue 47): `linrec.inputs.source.ModelSource` parses a spec once and keys the caches exactly
as the string-dispatching code before it did; `model_identity` tracks a model's files (a cache inside the model
folder is not part of it) and is stable across processes."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
import torch
import transformers

import linrec
from helpers import make_tiny_model, save_tiny_model, tiny_tokenizer
from linrec.base.files import path_identity
from linrec.collect.config import CAPTURE_VERSION, KEY_AS_BEFORE, CaptureConfig
from linrec.collect.curves import CURVE_VERSION, CurveConfig
from linrec.inputs.corpora import corpus_identity
from linrec.inputs.models import model_identity
from linrec.inputs.source import KINDS, OFFLINE_MODELS, ModelSource
from linrec.inputs.surgery import SWAPS_FILE, AffineFFN, save_swapped, swapped_identity


def test_a_cache_inside_a_model_folder_is_still_not_part_of_the_model(tmp_path, monkeypatch):
    from linrec.inputs.models import model_identity

    model = save_tiny_model(tmp_path / "model")
    monkeypatch.setenv("LINREC_CACHE", str(tmp_path / "model" / "linrec-cache"))
    first = model_identity(model)  # writes remembered digests into the cache inside the folder
    (tmp_path / "model" / "linrec-cache" / "captures").mkdir(parents=True)
    (tmp_path / "model" / "linrec-cache" / "captures" / "x.bin").write_bytes(b"x")
    assert model_identity(model) == first


def _bump_mtime(path, seconds=5):
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + seconds * 1_000_000_000))


def test_model_identity_of_names():
    spec = OFFLINE_MODELS["smollm2-135m"]
    assert model_identity("smollm2-135m") == f"offline:smollm2-135m:{spec.sha256}"
    assert model_identity("gpt2") == "hub:gpt2"
    assert model_identity("gpt2") != model_identity("EleutherAI/pythia-160m")


def test_model_identity_tracks_directory_changes(tmp_path):
    (tmp_path / "config.json").write_text('{"a": 1}')
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"\x00" * 64)
    first = model_identity(str(tmp_path))
    assert first.startswith(f"path:{tmp_path.resolve()}:")
    assert model_identity(str(tmp_path)) == first  # deterministic

    weights.write_bytes(b"\x00" * 65)  # size changes
    second = model_identity(str(tmp_path))
    assert second != first

    weights.write_bytes(b"\x01" * 65)  # same size, new content, later mtime
    _bump_mtime(weights)
    third = model_identity(str(tmp_path))
    assert third not in (first, second)

    # a file moved into a subdirectory: same name, size and mtime, and the same place in sorted order
    (tmp_path / "n").mkdir()
    os.rename(weights, tmp_path / "n" / weights.name)
    assert model_identity(str(tmp_path)) != third

    (tmp_path / "extra.bin").write_bytes(b"x")  # a file added
    fourth = model_identity(str(tmp_path))
    (tmp_path / "extra.bin").unlink()
    assert fourth != model_identity(str(tmp_path))


def test_model_identity_tracks_a_single_file(tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + b"\x00" * 32)
    first = model_identity(str(gguf))
    gguf.write_bytes(b"GGUF" + b"\x01" * 32)
    _bump_mtime(gguf)
    assert model_identity(str(gguf)) != first


def test_model_identity_is_stable_across_processes(tmp_path):
    """A cache key must survive a restart: no dependence on Python's per-process string hash seed. One other process
    with a hash seed of its own, against this one's."""
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"\x00" * 16)
    code = "import sys; from linrec.inputs.models import model_identity; print(model_identity(sys.argv[1]))"
    seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"  # not this process's (random unless set)
    env = {**os.environ, "PYTHONHASHSEED": seed}
    other = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env)
    assert other.returncode == 0, other.stderr
    assert other.stdout.strip() == model_identity(str(tmp_path))


# ---- the keys, as before --------------------------------------------------------------------------------------------
def identity_before(spec: str) -> str:
    """`linrec.inputs.models.model_identity` as it was before `ModelSource` (commit cc5856c), its own dispatch on the
    string, for the specs below (well formed)."""
    if spec.startswith("first:"):
        n, _, base = spec[len("first:") :].partition(":")
        return f"first:{int(n)}:{identity_before(base)}"
    if spec.startswith("init:"):
        seed, _, base = spec[len("init:") :].partition(":")
        versions = f"transformers {transformers.__version__}:torch {torch.__version__}"
        return f"init:{int(seed)}:{identity_before(base)}:{versions}"
    if spec in OFFLINE_MODELS:
        return f"offline:{spec}:{OFFLINE_MODELS[spec].sha256}"
    path = Path(spec).expanduser()
    if path.is_dir() and (path / SWAPS_FILE).is_file():
        return swapped_identity(path)
    if path.exists():
        return path_identity(path)
    return f"hub:{spec}"


def capture_key_before(config: CaptureConfig) -> str:
    """`CaptureConfig.key` as it was before `ModelSource` (commit cc5856c)."""
    values = asdict(config)
    for name, value in KEY_AS_BEFORE.items():
        if values[name] == value:
            del values[name]
    ident = {
        **values,
        "model": identity_before(config.model),
        "corpus": corpus_identity(config.corpus),
        "version": CAPTURE_VERSION,
    }
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:20]


def curve_key_before(config: CurveConfig) -> str:
    """`CurveConfig.key` as it was before `ModelSource` (commit cc5856c)."""
    ident = {
        **asdict(config),
        "model": identity_before(config.model),
        "corpus": corpus_identity(config.corpus),
        "version": CURVE_VERSION,
    }
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:20]


@pytest.fixture
def every_kind(tmp_path, monkeypatch):
    """{spec: kind} with a spec of every kind of source, relative paths and nested init:/first: forms included."""
    local = save_tiny_model(tmp_path / "local")
    (tmp_path / "one.gguf").write_bytes(b"GGUF" + bytes(range(60)))
    (tmp_path / "ggufs").mkdir()
    (tmp_path / "ggufs" / "w.gguf").write_bytes(b"GGUF" + bytes(range(30)))
    save_swapped(make_tiny_model("llama"), tiny_tokenizer(), {0: AffineFFN(32, 32)}, tmp_path / "saved")  # d = 32
    odd = tmp_path / "odd"  # a folder holding a folder named like the swaps record: keyed as a plain folder
    save_tiny_model(odd)
    (odd / SWAPS_FILE).mkdir()
    (tmp_path / "weights.bin").write_bytes(b"not a model")
    monkeypatch.chdir(tmp_path)
    return {
        "smollm2-135m": "offline",
        "gemma3-270m": "offline",
        "minilm-l6": "offline",
        "gpt2": "hub",
        "EleutherAI/pythia-160m": "hub",
        "not a hub id!": "hub",
        "init:0:smollm2-135m": "init",
        "init:-1:gpt2": "init",
        "first:6:smollm2-135m": "first",
        f"first:1:{local}": "first",
        f"init:2:first:1:{local}": "init",
        local: "local",
        "local": "local",  # relative to the working directory
        "./local": "local",
        str(tmp_path / "one.gguf"): "gguf",
        "one.gguf": "gguf",
        str(tmp_path / "ggufs"): "gguf-dir",
        str(tmp_path / "saved"): "swapped",
        "saved": "swapped",
        str(odd): "swapped",
        "weights.bin": "file",
        str(tmp_path / "no-such-folder"): "missing",
        "./no-such-folder": "missing",
        "missing.gguf": "missing",
        "~/linrec-no-such-folder": "missing",
    }


def test_every_kind_of_source_keys_the_caches_as_before(every_kind):
    """Each spec's identity, capture key and curve key are the strings the code before `ModelSource` gave, so every
    cached capture, curve and saved swap is still found; the examples cover every kind."""
    assert {ModelSource.parse(s).kind for s in every_kind} == set(KINDS)
    for spec, kind in every_kind.items():
        source = ModelSource.parse(spec)
        assert source.kind == kind and source.spec == spec, spec
        want = identity_before(spec)
        assert source.identity() == want and model_identity(spec) == want and model_identity(source) == want, spec
        for config in (
            CaptureConfig(spec),
            CaptureConfig(spec, "web", seq_len=64, tokens=4096, seed=1, sample_rows=0, dtype="bfloat16", sample=2),
        ):
            assert config.key() == config.key(source) == capture_key_before(config), (spec, config)
        curve = CurveConfig(spec, seq_len=64, train_tokens=(256, 512), test_tokens=256)
        assert curve.key() == curve.key(source) == curve_key_before(curve), spec


def test_offline_captures_keep_the_keys_of_the_cached_entries():
    """Keys of entries in the project's cache when `ModelSource` came in (written down then, not recomputed): a
    change to how an offline name or a hub id is keyed would orphan them."""
    assert CaptureConfig("gemma3-270m").key() == "86849b77d5e09077d482"
    assert CaptureConfig("minilm-l6").key() == "8c22bec4ea508ba9db20"
    assert CaptureConfig("smollm2-135m").key() == "9bfff4cb79e33e32f08e"
    assert CaptureConfig("gpt2").key() == "80cd3b8ebbe4454db678"
    assert CaptureConfig("first:6:smollm2-135m").key() == "762a4cf3852b904abef4"
    assert CaptureConfig("gemma3-270m", seq_len=64, tokens=4096, sample_rows=0).key() == "79a80c64649dc758a0d8"


INIT_FORM = "random-init model spec must be init:SEED:MODEL (e.g. init:0:smollm2-135m), got "
FIRST_FORM = "a first-blocks spec is first:N:MODEL, N ≥ 1 (e.g. first:6:smollm2-135m), got "


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "model must be a non-empty string; offline models: smollm2-135m, gemma3-270m, minilm-l6"),
        ("   ", "model must be a non-empty string; offline models: smollm2-135m, gemma3-270m, minilm-l6"),
        ("init:x:smollm2-135m", INIT_FORM + "'init:x:smollm2-135m'"),
        ("init:0:", INIT_FORM + "'init:0:'"),
        ("first:0:gpt2", FIRST_FORM + "'first:0:gpt2'"),
        ("init:0:first:x:gpt2", FIRST_FORM + "'first:x:gpt2'"),
    ],
)
def test_a_malformed_spec_is_the_same_one_line_at_the_parse(spec, message):
    """The messages the loader and the key gave before, now given once, by the parse."""
    with pytest.raises(linrec.LinrecError) as err:
        ModelSource.parse(spec)
    assert str(err.value) == message


def test_first_n_at_exactly_the_block_count(tmp_path):
    """`first:N:MODEL` with N the model's block count is the whole stack (its shape read from the config: N blocks);
    N one more is refused in one line naming the range, N one fewer is N − 1 blocks. Planted: `self.number >
    shape.n_blocks` → `>=` in linrec.inputs.source.ModelSource.shape fails (first:N refused)."""
    local = save_tiny_model(tmp_path / "local")
    total = ModelSource.parse(local).shape().n_blocks
    assert total >= 2
    assert ModelSource.parse(f"first:{total}:{local}").shape().n_blocks == total
    assert ModelSource.parse(f"first:{total - 1}:{local}").shape().n_blocks == total - 1
    with pytest.raises(linrec.LinrecError, match=rf"first:{total + 1}: the model has {total} blocks; ask for 1 … "):
        ModelSource.parse(f"first:{total + 1}:{local}").shape()
