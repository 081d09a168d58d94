"""Tables of a learning curve (`linrec.collect.curves.Curve`, notebook 02, Figure 2c): R²_lin per train size and split
seed (`curve_table`), the hierarchical-bootstrap summary with the large-n estimate R²∞ per block (`curve_summary`,
`large_n_fit`; the model behind it is in `linrec.collect.curves`' docstring), the profile at one train size
(`large_n_profile`, `with_profile`) and what notebook 02 prints about them (`curve_overview`; in words:
`linrec.outputs.ceiling_text.curve_sentence`); a capture's R²_lin against the curve's split at the same train size
(`other_split`; `curve_split`, the table stored of it); R²_lin with whole documents held out against held-out
windows, over split seeds (`split_shift`, `benchmarks/split.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from linrec.base.errors import LinrecError
from linrec.base.registry import TABLES
from linrec.collect.curves import MIN_ROWS_PER_PARAM, Curve
from linrec.stats import N_BOOT
from linrec.stats.jackknife import jackknife

if TYPE_CHECKING:
    import pandas


def curve_table(curve: Curve) -> pandas.DataFrame:
    """One row per (block, seed, train size): held-out and in-sample R², train rows, κ of the scaled Gram."""

    r2 = curve.r2()
    S, K, B = r2.shape
    rows = [
        {
            "model": curve.model_label,
            "block": b,
            "seed": curve.config.seeds[s],
            "train_tokens": curve.config.train_tokens[k],
            "n_train": int(curve.n_train[s, k, b]),
            "r2": r2[s, k, b],
            "r2_train": curve.train_r2[s, k, b],
            "cond_scaled": curve.cond_scaled[s, k, b],
        }
        for b in range(B)
        for s in range(S)
        for k in range(K)
    ]
    return pd.DataFrame(rows)


def _design(curve: Curve, b: int) -> tuple[np.ndarray, np.ndarray]:
    """x(n) = p/(n − p − 1) per train size, and which sizes enter the large-n fit."""
    p = curve.dims[b][0] + 1 if curve.dims else None
    n = curve.n_train[:, :, b].mean(axis=0)
    x = p / (n - p - 1)
    return x, n >= MIN_ROWS_PER_PARAM * p


# the learning curve's resamples (notebook 02, `linrec curve`): a replicate re-scores every block at every train size
# of every seed from its window counts, so the curve draws half of N_BOOT; results/curve was drawn with this many
CURVE_N_BOOT = 1000


def curve_summary(curve: Curve, n_boot: int = N_BOOT, level: float = 0.95, seed: int = 0) -> pandas.DataFrame:
    """Per (block, train size): the seed-mean held-out R², its hierarchical-bootstrap interval, the spread between
    seeds, and the in-sample R²; plus one row per block at train_tokens = inf: the large-n estimate R²∞."""

    r2 = curve.r2()  # [S, K, B]
    boot = curve.bootstrap(n_boot, seed)  # [n_boot, K, B]
    a = (1 - level) / 2
    S, K, B = r2.shape
    rows = []
    for b in range(B):
        x, use = _design(curve, b)
        for k in range(K):
            lo, hi = np.nanquantile(boot[:, k, b], [a, 1 - a])
            rows.append(
                {
                    "model": curve.model_label,
                    "block": b,
                    "train_tokens": float(curve.config.train_tokens[k]),
                    "n_train": float(curve.n_train[:, k, b].mean()),
                    "rows_per_param": float(curve.n_train[:, k, b].mean() / (curve.dims[b][0] + 1)),
                    "r2": float(r2[:, k, b].mean()),
                    "r2_lo": float(lo),
                    "r2_hi": float(hi),
                    "seed_sd": float(r2[:, k, b].std(ddof=1)) if S > 1 else np.nan,
                    "r2_train": float(curve.train_r2[:, k, b].mean()),
                    "slope": np.nan,
                    "fit_rmse": np.nan,
                }
            )
        est = large_n_fit(x[use], r2[:, use, b].mean(axis=0))
        reps = large_n_fit(x[use], boot[:, use, b])
        lo, hi = np.nanquantile(reps[0], [a, 1 - a]) if use.sum() >= 2 else (np.nan, np.nan)
        rows.append(
            {
                "model": curve.model_label,
                "block": b,
                "train_tokens": np.inf,
                "n_train": np.inf,
                "rows_per_param": np.inf,
                "r2": float(est[0]),
                "r2_lo": float(lo),
                "r2_hi": float(hi),
                "seed_sd": np.nan,
                "r2_train": np.nan,
                "slope": float(est[1]),
                "fit_rmse": float(est[2]),
            }
        )
    return pd.DataFrame(rows)


def large_n_fit(x: np.ndarray, r2: np.ndarray) -> tuple:
    """Least-squares line r2 = R∞ − a·x through the points (x_k, r2_k); r2 may be [K] or [R, K] (one line per row).
    Returns (R∞, a, rmse of the points about the line), each a float or an [R] array; NaN with fewer than 2 points."""
    x = np.asarray(x, dtype=np.float64)
    y = np.atleast_2d(np.asarray(r2, dtype=np.float64))
    if len(x) < 2:
        nan = np.full(y.shape[0], np.nan)
        out = (nan, nan, nan)
    else:
        A = np.c_[np.ones_like(x), -x]
        coef, *_ = np.linalg.lstsq(A, y.T, rcond=None)  # [2, R]
        resid = y - (A @ coef).T
        out = (coef[0], coef[1], np.sqrt((resid**2).mean(axis=1)))
    return tuple(float(v[0]) for v in out) if np.ndim(r2) == 1 else out


def large_n_profile(summary: pandas.DataFrame, at: float | None = None) -> pandas.DataFrame:
    """The per-block profile at one train size of `curve_summary` (the largest measured one by default; `np.inf`
    for the large-n estimate), as columns `model, block, r2_lin, r2_lo, r2_hi, train_tokens`."""
    finite = summary[np.isfinite(summary["train_tokens"])]
    at = finite["train_tokens"].max() if at is None else at
    t = summary[summary["train_tokens"] == at]
    if t.empty:
        raise LinrecError(f"no train size {at} in this curve; pick one of {sorted(set(summary['train_tokens']))}")
    return t.rename(columns={"r2": "r2_lin"})[["model", "block", "train_tokens", "r2_lin", "r2_lo", "r2_hi"]]


def with_profile(table: pandas.DataFrame, summary: pandas.DataFrame, at: float | None = None) -> pandas.DataFrame:
    """A copy of the ceiling table (`linrec.analyses.recoverability.ceiling_table`) whose r2_lin, r2_lo and r2_hi are
    the
    curve's profile at train size `at` (`large_n_profile`); the other columns stay the capture's. `profile_tokens`
    says which train size the R²_lin columns come from."""
    prof = large_n_profile(summary, at)
    out = table.drop(columns=["r2_lin", "r2_lo", "r2_hi"]).merge(
        prof.rename(columns={"train_tokens": "profile_tokens"}), on=["model", "block"], how="left", validate="1:1"
    )
    missing = out["r2_lin"].isna()
    if missing.any():
        raise LinrecError(
            f"the curve has no profile for {sorted(set(out.loc[missing, 'model']))}; compute its curve (linrec curve)"
        )
    return out[[*table.columns, "profile_tokens"]]


def curve_overview(summary: pandas.DataFrame, ref_tokens: float = 16_384) -> pandas.DataFrame:
    """Per model: how R²_lin moves from `ref_tokens` train tokens (the default capture's size) to the largest measured
    size and to the large-n estimate (median and range over blocks), how wide the intervals are, and how well the line
    in p/n fits."""

    rows = []
    for model, t in summary.groupby("model", sort=False):
        finite = t[np.isfinite(t["train_tokens"])]
        top = finite["train_tokens"].max()
        if ref_tokens not in set(finite["train_tokens"]):
            raise LinrecError(f"{model}: the curve has no train size {ref_tokens}; include it in train_tokens")
        ref, big, inf = (t[t["train_tokens"] == n].set_index("block").sort_index() for n in (ref_tokens, top, np.inf))
        gain, gain_inf = big["r2"] - ref["r2"], inf["r2"] - ref["r2"]
        rows.append(
            {
                "model": model,
                "n_blocks": len(ref),
                "ref_tokens": ref_tokens,
                "largest_tokens": top,
                "r2_ref_median": float(ref["r2"].median()),
                "r2_largest_median": float(big["r2"].median()),
                "r2_inf_median": float(inf["r2"].median()),
                "gain_largest_median": float(gain.median()),
                "gain_largest_min": float(gain.min()),
                "gain_largest_max": float(gain.max()),
                "gain_inf_median": float(gain_inf.median()),
                "gain_inf_max": float(gain_inf.max()),
                "train_gap_ref_median": float((ref["r2_train"] - ref["r2"]).median()),
                "train_gap_largest_median": float((big["r2_train"] - big["r2"]).median()),
                "seed_sd_ref_median": float(ref["seed_sd"].median()),
                "ci_width_ref_median": float((ref["r2_hi"] - ref["r2_lo"]).median()),
                "ci_width_largest_median": float((big["r2_hi"] - big["r2_lo"]).median()),
                "ci_width_inf_median": float((inf["r2_hi"] - inf["r2_lo"]).median()),
                "fit_rmse_median": float(inf["fit_rmse"].median()),
                "rank_spearman_ref_inf": float(ref["r2"].rank().corr(inf["r2"].rank())),
            }
        )
    return pd.DataFrame(rows)


def other_split(curve: pandas.DataFrame, r2: pandas.DataFrame) -> pandas.DataFrame:
    """Per model: a capture's `r2_lin` (with its window interval `r2_lo`, `r2_hi`) against the learning curve's R²_lin
    (`curve_summary`'s table: the mean over split seeds) at the capture's own train rows, block by block, where both
    hold the model and the curve has that size: blocks, how many the curve scores lower, how many of the capture's
    intervals exclude the curve's value, the median and mean difference (curve − capture) and the largest drop with
    its block. The curve holds its windows out of more text than a capture's 80/20 split does, so the two measure
    R²_lin on differently drawn held-out text (docs/limitations.md)."""
    rows = []
    for model, t in r2.groupby("model", sort=False):
        n = int(t["n_train"].iloc[0])
        c = curve[(curve["model"] == model) & (curve["n_train"] == n)]
        m = t.merge(c[["block", "r2"]].rename(columns={"r2": "r2_curve"}), on="block").reset_index(drop=True)
        if m.empty:
            continue
        diff = m["r2_curve"] - m["r2_lin"]
        worst = int(diff.idxmin())
        rows.append({"model": model, "n_train": n, "n_blocks": len(m), "n_lower": int((diff < 0).sum()),
                     "n_outside": int(((m["r2_curve"] < m["r2_lo"]) | (m["r2_curve"] > m["r2_hi"])).sum()),
                     "diff_median": float(diff.median()), "diff_mean": float(diff.mean()),
                     "drop_max": float(-diff.min()), "drop_block": int(m.loc[worst, "block"])})  # fmt: skip
    return pd.DataFrame(rows)


def curve_split(curve: pandas.DataFrame | None, r2: pandas.DataFrame | None) -> pandas.DataFrame | None:
    """The `curve_split` table: a capture's `r2` (its `r2_lin` table) against the learning curve's R²_lin at its own
    train rows (`other_split`), in the registered columns' order; None where either is absent or empty, or they share
    no model and train size (no table is stored then). Which curve it is compared with is the caller's choice:
    notebook 02 its own, else the run that stands in for it (`linrec.studies.ceiling`), `linrec.outputs.refresh` the
    one the report quotes."""
    if curve is None or curve.empty or r2 is None or r2.empty:
        return None
    found = other_split(curve, r2)
    return None if found.empty else found[list(TABLES["curve_split"].columns)]


def split_shift(table: pandas.DataFrame, level: float = 0.95) -> pandas.DataFrame:
    """Per model and block, from `table` (model, split, seed, block, r2_lin: captures of the same text whose held-out
    part is a seeded share of its windows, split "windows", or of its whole documents, "documents"; one row per
    seed and block): each split's mean R²_lin over its seeds and their SD, and the shift documents − windows with the
    Welch t interval at `level` for the difference of the two means (seeds as independent draws of each split;
    Welch–Satterthwaite degrees of freedom: `linrec.stats.jackknife.jackknife` of the difference of means over the
    two independent sets of seeds, which for a mean is exactly Welch's interval). The interval covers the shift in the
    expected R²_lin over split draws; it says nothing of a single capture's held-out windows."""
    mean = lambda x, c: (c * x).sum(axis=1) / c.sum(axis=1)  # noqa: E731  # rows of seed multiplicities c
    rows = []
    for (model, block), t in table.groupby(["model", "block"], sort=True):
        w = t.loc[t["split"] == "windows", "r2_lin"].to_numpy(float)
        d = t.loc[t["split"] == "documents", "r2_lin"].to_numpy(float)
        if len(w) < 2 or len(d) < 2:
            raise LinrecError(f"{model} block {block}: split_shift needs ≥ 2 seeds of each split, got {len(w)} "
                              f"and {len(d)}; run benchmarks/split.py with --seeds 0 1 or more")  # fmt: skip
        shift = jackknife(lambda cd, cw, d=d, w=w: mean(d, cd) - mean(w, cw), [len(d), len(w)])
        lo, hi = shift.interval(level)
        rows.append({"model": model, "block": int(block), "n_windows_seeds": len(w), "n_documents_seeds": len(d),
                     "r2_windows": w.mean(), "r2_documents": d.mean(), "sd_windows": w.std(ddof=1),
                     "sd_documents": d.std(ddof=1), "shift": float(shift.point), "shift_lo": float(lo),
                     "shift_hi": float(hi)})  # fmt: skip
    return pd.DataFrame(rows)


def split_summary(shift: pandas.DataFrame) -> pandas.DataFrame:
    """Per model, from `split_shift`: blocks; how many shift down with the interval below 0, and up above it; the
    median shift and the largest drop with its block; the median SD over seeds of each split."""
    rows = []
    for model, t in shift.groupby("model", sort=False):
        t = t.reset_index(drop=True)
        worst = int(t["shift"].idxmin())
        rows.append({"model": model, "n_blocks": len(t), "n_down": int((t["shift_hi"] < 0).sum()),
                     "n_up": int((t["shift_lo"] > 0).sum()), "shift_median": float(t["shift"].median()),
                     "drop_max": float(-t["shift"].min()), "drop_block": int(t.loc[worst, "block"]),
                     "sd_windows": float(t["sd_windows"].median()),
                     "sd_documents": float(t["sd_documents"].median())})  # fmt: skip
    return pd.DataFrame(rows)
