"""One more quantisation error, drawn on purpose: how far a model's numbers move when its weights carry a second error
of the size the GGUF release already put in them (issue 64, item 9).

The offline models are quantised GGUF releases dequantised to float32 (`linrec.inputs.offline`): every weight matrix
was rounded to a grid whose step is set per block of 32 consecutive weights of a row. `quant_step` recovers that step
from the dequantised weights themselves, per block, for the legacy block-32 types:

    Q4_1  (max − min) / 15      Q5_1  (max − min) / 31       (value = d·q + m, q in 0…15 or 0…31)
    Q4_0  max|x| / 8            Q5_0  max|x| / 16            (value = d·q, q in −8…7 or −16…15)
    Q8_0  max|x| / 127                                       (value = d·q, q in −127…127)

(each exact on a dequantised block: its extreme weight sits on the end of the grid; a block whose weights are all
equal has step 0). `dither` draws, per weight, an independent error uniform on ±step/2 (the error rounding to that grid
makes, if the original weight's place in its cell is uniform), from a seeded generator; `perturb` adds one to every
quantised matrix of a loaded model, in place, and says what it added. Which type each matrix has is read from the GGUF
itself (`gguf_types`, mapped to the model's parameter names by gguf's own name map); F32 tensors (the norms) are left
alone, and a type without a rule here (the K-quants of Gemma-3's Q4_K_M, whose scales are nested) is one line.

`linrec.analyses.quant` measures R²_lin and perplexity under it; `benchmarks/quant.py` writes `results/quant/`.
"""

from __future__ import annotations

from pathlib import Path

import torch

from linrec.base.errors import LinrecError

QUANT_BLOCK = 32  # weights per scale in every legacy GGUF type, consecutive along a row (the input dimension)
# type → (how a block's step is read from its weights, the divisor): "range" (max − min) / k, "absmax" max|x| / k
STEP_RULES: dict[str, tuple[str, int]] = {
    "Q4_0": ("absmax", 8),
    "Q4_1": ("range", 15),
    "Q5_0": ("absmax", 16),
    "Q5_1": ("range", 31),
    "Q8_0": ("absmax", 127),
}
UNQUANTISED = ("F32", "F16", "BF16", "F64")


def _check_type(qtype: str, where: str = "") -> None:
    if qtype not in STEP_RULES:
        raise LinrecError(
            f"no quantisation step rule for GGUF type {qtype}{where}; the rules cover {', '.join(STEP_RULES)} "
            "(blocks of 32 with one scale); a K-quant model (e.g. gemma3-270m's Q4_K_M) cannot be perturbed here"
        )


def quant_step(weight: torch.Tensor, qtype: str) -> torch.Tensor:
    """Per weight, float64: the step of the grid its block of `QUANT_BLOCK` consecutive weights of a row (last
    dimension) was rounded to under GGUF type `qtype`, read from the dequantised weights (the module's table)."""
    _check_type(qtype)
    w = weight.detach().to(torch.float64)
    if w.ndim == 0 or w.shape[-1] % QUANT_BLOCK:
        raise LinrecError(
            f"a {qtype} tensor's rows hold whole blocks of {QUANT_BLOCK} weights; this one has shape {tuple(w.shape)}"
        )
    blocks = w.reshape(-1, QUANT_BLOCK)
    rule, k = STEP_RULES[qtype]
    if rule == "range":
        step = (blocks.amax(dim=1) - blocks.amin(dim=1)) / k
    else:
        step = blocks.abs().amax(dim=1) / k
    return step[:, None].expand(-1, QUANT_BLOCK).reshape(w.shape)


def dither(weight: torch.Tensor, qtype: str, generator: torch.Generator, scale: float = 1.0) -> torch.Tensor:
    """An error for `weight` (float64, its shape): per weight independent, uniform on ±step/2 of its block
    (`quant_step`) times `scale` (1: one step; 0: no error, the same draws made), drawn from `generator`."""
    step = quant_step(weight, qtype) * float(scale)
    u = torch.rand(step.shape, generator=generator, dtype=torch.float64)
    return (u - 0.5) * step


def gguf_types(path: str | Path) -> dict[str, str]:
    """{tensor name in the GGUF: its type's name ("Q4_1", "F32", …)} of GGUF file `path`."""
    from gguf import GGUFReader

    try:
        reader = GGUFReader(str(path))
    except (OSError, ValueError) as err:
        raise LinrecError(f"cannot read GGUF {path} ({err}); pass the model's .gguf file") from None
    return {t.name: t.tensor_type.name for t in reader.tensors}


def parameter_types(model: torch.nn.Module, types: dict[str, str], arch: str = "llama") -> dict[str, str]:
    """{parameter name of `model`: its GGUF type} for the parameters the GGUF holds (`types`, from `gguf_types`),
    matched by gguf's name map for `arch` (transformers names → GGUF names); a parameter the map does not know is
    left out, and a GGUF tensor no parameter matches is one line (the map and the file disagree)."""
    import gguf

    arches = {v: k for k, v in gguf.MODEL_ARCH_NAMES.items()}
    if arch not in arches:
        raise LinrecError(f"gguf knows no architecture {arch!r}; pass the GGUF's general.architecture (e.g. llama)")
    n_blocks = int(getattr(model.config, "num_hidden_layers", 0) or 0)
    names = gguf.get_tensor_name_map(arches[arch], n_blocks)
    out: dict[str, str] = {}
    for name, _ in model.named_parameters():
        mapped = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if mapped is not None and mapped in types:
            out[name] = types[mapped]
    missing = set(types) - {names.get_name(n, try_suffixes=(".weight", ".bias")) for n in out}
    if missing:
        raise LinrecError(
            f"{len(missing)} GGUF tensors match no parameter of the model (e.g. {sorted(missing)[0]}); pass the model "
            "loaded from this GGUF"
        )
    return out


@torch.no_grad()
def perturb(model: torch.nn.Module, types: dict[str, str], seed: int, scale: float = 1.0) -> list[dict]:
    """Add to every quantised parameter of `model` (`types`: {parameter name: GGUF type}, from `parameter_types`;
    unquantised types left alone) one `dither` of its type's step (times `scale`), in place, drawn in parameter order
    from one generator seeded `seed`. Tied parameters (SmolLM2's embedding and head) are one tensor and get one draw.
    Returns one row per parameter perturbed: name, type, shape, median step, RMS error added (in float64, before the
    cast back to the parameter's dtype)."""
    for name, qtype in types.items():
        if qtype not in UNQUANTISED:
            _check_type(qtype, f" (parameter {name})")
    gen = torch.Generator().manual_seed(int(seed))
    rows, seen = [], set()
    for name, param in model.named_parameters():
        qtype = types.get(name)
        if qtype is None or qtype in UNQUANTISED or param.data_ptr() in seen:
            continue
        seen.add(param.data_ptr())
        step = float(quant_step(param.data.cpu(), qtype).median())  # before the error changes the block's extremes
        error = dither(param.data.cpu(), qtype, gen, scale)
        param.add_(error.to(device=param.device, dtype=param.dtype))
        shape = "×".join(map(str, param.shape))
        rows.append({"parameter": name, "type": qtype, "shape": shape, "step_median": step,
                     "error_rms": float(error.pow(2).mean().sqrt())})  # fmt: skip
    if not rows:
        raise LinrecError("no parameter of the model is quantised by the types given; pass parameter_types(model, …)")
    return rows
