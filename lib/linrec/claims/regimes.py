"""Claim 4 (notebook 04): each model's blocks counted by regime (`regime_summary`), the input side's correlations
with R²_lin (`input_side`), the rule (`verdict_4`) and its replication on disjoint samples of text
(`regime_replication`); what a teacher says of them (`regime_story`, `replication_story`).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

# the regimes' thresholds: linrec.analyses.spectrum.regime applies them to each block, RULE_4's words name them
from linrec.analyses.spectrum import OUTLIER_RANK, REGIME_GAP, REGIME_R2, REGIME_RANK, concentrated  # noqa: F401
from linrec.claims.rules import (
    FIRST_TOKEN_OVERLAP,
    FIRST_TOKEN_SHARE,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    REPRODUCED,
    Rule,
    Verdict,
    blocks,
    require,
    spearman,
    thresholds,
)

# ---- notebook 04: regimes ------------------------------------------------------------------------------
# each rule's thresholds (its `Rule`'s; a verdict function reads them from its `t`)
T_4 = thresholds(
    "Claim4Thresholds", REGIME_R2=REGIME_R2, REGIME_GAP=REGIME_GAP, REGIME_RANK=REGIME_RANK, OUTLIER_RANK=OUTLIER_RANK
)


def regime_summary(spectrum: pd.DataFrame, regimes: Iterable[str]) -> pd.DataFrame:
    """Per model: how many blocks fall in each regime (`linrec.analyses.spectrum.regime`), which, and the outlier
    numbers."""
    # here, not at the top: read when called, so the summary counts with spectrum's thresholds as they stand
    from linrec.analyses.spectrum import REGIME_HIGH_R2, REGIME_TOP1, concentrated

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


def verdict_4(summary: pd.DataFrame | None, *, t=T_4) -> Verdict:  # noqa: ARG001 (its thresholds act in the summary)
    """Both regimes exist over all models; `without_first` the same on the regimes without position 0 (`-1`
    counts: not measured)."""
    if summary is None or summary.empty:
        return Verdict(4, NOT_TESTABLE, reason="notebook 04 not run")
    ev = summary.to_dict("records")
    if not outlier_candidates(summary):
        return Verdict(4, NOT_TESTABLE, ev, reason=NO_CANDIDATE)
    ok = summary["n_broadly_linear"].sum() > 0 and summary["n_outlier_concentrated"].sum() > 0
    word1 = ""
    if "n_broadly_linear_ex_first" in summary and (summary["n_broadly_linear_ex_first"] >= 0).all():
        ok1 = summary["n_broadly_linear_ex_first"].sum() > 0 and summary["n_outlier_concentrated_ex_first"].sum() > 0
        word1 = REPRODUCED if ok1 else NOT_REPRODUCED
    return Verdict(4, REPRODUCED if ok else NOT_REPRODUCED, ev, without_first=word1)


# claim 4's precondition: the outlier-concentrated regime describes blocks whose output sits in a few (massive)
# features; where no block of any model has such a feature or is concentrated, "no outlier-concentrated block" is no
# test of the claim (issue 87: no zoo block has a massive feature)
NO_CANDIDATE = ("no block of any model has a massive output feature or a concentrated output (massive_blocks, "
                "outlier_blocks and concentrated_not_rank1_blocks all empty), so the outlier-concentrated regime has "
                "no block to describe; the claim's precondition is absent")  # fmt: skip


def outlier_candidates(summary: pd.DataFrame) -> bool:
    """Whether some model has a block the outlier-concentrated regime could describe: a block with a massive feature,
    or one concentrated in a few features (rank ≈ 1 or not). True for a table without these columns (written before
    they were: the precondition cannot be checked, so it does not gate)."""
    cols = [c for c in ("massive_blocks", "outlier_blocks", "concentrated_not_rank1_blocks") if c in summary]
    if len(cols) < 3:
        return True
    return bool(summary["n_outlier_concentrated"].sum() > 0) or any(
        str(v).strip() not in ("", "nan") for c in cols for v in summary[c]
    )


RULE_4 = Rule(
    4,
    ("spectrum_summary",),
    T_4,
    verdict_4,
    says=lambda t: (
        "reproduced if, over all models, blocks of both the broadly linear and the outlier-concentrated regime exist "
        f"(broadly linear: R²_lin ≥ {t.REGIME_R2}, not concentrated in a feature or the first token, and the effective "
        f"rank of the map's explained part ≥ {t.REGIME_RANK * 100:g} % of the output width; outlier-concentrated: "
        f"R²_lin ≥ {t.REGIME_R2}, per-feature median ≥ {t.REGIME_GAP} below it, the output concentrated in a few "
        f"features, and the explained part's effective rank < {t.OUTLIER_RANK:g}, the paper's 'rank ≈ 1'; "
        "linrec.analyses.spectrum.regime); not testable where no block of any model has a massive output feature "
        "or a concentrated output (the outlier regime's precondition), else not reproduced"
    ),
    would_change=lambda t: (
        "a broadly linear and an outlier-concentrated block (rank ≈ 1) both among the blocks with R²_lin ≥ "
        f"{t.REGIME_R2}, over all models together (the rule pools the models; each model's own counts are stated "
        "beside it)"
    ),
)


def regime_replication(reps: pd.DataFrame, regimes: Iterable[str]) -> pd.DataFrame:
    """Claim 4 on disjoint samples of text (`reps`: `linrec.analyses.spectrum.spectrum_table` rows of every model with a
    `sample` column). Per sample, the regimes are counted (`regime_summary`) and claim 4's rule is applied over all
    models, as on the profile's own sample. One row per model: per sample (in `samples` order) its broadly linear and
    outlier-concentrated counts and outlier blocks, `n_samples`, `n_claim4_passes` (samples on which claim 4 holds,
    the same number in every row) and `replication`: "holds on every sample", "fails on every sample" or
    "sample-dependent"; `outlier_blocks_every_sample`: the blocks outlier-concentrated on every sample."""
    require(reps, ["model", "sample", "block", "regime"], "regime_replication")
    regimes = list(regimes)
    samples = sorted(int(k) for k in reps["sample"].unique())
    per_sample = {k: regime_summary(reps[reps["sample"] == k], regimes) for k in samples}
    passes = [verdict_4(per_sample[k]).verdict == REPRODUCED for k in samples]
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


def replication_story(replication: pd.DataFrame) -> list[str]:
    """One line per model of `regime_replication`'s table (this run's or a results file's): over which samples, its
    broadly linear and outlier-concentrated counts, the outlier blocks on each sample and on every one, and claim 4's
    replication word."""
    require(replication, ["model", "samples", "n_broadly_linear", "n_outlier_concentrated", "outlier_blocks",
                          "outlier_blocks_every_sample", "replication"], "replication_story")  # fmt: skip
    return [
        f"{r['model']}: over samples {r['samples']}, broadly linear {r['n_broadly_linear']}, outlier-concentrated "
        f"{r['n_outlier_concentrated']} (blocks {r['outlier_blocks']}; on every sample: "
        f"{r['outlier_blocks_every_sample'] or 'none'}); claim 4 {r['replication']}."
        for r in replication.to_dict("records")
    ]


def regime_story(spectrum: pd.DataFrame) -> list[str]:
    """What a teacher says about claim 4 from the per-block table, one line per model, every number computed: how
    many blocks are in each of the paper's two regimes and how many in neither (and why), the outlier-concentrated
    blocks the verdict rests on with their explained part's effective rank, and the blocks concentrated in a few
    features whose explained part is not rank ≈ 1 (with that rank's range)."""

    require(spectrum, ["model", "block", "regime", "r2_lin", "r2_feature_median", "top1_var_share", "eff_rank_out",
                       "d_out", "eff_rank_explained"], "regime_story")  # fmt: skip
    lines = []
    for model, t in spectrum.groupby("model", sort=False):
        n = len(t)
        count = t["regime"].value_counts()
        linear, outlier = int(count.get("broadly linear", 0)), int(count.get("outlier-concentrated", 0))
        others = [
            f"{int(count[r])} {r}" for r in ("nonlinear", "first-token-concentrated", "unclassified") if r in count
        ]
        neither = n - linear - outlier
        line = (f"{model}: of {n} blocks, {linear} broadly linear and {outlier} outlier-concentrated (the paper's two "
                f"regimes); {neither} ({neither / n:.0%}) in neither: {', '.join(others) or 'none'}.")  # fmt: skip
        rests = t[t["regime"] == "outlier-concentrated"]
        if len(rests):
            named = ", ".join(f"block {r.block} (explained part's effective rank {r.eff_rank_explained:.1f})"
                              for r in rests.itertuples())  # fmt: skip
            line += f" Its outlier-concentrated side rests on {named}."
        conc = np.array([concentrated(r.r2_lin, r.r2_feature_median, r.top1_var_share, r.eff_rank_out, r.d_out)
                         for r in t.itertuples()], dtype=bool) & (t["regime"] == "unclassified").to_numpy()  # fmt: skip
        if conc.any():
            ranks = t.loc[conc, "eff_rank_explained"]
            listed = ", ".join(blocks(t, conc).split())
            span = f"{ranks.min():.1f}" if len(ranks) == 1 else f"{ranks.min():.1f}–{ranks.max():.1f}"
            which = "block" if len(ranks) == 1 else "blocks"
            line += f" Concentrated in a few features but not rank ≈ 1: {which} {listed} (explained part's "
            line += f"effective rank {span})."
        lines.append(line)
    return lines
