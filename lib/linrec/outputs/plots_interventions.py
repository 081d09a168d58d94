"""Figures 6–9, the studies that change the model or its inputs: the swap study (a block replaced by its affine
map, Figure 6; a share of its tokens routed to the map, Figure 9), the controls (random-init twins, Gaussian
inputs, cross feeding) and the same architecture trained from scratch.
Each is saved as PNG and PDF (`linrec.outputs.plots.save`, which also holds the helpers they share with figures 1–5).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.ticker import MaxNLocator

from linrec.outputs.plots import has_band, legend_below, map_swaps, save, yerr


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


def fig7_controls(profiles, inputs, stem: str | Path | None = None):
    """Controls: (top) R²_lin per block of each trained model beside its random-init twins;
    (bottom) each trained FFN re-scored on its own inputs (refit on the controls' row sample, so it need not equal
    the top row's R²_lin from every row), on Gaussian inputs with the same first two moments, and on the next
    block's inputs. One column per model; each row's legend at its right, outside the axes."""
    sns.set_theme(style="whitegrid", context="paper")
    models = list(dict.fromkeys(profiles["model"]))
    widths = [
        max(3.0, 0.16 * profiles[(profiles["model"] == m) & (profiles["weights"] == "trained")].shape[0])
        for m in models
    ]
    fig, axes = plt.subplots(
        2,
        len(models),
        figsize=(sum(widths) + 0.6, 6.0),
        sharey="row",
        squeeze=False,
        gridspec_kw={"width_ratios": widths},
    )
    colours = sns.color_palette("colorblind", 4)
    # each random-init twin its own line: seeds drawn alike could not be told apart (issue 50)
    twins = [w for w in dict.fromkeys(profiles["weights"]) if w != "trained"]
    styles = {w: (("--", "s", "0.45"), (":", "^", "0.6"), ("-.", "v", "0.3"), ((0, (5, 1, 1, 1)), "d", "0.7"))[i % 4]
              for i, w in enumerate(twins)}  # fmt: skip
    for k, model in enumerate(models):
        ax, bx = axes[0][k], axes[1][k]
        p = profiles[profiles["model"] == model]
        for w, t in p.groupby("weights", sort=False):
            trained = w == "trained"
            t = t.sort_values("block")
            ls, marker, grey = ("-", "o", colours[0]) if trained else styles[w]
            ax.plot(t["block"], t["r2_lin"], linestyle=ls, marker=marker, color=grey, ms=3.5 if trained else 2.5,
                    lw=1.6 if trained else 1.0, label=w)  # fmt: skip
            if {"r2_lo", "r2_hi"} <= set(t.columns) and t["r2_lo"].notna().all():
                ax.fill_between(t["block"], t["r2_lo"], t["r2_hi"], color=grey, alpha=0.2, lw=0)
        ax.set_title(model)
        c = inputs[inputs["model"] == model].sort_values("block")
        rows = (
            f"{int(c['n_train'].iloc[0] + c['n_test'].iloc[0]):,} sampled rows"
            if {"n_train", "n_test"} <= set(c.columns) and len(c)
            else "sampled rows"
        )
        bx.plot(c["block"], c["r2_own"], "-o", color=colours[0], ms=3.5, label=f"own inputs, refit on {rows}")
        bx.plot(c["block"], c["r2_gaussian"], "-s", color=colours[1], ms=3, label="Gaussian, same mean & covariance")
        bx.plot(c["block"], c["r2_other_block"], "-^", color=colours[2], ms=3, label="inputs of the next block")
        bx.set_xlabel("block")
        for a in (ax, bx):
            a.xaxis.set_major_locator(MaxNLocator(nbins=8, integer=True))
    for row, title in ((axes[0], "FFN weights"), (axes[1], "inputs the trained FFN is scored on")):
        seen = {}
        for a in row:
            for h, lab in zip(*a.get_legend_handles_labels(), strict=True):
                seen.setdefault(lab, h)
        row[-1].legend(seen.values(), seen.keys(), title=title, loc="upper left", bbox_to_anchor=(1.03, 1.0),
                       fontsize=7, title_fontsize=7, frameon=False)  # fmt: skip
    axes[0][0].set_ylabel("held-out R²_lin")
    axes[1][0].set_ylabel("R² of the trained FFN's best affine map")
    fig.suptitle("Is linear recoverability learned? Random-init twins (top) and input controls (bottom)", y=1.0)
    fig.tight_layout()
    if stem is not None:
        save(fig, stem)
    return fig


def fig7b_inputs_or_weights(nulls, cross=None, blocks=None, decomposed=None, stem: str | Path | None = None):
    """Claim 2b, one column per model, every FFN with its block's norm gain folded in. (top) Per block, on the block's
    own normalised inputs: the trained FFN, and the spread (min–max) of the random-init and shuffled null ensembles;
    filled markers: blocks standing out from both nulls (`blocks`, Benjamini–Hochberg). (middle, with `blocks`) the
    trained FFN's z-score against each ensemble, symlog axis. (bottom, with `cross`) R² of FFN i (rows) on the inputs
    of block j (columns) within the band, on a sequential scale; the title gives the decomposition's shares
    (`decomposed`)."""
    sns.set_theme(style="whitegrid", context="paper")
    models = list(dict.fromkeys(nulls["model"]))
    panels = ["nulls"] + (["z"] if blocks is not None else []) + (["cross"] if cross is not None else [])
    fig, axes = plt.subplots(
        len(panels), len(models), figsize=(4.8 * len(models), 3.2 * len(panels) + 0.5), squeeze=False
    )
    colours = sns.color_palette("colorblind", 4)
    kinds = {"random init": ("random-init FFNs", colours[1]), "shuffled": ("trained FFN, entries shuffled", colours[2])}
    dec = None if decomposed is None else decomposed.set_index("model")
    for k, model in enumerate(models):
        t = nulls[nulls["model"] == model]
        b = None if blocks is None else blocks[blocks["model"] == model].set_index("block").sort_index()
        ax = axes[panels.index("nulls")][k]
        for kind, (label, c) in kinds.items():
            g = t[t["ffn"] == kind].groupby("block")["r2"]
            if len(g):
                lo, hi = g.min(), g.max()
                ax.fill_between(lo.index, lo, hi, color=c, alpha=0.35, lw=0, label=f"{label} (min–max)")
                ax.plot(g.mean().index, g.mean(), "--", color=c, lw=1.0)
        tr = t[t["ffn"] == "trained"].sort_values("block")
        ax.plot(tr["block"], tr["r2"], "-", color=colours[0], lw=1.4, label="trained FFN")
        if b is not None:
            out = b["stands_out"].reindex(tr["block"]).fillna(False).to_numpy(bool)
            ax.plot(tr["block"][out], tr["r2"][out], "o", color=colours[0], ms=4, label="stands out from both")
            ax.plot(tr["block"][~out], tr["r2"][~out], "o", mfc="white", color=colours[0], ms=4)
        ax.set_title(f"{model}: FFNs on the block's inputs", fontsize=9)
        ax.set_xlabel("block")
        ax.set_ylabel("held-out R² of the best affine map")
        ax.xaxis.set_major_locator(MaxNLocator(nbins=8, integer=True))
        if "z" in panels and b is not None:
            zx = axes[panels.index("z")][k]
            for name, (label, c) in zip(("init", "shuffled"), kinds.values(), strict=True):
                zx.plot(b.index, b[f"z_{name}"], "-o", color=c, ms=3, lw=1.0, label=f"vs {label}")
            zx.axhline(0, color="0.3", lw=0.8)
            zx.set_yscale("symlog", linthresh=2)
            zx.set_xlabel("block")
            zx.set_ylabel("z of the trained FFN")
            zx.xaxis.set_major_locator(MaxNLocator(nbins=8, integer=True))
        if "cross" in panels:
            cx = axes[panels.index("cross")][k]
            m = cross[cross["model"] == model].pivot(index="ffn_block", columns="input_block", values="r2")
            step = 1 if len(m) <= 10 else 5  # every block labelled on a small model
            sns.heatmap(m, cmap="viridis", ax=cx, cbar_kws={"label": "R²"}, xticklabels=step, yticklabels=step)
            cx.grid(False)
            cx.set_xlabel("inputs of block j")
            cx.set_ylabel("FFN of block i")
            title = "R²(FFN i on inputs of block j)"
            if dec is not None and model in dec.index:
                d = dec.loc[model]
                title += (f"\nshares: weights {d['share_weights']:.2f} [{d['share_weights_lo']:.2f}, "
                          f"{d['share_weights_hi']:.2f}], inputs {d['share_inputs']:.2f} [{d['share_inputs_lo']:.2f}, "
                          f"{d['share_inputs_hi']:.2f}]")  # fmt: skip
            cx.set_title(title, fontsize=8)
    handles = {}
    for row in axes:
        for a in row:
            for h, lab in zip(*a.get_legend_handles_labels(), strict=True):
                handles.setdefault(lab, h)
    fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=min(4, len(handles)), fontsize=7,
               frameon=False)  # fmt: skip
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    if stem is not None:
        save(fig, stem)
    return fig


def fig8_training(profiles, distances=None, stem: str | Path | None = None):
    """The seeds experiment (notebook 08). Top row: one panel per trained run, R²_lin of every block (colour: depth)
    against the training step (symlog x: step 0, the random initialisation, at the left edge). Bottom left: every
    run's profile at its last checkpoint (95 % window-jackknife bars) over its step-0 profile (dotted). Bottom right:
    the distance between the profiles of two init seeds (mean |ΔR²_lin| per block) at each step, with its 95 %
    interval, against the noise floor (the same checkpoint on two halves of its held-out windows). `profiles`:
    `linrec.analyses.seeds.checkpoint_table` rows; `distances`: `linrec.analyses.seeds.distance_over_training` rows
    (or None)."""
    sns.set_theme(style="whitegrid", context="paper")
    runs = list(dict.fromkeys(profiles["run"]))
    n = min(max(len(runs), 2), 6)  # at most six runs a row: the zoo's dozen wrap onto two
    top = -(-len(runs) // n)
    fig = plt.figure(figsize=(2.6 * n, 3.0 * top + 3.6))
    grid = fig.add_gridspec(top + 1, n, height_ratios=[1] * top + [1.1], hspace=0.55, wspace=0.45)
    n_blocks = int(profiles["block"].max()) + 1
    colours = sns.color_palette("viridis", n_blocks)
    for k, run in enumerate(runs):
        ax = fig.add_subplot(grid[k // n, k % n], sharey=fig.axes[0] if k else None)
        t = profiles[profiles["run"] == run]
        for b in range(n_blocks):
            tb = t[t["block"] == b].sort_values("step")
            ax.plot(tb["step"], tb["r2_lin"], "-o", ms=2.5, lw=1.1, color=colours[b], label=f"block {b}")
        ax.set_xscale("symlog", linthresh=1)
        ax.set_title(run, fontsize=8)
        ax.set_xlabel("training step")
        if k % n == 0:
            ax.set_ylabel("held-out R²_lin")
        else:
            ax.tick_params(labelleft=False)
    fig.axes[0].legend(fontsize=6, loc="lower left", ncol=1, frameon=True)
    half = (n + 1) // 2
    px = fig.add_subplot(grid[top, :half])
    styles = {"gelu": "-", "swiglu": "--"}
    palette = dict(zip(runs, sns.color_palette("tab10", len(runs))))
    for run in runs:
        t = profiles[profiles["run"] == run]
        last, first = t[t["step"] == t["step"].max()], t[t["step"] == 0]
        mlp = str(t["mlp"].iloc[0])
        err = yerr(last["r2_lin"], last["r2_lo"], last["r2_hi"]) if has_band(last) else None
        px.errorbar(last["block"], last["r2_lin"], yerr=err, fmt="o", ls=styles.get(mlp, "-"), ms=3.5, capsize=2,
                    color=palette[run], label=f"{run} (step {int(last['step'].iloc[0])})")  # fmt: skip
        px.plot(first["block"], first["r2_lin"], ":", color=palette[run], lw=1, alpha=0.8)
    px.plot([], [], ":", color="0.4", label="the same runs at step 0")
    px.set_xlabel("block")
    px.set_ylabel("held-out R²_lin (95 % CI)")
    px.set_title("End-of-training profiles over their random initialisation", fontsize=9)
    px.xaxis.set_major_locator(MaxNLocator(integer=True))
    legend_below(px, ncol=2)
    dx = fig.add_subplot(grid[top, half:])
    if distances is not None and len(distances):
        for (a, b), t in distances.groupby(["a", "b"], sort=False):
            t = t.sort_values("step")
            line = dx.plot(t["step"], t["distance"], "-o", ms=3, label=f"{a} vs {b}")[0]
            dx.fill_between(t["step"], t["distance_lo"], t["distance_hi"], color=line.get_color(), alpha=0.2)
            dx.plot(t["step"], t["floor"], ":", color=line.get_color(), lw=1)
        dx.plot([], [], ":", color="0.4", label="noise floor (two halves of the held-out windows)")
        dx.set_xscale("symlog", linthresh=1)
        legend_below(dx)
    dx.set_xlabel("training step")
    dx.set_ylabel("mean |ΔR²_lin| per block (95 % CI)")
    dx.set_title("Seed against seed while training", fontsize=9)
    fig.suptitle("The same architecture trained from scratch: R²_lin per block as it is learned", y=0.99)
    if stem is not None:
        save(fig, stem)
    return fig


def fig8b_zoo(blocks, distances, components, stem: str | Path | None = None):
    """The zoo (notebook 08 under params/zoo.yaml). Left: every run's final profile (colour: layout; dashed: the second
    training text). Middle: the mean shape and level distance of each kind of pair (layout pairs, seed, data order,
    text) with its 95 % interval. Right: the share of the profile's level and shape each factor holds, with its 95 %
    jackknife interval. `blocks`: `linrec.analyses.zoo.block_table`; `distances`: `linrec.analyses.factors.
    distance_table`; `components`: `linrec.analyses.factors.components`."""

    sns.set_theme(style="whitegrid", context="paper")
    fig, (px, dx, sx) = plt.subplots(1, 3, figsize=(15, 4.4), gridspec_kw={"width_ratios": [1.3, 1, 0.8]})
    layouts = list(dict.fromkeys(blocks["layout"]))
    texts = list(dict.fromkeys(blocks["text"]))
    palette = dict(zip(layouts, sns.color_palette("tab10", len(layouts))))
    for _, t in blocks.groupby("model", sort=False):
        lay, text = t["layout"].iloc[0], t["text"].iloc[0]
        px.plot(t["block"], t["r2_lin"], "-o" if text == texts[0] else "--s", ms=3, lw=1, color=palette[lay],
                alpha=0.85, label=f"{lay}{'' if text == texts[0] else ', ' + text}")  # fmt: skip
    handles = dict(zip(*reversed(px.get_legend_handles_labels()), strict=True))
    px.legend(handles.values(), handles.keys(), fontsize=7, frameon=True)
    px.set_xlabel("block")
    px.set_ylabel("held-out R²_lin, last checkpoint")
    px.set_title("Every trained run's profile", fontsize=9)
    px.xaxis.set_major_locator(MaxNLocator(integer=True))
    x = np.arange(len(distances))
    for off, part, colour in ((-0.18, "shape", "C0"), (0.18, "level", "C1")):
        d = distances[part].to_numpy(float)
        dx.bar(x + off, d, 0.34, color=colour, alpha=0.8, label=f"{part} distance")
        dx.errorbar(x + off, d, yerr=yerr(d, distances[f"{part}_lo"], distances[f"{part}_hi"]), fmt="none",
                    ecolor="0.2", elinewidth=0.8, capsize=2)  # fmt: skip
    dx.set_xticks(x, distances["kind"], rotation=30, ha="right", fontsize=7)
    dx.set_ylabel("mean distance per pair (95 % CI)")
    dx.set_title("Layout against seed against text", fontsize=9)
    dx.legend(fontsize=7)
    factors = list(dict.fromkeys(components["factor"]))
    x = np.arange(len(factors))
    for off, part, colour in ((-0.18, "shape", "C0"), (0.18, "level", "C1")):
        c = components[components["part"] == part].set_index("factor").loc[factors]
        v = c["share"].to_numpy(float)
        sx.bar(x + off, v, 0.34, color=colour, alpha=0.8, label=part)
        sx.errorbar(x + off, v, yerr=yerr(v, c["share_lo"].clip(lower=0), c["share_hi"].clip(upper=1)), fmt="none",
                    ecolor="0.2", elinewidth=0.8, capsize=2)  # fmt: skip
    sx.set_xticks(x, factors)
    sx.set_ylim(0, 1.05)
    sx.set_ylabel("share of the profile's variance (95 % CI)")
    sx.set_title("What sets the level and the shape", fontsize=9)
    sx.legend(fontsize=7)
    fig.suptitle("The paper's three layouts in miniature, trained from scratch", y=1.0)
    fig.tight_layout()
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
