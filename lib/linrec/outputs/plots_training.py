"""Figures of notebook 08, the same architectures trained from scratch: the profiles across training (Figure 8) and the
zoo of layouts, seeds and texts (8b). Saved as PNG and PDF (`linrec.outputs.plots.save`)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.ticker import MaxNLocator

from linrec.outputs.plots import has_band, legend_below, save, yerr


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


def fig8b_zoo(
    blocks,
    distances,
    components,
    stem: str | Path | None = None,
    title: str = "The paper's three layouts in miniature, trained from scratch",
):
    """The zoo (notebook 08 under params/zoo.yaml). Left: every run's final profile (colour: layout; dashed: the second
    training text). Middle: the mean shape and level distance of each kind of pair (layout pairs, seed, data order,
    text) with its 95 % interval. Right: the share of the profile's level and shape each factor holds, with its 95 %
    jackknife interval. `blocks`: `linrec.analyses.zoo.block_table`; `distances`: `linrec.analyses.factors.
    distance_table`; `components`: `linrec.analyses.factors.components`; `title`: the figure's (the default names the
    miniature zoo; results/zoo_paper's says the paper's width)."""

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
    fig.suptitle(title, y=1.0)
    fig.tight_layout()
    if stem is not None:
        save(fig, stem)
    return fig


def fig8c_contrast(zoos: dict, margin: float, stem: str | Path | None = None):
    """The paper's contrast (claim 2a): GPT-2 against Pythia, the other layout pairs and two init seeds, each zoo
    (`zoos`: its words → its `zoo_distances` table) side by side; left the shape distance, right the level, each with
    its 95 % interval, and the margin that 'sharply different' needs (2a's minimum effect) dashed."""
    sns.set_theme(style="whitegrid", context="paper")
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
    kinds = list(dict.fromkeys(k for d in zoos.values() for k in d["kind"]))
    x, width = np.arange(len(kinds)), 0.8 / max(len(zoos), 1)
    for ax, part in zip(axes, ("shape", "level"), strict=True):
        for i, (words, d) in enumerate(zoos.items()):
            d = d.set_index("kind").reindex(kinds)
            v = d[part].to_numpy(float)
            ax.bar(x + (i - (len(zoos) - 1) / 2) * width, v, width * 0.9, alpha=0.8, label=words, color=f"C{i}")
            ax.errorbar(x + (i - (len(zoos) - 1) / 2) * width, v, yerr=yerr(v, d[f"{part}_lo"], d[f"{part}_hi"]),
                        fmt="none", ecolor="0.2", elinewidth=0.8, capsize=2)  # fmt: skip
        ax.axhline(margin, ls="--", color="0.4", lw=0.9, label=f"2a's minimum effect ({margin:g})")
        ax.set_xticks(x, kinds, rotation=20, ha="right", fontsize=8)
        ax.set_title(f"{part} distance per pair of final profiles (95 % CI)", fontsize=9)
    axes[0].set_ylabel("mean distance per pair")
    legend_below(axes[0], ncol=3)
    fig.suptitle("The paper's contrast: GPT-2 against Pythia, against seed against seed", y=1.0)
    fig.tight_layout()
    if stem is not None:
        save(fig, stem)
    return fig
