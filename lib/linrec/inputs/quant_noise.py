"""One more quantisation error, drawn on purpose: how far a model's numbers move when its weights carry a second error
of the size the GGUF release already put in them (issue 64, item 9; the K-quants: issue 87, item 8).

The offline models are quantised GGUF releases dequantised to float32 (`linrec.inputs.offline`): every weight matrix
was rounded to a grid whose step is set per block of consecutive weights of a row. `quant_step` recovers that step
from the dequantised weights themselves, per block (`STEP_RULES`). The legacy types have one scale per block of 32:

    Q4_1  (max − min) / 15      Q5_1  (max − min) / 31       (value = d·q + m, q in 0…15 or 0…31)
    Q4_0  max|x| / 8            Q5_0  max|x| / 16            (value = d·q, q in −8…7 or −16…15)
    Q8_0  max|x| / 127                                       (value = d·q, q in −127…127)

(each exact on a dequantised block: its extreme weight sits on the end of the grid; a block whose weights are all
equal has step 0). The K-quants (Gemma-3's Q4_K_M) nest them: a super-block of 256 weights holds a float16 scale d
(and dmin) and per sub-block a 6- or 8-bit scale sc (and min m), so a sub-block's step is d·sc:

    Q4_K  sub-blocks of 32: value = d·sc·q − dmin·m, q in 0…15     Q5_K  the same with q in 0…31
    Q6_K  sub-blocks of 16: value = d·sc·q, q in −32…31 (sc a signed 8-bit integer)

Their quantiser optimises each sub-block's scale, so its extremes need not sit on the grid's ends (in Gemma-3's
GGUF 21 % of the Q4_K sub-blocks span fewer than 15 steps, and 44 % of the Q6_K ones reach fewer than 32 steps from
zero, nearly all of them one short). The grid is still in the weights: a K-quant sub-block's step is its span
(max − min for Q4_K/Q5_K, max|x| for Q6_K) divided by the smallest n in 1…15 (31, 32) for which every weight lies on
the grid span/n (from the minimum, or from 0), within 1e-3 of a step; a sub-block no such n fits (weights not from
that grid) gets the finest, span/15 (31, 32), as the legacy rules do. Against the d·sc stored in Gemma-3's GGUF it is
exact on every Q4_K sub-block and on all but 10 of 737,280 Q6_K ones, whose codes are all even (they read as twice
their step: results/quant/README.md).

`dither` draws, per weight, an independent error uniform on ±step/2 (the error rounding to that grid makes, if the
original weight's place in its cell is uniform), from a seeded generator; `perturb` adds one to every quantised
matrix of a loaded model, in place, and says what it added. Which type each matrix has is read from the GGUF itself
(`gguf_types`, mapped to the model's parameter names by gguf's own name map); F32 tensors (the norms) are left alone,
and a type without a rule here (Q2_K, Q3_K, the IQ types) is one line.

`linrec.analyses.quant` measures R²_lin and perplexity under it; `benchmarks/quant.py` writes `results/quant/`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from linrec.base.errors import LinrecError


@dataclass(frozen=True)
class StepRule:
    """How a GGUF type's step is read from a block of its dequantised weights."""

    grid: str  # "offset": value = d·q + m, the span is max − min; "zero": value = d·q, the span is max|x|
    steps: int  # the most steps the span can hold (the divisor of the legacy rules: 15 for Q4_1, 127 for Q8_0)
    block: int  # consecutive weights of a row that share one step
    row: int  # a row holds whole units of this many weights (the super-block of a K-quant, else the block)
    search: bool  # True (K-quants): the step is span / n with n the smallest that puts every weight on the grid


QUANT_BLOCK = 32  # weights per scale in every legacy GGUF type, consecutive along a row (the input dimension)
K_SUPER = 256  # weights per super-block of a K-quant (QK_K)
GRID_TOLERANCE = 1e-3  # of a step: how far a dequantised weight may sit from a grid it is on (float32 rounding)
STEP_RULES: dict[str, StepRule] = {
    "Q4_0": StepRule("zero", 8, QUANT_BLOCK, QUANT_BLOCK, False),
    "Q4_1": StepRule("offset", 15, QUANT_BLOCK, QUANT_BLOCK, False),
    "Q5_0": StepRule("zero", 16, QUANT_BLOCK, QUANT_BLOCK, False),
    "Q5_1": StepRule("offset", 31, QUANT_BLOCK, QUANT_BLOCK, False),
    "Q8_0": StepRule("zero", 127, QUANT_BLOCK, QUANT_BLOCK, False),
    "Q4_K": StepRule("offset", 15, 32, K_SUPER, True),
    "Q5_K": StepRule("offset", 31, 32, K_SUPER, True),
    "Q6_K": StepRule("zero", 32, 16, K_SUPER, True),
}
UNQUANTISED = ("F32", "F16", "BF16", "F64")


def _check_type(qtype: str, where: str = "") -> None:
    if qtype not in STEP_RULES:
        raise LinrecError(
            f"no quantisation step rule for GGUF type {qtype}{where}; the rules cover {', '.join(STEP_RULES)}; "
            "pass a model whose quantised tensors are of these types"
        )


def _coarsest(blocks: torch.Tensor, origin: torch.Tensor, span: torch.Tensor, steps: int) -> torch.Tensor:
    """Per block (row of `blocks`): span / n for the smallest n in 1…`steps` with every (weight − origin) a whole
    number of span / n steps (within `GRID_TOLERANCE`), else span / `steps`; 0 where the span is 0."""
    n = torch.full_like(span, float(steps))
    found = span <= 0
    safe = torch.where(found, torch.ones_like(span), span)
    units = (blocks - origin[:, None]) / safe[:, None]  # each weight's place in the span, 0…1 (or −1…1)
    for k in range(1, steps + 1):
        r = units * k
        fits = ~found & ((r - r.round()).abs().amax(dim=1) <= GRID_TOLERANCE)
        n = torch.where(fits, torch.full_like(n, float(k)), n)
        found |= fits
        if bool(found.all()):
            break
    return span / n


def quant_step(weight: torch.Tensor, qtype: str) -> torch.Tensor:
    """Per weight, float64: the step of the grid its block of consecutive weights of a row (last dimension) was
    rounded to under GGUF type `qtype`, read from the dequantised weights (the module's table)."""
    _check_type(qtype)
    rule = STEP_RULES[qtype]
    w = weight.detach().to(torch.float64)
    if w.ndim == 0 or w.shape[-1] % rule.row:
        unit = "blocks" if rule.row == rule.block else "super-blocks"
        raise LinrecError(
            f"a {qtype} tensor's rows hold whole {unit} of {rule.row} weights; this one has shape {tuple(w.shape)}"
        )
    blocks = w.reshape(-1, rule.block)
    if rule.grid == "offset":
        origin = blocks.amin(dim=1)
        span = blocks.amax(dim=1) - origin
    else:
        origin = torch.zeros(blocks.shape[0], dtype=torch.float64)
        span = blocks.abs().amax(dim=1)
    step = _coarsest(blocks, origin, span, rule.steps) if rule.search else span / rule.steps
    return step[:, None].expand(-1, rule.block).reshape(w.shape)


def dither(
    weight: torch.Tensor,
    qtype: str,
    generator: torch.Generator,
    scale: float = 1.0,
    step: torch.Tensor | None = None,
) -> torch.Tensor:
    """An error for `weight` (float64, its shape): per weight independent, uniform on ±step/2 of its block
    (`quant_step`, or `step` where the caller has it) times `scale` (1: one step; 0: no error, the same draws made),
    drawn from `generator`."""
    step = (quant_step(weight, qtype) if step is None else step) * float(scale)
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


def gguf_architecture(path: str | Path) -> str:
    """The `general.architecture` of GGUF file `path` ("llama", "gemma3"): the name `parameter_types` maps by (a
    transformers model_type may differ: Gemma-3's is "gemma3_text")."""
    from gguf import GGUFReader

    try:
        reader = GGUFReader(str(path))
    except (OSError, ValueError) as err:
        raise LinrecError(f"cannot read GGUF {path} ({err}); pass the model's .gguf file") from None
    field = reader.get_field("general.architecture")
    if field is None:
        raise LinrecError(f"GGUF {path} names no general.architecture; pass a complete .gguf model file")
    return str(field.contents())


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
        steps = quant_step(param.data.cpu(), qtype)  # before the error moves the weights off their grid
        step = float(steps.median())
        error = dither(param.data.cpu(), qtype, gen, scale, step=steps)
        param.add_(error.to(device=param.device, dtype=param.dtype))
        shape = "×".join(map(str, param.shape))
        rows.append({"parameter": name, "type": qtype, "shape": shape, "step_median": step,
                     "error_rms": float(error.pow(2).mean().sqrt())})  # fmt: skip
    if not rows:
        raise LinrecError("no parameter of the model is quantised by the types given; pass parameter_types(model, …)")
    return rows
