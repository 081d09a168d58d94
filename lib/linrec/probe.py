"""What the closed-form map misses, probed two ways (notebook 03, Figure 3).

1. **The pitfall** (paper, claim 7): an affine map x → y *trained* by gradient descent (Adam or
   SGD, with the defaults a practitioner would pick) on the same train rows, scored on the same
   held-out rows as the closed-form ceiling. On ill-conditioned inputs it stops short of the
   ceiling; whitened inputs, or many more steps, close the gap — so the gap is conditioning.
2. **Rank-k bilinear probe of the residual** r = y − (Wᵀx + b) (paper, claim 3):

       r̂(x) = C · (g ⊙ (U x̃) ⊙ (V x̃)) + e,   x̃ = (x − μ)/σ (train statistics)

   U, V: [k, d_in], C: [d_out, k] (columns unit-norm), g: [k] a multiplicative gate per term,
   e: [d_out]. R²_poly is the held-out R² of (Wᵀx + b + r̂(x)) on y; gain = R²_poly − R²_lin on
   the same held-out rows.

   Seeding (documented choice): principal Hessian directions (Li, 1992). C starts at the top-k
   principal directions p_k of the train residual. For each, s_k = p_kᵀr and the matrix
   H_k = mean(s_k · x̃ x̃ᵀ) (by Stein's lemma, proportional to the Hessian of E[s_k | x] for
   Gaussian x̃) gives u_k = v_k = its dominant eigenvector (power iteration); the gate g_k starts
   at the least-squares scale of s_k on (u_kᵀx̃)². When the residual holds no quadratic signal
   the seeded gates are ≈ 0 (the terms are "de-recruited"), so the gain stays ≈ 0 instead of
   fitting noise. Training is Adam on mini-batches, run until the train loss flattens
   (relative improvement over `patience` epochs below `tol`), with the curve kept; the probe
   scored is the one with the lowest loss on a validation tenth of the train rows.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import torch

from linrec.ceiling import AffineFit, fit_affine, r2_rows
from linrec.errors import LinrecError
from linrec.moments import Moments

if TYPE_CHECKING:
    import pandas


@dataclass
class Rows:
    """Stored (x, y) rows of one block, split; float32 tensors."""

    xtr: torch.Tensor
    ytr: torch.Tensor
    xte: torch.Tensor
    yte: torch.Tensor

    @classmethod
    def from_capture(cls, capture, block: int, max_train: int | None = None) -> Rows:
        xtr, ytr = capture.rows(block, "train")
        xte, yte = capture.rows(block, "test")
        if len(xte) == 0 or len(xtr) <= xtr.shape[1] + 1:
            raise LinrecError(
                f"block {block}: the row sample holds {len(xtr)} train / {len(xte)} test rows; "
                "capture with a larger sample_rows"
            )
        if max_train is not None:
            xtr, ytr = xtr[:max_train], ytr[:max_train]
        t = lambda a: torch.from_numpy(np.array(a, dtype=np.float32))  # noqa: E731
        return cls(t(xtr), t(ytr), t(xte), t(yte))


# ---- 1. trained linear baselines ---------------------------------------------------------------
TRAIN_DEFAULTS = {  # what a practitioner would reach for first
    "adam": {"lr": 1e-3, "epochs": 5, "batch_size": 256},
    "sgd": {"lr": 1e-2, "momentum": 0.9, "epochs": 5, "batch_size": 256},
}


@dataclass
class Trained:
    r2_test: float
    losses: list[float] = field(default_factory=list)  # train loss (Σ_j squared error per row) after each epoch


def _whitener(x: torch.Tensor):
    """A map x ↦ (x − μ)T with identity covariance on `x` (PCA whitening).

    The projection runs in float64: in float32, projecting activations with features ~1e3 onto
    low-variance directions loses most of their digits, and whitening then amplifies that noise.
    """
    xd = x.double()
    mu = xd.mean(0)
    lam, V = torch.linalg.eigh(torch.cov(xd.T))
    keep = lam > lam[-1] * 1e-12
    T = V[:, keep] / lam[keep].sqrt()
    return lambda a: ((a.double() - mu) @ T).float()


def train_affine(
    rows: Rows,
    optimizer: str = "adam",
    epochs: int | None = None,
    lr: float | None = None,
    batch_size: int | None = None,
    whiten: bool = False,
    decay: bool = False,
    seed: int = 0,
) -> Trained:
    """Fit y ≈ Wᵀx + b by mini-batch gradient descent on the per-row squared error;
    held-out R² (deterministic per seed on CPU).

    The loss is the closed form's objective, Σ_j (y_j − ŷ_j)² averaged over rows (not over
    outputs too, as `mse_loss` would: that divides SGD's step by d_out). A run whose loss turns
    non-finite stops and reports R² = −inf (diverged).
    """
    if optimizer not in TRAIN_DEFAULTS:
        raise LinrecError(f"optimizer must be one of {', '.join(TRAIN_DEFAULTS)}, got '{optimizer}'")
    cfg = {**TRAIN_DEFAULTS[optimizer]}
    cfg.update({k: v for k, v in {"epochs": epochs, "lr": lr, "batch_size": batch_size}.items() if v is not None})
    gen = torch.Generator().manual_seed(seed)
    xtr, xte = rows.xtr, rows.xte
    if whiten:
        white = _whitener(xtr)
        xtr, xte = white(xtr), white(xte)
    lin = torch.nn.Linear(xtr.shape[1], rows.ytr.shape[1])
    with torch.no_grad():  # PyTorch's default init, drawn from our generator
        bound = 1 / np.sqrt(xtr.shape[1])
        lin.weight.uniform_(-bound, bound, generator=gen)
        lin.bias.uniform_(-bound, bound, generator=gen)
    opt = (
        torch.optim.Adam(lin.parameters(), lr=cfg["lr"])
        if optimizer == "adam"
        else torch.optim.SGD(lin.parameters(), lr=cfg["lr"], momentum=cfg["momentum"])
    )
    losses = []
    n = len(xtr)
    steps = cfg["epochs"] * -(-n // cfg["batch_size"])
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda k: 1 - k / steps if decay else 1.0
    )  # linear decay to 0 when asked
    for _ in range(cfg["epochs"]):
        perm = torch.randperm(n, generator=gen)
        total = 0.0
        for i in range(0, n, cfg["batch_size"]):
            idx = perm[i : i + cfg["batch_size"]]
            loss = (lin(xtr[idx]) - rows.ytr[idx]).square().sum(1).mean()  # Σ‖y − Wx − b‖² per row, as the closed form
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(idx)
        losses.append(total / n)
        if not np.isfinite(losses[-1]):
            break  # diverged: report what it reached
    with torch.no_grad():
        pred = lin(xte)
    return Trained(r2_test=r2_rows(rows.yte, pred) if torch.isfinite(pred).all() else float("-inf"), losses=losses)


def closed_form_on_rows(rows: Rows) -> tuple[AffineFit, float]:
    """The exact ceiling fitted on these very rows (same train rows as the trained baselines) and its held-out R²."""
    fit = fit_affine(Moments.of(rows.xtr, rows.ytr))
    pred = torch.from_numpy(fit.predict(rows.xte.double().numpy()))
    return fit, r2_rows(rows.yte, pred)


# ---- 2. rank-k bilinear probe ------------------------------------------------------------------
class BilinearProbe(torch.nn.Module):
    """r̂(x) = C · (g ⊙ (U x̃) ⊙ (V x̃)) + e on standardised inputs x̃ (see module docstring)."""

    def __init__(self, mu, sigma, U, V, C, g, e):
        super().__init__()
        self.register_buffer("mu", mu)  # [d_in]
        self.register_buffer("sigma", sigma)  # [d_in]
        self.U = torch.nn.Parameter(U)  # [k, d_in]
        self.V = torch.nn.Parameter(V)  # [k, d_in]
        self.C = torch.nn.Parameter(C)  # [d_out, k]
        self.g = torch.nn.Parameter(g)  # [k]
        self.e = torch.nn.Parameter(e)  # [d_out]

    def forward(self, x):
        xt = (x - self.mu) / self.sigma
        return (self.g * (xt @ self.U.T) * (xt @ self.V.T)) @ self.C.T + self.e


def seed_probe(
    x: torch.Tensor, r: torch.Tensor, rank: int = 16, n_seed: int = 4096, iters: int = 40, seed: int = 0
) -> BilinearProbe:
    """Principal-Hessian-direction initialisation of a rank-`rank` probe (see module docstring).

    The dominant eigenvector of each H_k = mean(s_k · x̃x̃ᵀ) comes from `iters` steps of power
    iteration, matrix-free (H_k v = x̃ᵀ(s_k ⊙ x̃v)/n), all k at once: O(iters·n·d·k) instead of k
    dense d×d eigendecompositions.
    """
    xd, rd = x[:n_seed].double(), r[:n_seed].double()
    mu, sigma = x.double().mean(0), x.double().std(0).clamp_min(1e-12)
    xt = (xd - mu) / sigma  # [n, d_in]
    rc = rd - rd.mean(0)
    _, P = torch.linalg.eigh(rc.T @ rc)
    P = P[:, -rank:].flip(1)  # [d_out, k] top principal directions of the residual
    s = rc @ P  # [n, k] residual scores
    gen = torch.Generator().manual_seed(seed)
    U = torch.randn(x.shape[1], rank, generator=gen, dtype=torch.float64)  # [d_in, k]
    for _ in range(iters):
        U = xt.T @ (s * (xt @ U)) / len(xt)  # H_k u_k for every k
        U = U / U.norm(dim=0).clamp_min(1e-300)
    q = (xt @ U) ** 2
    q = q - q.mean(0)
    g = (s * q).sum(0) / (q * q).sum(0).clamp_min(1e-30)  # least-squares scale of s_k on (u_kᵀx̃)²
    U = U.T.contiguous()  # [k, d_in]
    e = -(P * g) @ ((xt @ U.T) ** 2).mean(0)  # so r̂ has the train residual's mean (zero) at the start
    f = lambda a: a.float().contiguous()  # noqa: E731
    return BilinearProbe(f(mu), f(sigma), f(U), f(U.clone()), f(P), f(g), f(e))


@dataclass
class ProbeResult:
    r2_lin: float  # closed-form map on these held-out rows
    r2_poly: float  # closed-form map + bilinear probe
    losses: list[float]
    stop: str  # "flattened" (train loss), "validation" (no better for `patience` epochs) or "max_epochs"
    epochs: int

    @property
    def converged(self) -> bool:
        """True unless training hit `max_epochs` with the loss still falling on both splits."""
        return self.stop != "max_epochs"

    @property
    def gain(self) -> float:
        return self.r2_poly - self.r2_lin


def fit_probe(
    rows: Rows,
    fit: AffineFit,
    rank: int = 16,
    lr: float = 1e-2,
    batch_size: int = 512,
    max_epochs: int = 20,
    tol: float = 1e-3,
    patience: int = 3,
    val_frac: float = 0.1,
    seed: int = 0,
) -> ProbeResult:
    """Seed and train a rank-`rank` bilinear probe on the residual of `fit`; held-out R²_lin and R²_poly.

    A seeded `val_frac` of the train rows is set aside: the probe kept is the one with the lowest
    validation loss (the seeded start included), so a probe that starts to fit a few extreme rows
    is not the one scored. Training stops when the train loss flattens (relative improvement over
    `patience` epochs below `tol`: stop "flattened"), when validation has not improved for `patience`
    epochs, or after `max_epochs`. The test rows are used once, at the end.
    """
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    W, b = torch.from_numpy(fit.W).float(), torch.from_numpy(fit.b).float()
    perm0 = torch.randperm(len(rows.xtr), generator=gen)
    n_val = max(1, int(val_frac * len(perm0)))
    tr, va = perm0[n_val:], perm0[:n_val]
    xtr, xva = rows.xtr[tr], rows.xtr[va]
    rtr = rows.ytr[tr] - (xtr @ W + b)
    rva = rows.ytr[va] - (xva @ W + b)
    lin_te = rows.xte @ W + b
    probe = seed_probe(xtr, rtr, rank, seed=seed)
    opt = torch.optim.Adam(probe.parameters(), lr=lr)

    def val_loss() -> float:
        with torch.no_grad():
            return torch.nn.functional.mse_loss(probe(xva), rva).item()

    best, best_state, since_best = val_loss(), copy.deepcopy(probe.state_dict()), 0
    losses: list[float] = []
    n, stop = len(xtr), "max_epochs"
    for _epoch in range(max_epochs):
        perm = torch.randperm(n, generator=gen)
        total = 0.0
        for i in range(0, n, batch_size):
            idx = perm[i : i + batch_size]
            loss = torch.nn.functional.mse_loss(probe(xtr[idx]), rtr[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        losses.append(total / n)
        v = val_loss()
        if v < best:
            best, best_state, since_best = v, copy.deepcopy(probe.state_dict()), 0
        else:
            since_best += 1
        if len(losses) > patience and losses[-1 - patience] - losses[-1] < tol * losses[-1 - patience]:
            stop = "flattened"
            break
        if since_best >= patience:
            stop = "validation"
            break
    probe.load_state_dict(best_state)
    with torch.no_grad():
        poly_te = lin_te + probe(rows.xte)
    return ProbeResult(
        r2_lin=r2_rows(rows.yte, lin_te),
        r2_poly=r2_rows(rows.yte, poly_te),
        losses=losses,
        stop=stop,
        epochs=len(losses),
    )


def probe_table(
    capture, rank: int = 16, seed: int = 0, trained: bool = True, max_train: int | None = None, progress: bool = True
) -> pandas.DataFrame:
    """One row per block: closed-form ceiling, bilinear probe (R²_poly, gain) and trained baselines (Adam, SGD)."""
    import time

    import pandas as pd
    from tqdm import tqdm

    rows_out = []
    for i in tqdm(range(capture.n_blocks), desc=f"probe {capture.model_label}", unit="block", disable=not progress):
        fit, official = capture.fit(i), capture.score(i)
        rows = Rows.from_capture(capture, i, max_train)
        t0 = time.perf_counter()
        pr = fit_probe(rows, fit, rank=rank, seed=seed)
        t_probe = time.perf_counter() - t0
        rec = {
            "model": capture.model_label,
            "block": i,
            "r2_lin": official.r2,
            "r2_lin_rows": pr.r2_lin,
            "r2_poly": pr.r2_poly,
            "gain": pr.gain,
            "probe_epochs": pr.epochs,
            "probe_stop": pr.stop,
            "probe_converged": pr.converged,
            "seconds_probe": t_probe,
            "cond_gram": fit.cond_gram,
            "n_train_rows": len(rows.xtr),
            "n_test_rows": len(rows.xte),
        }
        if trained:
            t0 = time.perf_counter()
            _, ceiling_rows = closed_form_on_rows(rows)
            rec["r2_ceiling_rows"] = ceiling_rows
            for opt in TRAIN_DEFAULTS:
                rec[f"r2_trained_{opt}"] = train_affine(rows, opt, seed=seed).r2_test
            rec["seconds_trained"] = time.perf_counter() - t0
        rows_out.append(rec)
    return pd.DataFrame(rows_out)
