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


REGIME_MARKERS = {"broadly linear": "o", "outlier-concentrated": "D", "nonlinear": "X"}


def fig4_rank_outliers(table, stem: str | Path | None = None):
    """Figure 4. (a) global R²_lin vs per-feature median R², size ∝ output effective rank, colour =
    model, marker = regime, the diagonal drawn; (b) R²_lin without the top-1 / top-8 output features."""
    sns.set_theme(style="whitegrid", context="paper")
    models = list(dict.fromkeys(table["model"]))
    palette = dict(zip(models, sns.color_palette("colorblind", len(models))))
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10.5, 4.3))
    rank = table["eff_rank_out"].to_numpy(float)
    sizes = 12 + 180 * rank / max(rank.max(), 1.0)
    lo = min(0.0, float(table[["r2_lin", "r2_feature_median", "r2_ex_top1", "r2_ex_top8"]].min().min()) - 0.03)
    for m in models:
        for reg, marker in REGIME_MARKERS.items():
            sel = ((table["model"] == m) & (table["regime"] == reg)).to_numpy()
            if sel.any():
                ax.scatter(table["r2_lin"][sel], table["r2_feature_median"][sel], s=sizes[sel], c=[palette[m]], marker=marker, alpha=0.75, edgecolors="k", linewidths=0.4)
    for _, r in table[table["regime"] == "outlier-concentrated"].iterrows():
        ax.annotate(str(r["block"]), (r["r2_lin"], r["r2_feature_median"]), xytext=(4, -9), textcoords="offset points", fontsize=7, color=palette[r["model"]])
    for a in (ax, bx):
        a.plot([lo, 1], [lo, 1], color="0.4", lw=0.8, ls="--")
        a.set_xlim(lo, 1.01)
        a.set_ylim(lo, 1.01)
        a.set_xlabel("global R²_lin (variance-weighted, held-out)")
    ax.set_ylabel("median per-feature R²")
    ax.set_title("(a) below the diagonal: a few features carry R²_lin", fontsize=9)
    handles = [plt.Line2D([], [], ls="", marker="o", color=palette[m], label=m) for m in models]
    handles += [plt.Line2D([], [], ls="", marker=mk, color="0.3", mfc="none", label=reg) for reg, mk in REGIME_MARKERS.items()]
    ax.legend(handles=handles, fontsize=7, loc="upper left", title="size ∝ effective rank of Cyy", title_fontsize=7)
    for m in models:
        t = table[table["model"] == m]
        bx.scatter(t["r2_lin"], t["r2_ex_top1"], s=22, facecolors="none", edgecolors=[palette[m]], label=f"{m}: without top-1")
        bx.scatter(t["r2_lin"], t["r2_ex_top8"], s=22, c=[palette[m]], marker="s", label=f"{m}: without top-8")
        for _, r in t.iterrows():
            bx.plot([r["r2_lin"]] * 2, [r["r2_ex_top1"], r["r2_ex_top8"]], color=palette[m], lw=0.5, alpha=0.6)
    bx.set_ylabel("R²_lin over the remaining output features")
    bx.set_title("(b) R²_lin without the highest-variance output features", fontsize=9)
    bx.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    if stem is not None:
        save(fig, stem)
    return fig
