"""linrec.inputs.sites on tiny random models of every supported architecture (no download).

Checks that each site is the module the spec names, that the hooks hand over the FFN's real
input x and output y (re-running the FFN on x gives y; the block's residual identity holds
with that y), that `stop_after_last` skips everything after the deepest site, and that hooks
never outlive their `with` block. `keep_first_blocks` leaves a model's own first
blocks, then its own head."""

from __future__ import annotations

import contextlib

import pytest
import torch
from torch.testing import assert_close

from helpers import token_ids as _token_ids
from linrec.base.errors import LinrecError
from linrec.inputs.sites import FFN_SITES, StopForward, ffn_hooks, find_ffn_sites, run_until_stop


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


KINDS = ["gpt2", "gpt_neox", "gpt_neox_seq", "llama", "qwen2", "mistral", "qwen3", "phi3", "gemma3_text", "bert"]


# kind → (blocks path from the top model, attention module in a block, pre-MLP norm in a block,
#         modules that run only after the last block, expected site path template)
ARCH = {
    "gpt2": ("transformer.h", "attn", "ln_2", ["transformer.ln_f", "lm_head"], "transformer.h.{i}.mlp"),
    "gpt_neox": (
        "gpt_neox.layers",
        "attention",
        "post_attention_layernorm",
        ["gpt_neox.final_layer_norm", "lm_head"],
        "gpt_neox.layers.{i}.mlp",
    ),
    "gpt_neox_seq": (
        "gpt_neox.layers",
        "attention",
        "post_attention_layernorm",
        ["gpt_neox.final_layer_norm", "lm_head"],
        "gpt_neox.layers.{i}.mlp",
    ),
    "llama": (
        "model.layers",
        "self_attn",
        "post_attention_layernorm",
        ["model.norm", "lm_head"],
        "model.layers.{i}.mlp",
    ),
    "qwen2": (
        "model.layers",
        "self_attn",
        "post_attention_layernorm",
        ["model.norm", "lm_head"],
        "model.layers.{i}.mlp",
    ),
    **{
        k: ("model.layers", "self_attn", "post_attention_layernorm", ["model.norm", "lm_head"], "model.layers.{i}.mlp")
        for k in ("mistral", "qwen3", "phi3")
    },
    "gemma3_text": (
        "model.layers",
        "self_attn",
        "pre_feedforward_layernorm",
        ["model.norm", "lm_head"],
        "model.layers.{i}.mlp",
    ),
    "bert": (
        "encoder.layer",
        "attention",
        None,
        ["pooler", "encoder.layer.1.output.LayerNorm"],
        "encoder.layer.{i}.intermediate",
    ),
}


ATOL = 1e-5


def _ids(seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, 100, (2, 7), generator=g)


def _blocks(model, kind):
    return list(model.get_submodule(ARCH[kind][0]))


def _ffn(kind, block, x):
    """Re-run block's FFN on x, independently of linrec's site table."""
    if kind == "bert":
        return block.output.dense(block.intermediate(x))
    return block.mlp(x)


def _first(out):
    return out[0] if isinstance(out, tuple) else out


def _n_hooks(model) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


@pytest.fixture(params=KINDS)
def kind(request):
    return request.param


def test_find_ffn_sites_one_per_block_in_order(kind, tiny_model):
    model = tiny_model(kind)
    blocks = _blocks(model, kind)
    assert len(blocks) == model.config.num_hidden_layers
    sites = find_ffn_sites(model)
    assert [s.index for s in sites] == list(range(len(blocks)))
    for i, (site, block) in enumerate(zip(sites, blocks)):
        assert site.block is block
        assert site.path == ARCH[kind][4].format(i=i)
        assert model.get_submodule(site.path) is site.ffn_in
        if kind == "bert":
            assert site.ffn_in is block.intermediate
            assert site.ffn_out is block.output.dense
            with pytest.raises(LinrecError):
                site.module  # noqa: B018  (x and y belong to different modules)
        else:
            assert site.ffn_in is block.mlp and site.ffn_out is block.mlp
            assert site.module is block.mlp
    assert len({id(s.ffn_in) for s in sites}) == len(sites)


def test_find_ffn_sites_gemma3_multimodal_text_tower():
    """The 'gemma3' row: a (tiny) multimodal Gemma-3 yields the text tower's MLPs only."""
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, Gemma3TextConfig, SiglipVisionConfig

    text = Gemma3TextConfig(
        vocab_size=100,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
    )
    vision = SiglipVisionConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, image_size=28, patch_size=14
    )
    torch.manual_seed(0)
    model = Gemma3ForConditionalGeneration(
        Gemma3Config(
            text_config=text,
            vision_config=vision,
            mm_tokens_per_image=4,
            image_token_index=99,
            boi_token_index=97,
            eoi_token_index=98,
        )
    ).eval()
    assert model.config.model_type == "gemma3"
    sites = find_ffn_sites(model)
    layers = model.model.language_model.layers
    assert [s.ffn_in for s in sites] == [layer.mlp for layer in layers]
    assert [s.path for s in sites] == ["model.language_model.layers.0.mlp", "model.language_model.layers.1.mlp"]


@torch.no_grad()
def test_hooks_capture_ffn_input_and_output(kind, tiny_model):
    model = tiny_model(kind)
    sites = find_ffn_sites(model)
    blocks = _blocks(model, kind)
    got = []
    with ffn_hooks(sites, lambda i, x, y: got.append((i, x, y))):
        model(input_ids=_ids())
    assert [i for i, _, _ in got] == list(range(len(blocks)))  # once per block, in depth order
    d = model.config.hidden_size
    for i, x, y in got:
        assert x.shape == (2, 7, d) and y.shape == (2, 7, d)
        assert y.abs().max() > 0.1  # non-trivial output, so the comparisons below can fail
        assert_close(_ffn(kind, blocks[i], x), y, atol=1e-6, rtol=0)
        assert not torch.allclose(x, y, atol=1e-3)


@torch.no_grad()
def test_residual_identity(kind, tiny_model):
    model = tiny_model(kind)
    sites = find_ffn_sites(model)
    blocks = _blocks(model, kind)
    _, attn_name, norm_name, _, _ = ARCH[kind]
    rec: dict[str, dict[int, torch.Tensor]] = {"in": {}, "out": {}, "attn": {}, "x": {}, "y": {}}
    handles = []
    for i, block in enumerate(blocks):

        def pre(mod, args, kwargs, i=i):
            rec["in"][i] = args[0] if args else kwargs["hidden_states"]

        handles.append(block.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(block.register_forward_hook(lambda mod, args, out, i=i: rec["out"].__setitem__(i, _first(out))))
        attn = block.get_submodule(attn_name)
        handles.append(attn.register_forward_hook(lambda mod, args, out, i=i: rec["attn"].__setitem__(i, _first(out))))

    def cb(i, x, y):
        rec["x"][i], rec["y"][i] = x, y

    try:
        with ffn_hooks(sites, cb):
            model(input_ids=_ids())
    finally:
        for h in handles:
            h.remove()

    for i, block in enumerate(blocks):
        h_in, h_out, a, x, y = (rec[k][i] for k in ("in", "out", "attn", "x", "y"))
        if kind == "bert":
            assert_close(x, a, atol=ATOL, rtol=ATOL)  # x is the attention block's output
            assert_close(h_out, block.output.LayerNorm(y + x), atol=ATOL, rtol=ATOL)
            continue
        norm = block.get_submodule(norm_name)
        if kind == "gemma3_text":
            h = h_in + block.post_attention_layernorm(a)
            assert_close(x, norm(h), atol=ATOL, rtol=ATOL)
            assert_close(h_out, h + block.post_feedforward_layernorm(y), atol=ATOL, rtol=ATOL)
            # y is taken before post_feedforward_layernorm: the un-normed sum must not match
            assert (h_out - (h + y)).abs().max() > 1e-2
        elif kind == "gpt_neox":  # parallel residual: attention and MLP both read block_in
            assert model.config.use_parallel_residual
            assert_close(x, norm(h_in), atol=ATOL, rtol=ATOL)
            assert_close(h_out, h_in + a + y, atol=ATOL, rtol=ATOL)
        else:  # sequential pre-norm: gpt2, llama, qwen2, gpt_neox without parallel residual
            assert_close(x, norm(h_in + a), atol=ATOL, rtol=ATOL)
            assert_close(h_out, h_in + a + y, atol=ATOL, rtol=ATOL)


@contextlib.contextmanager
def _count_calls(model, names):
    """Count forward calls of the named submodules inside the `with` block (hooks removed after)."""
    calls = {n: 0 for n in names}
    handles = []
    for n in names:

        def hook(mod, args, out, n=n):
            calls[n] += 1

        handles.append(model.get_submodule(n).register_forward_hook(hook))
    try:
        yield calls
    finally:
        for h in handles:
            h.remove()


@torch.no_grad()
def test_stop_after_last_skips_head(kind, tiny_model):
    model = tiny_model(kind)
    sites = find_ffn_sites(model)
    tail = ARCH[kind][3]
    with _count_calls(model, tail) as calls:
        seen = []
        with ffn_hooks(sites, lambda i, x, y: seen.append(i), stop_after_last=True):
            assert run_until_stop(model, input_ids=_ids()) is None
            assert seen == list(range(len(sites)))  # the final block's hook fired
            run_until_stop(model, input_ids=_ids(2))
        assert seen == list(range(len(sites))) * 2  # exactly once per block per forward
        assert calls == {n: 0 for n in tail}  # final norm / LM head (pooler for bert) never ran

        # control: without stop_after_last the same recorders do see the head run
        with ffn_hooks(sites, lambda i, x, y: None):
            model(input_ids=_ids())
        assert calls == {n: 1 for n in tail}


@torch.no_grad()
def test_stop_after_last_of_a_subset_stops_early(tiny_model):
    model = tiny_model("llama")
    sites = find_ffn_sites(model)
    with _count_calls(model, ["model.layers.1.self_attn", "model.layers.1", "lm_head"]) as calls:
        seen = []
        with ffn_hooks(sites[:1], lambda i, x, y: seen.append(i), stop_after_last=True):
            run_until_stop(model, input_ids=_ids())
        assert seen == [0]
        assert set(calls.values()) == {0}


@torch.no_grad()
def test_stop_forward_escapes_a_plain_call(tiny_model):
    model = tiny_model("gpt2")
    with ffn_hooks(find_ffn_sites(model), lambda i, x, y: None, stop_after_last=True):
        with pytest.raises(StopForward):
            model(input_ids=_ids())


@torch.no_grad()
def test_hooks_removed_after_with(kind, tiny_model):
    model = tiny_model(kind)
    sites = find_ffn_sites(model)
    base = _n_hooks(model)
    seen = []
    with ffn_hooks(sites, lambda i, x, y: seen.append(i)):
        assert _n_hooks(model) > base
        model(input_ids=_ids())
    assert _n_hooks(model) == base
    n = len(seen)
    assert n == len(sites)
    model(input_ids=_ids())
    assert len(seen) == n  # callback not called after the with block


@torch.no_grad()
def test_hooks_removed_when_body_raises(kind, tiny_model):
    model = tiny_model(kind)
    sites = find_ffn_sites(model)
    base = _n_hooks(model)
    seen = []
    with pytest.raises(RuntimeError, match="boom"):
        with ffn_hooks(sites, lambda i, x, y: seen.append(i), stop_after_last=True):
            assert _n_hooks(model) > base
            raise RuntimeError("boom")
    assert _n_hooks(model) == base
    model(input_ids=_ids())
    assert seen == []


@torch.no_grad()
def test_hooks_removed_when_callback_raises_mid_forward(tiny_model):
    model = tiny_model("bert")  # two-module site: exercises the pre-hook / post-hook pair
    sites = find_ffn_sites(model)
    base = _n_hooks(model)

    def bad(i, x, y):
        raise ValueError(f"callback failed at block {i}")

    with pytest.raises(ValueError, match="block 0"):
        with ffn_hooks(sites, bad):
            model(input_ids=_ids())
    assert _n_hooks(model) == base
    for site in sites:
        assert not site.ffn_in._forward_pre_hooks and not site.ffn_out._forward_hooks


@torch.no_grad()
def test_hooks_removed_when_stop_forward_escapes(tiny_model):
    model = tiny_model("qwen2")
    base = _n_hooks(model)
    with pytest.raises(StopForward):
        with ffn_hooks(find_ffn_sites(model), lambda i, x, y: None, stop_after_last=True):
            model(input_ids=_ids())
    assert _n_hooks(model) == base


def _assert_names_supported(msg: str) -> None:
    assert "\n" not in msg
    for name in FFN_SITES:
        assert name in msg


def test_unsupported_architecture_opt(tiny_model):
    model = tiny_model("opt")
    assert model.config.model_type == "opt" and "opt" not in FFN_SITES
    with pytest.raises(LinrecError) as err:
        find_ffn_sites(model)
    msg = str(err.value)
    assert "'opt'" in msg and "not supported" in msg
    _assert_names_supported(msg)


def test_model_without_config_is_unsupported():
    with pytest.raises(LinrecError) as err:
        find_ffn_sites(torch.nn.Linear(3, 3))
    _assert_names_supported(str(err.value))


def test_mislabelled_architecture_is_a_one_line_error(tiny_model):
    """A llama that claims to be gpt2 has no `h`: a LinrecError that points at FFN_SITES, not an AttributeError."""
    model = tiny_model("llama")
    model.config.model_type = "gpt2"
    with pytest.raises(LinrecError) as err:
        find_ffn_sites(model)
    msg = str(err.value)
    assert "\n" not in msg and "FFN_SITES" in msg and "'gpt2'" in msg


def test_keep_first_blocks_at_exactly_the_block_count(tiny_model):
    """Cutting a model to all its blocks keeps every one; one more is refused in one line, as is 0. Planted: `1 <= n
    <= total` → `1 <= n < total` in linrec.inputs.sites.keep_first_blocks fails (n = total refused)."""
    from linrec.inputs.sites import keep_first_blocks

    model = tiny_model("llama")
    total = len(find_ffn_sites(model))
    for n in (0, total + 1):
        with pytest.raises(LinrecError, match=rf"first:{n}: the model has {total} blocks; ask for 1 … {total}"):
            keep_first_blocks(tiny_model("llama"), n)
    assert keep_first_blocks(model, total) == total and len(find_ffn_sites(model)) == total
