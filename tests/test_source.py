"""A model loaded once (issue 47): `linrec.inputs.source.ModelSource` parses a spec once and keys the caches exactly
as the string-dispatching code before it did; `LoadedModel.sites` finds a model's FFN sites once and hands them to
every stage; along `linrec swap` (and `linrec measure`) the spec is parsed once and the sites are found once."""

import hashlib
import importlib
import json
import pkgutil
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
import torch
import transformers

import linrec
import linrec.inputs.hf as hf
import linrec.inputs.sites as sites_module
from helpers import make_tiny_model, save_tiny_model, tiny_text, tiny_tokenizer
from linrec.base.files import path_identity
from linrec.inputs.corpora import corpus_identity
from linrec.inputs.models import load_model, model_identity
from linrec.inputs.sites import find_ffn_sites
from linrec.inputs.source import KINDS, OFFLINE_MODELS, ModelSource
from linrec.inputs.surgery import SWAPS_FILE, AffineFFN, save_swapped, swapped, swapped_identity
from linrec.measure.config import CAPTURE_VERSION, KEY_AS_BEFORE, CaptureConfig
from linrec.measure.curves import CURVE_VERSION, CurveConfig


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


def test_a_source_must_be_the_configs_own():
    with pytest.raises(ValueError, match="not that of this config"):
        CaptureConfig("gpt2").key(ModelSource.parse("smollm2-135m"))


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


def test_a_swap_inside_a_swap_puts_the_outer_one_back_with_sites_found_before_both(tiny_model_dir):
    """`swapped` with the sites found at load restores what each path held on entry (the outer swap), not the FFN
    the site was found with."""
    loaded = load_model(tiny_model_dir)
    ffn, outer, inner = loaded.sites[0].module, AffineFFN(32, 32), AffineFFN(32, 32)
    with swapped(loaded.model, {0: outer}, loaded.sites):
        with swapped(loaded.model, {0: inner}, loaded.sites):
            assert loaded.model.get_submodule(loaded.sites[0].path) is inner
        assert loaded.model.get_submodule(loaded.sites[0].path) is outer
    assert loaded.model.get_submodule(loaded.sites[0].path) is ffn and loaded.sites[0].module is ffn


# ---- along the command line ------------------------------------------------------------------------------------------
@pytest.fixture
def counted(monkeypatch):
    """{"parse": [spec, …], "find_ffn_sites": [model class, …]}: every parse of a spec and every search for FFN sites
    from here on, wherever a module imported the function from (every linrec module is imported first)."""
    for info in pkgutil.walk_packages(linrec.__path__, "linrec."):
        if not info.name.endswith("__main__"):  # `python -m linrec` runs the command line on import
            importlib.import_module(info.name)
    calls = {"parse": [], "find_ffn_sites": []}
    parse, find = ModelSource.parse.__func__, sites_module.find_ffn_sites

    def counting_parse(cls, spec):
        calls["parse"].append(spec)
        return parse(cls, spec)

    def counting_find(model):
        calls["find_ffn_sites"].append(type(model).__name__)
        return find(model)

    monkeypatch.setattr(ModelSource, "parse", classmethod(counting_parse))
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("linrec") and getattr(module, "find_ffn_sites", None) is find:
            monkeypatch.setattr(module, "find_ffn_sites", counting_find)
    return calls


@pytest.fixture
def cli_args(tmp_path, tiny_model_dir):
    corpus = tmp_path / "text.txt"
    corpus.write_text(tiny_text(6000))
    return ["--corpus", str(corpus), "--seq-len", "32", "--tokens", "2048"]


def _once(cli, calls, *args, sites: int = 1) -> None:
    for v in calls.values():
        v.clear()
    code, _, err = cli(*args)
    assert code == 0, err
    assert len(calls["parse"]) == 1, calls["parse"]
    assert len(calls["find_ffn_sites"]) == sites, calls["find_ffn_sites"]


@pytest.mark.parametrize(
    "how",
    [["--blocks", "0", "--save", "SAVE"], ["--budget-ppl", "1e9", "--screening-windows", "2"], ["--route", "0.5"]],
    ids=["blocks-save", "budget", "route"],
)
def test_swap_parses_the_model_once_and_finds_its_sites_once(cli, counted, cli_args, tiny_model_dir, tmp_path, how):
    """`linrec swap` on the tiny model, its capture computed, then read from the cache: one parse of --model, one
    search for its FFN sites, each time (before `ModelSource` and `LoadedModel.sites`: 4 parses, 7 to 16 searches)."""
    how = [str(tmp_path / "saved") if a == "SAVE" else a for a in how]
    _once(cli, counted, "swap", "--model", tiny_model_dir, *cli_args, *how)
    how = [str(tmp_path / "saved-again") if a.endswith("saved") else a for a in how]
    _once(cli, counted, "swap", "--model", tiny_model_dir, *cli_args, *how)
    if "--save" in how:  # and a swap of the saved model: its sites found once too, by the loader of saves
        _once(cli, counted, "swap", "--model", str(tmp_path / "saved"), *cli_args, "--blocks", "1")


def test_measure_parses_the_model_once_and_finds_its_sites_only_to_capture(cli, counted, cli_args, tiny_model_dir):
    _once(cli, counted, "measure", "--model", tiny_model_dir, *cli_args)
    _once(cli, counted, "measure", "--model", tiny_model_dir, *cli_args, sites=0)  # from the cache: no model
