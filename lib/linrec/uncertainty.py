"""Uncertainty of comparisons: correlations with bootstrap intervals, and agreement of per-block profiles.

`correlations(a, b)` gives Pearson and Spearman with p-values; `pearson_with_ci` adds a
percentile bootstrap interval over points; `profile_agreement` compares the per-block R²_lin
profiles of one model across corpora (correlations, largest difference, disjoint intervals).
The bootstrap of one R²_lin over held-out windows is `linrec.heldout.bootstrap_r2`.
"""

from __future__ import annotations

import itertools
import warnings
from typing import TYPE_CHECKING

import numpy as np

from linrec.errors import LinrecError

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
