"""Uncertainty of comparisons: correlations with bootstrap intervals, and agreement of per-block profiles.

`correlations(a, b)` gives Pearson and Spearman with p-values; `detectable_correlation` is the power side (how large a
correlation n points would have detected); `profile_agreement` compares the per-block R²_lin
profiles of one model across corpora (correlations, largest difference, disjoint intervals).
The bootstrap of one R²_lin over held-out windows is `linrec.stats.heldout.bootstrap_r2`.

`delta_ppl_interval` is the paired, skew-corrected (Hall) jackknife interval of a change in perplexity over
windows (`delta_ppl_batch` for many data sets at once, read by the swap study at `SWAP_LEVEL` = 99 %;
`delta_ppl_jackknife_t` the symmetric one it replaced, `delta_ppl_skew` the skewness it corrects for,
`own_skew_check` its coverage when a swap's own windows are the population);
`correlation_test` is a correlation across ordered blocks (Pearson, Spearman, or Spearman with depth partialled out)
with Fisher's interval at an effective number of blocks, and its three-way verdict (`correlation_outcome`, with the
equivalence margin: `linrec.stats.equivalence`, where the claims' rules read it too).
"""

from __future__ import annotations

import itertools
import warnings
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy import stats
from scipy.stats import norm, rankdata

from linrec.base.errors import LinrecError
from linrec.stats.equivalence import (  # noqa: F401  (EFFECT, NO_EFFECT: read from here by the analyses)
    EFFECT,
    EQUIVALENCE_MARGIN,
    INCONCLUSIVE,
    NO_EFFECT,
    correlation_outcome,
)
from linrec.stats.jackknife import hall_interval, interval, skew_corrected

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


def detectable_correlation(n: int, level: float = 0.95, power: float = 0.8) -> float:
    """The smallest |r| a two-sided test at `level` detects with probability `power` over `n` points
    (Fisher z: r = tanh((z_{1−α/2} + z_power) / √(n − 3))); NaN below 4 points. A confidence interval
    over n points that includes 0 rules out correlations of about this size, not smaller ones."""

    if n < 4:
        return float("nan")
    return float(np.tanh((norm.ppf(1 - (1 - level) / 2) + norm.ppf(power)) / np.sqrt(n - 3)))


# ---- a change in perplexity ---------------------------------------------------------------------------------------
# The swap study's ΔPPL interval (claims 6a, 6b) is Hall's skew-corrected jackknife at a nominal 99 %: at 12 held-out
# windows (the default's until 2026-11-29, now all 32) the same interval at 95 % covers 0.92 under Gamma and 0.88–0.92
# under lognormal (σ 1) costs, every miss below the truth (the side that flatters a swap); at 99 % it covers 0.94–0.99
# under symmetric, Gamma, lognormal and one-costly-window-in-4 costs, and at 32 windows 0.976–0.998
# (`linrec.analyses.calibration.delta_ppl_coverage`, docs/numerics.md). It is
# named for its nominal level, 99 %, wherever it is shown; its measured coverage is in the methods table.
SWAP_LEVEL = 0.99
SWAP_MIN_WINDOWS = 12  # the fewest held-out windows at which its coverage is measured (params/healing.yaml's)
OWN_REPS = 2000  # resamples of a swap's own windows in `own_skew_check`


def _delta_stat(base: np.ndarray, other: np.ndarray, tokens_per_window: int):
    """ΔPPL = exp(Σ other / tokens) − exp(Σ base / tokens) as a function of window multiplicities [B, W] → [B]."""
    base, other = np.asarray(base, dtype=np.float64), np.asarray(other, dtype=np.float64)
    if base.shape != other.shape or base.ndim != 1 or len(base) == 0:
        raise LinrecError(f"need per-window NLLs of the same windows, got shapes {base.shape} and {other.shape}")
    if len(base) < 2:
        raise LinrecError("a change in perplexity needs at least 2 held-out windows for its interval; use more tokens")

    def delta(counts: np.ndarray) -> np.ndarray:
        n_tokens = counts.sum(axis=1) * tokens_per_window
        return np.exp(counts @ other / n_tokens) - np.exp(counts @ base / n_tokens)

    return delta, len(base)


def delta_ppl_batch(base, other, level: float = SWAP_LEVEL) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(point, lo, hi) of `delta_ppl_interval` for many data sets at once: `base`, `other` [R, W] the mean NLL per
    token of each window (per-window sums / tokens per window), one data set a row. The leave-one-window-out
    replicates of exp(mean other) − exp(mean base) in closed form, their pseudo-values, and Hall's skew-corrected t
    on them (`linrec.stats.jackknife.hall_interval`, the formula `skew_corrected` uses for any statistic)."""
    if not 0 < level < 1:
        raise LinrecError(f"need 0 < level < 1, got level={level}")
    b, o = np.atleast_2d(np.asarray(base, dtype=np.float64)), np.atleast_2d(np.asarray(other, dtype=np.float64))
    if b.shape != o.shape or b.shape[1] < 2:
        raise LinrecError(f"need per-window losses of the same ≥ 2 windows, got shapes {b.shape} and {o.shape}")
    w = b.shape[1]
    sb, so = b.sum(axis=1, keepdims=True), o.sum(axis=1, keepdims=True)
    point = np.exp(so[:, 0] / w) - np.exp(sb[:, 0] / w)
    loo = np.exp((so - o) / (w - 1)) - np.exp((sb - b) / (w - 1))
    lo, hi, _ = hall_interval(point, w * point[:, None] - (w - 1) * loo, level)
    return point, lo, hi


def delta_ppl_interval(base: np.ndarray, other: np.ndarray, tokens_per_window: int,
                       level: float = 0.95) -> tuple[float, float]:  # fmt: skip
    """Interval of PPL(other) − PPL(base) over windows, paired and skew-corrected: Hall's transformation of the
    leave-one-window-out jackknife t (`delta_ppl_batch`; `linrec.stats.jackknife.skew_corrected` the same formula
    for any statistic).

    `base`, `other`: Σ next-token NLL of each window [n_windows] under the two models (every window has
    `tokens_per_window` predicted tokens). Each replicate leaves *the same window* out of both perplexities
    exp(Σ NLL / tokens): the interval keeps the windows' shared difficulty out of the difference, which is what makes
    a +0.3 change on 4k tokens resolvable at all. The skew enters through the per-window costs (other − base per
    token; the exp around the means adds little): when a few windows cost much more than the rest, the plain
    jackknife-t (`delta_ppl_jackknife_t`) missed below the truth — the side that flatters a swap — in up to 14 % of
    data sets at 12 windows; Hall's correction moves the upper end up by the pseudo-values' skewness. The swap study
    reads it at `SWAP_LEVEL` (99 %: at 95 % it still misses below under heavy skew). Measured coverage per cost
    shape: `linrec.analyses.calibration.delta_ppl_coverage`. Deterministic: a rerun writes the same interval."""
    _delta_stat(base, other, tokens_per_window)  # the shape checks
    t = float(tokens_per_window)
    _, lo, hi = delta_ppl_batch(np.asarray(base, np.float64)[None] / t, np.asarray(other, np.float64)[None] / t, level)
    return float(lo[0]), float(hi[0])


def own_skew_check(base: np.ndarray, other: np.ndarray, tokens_per_window: int, level: float = SWAP_LEVEL,
                   reps: int = OWN_REPS, seed: int = 0) -> dict:  # fmt: skip
    """How the ΔPPL interval at `level` fares when the population is this swap's own windows: `reps` data sets of as
    many windows drawn with replacement from its (base, other) pairs, the truth their ΔPPL (the swap's estimate).
    Returns the share of intervals holding it (`own_cover`), wholly below it (`own_miss_below`: the upper end too low,
    the side that flatters a swap) and wholly above it (`own_miss_above`). A cost carried by one window of the few
    shows here as misses (a resample without it holds no trace of it), which the planted cost shapes cannot see."""
    delta, w = _delta_stat(base, other, tokens_per_window)
    truth = float(delta(np.ones((1, w)))[0])
    idx = np.random.default_rng([seed, w]).integers(0, w, (reps, w))
    b, o = (np.asarray(x, np.float64)[idx] / tokens_per_window for x in (base, other))
    _, lo, hi = delta_ppl_batch(b, o, level)
    below, above = float(np.mean(hi < truth)), float(np.mean(lo > truth))
    return {"own_cover": 1 - below - above, "own_miss_below": below, "own_miss_above": above}


def delta_ppl_jackknife_t(base: np.ndarray, other: np.ndarray, tokens_per_window: int,
                          level: float = 0.95) -> tuple[float, float]:  # fmt: skip
    """The symmetric paired jackknife-t interval of ΔPPL (`linrec.stats.jackknife.interval`): the tables' interval
    until issue 64, kept as the methods table's "before"; it under-covers when per-window costs are skewed."""
    if not 0 < level < 1:
        raise LinrecError(f"need 0 < level < 1, got level={level}")
    delta, w = _delta_stat(base, other, tokens_per_window)
    _, lo, hi = interval(delta, w, level)
    return float(lo), float(hi)


def delta_ppl_skew(base: np.ndarray, other: np.ndarray, tokens_per_window: int) -> float:
    """The skewness (G₁) of ΔPPL's jackknife pseudo-values over windows, the one `delta_ppl_interval` corrects
    for (positive: a few windows cost much more than the rest)."""
    delta, w = _delta_stat(base, other, tokens_per_window)
    return skew_corrected(delta, w)[3]


# ---- rank statistics across blocks ------------------------------------------------------------
def _ranks(a: np.ndarray) -> np.ndarray:
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


def _pearson_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson r of each row pair of a, b [k, n]; NaN for a constant row."""
    a = a - a.mean(-1, keepdims=True)
    b = b - b.mean(-1, keepdims=True)
    den = np.sqrt((a * a).sum(-1) * (b * b).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (a * b).sum(-1) / np.where(den > 0, den, 1), np.nan)


# ---- "no effect" needs an equivalence test -----------------------------------------------------------------
_ROWS = {"pearson": _pearson_rows, "spearman": _spearman_rows, "partial": _partial_rows}

# ---- a correlation across ordered blocks: Fisher z with an effective number of blocks ----------------------------
# Neighbouring blocks share the residual stream, so a per-block series is autocorrelated through depth and n blocks
# carry less information than n independent points. The interval is Fisher's z-interval with n replaced by Bartlett's
# effective n (Bartlett 1935; Pyper & Peterman 1998, Can. J. Fish. Aquat. Sci. 55:2127): n_eff = n / (1 + 2 Σ_k
# r_a(k) r_b(k)) over lags k ≤ n/5, the lag-1 autocorrelations corrected for their small-sample bias (Kendall 1954:
# E r(1) ≈ ρ(1) − (1 + 3ρ(1))/n), n_eff kept within [5, n]. Spearman's ρ is the Pearson r of ranks with the z
# variance inflated by 1.06 (Fieller, Hartley & Pearson 1957); the partial ρ loses one more degree of freedom per
# covariate. Measured coverage (`linrec.analyses.calibration`, AR(1) blocks at φ 0 – 0.6, 18 and 30 blocks): 0.95 –
# 0.97 for a nominal 0.95, where the moving-block percentile bootstrap the verdicts read before gave 0.81 – 0.93.
FISHER_SPEARMAN = 1.06
EQUIVALENCE_POWER = 0.8  # the power at which `blocks_needed` states how many blocks an equivalence decision takes


def autocorrelations(x: np.ndarray, max_lag: int) -> np.ndarray:
    """Sample autocorrelations r(1) … r(max_lag) of one series (its own mean and variance), r(1) bias-corrected."""
    x = x - x.mean()
    d = float((x * x).sum())
    if d <= 0 or max_lag < 1:
        return np.zeros(max(max_lag, 0))
    r = np.array([(x[:-k] * x[k:]).sum() / d for k in range(1, max_lag + 1)])
    r[0] += (1 + 3 * min(max(r[0], 0.0), 1.0)) / len(x)  # Kendall's bias of r(1), for a positively dependent series
    return r


def effective_n(a, b) -> float:
    """Bartlett's effective number of independent pairs behind a correlation of two ordered series a, b (module
    note above): n / (1 + 2 Σ_{k ≤ n/5} r_a(k) r_b(k)), within [min(5, n), n]."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    n = len(a)
    lags = max(1, n // 5)
    factor = 1 + 2 * float((autocorrelations(a, lags) * autocorrelations(b, lags)).sum())
    return float(np.clip(n / max(factor, 1e-12), min(5, n), n))


def _transformed(a: np.ndarray, b: np.ndarray, z: np.ndarray | None, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """The two series whose Pearson r is the statistic: a, b themselves (pearson), their ranks (spearman), or their
    ranks with a line in z's ranks taken out (partial)."""
    if kind == "pearson":
        return a, b
    ra, rb = _ranks(a).astype(np.float64), _ranks(b).astype(np.float64)
    if kind == "spearman":
        return ra, rb
    rz = _ranks(z).astype(np.float64)
    rz = rz - rz.mean()
    zz = float((rz * rz).sum())
    out = []
    for r in (ra, rb):
        r = r - r.mean()
        out.append(r - (float((r * rz).sum()) / zz if zz > 0 else 0.0) * rz)
    return out[0], out[1]


def fisher_interval(r: float, dof: float, level: float, kind: str = "pearson") -> tuple[float, float]:
    """Fisher's z-interval of a correlation r with `dof` = n_eff − 3 (less one per covariate or group mean)."""

    if not np.isfinite(r) or not np.isfinite(dof) or dof <= 0:
        return np.nan, np.nan
    c = 1.0 if kind == "pearson" else FISHER_SPEARMAN
    z = np.arctanh(np.clip(r, -1 + 1e-12, 1 - 1e-12))
    h = norm.ppf(1 - (1 - level) / 2) * np.sqrt(c / dof)
    return float(np.tanh(z - h)), float(np.tanh(z + h))


def blocks_needed(
    kind: str = "spearman", margin: float = EQUIVALENCE_MARGIN, power: float = EQUIVALENCE_POWER,
    dependence: float = 1.0, extra_dof: int = 0,
) -> int:  # fmt: skip
    """How many blocks an equivalence test at `margin` (two one-sided tests at 5 %, the 90 % Fisher interval inside
    ±margin) needs to show "no effect" with probability `power` when the true correlation is 0: n_eff = c·((z_0.95 +
    z_{(1+power)/2}) / atanh(margin))² + 3 + `extra_dof`, times `dependence` (n / n_eff of the data at hand: blocks
    per independent pair)."""

    c = 1.0 if kind == "pearson" else FISHER_SPEARMAN
    n_eff = c * ((norm.ppf(0.95) + norm.ppf((1 + power) / 2)) / np.arctanh(margin)) ** 2 + 3 + extra_dof
    return int(np.ceil(n_eff * max(dependence, 1.0)))


def correlation_test(
    a, b, z=None, kind: str = "spearman", groups=None, margin: float = EQUIVALENCE_MARGIN
) -> dict:  # fmt: skip
    """A correlation across ordered blocks with everything a verdict needs: `rho`; its 95 % (`lo`, `hi`) and 90 %
    (`lo90`, `hi90`) Fisher intervals at the effective number of blocks `n_eff` (module note above); the 95 % interval
    as if blocks were independent (`lo_iid`, `hi_iid`); the two-sided p-value of ρ = 0 at n_eff (`p`); the `outcome`
    of `correlation_outcome` at `margin`; and `n_needed`, the blocks (at this dependence) at which the equivalence
    test would decide with 80 % power (`blocks_needed`). `kind`: "pearson", "spearman", or "partial" (Spearman
    ρ(a, b | z)). `groups` (one label per block, e.g. the model): the blocks of several series pooled with a group
    effect — each group transformed and centred on its own, n_eff summed over groups, one degree of freedom per
    group spent on its mean."""

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    z = None if kind != "partial" else np.asarray(z, dtype=np.float64)

    labels = np.zeros(len(a), dtype=int) if groups is None else pd.factorize(np.asarray(groups))[0]
    xs, ys, n_eff, n_groups = [], [], 0.0, 0
    for g in np.unique(labels):
        m = labels == g
        if m.sum() < 3:
            continue
        x, y = _transformed(a[m], b[m], None if z is None else z[m], kind)
        xs.append(x - x.mean())
        ys.append(y - y.mean())
        n_eff += effective_n(x, y)
        n_groups += 1
    n = int(sum(len(x) for x in xs))
    nan = dict.fromkeys(("rho", "lo", "hi", "lo90", "hi90", "lo_iid", "hi_iid", "p", "n_eff", "n_needed"), np.nan)
    nan |= {"n": n, "outcome": INCONCLUSIVE}
    if not xs:
        return nan
    x, y = np.concatenate(xs), np.concatenate(ys)
    den = np.sqrt((x * x).sum() * (y * y).sum())
    if den <= 1e-12:
        return nan
    r = float((x * y).sum() / den)
    extra = (1 if kind == "partial" else 0) + (n_groups - 1)
    dof, dof_iid = n_eff - 3 - extra, n - 3 - extra
    lo, hi = fisher_interval(r, dof, 0.95, kind)
    lo90, hi90 = fisher_interval(r, dof, 0.90, kind)
    lo_iid, hi_iid = fisher_interval(r, dof_iid, 0.95, kind)
    c = 1.0 if kind == "pearson" else FISHER_SPEARMAN
    p = float(2 * norm.sf(abs(np.arctanh(np.clip(r, -1 + 1e-12, 1 - 1e-12))) / np.sqrt(c / dof))) if dof > 0 else np.nan
    needed = blocks_needed("pearson" if kind == "pearson" else "spearman", margin, dependence=n / n_eff,
                           extra_dof=extra)  # fmt: skip
    return {"rho": r, "lo": lo, "hi": hi, "lo90": lo90, "hi90": hi90, "lo_iid": lo_iid, "hi_iid": hi_iid, "p": p,
            "n": n, "n_eff": n_eff, "n_needed": needed,
            "outcome": correlation_outcome(lo, hi, lo90, hi90, margin)}  # fmt: skip


POOLED = "all"  # the model label of a summary row over every model's blocks pooled with a model effect (`groups`)


def spearman(a, b) -> tuple[float, float]:
    """Spearman ρ and its p-value (scipy); NaN for a constant input (an all-inf κ included), without a warning."""
    if len(np.unique(np.asarray(a, dtype=float))) < 2 or len(np.unique(np.asarray(b, dtype=float))) < 2:
        return np.nan, np.nan
    r = stats.spearmanr(a, b)
    return float(r[0]), float(r[1])


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


# ---- a dose–response: the least-squares trend over a few chosen levels (claim 7b) ------------------------------
# The levels (log10 κ of the constructed dose) are chosen, so the question is the trend of the expected response over
# them: the least-squares slope of the mean response on the levels. Its interval is Student's t at n − 2 degrees of
# freedom from the residuals; where the response is not a straight line the lack of fit counts as noise (wider, not
# narrower). `trend_simulation` measures what it covers on planted curves and noise shapes (docs/numerics.md).
TREND_NOISES = ("normal", "heteroscedastic", "skewed", "ar1")


def trend_slope(x, y) -> dict:
    """Least-squares slope of `y` on `x` (the non-finite pairs left out) with its standard error `se`, the residual SD
    `resid_sd`, `dof` = n − 2, and its 95 % (`lo`, `hi`) and 90 % (`lo90`, `hi90`) Student-t intervals; NaN with
    fewer than 3 points or one level."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    nan = dict.fromkeys(("slope", "se", "resid_sd", "lo", "hi", "lo90", "hi90"), np.nan)
    if len(x) < 3 or np.ptp(x) == 0:
        return nan | {"n": len(x), "dof": max(len(x) - 2, 0)}
    xc = x - x.mean()
    sxx = float(xc @ xc)
    slope = float(xc @ (y - y.mean())) / sxx
    resid = y - y.mean() - slope * xc
    dof = len(x) - 2
    sd = float(np.sqrt(resid @ resid / dof))
    se = sd / np.sqrt(sxx)
    q95, q90 = stats.t.ppf(0.975, dof), stats.t.ppf(0.95, dof)
    return {"slope": slope, "se": se, "resid_sd": sd, "lo": slope - q95 * se, "hi": slope + q95 * se,
            "lo90": slope - q90 * se, "hi90": slope + q90 * se, "n": len(x), "dof": dof}  # fmt: skip


def trend_noise(shape: str, reps: int, levels: int, rng: np.random.Generator) -> np.ndarray:
    """`reps` × `levels` noise of mean 0 and (average) variance 1: "normal"; "heteroscedastic" (normal, its SD
    growing linearly from 0.5 to 2 times a common scale over the levels, as a shortfall's noise grows with it);
    "skewed" (Gamma(2) centred, skewness √2); "ar1" (neighbouring levels correlated 0.5)."""
    z = rng.standard_normal((reps, levels))
    if shape == "normal":
        return z
    if shape == "heteroscedastic":
        sd = np.linspace(0.5, 2.0, levels)
        return z * sd / np.sqrt(np.mean(sd**2))
    if shape == "skewed":
        return (rng.gamma(2.0, size=(reps, levels)) - 2.0) / np.sqrt(2.0)
    if shape == "ar1":
        e = z.copy()
        for k in range(1, levels):
            e[:, k] = 0.5 * e[:, k - 1] + np.sqrt(1 - 0.25) * z[:, k]
        return e
    raise LinrecError(f"unknown noise shape {shape!r}; use one of {TREND_NOISES}")


def trend_simulation(mean, x, sigma: float, noise: str = "normal", reps: int = 4000, seed: int = 0,
                     margin: float = np.nan) -> dict:  # fmt: skip
    """`trend_slope`'s intervals on planted curves: `reps` draws of `mean` (the expected response at each of `x`)
    plus `sigma` × `trend_noise(noise)`. Returns the `truth` (the least-squares slope of `mean` on `x`: what the
    interval is for), the share of draws whose 95 % and 90 % intervals hold it (`cover95`, `cover90`), the share
    whose 95 % interval lies above 0 (`rises`), and, with `margin`, the share whose 90 % interval of the rise over
    the levels (slope × (max x − min x)) lies strictly inside ±margin (`flat`: the equivalence test's power)."""
    x, mean = np.asarray(x, dtype=np.float64), np.asarray(mean, dtype=np.float64)
    if len(x) < 3 or len(mean) != len(x):
        raise LinrecError(f"a planted trend needs ≥ 3 levels and one mean per level; got {len(x)} and {len(mean)}")
    xc = x - x.mean()
    sxx = float(xc @ xc)
    truth = float(xc @ mean) / sxx
    y = mean + sigma * trend_noise(noise, reps, len(x), np.random.default_rng(seed))
    slope = (y - y.mean(axis=1, keepdims=True)) @ xc / sxx
    resid = y - y.mean(axis=1, keepdims=True) - slope[:, None] * xc
    dof = len(x) - 2
    se = np.sqrt((resid**2).sum(axis=1) / dof / sxx)
    q95, q90 = stats.t.ppf(0.975, dof), stats.t.ppf(0.95, dof)
    span = float(np.ptp(x))
    flat = np.abs(slope * span) + q90 * se * span < margin if np.isfinite(margin) else np.full(reps, np.nan)
    return {"truth": truth, "cover95": float(np.mean(np.abs(slope - truth) <= q95 * se)),
            "cover90": float(np.mean(np.abs(slope - truth) <= q90 * se)),
            "rises": float(np.mean(slope - q95 * se > 0)), "flat": float(np.mean(flat))}  # fmt: skip
