"""What the closed-form map misses, probed two ways (notebook 03, Figure 3).

1. **The pitfall** (paper, claim 7): an affine map x → y *trained* by gradient descent (Adam or
   SGD, with the defaults a practitioner would pick) on the same train rows, scored on the same
   held-out rows as the closed-form ceiling (claim 7a). The paper blames ill-conditioned
   activations; `linrec.analyses.pitfall` measures whether that or the step budget is the cause (claim 7b).
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
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from linrec.base.errors import LinrecError
from linrec.base.progress import bar as progress_bar
from linrec.base.threads import available_memory, one_thread
from linrec.stats.ceiling import AffineFit, fit_affine, r2_rows
from linrec.stats.moments import Moments

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
    def from_capture(cls, capture, block: int, max_train: int | None = None, without_first: bool = False) -> Rows:
        """The block's stored rows; with `max_train`, that many train rows drawn by seed (the same for every block
        and every caller: rows of windows spread over the corpus, not its first windows). Test rows: all. With
        `without_first`, every row at a window's first position is left out of both splits first (the robustness
        check of claim 3: the attention sink of a model that runs without a BOS token sits there)."""
        xtr, ytr = capture.rows(block, "train")
        if without_first:
            index = capture.row_index()
            keep = {k: index[index[:, 2] == k, 1] > 0 for k in (0, 1)}  # split 0 train, 1 test; column 1: position
            xtr, ytr = xtr[keep[0]], ytr[keep[0]]
        if max_train is not None and max_train < len(xtr):
            if max_train <= xtr.shape[1] + 1:
                raise LinrecError(
                    f"max_train={max_train} train rows cannot fit a {xtr.shape[1]}-wide affine map; give more rows"
                )
            pick = np.sort(np.random.default_rng([capture.config.seed, 4]).choice(len(xtr), max_train, replace=False))
            xtr, ytr = xtr[pick], ytr[pick]
        xte, yte = capture.rows(block, "test")
        if without_first:
            xte, yte = xte[keep[1]], yte[keep[1]]
        if len(xte) == 0 or len(xtr) <= xtr.shape[1] + 1:
            raise LinrecError(
                f"block {block}: the row sample holds {len(xtr)} train / {len(xte)} test rows, and the probe needs "
                f"more than {xtr.shape[1] + 1} train rows and a test row; raise --sample-rows (a profile's capture "
                "sample_rows)"
            )
        t = lambda a: torch.from_numpy(np.array(a, dtype=np.float32))  # noqa: E731
        return cls(t(xtr), t(ytr), t(xte), t(yte))


# ---- 1. trained linear baselines ---------------------------------------------------------------
TRAIN_DEFAULTS = {  # what a practitioner would reach for first
    "adam": {"lr": 1e-3, "epochs": 5, "batch_size": 256},
    "sgd": {"lr": 1e-2, "momentum": 0.9, "epochs": 5, "batch_size": 256},
}


@dataclass(frozen=True)
class Schedule:
    """How long and how fast a trained affine baseline trains (`train_affine`): `epochs`, the learning rate `lr` and
    the `batch_size` (None: the optimizer's `TRAIN_DEFAULTS`), the rate decaying linearly to 0 with `decay`."""

    epochs: int | None = None
    lr: float | None = None
    batch_size: int | None = None
    decay: bool = False


@dataclass
class Trained:
    r2_test: float
    losses: list[float] = field(default_factory=list)  # train loss (Σ_j squared error per row) after each epoch


@one_thread()
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


@one_thread()
def train_affine(
    rows: Rows,
    optimizer: str = "adam",
    schedule: Schedule = Schedule(),
    whiten: bool = False,
    scale_targets: bool = False,
    standardise: bool = False,
    seed: int = 0,
) -> Trained:
    """Fit y ≈ Wᵀx + b by mini-batch gradient descent on the per-row squared error;
    held-out R² (deterministic per seed on CPU).

    `whiten`: train on PCA-whitened inputs (fixes the conditioning); `standardise`: on inputs scaled
    per feature to zero mean and unit variance (fixes their scales, keeps their correlations: what
    is left is the Jacobi-scaled Gram's κ, `AffineFit.cond_scaled`); `scale_targets`: train on
    per-feature standardised targets (train mean and standard deviation) and map the predictions
    back, so R² is on the raw targets (fixes the distance Adam's bounded steps must travel); `schedule`: the epochs,
    rate and batch size (the optimizer's `TRAIN_DEFAULTS` where None) and whether the step decays linearly to 0.

    The loss is the closed form's objective, Σ_j (y_j − ŷ_j)² averaged over rows (not over
    outputs too, as `mse_loss` would: that divides SGD's step by d_out). A run whose loss turns
    non-finite stops and reports R² = −inf (diverged).
    """
    if optimizer not in TRAIN_DEFAULTS:
        raise LinrecError(f"optimizer must be one of {', '.join(TRAIN_DEFAULTS)}, got '{optimizer}'")
    cfg = {**TRAIN_DEFAULTS[optimizer]}
    given = {"epochs": schedule.epochs, "lr": schedule.lr, "batch_size": schedule.batch_size}
    cfg.update({k: v for k, v in given.items() if v is not None})
    decay = schedule.decay
    gen = torch.Generator().manual_seed(seed)
    xtr, xte = rows.xtr, rows.xte
    if whiten:
        white = _whitener(xtr)
        xtr, xte = white(xtr), white(xte)
    elif standardise:
        mu, sd = xtr.double().mean(0), xtr.double().std(0).clamp_min(1e-12)
        xtr, xte = ((xtr.double() - mu) / sd).float(), ((xte.double() - mu) / sd).float()
    ytr, y_mu, y_sd = rows.ytr, 0.0, 1.0
    if scale_targets:
        y_mu, y_sd = ytr.double().mean(0), ytr.double().std(0).clamp_min(1e-12)
        ytr = ((ytr.double() - y_mu) / y_sd).float()
    lin = torch.nn.Linear(xtr.shape[1], ytr.shape[1])
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
            xb, yb = xtr.index_select(0, idx), ytr.index_select(0, idx)  # xtr[idx], without indexing's overhead
            loss = (lin(xb) - yb).square().sum(1).mean()  # Σ‖y − Wx − b‖² per row, as the closed form
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(idx)
        losses.append(total / n)
        if not np.isfinite(losses[-1]):
            break  # diverged: report what it reached
    with torch.no_grad():
        pred = lin(xte).double() * y_sd + y_mu
    return Trained(r2_test=r2_rows(rows.yte, pred) if torch.isfinite(pred).all() else float("-inf"), losses=losses)


@one_thread()
def closed_form_on_rows(rows: Rows) -> tuple[AffineFit, float]:
    """The exact ceiling fitted on these very rows (same train rows as the trained baselines) and its held-out R²."""
    fit = fit_affine(Moments.of(rows.xtr, rows.ytr))
    pred = torch.from_numpy(fit.predict(rows.xte.double().numpy()))
    return fit, r2_rows(rows.yte, pred)


def adam_reach(
    fit: AffineFit, n_train: int, lr: float | None = None, epochs: int | None = None, batch_size: int | None = None
) -> float:
    """How far the closed-form parameters lie in units of the farthest Adam can move one parameter.

    Adam's update of each parameter is about `lr` per step whatever the gradient's size, so after
    `steps` = epochs · ⌈n/batch⌉ steps no parameter has moved more than ≈ lr · steps. Returned:
    the 99th percentile of |θ*| over the closed-form W and b, divided by lr · steps (defaults:
    `TRAIN_DEFAULTS["adam"]`). Above 1, the top 1 % of the parameters cannot be reached in the
    budget whatever the conditioning (PyTorch's initialisation, |θ₀| ≤ 1/√d_in, is negligible here).
    """
    cfg = TRAIN_DEFAULTS["adam"]
    lr, epochs, batch_size = lr or cfg["lr"], epochs or cfg["epochs"], batch_size or cfg["batch_size"]
    steps = epochs * -(-n_train // batch_size)
    theta = np.abs(np.concatenate([np.ravel(fit.W), np.ravel(fit.b)]))
    return float(np.quantile(theta, 0.99) / (lr * steps))


def mechanism_blocks(cond: pandas.Series, k: int = 3) -> list[int]:
    """The `k` best- and `k` worst-conditioned blocks by train κ(Gram) (`cond`: indexed by block), best first."""
    order = cond.sort_values(kind="stable").index.tolist()
    return sorted(set(order[:k]) | set(order[-k:]), key=order.index)


def quadratic_features(x: torch.Tensor, mu: torch.Tensor, sigma: torch.Tensor, P: torch.Tensor) -> torch.Tensor:
    """[x, z_i z_j for i ≤ j] with z = ((x − μ)/σ) P: the inputs and every product of k projected inputs (float64)."""
    z = ((x.double() - mu) / sigma) @ P  # [n, k]
    i, j = torch.triu_indices(P.shape[1], P.shape[1])
    return torch.cat([x.double(), z[:, i] * z[:, j]], dim=1)


@one_thread()
def quadratic_closed_form(rows: Rows, k: int = 16) -> float:
    """Held-out R² of the exact least-squares fit of y on x plus every quadratic monomial of the top-`k`
    principal components of the standardised inputs (train statistics; solved like the ceiling).

    A rank-k bilinear probe whose directions U, V lie in that k-dimensional subspace is a special case of
    this fit (each term (uᵀx̃)(vᵀx̃) is a combination of the monomials), so its gain on the same rows can
    exceed this one's only through directions outside the subspace: a probe far below it has not converged.
    """
    xd = rows.xtr.double()
    mu, sigma = xd.mean(0), xd.std(0).clamp_min(1e-12)
    xt = (xd - mu) / sigma
    _, V = torch.linalg.eigh(xt.T @ xt)
    P = V[:, -k:]
    fit = fit_affine(Moments.of(quadratic_features(rows.xtr, mu, sigma, P), rows.ytr.double()), condition=False)
    pred = torch.from_numpy(fit.predict(quadratic_features(rows.xte, mu, sigma, P).numpy()))
    return r2_rows(rows.yte, pred)


def quadratic_bytes(d_in: int, rank: int, n_rows: int) -> int:
    """Peak bytes of `quadratic_closed_form` at `rank` (float64): the moment matrix of p = d_in + k(k+1)/2
    features and its eigendecomposition (about 3 p²), and the feature rows of both splits (n_rows · p)."""
    p = d_in + rank * (rank + 1) // 2
    return 8 * (3 * p * p + n_rows * p)


def check_rank(rank: int, d_in: int, d_out: int, n_rows: int, available: int | None = None) -> None:
    """One line, before any work, for a probe rank this block cannot take: above the width (a rank-k probe needs k
    input directions and k residual directions), or one whose closed-form quadratic check would need more than
    half the memory available (`linrec.base.threads.available_memory`); the message names the largest rank that fits."""
    width = min(d_in, d_out)
    if not 1 <= rank <= width:
        raise LinrecError(
            f"--rank {rank} is outside 1 … {width}: a rank-k probe uses k directions of the {d_in}-wide input and "
            f"of the {d_out}-wide output; use --rank {min(16, width)} (the paper's) or at most {width}"
        )

    available = available_memory() if available is None else available
    if available is None or quadratic_bytes(d_in, rank, n_rows) <= available // 2:
        return
    fits = max((k for k in range(1, rank) if quadratic_bytes(d_in, k, n_rows) <= available // 2), default=0)
    p = d_in + rank * (rank + 1) // 2
    raise LinrecError(
        f"--rank {rank} needs about {quadratic_bytes(d_in, rank, n_rows) / 2**30:,.1f} GiB for the closed-form "
        f"quadratic check ({p:,} features), more than half of the {available / 2**30:.1f} GiB available; "
        + (f"use --rank {fits} or less" if fits else "free memory or use a smaller --sample-rows")
    )


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


@one_thread()
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


@dataclass(frozen=True)
class ProbeTraining:
    """How the bilinear probe trains (`fit_probe`): Adam at `lr` on mini-batches of `batch_size`, at most
    `max_epochs` epochs, stopping once the train loss improves by less than `tol` (relative) over `patience` epochs or
    validation has not improved for `patience` epochs; `val_frac` of the train rows set aside for validation."""

    lr: float = 1e-2
    batch_size: int = 512
    max_epochs: int = 20
    tol: float = 1e-3
    patience: int = 3
    val_frac: float = 0.1


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


@one_thread()
def fit_probe(
    rows: Rows, fit: AffineFit, rank: int = 16, training: ProbeTraining = ProbeTraining(), seed: int = 0
) -> ProbeResult:
    """Seed and train a rank-`rank` bilinear probe on the residual of `fit`; held-out R²_lin and R²_poly.

    A seeded `val_frac` of the train rows is set aside (`training`: these settings): the probe kept is the one with
    the lowest validation loss (the seeded start included), so a probe that starts to fit a few extreme rows
    is not the one scored. Training stops when the train loss flattens (relative improvement over
    `patience` epochs below `tol`: stop "flattened"), when validation has not improved for `patience`
    epochs, or after `max_epochs`. The test rows are used once, at the end.
    """
    lr, batch_size, max_epochs = training.lr, training.batch_size, training.max_epochs
    tol, patience, val_frac = training.tol, training.patience, training.val_frac
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
            loss = torch.nn.functional.mse_loss(probe(xtr.index_select(0, idx)), rtr.index_select(0, idx))
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
    capture,
    rank: int = 16,
    seed: int = 0,
    trained: bool = True,
    max_train: int | None = None,
    progress: bool = True,
    without_first: bool = False,
) -> pandas.DataFrame:
    """One row per block: closed-form ceiling, bilinear probe (R²_poly, gain), the closed-form quadratic on the
    top-`rank` input components (`quadratic_closed_form`: r2_quad, gain_quad) and trained baselines (Adam, SGD;
    with `adam_reach`).

    `without_first`: the same on the stored rows at positions ≥ 1 only (`Rows.from_capture`), the probe seeded on
    the residual of the closed-form map fitted on those train rows (`r2_lin` is then that map's held-out R² on
    them, as `r2_lin_rows`)."""

    rows_out = []
    for i in range(capture.n_blocks):  # every block's rank checked before the first block's work
        x, y = capture.rows(i)
        check_rank(rank, x.shape[1], y.shape[1], len(x) if max_train is None else min(len(x), max_train))
    for i in progress_bar(
        range(capture.n_blocks), desc=f"probe {capture.model_label}", unit="block", disable=not progress
    ):
        rows = Rows.from_capture(capture, i, max_train, without_first=without_first)
        if without_first:
            fit = closed_form_on_rows(rows)[0]
            official_r2 = None
        else:
            fit = capture.fit(i)
            official_r2 = capture.score(i).r2
        t0 = time.perf_counter()
        pr = fit_probe(rows, fit, rank=rank, seed=seed)
        t_probe = time.perf_counter() - t0
        rec = {
            "model": capture.model_label,
            "block": i,
            "r2_lin": pr.r2_lin if official_r2 is None else official_r2,
            "r2_lin_rows": pr.r2_lin,
            "r2_poly": pr.r2_poly,
            "gain": pr.gain,
            "probe_epochs": pr.epochs,
            "probe_stop": pr.stop,
            "probe_converged": pr.converged,
            "seconds_probe": t_probe,
            "cond_gram": fit.cond_gram,
            "cond_scaled": fit.cond_scaled,
            "n_train_rows": len(rows.xtr),
            "n_test_rows": len(rows.xte),
        }
        t0 = time.perf_counter()
        rec["r2_quad"] = quadratic_closed_form(rows, k=rank)
        rec["gain_quad"] = rec["r2_quad"] - pr.r2_lin
        rec["seconds_quad"] = time.perf_counter() - t0
        if trained:
            t0 = time.perf_counter()
            fit_rows, ceiling_rows = closed_form_on_rows(rows)
            rec["r2_ceiling_rows"] = ceiling_rows
            rec["adam_reach"] = adam_reach(fit_rows, len(rows.xtr))
            for opt in TRAIN_DEFAULTS:
                rec[f"r2_trained_{opt}"] = train_affine(rows, opt, seed=seed).r2_test
            rec["seconds_trained"] = time.perf_counter() - t0
        rows_out.append(rec)
    return pd.DataFrame(rows_out)


def sweep_blocks(n_blocks: int, fractions=(1 / 6, 1 / 2, 5 / 6)) -> list[int]:
    """Blocks at fixed fractions of the depth (no data involved): the rank sweep's blocks."""
    return sorted({int(np.floor(f * (n_blocks - 1) + 0.5)) for f in fractions})


def rank_sweep(
    capture, blocks, ranks=(16, 64, 256), seed: int = 0, progress: bool = True, max_train: int | None = None
) -> pandas.DataFrame:
    """One row per (block, rank): the bilinear probe's held-out gain at each rank, same rows (`max_train`
    seeded train rows with it, `Rows.from_capture`) and seed."""

    out = []
    pairs = [(b, k) for b in blocks for k in ranks]
    for b, k in progress_bar(pairs, desc=f"probe ranks {capture.model_label}", unit="fit", disable=not progress):
        rows = Rows.from_capture(capture, b, max_train)
        t0 = time.perf_counter()
        pr = fit_probe(rows, capture.fit(b), rank=k, seed=seed)
        out.append(
            {
                "model": capture.model_label,
                "block": b,
                "rank": k,
                "r2_lin_rows": pr.r2_lin,
                "r2_poly": pr.r2_poly,
                "gain": pr.gain,
                "probe_stop": pr.stop,
                "probe_epochs": pr.epochs,
                "seconds": time.perf_counter() - t0,
            }
        )
    return pd.DataFrame(out)
