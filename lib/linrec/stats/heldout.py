"""Held-out per-window sums and the interval of R²_lin over held-out windows.

The capture (`linrec.collect.capture`) fits every block's affine map
from the finished train statistics before its first test batch (with `linrec.stats.ceiling.fit_affine`,
the ceiling's own solver, so the map is the ceiling's) and then keeps, for every held-out
window w and output feature j, in float64:

    n_w          rows of the window
    sse_wj  = Σ_w e_j²               e = y − Wᵀx − b
    sy_wj   = Σ_w (y_j − c_j)        c = the train mean of y (`shift`)
    syy_wj  = Σ_w (y_j − c_j)²

The shift c only guards the variance against cancellation when |mean| ≫ std (a few LLM
features are like that); SST is shift-invariant. For a multiset of windows with counts k_w,

    R² = 1 − Σ_w k_w Σ_j sse_wj / Σ_j (Σ_w k_w syy_wj − (Σ_w k_w sy_wj)² / Σ_w k_w n_w),

which on all windows (k ≡ 1) is exactly `ceiling.score(fit, test_moments).r2` (SST around the
test mean). Leaving out (or resampling) whole windows keeps the correlation between the positions
of one window; the fitted map is held fixed, so the interval is one for the **held-out R² of the
fitted map** (the uncertainty of the held-out score of *this* map). How often it also covers the block's
R²_lin as a refit on another train split would score it is measured apart
(`linrec.analyses.calibration.refit_coverage`: less often at a few features, about as often at a real width).

`HeldOutSums` is the accumulator the capture feeds, one test batch at a time. Given the train split's
first-position statistics it also keeps the same sums for every position but the windows' first, against the map
fitted without them (`rest`): the held-out R² without position 0 (`linrec.stats.ceiling.first_position`'s `r2_ex_first`)
then gets its own interval.

The interval the tables carry is `r2_interval`: the leave-one-window-out jackknife with a t quantile
(`linrec.stats.jackknife`), whose coverage is measured (`linrec.analyses.calibration`); `bootstrap_r2` is the
percentile bootstrap it replaced, kept to be measured beside it.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, replace

import numpy as np
import torch

from linrec.base.errors import LinrecError
from linrec.base.threads import one_thread
from linrec.stats import N_BOOT
from linrec.stats.ceiling import AffineFit, fit_affine
from linrec.stats.distributed import sum_
from linrec.stats.jackknife import jackknife
from linrec.stats.moments import Moments, remove_rows


@dataclass
class HeldOut:
    """Per held-out window sums of one block (see module docstring); arrays indexed by window."""

    windows: np.ndarray  # [W] int64: window index into the capture's `Windows.ids`
    n: np.ndarray  # [W] int64 rows per window
    sse: np.ndarray  # [W, d_out] float64 Σ e_j²
    sy: np.ndarray  # [W, d_out] float64 Σ (y_j − shift_j)
    syy: np.ndarray  # [W, d_out] float64 Σ (y_j − shift_j)²
    shift: np.ndarray  # [d_out] float64, the train mean of y

    KEYS = ("windows", "n", "sse", "sy", "syy", "shift")

    @property
    def n_windows(self) -> int:
        return len(self.n)

    def state(self) -> dict[str, np.ndarray]:
        """Arrays to store."""
        return {k: np.asarray(getattr(self, k)) for k in self.KEYS}

    @classmethod
    def from_state(cls, s) -> HeldOut:
        return cls(**{k: np.asarray(s[k]) for k in cls.KEYS})

    @classmethod
    def empty(cls, d_out: int, shift: np.ndarray | None = None) -> HeldOut:
        z = np.zeros((0, d_out))
        return cls(
            np.zeros(0, np.int64),
            np.zeros(0, np.int64),
            z,
            z.copy(),
            z.copy(),
            np.zeros(d_out) if shift is None else shift,
        )

    def r2(self) -> float:
        """Point estimate on all windows: 1 − ΣSSE/ΣSST, SST around the held-out mean."""
        return float(r2_of_counts(self, np.ones((1, self.n_windows)))[0])


def r2_of_counts(h: HeldOut, counts: np.ndarray) -> np.ndarray:
    """R² for each row of `counts` [B, W] (window multiplicities); NaN where the resample has SST = 0."""
    counts = np.asarray(counts, dtype=np.float64)
    n = counts @ h.n.astype(np.float64)  # [B]
    sse = counts @ h.sse.sum(axis=1)  # [B]
    sy = counts @ h.sy  # [B, d_out]
    syy = counts @ h.syy.sum(axis=1)  # [B]
    with np.errstate(divide="ignore", invalid="ignore"):
        sst = syy - (sy * sy).sum(axis=1) / n
        return np.where(sst > 0, 1.0 - sse / np.where(sst > 0, sst, 1.0), np.nan)


def window_icc(values, windows) -> float:
    """The intraclass correlation of rows within a window, pooled over columns: `values` [k, m] (rows, e.g. one
    block's held-out residuals), `windows` [k] the window of each row. One-way random-effects ANOVA, each sum over the
    m columns (so a column weighs by its variance, as in a pooled R²): the mean squares between and within windows,
    MSB = Σ_w n_w |v̄_w − v̄|² / (W − 1) and MSW = Σ |v − v̄_w|² / (k − W), give the window component
    σ_b² = (MSB − MSW) / n₀ with n₀ = (k − Σ n_w² / k) / (W − 1), and ICC = σ_b² / (σ_b² + MSW), clipped at 0.
    It is the share of a row's variance its window shares with the window's other rows: 0 for independent rows. NaN
    with fewer than 2 windows or no row beside another in its window."""
    v = np.asarray(values, dtype=np.float64)
    _, inv, n_w = np.unique(np.asarray(windows), return_inverse=True, return_counts=True)
    k, W = len(v), len(n_w)
    if W < 2 or k <= W:
        return float("nan")
    v = v.reshape(k, -1)
    v = v - v.mean(0)
    means = np.zeros((W, v.shape[1]))
    np.add.at(means, inv, v)
    means /= n_w[:, None]
    msw = float(((v - means[inv]) ** 2).sum()) / (k - W)
    msb = float((n_w[:, None] * means**2).sum()) / (W - 1)
    n0 = (k - float((n_w**2).sum()) / k) / (W - 1)
    sb = max((msb - msw) / n0, 0.0)
    return sb / (sb + msw) if sb + msw > 0 else float("nan")


def _check(h: HeldOut | None, level: float) -> None:
    if h is None:
        raise LinrecError(
            "this block has no held-out sums (its affine fit failed at capture time); see ceiling_table for the reason"
        )
    if not 0 < level < 1:
        raise LinrecError(f"level must be in (0, 1), got {level}")
    if h.n_windows == 0 or h.n.sum() == 0:
        raise LinrecError("the test split is empty; use more tokens or a larger test fraction")


def r2_interval(heldout_block: HeldOut, level: float = 0.95) -> tuple[float, float]:
    """(lo, hi): the held-out R² of one block's fitted map ∓ t_{W−1} × its leave-one-window-out jackknife standard
    error (`linrec.stats.jackknife`): an interval for the held-out R² of the fitted map, held fixed (measured coverage
    in `linrec.analyses.calibration`: `r2_coverage` for that, `refit_coverage` as one for a refit's R²). One window
    gives no interval (NaN, NaN): there is nothing to leave out, and (R², R²) would read as certainty."""

    h = heldout_block
    _check(h, level)
    if h.n_windows == 1:
        return float("nan"), float("nan")
    lo, hi = jackknife(lambda c: r2_of_counts(h, c), h.n_windows).interval(level)
    if not np.isfinite(lo):
        raise LinrecError("the FFN output is constant on the test split without one of its windows; R² is undefined")
    return float(lo), float(hi)


def bootstrap_r2(
    heldout_block: HeldOut, n_boot: int = N_BOOT, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """(lo, hi): percentile bootstrap interval of the held-out R² of one block, resampling windows. The interval the
    tables carried before issue 45; kept to measure beside `r2_interval` (it under-covers on 32 windows)."""
    h = heldout_block
    _check(h, level)
    if n_boot < 1:
        raise LinrecError(f"n_boot must be at least 1, got {n_boot}")
    W = h.n_windows
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(W, np.full(W, 1.0 / W), size=n_boot)  # [n_boot, W]
    r2 = r2_of_counts(h, counts)
    if np.isnan(r2).all():
        raise LinrecError("the FFN output is constant on every bootstrap resample of the test split; R² is undefined")
    alpha = (1.0 - level) / 2
    lo, hi = np.nanquantile(r2, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


class HeldOutSums:
    """Per test window and block: n, Σe², Σ(y − c), Σ(y − c)², against maps fitted from the train split.

    `fit(train, blocks)` fits the listed blocks (all by default) once their train statistics are final: a
    capture in one pass fits every block before its first test batch, one in block groups fits each group
    before that group's test batches. `begin` walks the test windows batch by batch, and `restart` goes back
    to the first test window for the next group's pass."""

    def __init__(self, dims: list[tuple[int, int]], test_windows: np.ndarray):
        self.dims = dims
        self.windows = np.asarray(test_windows, dtype=np.int64)
        self.fits: dict[int, tuple[AffineFit, torch.Tensor] | None] = {}  # block → (its map, the train mean of y)
        self.errors: dict[int, str] = {}
        self.sums: dict[int, dict[str, torch.Tensor]] = {}
        self.rest_fits: dict[int, tuple[AffineFit, torch.Tensor] | None] = {}  # the same without position 0
        self.rest_sums: dict[int, dict[str, torch.Tensor]] = {}
        self.start = self.stop = 0  # rows of the held-out arrays in the current batch
        self.seconds = self.fit_seconds = 0.0

    def fit(self, train: list[Moments], blocks=None, train_first: dict[int, Moments] | None = None) -> None:
        """Fit the affine maps of `blocks` (default: all) from their finished train statistics, once each; with
        `train_first` (block → `Moments` of the train windows' first positions) also each block's map without
        them, whose sums cover every held-out position but the first."""

        t0 = time.perf_counter()
        for i in range(len(train)) if blocks is None else blocks:
            if i in self.fits:
                continue
            self.fits[i], self.sums[i] = self._fit(i, train[i], record=True)
            if train_first is not None and i in train_first:
                try:
                    rest = remove_rows(train[i], train_first[i])
                except LinrecError:
                    rest = None
                self.rest_fits[i], self.rest_sums[i] = self._fit(i, rest) if rest is not None else (None, {})
        dt = time.perf_counter() - t0
        self.fit_seconds += dt
        self.seconds += dt

    def _fit(self, i: int, m: Moments, record: bool = False):
        """(the map, shift) of block `i` fitted on `m`, its W and b held as tensors where the statistics are, and
        zeroed sums for it; (None, {}) if the fit fails (the error kept for the main map, `record`). Statistics on an
        accelerator are fitted there (`fit_affine`), and the map stays there: nothing of the held-out sums passes
        through the host until `result`."""
        try:
            fit = fit_affine(m, block=i, condition=False, cholesky=True)
        except LinrecError as err:  # surfaced by the ceiling on this block; the capture goes on
            if record:
                self.errors[i] = str(err)
            return None, {}
        dev = m.mean.device
        shift = m.mean[m.d_in :].clone()  # the train mean of y, float64, where the statistics are
        d_out, W = self.dims[i][1], len(self.windows)
        sums = {
            "n": torch.zeros(W, dtype=torch.int64),
            **{k: torch.zeros(W, d_out, dtype=torch.float64, device=dev) for k in ("sse", "sy", "syy")},
        }
        return (replace(fit, on_device=fit.tensors(dev)), shift), sums

    def maps(self, rest: bool = False) -> dict[int, AffineFit]:
        """Block → the map its sums are taken against (with `rest`, those without position 0): the ceiling's own,
        which a capture hands on (`linrec.collect.capture.Capture.fit`)."""
        return {b: f[0] for b, f in (self.rest_fits if rest else self.fits).items() if f is not None}

    def restart(self) -> None:
        """Back to the first test window (the next block group's pass)."""
        self.start = self.stop = 0

    def to(self, device, blocks) -> None:
        """Move the sums and maps of `blocks` to `device` (a finished group's, off the GPU)."""
        for b in blocks:
            for fits, sums in ((self.fits, self.sums), (self.rest_fits, self.rest_sums)):
                if fits.get(b) is not None:
                    fit, shift = fits[b]
                    fits[b] = replace(fit, on_device=fit.tensors(device)), shift.to(device)
                    sums[b] = {k: v.to(device) for k, v in sums[b].items()}

    def begin(self, n_windows_batch: int) -> None:
        self.start, self.stop = self.stop, self.stop + n_windows_batch

    def seek(self, position: int, n_windows_batch: int) -> None:
        """The next batch holds test windows `position` … `position + n_windows_batch − 1` (in test order)."""
        self.start, self.stop = position, position + n_windows_batch

    def all_reduce(self) -> None:
        """Under torch.distributed: sum every rank's sums (each held-out window's are non-zero on one rank only)."""

        for sums in (self.sums, self.rest_sums):
            for b in sorted(sums):
                if sums[b]:
                    sum_([sums[b][k] for k in ("n", "sse", "sy", "syy")])

    def update(self, block: int, x: torch.Tensor, y: torch.Tensor) -> None:
        """Add a test batch ([windows, seq, d]) to block `block`'s sums: all positions against the map, and, where
        the map without position 0 was fitted, positions 1 … against that one."""
        t0 = time.perf_counter()
        for fit, sums, first in ((self.fits[block], self.sums, 0), (self.rest_fits.get(block), self.rest_sums, 1)):
            if fit is None:
                continue
            # On CPU one thread: these are small float64 ops between forward-pass layers, and on a
            # busy 2-core machine two synchronising threads made them ~7× slower (120 updates at
            # d = 576, the test split of a default capture: 1.6 s on one thread, 11 s on two).
            affine, shift = fit
            with one_thread() if shift.device.type == "cpu" else contextlib.nullcontext():
                self._add(
                    sums[block], x[:, first:], y[:, first:], *affine.tensors(shift.device), shift, self.dims[block]
                )
        self.seconds += time.perf_counter() - t0

    def _add(
        self, s: dict, x: torch.Tensor, y: torch.Tensor, W: torch.Tensor, b: torch.Tensor, shift: torch.Tensor, dims
    ) -> None:
        nw = self.stop - self.start
        d_in, d_out = dims
        x64 = x.detach().reshape(-1, d_in).to(W.device, torch.float64)
        yc = y.detach().reshape(-1, d_out).to(W.device, torch.float64, copy=True)  # never the hooked tensor itself
        yc.sub_(shift)
        w = slice(self.start, self.stop)
        s["n"][w] += yc.shape[0] // nw
        s["sy"][w] += yc.view(nw, -1, d_out).sum(1)
        s["syy"][w] += yc.square().view(nw, -1, d_out).sum(1)
        e = yc.sub_(b - shift).addmm_(x64, W, alpha=-1)  # (y − c) − (b − c) − Wᵀx = y − Wᵀx − b, test rows only
        s["sse"][w] += e.square_().view(nw, -1, d_out).sum(1)

    def result(self, rest: bool = False) -> list[HeldOut | None]:
        """Per block, its `HeldOut` (None where the fit failed); with `rest`, those of the maps without position 0
        (None where they were not fitted)."""
        fits, sums = (self.rest_fits, self.rest_sums) if rest else (self.fits, self.sums)
        if not self.fits:  # no test window: nothing was fitted, nothing held out
            return [HeldOut.empty(dy) for _, dy in self.dims]
        out: list[HeldOut | None] = []
        for b in range(len(self.dims)):
            fit = fits.get(b)
            if fit is None:
                out.append(None)
                continue
            arr = {k: v.cpu().numpy() for k, v in sums[b].items()}
            out.append(HeldOut(windows=self.windows.copy(), shift=fit[1].cpu().numpy(), **arr))
        return out
