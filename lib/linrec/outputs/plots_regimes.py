"""Figure 4's companion (notebook 04): what a block's regime is read from, feature by feature, for a few blocks side
by side (two toy blocks built to be the two regimes, and the real blocks claim 4 rests on). Saved as PNG and PDF
(`linrec.outputs.plots.save`)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

from linrec.outputs.plots import save


def fig4b_block_anatomy(anatomies: dict[str, dict], stem: str | Path | None = None):
    """One column per block of `anatomies` ({title: `linrec.analyses.spectrum.block_anatomy`}): (top) each output
    feature's held-out R² against its share of the output variance, so a block whose R²_lin is one loud feature's
    shows one point far right and high, the rest low at the left; (bottom) the eigenvalue shares of the output
    covariance Cyy and of the map's explained part WᵀCxxW, largest first: a rank-1 explained part is one bar."""
    sns.set_theme(style="whitegrid", context="paper")
    names = list(anatomies)
    fig, axes = plt.subplots(2, len(names), figsize=(3.3 * len(names), 5.6), squeeze=False)
    colours = sns.color_palette("colorblind", 3)
    smallest = min(float(np.min(a["var_share"][a["var_share"] > 0])) for a in anatomies.values())
    for k, name in enumerate(names):
        a, top, low = anatomies[name], axes[0][k], axes[1][k]
        top.scatter(a["var_share"], np.clip(a["r2_feature"], -0.2, 1.0), s=10, color=colours[0], alpha=0.8)
        top.set_xscale("log")
        top.set_xlim(smallest / 2, 1.5)  # one scale for every block: a loud feature is as far right in each
        top.set_ylim(-0.25, 1.05)
        top.set_title(name, fontsize=9)
        top.set_xlabel("share of the output variance")
        shown = min(20, len(a["eig_out"]))
        ranks = np.arange(1, shown + 1)
        low.bar(ranks - 0.2, a["eig_out"][:shown], width=0.4, color=colours[1], label="output covariance Cyy")
        low.bar(ranks + 0.2, a["eig_explained"][:shown], width=0.4, color=colours[2], label="explained part WᵀCxxW")
        low.set_yscale("log")
        low.set_ylim(1e-4, 1.5)
        low.set_xlabel(f"eigenvalue, largest first (first {shown})")
    axes[0][0].set_ylabel("feature's held-out R² (≥ −0.2 shown)")
    axes[1][0].set_ylabel("share of the eigenvalues' sum")
    axes[1][-1].legend(fontsize=7, loc="upper right")
    fig.suptitle("What a regime is read from: per-feature R² against variance (top), the spectra (bottom)", y=1.0)
    fig.tight_layout()
    if stem is not None:
        save(fig, stem)
    return fig
