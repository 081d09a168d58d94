"""Figures, named after the paper's numbering; each saved as PNG and PDF, and shown where it is drawn.

This module draws figures 1, 2 (its swap row included), 3 and 5 and holds the helpers every figure shares (`save`,
the interval bars and legends); figure 4 and its companion (the regimes) are in `linrec.outputs.plots_regimes`, the
swap study, the controls and training from scratch (figures 6–9) in `linrec.outputs.plots_interventions`.

No backend is chosen here: in a notebook kernel matplotlib's inline backend shows every figure a
cell draws as that cell's image output (the runner, `linrec.app.notebooks`, starts its kernels with it);
a script or test without a display gets matplotlib's own headless default.
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import offset_copy

from linrec.analyses.pitfall import REACHED, steps_to_reach
from linrec.base.files import atomic_file
from linrec.outputs.labels import declutter

# Written into the files instead of what changes from run to run: a PDF's CreationDate (left out) and the
# software line, so a rerun that draws the same figure writes the same bytes.
_METADATA = {".pdf": {"CreationDate": None}, ".png": {}}


DPI = 150  # the PNGs' resolution: the HTML report shows each at its drawn size, DPI pixels to the inch


def save(fig, stem: str | Path) -> list[Path]:
    """Write `fig` to `stem`.png (DPI) and `stem`.pdf, without a creation date, once its point labels are placed
    clear of the data and of each other (`declutter`); returns the paths."""
    declutter(fig)
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".png"), stem.with_suffix(".pdf")]
    for p in paths:
        with atomic_file(p) as tmp:  # whole or not at all; a full disk is one line naming the file
            fig.savefig(tmp, format=p.suffix[1:], dpi=DPI, bbox_inches="tight", metadata=_METADATA[p.suffix])
    return paths


def has_band(t, lo: str = "r2_lo", hi: str = "r2_hi") -> bool:
    return {lo, hi} <= set(t.columns) and bool(t[lo].notna().all() and t[hi].notna().all())


def _per_model_axes(table, nrows: int = 1, height: float = 3.2, col: str = "block", **kw):
    """One column per model, each as wide as its model has blocks; returns (fig, axes, models, palette)."""
    models = list(dict.fromkeys(table["model"]))
    palette = dict(zip(models, sns.color_palette("colorblind", len(models))))
    widths = [max(3.0, 0.16 * table[table["model"] == m][col].nunique()) for m in models]
    fig, axes = plt.subplots(
        nrows,
        len(models),
        figsize=(sum(widths) + 0.5, height * nrows),
        gridspec_kw={"width_ratios": widths},
        squeeze=False,
        **kw,
    )
    return fig, axes, models, palette


def yerr(y, lo, hi) -> np.ndarray:
    """Error-bar lengths below and above `y` for the interval [lo, hi], clipped at 0: a percentile bootstrap interval
    need not contain its point estimate (a skewed statistic on few windows), and matplotlib refuses negative lengths.
    The interval is drawn from the estimate to whichever end lies beyond it."""
    y, lo, hi = (np.asarray(v, dtype=float) for v in (y, lo, hi))
    return np.clip(np.vstack([y - lo, hi - y]), 0.0, None)


def figures_at_drawn_size(body: str, folder: Path) -> str:
    """Each figure of the HTML report at the size it was drawn (its PNG's pixels at `linrec.outputs.plots.DPI` to
    the inch, 96 CSS pixels), a wide one scrolled sideways rather than shrunk to the text's width (its labels became
    unreadable at 1,184 px), and linked to the full-resolution file."""

    def sized(m: re.Match) -> str:
        src, alt = m[1], m[2]
        try:
            head = (folder / src).read_bytes()[:24]
            width = int.from_bytes(head[16:20], "big") if head[:8] == b"\x89PNG\r\n\x1a\n" else 0
        except OSError:
            width = 0
        size = f' width="{round(width * 96 / DPI)}"' if width else ""
        return f'<div class="figure"><a href="{src}"><img src="{src}" alt="{alt}"{size} /></a></div>'

    return re.sub(r'<p><img src="([^"]+)" alt="([^"]*)" /></p>', sized, body)


LEGEND_DROP = 34  # points from an axes' bottom edge to the top of a legend below it: tick labels and x label clear


def legend_below(ax, ncol: int = 1, **kw):
    """The axes' legend under its x label, where it hides no data. Placed a fixed number of points below the axes
    (LEGEND_DROP), not a fraction of their height: on a short panel a fraction put it over the x label."""

    below = offset_copy(ax.transAxes, fig=ax.figure, y=-LEGEND_DROP, units="points")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=below, fontsize=7, ncol=ncol,
              frameon=False, **kw)  # fmt: skip


def fig2_r2_lin(table, stem: str | Path | None = None):
    """Figure 2, claim 1's figure: held-out R²_lin per block (error bars where the table has `r2_lo`/`r2_hi`: the
    window interval for the held-out R² of the fitted map), per-feature median beside it, and R²_lin without the
    windows' first positions where the table has `r2_ex_first`; one column per model, each with its legend below it."""
    sns.set_theme(style="whitegrid", context="paper")
    fig, axes, models, palette = _per_model_axes(table, sharey="row")
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


def fig2_swap(swap, stem: str | Path | None = None, chosen: dict | None = None):
    """Figure 2's second row, claim 6a's figure: held-out ΔPPL of swapping each block alone for its affine map, with
    its paired interval over held-out windows (99 % skew-corrected jackknife; runs before issue 64: a 95 % interval);
    one column per model, symlog y (ΔPPL can
    be below 0), +1 perplexity dashed. `chosen` ({model: block}): the block claim 6a picked on the screening windows,
    outlined."""
    sns.set_theme(style="whitegrid", context="paper")
    s = map_swaps(swap)
    fig, axes, models, palette = _per_model_axes(s, height=3.4, sharey="row")
    for k, model in enumerate(models):
        bx = axes[0][k]
        t = s[s["model"] == model].sort_values("block")
        bx.bar(t["block"], t["delta_ppl"], color=palette[model], alpha=0.8, width=0.7)
        if "delta_lo" in t:
            err = yerr(t["delta_ppl"], t["delta_lo"], t["delta_hi"])
            bx.errorbar(t["block"], t["delta_ppl"], yerr=err, fmt="none", ecolor="k", elinewidth=0.7, capsize=1.5)
        pick = (chosen or {}).get(model)
        if pick is not None and (t["block"] == pick).any():
            r = t[t["block"] == pick].iloc[0]
            bx.bar([pick], [r["delta_ppl"]], width=0.7, fill=False, edgecolor="k", lw=1.4,
                   label=f"block {pick}: lowest ΔPPL on the screening windows")  # fmt: skip
            legend_below(bx)
        bx.set_yscale("symlog", linthresh=0.1)
        base = t["ppl_base"].iloc[0] if len(t) else float("nan")
        bx.set_title(f"{model} (base perplexity {base:.2f})")
        bx.axhline(1.0, color="0.4", lw=0.8, ls="--")
        bx.axhline(0.0, color="0.2", lw=0.6)
        bx.set_xlabel("block")
        bx.xaxis.set_major_locator(MaxNLocator(nbins=8, integer=True))
    axes[0][0].set_ylabel("held-out ΔPPL, block swapped alone\n(its interval; symlog scale; dashed: +1)")
    fig.suptitle("The cost of swapping one block for its closed-form affine map", y=1.0)
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
    fig, axes, models, _ = _per_model_axes(table, height=3.4, sharey=True)
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


def fig3_bilinear_gain(table, summary, stem: str | Path | None = None):
    """Figure 3: residual nonlinearity (1 − R²_lin) vs the rank-k bilinear probe's gain, per block; the title gives
    each model's Pearson r with its 95 % CI (`summary`: `linrec.claims.probe.probe_summary`)."""
    sns.set_theme(style="whitegrid", context="paper")
    t = table.assign(nonlinearity=1 - table["r2_lin_rows"])
    fig, ax = plt.subplots(figsize=(5.6, 3.9))
    sns.scatterplot(data=t, x="nonlinearity", y="gain", hue="model", style="model", palette="colorblind", s=40, ax=ax)
    ax.axhline(0, color="0.5", lw=0.8)
    ax.set_xlabel("residual nonlinearity 1 − R²_lin (held-out rows)")
    ax.set_ylabel("bilinear gain R²_poly − R²_lin")
    lines = [
        f"{r['model']}: r = {r['pearson_r']:.2f} [{r['ci_lo']:.2f}, {r['ci_hi']:.2f}], n = {int(r['n_blocks'])}"
        for r in summary.to_dict("records")
    ]
    ax.set_title("\n".join(lines), fontsize=8)
    if stem is not None:
        save(fig, stem)
    return fig


SHORTFALL_CLIP = (1e-6, 10.0)  # fig3b's y range: a shortfall outside it is drawn at the edge, as an open triangle


def fig3b_trained_pitfall(table, stem: str | Path | None = None):
    """Trained affine baselines (Adam, SGD) against the closed-form ceiling on the same rows, vs κ(Gram): the shortfall
    ceiling − trained R² per block, colour = model, marker = optimizer. Shortfalls outside `SHORTFALL_CLIP` (a
    baseline that diverged far below R² = 0, or one level with the ceiling) are drawn at the edge as open triangles
    and counted in the legend. Legend outside the axes, right."""

    sns.set_theme(style="whitegrid", context="paper")
    models = list(dict.fromkeys(table["model"]))
    palette = dict(zip(models, sns.color_palette("colorblind", len(models))))
    low, high = SHORTFALL_CLIP
    fig, ax = plt.subplots(figsize=(6.6, 3.6))
    n_clipped = {"upper": 0, "lower": 0}
    for opt, marker in (("adam", "o"), ("sgd", "X")):
        for m in models:
            t = table[table["model"] == m]
            short = (t["r2_ceiling_rows"] - t[f"r2_trained_{opt}"]).to_numpy(float)
            inside = (short >= low) & (short <= high)
            ax.scatter(t["cond_gram"][inside], short[inside], s=30, marker=marker, color=palette[m], lw=0.3,
                       edgecolors="w")  # fmt: skip
            for side, y, mk, mask in (("upper", high, "^", short > high), ("lower", low, "v", short < low)):
                if mask.any():
                    ax.scatter(t["cond_gram"][mask], np.full(mask.sum(), y), s=34, marker=mk, facecolors="none",
                               edgecolors=palette[m], lw=1.0)  # fmt: skip
                    n_clipped[side] += int(mask.sum())
    handles = [plt.Line2D([], [], marker="s", ls="", color=palette[m], label=m) for m in models]
    handles += [plt.Line2D([], [], marker=mk, ls="", color="0.3", label=o) for o, mk in (("Adam", "o"), ("SGD", "X"))]
    for side, mk, text in (("upper", "^", f"shortfall > {high:g}"), ("lower", "v", f"shortfall < {low:g}")):
        if n_clipped[side]:
            handles.append(plt.Line2D([], [], marker=mk, ls="", mfc="none", color="0.3",
                                      label=f"{text}, drawn at the edge ({n_clipped[side]})"))  # fmt: skip
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=7, frameon=False)
    ax.set_xscale("log")
    ax.set_yscale("log")
    drawn = [v for c in ax.collections for v in c.get_offsets()[:, 1]]
    ax.set_ylim(max(low, min(drawn, default=low)) / 2, high * 2)
    ax.set_xlabel("κ of the input Gram matrix (train)")
    ax.set_ylabel("ceiling − trained R² (held-out)")
    ax.set_title("Trained linear baselines fall short of the closed-form ceiling", fontsize=9)
    fig.tight_layout()
    if stem is not None:
        save(fig, stem)
    return fig


def fig3c_pitfall_mechanism(budget, dose, stem: str | Path | None = None):
    """Claim 7b. (a) Held-out shortfall (ceiling − R², on the budget curve's output features) of tuned Adam, tuned
    SGD and gradient descent from the Gram spectrum against the number of steps, on each model's best- and
    worst-conditioned mechanism blocks; (b) the steps the tuned baselines need to come within REACHED of the
    ceiling on one block's inputs re-expressed to each κ (the ceiling unchanged; open markers: not by the dose's
    longest budget). The ceiling is the ridge-tuned closed form (`linrec.analyses.pitfall.ridge_ceiling`)."""
    sns.set_theme(style="whitegrid", context="paper")
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10.5, 4.0))
    models = list(dict.fromkeys(budget["model"]))
    palette = dict(zip(models, sns.color_palette("colorblind", len(models))))
    dashes = {"adam": "-", "sgd": "--", "gd": ":"}
    lin = 0.01  # symlog: linear within ±0.01, so a fit that beats the ceiling held out (negative shortfall) shows
    for (m, b), g in budget[budget["chosen"]].groupby(["model", "block"], sort=False):
        kappa = g["cond_gram"].iloc[0]
        for opt, c in g.groupby("optimizer", sort=False):
            c = c.sort_values("step")
            short = (c["ceiling"] - c["r2_test"]).clip(upper=10)
            ax.plot(c["step"], short, dashes[opt], color=palette[m], lw=1.2, alpha=0.85)
        last = g[g["optimizer"] == "adam"].sort_values("step").iloc[-1]
        ax.annotate(f"{b} (κ {kappa:.0e})", (last["step"], min(last["ceiling"] - last["r2_test"], 10)),
                    xytext=(3, 0), textcoords="offset points", fontsize=6, color=palette[m])  # fmt: skip
    ax.axhline(0.01, color="0.4", lw=0.8)
    ax.axhline(0.0, color="0.2", lw=0.6, ls="-.")
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=lin)
    ax.set_xlabel("steps (batch 256)")
    ax.set_ylabel(f"ceiling − held-out R² (symlog, linear in ±{lin:g})")
    ax.set_title("(a) the budget curve on the best- and worst-conditioned blocks", fontsize=8)
    handles = [plt.Line2D([], [], color=palette[m], lw=2) for m in models]
    handles += [plt.Line2D([], [], color="0.3", ls=ls, lw=1.2) for ls in dashes.values()]
    names = [*models, "tuned Adam", "tuned SGD", "GD from the spectrum"]
    legend_below(ax, ncol=2, handles=handles, labels=names, handlelength=3.5)

    cap = int(dose["step"].max()) if len(dose) else 0
    for (m, b), g in dose.groupby(["model", "block"], sort=False):
        for opt, c in g.groupby("optimizer", sort=False):
            ks = np.array(sorted(c["kappa"].unique()))
            need = np.array([steps_to_reach(k, float(k["ceiling"].iloc[0]), REACHED) for _, k in c.groupby("kappa")])
            shown = np.minimum(need, cap * 2.0)  # not reached within the budget: drawn at 2× it, open markers
            bx.plot(ks, shown, dashes[opt], color=palette.get(m, "k"), label=f"{m} block {b}, {opt}")
            out = ~np.isfinite(need)
            bx.plot(ks[out], shown[out], "o", mfc="none", ms=5, color=palette.get(m, "k"))
            bx.plot(ks[~out], shown[~out], "o", ms=3, color=palette.get(m, "k"))
    bx.axhline(cap, color="0.4", lw=0.8)
    if len(dose):
        bx.set_ylim(dose["step"].min() / 1.5, cap * 3.0)
    bx.set_xscale("log")
    bx.set_yscale("log")
    bx.set_xlabel("κ of the re-expressed inputs' covariance (the ceiling unchanged)")
    bx.set_ylabel(f"steps to within {REACHED:g} of the ceiling (open: not by {cap})")
    bx.set_title("(b) dose–response by construction: tuned learning rate per budget", fontsize=8)
    legend_below(bx, ncol=2, handlelength=3.5)  # below: over the axes it hid Gemma's curves; long handles: -- vs —
    fig.tight_layout()
    if stem is not None:
        save(fig, stem)
    return fig


def map_swaps(swap):
    """The plain affine swaps of a swap table (its `first` == "map" rows, or all rows of a table without variants)."""
    return swap[swap["first"] == "map"] if "first" in swap.columns else swap


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
