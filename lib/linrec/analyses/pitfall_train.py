"""The trained baselines of claim 7b's budget curve and dose (`linrec.analyses.pitfall`): mini-batch Adam and SGD on
y ≈ Wᵀx + b, every learning rate of a grid as one batched tensor, tuned on a validation slice, and many such runs at
once on the caller's threads.

`train_curves` is the trainer the tables use; `train_curves_reference` is the arithmetic it must equal, kept as it was
written first (every rate trained to the last step, `x[idx]` gathered per step, every update a fresh tensor): the
tests compare the two bit for bit, and `benchmarks/pitfall.py` times them. Three things make `train_curves` faster and
none changes a number:

- the mini-batch rows are copied out with `index_select` (what `x[idx]` computes, without the general indexing
  machinery that cost more than the batch's products did), and the updates write into buffers kept across steps, in
  the reference's order of operations (same rounding);
- a learning rate whose parameters turn non-finite (a diverged step) leaves the batch: a non-finite weight stays
  non-finite under every later update (NaN and ±inf propagate through the products, the momentum and Adam's
  moments), so each of its later checkpoints is −inf, what the reference's `_r2_batched` reports for it; the products
  of the others are per-rate matrix products (`torch.matmul` of [L, ·, ·] batches), the same bits at any L;
- `tune_many` runs the (split, optimizer) tunings of a table as independent jobs on a pool of threads, one BLAS thread
  each, and assembles them in a fixed order: the table is the same whatever the number of threads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from linrec.analyses.parallel import run_jobs
from linrec.base.errors import LinrecError
from linrec.base.threads import one_thread

if TYPE_CHECKING:
    from collections.abc import Callable

    import pandas

# The learning-rate grids the budget curve starts from on the validation slice: the practitioner's default
# (linrec.analyses.probe.TRAIN_DEFAULTS) and a decade on either side; `tune` extends them past an end that is chosen.
LR_GRID = {"adam": (1e-4, 1e-3, 1e-2), "sgd": (1e-3, 1e-2, 1e-1)}
LR_EXTEND = 4  # at most this many rounds of extension, each a factor of 10 past every end a chosen rate sits on
MOMENTUM = 0.9  # SGD's, as in linrec.analyses.probe.TRAIN_DEFAULTS
BETAS, EPS = (0.9, 0.999), 1e-8  # Adam's (PyTorch's defaults)
DEAD_EVERY = 25  # `train_curves` looks for diverged rates (non-finite parameters) every this many steps


def linear_init(d: int, m: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """torch.nn.Linear's default initialisation of a d → m map, drawn from `gen` in its order (weight, then bias), as
    `linrec.analyses.probe.train_affine` draws it: W [d, m] and b [m], float32."""
    bound = 1 / np.sqrt(d)
    w = torch.empty(m, d).uniform_(-bound, bound, generator=gen)
    b = torch.empty(m).uniform_(-bound, bound, generator=gen)
    return w.T, b


def _r2_batched(y: torch.Tensor, pred: torch.Tensor) -> np.ndarray:
    """Variance-weighted R² (as `linrec.stats.ceiling.r2_rows`) for each of a batch of predictions [L, n, m], float64;
    −inf where a prediction is not finite (that learning rate diverged)."""
    y = y.double()
    sst = (y - y.mean(0)).square().sum()
    sse = (pred.double() - y).square().sum(dim=(1, 2))
    r2 = (1 - sse / sst).numpy()
    return np.where(torch.isfinite(pred).all(dim=(1, 2)).numpy(), r2, -np.inf)


def _checked(optimizer: str, checkpoints) -> list[int]:
    if optimizer not in LR_GRID:
        raise LinrecError(f"optimizer must be one of {', '.join(LR_GRID)}, got '{optimizer}'")
    checkpoints = sorted({int(c) for c in checkpoints})
    if not checkpoints or checkpoints[0] < 1:
        raise LinrecError(f"checkpoints must be positive step counts, got {checkpoints}")
    return checkpoints


def _rows(optimizer: str, lrs, checkpoints, r2_val: np.ndarray, r2_test: np.ndarray) -> pandas.DataFrame:
    """The curves' table: one row per (checkpoint, learning rate), in that order."""
    rows = [{"optimizer": optimizer, "lr": float(v), "step": c, "r2_val": r2_val[j, i], "r2_test": r2_test[j, i]}
            for j, c in enumerate(checkpoints) for i, v in enumerate(lrs)]  # fmt: skip
    return pd.DataFrame(rows)


@one_thread()
def train_curves(
    split,
    optimizer: str,
    lrs,
    checkpoints,
    batch_size: int = 256,
    seed: int = 0,
) -> pandas.DataFrame:
    """Mini-batch Adam or SGD (momentum 0.9) on y ≈ Wᵀx + b for every learning rate in `lrs` at once; one row per
    (learning rate, checkpoint step): validation and held-out R².

    The same updates as `torch.optim.Adam` / `torch.optim.SGD` on `linrec.analyses.probe.train_affine`'s loss (Σ_j
    squared error per row, averaged over the batch), from the same initialisation and the same mini-batches (a fresh
    seeded permutation each epoch), written out by hand so that the learning rates train as one batched tensor. The
    same numbers, bit for bit, as `train_curves_reference` (the module docstring says what differs: only the cost)."""

    checkpoints = _checked(optimizer, checkpoints)
    x, y = split.xtr, split.ytr
    n, d = x.shape
    m = y.shape[1]
    rates = [float(v) for v in lrs]
    live = list(range(len(rates)))  # the rates still finite, in the batch's order
    lr = torch.tensor(rates, dtype=x.dtype).view(-1, 1, 1)
    gen = torch.Generator().manual_seed(seed)
    w0, b0 = linear_init(d, m, gen)  # then the same generator draws the mini-batches
    W = w0.to(x.dtype).contiguous().expand(len(rates), d, m).clone()
    b = b0.to(x.dtype).expand(len(rates), 1, m).clone()
    # per parameter: its two moments (Adam) or its momentum buffer (SGD, the first), and two scratch tensors
    state = [[torch.zeros_like(p) for _ in range(4)] for p in (W, b)]
    r2_val = np.full((len(checkpoints), len(rates)), -np.inf)
    r2_test = r2_val.copy()
    step, perm, pos = 0, None, n
    beta1, beta2 = BETAS
    with torch.no_grad():
        for j, target in enumerate(checkpoints):
            while step < target and live:
                if pos >= n:
                    perm, pos = torch.randperm(n, generator=gen), 0
                idx = perm[pos : pos + batch_size]
                pos += batch_size
                xb, yb = x.index_select(0, idx), y.index_select(0, idx)
                resid = torch.matmul(xb, W).add_(b).sub_(yb)  # [L, B, m]
                gW = torch.matmul(xb.T, resid).mul_(2.0 / len(idx))
                gb = resid.sum(1, keepdim=True).mul_(2.0 / len(idx))
                step += 1
                for p, g, (m1, m2, t1, t2) in ((W, gW, state[0]), (b, gb, state[1])):
                    if optimizer == "sgd":  # m1: the momentum buffer
                        m1.copy_(g) if step == 1 else m1.mul_(MOMENTUM).add_(g)
                        p.sub_(torch.mul(lr, m1, out=t1))
                    else:
                        m1.mul_(beta1).add_(g, alpha=1 - beta1)
                        m2.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                        torch.div(m2, 1 - beta2**step, out=t2).sqrt_().add_(EPS)
                        p.sub_(torch.mul(lr / (1 - beta1**step), m1, out=t1).div_(t2))
                if step % DEAD_EVERY == 0 or step == target:
                    finite = torch.isfinite(W).flatten(1).all(1) & torch.isfinite(b).flatten(1).all(1)
                    if not finite.all():  # diverged rates leave the batch: −inf at every later checkpoint
                        keep = finite.nonzero().flatten()
                        W, b, lr = W[keep], b[keep], lr[keep]
                        state = [[s[keep] for s in group] for group in state]
                        live = [live[i] for i in keep.tolist()]
            if live:
                r2_val[j, live] = _r2_batched(split.yval, torch.matmul(split.xval, W) + b)
                r2_test[j, live] = _r2_batched(split.yte, torch.matmul(split.xte, W) + b)
    return _rows(optimizer, rates, checkpoints, r2_val, r2_test)


@one_thread()
def train_curves_reference(
    split, optimizer: str, lrs, checkpoints, batch_size: int = 256, seed: int = 0
) -> pandas.DataFrame:
    """`train_curves` as it was first written, the reference its numbers are tested against: every rate to the
    last step (diverged ones too), the batch gathered by `x[idx]`, each update a new tensor."""

    checkpoints = _checked(optimizer, checkpoints)
    x, y = split.xtr, split.ytr
    n, d = x.shape
    m = y.shape[1]
    L = len(lrs)
    lr = torch.tensor([float(v) for v in lrs], dtype=x.dtype).view(L, 1, 1)
    gen = torch.Generator().manual_seed(seed)
    w0, b0 = linear_init(d, m, gen)
    W = w0.to(x.dtype).contiguous().expand(L, d, m).clone()
    b = b0.to(x.dtype).expand(L, 1, m).clone()
    state = [torch.zeros_like(W), torch.zeros_like(b), torch.zeros_like(W), torch.zeros_like(b)]
    r2_val, r2_test = np.zeros((len(checkpoints), L)), np.zeros((len(checkpoints), L))
    step, perm, pos = 0, None, n
    beta1, beta2 = BETAS
    with torch.no_grad():
        for j, target in enumerate(checkpoints):
            while step < target:
                if pos >= n:
                    perm, pos = torch.randperm(n, generator=gen), 0
                idx = perm[pos : pos + batch_size]
                pos += batch_size
                xb, yb = x[idx], y[idx]
                resid = torch.matmul(xb, W) + b - yb  # [L, B, m]
                gW = torch.matmul(xb.T, resid) * (2.0 / len(idx))
                gb = resid.sum(1, keepdim=True) * (2.0 / len(idx))
                step += 1
                if optimizer == "sgd":
                    bufW, bufb = state[0], state[1]
                    if step == 1:
                        bufW.copy_(gW), bufb.copy_(gb)
                    else:
                        bufW.mul_(MOMENTUM).add_(gW), bufb.mul_(MOMENTUM).add_(gb)
                    W.sub_(lr * bufW), b.sub_(lr * bufb)
                else:
                    for p, g, m1, m2 in ((W, gW, state[0], state[2]), (b, gb, state[1], state[3])):
                        m1.mul_(beta1).add_(g, alpha=1 - beta1)
                        m2.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                        denom = (m2 / (1 - beta2**step)).sqrt_().add_(EPS)
                        p.sub_(lr / (1 - beta1**step) * m1 / denom)
            r2_val[j] = _r2_batched(split.yval, torch.matmul(split.xval, W) + b)
            r2_test[j] = _r2_batched(split.yte, torch.matmul(split.xte, W) + b)
    return _rows(optimizer, lrs, checkpoints, r2_val, r2_test)


def tuned(curves: pandas.DataFrame) -> pandas.DataFrame:
    """Per optimizer and step budget: the learning rate with the best validation R² there, and its held-out R²
    (the step a practitioner who tunes on train rows would pick for that budget)."""
    best = curves.sort_values(["optimizer", "step", "r2_val", "lr"], ascending=[True, True, False, True])
    return best.groupby(["optimizer", "step"], sort=False).head(1).reset_index(drop=True)


def tune(split, optimizer: str, checkpoints, batch_size: int = 256, seed: int = 0, lrs=None,
         extend: int = LR_EXTEND, trainer=train_curves) -> pandas.DataFrame:  # fmt: skip
    """`train_curves` over a learning-rate grid (`lrs`, default LR_GRID[optimizer]) that grows until the rate the
    validation slice picks at every checkpoint (`tuned`) is interior: while some checkpoint's chosen rate is the
    smallest (largest) tried, a rate 10× smaller (larger) is trained too, at most `extend` rounds. Every rate trains
    from the same initialisation on the same mini-batches, so one added later trains as it would have beside the
    others. Returned: every curve, with `chosen` (the rate picked at that step) and `lr_interior` (whether that
    step's chosen rate has a tried rate on either side; False where it still sits on an end). `trainer`:
    `train_curves`, or `train_curves_reference` (the same numbers, slower)."""

    lrs = sorted(float(v) for v in (LR_GRID[optimizer] if lrs is None else lrs))
    curves = trainer(split, optimizer, lrs, checkpoints, batch_size=batch_size, seed=seed)
    for _ in range(extend):
        best = tuned(curves)["lr"]
        new = [float(f"{v:.6g}") for v, end in ((lrs[0] / 10, lrs[0]), (lrs[-1] * 10, lrs[-1])) if (best == end).any()]
        if not new:
            break
        more = trainer(split, optimizer, new, checkpoints, batch_size=batch_size, seed=seed)
        curves, lrs = pd.concat([curves, more], ignore_index=True), sorted(lrs + new)
    best = tuned(curves)[["optimizer", "step", "lr"]].assign(chosen=True)
    best["lr_interior"] = (best["lr"] > lrs[0]) & (best["lr"] < lrs[-1])
    out = curves.merge(best, on=["optimizer", "step", "lr"], how="left")
    out["chosen"] = out["chosen"].astype("boolean").fillna(False).astype(bool)
    interior = best.set_index("step")["lr_interior"]
    out["lr_interior"] = out["step"].map(interior).astype(bool)
    return out


@dataclass(frozen=True)
class Training:
    """How `tune_many` trains a table's baselines: mini-batches of `batch_size` rows, the tunings on `workers` threads
    (None: the caller's torch thread count; the numbers are the same at any count), by `trainer` (`train_curves`, or
    `train_curves_reference`: the same numbers, slower), with a progress bar unless `progress` is False."""

    batch_size: int = 256
    workers: int | None = None
    trainer: Callable = train_curves
    progress: bool = True


def tune_many(
    splits, checkpoints, seed: int = 0, training: Training | None = None, desc: str = "trained baselines"
) -> list[pandas.DataFrame]:
    """Both optimizers' curves over their tuned, extended grids (`tune`) for each of `splits`: per split, Adam's then
    SGD's rows. The (split, optimizer) tunings are independent jobs on `training.workers` threads
    (`linrec.analyses.parallel`: the same numbers at any count)."""

    training = training or Training()
    jobs = [(split, opt) for split in splits for opt in LR_GRID]
    bs, trainer = training.batch_size, training.trainer
    done = run_jobs(lambda job: tune(*job, checkpoints, bs, seed, trainer=trainer), jobs, training.workers, desc,
                    unit="tuning", progress=training.progress)  # fmt: skip
    k = len(LR_GRID)
    return [pd.concat(done[i : i + k], ignore_index=True) for i in range(0, len(done), k)]
