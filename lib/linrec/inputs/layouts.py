"""The decoder layouts `linrec.inputs.training` trains, one row each: which of transformers' own classes builds it, how
its configuration names width, depth, heads and MLP width, and what the layout fixes for itself.

A new layout is a row of `LAYOUTS`, not a branch: `model_config` fills the row's names from a `TrainConfig`, and every
stage that reads a model (capture, probe, spectrum, swap) finds its FFN through `linrec.inputs.sites.FFN_SITES`, which
has a row for each layout's `model_type`.

The rows (every layout without dropout, tied input and output embeddings, transformers' own initialisation):

- `gelu`: llama's decoder (pre-norm RMSNorm, rotary positions, no biases) with the GPT-2-style plain MLP
  `down(gelu(up(x)))`: `ArceeForCausalLM`, which is llama with only the MLP changed;
- `swiglu`: `LlamaForCausalLM`, the llama MLP `down(silu(gate(x)) · up(x))`; `llama` is the same row under the name
  the zoo uses (the paper's llama-160m);
- `gpt2`: `GPT2LMHeadModel`: learned absolute positions, LayerNorm with biases, attention then MLP in sequence, the
  GELU MLP `c_proj(gelu(c_fc(x)))` (GPT-2's tanh GELU), biases everywhere;
- `pythia`: `GPTNeoXForCausalLM` as Pythia configures it: rotary positions on a quarter of each head
  (`rotary_pct` 0.25), attention and MLP in parallel from the same residual stream (`use_parallel_residual`),
  LayerNorm, GELU MLP, biases everywhere.

**Equal block parameters.** With `d_ff` 0 the MLP width is the one that gives every layout 8·d² MLP weights: 4·d for
the two-matrix MLPs, the multiple of 8 nearest 8·d/3 for the gated one (three matrices). GPT-2 and Pythia then hold
12·d² + 13·d parameters per block (biases and two LayerNorms), llama 4·d² + 3·d·d_ff + 2·d: at d = 128 that is
198,272 against 197,888, 0.2 % apart. `block_params` counts them on the built model, not from a formula, and
`check_block_params` refuses a set of layouts further apart than `BLOCK_PARAMS_TOLERANCE`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from linrec.base.errors import LinrecError

if TYPE_CHECKING:
    import torch

BLOCK_PARAMS_TOLERANCE = 0.02  # layouts compared with each other hold block parameters within 2 % of each other


@dataclass(frozen=True)
class Layout:
    """One decoder layout: the transformers configuration class that builds it, the config's name for each size a
    `TrainConfig` sets (`names`: config key → TrainConfig quantity), and what the layout fixes (`fixed`)."""

    config_class: str
    gated: bool  # a gated MLP (three matrices): its default width is ≈ 8·d/3 instead of 4·d
    names: dict[str, str]
    fixed: dict = field(default_factory=dict)
    note: str = ""


_LLAMA_NAMES = {
    "vocab_size": "vocab_size",
    "hidden_size": "d_model",
    "num_hidden_layers": "n_layers",
    "num_attention_heads": "n_heads",
    "num_key_value_heads": "n_heads",
    "intermediate_size": "ffn_width",
    "max_position_embeddings": "seq_len",
}
_LLAMA_FIXED = dict(rms_norm_eps=1e-5, initializer_range=0.02, attention_bias=False, mlp_bias=False)
_SPECIAL = dict(bos_token_id=None, eos_token_id=0, pad_token_id=0, tie_word_embeddings=True)

LAYOUTS: dict[str, Layout] = {
    "gelu": Layout("ArceeConfig", False, _LLAMA_NAMES, {**_LLAMA_FIXED, "hidden_act": "gelu"},
                   "llama with a plain GELU MLP (Arcee)"),
    "swiglu": Layout("LlamaConfig", True, _LLAMA_NAMES, {**_LLAMA_FIXED, "hidden_act": "silu"}, "llama (SwiGLU)"),
    "llama": Layout("LlamaConfig", True, _LLAMA_NAMES, {**_LLAMA_FIXED, "hidden_act": "silu"},
                    "llama: RMSNorm, rotary, SwiGLU"),
    "gpt2": Layout(
        "GPT2Config",
        False,
        {"vocab_size": "vocab_size", "n_embd": "d_model", "n_layer": "n_layers", "n_head": "n_heads",
         "n_inner": "ffn_width", "n_positions": "seq_len"},
        dict(activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, layer_norm_epsilon=1e-5,
             initializer_range=0.02),
        "GPT-2: learned positions, LayerNorm, sequential attention then GELU MLP",
    ),
    "pythia": Layout(
        "GPTNeoXConfig",
        False,
        {"vocab_size": "vocab_size", "hidden_size": "d_model", "num_hidden_layers": "n_layers",
         "num_attention_heads": "n_heads", "intermediate_size": "ffn_width", "max_position_embeddings": "seq_len"},
        dict(hidden_act="gelu", rotary_pct=0.25, use_parallel_residual=True, attention_dropout=0.0, hidden_dropout=0.0,
             layer_norm_eps=1e-5, initializer_range=0.02),
        "Pythia: partial rotary, parallel attention and GELU MLP, LayerNorm",
    ),
}  # fmt: skip


def layout(name: str) -> Layout:
    """The row of `name`; one line naming the known layouts otherwise."""
    if name not in LAYOUTS:
        raise LinrecError(f"layout must be one of {', '.join(LAYOUTS)}, got '{name}'; add a row to "
                          "linrec.inputs.layouts.LAYOUTS for a new one")  # fmt: skip
    return LAYOUTS[name]


def ffn_width(name: str, d_model: int, d_ff: int = 0) -> int:
    """The MLP's hidden width: `d_ff`, or the width that gives the layout 8·d² MLP weights."""
    if d_ff:
        return d_ff
    return 8 * round(8 * d_model / 3 / 8) if layout(name).gated else 4 * d_model


def model_config(cfg, vocab_size: int):
    """The transformers configuration of `cfg` (a `linrec.inputs.training.TrainConfig`) with a vocabulary of
    `vocab_size`: the layout's row filled in."""
    # here, not at the top: `linrec` imports this module when it starts, and --help stays free of torch
    import transformers

    row = layout(cfg.layout)
    have = {"vocab_size": vocab_size, "d_model": cfg.d_model, "n_layers": cfg.n_layers, "n_heads": cfg.n_heads,
            "ffn_width": cfg.ffn_width, "seq_len": cfg.seq_len}  # fmt: skip
    kw = {key: have[what] for key, what in row.names.items()}
    return getattr(transformers, row.config_class)(**kw, **row.fixed, **_SPECIAL)


def build(cfg, vocab_size: int, device: str | None = None) -> torch.nn.Module:
    """A model of `cfg` with transformers' own initialisation (under the caller's RNG); on the "meta" device it holds
    shapes only, for counting."""
    # here, not at the top: `linrec` imports this module when it starts, and --help stays free of torch
    import torch
    from transformers import AutoModelForCausalLM

    from linrec.inputs.hf import quiet_transformers

    with quiet_transformers(), torch.device(device or "cpu"):
        model = AutoModelForCausalLM.from_config(model_config(cfg, vocab_size), attn_implementation="sdpa")
    return model


def count_params(model: torch.nn.Module) -> tuple[int, int]:
    """(every parameter, tied ones once; the parameters of the blocks alone) of `model`."""
    # here, not at the top: `linrec` imports this module when it starts, and --help stays free of torch
    from linrec.inputs.sites import find_ffn_sites

    total = sum(p.numel() for p in model.parameters())
    blocks = sum(p.numel() for s in find_ffn_sites(model) for p in s.block.parameters())
    return total, blocks


def param_counts(cfg, vocab_size: int | None = None) -> tuple[int, int]:
    """`count_params` of a model of `cfg` built on the meta device (no memory, no weights drawn)."""
    return count_params(build(cfg, vocab_size or cfg.vocab, device="meta"))


def block_params(cfg) -> int:
    """The parameters in the blocks of a model of `cfg` (the embeddings, final norm and head left out)."""
    return param_counts(cfg)[1]


def check_block_params(configs, tolerance: float = BLOCK_PARAMS_TOLERANCE) -> dict[str, int]:
    """{layout: block parameters} of `configs`' layouts; one line naming the fix when the largest is more than
    `tolerance` above the smallest (the layouts would not be compared at equal size)."""
    counts = {}
    for c in configs:
        if c.layout not in counts:
            counts[c.layout] = block_params(c)
    lo, hi = min(counts.values()), max(counts.values())
    if hi > (1 + tolerance) * lo:
        listed = ", ".join(f"{k} {v:,}" for k, v in counts.items())
        raise LinrecError(
            f"the layouts' blocks hold {listed} parameters, more than {tolerance:.0%} apart; set d_ff 0 (each "
            "layout's MLP width for 8·d² MLP weights) or a d_ff that evens them out"
        )
    return counts
