"""Rank and outliers behind a high R²_lin (notebook 04, Figure 4): everything from the additive statistics.

Per block, from the train/test `Moments` of a capture (no second pass over the model):

- output side: per-feature R² (median, quartiles), the share of held-out output variance in
  the top-1 and top-8 output features, R²_lin without those features ("ex-top-k"; the
  least-squares problem is separate per output, so dropping outputs leaves the other
  columns of W unchanged), the effective rank of the output covariance and of the fitted
  map's explained part WᵀCxxW;
- massive activations: output features whose held-out variance is at least `MASSIVE_RATIO`
  (100×) the median feature's — the few huge channels known in LLMs (Sun et al., 2024,
  "Massive activations in large language models"); `n_massive` counts them and
  `top1_var_ratio` is the largest feature's variance over the median;
- the first position (`linrec.stats.ceiling.first_position`): the share of held-out output variance
  on each window's first token, and R²_lin with that token left out of fit and score;
- input side (the referee's request): κ of the input Gram matrix on the train and on the
  held-out split, the effective rank of the inputs, their dynamic range (max / median
  feature standard deviation).

Effective rank (Roy & Vetterli, 2007): exp(H(p)), p_i = σ_i / Σσ, σ the singular values (for
a covariance, its eigenvalues). It is d for an isotropic covariance of size d and 1 for rank 1.

Regimes (the rule, stated once, used by the table and the notebook; checked in this order):
- "nonlinear":              R²_lin < 0.6;
- "first-token-concentrated": R²_lin ≥ 0.6 and R²_lin without the windows' first positions is
                            at least 0.2 lower: the high R²_lin is one token's (the attention
                            sink's) output, not the block's behaviour on text (our addition: the
                            paper names two regimes; this is a third, concentrated in a
                            position rather than in a feature);
- "outlier-concentrated":   R²_lin ≥ 0.6 and the per-feature median R² is at least 0.2 below
                            R²_lin and either the top-1 feature holds ≥ 50 % of the output
                            variance or the output effective rank is < 5 % of its width, and
                            the map's explained part WᵀCxxW has effective rank < 2: the
                            paper's "rank ≈ 1" (arXiv 2606.19379, Fig. 4 caption, quoted in
                            paper/claims.md). An effective rank of 2 is two equal directions, so
                            below 2 one direction dominates: (1, 0.25) gives 1.65, (1, 0.5) 1.89.
                            A block concentrated in a few features whose explained part has
                            rank ≥ 2 is not the paper's regime; it is "unclassified", and the
                            regime summary lists it as concentrated but not rank ≈ 1;
- "broadly linear":         every other block with R²_lin ≥ 0.6 whose explained part is spread
                            out: the effective rank of WᵀCxxW is at least 5 % of the output
                            width (the same fraction below which the output counts as
                            concentrated, so "broadly" means "not concentrated" in one measure);
- "unclassified":           R²_lin ≥ 0.6 and none of the above: e.g. a high R²_lin carried by
                            a handful of output directions while the per-feature median keeps
                            up (SmolLM2 block 29: effective rank 6.9 of 576). Reported as such
                            rather than forced into a regime (issue 18).

Per model, the regimes counted (`regime_summary`), the input side's correlations with R²_lin (`input_side`), and
the regimes on disjoint samples of text with claim 4's rule on each (`regime_replication`, the rule given by its
caller: `linrec.claims.regimes`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from linrec.analyses.profile import FIRST_TOKEN_OVERLAP, FIRST_TOKEN_SHARE
from linrec.analyses.uncertainty import spearman
from linrec.base.progress import bar as progress_bar
from linrec.base.tables import blocks, require
from linrec.base.threads import one_thread
from linrec.stats.ceiling import AffineFit, first_position, fit_affine, gram_condition, score
from linrec.stats.moments import Moments

if TYPE_CHECKING:
    import pandas

REGIME_R2 = 0.6  # below: nonlinear
REGIME_GAP = 0.2  # global minus per-feature median R² that marks concentration
REGIME_TOP1 = 0.5  # top-1 output variance share
REGIME_RANK = 0.05  # effective rank as a fraction of the width: below it, output (or explained part) is concentrated
OUTLIER_RANK = 2.0  # "rank ≈ 1": an outlier-concentrated block's explained part has effective rank below this
REGIME_HIGH_R2 = 0.8  # regimes are also counted among blocks with R²_lin ≥ this: "high" read strictly (0.6 is loose)
MASSIVE_RATIO = 100.0  # a feature with ≥ 100× the median feature's variance is "massive"


def effective_rank(cov: np.ndarray) -> float:
    """Roy & Vetterli effective rank of a symmetric PSD matrix: exp(entropy of its normalised eigenvalues)."""
    with one_thread():
        lam = torch.linalg.eigvalsh(torch.from_numpy(np.ascontiguousarray(cov, dtype=np.float64))).numpy()
    lam = np.clip(lam, 0, None)
    if lam.sum() <= 0:
        return 0.0
    p = lam / lam.sum()
    p = p[p > 0]
    return float(np.exp(-(p * np.log(p)).sum()))


def ex_top_k_r2(sse: np.ndarray, sst: np.ndarray, k: int) -> float:
    """Variance-weighted R² over the output features left after removing the `k` with the largest SST."""
    if k >= len(sst):
        return float("nan")  # nothing left
    keep = np.argsort(sst)[: len(sst) - k]
    return float(1 - sse[keep].sum() / sst[keep].sum())


REGIMES = ("broadly linear", "first-token-concentrated", "outlier-concentrated", "nonlinear", "unclassified")


def concentrated(r2_lin: float, r2_median: float, top1_share: float, eff_rank_out: float, d_out: int) -> bool:
    """High R²_lin carried by a few output features: R²_lin ≥ 0.6, the per-feature median at least REGIME_GAP below
    it, and the top-1 feature holding ≥ REGIME_TOP1 of the variance or the output effective rank < REGIME_RANK·d."""
    few = top1_share >= REGIME_TOP1 or eff_rank_out < REGIME_RANK * d_out
    return bool(r2_lin >= REGIME_R2 and r2_lin - r2_median >= REGIME_GAP and few)


def regime(
    r2_lin: float,
    r2_median: float,
    top1_share: float,
    eff_rank_out: float,
    d_out: int,
    r2_ex_first: float = float("nan"),
    eff_rank_explained: float | None = None,
) -> str:
    """The block's regime under the rule in the module docstring (`r2_ex_first` NaN: that rule is skipped;
    `eff_rank_explained`: effective rank of the map's explained part WᵀCxxW; None: the two checks on it, rank ≈ 1
    for outlier-concentrated and spread for broadly linear, are skipped)."""
    if r2_lin < REGIME_R2:
        return "nonlinear"
    if r2_lin - r2_ex_first >= REGIME_GAP:
        return "first-token-concentrated"
    if concentrated(r2_lin, r2_median, top1_share, eff_rank_out, d_out):
        if eff_rank_explained is None or eff_rank_explained < OUTLIER_RANK:
            return "outlier-concentrated"
        return "unclassified"
    if eff_rank_explained is not None and eff_rank_explained < REGIME_RANK * d_out:
        return "unclassified"
    return "broadly linear"


def block_spectrum(
    train: Moments,
    test: Moments,
    block: int | str = "?",
    rest: tuple[Moments, Moments] | None = None,
    fit: AffineFit | None = None,
) -> dict:
    """Every per-block number of the module docstring, from the two splits' statistics
    (`rest`: the same without the windows' first positions, `Capture.without_first`; `fit`: the
    block's map, `Capture.fit`, fitted here from `train` when not given)."""
    fit = fit if fit is not None else fit_affine(train, block=block)
    s = score(fit, test, block=block)
    Cxx, _, Cyy = train.blocks()
    sst = s.sst
    order = np.sort(sst)[::-1]
    std_in = np.sqrt(np.clip(np.diag(Cxx), 0, None) / max(train.n - 1, 1))
    explained = fit.W.T @ Cxx @ fit.W
    eff_out = effective_rank(Cyy)
    q25, q75 = s.r2_feature_quartiles
    row = {
        "block": block,
        "r2_lin": s.r2,
        "r2_feature_median": s.r2_feature_median,
        "r2_feature_q25": q25,
        "r2_feature_q75": q75,
        "top1_var_share": float(order[0] / sst.sum()),
        "top8_var_share": float(order[:8].sum() / sst.sum()),
        "top1_var_ratio": float(order[0] / np.median(sst)),
        "n_massive": int((sst >= MASSIVE_RATIO * np.median(sst)).sum()),
        "r2_ex_top1": ex_top_k_r2(s.sse, sst, 1),
        "r2_ex_top8": ex_top_k_r2(s.sse, sst, 8),
        **first_position(test, rest, block=block),
        "eff_rank_out": eff_out,
        "eff_rank_explained": effective_rank(explained),
        "eff_rank_in": effective_rank(Cxx),
        "cond_gram": fit.cond_gram,
        "cond_gram_test": gram_condition(test.blocks()[0]),
        "dynamic_range_in": float(std_in.max() / np.median(std_in[std_in > 0])),
        "d_out": train.d_out,
    }
    row["regime"] = regime(
        row["r2_lin"],
        row["r2_feature_median"],
        row["top1_var_share"],
        eff_out,
        train.d_out,
        row["r2_ex_first"],
        row["eff_rank_explained"],
    )
    return row


def spectrum_table(capture, progress: bool = False) -> pandas.DataFrame:
    """One row per block of `capture`: `block_spectrum` plus the model name, and `regime_ex_first`: the regime of
    the same block with the windows' first positions left out of fit and score (the whole spectrum recomputed on
    `Capture.without_first`; "" for a capture without first-position statistics). `progress`: a bar over the blocks."""

    rows = []
    for i in progress_bar(range(capture.n_blocks), desc=f"spectra {capture.model_label}", unit="block",
                          disable=not progress):  # fmt: skip
        rest = capture.without_first(i)
        row = block_spectrum(capture.stats["train"][i], capture.stats["test"][i], block=i, rest=rest,
                             fit=capture.fit(i))  # fmt: skip
        row["regime_ex_first"] = block_spectrum(*rest, block=i)["regime"] if rest is not None else ""
        rows.append({"model": capture.model_label, **row})
    return pd.DataFrame(rows)


def toy_table(toys: dict[str, tuple[Moments, Moments]]) -> pandas.DataFrame:
    """`block_spectrum` of each hand-built block of `toys` (`toy_blocks`: {regime it was built to be: (train, test)}),
    one row each, named "toy: <regime>"; its map fitted from the train statistics, as for a real block."""
    import pandas as pd

    return pd.DataFrame([block_spectrum(train, test, block=f"toy: {name}") for name, (train, test) in toys.items()])


def block_anatomy(train: Moments, test: Moments, fit: AffineFit | None = None) -> dict[str, np.ndarray]:
    """What a block's regime is read from, feature by feature (notebook 04's look at the block claim 4 rests on):
    `var_share` and `r2_feature`, each output feature's share of the held-out output variance and its held-out R²,
    largest share first; `eig_out` and `eig_explained`, the eigenvalues of the output covariance Cyy and of the map's
    explained part WᵀCxxW, each as a share of its sum, largest first (their effective ranks are `block_spectrum`'s
    `eff_rank_out` and `eff_rank_explained`)."""
    fit = fit if fit is not None else fit_affine(train)
    s = score(fit, test)
    Cxx, _, Cyy = train.blocks()
    order = np.argsort(s.sst)[::-1]

    def shares(cov):
        with one_thread():
            lam = torch.linalg.eigvalsh(torch.from_numpy(np.ascontiguousarray(cov, dtype=np.float64))).numpy()
        lam = np.clip(lam, 0, None)[::-1]
        return lam / lam.sum() if lam.sum() > 0 else lam

    return {
        "var_share": s.sst[order] / s.sst.sum(),
        "r2_feature": s.r2_feature[order],
        "eig_out": shares(Cyy),
        "eig_explained": shares(fit.W.T @ Cxx @ fit.W),
    }


def toy_blocks(n: int = 4000, d: int = 64, seed: int = 0) -> dict[str, tuple[Moments, Moments]]:
    """Two blocks built to be the two regimes, as (train, test) statistics of n rows of d standard-normal inputs
    (the last fifth held out): "broadly linear", every output a random linear mix of the inputs plus a little noise
    (each feature fitted alike, the explained part spread over many directions); "outlier-concentrated", one loud
    output feature exactly linear in the inputs (variance 400) and d − 1 quiet ones that are x_j² − 1, which no
    linear map can fit (each uncorrelated with every input): R²_lin is the loud feature's share of the variance, the
    per-feature median R² is about 0, and the explained part has rank 1."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    built = {
        "broadly linear": x @ rng.standard_normal((d, d)) / np.sqrt(d) + 0.3 * rng.standard_normal((n, d)),
        "outlier-concentrated": np.c_[20.0 * x[:, :1], x[:, 1:] ** 2 - 1.0],
    }
    cut = n - n // 5

    def stats(y, rows):
        return Moments.of(torch.from_numpy(x[rows]), torch.from_numpy(np.ascontiguousarray(y[rows])))

    return {name: (stats(y, slice(0, cut)), stats(y, slice(cut, None))) for name, y in built.items()}


def regime_summary(spectrum: pd.DataFrame, regimes: Iterable[str]) -> pd.DataFrame:
    """Per model: how many blocks fall in each regime (`linrec.analyses.spectrum.regime`), which, and the outlier
    numbers."""
    require(spectrum, ["model", "block", "regime", "first_var_share", "n_massive", "top1_var_share", "r2_lin",
                        "r2_ex_top8", "eff_rank_out", "d_out", "r2_feature_median", "eff_rank_explained"],
             "regime_summary")  # fmt: skip
    rows = []
    for model, t in spectrum.groupby("model", sort=False):
        row = {"model": model, "n_blocks": len(t), "n_high_r2": int((t["r2_lin"] >= REGIME_HIGH_R2).sum())}
        for reg in regimes:
            key = reg.replace(" ", "_").replace("-", "_")
            row[f"n_{key}"] = int((t["regime"] == reg).sum())
            row[f"n_{key}_high_r2"] = int(((t["regime"] == reg) & (t["r2_lin"] >= REGIME_HIGH_R2)).sum())
        conc = np.array([concentrated(r.r2_lin, r.r2_feature_median, r.top1_var_share, r.eff_rank_out, r.d_out)
                         for r in t.itertuples()], dtype=bool)  # fmt: skip
        row["concentrated_not_rank1_blocks"] = blocks(t, conc & (t["regime"] == "unclassified").to_numpy())
        ex = t["regime_ex_first"] if "regime_ex_first" in t else pd.Series("", index=t.index)
        measured = bool((ex != "").all())  # else -1: not measured
        row["n_broadly_linear_ex_first"] = int((ex == "broadly linear").sum()) if measured else -1
        row["n_outlier_concentrated_ex_first"] = int((ex == "outlier-concentrated").sum()) if measured else -1
        row["outlier_ex_first_blocks"] = blocks(t, ex == "outlier-concentrated")
        row.update(
            {
                "outlier_blocks": blocks(t, t["regime"] == "outlier-concentrated"),
                "first_token_blocks": blocks(t, t["regime"] == "first-token-concentrated"),
                "unclassified_blocks": blocks(t, t["regime"] == "unclassified"),
                "outlier_first_blocks": blocks(
                    t, (t["regime"] == "outlier-concentrated") & (t["first_var_share"] >= FIRST_TOKEN_OVERLAP)
                ),
                "first_share_blocks": blocks(t, t["first_var_share"] >= FIRST_TOKEN_SHARE),
                "massive_blocks": blocks(t, t["n_massive"] > 0),
                "top1_broadly_linear_blocks": blocks(
                    t, (t["top1_var_share"] >= REGIME_TOP1) & (t["regime"] == "broadly linear")
                ),
                "max_drop_ex_top8": float((t["r2_lin"] - t["r2_ex_top8"]).max()),
                "eff_rank_out_frac_median": float((t["eff_rank_out"] / t["d_out"]).median()),
            }
        )
        rows.append(row)
    return pd.DataFrame(rows)


def input_side(
    spectrum: pd.DataFrame, descriptors=("cond_gram", "cond_gram_test", "eff_rank_in", "dynamic_range_in")
) -> pd.DataFrame:
    """Per model and input descriptor: Spearman ρ with R²_lin across blocks, and its p-value."""
    rows = []
    for model, t in spectrum.groupby("model", sort=False):
        for col in descriptors:
            rho, p = spearman(t["r2_lin"], t[col])
            rows.append({"model": model, "descriptor": col, "spearman_rho": rho, "p": p})
    return pd.DataFrame(rows)


def regime_replication(reps: pd.DataFrame, regimes: Iterable[str],
                       holds: Callable[[pd.DataFrame], bool]) -> pd.DataFrame:  # fmt: skip
    """Claim 4 on disjoint samples of text (`reps`: `spectrum_table` rows of every model with a `sample` column). Per
    sample, the regimes are counted (`regime_summary`) and claim 4's rule (`holds`, given that sample's summary of every
    model; `linrec.claims.regimes.claim4_holds`) is applied over all models, as on the profile's own sample. One row per
    model: per sample (in `samples` order) its broadly linear and outlier-concentrated counts and outlier blocks,
    `n_samples`, `n_claim4_passes` (samples on which claim 4 holds, the same number in every row) and `replication`:
    "holds on every sample", "fails on every sample" or "sample-dependent"; `outlier_blocks_every_sample`: the blocks
    outlier-concentrated on every sample."""
    require(reps, ["model", "sample", "block", "regime"], "regime_replication")
    regimes = list(regimes)
    samples = sorted(int(k) for k in reps["sample"].unique())
    per_sample = {k: regime_summary(reps[reps["sample"] == k], regimes) for k in samples}
    passes = [bool(holds(per_sample[k])) for k in samples]
    word = (
        "sample-dependent"
        if any(passes) != all(passes)
        else "holds on every sample"
        if all(passes)
        else ("fails on every sample")
    )
    rows = []
    for model in dict.fromkeys(reps["model"]):
        got = [per_sample[k].set_index("model").loc[model] for k in samples]
        sets = [set(str(g["outlier_blocks"]).split()) for g in got]
        rows.append(
            {
                "model": model,
                "samples": " ".join(map(str, samples)),
                "n_samples": len(samples),
                "n_broadly_linear": " ".join(str(int(g["n_broadly_linear"])) for g in got),
                "n_outlier_concentrated": " ".join(str(int(g["n_outlier_concentrated"])) for g in got),
                "outlier_blocks": " | ".join(str(g["outlier_blocks"]) or "none" for g in got),
                "outlier_blocks_every_sample": " ".join(sorted(set.intersection(*sets), key=int)),
                "n_claim4_passes": int(sum(passes)),
                "replication": word,
            }
        )
    return pd.DataFrame(rows)
