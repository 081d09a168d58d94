"""How sure is an R²_lin, and do two corpora give the same per-block profile?

Bootstrap over held-out windows. The capture (`linrec.capture`) fits every block's affine map
from the finished train statistics before its first test batch (with `linrec.ceiling.fit_affine`,
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
test mean). `bootstrap_r2` draws n_boot count vectors k ~ Multinomial(n_windows, 1/n_windows)
at once and returns the percentile interval. It resamples whole windows, so correlation
between the positions of one window is kept; the fitted map is held fixed (this is the
uncertainty of the held-out score of *this* map, not of re-fitting on another train split).

`profile_agreement` compares per-block R²_lin profiles of one model across corpora.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass

import numpy as np

from linrec.errors import LinrecError


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
    def from_state(cls, s) -> "HeldOut":
        return cls(**{k: np.asarray(s[k]) for k in cls.KEYS})

    @classmethod
    def empty(cls, d_out: int, shift: np.ndarray | None = None) -> "HeldOut":
        z = np.zeros((0, d_out))
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), z, z.copy(), z.copy(), np.zeros(d_out) if shift is None else shift)

    def r2(self) -> float:
        """Point estimate on all windows: 1 − ΣSSE/ΣSST, SST around the held-out mean."""
        return float(_r2_of_counts(self, np.ones((1, self.n_windows)))[0])


def _r2_of_counts(h: HeldOut, counts: np.ndarray) -> np.ndarray:
    """R² for each row of `counts` [B, W] (window multiplicities); NaN where the resample has SST = 0."""
    counts = np.asarray(counts, dtype=np.float64)
    n = counts @ h.n.astype(np.float64)  # [B]
    sse = counts @ h.sse.sum(axis=1)  # [B]
    sy = counts @ h.sy  # [B, d_out]
    syy = counts @ h.syy.sum(axis=1)  # [B]
    with np.errstate(divide="ignore", invalid="ignore"):
        sst = syy - (sy * sy).sum(axis=1) / n
        return np.where(sst > 0, 1.0 - sse / np.where(sst > 0, sst, 1.0), np.nan)


def bootstrap_r2(heldout_block: HeldOut, n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """(lo, hi): percentile bootstrap interval of the held-out R² of one block, resampling windows."""
    h = heldout_block
    if h is None:
        raise LinrecError("this block has no held-out sums (its affine fit failed at capture time); see ceiling_table for the reason")
    if not 0 < level < 1:
        raise LinrecError(f"level must be in (0, 1), got {level}")
    if n_boot < 1:
        raise LinrecError(f"n_boot must be at least 1, got {n_boot}")
    W = h.n_windows
    if W == 0 or h.n.sum() == 0:
        raise LinrecError("the test split is empty; use more tokens or a larger test fraction")
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(W, np.full(W, 1.0 / W), size=n_boot)  # [n_boot, W]
    r2 = _r2_of_counts(h, counts)
    if np.isnan(r2).all():
        raise LinrecError("the FFN output is constant on every bootstrap resample of the test split; R² is undefined")
    alpha = (1.0 - level) / 2
    lo, hi = np.nanquantile(r2, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


# ---- profile agreement -------------------------------------------------------------------
AGREEMENT_COLUMNS = [
    "model", "corpus_a", "corpus_b", "n_blocks",
    "pearson_r", "pearson_p", "spearman_rho", "spearman_p",
    "max_abs_diff", "max_diff_block", "n_ci_disjoint", "n_ci_compared",
]  # fmt: skip


def _correlations(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float, float]:
    """(Pearson r, p, Spearman ρ, p); NaN where undefined (fewer than 3 blocks, or a constant profile)."""
    from scipy import stats

    nan4 = (np.nan,) * 4
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return nan4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = stats.pearsonr(a, b)
        s = stats.spearmanr(a, b)
    return float(p.statistic), float(p.pvalue), float(s.statistic), float(s.pvalue)


def profile_agreement(table, value: str = "r2_lin", lo: str = "r2_lo", hi: str = "r2_hi") -> "pandas.DataFrame":
    """Per model and pair of corpora, how alike the per-block profiles of `value` are.

    `table`: long form with columns model, corpus, block, `value` (and optionally `lo`, `hi`,
    a per-block interval), e.g. `pd.concat` of `ceiling.ceiling_table` results. Blocks present
    for both corpora are compared. Returns one row per (model, corpus_a, corpus_b), corpora in
    order of first appearance: Pearson r and Spearman ρ with their two-sided p-values
    (scipy.stats; NaN with fewer than 3 blocks or a constant profile), the largest
    |a − b| over blocks and its block, and how many blocks have disjoint intervals
    (`n_ci_disjoint` of `n_ci_compared` blocks where both intervals are finite; NaN without
    interval columns).
    """
    import pandas as pd

    missing = {"model", "corpus", "block", value} - set(table.columns)
    if missing:
        raise LinrecError(f"profile table lacks columns {sorted(missing)}; give a long table like ceiling_table's")
    has_ci = lo in table.columns and hi in table.columns
    rows = []
    for model, tm in table.groupby("model", sort=False):
        if tm.duplicated(["corpus", "block"]).any():
            raise LinrecError(f"model {model}: a (corpus, block) appears twice; one row per block and corpus")
        per = {c: g.set_index("block") for c, g in tm.groupby("corpus", sort=False)}
        for ca, cb in itertools.combinations(per, 2):
            ga, gb = per[ca], per[cb]
            blocks = ga.index.intersection(gb.index).sort_values()
            a = ga.loc[blocks, value].to_numpy(np.float64)
            b = gb.loc[blocks, value].to_numpy(np.float64)
            ok = np.isfinite(a) & np.isfinite(b)
            blocks, a, b = blocks[ok], a[ok], b[ok]
            r, rp, rho, sp = _correlations(a, b)
            diff = np.abs(a - b)
            k = int(np.argmax(diff)) if len(diff) else None
            n_disjoint = n_compared = np.nan
            if has_ci:
                alo, ahi = ga.loc[blocks, lo].to_numpy(np.float64), ga.loc[blocks, hi].to_numpy(np.float64)
                blo, bhi = gb.loc[blocks, lo].to_numpy(np.float64), gb.loc[blocks, hi].to_numpy(np.float64)
                fin = np.isfinite(alo) & np.isfinite(ahi) & np.isfinite(blo) & np.isfinite(bhi)
                n_compared = int(fin.sum())
                n_disjoint = int(((ahi < blo) | (bhi < alo))[fin].sum())
            rows.append(
                {
                    "model": model,
                    "corpus_a": ca,
                    "corpus_b": cb,
                    "n_blocks": len(blocks),
                    "pearson_r": r,
                    "pearson_p": rp,
                    "spearman_rho": rho,
                    "spearman_p": sp,
                    "max_abs_diff": float(diff[k]) if k is not None else np.nan,
                    "max_diff_block": blocks[k] if k is not None else None,
                    "n_ci_disjoint": n_disjoint,
                    "n_ci_compared": n_compared,
                }
            )
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)
