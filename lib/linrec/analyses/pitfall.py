"""The trained-baseline pitfall (claim 7b): is it the conditioning of the inputs, or only the step budget?

Claim 7a (arXiv 2606.19379, abstract) is the observation: Adam and SGD, trained the way a practitioner would
(`linrec.analyses.probe.TRAIN_DEFAULTS`, 5 epochs), fall short of the closed-form ceiling. Claim 7b is the
mechanism the paper names: ill-conditioned activations. Three measurements here can decide it either way.

- **Budget curve** (`budget_table`): the held-out R² of Adam and SGD after 10², …, 10⁴ steps (and
  further in `params/full.yaml`), each with its learning rate chosen on a validation slice of the *train*
  rows, per block and per budget, from a grid that grows by factors of 10 past whichever end the chosen
  rate sits on (`tune`, at most LR_EXTEND times; `lr_interior` records whether it ended inside). If the
  steps to the ceiling are the same on the best- and the worst-conditioned blocks, κ is not what sets them.
- **Gradient descent from the spectrum** (`gd_curve`): full-batch gradient descent on least squares is
  solved exactly in the eigenbasis of the Gram matrix its steps see (the uncentred second moments of
  [x, 1]): after k steps of size η the error along an eigenvector of eigenvalue λ is (1 − ηλ)ᵏ of what
  it was. Its curve is the rate the spectrum predicts, with no sampling noise and no tuning.
- **Dose–response by construction** (`reexpress`): the closed-form R² does not change under an invertible
  affine change of the inputs, and gradient descent does. One real block's inputs are re-expressed
  with κ(Gram) = 10², 10⁴, 10⁶, 10⁸ (whitened, rescaled along log-spaced axes, rotated at random so
  Adam's per-coordinate steps gain nothing) and the same tuned baselines are trained on each at the same
  budgets. If conditioning drives the shortfall, the steps to the ceiling grow with κ here, everything else fixed.

The ceiling (`ridge_ceiling`). The exact least-squares fit of the rows the optimiser sees over-fits where rows per
parameter are few (≈ 10 here), and an early-stopped trained map can beat it held out (SmolLM2 block 3 by 0.039 at
κ = 10²): no ceiling. So the fits are scored against a ridge-tuned closed form, in float64 from the eigenbasis of the
centred Gram (`ridge_path`): ridge on the standardised inputs (the Jacobi-scaled eigendecomposition of
`linrec.stats.ceiling.fit_affine`, whose α = 0 is the exact fit) and on the inputs as they are (whose large
features early-stopped gradient descent fits first), α from RIDGE_GRID; the fit with the best R² on the validation
slice, made on the rows the optimiser sees, scored on the held-out rows. The trained fits are affine maps of the same
inputs and see the same rows and slice, so this is the held-out level they aim at; `ceiling_excess` in
`linrec.analyses.probe_summary.pitfall_summary` checks that none beats it by more than CEILING_SLACK. The re-expression
is an invertible affine map, so the dose keeps the original inputs' ridge ceiling at every κ (a ridge penalty, unlike
the exact fit, is not invariant under it: refitting it per κ would change the ceiling the construction holds fixed).

Cost. The loss Σ_j (y_j − ŷ_j)² separates over output features, and both SGD (with momentum) and Adam
update each parameter from its own gradient, so each output feature's weights follow exactly the
trajectory they would follow in a fit of all outputs. The curves therefore train `n_outputs` output
features drawn by seed (the same for every block) and score them against the closed-form ceiling on
the same features: the same quantity, at a fraction of the cost. Every learning rate of the grid
trains at once, as one batched tensor, on the same mini-batches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from linrec.analyses.pitfall_train import (  # noqa: F401 (LR_GRID … tuned: the trainers' names, read from here too)
    BETAS,
    EPS,
    LR_EXTEND,
    LR_GRID,
    MOMENTUM,
    Training,
    linear_init,
    train_curves,
    tune,
    tune_many,
    tuned,
)
from linrec.analyses.probe import Rows, closed_form_on_rows
from linrec.base.errors import LinrecError
from linrec.base.threads import one_thread
from linrec.stats.ceiling import factor_gram, r2_rows
from linrec.stats.moments import Moments

if TYPE_CHECKING:
    import pandas

# ridge strengths α of the ceiling (`ridge_path`: on a Gram of mean diagonal 1): 0, the exact fit, then 1e-8 … 10, four
# per decade
RIDGE_GRID = (0.0, *np.logspace(-8, 1, 37))
REACHED = 0.01  # a fit "reaches the ceiling" once it is within this much held-out R² of it
VAL_SHARE = 0.2  # the share of the train rows held back to choose the learning rate


def log_steps(first: int, last: int, per_decade: int = 2) -> list[int]:
    """Step budgets from `first` to `last`, `per_decade` per factor of ten (rounded), both ends included."""
    if not 1 <= first <= last:
        raise LinrecError(f"step budgets must satisfy 1 ≤ first ≤ last, got {first} and {last}")
    n = max(2, int(round(np.log10(last / first) * per_decade)) + 1) if last > first else 1
    return sorted({int(round(v)) for v in np.geomspace(first, last, n)})


def median_block(cond: pandas.Series) -> int:
    """The block of median train κ(Gram) (`cond`: indexed by block; of an even count, the upper of the two middle
    ones, ties in block order): the dose–response's block, chosen without the held-out rows."""
    return int(cond.sort_values(kind="stable").index[len(cond) // 2])


def output_subset(d_out: int, n_outputs: int | None, seed: int = 0) -> np.ndarray:
    """`n_outputs` output features drawn by seed alone (all of them when None or ≥ d_out), sorted."""
    if n_outputs is None or n_outputs >= d_out:
        return np.arange(d_out)
    return np.sort(np.random.default_rng([seed, 7]).choice(d_out, n_outputs, replace=False))


@dataclass
class Split:
    """Train rows the optimiser sees, the validation slice that chooses its step, and the held-out rows (float32)."""

    xtr: torch.Tensor
    ytr: torch.Tensor
    xval: torch.Tensor
    yval: torch.Tensor
    xte: torch.Tensor
    yte: torch.Tensor

    @classmethod
    def of(cls, rows, outputs: np.ndarray | None = None, seed: int = 0) -> Split:
        """From `linrec.analyses.probe.Rows`: the last VAL_SHARE of the train rows (in a seeded order) become the
        validation
        slice; the held-out rows stay the held-out rows. `outputs`: the output features kept."""
        cols = slice(None) if outputs is None else torch.as_tensor(outputs)
        n = len(rows.xtr)
        order = torch.from_numpy(np.random.default_rng([seed, 8]).permutation(n))
        n_val = int(round(VAL_SHARE * n))
        fit_idx, val_idx = order[: n - n_val].sort().values, order[n - n_val :].sort().values
        y = rows.ytr[:, cols]
        return cls(rows.xtr[fit_idx], y[fit_idx], rows.xtr[val_idx], y[val_idx], rows.xte, rows.yte[:, cols])

    def reexpressed(self, transform) -> Split:
        """The same rows with every input mapped through `transform` (targets unchanged)."""
        return Split(transform(self.xtr), self.ytr, transform(self.xval), self.yval, transform(self.xte), self.yte)

    def ceiling(self) -> float:
        """The closed-form held-out R² fitted on the rows the optimiser sees (not the validation slice)."""
        return closed_form_on_rows(self)[1]


@dataclass
class Ceiling:
    """The ridge-tuned closed form (`ridge_ceiling`): its α and basis, validation and held-out R², and the exact
    fit's held-out R²."""

    alpha: float
    basis: str  # "scaled" (each feature's variance 1) or "raw" (the inputs as the optimiser sees them)
    r2_val: float
    r2_test: float
    r2_test_exact: float  # α = 0: the exact least-squares fit of the same rows


@one_thread()
def ridge_path(split: Split, alphas=RIDGE_GRID, basis: str = "scaled") -> list[tuple[np.ndarray, np.ndarray]]:
    """[(W, b)] of the ridge fits of the optimiser's rows, one per α: (Cxx + α·P) W = Cxy on the centred float64
    cross-products, b = μy − Wᵀμx (the intercept not penalised), with P = diag(Cxx) for `basis` "scaled" (ridge on
    the standardised inputs) and P = mean(diag Cxx)·I for "raw" (ridge on the inputs as they are, whose large
    features early-stopped gradient descent fits first). Solved in the eigenbasis of A = D Cxx D, D = P^(-1/2) (A
    has mean diagonal 1, so α means the same in both bases): W = D V (Λ + α)⁻¹ Vᵀ D Cxy, one factorisation for every
    α. "scaled" factors as `linrec.stats.ceiling.fit_affine` does, and its α = 0 keeps that solver's pseudo-inverse
    (eigenvalues below d·ε·λ_max dropped): the exact fit. Features with no train variance get zero weight."""
    m = Moments.of(split.xtr.double(), split.ytr.double())
    Cxx, Cxy, _ = m.blocks()
    f = factor_gram(Cxx)
    if basis == "scaled":
        D, V, lam, exact = torch.from_numpy(f.scale), f.V, torch.from_numpy(f.lam), torch.from_numpy(f.inv)
    elif basis == "raw":
        D = torch.from_numpy(f.live / np.sqrt(np.diag(Cxx)[f.live].mean()))
        with one_thread():
            lam, V = torch.linalg.eigh(D[:, None] * torch.from_numpy(np.ascontiguousarray(Cxx)) * D)
        exact = None
    else:
        raise LinrecError(f"basis must be 'scaled' or 'raw', got '{basis}'")
    proj = V.T @ (D[:, None] * torch.from_numpy(np.ascontiguousarray(Cxy)))
    lam = lam.clamp_min(0)
    out = []
    for a in alphas:
        if a == 0 and exact is None:
            raise LinrecError("α = 0 is the exact fit: ask for it in the scaled basis")
        inv = exact if a == 0 else 1 / (lam + float(a))
        W = (D[:, None] * (V @ (inv[:, None] * proj))).numpy()
        out.append((W, m.mean_y - m.mean_x @ W))
    return out


def ridge_ceiling(split: Split, alphas=RIDGE_GRID) -> Ceiling:
    """The ceiling a trained fit of `split` is scored against: of the ridge fits in both bases (`ridge_path`; α = 0,
    the exact fit, among them), the one with the best R² on the validation slice (the first on a tie: scaled before
    raw, smaller α first), its held-out R², and the exact fit's beside it."""
    if alphas[0] != 0:
        raise LinrecError("the ridge grid starts at 0, the exact fit, so the ceiling is never below it on validation")
    fits = [(a, "scaled", *wb) for a, wb in zip(alphas, ridge_path(split, alphas, "scaled"))]
    fits += [(a, "raw", *wb) for a, wb in zip(alphas[1:], ridge_path(split, alphas[1:], "raw"))]
    xval, xte = split.xval.double().numpy(), split.xte.double().numpy()
    val = [r2_rows(split.yval, xval @ W + b) for _, _, W, b in fits]
    i = int(np.argmax(val))
    test = lambda W, b: r2_rows(split.yte, xte @ W + b)  # noqa: E731
    return Ceiling(float(fits[i][0]), fits[i][1], float(val[i]), test(*fits[i][2:]), test(*fits[0][2:]))


@one_thread()
def gd_curve(split: Split, checkpoints, seed: int = 0) -> pandas.DataFrame:
    """Full-batch gradient descent on the same loss, step 1/λ_max of its Hessian, from the same initialisation as
    `train_curves` with the same `seed`: held-out R² after each checkpoint's number of steps, exactly, from the
    eigendecomposition of the Hessian 2·E[x̃x̃ᵀ] (x̃ = [x, 1], uncentred, as the steps see it). Its λ_max/λ_min is
    `kappa_steps`."""

    x = torch.cat([split.xtr.double(), torch.ones(len(split.xtr), 1, dtype=torch.float64)], 1)
    y = split.ytr.double()
    H = 2 * x.T @ x / len(x)
    lam, V = torch.linalg.eigh(H)
    lam = lam.clamp_min(0)
    keep = lam > lam[-1] * 1e-14
    eta = 1 / lam[-1]
    theta_star = torch.linalg.lstsq(x, y, driver="gelsd").solution  # the minimiser GD converges to on these rows
    d, m = split.xtr.shape[1], y.shape[1]
    w0, b0 = linear_init(d, m, torch.Generator().manual_seed(seed))
    theta0 = torch.cat([w0, b0[None]], 0).double()
    coords = V.T @ (theta0 - theta_star)  # error along each eigenvector (directions with λ = 0 never move)
    xte = torch.cat([split.xte.double(), torch.ones(len(split.xte), 1, dtype=torch.float64)], 1)
    rows = []
    for k in sorted({int(c) for c in checkpoints}):
        decay = torch.where(keep, (1 - eta * lam) ** k, torch.ones_like(lam))
        theta = theta_star + V @ (decay[:, None] * coords)
        rows.append({"optimizer": "gd", "lr": float(eta), "step": k, "r2_test": r2_rows(split.yte, xte @ theta)})
    out = pd.DataFrame(rows)
    out["kappa_steps"] = float(lam[-1] / lam[keep][0])
    return out


def steps_to_reach(curve: pandas.DataFrame, ceiling: float, within: float = REACHED) -> float:
    """The first checkpoint step at which `curve`'s held-out R² is within `within` of `ceiling` (inf if none)."""
    hit = curve.loc[curve["r2_test"] >= ceiling - within, "step"]
    return float(hit.min()) if len(hit) else float("inf")


@one_thread()
def reexpress(x: torch.Tensor, kappa: float, seed: int = 0, dtype: torch.dtype = torch.float64):
    """An invertible affine map of the inputs under which their train covariance has condition number `kappa`.

    x ↦ ((x − μ) V Λ^{-1/2}) S Q: whiten along the covariance's eigenvectors (those above 1e-12 of the largest;
    the others carry no train variance and no closed-form weight), stretch the whitened axes by S, log-spaced from
    √(λ_max/kappa) to √λ_max, and rotate by a random orthogonal Q (seeded), so no input axis lines up with a
    stretched one. The largest variance stays the original inputs' λ_max, so the step sizes that are stable on
    them stay stable: a larger κ only shrinks the smallest directions, which is what conditioning means.
    Returned: the map (computed in float64, returned as `dtype`: float64 by default, since float32 storage of
    inputs stretched by 10⁴ would itself lose the small directions' digits, a second effect beside conditioning)."""
    if not kappa >= 1:
        raise LinrecError(f"a condition number is at least 1, got {kappa}")
    xd = x.double()
    mu = xd.mean(0)
    lam, V = torch.linalg.eigh(torch.cov(xd.T))
    keep = lam > lam[-1] * 1e-12
    r = int(keep.sum())
    white = V[:, keep] / lam[keep].sqrt()
    stretch = torch.from_numpy(np.geomspace(np.sqrt(lam[-1].item() / kappa), np.sqrt(lam[-1].item()), r))
    g = np.random.default_rng([seed, 9]).standard_normal((r, r))
    q, upper = np.linalg.qr(g)
    q = q * np.sign(np.diag(upper))  # a uniformly drawn rotation
    T = white * stretch @ torch.from_numpy(q)
    return lambda a: ((a.double() - mu) @ T).to(dtype)


@one_thread()
def covariance_kappa(x: torch.Tensor) -> float:
    """λ_max/λ_min of the train covariance of `x` over its directions above 1e-12 of the largest (float64)."""
    lam = torch.linalg.eigvalsh(torch.cov(x.double().T))
    lam = lam[lam > lam[-1] * 1e-12]
    return float(lam[-1] / lam[0])


@dataclass(frozen=True)
class PitfallSample:
    """What of a block's stored rows the pitfall's optimisers train and are scored on (`budget_table`, `dose_table`):
    `max_train` seeded train rows (None: all) and `n_outputs` seeded output features (None: all)."""

    n_outputs: int | None = 32
    max_train: int | None = None


def _block_split(capture, block: int, sample: PitfallSample, seed: int) -> Split:
    """A block's stored rows (`sample.max_train` seeded train rows) as a Split on `sample.n_outputs` seeded output
    features."""

    rows = Rows.from_capture(capture, block, sample.max_train)
    return Split.of(rows, output_subset(rows.ytr.shape[1], sample.n_outputs, seed), seed)


def budget_table(
    capture,
    blocks,
    checkpoints,
    sample: PitfallSample = PitfallSample(),
    seed: int = 0,
    training: Training | None = None,
) -> pandas.DataFrame:
    """The budget curve: per block, optimizer (Adam, SGD, and `gd` from the spectrum), learning rate and checkpoint
    step, the validation and held-out R² on `n_outputs` seeded output features, beside the ridge-tuned ceiling on
    the same rows and features (`ceiling`, its `ridge_alpha` and `ridge_basis`; the exact fit's `ceiling_exact`)
    and κ of the train Gram (`cond_gram`, `cond_scaled`). `chosen` marks the learning rate the validation slice
    picks at each step, `lr_interior` whether it ended inside its extended grid (`tune`; NaN for `gd`: no grid).
    The blocks' tunings run at once on `training.workers` threads (`linrec.analyses.pitfall_train.tune_many`: the
    same table at any count; `training`: how they train, default `Training()`)."""

    blocks = list(blocks)
    splits = [_block_split(capture, b, sample, seed) for b in blocks]
    curves = tune_many(splits, checkpoints, seed, training or Training(), f"budget curve {capture.model_label}")
    out = []
    for b, split, trained in zip(blocks, splits, curves):
        fit, _ = closed_form_on_rows(split)  # Split has the fields of linrec.analyses.probe.Rows it reads
        ceiling = ridge_ceiling(split)
        gd = gd_curve(split, checkpoints, seed).assign(r2_val=np.nan, chosen=True, lr_interior=np.nan)
        t = pd.concat([trained, gd.drop(columns="kappa_steps")], ignore_index=True)
        out.append(
            t.assign(
                model=capture.model_label,
                block=b,
                ceiling=ceiling.r2_test,
                ceiling_exact=ceiling.r2_test_exact,
                ridge_alpha=ceiling.alpha,
                ridge_basis=ceiling.basis,
                cond_gram=fit.cond_gram,
                cond_scaled=fit.cond_scaled,
                kappa_steps=float(gd["kappa_steps"].iloc[0]),
                n_outputs=split.ytr.shape[1],
                n_train=len(split.xtr),
            )
        )
    return pd.concat(out, ignore_index=True)


def dose_table(
    capture,
    block: int,
    kappas,
    checkpoints,
    sample: PitfallSample = PitfallSample(),
    seed: int = 0,
    training: Training | None = None,
) -> pandas.DataFrame:
    """The dose–response by construction: block `block`'s inputs re-expressed (`reexpress`) with κ(covariance) =
    each of `kappas`, Adam and SGD trained to each of `checkpoints` on each (learning rate chosen per checkpoint on
    the validation slice, over a grid extended until interior: `tune`); per κ, optimizer and checkpoint, the tuned
    rate's validation and held-out R² and `lr_interior`, beside the ceiling: the original inputs' ridge-tuned
    ceiling (`ceiling`, `ridge_alpha`, `ridge_basis`; the same at every κ, since the re-expression is an invertible
    affine map of the inputs), and the exact fit's on the re-expressed rows as trained (`ceiling_exact`, float32)
    and on the original ones (`ceiling_exact_original`), which the re-expression leaves unchanged up to float32. The
    κ levels' tunings run at once on `training.workers` threads (`linrec.analyses.pitfall_train.tune_many`)."""

    split = _block_split(capture, block, sample, seed)
    original, ceiling = split.ceiling(), ridge_ceiling(split)
    kappas = [float(k) for k in kappas]
    changed = [split.reexpressed(reexpress(split.xtr, k, seed=seed, dtype=torch.float32)) for k in kappas]
    label = f"dose-response {capture.model_label} block {block}"
    curves = tune_many(changed, checkpoints, seed, training or Training(), label)
    out = []
    for kappa, rows, trained in zip(kappas, changed, curves):
        out.append(
            trained[trained["chosen"]]
            .drop(columns="chosen")
            .assign(
                model=capture.model_label,
                block=block,
                kappa=kappa,
                kappa_measured=covariance_kappa(rows.xtr),
                ceiling=ceiling.r2_test,
                ridge_alpha=ceiling.alpha,
                ridge_basis=ceiling.basis,
                ceiling_exact=rows.ceiling(),
                ceiling_exact_original=original,
            )
        )
    return pd.concat(out, ignore_index=True)
