"""The exact closed-form linear ceiling: affine least squares from float64 statistics, held-out R²_lin.

    (W, b) = argmin Σ_train ‖y − Wᵀx − b‖²        W: [d_in, d_out], b: [d_out]

With an intercept, the problem is centred least squares: Cxx W = Cxy, b = μy − Wᵀμx, where
Cxx, Cxy are the train split's centred cross-products (`linrec.stats.moments.Moments`).

Solver ("eigh"): Jacobi-scale the Gram matrix, A = D Cxx D with
D = diag(Cxx)^(-1/2), so every input feature has unit variance (LLM activations span ~5e4 in
scale, which alone would make κ(Cxx) huge), then take the eigendecomposition A = V Λ Vᵀ and
apply the pseudo-inverse with eigenvalues below `rcond`·λ_max treated as zero. In float64
the eigenvalues of A carry an absolute error of about ε·λ_max, so the default rcond = d·ε
drops only directions that rounding cannot resolve; for a full-rank problem this is the
exact least-squares solution, for a rank-deficient one it is the minimum-norm solution
(what `lstsq` returns). Cost O(d³) per block: ~0.1 s at d = 640. (For the normal equations
κ(Cxx) = κ(X)²; the scaling and the float64 eigensolver keep the 1e-9 agreement with `lstsq`
on stored rows up to κ(Cxx) ≈ 1e11 in the tests; beyond, see the reported `rank`.) An optional `ridge` adds
ridge·diag(Cxx) (i.e. `ridge` on the scaled diagonal); it is 0 unless asked for, and the
result records it. Input features with zero variance (Gemma-3 has one: its pre-FFN norm gain
is 0 there) get zero weights, are counted (`dead_inputs`) and are left out of κ.

On an accelerator the capture's own held-out maps (`condition=False`, the statistics on the device) may take a
Cholesky factor A = LLᵀ instead (solver "cholesky"), where it provably solves the same system: λmax(A) ≤ tr(A) and
λmin(A) ≥ 1/tr(A⁻¹) = 1/‖L⁻¹‖²_F, so rcond·tr(A)·‖L⁻¹‖²_F < 1 proves that no eigenvalue falls below the cutoff, the
pseudo-inverse above is the inverse, and both are the least-squares solution to rounding (about κ·ε apart). Where
the bound fails (or the factor does), the eigensolver runs as above. The device's eigensolver is latency-bound at
these sizes and was a sixth of the capture's time on one H200 (results/bench/gpu_profile.json); κ and the scaled κ
of such a map are computed when a table reads them (`linrec.collect.capture.Capture.fit`).

Held-out errors come from the test split's statistics alone. With e = y − Wᵀx − b and the
test split's (n, μ, C):  Σe_j² = Cyy_jj − 2(WᵀCxy)_jj + (WᵀCxxW)_jj + n(μy − Wᵀμx − b)_j²,
SST_j = Cyy_jj (around the test mean, as `sklearn.metrics.r2_score`). R²_lin = 1 − ΣSSE/ΣSST
(variance-weighted over output features); R²_j = 1 − SSE_j/SST_j per feature.

The first position (`first_position`): R²_lin weights every row by its share of the output
variance, so one token per window whose output is orders of magnitude larger than the rest (the
attention sink of a model run without a BOS token) can carry R²_lin on its own. From the
capture's first-position statistics, `first_var_share` = 1 − SST(other positions)/SST(all) on
the test split, and `r2_ex_first` is R²_lin of the map fitted on the train split's other
positions and scored on the test split's other positions: the same measurement with the
first token of every window left out of both. The other positions' statistics are the total's
minus the first positions' (`linrec.stats.moments.remove_rows`); that subtraction rounds at about
ε·SST(first)/SST(other) relative: about 32ε ≈ 7e-15 for a block with share 0.97, the most
sink-dominated SmolLM2 block (an estimate from the bound, not a measurement).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from linrec.base.errors import LinrecError
from linrec.base.threads import one_thread
from linrec.stats.moments import Moments, output_sum_squares

EPS = np.finfo(np.float64).eps


def gram_condition(C: np.ndarray | torch.Tensor) -> float:
    """κ = λmax/λmin of a centred Gram matrix over its non-constant features (constant ones carry
    nothing); inf when λmin is below d·ε·λmax, i.e. singular to float64. A tensor is solved where it lives."""
    if isinstance(C, torch.Tensor):
        live = torch.diagonal(C) > 0
        lam = torch.linalg.eigvalsh(C[live][:, live]).cpu().numpy()
        return float(lam[-1] / lam[0]) if lam[0] > len(C) * EPS * lam[-1] else float("inf")
    live = np.diag(C) > 0
    with one_thread():
        lam = torch.linalg.eigvalsh(torch.from_numpy(np.ascontiguousarray(C[np.ix_(live, live)]))).numpy()
    return float(lam[-1] / lam[0]) if lam[0] > len(C) * EPS * lam[-1] else float("inf")


def scaled_condition(C: np.ndarray | torch.Tensor) -> float:
    """κ of the Jacobi-scaled Gram D C D (D = diag(C)^(-1/2) on non-constant features), what the solver sees
    (`AffineFit.cond_scaled`), by `gram_condition`; for a map solved without the eigenvalues (solver "cholesky")."""
    if isinstance(C, torch.Tensor):
        diag = torch.diagonal(C)
        scale = torch.where(diag > 0, 1.0 / torch.sqrt(torch.where(diag > 0, diag, 1.0)), 0.0)
        return gram_condition(C * torch.outer(scale, scale))
    diag = np.diag(C)
    scale = np.where(diag > 0, 1.0 / np.sqrt(np.where(diag > 0, diag, 1.0)), 0.0)
    return gram_condition(C * np.outer(scale, scale))


NON_FINITE = "NaN or inf activations; check the model's weights for NaN or inf (a float16 model: run it in float32)"


@dataclass
class AffineFit:
    """A fitted affine map y ≈ Wᵀx + b and how well-posed its solve was."""

    W: np.ndarray  # [d_in, d_out] float64
    b: np.ndarray  # [d_out] float64
    cond_gram: float  # κ of the train centred Gram Cxx over non-constant features (λmax/λmin; inf if singular)
    cond_scaled: float  # κ of the Jacobi-scaled Gram, what the solver sees
    rank: int  # directions kept by the solver
    n_train: int
    dead_inputs: int  # input features with zero train variance
    solver: str = "eigh"
    ridge: float = 0.0
    on_device: tuple | None = field(default=None, repr=False, compare=False)  # (W, b) tensors where it was solved

    def predict(self, x: np.ndarray) -> np.ndarray:
        return x @ self.W + self.b

    def tensors(self, device) -> tuple[torch.Tensor, torch.Tensor]:
        """(W, b) as float64 tensors on `device`: those it was solved with when they are there, else a copy."""
        if self.on_device is not None and self.on_device[0].device == torch.device(device):
            return self.on_device
        return torch.from_numpy(self.W).to(device), torch.from_numpy(self.b).to(device)


@dataclass
class GramFactor:
    """The solver's factorisation of one centred train Gram matrix Cxx (see the module docstring): the Jacobi scale,
    the eigenvectors of the scaled Gram and the pseudo-inverse of its eigenvalues. Any number of right-hand sides
    Cxy can be solved against it (`solve`), so scoring many maps on the same inputs factors their Gram once."""

    scale: np.ndarray  # [d] 1/√Cxx_ii on live features, 0 on dead ones
    V: torch.Tensor  # [d, d] float64 eigenvectors of the scaled Gram
    inv: np.ndarray  # [d] 1/λ on kept directions, 0 elsewhere
    lam: np.ndarray  # [d] eigenvalues of the scaled Gram, ascending
    cutoff: float
    live: np.ndarray  # [d] bool: features with non-zero train variance

    def solve(self, Cxy: np.ndarray) -> np.ndarray:
        """W = D V Λ⁺ Vᵀ D Cxy: the minimum-norm least-squares solution of Cxx W = Cxy."""
        V, scale = self.V, self.scale
        t = lambda a: torch.from_numpy(np.ascontiguousarray(a))  # noqa: E731
        return scale[:, None] * (V @ (t(self.inv)[:, None] * (V.T @ t(scale[:, None] * Cxy)))).numpy()

    @property
    def rank(self) -> int:
        return int((self.inv > 0).sum())

    @property
    def cond_scaled(self) -> float:
        live_lam = self.lam[-int(self.live.sum()) :]
        return float(live_lam[-1] / live_lam[0]) if live_lam[0] > self.cutoff else float("inf")


def factor_gram(Cxx: np.ndarray, rcond: float | None = None, ridge: float = 0.0, block: int | str = "?") -> GramFactor:
    """Jacobi-scale and eigendecompose a centred train Gram matrix (float64), the first half of `fit_affine`."""
    d = len(Cxx)
    if not np.isfinite(Cxx).all():
        raise LinrecError(f"block {block}: {NON_FINITE}")
    diag = np.diag(Cxx).copy()
    live = diag > 0
    if not live.any():
        raise LinrecError(f"block {block}: singular statistics: every FFN input feature is constant on the train split")
    scale = np.zeros(d)
    scale[live] = 1.0 / np.sqrt(diag[live])
    # Dense linear algebra runs in torch (float64, CPU): numpy's OpenBLAS LAPACK next to torch's
    # OpenMP pool slowed eigh down 50-fold on a busy 2-core machine; torch's own LAPACK does not.
    A = Cxx * np.outer(scale, scale)  # unit diagonal on live features, zero rows/cols on dead ones
    if ridge:
        A[np.diag_indices(d)] += ridge * live
    with one_thread():
        lam_t, V = torch.linalg.eigh(torch.from_numpy(np.ascontiguousarray(A)))
    lam = lam_t.numpy()
    cutoff = (d * EPS if rcond is None else rcond) * lam[-1]
    keep = lam > cutoff
    inv = np.zeros_like(lam)
    inv[keep] = 1.0 / lam[keep]
    return GramFactor(scale=scale, V=V, inv=inv, lam=lam, cutoff=float(cutoff), live=live)


def fit_affine(
    train: Moments,
    rcond: float | None = None,
    ridge: float = 0.0,
    block: int | str = "?",
    condition: bool = True,
    cholesky: bool = False,
) -> AffineFit:
    """Closed-form affine least squares from train statistics (see module docstring).

    `condition=False` skips the separate eigensolve for `cond_gram` (left NaN; half the cost);
    W, b, rank and `cond_scaled` are the same either way. `cholesky` (statistics on an accelerator, without
    `condition`): the guarded Cholesky solve where its bound holds, `cond_scaled` then left NaN."""
    d = train.d_in
    if train.n <= d + 1:
        raise LinrecError(
            f"block {block}: singular statistics: {train.n} train rows for {d + 1} parameters per output; "
            f"raise --tokens to at least {2 * (d + 2)} (more rows than the FFN width)"
        )
    if train.on_device:
        return _fit_on_device(train, rcond, ridge, block, condition, cholesky)
    Cxx, Cxy, _ = train.blocks()
    if not np.isfinite(Cxy).all():
        raise LinrecError(f"block {block}: {NON_FINITE}")
    f = factor_gram(Cxx, rcond=rcond, ridge=ridge, block=block)
    W = f.solve(Cxy)
    b = train.mean_y - train.mean_x @ W
    return AffineFit(
        W=W,
        b=b,
        cond_gram=gram_condition(Cxx) if condition else float("nan"),
        cond_scaled=f.cond_scaled,
        rank=f.rank,
        n_train=train.n,
        dead_inputs=int((~f.live).sum()),
        ridge=ridge,
    )


def _guarded_cholesky(A: torch.Tensor, live: torch.Tensor, B: torch.Tensor, factor: float) -> torch.Tensor | None:
    """A⁻¹B by a Cholesky factor of the scaled Gram `A` (dead features given a unit diagonal, so the factor exists;
    their rows of B are zero), where the bound of the module docstring proves the eigensolver would keep every live
    direction (`factor`·tr(A)·‖L⁻¹‖²_F < 1); None where it does not, or the factor fails. One value is read back."""
    Ap = A.clone()
    Ap.diagonal().add_((~live).to(A.dtype))
    L, info = torch.linalg.cholesky_ex(Ap)
    eye = torch.eye(len(A), dtype=A.dtype, device=A.device)
    inv_trace = torch.linalg.solve_triangular(L, eye, upper=False).square().sum()  # tr(A'⁻¹) ≥ tr(A⁻¹) on live
    ok = (info == 0) & torch.isfinite(inv_trace) & (factor * torch.diagonal(A).sum() * inv_trace < 1)
    if not bool(ok):
        return None
    return torch.cholesky_solve(B, L)


def _fit_on_device(
    train: Moments, rcond: float | None, ridge: float, block, condition: bool, cholesky: bool = False
) -> AffineFit:
    """`fit_affine` in torch where `train` lives (an accelerator): the same steps as `factor_gram` and
    `GramFactor.solve` (Jacobi scale, float64 eigh, pseudo-inverse below d·ε·λmax), with nothing on the host but the
    checks' flags and the result. Agrees with the host solve to rounding (the eigensolvers differ). With `cholesky`
    (only without `condition`): the guarded Cholesky solve of the module docstring where its bound holds."""
    d = train.d_in
    M = train.symmetric()
    Cxx, Cxy = M[:d, :d], M[:d, d:]
    if not bool(torch.isfinite(M).all()):
        raise LinrecError(f"block {block}: {NON_FINITE}")
    diag = torch.diagonal(Cxx).clone()
    live = diag > 0
    if not bool(live.any()):
        raise LinrecError(f"block {block}: singular statistics: every FFN input feature is constant on the train split")
    scale = torch.where(live, 1.0 / torch.sqrt(torch.where(live, diag, 1.0)), 0.0)
    A = Cxx * torch.outer(scale, scale)
    if ridge:
        A.diagonal().add_(ridge * live.to(A.dtype))
    factor = d * EPS if rcond is None else rcond
    n_live = int(live.sum())
    solved = _guarded_cholesky(A, live, scale[:, None] * Cxy, factor) if cholesky and not condition else None
    if solved is not None:  # every live direction kept (the bound proves it); the scaled κ computed where it is read
        W, rank, cond_scaled = scale[:, None] * solved, n_live, float("nan")
    else:
        lam, V = torch.linalg.eigh(A)
        cutoff = factor * lam[-1]
        keep = lam > cutoff
        inv = torch.where(keep, 1.0 / torch.where(keep, lam, 1.0), 0.0)
        W = scale[:, None] * (V @ (inv[:, None] * (V.T @ (scale[:, None] * Cxy))))
        live_lam, rank = lam.cpu().numpy()[-n_live:], int(keep.sum())
        cond_scaled = float(live_lam[-1] / live_lam[0]) if live_lam[0] > float(cutoff) else float("inf")
    b = train.mean[d:] - train.mean[:d] @ W
    return AffineFit(
        W=W.cpu().numpy(),
        b=b.cpu().numpy(),
        cond_gram=gram_condition(Cxx) if condition else float("nan"),
        cond_scaled=cond_scaled,
        rank=rank,
        n_train=train.n,
        dead_inputs=d - n_live,
        solver="eigh" if solved is None else "cholesky",
        ridge=ridge,
        on_device=(W, b),
    )


@dataclass
class Score:
    """Held-out fit quality of an affine map."""

    r2: float  # variance-weighted R² over all output features
    r2_feature: np.ndarray  # [d_out] per-feature R² (NaN where the feature is constant)
    sse: np.ndarray  # [d_out]
    sst: np.ndarray  # [d_out]
    n: int

    @property
    def r2_feature_median(self) -> float:
        return float(np.nanmedian(self.r2_feature))

    @property
    def r2_feature_quartiles(self) -> tuple[float, float]:
        """25th and 75th percentiles of the per-feature R² (constant features left out)."""
        q25, q75 = np.nanpercentile(self.r2_feature, [25, 75])
        return float(q25), float(q75)


def score(fit: AffineFit, test: Moments, block: int | str = "?") -> Score:
    """Held-out SSE, SST and R² of `fit` from the test split's statistics alone."""
    if test.n < 1:
        raise LinrecError(f"block {block}: the test split is empty; use more tokens or a larger test fraction")
    if test.on_device:  # the same sums in torch where the statistics live; two vectors come back
        d = test.d_in
        M = test.symmetric()
        Cxx, Cxy, Cyy = M[:d, :d], M[:d, d:], M[d:, d:]
        W, b = fit.tensors(M.device)
        offset = test.mean[d:] - test.mean[:d] @ W - b
        sst_t = torch.diagonal(Cyy).clone()
        sse_t = sst_t - 2 * (W * Cxy).sum(0) + ((Cxx @ W) * W).sum(0) + test.n * offset**2
        sst, sse = sst_t.cpu().numpy(), sse_t.cpu().numpy()
    else:
        Cxx, Cxy, Cyy = test.blocks()
        W = fit.W
        offset = test.mean_y - test.mean_x @ W - fit.b
        sst = np.diag(Cyy).copy()
        CW = (torch.from_numpy(np.ascontiguousarray(Cxx)) @ torch.from_numpy(np.ascontiguousarray(W))).numpy()
        sse = sst - 2 * np.einsum("ij,ij->j", W, Cxy) + np.einsum("ij,ij->j", CW, W) + test.n * offset**2
    sse = np.maximum(sse, 0.0)  # rounding can push an exact fit a hair below zero
    total = sst.sum()
    if not total > 0:
        raise LinrecError(f"block {block}: the FFN output is constant on the test split; R² is undefined")
    with np.errstate(divide="ignore", invalid="ignore"):
        r2_feature = np.where(sst > 0, 1.0 - sse / np.where(sst > 0, sst, 1.0), np.nan)
    return Score(r2=float(1.0 - sse.sum() / total), r2_feature=r2_feature, sse=sse, sst=sst, n=test.n)


def first_position(
    test: Moments, rest: tuple[Moments, Moments] | None, block: int | str = "?", fit: AffineFit | None = None
) -> dict[str, float]:
    """`first_var_share` and `r2_ex_first` of the module docstring; `rest` = (train, test) without the
    windows' first positions (`Capture.without_first`), NaN for both when it is None. `fit`: the map already fitted
    on `rest`'s train statistics (the capture's, `Capture.fit_rest`), else fitted here."""
    if rest is None:
        return {"first_var_share": float("nan"), "r2_ex_first": float("nan")}
    train_rest, test_rest = rest
    if test.on_device:
        share = 1.0 - output_sum_squares(test_rest) / output_sum_squares(test)
    else:
        share = 1.0 - np.trace(test_rest.Cyy) / np.trace(test.Cyy)
    fit = fit_affine(train_rest, block=block, condition=False) if fit is None else fit
    return {"first_var_share": float(share), "r2_ex_first": score(fit, test_rest, block=block).r2}


def r2_rows(y, y_hat) -> float:
    """Variance-weighted R² of predictions on stored rows (numpy arrays or CPU tensors), in float64."""
    y = np.asarray(y, dtype=np.float64)
    y_hat = np.asarray(y_hat, dtype=np.float64)
    return float(1.0 - ((y - y_hat) ** 2).sum() / ((y - y.mean(0)) ** 2).sum())


# ---- reduced-rank maps -------------------------------------------------------------------------
@dataclass
class LowRankFit:
    """A rank-r affine map y ≈ (A B)ᵀx + b, the train-SSE-optimal one of its rank (see module docstring)."""

    A: np.ndarray  # [d_in, r] = W V_r
    B: np.ndarray  # [r, d_out] = V_rᵀ
    b: np.ndarray  # [d_out] = μy − W_rᵀμx
    rank: int
    var_kept: float  # share of the fitted outputs' train variance in the kept directions
    n_train: int

    @property
    def W(self) -> np.ndarray:
        """The dense [d_in, d_out] map (so `linrec.stats.ceiling.score` takes a LowRankFit too)."""
        return self.A @ self.B

    def predict(self, x: np.ndarray) -> np.ndarray:
        return (x @ self.A) @ self.B + self.b


def output_directions(fit: AffineFit, train: Moments) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (descending) and eigenvectors [d_out, d_out] (columns) of the fitted outputs' covariance WᵀCxxW."""
    W = torch.from_numpy(np.ascontiguousarray(fit.W))
    G = W.T @ (torch.from_numpy(np.ascontiguousarray(train.Cxx)) @ W)
    G = 0.5 * (G + G.T)
    with one_thread():
        lam, V = torch.linalg.eigh(G)
    return lam.numpy()[::-1].copy(), V.numpy()[:, ::-1].copy()


def reduce_rank(
    fit: AffineFit, train: Moments, rank: int, directions: tuple[np.ndarray, np.ndarray] | None = None
) -> LowRankFit:
    """The rank-`rank` reduced-rank regression map from the OLS `fit` and its train statistics.

    Pass `directions` (from `output_directions`) to reuse one eigendecomposition across ranks.
    """
    d_out = fit.W.shape[1]
    if not 1 <= rank <= d_out:
        raise LinrecError(f"rank must be between 1 and the FFN output width {d_out}, got {rank}")
    lam, V = directions if directions is not None else output_directions(fit, train)
    Vr = V[:, :rank]
    A = fit.W @ Vr
    B = Vr.T.copy()
    b = train.mean_y - (train.mean_x @ A) @ B
    total = float(np.clip(lam, 0, None).sum())
    kept = float(np.clip(lam[:rank], 0, None).sum() / total) if total > 0 else 1.0
    return LowRankFit(A=A, B=B, b=b, rank=rank, var_kept=kept, n_train=train.n)
