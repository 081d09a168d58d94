"""Figures of notebook 06, the swap study: a block replaced by its affine map, one at a time (Figure 2's swap row) and
in the ways Figure 6 compares, and a share of its tokens routed to the map (Figure 9). Saved as PNG and PDF
(`linrec.outputs.plots.save`)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.ticker import MaxNLocator

from linrec.outputs.plots import legend_below, per_model_axes, save, yerr


def map_swaps(swap):
    """The plain affine swaps of a swap table (its `first` == "map" rows, or all rows of a table without variants)."""
    return swap[swap["first"] == "map"] if "first" in swap.columns else swap


def fig2_swap(swap, stem: str | Path | None = None, chosen: dict | None = None):
    """Figure 2's second row, claim 6a's figure: held-out ΔPPL of swapping each block alone for its affine map, with
    its paired interval over held-out windows (99 % skew-corrected jackknife; runs before issue 64: a 95 % interval);
    one column per model, symlog y (ΔPPL can
    be below 0), +1 perplexity dashed. `chosen` ({model: block}): the block claim 6a picked on the screening windows,
    outlined."""
    sns.set_theme(style="whitegrid", context="paper")
    s = map_swaps(swap)
    fig, axes, models, palette = per_model_axes(s, height=3.4, sharey="row")
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


def _ci_bars(ax, x, t, color, lo="delta_lo", hi="delta_hi", y="delta_ppl"):
    if lo in t and hi in t:
        ax.errorbar(x, t[y], yerr=yerr(t[y], t[lo], t[hi]), fmt="none", ecolor=color, elinewidth=0.7, alpha=0.7)


def _stacked_labels(ax, points, colour, right_edge: float, dy: float = 9.0):
    """Block labels beside `points` ([(x, y, text)]) that do not print over each other: points within 4 % of the
    axis's x range and a factor of 3 in y get labels stacked upwards. Near the right edge labels go to the left."""

    lo, hi = ax.get_xlim()
    span = hi - lo
    placed: list[tuple[float, float]] = []
    for x, y, text in sorted(points, key=lambda p: -p[1]):
        near = sum(abs(x - px) < 0.08 * max(span, 1e-9) and abs(np.log10(max(abs(y), 1e-3) / max(abs(py), 1e-3))) < 0.5
                   for px, py in placed)  # fmt: skip
        placed.append((x, y))
        right = x > right_edge
        ax.annotate(text, (x, y), xytext=(-4 if right else 4, 2 - dy * near), textcoords="offset points",
                    fontsize=7, color=colour, ha="right" if right else "left")  # fmt: skip


def fig6_swap(table, curves, stem: str | Path | None = None):
    """Swap study: (a) held-out ΔPPL of swapping each block alone against its R²_lin, colour = model, the three
    costliest blocks of each model labelled; (b) ΔPPL against parameters of the replacement for reduced-rank maps of
    one block per model (`curves`; the block is chosen on the screening windows), the FFN's own parameter count
    dashed; (c) with position variants in `table`, for each block that has them: ΔPPL of the map on every position,
    of the map on positions ≥ 1 with the FFN's own output at position 0, and with its train mean there. Intervals:
    the table's paired interval over held-out windows (99 % skew-corrected jackknife; runs before issue 64: a 95 %
    interval). Symlog y (ΔPPL can be below 0). One legend, below the
    panels."""

    sns.set_theme(style="whitegrid", context="paper")
    maps = map_swaps(table)
    models = list(dict.fromkeys(maps["model"]))
    palette = dict(zip(models, sns.color_palette("colorblind", len(models))))
    variants = "first" in table.columns and (table["first"] == "ffn").any()
    fig, axes = plt.subplots(1, 3 if variants else 2, figsize=(15.0 if variants else 10.5, 4.2))
    ax, bx = axes[0], axes[1]
    for m in models:
        t = maps[maps["model"] == m]
        _ci_bars(ax, t["r2_lin"], t, palette[m])
        ax.scatter(t["r2_lin"], t["delta_ppl"], s=26, color=palette[m], edgecolors="k", linewidths=0.3, label=m)
        top = t.nlargest(3, "delta_ppl")
        _stacked_labels(ax, list(zip(top["r2_lin"], top["delta_ppl"], top["block"].astype(int).astype(str))),
                        palette[m], right_edge=0.9)  # fmt: skip
    ax.set_yscale("symlog", linthresh=0.1)
    ax.axhline(1.0, color="0.4", lw=0.8, ls="--")
    ax.set_xlabel("R²_lin of the block (held-out)")
    ax.set_ylabel("held-out ΔPPL, block swapped alone (symlog)")
    ax.set_title("(a) does a high R²_lin make a block safe to swap?", fontsize=9)
    ax.margins(x=0.06, y=0.12)
    shown = []
    level = {m: curves[curves["model"] == m]["delta_ppl"].median() for m in models}
    for m in models:
        c = curves[curves["model"] == m].sort_values("params")
        if c.empty:
            continue
        shown.append(f"{m} block {int(c['block'].iloc[0])}")
        _ci_bars(bx, c["params"], c, palette[m])
        bx.plot(c["params"], c["delta_ppl"], "-o", color=palette[m], ms=4)
        # labels above the higher model's curve and below the others'; of two points within a factor 2 in
        # parameters, the first is labelled to its left, the second to its right, so they do not print over each other
        above = level[m] >= max(level.values())
        p = c["params"].to_numpy()
        for i, (_, r) in enumerate(c.iterrows()):
            left = i + 1 < len(p) and p[i + 1] / p[i] < 2
            bx.annotate("dense" if not r["factored"] else f"r={int(r['rank'])}", (r["params"], r["delta_ppl"]),
                        xytext=(-4 if left else 4, 5 if above else -10), textcoords="offset points", fontsize=6.5,
                        color=palette[m], ha="right" if left else "left")  # fmt: skip
        bx.axvline(c["params_ffn"].iloc[0], color=palette[m], lw=0.9, ls="--")
    bx.set_xscale("log")
    bx.set_yscale("symlog", linthresh=0.1)
    bx.axhline(1.0, color="0.4", lw=0.8, ls="--")
    bx.set_xlabel("parameters of the replacement (vertical dashed: the FFN's)")
    bx.set_ylabel("held-out ΔPPL")
    bx.set_title("(b) reduced-rank maps: " + ("; ".join(shown) or "none run"), fontsize=9)
    bx.margins(y=0.15)
    if variants:
        cx = axes[2]
        kinds = [("map", "map on every position", 1.0), ("ffn", "FFN's output at position 0", 0.6),
                 ("mean", "train mean at position 0", 0.3)]  # fmt: skip
        has_ffn = table["first"] == "ffn"
        groups = [(m, b) for m in models for b in sorted(table[has_ffn & (table["model"] == m)]["block"])]
        width = 0.8 / len(kinds)
        for j, (first, label, alpha) in enumerate(kinds):
            rows = [table[(table["model"] == m) & (table["block"] == b) & (table["first"] == first)] for m, b in groups]
            x = np.arange(len(groups)) + (j - 1) * width
            y = np.array([r["delta_ppl"].iloc[0] if len(r) else np.nan for r in rows])
            cols = [palette[m] for m, _ in groups]
            cx.bar(x, y, width=width * 0.95, color=cols, alpha=alpha, edgecolor="k", lw=0.4,
                   hatch=["", "//", ".."][j], label=label)  # fmt: skip
            lo = np.array([r["delta_lo"].iloc[0] if len(r) else np.nan for r in rows])
            hi = np.array([r["delta_hi"].iloc[0] if len(r) else np.nan for r in rows])
            cx.errorbar(x, y, yerr=yerr(y, lo, hi), fmt="none", ecolor="k", elinewidth=0.7, capsize=1.5)
        cx.set_xticks(np.arange(len(groups)), [f"{m}\nblock {b}" for m, b in groups], fontsize=7)
        cx.set_yscale("symlog", linthresh=1.0)
        cx.axhline(1.0, color="0.4", lw=0.8, ls="--")
        cx.set_ylabel("held-out ΔPPL (symlog)")
        cx.set_title("(c) first-token blocks: how much of the cost sits at position 0", fontsize=9)
        cx.legend(fontsize=7, loc="upper right", title="swap", title_fontsize=7)
        cx.set_ylim(top=cx.get_ylim()[1] * 8)  # room for the legend above the bars
    handles = [plt.Line2D([], [], marker="o", ls="", color=palette[m], markeredgecolor="k", markeredgewidth=0.3,
                          label=m) for m in models]  # fmt: skip
    handles.append(plt.Line2D([], [], color="0.4", lw=0.8, ls="--", label="+1 perplexity"))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    if stem is not None:
        save(fig, stem)
    return fig


def fig9_routing(curve, routable, r2, stem: str | Path | None = None, identity=None, split_auc=None, heal=None):
    """Per-token routing (`linrec.analyses.routing`). Top row: per model, held-out ΔPPL against the share of the block's
    tokens routed to its closed-form map (realised on the held-out windows, a 0.05 grid), one line per routed block
    coloured by its R²_lin, with 95 % paired-jackknife intervals and the +1 % line of base perplexity; last panel,
    each block's largest share within +1 % against its R²_lin, with its interval (one-sided tests over windows).
    `r2`: the ceiling table (model, block, r2_lin). Symlog y (ΔPPL can be below 0). Bottom row, where the tables are
    given: the anchor's quantity against the one linrec reported before (`identity`: per block and corpus pair, the
    per-type need r against the per-type gate-share r, with their intervals), the gates on the token part, the
    context part and the whole input (`split_auc`: held-out AUC with jackknife intervals), and healing (`heal`: ΔPPL
    after the fine-tune against the fine-tuned control, per k and mode)."""

    sns.set_theme(style="whitegrid", context="paper")
    models = list(dict.fromkeys(curve["model"]))
    r2_of = {(m, int(b)): v for m, b, v in zip(r2["model"], r2["block"], r2["r2_lin"])}
    cmap, norm = plt.get_cmap("viridis"), plt.Normalize(0.0, 1.0)
    lower = [t for t in (identity, split_auc, heal) if t is not None and len(t)]
    n_cols = max(len(models) + 1, len(lower))
    fig, axes = plt.subplots(1 + bool(lower), n_cols, figsize=(5.2 * n_cols, 4.2 * (1 + bool(lower))), squeeze=False,
                             gridspec_kw={"hspace": 0.5} if lower else None)  # fmt: skip
    for i, (ax, m) in enumerate(zip(axes[0], models)):
        t = curve[curve["model"] == m]
        for b, c in t.groupby("block"):
            c = c.sort_values("share")
            colour = cmap(norm(r2_of.get((m, int(b)), np.nan)))
            _ci_bars(ax, c["share_heldout"], c, colour)
            ax.plot(c["share_heldout"], c["delta_ppl"], "-o", color=colour, ms=2.5, lw=1.0)
            last = c.iloc[-1]
            ax.annotate(str(int(b)), (last["share_heldout"], last["delta_ppl"]), xytext=(3, 0),
                        textcoords="offset points", fontsize=6.5, color=colour, va="center")  # fmt: skip
        ax.axhline(0.01 * t["ppl_base"].iloc[0], color="0.3", lw=0.9, ls="--", label="+1 % of base perplexity")
        ax.set_yscale("symlog", linthresh=0.1)
        ax.set_xlabel("share of tokens routed to the map (held-out)")
        ax.set_ylabel("held-out ΔPPL (symlog)" if i == 0 else "")
        ax.set_title(f"{m}: gate target '{t['target'].iloc[0]}'", fontsize=9)
    sx = axes[0][len(models)]
    for ax in axes[0][len(models) + 1 :]:  # one model and three bottom panels: the top row has one to spare
        ax.set_visible(False)
    palette = dict(zip(models, sns.color_palette("colorblind", len(models))))
    for m in models:
        t = routable[routable["model"] == m]
        x = [r2_of.get((m, int(b)), np.nan) for b in t["block"]]
        sx.errorbar(x, t["routable_pct1"], yerr=yerr(t["routable_pct1"], t["routable_pct1_lo"], t["routable_pct1_hi"]),
                    fmt="o", color=palette[m], ms=4, elinewidth=0.7, label=m)  # fmt: skip
    sx.set_xlabel("R²_lin of the block (held-out)")
    sx.set_ylabel("largest share routed within +1 % perplexity")
    sx.set_ylim(-0.05, 1.05)
    sx.set_title("does R²_lin tell how much of a block can go linear?", fontsize=9)
    sx.legend(fontsize=7, loc="best")
    fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), ax=axes[0][: len(models)].tolist(), shrink=0.8,
                 label="R²_lin of the block")  # fmt: skip
    if lower:
        _fig9_lower(axes[1], identity, split_auc, heal, palette)
    if stem is not None:
        save(fig, stem)
    return fig


def _fig9_lower(axes, identity, split_auc, heal, palette):
    """Figure 9's bottom row: token identity (two quantities), token against context, healing."""

    for ax in axes:
        ax.set_visible(False)
    at = iter(axes)
    if identity is not None and len(identity):
        ax = next(at)
        ax.set_visible(True)
        for m, t in identity.groupby("model", sort=False):
            colour = palette.get(m, "0.3")
            ax.errorbar(t["r"], t["r_need"], xerr=yerr(t["r"], t["r_lo"], t["r_hi"]),
                        yerr=yerr(t["r_need"], t["r_need_lo"], t["r_need_hi"]), fmt="o", ms=3.5, elinewidth=0.6,
                        color=colour, label=m)  # fmt: skip
        ax.plot([-1, 1], [-1, 1], color="0.6", lw=0.7, ls=":")
        ax.axhspan(-0.05, 0.05, color="0.85", zorder=0, label="the anchor: r < 0.05")
        ax.set_xlim(-0.2, 1.02)
        ax.set_ylim(-0.4, 1.02)
        ax.set_xlabel("per-type share the gate routes: r across corpora (reported before)")
        ax.set_ylabel("per-type mean need: r across corpora (the anchor's)")
        ax.set_title("token identity: which quantity? (a block × corpus pair each)", fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
    if split_auc is not None and len(split_auc):
        ax = next(at)
        ax.set_visible(True)
        parts = ["full", "context", "token"]
        colours = dict(zip(parts, sns.color_palette("deep", 3)))
        t = split_auc.assign(key=split_auc["model"].astype(str) + " " + split_auc["block"].astype(str))
        keys = list(dict.fromkeys(t["key"]))
        for j, p in enumerate(parts):
            s = t[t["part"] == p].set_index("key").loc[keys]
            x = np.arange(len(keys)) + (j - 1) * 0.22
            ax.errorbar(
                x,
                s["auc"],
                yerr=yerr(s["auc"], s["auc_lo"], s["auc_hi"]),
                fmt="o",
                ms=3.5,
                elinewidth=0.7,
                color=colours[p],
                label=f"gate on the {p if p != 'full' else 'whole'} input",
            )
        ax.axhline(0.5, color="0.5", lw=0.8, ls="--")
        ax.set_xticks(np.arange(len(keys)), keys, rotation=60, fontsize=6.5, ha="right")
        ax.set_ylabel("held-out AUC for 'the map is good enough here'")
        ax.set_title("token against context (per routed block)", fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
    if heal is not None and len(heal):
        ax = next(at)
        ax.set_visible(True)
        h = heal[heal["k"] > 0]
        styles = {"all": "-o", "maps": "--s"}
        extra = dict(zip(dict.fromkeys(h["model"]), sns.color_palette("tab10")))
        for (m, mode), t in h.groupby(["model", "mode"], sort=False):
            t = t.sort_values("k")
            colour = palette.get(m) or extra[m]
            rel = lambda v, c=t["ppl_control"]: 100 * v / c  # noqa: E731
            ax.errorbar(
                t["k"] + (0.06 if mode == "maps" else 0),
                rel(t["delta_after"]),
                yerr=yerr(rel(t["delta_after"]), rel(t["delta_after_lo"]), rel(t["delta_after_hi"])),
                fmt=styles.get(mode, "-o"),
                ms=3.5,
                elinewidth=0.7,
                color=colour,
                label=f"{m} ({mode})",
            )
            ax.plot(t["k"], rel(t["delta_before"]), ":", color=colour, lw=0.8)
        ax.axhline(1.0, color="0.3", lw=0.9, ls="--")
        ax.axhline(0.0, color="0.6", lw=0.7)
        ax.set_xlabel("blocks swapped (k, chosen on screening windows)")
        ax.set_ylabel("ΔPPL, % of the control's perplexity (symlog)")
        ax.set_yscale("symlog", linthresh=1.0)
        ax.set_title("healing: against the same fine-tune unswapped (dotted: before it)", fontsize=9)
        ax.legend(fontsize=6, loc="best")
