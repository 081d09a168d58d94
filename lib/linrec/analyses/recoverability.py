"""Linear recoverability per block: the table of notebook 02 and `linrec measure`.

`ceiling_table(capture)` gives, per FFN block, the held-out R²_lin of the closed-form map
(`Capture.fit`), its bootstrap interval over held-out windows, per-feature quartiles, the
first-position numbers, the train-split (in-sample) R² and the conditioning of the solve.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from linrec.base.errors import LinrecError
from linrec.stats.ceiling import first_position
from linrec.stats.heldout import bootstrap_r2, r2_of_counts

if TYPE_CHECKING:
    import pandas


def ceiling_table(capture, n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> pandas.DataFrame:
    """One row per block of `capture` (a `linrec.measure.capture.Capture`): the closed-form ceiling and its
    conditioning.

    `r2_lo`, `r2_hi`: the `level` percentile bootstrap interval of `r2_lin` over the
    `n_test_windows` held-out windows (`linrec.stats.heldout.bootstrap_r2`, `n_boot` resamples, seeded);
    NaN for a capture without held-out sums.
    `first_var_share`, `r2_ex_first`: `first_position` (NaN for a capture without first-position
    statistics); `r2_ex_first_lo`, `r2_ex_first_hi`: its interval over the same held-out windows, from the sums
    the capture keeps for every position but the first (`Capture.heldout_rest`; NaN without them).
    `r2_train`: the same map scored on its own train split (in-sample). A large gap
    `r2_train − r2_lin` means the map memorised the train rows instead of finding a relation that
    holds on unseen windows (few effectively distinct inputs for d_in + 1 parameters per output).
    """
    import pandas as pd

    heldout = getattr(capture, "heldout", None)
    rest = getattr(capture, "heldout_rest", None)
    rows = []
    for i in range(capture.n_blocks):
        train, test = capture.stats["train"][i], capture.stats["test"][i]
        fit, s = capture.fit(i), capture.score(i)
        q25, q75 = s.r2_feature_quartiles
        h = heldout[i] if heldout is not None else None
        lo, hi = bootstrap_r2(h, n_boot, level, seed) if h is not None else (np.nan, np.nan)
        n_windows = h.n_windows if h is not None else capture.meta.get("n_windows", {}).get("test", np.nan)
        hr = rest[i] if rest is not None else None
        lo1, hi1 = bootstrap_r2(hr, n_boot, level, seed) if hr is not None and hr.n_windows else (np.nan, np.nan)
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
                **first_position(test, capture.without_first(i), block=i),
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
    return pd.DataFrame(rows)


def corpus_draws(
    captures: dict, n_boot: int = 1000, seed: int = 0, rest: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """R²_lin of every block on every corpus, as measured and over `n_boot` window resamples: (point [L, C],
    draws [n_boot, L, C]). `captures`: corpus → `linrec.measure.capture.Capture` of one model. Each corpus's held-out
    windows are resampled on their own (the corpora are independent samples of text); within a corpus every block
    sees the same resample, so the draws keep the correlation between blocks that share windows. With `rest`, R²_lin
    without the windows' first position (`Capture.heldout_rest`)."""
    caps = list(captures.values())
    n_blocks = caps[0].n_blocks
    point = np.full((n_blocks, len(caps)), np.nan)
    draws = np.full((n_boot, n_blocks, len(caps)), np.nan)
    for c, cap in enumerate(caps):
        held = getattr(cap, "heldout_rest" if rest else "heldout", None)
        if held is None or cap.n_blocks != n_blocks:
            raise LinrecError("corpus_draws needs captures of one model with held-out sums on every corpus")
        w = next(h.n_windows for h in held if h is not None)
        rng = np.random.default_rng([seed, 41, c])
        counts = rng.multinomial(w, np.full(w, 1.0 / w), size=n_boot)
        for i, h in enumerate(held):
            if h is not None:
                point[i, c] = h.r2()
                draws[:, i, c] = r2_of_counts(h, counts)
    return point, draws


def profile_draws(capture, n_boot: int = 1000, seed: int = 0, rest: bool = False) -> np.ndarray:
    """R²_lin of every block of one capture over `n_boot` resamples of its held-out windows that every block shares
    ([n_boot, n_blocks], `corpus_draws` on one corpus): a difference between two blocks' draws is a paired bootstrap
    of their difference. With `rest`, without each window's first position."""
    return corpus_draws({capture.config.corpus: capture}, n_boot, seed, rest)[1][:, :, 0]


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


def corpus_shape_level(
    captures: dict, n_boot: int = 1000, seed: int = 0, level: float = 0.95, rest: bool = True
) -> dict:
    """One model's profile over corpora split into depth, level and shape (`two_way_shares`), each with its
    percentile interval over window resamples (`corpus_draws`); the corpus whose mean R²_lin is highest and lowest;
    and the block–corpus-pair differences that stand out at a false-discovery rate of 5 % (Benjamini–Hochberg over
    every block and pair of corpora, bootstrap p-values). With `rest` (and captures that keep them) the shape and
    level shares without the windows' first position too (`shape_share_ex_first`, `shape_lo_ex_first`,
    `shape_hi_ex_first`, and `level_…_ex_first`; NaN otherwise)."""
    from linrec.analyses.uncertainty import benjamini_hochberg, boot_p

    names = list(captures)
    point, draws = corpus_draws(captures, n_boot, seed)
    ok = np.isfinite(draws).all(axis=(1, 2))
    est, boot = two_way_shares(point), two_way_shares(draws[ok])
    alpha = (1 - level) / 2
    out = {"n_blocks": point.shape[0], "n_corpora": len(names), "n_boot": int(ok.sum())}
    for k in ("depth", "level", "shape", "level_range"):
        lo, hi = np.quantile(boot[k], [alpha, 1 - alpha])
        name = k if k == "level_range" else f"{k}_share"
        out.update({name: float(est[k]), f"{k}_lo": float(lo), f"{k}_hi": float(hi)})
    means = point.mean(axis=0)
    out["corpus_highest"], out["corpus_lowest"] = names[int(np.argmax(means))], names[int(np.argmin(means))]
    pairs = [(a, b) for a in range(len(names)) for b in range(a + 1, len(names))]
    p = np.array([boot_p(draws[ok, i, a] - draws[ok, i, b]) for a, b in pairs for i in range(point.shape[0])])
    out["n_pairs_fdr"] = int((benjamini_hochberg(p) < 0.05).sum())
    out["n_pairs"] = len(p)
    for k in ("shape", "level"):
        out.update({f"{k}_share_ex_first": np.nan, f"{k}_lo_ex_first": np.nan, f"{k}_hi_ex_first": np.nan})
    if rest and all(getattr(c, "heldout_rest", None) for c in captures.values()):
        point1, draws1 = corpus_draws(captures, n_boot, seed, rest=True)
        ok1 = np.isfinite(draws1).all(axis=(1, 2))
        est1, boot1 = two_way_shares(point1), two_way_shares(draws1[ok1])
        for k in ("shape", "level"):
            lo, hi = np.quantile(boot1[k], [alpha, 1 - alpha])
            out.update({f"{k}_share_ex_first": float(est1[k]), f"{k}_lo_ex_first": float(lo),
                        f"{k}_hi_ex_first": float(hi)})  # fmt: skip
    return out
