"""Figures of the measurement itself (notebooks 01, 02 and 05): the method (Figure 1), R²_lin per block (Figure 2's
first panel) and its learning curve, and R²_lin on each corpus (Figure 5). Saved as PNG and PDF
(`linrec.outputs.plots.save`, with the helpers every figure shares)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
from matplotlib.ticker import MaxNLocator

from linrec.outputs.plots import has_band, legend_below, per_model_axes, save, yerr


def fig1_method(stem: str | Path | None = None):
    """Figure 1, the method as a diagram: one frozen pass → (x, y) per FFN block → float64
    statistics → closed-form affine map + residual → held-out R²_lin (and what builds on it)."""

    sns.set_theme(style="white", context="paper")
    fig, ax = plt.subplots(figsize=(11, 3.9))
    ax.set_xlim(0, 11)
    ax.set_ylim(0, 3.9)
    ax.axis("off")
    pal = sns.color_palette("colorblind", 6)

    def box(x, y, w, h, title, body, colour):
        ax.add_patch(
            FancyBboxPatch(
                (x, y), w, h, boxstyle="round,pad=0.04,rounding_size=0.12", fc=(*colour, 0.13), ec=colour, lw=1.4
            )
        )
        ax.text(x + w / 2, y + h - 0.2, title, ha="center", va="top", fontsize=9.5, weight="bold")
        ax.text(x + w / 2, y + h - 0.55, body, ha="center", va="top", fontsize=7.8, linespacing=1.45)

    def arrow(x0, y0, x1, y1, label=""):
        ax.add_patch(FancyArrowPatch((x0, y0), (x1, y1), arrowstyle="-|>", mutation_scale=12, lw=1.2, color="0.25"))
        if label:
            ax.text((x0 + x1) / 2, (y0 + y1) / 2 + 0.12, label, ha="center", va="bottom", fontsize=7, color="0.25")

    # the block: the residual stream, each sublayer reading from it and adding its output back (⊕)
    ax.add_patch(
        FancyBboxPatch((0.2, 0.45), 2.3, 3.0, boxstyle="round,pad=0.04,rounding_size=0.12", fc="0.97", ec="0.5", lw=1.0)
    )
    ax.text(1.35, 3.3, "frozen LM, one pass\nover the corpus", ha="center", va="top", fontsize=9, weight="bold")
    ax.annotate("", xy=(0.55, 2.8), xytext=(0.55, 0.55), arrowprops=dict(arrowstyle="-|>", color="0.3", lw=2))
    ax.text(0.4, 0.6, "residual stream h", ha="right", va="bottom", fontsize=7, rotation=90)
    for y0, name, c in ((1.75, "attention", pal[0]), (0.75, "norm → FFN", pal[1])):
        ax.add_patch(FancyBboxPatch((1.0, y0), 1.25, 0.5, boxstyle="round,pad=0.02", fc=(*c, 0.25), ec=c))
        ax.text(1.625, y0 + 0.25, name, ha="center", va="center", fontsize=8)
        ax.annotate(
            "", xy=(1.0, y0 + 0.25), xytext=(0.55, y0 + 0.25), arrowprops=dict(arrowstyle="-|>", color="0.3", lw=0.8)
        )
        ax.plot([1.625, 1.625, 0.62], [y0 + 0.52, y0 + 0.75, y0 + 0.75], color="0.3", lw=0.8)  # output back …
        ax.annotate(
            "", xy=(0.62, y0 + 0.75), xytext=(0.9, y0 + 0.75), arrowprops=dict(arrowstyle="-|>", color="0.3", lw=0.8)
        )
        ax.text(
            0.55,
            y0 + 0.75,
            "⊕",
            ha="center",
            va="center",
            fontsize=11,
            color="0.2",
            bbox=dict(boxstyle="circle,pad=0.0", fc="0.97", ec="none"),
        )  # … added to h
    ax.text(0.78, 1.03, "x", ha="center", va="bottom", fontsize=10, style="italic", color=pal[1], weight="bold")
    ax.text(1.7, 1.27, "y", ha="left", va="bottom", fontsize=10, style="italic", color=pal[1], weight="bold")

    box(
        3.0,
        1.55,
        2.2,
        1.9,
        "capture",
        "every position is a row (x, y)\nfloat64 n, μ, Σxxᵀ, Σxyᵀ, Σyyᵀ\nper block, per split\n"
        "(80 % / 20 % of windows)\nO(d²) memory, any token count",
        pal[1],
    )
    box(
        5.7,
        1.55,
        2.4,
        1.9,
        "closed-form affine map",
        "Cxx W = Cxy,  b = μy − Wᵀμx\nJacobi-scaled float64 eigh\ny = Wᵀx + b + r\nno optimiser: the exact ceiling\n"
        "κ(Cxx) reported",
        pal[2],
    )
    box(
        8.6,
        1.55,
        2.2,
        1.9,
        "held-out R²_lin",
        "1 − Σⱼ SSEⱼ / Σⱼ SSTⱼ\nfrom the test split's\nstatistics alone\n+ jackknife over windows",
        pal[3],
    )
    arrow(2.5, 2.5, 3.0, 2.5, "hooks")
    arrow(5.2, 2.5, 5.7, 2.5)
    arrow(8.1, 2.5, 8.6, 2.5)
    uses = [
        (3.0, "residual r: rank-16\nbilinear probe (Fig 3)", pal[4]),
        (5.05, "per-feature R², effective\nrank, ex-top-k (Fig 4)", pal[4]),
        (7.1, "3 corpus domains,\nwindow bands (Fig 5)", pal[4]),
        (9.15, "swap FFN → map:\nΔ perplexity (Fig 2)", pal[5]),
    ]
    for x, text, c in uses:
        ax.add_patch(
            FancyBboxPatch(
                (x, 0.35), 1.75, 0.8, boxstyle="round,pad=0.03,rounding_size=0.1", fc=(*c, 0.12), ec=c, lw=1.0
            )
        )
        ax.text(x + 0.875, 0.75, text, ha="center", va="center", fontsize=7.5)
    for x0, x1 in ((6.9, 3.9), (6.9, 5.9), (9.7, 7.9), (9.7, 10.0)):
        ax.annotate("", xy=(x1, 1.15), xytext=(x0, 1.55), arrowprops=dict(arrowstyle="-|>", color="0.5", lw=0.8))
    fig.suptitle("How linear is a transformer FFN block? The measurement", y=0.98, fontsize=11)
    if stem is not None:
        save(fig, stem)
    return fig


def fig2_r2_lin(table, stem: str | Path | None = None):
    """Figure 2, claim 1's figure: held-out R²_lin per block (error bars where the table has `r2_lo`/`r2_hi`: the
    window interval for the held-out R² of the fitted map), per-feature median beside it, and R²_lin without the
    windows' first positions where the table has `r2_ex_first`; one column per model, each with its legend below it."""
    sns.set_theme(style="whitegrid", context="paper")
    fig, axes, models, palette = per_model_axes(table, sharey="row")
    for k, model in enumerate(models):
        ax = axes[0][k]
        t = table[table["model"] == model].sort_values("block")
        c = palette[model]
        if has_band(t):
            err = yerr(t["r2_lin"], t["r2_lo"], t["r2_hi"])
            ax.errorbar(t["block"], t["r2_lin"], yerr=err, fmt="-o", color=c, ms=4, capsize=2, elinewidth=0.9,
                        label="global R²_lin (95 % window CI)")  # fmt: skip
        else:
            ax.plot(t["block"], t["r2_lin"], "-o", color=c, ms=4, label="global R²_lin")
        ax.plot(
            t["block"], t["r2_feature_median"], ":", marker="s", color=c, ms=3, alpha=0.6, label="per-feature median R²"
        )
        shown = ["r2_lin", "r2_feature_median"]
        if "r2_ex_first" in t and t["r2_ex_first"].notna().all():
            ax.plot(t["block"], t["r2_ex_first"], "--", marker="v", color="0.35", ms=3, lw=0.9,
                    label="R²_lin without each window's first token")  # fmt: skip
            shown.append("r2_ex_first")
        ax.set_title(model)
        ax.set_ylim(min(0.0, float(table[shown].min().min()) - 0.05), 1.02)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=8, integer=True))
        ax.set_xlabel("block")
        legend_below(ax)
    axes[0][0].set_ylabel("held-out R²_lin")
    fig.suptitle("Per-block linear recoverability (exact closed-form ceiling)", y=1.0)
    fig.tight_layout()
    if stem is not None:
        save(fig, stem)
    return fig


def fig2c_learning_curves(summary, stem: str | Path | None = None, ref_tokens: float = 16_384):
    """Figure 2c: held-out R²_lin against train tokens (`linrec.analyses.large_n.curve_summary`), one line per block
    coloured
    by depth, the large-n estimate R²∞ at the right; and per block, R²_lin at `ref_tokens` (the default capture's
    size), at the largest size and R²∞, with their hierarchical-bootstrap intervals. One row per model."""

    sns.set_theme(style="whitegrid", context="paper")
    models = list(dict.fromkeys(summary["model"]))
    fig, axes = plt.subplots(len(models), 2, figsize=(11, 3.3 * len(models)), squeeze=False)
    for r, model in enumerate(models):
        t = summary[summary["model"] == model]
        finite = t[np.isfinite(t["train_tokens"])]
        top = finite["train_tokens"].max()
        blocks = sorted(set(t["block"]))
        cmap = plt.get_cmap("viridis")
        ax = axes[r][0]
        x_inf = top * 2.5  # where the large-n estimate is drawn
        for b in blocks:
            c = cmap(b / max(1, len(blocks) - 1))
            tb = finite[finite["block"] == b].sort_values("train_tokens")
            ax.plot(tb["train_tokens"], tb["r2"], "-", color=c, lw=0.9, alpha=0.85)
            inf = t[(t["block"] == b) & ~np.isfinite(t["train_tokens"])]
            if len(inf) and np.isfinite(inf["r2"].iloc[0]):
                ax.plot([x_inf], inf["r2"], "o", color=c, ms=3)
        ax.set_xscale("log")
        ax.set_xlabel("train tokens (log); dots at the right: large-n estimate R²∞")
        ax.set_ylabel("held-out R²_lin (mean of seeds)")
        ax.set_title(f"{model}: one line per block (dark: early, light: late)", fontsize=9)
        bx = axes[r][1]
        for n, label, style, color in (
            (ref_tokens, f"{ref_tokens:.0f} tokens", "o", "0.55"),
            (top, f"{top:.0f} tokens", "s", "C0"),
            (np.inf, "large-n estimate R²∞", "D", "C3"),
        ):
            tn = t[t["train_tokens"] == n].sort_values("block")
            if tn.empty:
                continue
            err = yerr(tn["r2"], tn["r2_lo"], tn["r2_hi"])
            bx.errorbar(tn["block"], tn["r2"], yerr=err, fmt=style, ms=3, color=color, capsize=1.5, elinewidth=0.8,
                        label=label)  # fmt: skip
        bx.set_xlabel("block")
        bx.set_ylabel("held-out R²_lin (95 % CI: seeds × windows)")
        bx.xaxis.set_major_locator(MaxNLocator(nbins=8, integer=True))
        bx.legend(fontsize=7, loc="best")
    fig.suptitle("R²_lin against the number of train tokens (learning curves, 3 split seeds)", y=1.0)
    fig.tight_layout()
    if stem is not None:
        save(fig, stem)
    return fig


CORPUS_STYLES = [("-", "o"), ("--", "s"), (":", "^"), ("-.", "D")]


def fig5_corpora(table, stem: str | Path | None = None):
    """Figure 5: R²_lin per block on each corpus, one panel per model; each corpus has its own colour, line style and
    marker (the same in every panel), shaded band = the 95 % jackknife interval over held-out windows for the held-out
    R² of the fitted map (`r2_lo`, `r2_hi`). One legend, below the panels."""
    sns.set_theme(style="whitegrid", context="paper")
    corpora = list(dict.fromkeys(table["corpus"]))
    colours = dict(zip(corpora, sns.color_palette("Dark2", len(corpora))))
    styles = {c: CORPUS_STYLES[i % len(CORPUS_STYLES)] for i, c in enumerate(corpora)}
    fig, axes, models, _ = per_model_axes(table, height=3.4, sharey=True)
    lo = min(0.0, float(table["r2_lin"].min()) - 0.05)
    for ax, model in zip(axes[0], models):
        for corpus in corpora:
            t = table[(table["model"] == model) & (table["corpus"] == corpus)].sort_values("block")
            if t.empty:
                continue
            line, marker = styles[corpus]
            ax.plot(t["block"], t["r2_lin"], line, marker=marker, ms=2.8, color=colours[corpus], lw=1.3, label=corpus)
            if has_band(t):
                ax.fill_between(t["block"], t["r2_lo"], t["r2_hi"], color=colours[corpus], alpha=0.18, lw=0)
        ax.set_title(model)
        ax.set_xlabel("block")
        ax.set_ylim(lo, 1.02)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=8, integer=True))
    axes[0][0].set_ylabel("held-out R²_lin (band: 95 % window CI)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, title="corpus", loc="lower center", ncol=len(labels), fontsize=8, title_fontsize=8,
               frameon=False)  # fmt: skip
    fig.suptitle("Is the profile a property of the model or of the corpus?", y=1.0)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    if stem is not None:
        save(fig, stem)
    return fig
