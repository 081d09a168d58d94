"""Figure 4 and its companion (notebook 04): the two regimes of a high R²_lin across every block (global R²_lin against
the per-feature median, sized by the explained part's effective rank, `fig4_rank_outliers`), and what a block's regime
is read from, feature by feature, for a few blocks side by side (two toy blocks built to be the two regimes, and the
real blocks claim 4 rests on, `fig4b_block_anatomy`). Saved as PNG and PDF (`linrec.outputs.plots.save`)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

from linrec.outputs.plots import save

REGIME_MARKERS = {
    "broadly linear": "o",
    "first-token-concentrated": "^",
    "outlier-concentrated": "D",
    "nonlinear": "X",
    "unclassified": "s",
}


def fig4_rank_outliers(table, stem: str | Path | None = None):
    """Figure 4. (a) global R²_lin vs per-feature median R², size ∝ the effective rank of the map's explained part
    (`eff_rank_explained`, what the rule's "rank ≈ 1" reads; the output's own, `eff_rank_out`, in a table without
    it), colour = model, marker = regime, the diagonal drawn, each outlier-concentrated block ringed and named (the
    blocks claim 4 rests on: the smallest markers, by that rank); (b) R²_lin without the top-1 / top-8 output
    features."""
    sns.set_theme(style="whitegrid", context="paper")
    models = list(dict.fromkeys(table["model"]))
    palette = dict(zip(models, sns.color_palette("colorblind", len(models))))
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10.5, 4.3))
    sized_by = "eff_rank_explained" if "eff_rank_explained" in table.columns else "eff_rank_out"
    rank = table[sized_by].to_numpy(float)
    sizes = 14 + 90 * rank / max(np.nanmax(rank), 1.0)  # big enough to rank by eye, small enough not to merge
    lo = min(0.0, float(table[["r2_lin", "r2_feature_median", "r2_ex_top1", "r2_ex_top8"]].min().min()) - 0.03)
    for m in models:
        for reg, marker in REGIME_MARKERS.items():
            sel = ((table["model"] == m) & (table["regime"] == reg)).to_numpy()
            if sel.any():
                hollow = reg == "nonlinear"  # the many nonlinear blocks drawn as outlines, so neighbours stay apart
                ax.scatter(
                    table["r2_lin"][sel],
                    table["r2_feature_median"][sel],
                    s=sizes[sel],
                    c="none" if hollow else [palette[m]],
                    marker=marker,
                    alpha=0.8,
                    edgecolors=[palette[m]] if hollow else "k",
                    linewidths=0.9 if hollow else 0.4,
                    zorder=1 if hollow else 2,
                )
    for _, r in table[table["regime"] == "outlier-concentrated"].iterrows():  # what claim 4 rests on, on top
        ax.scatter([r["r2_lin"]], [r["r2_feature_median"]], s=170, facecolors="none", edgecolors="#c0392b", lw=1.4,
                   zorder=4)  # fmt: skip
    for _, r in table[
        table["regime"].isin(["outlier-concentrated", "first-token-concentrated", "unclassified"])
    ].iterrows():
        outlier = r["regime"] == "outlier-concentrated"
        ax.annotate(
            f"block {r['block']}: rank {r[sized_by]:.1f}" if outlier else str(r["block"]),
            (r["r2_lin"], r["r2_feature_median"]),
            xytext=(4, -9),
            textcoords="offset points",
            fontsize=7,
            color=palette[r["model"]],
        )
    for a in (ax, bx):
        a.plot([lo, 1], [lo, 1], color="0.4", lw=0.8, ls="--")
        a.set_xlim(lo, 1.01)
        a.set_ylim(lo, 1.01)
        a.set_xlabel("global R²_lin (variance-weighted, held-out)")
    ax.set_ylabel("median per-feature R²")
    ax.set_title("(a) below the diagonal: a few features carry R²_lin", fontsize=9)
    handles = [plt.Line2D([], [], ls="", marker="o", color=palette[m], label=m) for m in models]
    handles += [
        plt.Line2D([], [], ls="", marker=mk, color="0.3", mfc="none", label=reg) for reg, mk in REGIME_MARKERS.items()
    ]
    what = "the explained part (WᵀCxxW)" if sized_by == "eff_rank_explained" else "the output (Cyy)"
    handles.append(plt.Line2D([], [], ls="", marker="o", mfc="none", mec="#c0392b", mew=1.4, ms=9,
                              label="outlier-concentrated: claim 4's blocks"))  # fmt: skip
    ax.legend(handles=handles, fontsize=7, loc="upper left", title=f"size ∝ effective rank of {what}", title_fontsize=7)
    for m in models:
        t = table[table["model"] == m]
        bx.scatter(
            t["r2_lin"], t["r2_ex_top1"], s=22, facecolors="none", edgecolors=[palette[m]], label=f"{m}: without top-1"
        )
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
