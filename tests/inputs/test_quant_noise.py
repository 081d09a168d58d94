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


def test_refuses_a_k_quant_and_a_partial_block():
    with pytest.raises(LinrecError, match="Q4_K.*K-quant"):
        quant_step(torch.zeros(2, 64), "Q4_K")
    with pytest.raises(LinrecError, match="whole blocks of 32"):
        quant_step(torch.zeros(2, 48), "Q4_1")


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
    with pytest.raises(LinrecError, match="Q6_K"):
        perturb(m, {"lin.weight": "Q6_K"}, seed=0)


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
