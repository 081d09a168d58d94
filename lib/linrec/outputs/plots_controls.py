"""Figures of notebook 07, the controls: random-init twins and Gaussian inputs (Figure 7), inputs or weights, with the
null FFNs and cross feeding (7b), and claim 2b over every cross band (7c: per model, the weights' minus the inputs'
unique share of the cross matrix on the entries |i − j| ≤ k against the band k, with its 95 % interval over the
blocks and the held-out windows; the bands below the narrowest that decides, `CLAIM2B_MIN_BAND`, shaded). Saved as
PNG and PDF (`linrec.outputs.plots.save`)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.ticker import MaxNLocator
from scipy.stats import t as student_t

from linrec.claims.bands import CLAIM2B_MIN_BAND
from linrec.outputs.plots import save, yerr


def fig7_controls(profiles, inputs, stem: str | Path | None = None, learned=None, nulls=None):
    """Controls: (top) R²_lin per block of each trained model, with its 95 % window interval, beside the reference
    claim 2a's verdict reads (`learned`, `controls_learned`: its `reference` per model): the random-init twins, or,
    where the twin is degenerate (it over-fits its own inputs: R² far below 0 held out), the random-init FFNs scored on
    the trained model's own inputs (`nulls`, `controls_null_blocks`: their mean per block with the 95 % prediction
    interval of one more draw, mean ± t(k − 1)·sd·√(1 + 1/k), the one the nulls' p reads), beside the trained FFN on
    the same rows (the controls' row sample: the number the verdict sets against them); each panel's title gives the
    verdict's effect and noise. Without `learned`, the twins. (bottom) each trained FFN re-scored on its own inputs
    (refit on the controls' row sample, so it need not equal the top row's R²_lin from every row), on Gaussian inputs
    with the same first two moments, and on the next block's inputs. One column per model; each row's legend at its
    right, outside the axes."""
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
    read = {} if learned is None else {r["model"]: r for r in learned.to_dict("records")}
    for k, model in enumerate(models):
        ax, bx = axes[0][k], axes[1][k]
        p = profiles[profiles["model"] == model]
        verdict = read.get(model)
        ensemble = verdict is not None and bool(verdict["twin_degenerate"]) and nulls is not None
        for w, t in p.groupby("weights", sort=False):
            trained = w == "trained"
            if ensemble and not trained:
                continue  # the degenerate twins: not what the verdict reads (their R² lies far below 0)
            t = t.sort_values("block")
            ls, marker, grey = ("-", "o", colours[0]) if trained else styles[w]
            ax.plot(t["block"], t["r2_lin"], linestyle=ls, marker=marker, color=grey, ms=3.5 if trained else 2.5,
                    lw=1.6 if trained else 1.0, label=w)  # fmt: skip
            if {"r2_lo", "r2_hi"} <= set(t.columns) and t["r2_lo"].notna().all():
                ax.fill_between(t["block"], t["r2_lo"], t["r2_hi"], color=grey, alpha=0.2, lw=0)
        if ensemble:
            n = nulls[nulls["model"] == model].sort_values("block")
            half = student_t.ppf(0.975, n["n_init"] - 1) * n["init_sd"] * np.sqrt(1 + 1 / n["n_init"])
            ax.plot(n["block"], n["r2_trained"], linestyle=":", marker="o", color=colours[0], ms=2.5, lw=1.0,
                    mfc="white", label="trained FFN on the random-init FFNs' rows (what 2a reads)")  # fmt: skip
            label = f"random-init FFNs on the trained inputs ({int(n['n_init'].min())} per block)"
            ax.plot(n["block"], n["init_mean"], linestyle="--", marker="s", color=colours[1], ms=2.5, lw=1.0,
                    label=label)  # fmt: skip
            ax.fill_between(n["block"], n["init_mean"] - half, n["init_mean"] + half, color=colours[1], alpha=0.25,
                            lw=0)  # fmt: skip
        title = model
        if verdict is not None and np.isfinite(verdict["effect"]):  # two lines: a narrow panel's title stays its own
            noise = f"{verdict['noise']:.3f}" if np.isfinite(verdict["noise"]) else "not measured (one draw)"
            title += f"\n2a: effect {verdict['effect']:.3f}\nnoise {noise}"
        ax.set_title(title, fontsize=7)
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
    for row, title in ((axes[0], "FFN weights (band: 95 %)"), (axes[1], "inputs the trained FFN is scored on")):
        seen = {}
        for a in row:
            for h, lab in zip(*a.get_legend_handles_labels(), strict=True):
                seen.setdefault(lab, h)
        row[-1].legend(seen.values(), seen.keys(), title=title, loc="upper left", bbox_to_anchor=(1.03, 1.0),
                       fontsize=7, title_fontsize=7, frameon=False)  # fmt: skip
    axes[0][0].set_ylabel("held-out R²_lin")
    axes[1][0].set_ylabel("R² of the trained FFN's best affine map")
    top = "the reference claim 2a reads" if learned is not None else "random-init twins"
    fig.suptitle(f"Is linear recoverability learned? Trained against {top} (top); input controls (bottom)", y=1.0)
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


def fig7c_bands(bands, stem: str | Path | None = None, min_band: int = CLAIM2B_MIN_BAND):
    """`bands` (`controls_decomposition_bands`): one line per model, weights − inputs against the band, with error
    bars from `wmi_lo` to `wmi_hi`; 0 marked; the figure (saved under `stem` when given)."""
    sns.set_theme(style="whitegrid", context="paper")
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    colours = sns.color_palette("colorblind", max(3, bands["model"].nunique()))
    for c, (model, t) in zip(colours, bands.groupby("model", sort=False), strict=False):
        t = t.sort_values("band")
        ax.errorbar(t["band"], t["wmi"], yerr=yerr(t["wmi"], t["wmi_lo"], t["wmi_hi"]), fmt="-o", ms=3.5, lw=1.2,
                    capsize=2.5, color=c, label=model)  # fmt: skip
    ax.axhline(0, color="0.3", lw=0.8)
    ax.axvspan(0.5, min_band - 0.5, color="0.85", alpha=0.6, lw=0, label=f"bands < {min_band}: not deciding")
    ax.set_xlim(0.5, max(float(bands["band"].max()) + 0.5, min_band + 0.5))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("cross band k (entries with |i − j| ≤ k)")
    ax.set_ylabel("weights' − inputs' unique share")
    ax.set_title("Claim 2b at every band (95 % interval over blocks and held-out windows)", fontsize=9)
    ax.legend(fontsize=7, frameon=False)
    fig.tight_layout()
    if stem is not None:
        save(fig, stem)
    return fig
