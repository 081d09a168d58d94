"""Figures, named after the paper's numbering; each saved as PNG and PDF, and shown where it is drawn.

This module holds what every figure shares (`save`, the interval bars, the per-model axes and the legends); the
figures are in one module per stage, beside the notebook that draws them: `plots_ceiling` (notebooks 01, 02, 05),
`plots_probe` (03), `plots_regimes` (04), `plots_swap` (06), `plots_controls` (07), `plots_training` (08).

No backend is chosen here: in a notebook kernel matplotlib's inline backend shows every figure a
cell draws as that cell's image output (the runner, `linrec.app.notebooks`, starts its kernels with it);
a script or test without a display gets matplotlib's own headless default.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.transforms import offset_copy

from linrec.base.files import atomic_file
from linrec.outputs.labels import declutter

# Written into the files instead of what changes from run to run: a PDF's CreationDate (left out) and the
# software line, so a rerun that draws the same figure writes the same bytes.
_METADATA = {".pdf": {"CreationDate": None}, ".png": {}}


DPI = 150  # the PNGs' resolution: the HTML report shows each at its drawn size, DPI pixels to the inch


def save(fig, stem: str | Path) -> list[Path]:
    """Write `fig` to `stem`.png (DPI) and `stem`.pdf, without a creation date, once its point labels are placed
    clear of the data and of each other (`declutter`); returns the paths.

    A figure is rewritten only when what it shows changes at its resolution: where both files exist and the new PNG's
    bytes equal the stored one's, both are left alone (not even touched). A PDF stores coordinates to 1e-10 pt, so a
    number moved in its 10th digit (another machine's forward pass) would rewrite it; the PNG changes only where a pixel
    does. Figures drawn from results tables get the tables' stored numbers (`linrec.base.tables.save_table` keeps a
    table within the project's precision and hands its numbers on), so they come out the same bytes anyway; the rule
    covers the few drawn from a capture's statistics directly (Figure 4b), and a rerun leaves the clone clean."""
    declutter(fig)
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".png"), stem.with_suffix(".pdf")]
    drawn = {}
    for p in paths:
        buffer = io.BytesIO()
        fig.savefig(buffer, format=p.suffix[1:], dpi=DPI, bbox_inches="tight", metadata=_METADATA[p.suffix])
        drawn[p] = buffer.getvalue()
    png, pdf = paths
    if pdf.is_file() and png.is_file() and png.read_bytes() == drawn[png]:
        return paths  # the same picture: the stored files stay
    for p in paths:
        if p.is_file() and p.read_bytes() == drawn[p]:
            continue
        with atomic_file(p) as tmp:  # whole or not at all; a full disk is one line naming the file
            tmp.write_bytes(drawn[p])
    return paths


def has_band(t, lo: str = "r2_lo", hi: str = "r2_hi") -> bool:
    return {lo, hi} <= set(t.columns) and bool(t[lo].notna().all() and t[hi].notna().all())


def per_model_axes(table, nrows: int = 1, height: float = 3.2, col: str = "block", **kw):
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
