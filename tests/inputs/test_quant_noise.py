"""linrec.inputs.quant_noise: the step read back from dequantised weights, the dither's bounds, and the perturbation."""

import gguf
import numpy as np
import pytest
import torch
from gguf import quants

from linrec.base.errors import LinrecError
from linrec.inputs.quant_noise import dither, parameter_types, perturb, quant_step


def _gguf_round_trip(x: np.ndarray, qtype: str) -> tuple[np.ndarray, np.ndarray]:
    """`x` quantised and dequantised by gguf's own code, and the scale d of each block read from the raw bytes
    (every legacy type starts its block with d as float16)."""
    t = getattr(gguf.GGMLQuantizationType, qtype)
    raw = quants.quantize(x, t)
    deq = quants.dequantize(raw, t).reshape(x.shape)
    block_bytes = gguf.GGML_QUANT_SIZES[t][1]
    d = raw.reshape(-1, block_bytes)[:, :2].copy().view(np.float16).astype(np.float64).ravel()
    return deq, d


@pytest.mark.parametrize("qtype", ["Q4_1", "Q8_0", "Q4_0", "Q5_1", "Q5_0"])
def test_the_step_read_from_dequantised_weights_is_the_scale_gguf_stored(qtype):
    x = (np.random.default_rng(1).standard_normal((6, 128)) * np.linspace(0.1, 3, 128)).astype(np.float32)
    deq, d = _gguf_round_trip(x, qtype)
    step = quant_step(torch.from_numpy(deq), qtype).numpy()
    assert step.shape == x.shape
    per_block = step.reshape(-1, 32)
    assert (per_block == per_block[:, :1]).all()  # one step per block of 32 consecutive weights of a row
    np.testing.assert_allclose(per_block[:, 0], np.abs(d), rtol=2e-3)  # d is stored in float16
    grid = deq.reshape(-1, 32) / per_block  # every weight sits on its block's grid
    if qtype.endswith("_1"):
        grid = grid - grid.min(axis=1, keepdims=True)
    np.testing.assert_allclose(grid, np.round(grid), atol=1e-3)


def test_the_step_by_hand():
    row = torch.linspace(-1.0, 2.0, 32, dtype=torch.float64)
    w = torch.stack([torch.cat([row, row * 10]), torch.cat([torch.full((32,), 0.5), -row])])
    q41 = quant_step(w, "Q4_1")
    assert q41[0, 0] == pytest.approx(3 / 15) and q41[0, 40] == pytest.approx(30 / 15)
    assert q41[1, 0] == 0 and q41[1, 63] == pytest.approx(3 / 15)  # a block of equal weights has no grid
    q80 = quant_step(w, "Q8_0")
    assert q80[0, 5] == pytest.approx(2 / 127) and q80[1, 5] == pytest.approx(0.5 / 127)
    assert quant_step(w, "Q4_0")[0, 33] == pytest.approx(20 / 8)


def test_refuses_a_type_without_a_rule_and_a_partial_block():
    with pytest.raises(LinrecError, match="no quantisation step rule for GGUF type Q2_K.*Q4_K, Q5_K, Q6_K"):
        quant_step(torch.zeros(2, 256), "Q2_K")
    with pytest.raises(LinrecError, match="whole blocks of 32"):
        quant_step(torch.zeros(2, 48), "Q4_1")
    with pytest.raises(LinrecError, match="whole super-blocks of 256"):
        quant_step(torch.zeros(2, 288), "Q4_K")  # whole sub-blocks of 32, not whole super-blocks


# The K-quants (issue 87, item 8). gguf's Python package dequantises them but cannot quantise them, so the tests build
# super-blocks by hand: codes q and scales chosen here, packed into the bytes of ggml's layout, dequantised by gguf's
# own code; the step of each sub-block is then known (d·sc), and every weight is also recomputed from the same codes.

K_SUB = {"Q4_K": (32, 15), "Q5_K": (32, 31), "Q6_K": (16, 63)}  # weights per sub-block, the highest code


def _codes(rng: np.random.Generator, n_sub: int, size: int, top: int) -> np.ndarray:
    """Codes 0…`top` per sub-block, like the K-quant quantiser's: most sub-blocks use the whole range, some stop a
    step or three short of one end (the optimised scale), each holds two neighbouring codes (its grid's spacing is
    one code, not a multiple)."""
    q = np.empty((n_sub, size), dtype=np.int64)
    for i in range(n_sub):
        lo = int(rng.integers(0, 3)) if i % 3 == 1 else 0
        hi = top - int(rng.integers(1, 4)) if i % 3 == 2 else top
        q[i] = rng.integers(lo, hi + 1, size)
        q[i, :4] = [lo, hi, lo + 1, hi]
        rng.shuffle(q[i])
    return q


def _pack_scales(sc: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Q4_K/Q5_K's 12 bytes of eight 6-bit scales and mins per super-block (ggml's get_scale_min_k4, inverted)."""
    out = np.zeros((sc.shape[0], 12), dtype=np.uint8)
    out[:, 0:4] = sc[:, :4] | ((sc[:, 4:] >> 4) << 6)
    out[:, 4:8] = m[:, :4] | ((m[:, 4:] >> 4) << 6)
    out[:, 8:12] = (sc[:, 4:] & 0x0F) | ((m[:, 4:] & 0x0F) << 4)
    return out


def _k_quant(qtype: str, n_super: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`n_super` super-blocks of `qtype` built by hand: (weights dequantised by gguf, one row of 256 per super-block;
    the same recomputed here from the codes; |step| per sub-block, d·sc)."""
    rng = np.random.default_rng(seed)
    size, top = K_SUB[qtype]
    n_sub = 256 // size
    d = rng.uniform(1e-4, 2e-3, n_super).astype(np.float16)
    q = _codes(rng, n_super * n_sub, size, top).reshape(n_super, n_sub, size)
    if qtype == "Q6_K":
        sc = rng.integers(1, 128, (n_super, n_sub)) * rng.choice([-1, 1], (n_super, n_sub))
        step = d.astype(np.float32)[:, None] * sc.astype(np.float32)
        expect = step[:, :, None] * (q - 32).astype(np.float32)
        flat = q.reshape(n_super, 2, 128)  # two halves of 128 weights, each four runs of 32
        ql = (flat[:, :, :64] & 0x0F) | ((flat[:, :, 64:] & 0x0F) << 4)
        qh = sum(((flat[:, :, 32 * s : 32 * (s + 1)] >> 4) & 0x03) << (2 * s) for s in range(4))
        raw = np.concatenate(
            [ql.reshape(n_super, 128), qh.reshape(n_super, 64), sc.astype(np.int8).view(np.uint8),
             d.view(np.uint8).reshape(n_super, 2)], axis=1)  # fmt: skip
    else:
        dmin = rng.uniform(1e-4, 2e-3, n_super).astype(np.float16)
        sc, m = rng.integers(1, 64, (n_super, 8)), rng.integers(0, 64, (n_super, 8))
        step = d.astype(np.float32)[:, None] * sc.astype(np.float32)
        offset = dmin.astype(np.float32)[:, None] * m.astype(np.float32)
        expect = step[:, :, None] * q.astype(np.float32) - offset[:, :, None]
        pairs = q.reshape(n_super, 4, 2, 32)  # sub-blocks 2j and 2j+1 share 32 bytes: low and high nibble
        qs = ((pairs[:, :, 0] & 0x0F) | ((pairs[:, :, 1] & 0x0F) << 4)).reshape(n_super, 128)
        parts = [d.view(np.uint8).reshape(n_super, 2), dmin.view(np.uint8).reshape(n_super, 2),
                 _pack_scales(sc.astype(np.uint8), m.astype(np.uint8))]  # fmt: skip
        if qtype == "Q5_K":  # the fifth bit of sub-block i is bit i of byte l of 32
            parts.append(sum(((q[:, i] >> 4) & 1) << i for i in range(8)).astype(np.uint8))
        raw = np.concatenate([*parts, qs], axis=1)
    raw = raw.astype(np.uint8)
    assert raw.shape[1] == gguf.GGML_QUANT_SIZES[getattr(gguf.GGMLQuantizationType, qtype)][1]
    deq = quants.dequantize(raw, getattr(gguf.GGMLQuantizationType, qtype)).reshape(n_super, 256)
    return deq, expect.reshape(n_super, 256), np.abs(step).astype(np.float64).ravel()


@pytest.mark.parametrize("qtype", ["Q4_K", "Q5_K", "Q6_K"])
def test_a_k_quant_step_is_the_sub_blocks_own_scale_d_times_sc(qtype):
    deq, expect, true = _k_quant(qtype, n_super=12)
    np.testing.assert_array_equal(deq, expect)  # the bytes were packed as gguf reads them
    size = K_SUB[qtype][0]
    w = torch.from_numpy(deq.reshape(3, 1024))  # rows of four super-blocks
    step = quant_step(w, qtype).numpy().reshape(-1, size)
    assert (step == step[:, :1]).all()  # one step per sub-block of 16 or 32 consecutive weights of a row
    np.testing.assert_allclose(step[:, 0], true, rtol=1e-6)  # every sub-block, those short of an end included
    blocks = deq.astype(np.float64).reshape(-1, size)
    plain = np.abs(blocks).max(1) / 32 if qtype == "Q6_K" else (blocks.max(1) - blocks.min(1)) / K_SUB[qtype][1]
    assert (np.abs(plain / true - 1) > 0.02).mean() > 0.2  # the span alone would miss these sub-blocks' steps


@pytest.mark.parametrize("qtype, size, top", [("Q4_K", 32, 15), ("Q5_K", 32, 31), ("Q6_K", 16, 32)])
def test_the_k_quant_step_of_weights_built_on_a_known_grid(qtype, size, top):
    """No gguf: weights placed on a grid per sub-block of `size`, a different step in each, spanning `top` steps (from
    an offset; for Q6_K from 0 to the largest |weight|) or one to three fewer; the rule reads each step back."""
    rng = np.random.default_rng(5)
    n_sub = 4 * 256 // size
    step = rng.uniform(0.001, 0.1, n_sub)
    rows = []
    for i in range(n_sub):
        n = top - (i % 4)  # the whole grid, or one to three steps short
        if qtype == "Q6_K":  # codes −n…n−1 around 0: the largest |weight| is n steps
            q = np.concatenate([[-n, 1 - n], rng.integers(-n, n, size - 2)])
            rows.append(rng.permutation(q) * step[i])
        else:  # codes 0…n above an offset
            q = np.concatenate([[0, 1, n], rng.integers(0, n + 1, size - 3)])
            rows.append(rng.permutation(q) * step[i] + rng.normal())
    w = torch.from_numpy(np.concatenate(rows).reshape(2, -1))
    got = quant_step(w, qtype).numpy().reshape(-1, size)
    assert (got == got[:, :1]).all()
    np.testing.assert_allclose(got[:, 0], step, rtol=1e-9)
    blocks = np.sort(w.numpy().reshape(-1, size), axis=1)  # on a grid: two different weights are a step apart or more
    gaps = np.diff(blocks, axis=1)
    assert (got[:, 0] <= np.where(gaps > 1e-12, gaps, np.inf).min(axis=1) * (1 + 1e-9)).all()


@pytest.mark.parametrize("qtype, size, top", [("Q4_K", 32, 15), ("Q5_K", 32, 31), ("Q6_K", 16, 32)])
def test_weights_on_no_grid_get_the_finest_step_the_span_allows(qtype, size, top):
    w = torch.randn(4, 512, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    got = quant_step(w, qtype).reshape(-1, size)
    blocks = w.reshape(-1, size)
    span = blocks.amax(1) - blocks.amin(1) if qtype != "Q6_K" else blocks.abs().amax(1)
    torch.testing.assert_close(got[:, 0], span / top, rtol=1e-12, atol=0)
    assert (got[:, 0] > 0).all() and (got[:, 0] <= blocks.amax(1) - blocks.amin(1)).all()
    equal = torch.full((1, 256), 0.3, dtype=torch.float64)
    one_value = quant_step(equal, qtype)  # no grid between equal weights; from 0 (Q6_K) the value is one step
    assert (one_value == (0.3 if qtype == "Q6_K" else 0.0)).all()


def test_a_sub_block_on_even_codes_alone_reads_as_twice_its_step():
    """The one way the K-quant rule is wrong: a sub-block whose codes share a factor is on the coarser grid too (10 of
    Gemma-3's 737,280 Q6_K sub-blocks, none of its Q4_K ones: results/quant/README.md)."""
    q = np.tile(np.arange(-16, 16, 2), 16)  # 16 sub-blocks of 16, every code even
    w = torch.from_numpy(q * 0.01).reshape(1, 256)
    assert quant_step(w, "Q6_K")[0, 0] == pytest.approx(0.02)


def _planted(rows: int = 64, cols: int = 3200) -> torch.Tensor:
    g = torch.Generator().manual_seed(7)
    scale = torch.rand(rows, cols // 32, generator=g, dtype=torch.float64).repeat_interleave(32, dim=1) * 5
    return torch.randn(rows, cols, generator=g, dtype=torch.float64) * scale


@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_the_dither_is_within_half_a_step_centred_and_uniform_whatever_the_seed(seed):
    w = _planted()
    step = quant_step(w, "Q4_1")
    e = dither(w, "Q4_1", torch.Generator().manual_seed(seed))
    u = (e / step).ravel().numpy()  # the error in steps: uniform on ±1/2 for every block, whatever its step
    assert np.abs(u).max() <= 0.5 and np.abs(u).max() > 0.499
    n = u.size
    assert abs(u.mean()) < 4 * np.sqrt(1 / 12 / n)  # mean 0 within 4 standard errors
    assert u.var() == pytest.approx(1 / 12, rel=0.01)
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 4 / np.sqrt(n)  # neighbours drawn independently
    counts = np.histogram(u, bins=10, range=(-0.5, 0.5))[0]
    assert np.abs(counts / n - 0.1).max() < 0.003
    assert torch.equal(quant_step(w, "Q4_1"), step)  # the step is the weights', not the draw's


def test_seeds_draw_differently_and_a_seed_repeats():
    w = _planted(4, 64)
    a, b, a2 = (dither(w, "Q8_0", torch.Generator().manual_seed(s)) for s in (0, 1, 0))
    assert torch.equal(a, a2) and not torch.equal(a, b)
    assert torch.equal(dither(w, "Q8_0", torch.Generator().manual_seed(0), scale=0), torch.zeros_like(w))


class _Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(3)
        self.emb = torch.nn.Embedding(10, 64)
        self.lin = torch.nn.Linear(64, 32)
        self.head = torch.nn.Linear(64, 10, bias=False)
        self.norm = torch.nn.LayerNorm(64)
        with torch.no_grad():
            self.emb.weight.copy_(torch.randn(10, 64, generator=g))
            self.lin.weight.copy_(torch.randn(32, 64, generator=g))
        self.head.weight = self.emb.weight  # tied, as SmolLM2's embedding and head


def test_perturb_changes_each_quantised_tensor_once_within_its_step_and_nothing_else():
    m = _Tied()
    before = {n: p.detach().clone() for n, p in m.named_parameters()}
    types = {"emb.weight": "Q8_0", "lin.weight": "Q4_1", "norm.weight": "F32", "head.weight": "Q8_0"}
    rows = perturb(m, types, seed=0)
    assert [r["parameter"] for r in rows] == ["emb.weight", "lin.weight"]  # the tied head is the embedding's tensor
    for name, qtype in (("emb.weight", "Q8_0"), ("lin.weight", "Q4_1")):
        change = (dict(m.named_parameters())[name].detach() - before[name]).double()
        step = quant_step(before[name], qtype)
        assert (change.abs() <= step / 2 + 1e-6).all() and change.abs().max() > 0
    for name in ("lin.bias", "norm.weight", "norm.bias"):
        assert torch.equal(dict(m.named_parameters())[name], before[name])
    assert rows[1]["step_median"] == pytest.approx(float(quant_step(before["lin.weight"], "Q4_1").median()))
    assert rows[1]["error_rms"] / rows[1]["step_median"] == pytest.approx(1 / np.sqrt(12), rel=0.1)
    with pytest.raises(LinrecError, match="no parameter"):
        perturb(m, {"norm.weight": "F32"}, seed=0)
    with pytest.raises(LinrecError, match="Q2_K"):
        perturb(m, {"lin.weight": "Q2_K"}, seed=0)


def test_parameter_types_follow_ggufs_name_map(tiny_model):
    model = tiny_model("llama")
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, model.config.num_hidden_layers)
    types = {}
    for name, _ in model.named_parameters():
        mapped = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if mapped is not None:
            types[mapped] = "F32" if "norm" in mapped else "Q4_1"
    got = parameter_types(model, types)
    assert got["model.layers.1.mlp.down_proj.weight"] == "Q4_1"
    assert got["model.layers.0.input_layernorm.weight"] == "F32"
    assert len(got) == len(types)
    with pytest.raises(LinrecError, match="match no parameter"):
        parameter_types(model, {**types, "blk.9.ffn_down.weight": "Q4_1"})
