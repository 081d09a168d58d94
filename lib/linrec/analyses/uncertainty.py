"""Uncertainty of comparisons: correlations with bootstrap intervals, and agreement of per-block profiles.

`correlations(a, b)` gives Pearson and Spearman with p-values; `pearson_with_ci` adds a
percentile bootstrap interval over points; `detectable_correlation` is the power side (how large a
correlation n points would have detected); `profile_agreement` compares the per-block R²_lin
profiles of one model across corpora (correlations, largest difference, disjoint intervals).
The bootstrap of one R²_lin over held-out windows is `linrec.stats.heldout.bootstrap_r2`.

`delta_ppl_interval` is the paired bootstrap of a change in perplexity over windows;
`spearman_with_ci` and `partial_spearman` are the rank statistics of the swap study's
predictors (ρ with ΔPPL across blocks, and ρ with depth partialled out), with percentile
bootstrap intervals over blocks.
"""

from __future__ import annotations

import itertools
import warnings
from typing import TYPE_CHECKING

import numpy as np

from linrec.base.errors import LinrecError

if TYPE_CHECKING:
    import pandas

# ---- profile agreement -------------------------------------------------------------------
AGREEMENT_COLUMNS = [
    "model", "corpus_a", "corpus_b", "n_blocks",
    "pearson_r", "pearson_p", "spearman_rho", "spearman_p",
    "max_abs_diff", "max_diff_block", "n_ci_disjoint", "n_ci_compared",
]  # fmt: skip


def correlations(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float, float]:
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


def profile_agreement(table, value: str = "r2_lin", lo: str = "r2_lo", hi: str = "r2_hi") -> pandas.DataFrame:
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
            r, rp, rho, sp = correlations(a, b)
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


def pearson_with_ci(x, y, n_boot: int = 2000, seed: int = 0) -> dict:
    """Pearson r, its two-sided p-value (scipy) and a percentile bootstrap 95 % interval over points."""
    from scipy import stats

    x, y = np.asarray(x, float), np.asarray(y, float)
    r, p = stats.pearsonr(x, y)
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot):
        idx = rng.integers(0, len(x), len(x))
        if np.ptp(x[idx]) > 0 and np.ptp(y[idx]) > 0:
            boots.append(np.corrcoef(x[idx], y[idx])[0, 1])
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return {"r": float(r), "p": float(p), "ci_lo": float(lo), "ci_hi": float(hi), "n": len(x)}


def detectable_correlation(n: int, level: float = 0.95, power: float = 0.8) -> float:
    """The smallest |r| a two-sided test at `level` detects with probability `power` over `n` points
    (Fisher z: r = tanh((z_{1−α/2} + z_power) / √(n − 3))); NaN below 4 points. A confidence interval
    over n points that includes 0 rules out correlations of about this size, not smaller ones."""
    from scipy.stats import norm

    if n < 4:
        return float("nan")
    return float(np.tanh((norm.ppf(1 - (1 - level) / 2) + norm.ppf(power)) / np.sqrt(n - 3)))


# ---- a change in perplexity ---------------------------------------------------------------
def delta_ppl_interval(
    base: np.ndarray,
    other: np.ndarray,
    tokens_per_window: int,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile interval of PPL(other) − PPL(base) from a paired bootstrap over windows.

    `base`, `other`: Σ next-token NLL of each window [n_windows] under the two models (every
    window has `tokens_per_window` predicted tokens). Each resample draws n windows with
    replacement, *the same ones for both models*, and recomputes both perplexities
    exp(Σ NLL / tokens): the interval keeps the windows' shared difficulty out of the
    difference, which is what makes a +0.3 change on 4k tokens resolvable at all.
    """
    base, other = np.asarray(base, dtype=np.float64), np.asarray(other, dtype=np.float64)
    if base.shape != other.shape or base.ndim != 1 or len(base) == 0:
        raise LinrecError(f"need per-window NLLs of the same windows, got shapes {base.shape} and {other.shape}")
    if not 0 < level < 1 or n_boot < 1:
        raise LinrecError(f"need 0 < level < 1 and n_boot ≥ 1, got level={level}, n_boot={n_boot}")
    n = len(base)
    counts = np.random.default_rng([seed, 17]).multinomial(n, np.full(n, 1.0 / n), size=n_boot)  # [n_boot, n]
    scale = 1.0 / (n * tokens_per_window)
    delta = np.exp(counts @ other * scale) - np.exp(counts @ base * scale)
    alpha = (1.0 - level) / 2
    lo, hi = np.quantile(delta, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


# ---- rank statistics across blocks ------------------------------------------------------------
def _ranks(a: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(a, axis=-1)


def _spearman_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman ρ of each row pair of a, b [k, n] (ties get average ranks); NaN for a constant row."""
    ra, rb = _ranks(a), _ranks(b)
    ra = ra - ra.mean(-1, keepdims=True)
    rb = rb - rb.mean(-1, keepdims=True)
    den = np.sqrt((ra * ra).sum(-1) * (rb * rb).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (ra * rb).sum(-1) / np.where(den > 0, den, 1), np.nan)


def _partial_rows(a: np.ndarray, b: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Partial Spearman ρ(a, b | z) of each row: the Pearson correlation of the ranks of a and b after a
    least-squares line in the ranks of z is taken out of each."""
    ra, rb, rz = (_ranks(v).astype(np.float64) for v in (a, b, z))
    rz = rz - rz.mean(-1, keepdims=True)
    zz = (rz * rz).sum(-1, keepdims=True)
    out = []
    for r in (ra, rb):
        r = r - r.mean(-1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            beta = np.where(zz > 0, (r * rz).sum(-1, keepdims=True) / np.where(zz > 0, zz, 1), 0.0)
        out.append(r - beta * rz)
    ea, eb = out
    den = np.sqrt((ea * ea).sum(-1) * (eb * eb).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 1e-12, (ea * eb).sum(-1) / np.where(den > 1e-12, den, 1), np.nan)


def across_block_length(n: int) -> int:
    """The moving-block bootstrap's block length for `n` adjacent transformer blocks: round(n^(1/3)), at least 1.
    Neighbouring blocks share the residual stream, so their numbers are correlated through depth; resampling runs of
    adjacent blocks keeps that dependence inside each run. n^(1/3) is the order of the block length that minimises
    the error of a bootstrap variance or distribution estimate (Hall, Horowitz & Jing 1995, Biometrika 82:561);
    30 blocks give 3, 18 blocks give 3."""
    return max(1, int(round(n ** (1 / 3))))


def bootstrap_indices(n: int, n_boot: int, rng: np.random.Generator, block_length: int = 1) -> np.ndarray:
    """[n_boot, n] indices into n ordered points: with `block_length` 1 an ordinary bootstrap (points independent);
    above 1 a moving-block bootstrap (Künsch 1989): runs of `block_length` consecutive points, each starting at a
    uniform position among the n − ℓ + 1 possible, joined and cut to n."""
    if block_length <= 1:
        return rng.integers(0, n, size=(n_boot, n))
    ell = min(int(block_length), n)
    k = -(-n // ell)
    starts = rng.integers(0, n - ell + 1, size=(n_boot, k))
    return (starts[:, :, None] + np.arange(ell)[None, None, :]).reshape(n_boot, k * ell)[:, :n]


def _boot(stat, arrays: list[np.ndarray], n_boot: int, seed: int, block_length: int = 1) -> tuple[float, np.ndarray]:
    """The statistic on the points, and its finite values over resampled points (empty below 3 points or when
    fewer than half the resamples give a value)."""
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    n = len(arrays[0])
    point = float(stat(*[a[None] for a in arrays])[0])
    if n < 3:
        return point, np.empty(0)
    idx = bootstrap_indices(n, n_boot, np.random.default_rng([seed, 29]), block_length)
    boot = stat(*[a[idx] for a in arrays])
    boot = boot[np.isfinite(boot)]
    return point, boot if len(boot) >= n_boot / 2 else np.empty(0)


def _interval(boot: np.ndarray, level: float) -> tuple[float, float]:
    if len(boot) == 0:
        return np.nan, np.nan
    alpha = (1.0 - level) / 2
    lo, hi = np.quantile(boot, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def _boot_ci(
    stat, arrays: list[np.ndarray], n_boot: int, seed: int, level: float, block_length: int = 1
) -> tuple[float, float, float]:
    """(statistic, lo, hi): the statistic on the points and its percentile interval over resampled points."""
    point, boot = _boot(stat, arrays, n_boot, seed, block_length)
    return (point, *_interval(boot, level))


def _pearson_sq_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Squared Pearson r of each row pair of a, b [k, n]: the share of b's variance a line in a explains."""
    a = a - a.mean(-1, keepdims=True)
    b = b - b.mean(-1, keepdims=True)
    den = (a * a).sum(-1) * (b * b).sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (a * b).sum(-1) ** 2 / np.where(den > 0, den, 1), np.nan)


def explained_share_with_ci(
    a, b, n_boot: int = 2000, seed: int = 0, level: float = 0.95, block_length: int = 1
) -> tuple[float, float, float]:
    """Pearson r²(a, b) — the share of b's variance across points that a line in a explains — and its percentile
    bootstrap interval over points (`block_length` > 1: a moving-block bootstrap over ordered points)."""
    return _boot_ci(_pearson_sq_rows, [a, b], n_boot, seed, level, block_length)


def spearman_with_ci(
    a, b, n_boot: int = 2000, seed: int = 0, level: float = 0.95, block_length: int = 1
) -> tuple[float, float, float]:
    """Spearman ρ(a, b) and its percentile bootstrap interval over points (pairs resampled with replacement;
    `block_length` > 1: runs of adjacent points, `bootstrap_indices`)."""
    return _boot_ci(_spearman_rows, [a, b], n_boot, seed, level, block_length)


def partial_spearman(
    a, b, z, n_boot: int = 2000, seed: int = 0, level: float = 0.95, block_length: int = 1
) -> tuple[float, float, float]:
    """Partial Spearman ρ(a, b | z) (rank correlation left once z's ranks are regressed out of both),
    with its percentile bootstrap interval over points (`block_length` as in `spearman_with_ci`)."""
    return _boot_ci(_partial_rows, [a, b, z], n_boot, seed, level, block_length)


def _pearson_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson r of each row pair of a, b [k, n]; NaN for a constant row."""
    a = a - a.mean(-1, keepdims=True)
    b = b - b.mean(-1, keepdims=True)
    den = np.sqrt((a * a).sum(-1) * (b * b).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (a * b).sum(-1) / np.where(den > 0, den, 1), np.nan)


# ---- "no effect" needs an equivalence test -----------------------------------------------------------------
# The equivalence margin for a correlation across blocks: |ρ| < 0.3. A correlation of 0.3 explains 9 % of the
# variance across blocks, Cohen's (1988) boundary between a small and a medium effect; a relation weaker than that
# cannot sort blocks usefully (with ρ = 0.3 a block in the better half is still in the worse half of the other
# measure 40 % of the time), so "uncorrelated" (claim 3) and "does not flag" (claim 6b) mean |ρ| < 0.3.
EQUIVALENCE_MARGIN = 0.3
EFFECT, NO_EFFECT, INCONCLUSIVE = "effect", "no effect", "inconclusive"


def correlation_outcome(lo95: float, hi95: float, lo90: float, hi90: float, margin: float = EQUIVALENCE_MARGIN) -> str:
    """Three outcomes for a correlation (Schuirmann's two one-sided tests at 5 % each, as a 90 % interval):
    `NO_EFFECT` if the 90 % interval lies strictly inside (−margin, margin) — a correlation at least `margin` in size
    is ruled out; else `EFFECT` if the 95 % interval excludes 0; else `INCONCLUSIVE` (neither is shown: the data
    are too few or too noisy). A missing interval is inconclusive. Equivalence is checked first: a correlation shown
    both nonzero and smaller than the margin is one the margin calls negligible."""
    if not all(np.isfinite(v) for v in (lo95, hi95, lo90, hi90)):
        return INCONCLUSIVE
    if -margin < lo90 and hi90 < margin:
        return NO_EFFECT
    if lo95 > 0 or hi95 < 0:
        return EFFECT
    return INCONCLUSIVE


def boot_p(boot: np.ndarray) -> float:
    """Two-sided bootstrap p-value of "the statistic is 0": twice the smaller share of resamples on either side of
    0, capped at 1 (the level at which the percentile interval would just touch 0); NaN without resamples."""
    if len(boot) == 0:
        return np.nan
    return float(min(1.0, 2 * min((boot <= 0).mean(), (boot >= 0).mean())))


_ROWS = {"pearson": _pearson_rows, "spearman": _spearman_rows, "partial": _partial_rows}


def correlation_test(
    a, b, z=None, kind: str = "spearman", n_boot: int = 2000, seed: int = 0, block_length: int | None = None,
    margin: float = EQUIVALENCE_MARGIN,
) -> dict:  # fmt: skip
    """A correlation across ordered blocks with everything a verdict needs: `rho`; its 95 % (`lo`, `hi`) and 90 %
    (`lo90`, `hi90`) moving-block bootstrap intervals (`block_length`, default `across_block_length(n)`); the
    95 % interval as if blocks were independent (`lo_iid`, `hi_iid`); the bootstrap p-value (`p`, `boot_p`); and
    the `outcome` of `correlation_outcome` at `margin`. `kind`: "pearson", "spearman", or "partial" (Spearman
    ρ(a, b | z))."""
    arrays = [a, b] + ([z] if kind == "partial" else [])
    n = len(np.asarray(a))
    ell = across_block_length(n) if block_length is None else int(block_length)
    point, boot = _boot(_ROWS[kind], arrays, n_boot, seed, ell)
    _, iid = _boot(_ROWS[kind], arrays, n_boot, seed, 1)
    lo, hi = _interval(boot, 0.95)
    lo90, hi90 = _interval(boot, 0.90)
    lo_iid, hi_iid = _interval(iid, 0.95)
    return {
        "rho": point, "lo": lo, "hi": hi, "lo90": lo90, "hi90": hi90, "lo_iid": lo_iid, "hi_iid": hi_iid,
        "p": boot_p(boot), "block_length": ell, "n": n, "outcome": correlation_outcome(lo, hi, lo90, hi90, margin),
    }  # fmt: skip


def _adjusted(p, adjust) -> np.ndarray:
    """`adjust(sorted finite p-values)` put back in place, capped at 1; NaN entries left out and kept NaN."""
    p = np.asarray(p, dtype=np.float64)
    out = np.full_like(p, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    if len(ok):
        order = ok[np.argsort(p[ok], kind="stable")]
        out[order] = np.minimum(adjust(p[order]), 1.0)
    return out


def holm(p) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error over the tests given): the k-th smallest p times
    (m − k + 1), made non-decreasing."""
    return _adjusted(p, lambda v: np.maximum.accumulate(v * (len(v) - np.arange(len(v)))))


def benjamini_hochberg(p) -> np.ndarray:
    """Benjamini–Hochberg q-values (false-discovery rate over the tests given): the k-th smallest p times m / k,
    made non-decreasing from the largest down."""
    return _adjusted(p, lambda v: np.minimum.accumulate((v * len(v) / np.arange(1, len(v) + 1))[::-1])[::-1])
