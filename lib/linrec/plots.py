"""Figures, named after the paper's numbering; each saved as PNG and PDF."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402


def save(fig, stem: str | Path) -> list[Path]:
    """Write `fig` to `stem`.png (150 dpi) and `stem`.pdf; returns the paths."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".png"), stem.with_suffix(".pdf")]
    for p in paths:
        fig.savefig(p, dpi=150, bbox_inches="tight")
    return paths


def fig2_r2_lin(table, stem: str | Path | None = None):
    """Figure 2, R²_lin panel: held-out R²_lin per block, one panel per model, per-feature median beside it."""
    sns.set_theme(style="whitegrid", context="paper")
    models = list(dict.fromkeys(table["model"]))
    palette = dict(zip(models, sns.color_palette("colorblind", len(models))))
    widths = [max(3.0, 0.16 * (table["model"] == m).sum()) for m in models]
    fig, axes = plt.subplots(1, len(models), figsize=(sum(widths) + 0.5, 3.2), sharey=True, gridspec_kw={"width_ratios": widths}, squeeze=False)
    for ax, model in zip(axes[0], models):
        t = table[table["model"] == model].sort_values("block")
        c = palette[model]
        ax.plot(t["block"], t["r2_lin"], "-o", color=c, ms=4, label="global R²_lin")
        ax.plot(t["block"], t["r2_feature_median"], ":", marker="s", color=c, ms=3, alpha=0.6, label="per-feature median R²")
        ax.set_title(model)
        ax.set_xlabel("block")
        ax.set_ylim(min(0.0, float(t[["r2_lin", "r2_feature_median"]].min().min()) - 0.05), 1.02)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=8, integer=True))
    axes[0][0].set_ylabel("held-out R² of the closed-form affine map")
    axes[0][0].legend(loc="lower left", fontsize=7, frameon=True)
    fig.suptitle("Per-block linear recoverability (exact closed-form ceiling)", y=1.02)
    if stem is not None:
        save(fig, stem)
    return fig


def fig3_bilinear_gain(table, stats: dict, stem: str | Path | None = None):
    """Figure 3: residual nonlinearity (1 − R²_lin) vs the rank-k bilinear probe's gain, per block."""
    sns.set_theme(style="whitegrid", context="paper")
    t = table.assign(nonlinearity=1 - table["r2_lin_rows"])
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    sns.scatterplot(data=t, x="nonlinearity", y="gain", hue="model", style="model", palette="colorblind", s=40, ax=ax)
    ax.axhline(0, color="0.5", lw=0.8)
    ax.set_xlabel("residual nonlinearity 1 − R²_lin (held-out rows)")
    ax.set_ylabel("bilinear gain R²_poly − R²_lin")
    ax.set_title(f"Pearson r = {stats['r']:.2f} (95% CI {stats['ci_low']:.2f} to {stats['ci_high']:.2f}; p = {stats['p']:.2g}; n = {stats['n']})", fontsize=9)
    if stem is not None:
        save(fig, stem)
    return fig


def fig3b_trained_pitfall(table, stem: str | Path | None = None):
    """Trained affine baselines (Adam, SGD) against the closed-form ceiling on the same rows, vs κ(Gram)."""
    sns.set_theme(style="whitegrid", context="paper")
    long = table.melt(id_vars=["model", "block", "cond_gram", "r2_ceiling_rows"], value_vars=["r2_trained_adam", "r2_trained_sgd"], var_name="optimizer", value_name="r2")
    long["optimizer"] = long["optimizer"].str.replace("r2_trained_", "", regex=False)
    long["shortfall"] = (long["r2_ceiling_rows"] - long["r2"]).clip(lower=1e-6, upper=10)
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    sns.scatterplot(data=long, x="cond_gram", y="shortfall", hue="model", style="optimizer", palette="colorblind", s=36, ax=ax)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("κ of the input Gram matrix (train)")
    ax.set_ylabel("ceiling − trained R² (held-out; clipped to [1e-6, 10])")
    ax.set_title("Trained linear baselines fall short of the closed-form ceiling", fontsize=9)
    if stem is not None:
        save(fig, stem)
    return fig
