"""Where each block's FFN lives, and hooks that hand its input and output to a callback.

FFN input x: the tensor that enters the MLP (after the block's pre-MLP norm).
FFN output y: what the MLP returns, before it is added to the residual stream.
One row of `FFN_SITES` per architecture; paths are relative to `model.base_model`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

import torch

from linrec.base.errors import LinrecError
from linrec.base.stages import watch_blocks


@dataclass(frozen=True)
class SiteSpec:
    blocks: str  # path (from model.base_model) of the ModuleList of blocks
    ffn_in: str  # module (inside a block) whose *input* is x
    ffn_out: str  # module (inside a block) whose *output* is y
    note: str = ""
    post_norm: str = ""  # module (inside a block) that normalises y before the residual add, if any (Gemma-3)
    pre_norm: str = ""  # the norm whose output is x, with its learned gain (and bias): what the controls fold away


FFN_SITES: dict[str, SiteSpec] = {  # model_type → site                          x, y: [batch, pos, d_model]
    "gpt2": SiteSpec("h", "mlp", "mlp", pre_norm="ln_2"),  # transformer.h.{i}.mlp (c_fc → GELU → c_proj)
    "gpt_neox": SiteSpec(
        "layers",
        "mlp",
        "mlp",
        "Pythia: parallel residual, x = post_attention_layernorm(h)",
        pre_norm="post_attention_layernorm",
    ),
    "llama": SiteSpec("layers", "mlp", "mlp", pre_norm="post_attention_layernorm"),  # model.layers.{i}.mlp (SwiGLU)
    "qwen2": SiteSpec("layers", "mlp", "mlp", pre_norm="post_attention_layernorm"),  # model.layers.{i}.mlp (SwiGLU)
    "qwen3": SiteSpec("layers", "mlp", "mlp", pre_norm="post_attention_layernorm"),  # model.layers.{i}.mlp (SwiGLU)
    "mistral": SiteSpec("layers", "mlp", "mlp", pre_norm="post_attention_layernorm"),  # llama's layout (SwiGLU)
    "phi3": SiteSpec("layers", "mlp", "mlp", pre_norm="post_attention_layernorm"),  # one fused gate_up_proj (SwiGLU)
    # llama with a plain MLP, down(act(up(x))): linrec.inputs.training's GELU variant
    "arcee": SiteSpec("layers", "mlp", "mlp", pre_norm="post_attention_layernorm"),
    "gemma3_text": SiteSpec(
        "layers",
        "mlp",
        "mlp",
        "y is taken before Gemma-3's post_feedforward_layernorm",
        "post_feedforward_layernorm",
        "pre_feedforward_layernorm",
    ),
    "gemma3": SiteSpec(
        "language_model.layers",
        "mlp",
        "mlp",
        "multimodal wrapper; text tower only",
        "post_feedforward_layernorm",
        "pre_feedforward_layernorm",
    ),
    "bert": SiteSpec(
        "encoder.layer",
        "intermediate",
        "output.dense",
        "y = output.dense(...), before dropout, residual add and LayerNorm",
        pre_norm="attention.output.LayerNorm",  # post-LN: x is the attention sublayer's closing LayerNorm
    ),
}


@dataclass(frozen=True)
class FfnSite:
    """One block's FFN: where to read x (input of `ffn_in`) and y (output of `ffn_out`)."""

    index: int
    path: str  # e.g. "model.layers.3.mlp"
    block: torch.nn.Module
    ffn_in: torch.nn.Module
    ffn_out: torch.nn.Module
    post_norm: torch.nn.Module | None = None  # what the block applies to y before adding it (Gemma-3), else None
    pre_norm: torch.nn.Module | None = None  # the norm that produces x (its learned gain is folded by the controls)

    @property
    def ffn(self) -> torch.nn.Module:
        """The FFN as a module mapping x to y, for evaluating it on other inputs (the controls): `module` where x and y
        belong to one module; for an encoder whose FFN spans two (BERT: `intermediate`, then `output.dense`), the two
        in sequence, which is what the block computes between the hooked input and output."""
        if self.ffn_in is self.ffn_out:
            return self.ffn_in
        pair = self.ffn_in.__dict__.get("_linrec_pair")
        if pair is None or pair.second is not self.ffn_out:
            pair = _Sequential(self.ffn_in, self.ffn_out)
            object.__setattr__(self.ffn_in, "_linrec_pair", pair)  # a plain attribute, not a registered submodule
        return pair  # the same object each time, so callers may key on it

    @property
    def module(self) -> torch.nn.Module:
        """The FFN as one module, where x and y belong to the same module (every causal LM here)."""
        if self.ffn_in is not self.ffn_out:
            raise LinrecError(
                f"block {self.index}: the FFN spans two modules here; swap it with linrec.inputs.sites helpers for "
                f"encoders"
            )
        return self.ffn_in


class _Sequential(torch.nn.Module):
    """ffn_out(ffn_in(x)): an FFN that spans two modules, as one (its parameters are theirs, not copies)."""

    def __init__(self, first: torch.nn.Module, second: torch.nn.Module):
        super().__init__()
        self.first, self.second = first, second

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.second(self.first(x))


def supported() -> str:
    return ", ".join(sorted(FFN_SITES))


def find_ffn_sites(model: torch.nn.Module) -> list[FfnSite]:
    """Every block's FFN site, in depth order; a one-line error for an architecture not in `FFN_SITES`."""
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    spec = FFN_SITES.get(model_type)
    if spec is None:
        raise LinrecError(
            f"no FFN found: architecture '{model_type}' is not supported (supported: {supported()}); "
            "add a row to linrec.inputs.sites.FFN_SITES (from Python, before the call: docs/api.md)"
        )
    base = model.base_model
    prefix = "" if base is model else next(n for n, m in model.named_modules() if m is base) + "."
    try:
        blocks = base.get_submodule(spec.blocks)
        sites = []
        for i, block in enumerate(blocks):
            sites.append(
                FfnSite(
                    index=i,
                    path=f"{prefix}{spec.blocks}.{i}.{spec.ffn_in}",
                    block=block,
                    ffn_in=block.get_submodule(spec.ffn_in),
                    ffn_out=block.get_submodule(spec.ffn_out),
                    post_norm=block.get_submodule(spec.post_norm) if spec.post_norm else None,
                    pre_norm=block.get_submodule(spec.pre_norm) if spec.pre_norm else None,
                )
            )
    except AttributeError as err:
        raise LinrecError(
            f"no FFN found at {prefix}{spec.blocks}.*.{spec.ffn_in} for '{model_type}' ({err}); "
            "check FFN_SITES against this model's code"
        ) from None
    if not sites:
        raise LinrecError(f"no FFN found: '{model_type}' model has no blocks under {prefix}{spec.blocks}")
    watch_blocks(site.block for site in sites)  # where a runner records stages: their model work (linrec.base.stages)
    return sites


def keep_first_blocks(model: torch.nn.Module, n: int, sites: list[FfnSite] | None = None) -> int:
    """Cut `model` to its first `n` blocks, in place: embeddings, blocks 0 … n − 1, then the model's own final norm
    and head, with the config's layer count (and per-layer types, Gemma-3) cut to match, so every forward, save and
    reload sees an n-block model. Returns the original number of blocks. `sites`: the model's FFN sites, where the
    caller has them (the cut model's are their first `n`)."""
    total = len(find_ffn_sites(model) if sites is None else sites)
    if not 1 <= n <= total:
        raise LinrecError(f"first:{n}: the model has {total} blocks; ask for 1 … {total}")
    spec = FFN_SITES[model.config.model_type]
    parent_path, _, attr = spec.blocks.rpartition(".")
    parent = model.base_model.get_submodule(parent_path) if parent_path else model.base_model
    setattr(parent, attr, torch.nn.ModuleList(list(getattr(parent, attr))[:n]))
    for cfg in {id(c): c for c in (model.config, getattr(model.config, "text_config", None)) if c is not None}.values():
        for key in ("num_hidden_layers", "n_layer"):
            if isinstance(getattr(cfg, key, None), int):
                setattr(cfg, key, n)
        if isinstance(getattr(cfg, "layer_types", None), list):
            cfg.layer_types = cfg.layer_types[:n]
    return total


class StopForward(Exception):
    """Raised by the last hook to skip the rest of the forward pass (later blocks, final norm, LM head)."""


@contextlib.contextmanager
def ffn_hooks(
    sites: list[FfnSite],
    callback: Callable[[int, torch.Tensor, torch.Tensor], None],
    stop_after_last: bool = False,
):
    """Call `callback(block, x, y)` with each FFN's input and output during forward passes.

    With `stop_after_last`, the hook of the deepest site raises `StopForward` after its
    callback: run the model inside `run_until_stop`. Hooks never outlive the `with` block.
    """
    if not sites:
        raise LinrecError("no FFN sites to hook; get them with linrec.inputs.sites.find_ffn_sites(model)")
    chunked = [s.index for s in sites if getattr(s.block, "chunk_size_feed_forward", 0)]
    if chunked:
        raise LinrecError(
            f"blocks {chunked} run their FFN in chunks (chunk_size_feed_forward > 0); "
            "load the model with chunk_size_feed_forward=0"
        )
    handles = []
    last = max(s.index for s in sites)
    pending: dict[int, torch.Tensor] = {}

    def finish(site: FfnSite, x: torch.Tensor, y: torch.Tensor) -> None:
        callback(site.index, x, y)
        if stop_after_last and site.index == last:
            raise StopForward

    try:
        for site in sites:
            if site.ffn_in is site.ffn_out:

                def hook(module, args, output, site=site):
                    finish(site, args[0], output)

                handles.append(site.ffn_in.register_forward_hook(hook))
            else:

                def pre(module, args, site=site):
                    pending[site.index] = args[0]

                def post(module, args, output, site=site):
                    finish(site, pending.pop(site.index), output)

                handles.append(site.ffn_in.register_forward_pre_hook(pre))
                handles.append(site.ffn_out.register_forward_hook(post))
        yield
    finally:
        for h in handles:
            h.remove()
        pending.clear()


def run_until_stop(model: torch.nn.Module, **inputs) -> None:
    """Run `model(**inputs)`, treating a `StopForward` from a hook as the normal end."""
    try:
        model(**inputs)
    except StopForward:
        pass
