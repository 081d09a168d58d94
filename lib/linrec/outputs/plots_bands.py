"""Figure 7c, claim 2b over every cross band (`linrec.claims.bands`): per model, the weights' minus the inputs' unique
share of the cross matrix on the entries |i − j| ≤ k against the band k, with its 95 % interval over the blocks and
the held-out windows; the bands below the narrowest that decides (`CLAIM2B_MIN_BAND`) are shaded. Saved as PNG and PDF
(`linrec.outputs.plots.save`)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import seaborn as sns
from matplotlib.ticker import MaxNLocator

from linrec.claims.bands import CLAIM2B_MIN_BAND
from linrec.outputs.plots import save, yerr


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
