"""Point labels placed where they can be read: clear of the data and of each other (`declutter`, which
`linrec.outputs.plots.save` runs on every figure before it is written).

A figure labels some of its points (a block number beside a marker, a block at the end of its curve). Where two
points lie close, or a curve runs past a label, a label written at a fixed offset prints over a marker, an error bar
or another label (issue 50: figure 3c's end labels, figure 6(a)'s block numbers, figure 9's end labels). Once the
figure's layout is final, each label offset in points from its point (`annotate(…, textcoords="offset points")`)
takes the first of a ring of nearby positions, its own first, where it covers no marker, no drawn line or error
bar, no label already placed and nothing outside its axes; where none is free, the one covering least. The label of
a point at the right end of the data (a curve's end) stays to the right of it, moved up or down, past the axes'
edge if need be (where such labels belong), and into a second or third column where more curves end close together
than one column holds (Figure 9 on every block of a model). A label on another label is the last resort: it costs
more than a label on any number of data points. A label keeps its point and its text: only where it sits beside the
point changes.
"""

from __future__ import annotations

import numpy as np
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.text import Annotation

PAD = 1.5  # points kept between a label and what it must not cover
MARKER = 3.0  # points: the half-width of a marker, around each data point
OVER_LABEL = 1000  # a label on another costs more than one on any number of data points: it hides a number


def _sampled(xy: np.ndarray, per_segment: int = 6) -> np.ndarray:
    """Points along a polyline (display coordinates), so a label does not sit on a line between its vertices."""
    xy = xy[np.isfinite(xy).all(axis=1)]
    if len(xy) < 2:
        return xy
    t = np.linspace(0.0, 1.0, per_segment, endpoint=False)
    seg = xy[:-1, None, :] + (xy[1:] - xy[:-1])[:, None, :] * t[None, :, None]
    return np.vstack([seg.reshape(-1, 2), xy[-1:]])


def data_points(ax) -> np.ndarray:
    """[n, 3]: display coordinates and half-width in points of what an axes draws as data: scatter markers (their
    own size), the vertices of its lines and points along them, and points along error bars (line collections).
    Lines spanning the axes (axhline) are left out."""
    parts = []

    def add(xy, radius):
        xy = np.asarray(xy, float).reshape(-1, 2)
        if len(xy):
            parts.append(np.c_[xy, np.broadcast_to(np.asarray(radius, float), (len(xy),))])

    for c in ax.collections:
        if isinstance(c, PathCollection) and len(c.get_offsets()):
            xy = c.get_offset_transform().transform(np.asarray(c.get_offsets(), float))
            sizes = np.asarray(c.get_sizes(), float)
            radius = np.sqrt(np.resize(sizes, len(xy))) / 2 if len(sizes) else MARKER
            add(xy, np.maximum(radius, MARKER))
        elif isinstance(c, LineCollection):
            for seg in c.get_segments():
                if len(seg) >= 2:
                    add(_sampled(c.get_transform().transform(np.asarray(seg, float)), 8), MARKER)
    for line in ax.lines:
        xy = np.asarray(line.get_xydata(), float)
        if len(xy) == 2 and line.get_transform() is not ax.transData:  # axhline / axvline: span the axes
            continue
        if len(xy):
            add(_sampled(line.get_transform().transform(xy)), MARKER)
    return np.vstack(parts) if parts else np.zeros((0, 3))


def _labels(ax) -> list[Annotation]:
    return [
        t
        for t in ax.texts
        if isinstance(t, Annotation) and t.get_anncoords() == "offset points" and t.xycoords == "data" and t.get_text()
    ]


def _covered(box: np.ndarray, points: np.ndarray, scale: float) -> int:
    """How many `points` ([n, 3] of `data_points`) reach into `box` ([x0, y0, x1, y1], display): each point's
    half-width (in points, `scale` pixels each) grows the box."""
    if not len(points):
        return 0
    x0, y0, x1, y1 = box
    x, y, pad = points[:, 0], points[:, 1], points[:, 2] * scale
    return int(((x > x0 - pad) & (x < x1 + pad) & (y > y0 - pad) & (y < y1 + pad)).sum())


def _overlap(a, b) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return max(w, 0.0) * max(h, 0.0)


def declutter(fig) -> None:
    """Move each point label of `fig` (see the module docstring) to the first free spot of a ring around its point."""
    renderer = fig.canvas.get_renderer()
    scale = fig.dpi / 72.0  # display pixels per point
    for ax in fig.axes:
        labels = _labels(ax)
        if not labels:
            continue
        points = data_points(ax)
        frame = ax.get_window_extent(renderer).extents
        placed: list[np.ndarray] = []
        # top to bottom: labels stacked beside one another keep their points' order
        labels.sort(key=lambda a: -float(ax.transData.transform(np.asarray(a.xy, float))[1]))
        for ann in labels:
            ann.set_horizontalalignment("left")
            ann.set_verticalalignment("bottom")
            anchor = ax.transData.transform(np.asarray(ann.xy, float))
            if not np.isfinite(anchor).all():
                continue
            ext = ann.get_window_extent(renderer)
            w, h = ext.width / scale, ext.height / scale  # points
            own = tuple(ann.xyann)
            end = len(points) > 0 and anchor[0] >= points[:, 0].max() - scale  # the rightmost data: a curve's end
            if end:  # its label stays to the right of the end, stacked up or down from it; past the edge is fine
                # where the column beside the ends is full (many curves ending close together), a second and a
                # third column to its right
                ring = [(3 + c * (w + 3), -h / 2 + s * k * (h + 1)) for c in range(3) for k in range(12)
                        for s in ((1,) if k == 0 else (1, -1))]  # fmt: skip
            else:
                ring = [own, (3, 1), (3, -h - 1), (-w - 3, 1), (-w - 3, -h - 1), (3, -h / 2), (-w - 3, -h / 2),
                        (-w / 2, 4), (-w / 2, -h - 4)]  # fmt: skip
                for k in range(1, 7):  # farther out: stacked above and below, on both sides
                    ring += [(3, 1 + k * (h + 1)), (3, -h - 1 - k * (h + 1)), (-w - 3, 1 + k * (h + 1)),
                             (-w - 3, -h - 1 - k * (h + 1))]  # fmt: skip
            best, best_cost = own, None
            for dx, dy in ring:
                x0, y0 = anchor[0] + dx * scale, anchor[1] + dy * scale
                box = np.array([x0, y0, x0 + w * scale, y0 + h * scale])
                cost = _covered(box, points, scale) + OVER_LABEL * sum(_overlap(box, b) > 0 for b in placed)
                outside = (
                    box[1] < frame[1] or box[3] > frame[3] or (not end and (box[0] < frame[0] or box[2] > frame[2]))
                )
                cost += 5 * outside
                if best_cost is None or cost < best_cost:
                    best, best_cost = (dx, dy), cost
                if cost == 0:
                    break
            ann.xyann = best
            x0, y0 = anchor[0] + best[0] * scale, anchor[1] + best[1] * scale
            placed.append(
                np.array([x0 - PAD * scale, y0 - PAD * scale, x0 + (w + PAD) * scale, y0 + (h + PAD) * scale])
            )
