"""Linear recoverability per block: the table of notebook 02 and `linrec measure`.

`ceiling_table(capture)` gives, per FFN block, the held-out R²_lin of the closed-form map
(`Capture.fit`), its bootstrap interval over held-out windows, per-feature quartiles, the
first-position numbers, the train-split (in-sample) R² and the conditioning of the solve.
"""

from __future__ import annotations

import itertools
import logging
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from linrec.analyses.uncertainty import benjamini_hochberg
from linrec.base.errors import LinrecError
from linrec.base.progress import bar as progress_bar
from linrec.stats.ceiling import first_position
from linrec.stats.heldout import r2_interval, r2_of_counts
from linrec.stats.jackknife import jackknife, leave_one_out

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    import pandas


def _fit_rest(capture, block: int):
    """The capture's own map without the first positions, where it kept one (a fresh capture does)."""
    fit_rest = getattr(capture, "fit_rest", None)
    return fit_rest(block) if fit_rest is not None else None


def ceiling_table(capture, level: float = 0.95, progress: bool = False) -> pandas.DataFrame:
    """One row per block of `capture` (a `linrec.collect.capture.Capture`): the closed-form ceiling and its
    conditioning.

    `r2_lo`, `r2_hi`: the `level` interval of `r2_lin` over the `n_test_windows` held-out windows, an interval for
    the held-out R² of the fitted map (held fixed; the leave-one-window-out jackknife with a t quantile,
    `linrec.stats.heldout.r2_interval`; its coverage is measured in `linrec.analyses.calibration`); NaN for a
    capture without held-out sums.
    `first_var_share`, `r2_ex_first`: `first_position` (NaN for a capture without first-position
    statistics); `r2_ex_first_lo`, `r2_ex_first_hi`: its interval over the same held-out windows, from the sums
    the capture keeps for every position but the first (`Capture.heldout_rest`; NaN without them).
    `r2_train`: the same map scored on its own train split (in-sample). A large gap
    `r2_train − r2_lin` means the map memorised the train rows instead of finding a relation that
    holds on unseen windows (few effectively distinct inputs for d_in + 1 parameters per output).
    `progress`: a bar over the blocks (a few seconds for a cached capture of 30 blocks: one fit each).
    """

    heldout = getattr(capture, "heldout", None)
    rest = getattr(capture, "heldout_rest", None)
    rows = []
    for i in progress_bar(range(capture.n_blocks), desc=f"fits {capture.model_label}", unit="block",
                          disable=not progress):  # fmt: skip
        train, test = capture.stats["train"][i], capture.stats["test"][i]
        fit, s = capture.fit(i), capture.score(i)
        q25, q75 = s.r2_feature_quartiles
        h = heldout[i] if heldout is not None else None
        lo, hi = r2_interval(h, level) if h is not None else (np.nan, np.nan)
        n_windows = h.n_windows if h is not None else capture.meta.get("n_windows", {}).get("test", np.nan)
        hr = rest[i] if rest is not None else None
        lo1, hi1 = r2_interval(hr, level) if hr is not None and hr.n_windows else (np.nan, np.nan)
        rows.append(
            {
                "model": capture.model_label,
                "corpus": capture.config.corpus,
                "block": i,
                "r2_lin": s.r2,
                "r2_lo": lo,
                "r2_hi": hi,
                "r2_train": capture.score(i, "train").r2,
                "r2_feature_median": s.r2_feature_median,
                **first_position(test, capture.without_first(i), block=i, fit=_fit_rest(capture, i)),
                "r2_ex_first_lo": lo1,
                "r2_ex_first_hi": hi1,
                "r2_feature_q25": q25,
                "r2_feature_q75": q75,
                "cond_gram": fit.cond_gram,
                "cond_scaled": fit.cond_scaled,
                "rank": fit.rank,
                "dead_inputs": fit.dead_inputs,
                "d_in": train.d_in,
                "d_out": train.d_out,
                "n_train": train.n,
                "n_test": test.n,
                "n_test_windows": n_windows,
            }
        )
    if rows and min(r["n_test_windows"] for r in rows) == 1:
        log.warning("%s on %s: one held-out window, so R²_lin has no interval over windows (r2_lo, r2_hi are NaN); "
                    "give more tokens: the held-out %d %% of the windows must hold 2 or more", capture.model_label,
                    capture.config.corpus, round(100 * capture.config.test_frac))  # fmt: skip
    return pd.DataFrame(rows)


def _held_sets(captures: dict, rest: bool = False) -> list[list]:
    """Per corpus, its capture's held-out sums per block (`Capture.heldout`, or `heldout_rest` with `rest`)."""
    caps = list(captures.values())
    held = [getattr(c, "heldout_rest" if rest else "heldout", None) for c in caps]
    if any(h is None or c.n_blocks != caps[0].n_blocks for h, c in zip(held, caps)):
        raise LinrecError("these intervals need captures of one model with held-out sums on every corpus")
    return held


def corpus_r2(captures: dict, rest: bool = False):
    """(stat, sizes) for `linrec.stats.jackknife.jackknife`: `stat(*counts)` (one multiplicity array [B, W_c] per
    corpus) gives R²_lin of every block on every corpus [B, L, C]; `sizes` the corpora's numbers of held-out windows.
    `captures`: corpus → `linrec.collect.capture.Capture` of one model; each corpus's windows are its own (the corpora
    are independent samples of text), and within a corpus every block sees the same windows, so a statistic of
    several blocks keeps what they share. With `rest`, R²_lin without the windows' first position."""
    held = _held_sets(captures, rest)
    sizes = [next(h.n_windows for h in hs if h is not None) for hs in held]

    def stat(*counts: np.ndarray) -> np.ndarray:
        out = np.full((len(counts[0]), len(held[0]), len(held)), np.nan)
        for c, (hs, k) in enumerate(zip(held, counts)):
            for i, h in enumerate(hs):
                if h is not None:
                    out[:, i, c] = r2_of_counts(h, k)
        return out

    return stat, sizes


def profile_replicates(capture, rest: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """One capture's profile and its leave-one-window-out replicates: (R²_lin [L], [W, L] with row i every held-out
    window but i, the same for every block), so a difference of two blocks' columns is a paired jackknife of that
    difference (`linrec.stats.jackknife.from_replicates`). With `rest`, without each window's first position."""
    stat, (w,) = corpus_r2({capture.config.corpus: capture}, rest)
    return stat(np.ones((1, w)))[0, :, 0], stat(leave_one_out(w))[:, :, 0]


def two_way_shares(r2: np.ndarray) -> dict[str, np.ndarray]:
    """The block × corpus split of R²_lin's variance, on the last two axes of `r2` [..., L, C]: the shares of the
    total sum of squares (around the grand mean) held by the blocks' main effect (`depth`), the corpora's main effect
    (`level`: a shift of the whole profile) and their interaction (`shape`: what changes the profile's form);
    `level_range`: the largest difference between two corpora's mean R²_lin. The three shares add up to 1."""
    grand = r2.mean(axis=(-2, -1), keepdims=True)
    rows = r2.mean(axis=-1, keepdims=True) - grand  # block effects [..., L, 1]
    cols = r2.mean(axis=-2, keepdims=True) - grand  # corpus effects [..., 1, C]
    inter = r2 - grand - rows - cols
    n_l, n_c = r2.shape[-2:]
    total = ((r2 - grand) ** 2).sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "depth": n_c * (rows**2).sum(axis=(-2, -1)) / total,
            "level": n_l * (cols**2).sum(axis=(-2, -1)) / total,
            "shape": (inter**2).sum(axis=(-2, -1)) / total,
            "level_range": np.ptp(cols, axis=(-2, -1)),
        }


def corpus_shape_level(captures: dict, level: float = 0.95, rest: bool = True) -> dict:
    """One model's profile over corpora split into depth, level and shape (`two_way_shares`), each with its
    jackknife interval over held-out windows (`corpus_r2`: one window of one corpus left out at a time, the corpora's
    variances added, Welch–Satterthwaite degrees of freedom; coverage measured in `linrec.analyses.calibration`); the
    corpus whose mean R²_lin is highest and lowest; and the block–corpus-pair differences that stand out at a
    false-discovery rate of 5 % (Benjamini–Hochberg over every block and pair of corpora, jackknife t p-values). With
    `rest` (and captures that keep them) the shape and level shares without the windows' first position too
    (`shape_share_ex_first`, `shape_lo_ex_first`, `shape_hi_ex_first`, and `level_…_ex_first`; NaN otherwise)."""

    names = list(captures)
    keys = ("depth", "level", "shape", "level_range")
    stat, sizes = corpus_r2(captures)
    n_blocks = len(_held_sets(captures)[0])
    pairs = [(a, b) for a in range(len(names)) for b in range(a + 1, len(names))]

    def parts(*counts: np.ndarray) -> np.ndarray:
        r2 = stat(*counts)
        shares = two_way_shares(r2)
        diffs = [r2[:, i, a] - r2[:, i, b] for a, b in pairs for i in range(n_blocks)]
        return np.stack([shares[k] for k in keys] + diffs, axis=1)

    j = jackknife(parts, sizes)
    lo, hi = j.interval(level)
    out = {"n_blocks": n_blocks, "n_corpora": len(names), "n_windows": int(min(sizes))}
    for n, k in enumerate(keys):
        name = k if k == "level_range" else f"{k}_share"
        out.update({name: float(j.point[n]), f"{k}_lo": float(lo[n]), f"{k}_hi": float(hi[n])})
    means = stat(*(np.ones((1, w)) for w in sizes))[0].mean(axis=0)
    out["corpus_highest"], out["corpus_lowest"] = names[int(np.argmax(means))], names[int(np.argmin(means))]
    p = j.p()[len(keys) :]
    out["n_pairs_fdr"] = int((benjamini_hochberg(p) < 0.05).sum())
    out["n_pairs"] = len(p)
    for k in ("shape", "level"):
        out.update({f"{k}_share_ex_first": np.nan, f"{k}_lo_ex_first": np.nan, f"{k}_hi_ex_first": np.nan})
    if rest and all(getattr(c, "heldout_rest", None) for c in captures.values()):
        stat1, sizes1 = corpus_r2(captures, rest=True)
        j1 = jackknife(lambda *c: np.stack([two_way_shares(stat1(*c))[k] for k in ("shape", "level")], axis=1), sizes1)
        lo1, hi1 = j1.interval(level)
        for n, k in enumerate(("shape", "level")):
            out.update({f"{k}_share_ex_first": float(j1.point[n]), f"{k}_lo_ex_first": float(lo1[n]),
                        f"{k}_hi_ex_first": float(hi1[n])})  # fmt: skip
    return out


# ---- two profiles compared: the convention of `linrec.claims.rules` (claim 2a's seeds experiment, claim 5's pairs) ---
def _distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.nanmean(np.abs(a - b), axis=-1)


def _level(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The level of a comparison: the mean difference over blocks (a above b is positive)."""
    return np.nanmean(a - b, axis=-1)


def _shape(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The shape of a comparison: the mean |difference| over blocks once each profile is centred on its own mean."""
    d = a - b
    return np.nanmean(np.abs(d - np.nanmean(d, axis=-1, keepdims=True)), axis=-1)


PARTS = {
    "distance": _distance,
    "level": _level,
    "shape": _shape,
}  # every comparison's three numbers (the last axis: blocks)
PAIR_PARTS = ("level", "shape")  # a pair of corpora's shift (`corpus_pairs`): the parts of `PARTS` claim 5 reads


def corpus_pairs(captures: dict, level: float = 0.95, rest: bool = True) -> list[dict]:
    """Each pair of corpora's shift of one model's profile, measured as claim 2a measures the shift between two
    profiles (the convention of `linrec.claims.rules`; the functions of `PARTS`, which the seeds experiment's
    `linrec.analyses.seeds.compare` reads). With a and b the R²_lin profiles over blocks on `corpus_a` and
    `corpus_b` (`corpus_a` the earlier in `captures`): the `level` mean_i (a_i − b_i) (signed: a above b is
    positive) and the `shape` mean_i |(a_i − ā) − (b_i − b̄)|, each with its `level` leave-one-window-out jackknife
    interval with a t quantile (`linrec.stats.jackknife.jackknife`, as 2a's). 2a's two profiles share their windows,
    so its jackknife leaves a window out of both; each corpus has its own windows (`corpus_r2`), so here one window of
    one corpus is left out at a time, the two corpora's variances add and the degrees of freedom are
    Welch–Satterthwaite's (as for the shares of `corpus_shape_level`). With `rest` (and captures that keep those
    sums) the same on every position but the windows' first (`level_ex_first`, `level_lo_ex_first`, …; NaN
    otherwise). One dict per pair, in the order of `captures`."""
    names = list(captures)
    pairs = list(itertools.combinations(range(len(names)), 2))

    def shifts(rest: bool):
        stat, sizes = corpus_r2(captures, rest)

        def parts(*counts: np.ndarray) -> np.ndarray:
            r2 = stat(*counts)  # [B, L, C]
            return np.stack([PARTS[k](r2[..., a], r2[..., b]) for a, b in pairs for k in PAIR_PARTS], axis=1)

        j = jackknife(parts, sizes)
        lo, hi = j.interval(level)
        return j.point.reshape(len(pairs), -1), lo.reshape(len(pairs), -1), hi.reshape(len(pairs), -1), sizes

    point, lo, hi, sizes = shifts(False)
    both = rest and all(getattr(c, "heldout_rest", None) for c in captures.values())
    nan = np.full_like(point, np.nan)
    point1, lo1, hi1, _ = shifts(True) if both else (nan, nan, nan, None)
    n_blocks = len(_held_sets(captures)[0])
    out = []
    for n, (a, b) in enumerate(pairs):
        row = {"corpus_a": names[a], "corpus_b": names[b], "n_blocks": n_blocks, "n_windows_a": int(sizes[a]),
               "n_windows_b": int(sizes[b])}  # fmt: skip
        for k, key in enumerate(PAIR_PARTS):
            row.update({key: float(point[n, k]), f"{key}_lo": float(lo[n, k]), f"{key}_hi": float(hi[n, k])})
        for k, key in enumerate(PAIR_PARTS):
            row.update({f"{key}_ex_first": float(point1[n, k]), f"{key}_lo_ex_first": float(lo1[n, k]),
                        f"{key}_hi_ex_first": float(hi1[n, k])})  # fmt: skip
        out.append(row)
    return out
