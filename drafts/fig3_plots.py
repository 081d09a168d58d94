"""Draft (issue 3): Figure 3 plotting, to move into linrec.plots with notebook 03."""

from pathlib import Path

import matplotlib.pyplot as plt
import seaborn as sns

from linrec.plots import save


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
