"""Shared fixtures: an isolated cache for the whole session,
tiny random-weight models built from configs (no download)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
import torch

VOCAB = 100
SHARED = ("wheels", "models", "corpora")  # fetched downloads, shared read-only with the user's cache


@pytest.fixture(scope="session", autouse=True)
def isolated_cache(tmp_path_factory):
    """Every test writes captures into a fresh per-session `$LINREC_CACHE`,
    so no test passes on an earlier run's entries.

    The fetched wheels, models and corpora (`make test` fetches them first) are shared from
    the user's cache by symlink: tests read them and never change them (a test that damages a
    model works on its own copy). Subprocesses and notebook kernels inherit the variable.
    """
    user = Path(os.environ.get("LINREC_CACHE") or Path.home() / ".cache" / "linrec").expanduser()
    root = tmp_path_factory.mktemp("linrec-cache")
    for name in SHARED:
        (user / name).mkdir(parents=True, exist_ok=True)
        (root / name).symlink_to(user / name, target_is_directory=True)
    old = os.environ.get("LINREC_CACHE")
    os.environ["LINREC_CACHE"] = str(root)
    yield root
    if old is None:
        os.environ.pop("LINREC_CACHE", None)
    else:
        os.environ["LINREC_CACHE"] = old


# model kind → (config class, model class, config kwargs); "gpt_neox_seq" is GPT-NeoX without parallel residual
_SPECS = {
    "gpt2": (
        "GPT2Config",
        "GPT2LMHeadModel",
        dict(n_embd=32, n_layer=2, n_head=2, n_positions=64, bos_token_id=1, eos_token_id=2),
    ),
    "gpt_neox": (
        "GPTNeoXConfig",
        "GPTNeoXForCausalLM",
        dict(
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=64,
            use_parallel_residual=True,
        ),
    ),
    "gpt_neox_seq": (
        "GPTNeoXConfig",
        "GPTNeoXForCausalLM",
        dict(
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=64,
            use_parallel_residual=False,
        ),
    ),
    "llama": (
        "LlamaConfig",
        "LlamaForCausalLM",
        dict(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=64,
        ),
    ),
    "qwen2": (
        "Qwen2Config",
        "Qwen2ForCausalLM",
        dict(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=64,
        ),
    ),
    "gemma3_text": (
        "Gemma3TextConfig",
        "Gemma3ForCausalLM",
        dict(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=3,
            num_attention_heads=2,
            num_key_value_heads=1,
            head_dim=16,
            max_position_embeddings=64,
            sliding_window=4,
            layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        ),
    ),
    "bert": (
        "BertConfig",
        "BertModel",
        dict(
            hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, max_position_embeddings=64
        ),
    ),
    "opt": (
        "OPTConfig",
        "OPTForCausalLM",
        dict(
            hidden_size=32,
            num_hidden_layers=2,
            ffn_dim=64,
            num_attention_heads=2,
            word_embed_proj_dim=32,
            max_position_embeddings=64,
        ),
    ),
}


def _randomise(model: torch.nn.Module) -> None:
    """O(1)-scale random weights, so FFN outputs and norm gains are far from 0 / 1 and identities are not vacuous."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim >= 2:
                is_embedding = "emb" in name or name.endswith("wte.weight") or name.endswith("wpe.weight")
                p.copy_(torch.randn_like(p) * (1.0 if is_embedding else 1.0 / math.sqrt(p.shape[-1])))
            elif "norm" in name.lower() or ".ln" in name:
                p.copy_(1.0 + 0.3 * torch.randn_like(p) if not name.endswith("bias") else 0.1 * torch.randn_like(p))
            else:
                p.copy_(0.1 * torch.randn_like(p))


def make_tiny_model(kind: str, seed: int = 0) -> torch.nn.Module:
    """A tiny float32 model of `kind` (a key of `_SPECS`) with seeded random weights, in eval mode."""
    import transformers

    config_cls, model_cls, kw = _SPECS[kind]
    config = getattr(transformers, config_cls)(vocab_size=VOCAB, **kw)
    torch.manual_seed(seed)
    model = getattr(transformers, model_cls)(config)
    _randomise(model)
    return model.float().eval()


@pytest.fixture
def tiny_model():
    """Factory: `tiny_model(kind, seed=0)`
    (kinds: gpt2, gpt_neox, gpt_neox_seq, llama, qwen2, gemma3_text, bert, opt)."""
    return make_tiny_model
