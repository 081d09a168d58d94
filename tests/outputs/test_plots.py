"""linrec.outputs.plots: the figures draw an interval that misses its estimate and mark a shortfall outside the axis;
and the figures a reader found hard to read (issue 50, item 8), drawn from the default run's committed tables: no
label prints over another label or over a marker, no legend over an axis label, figure 7's random-init seeds
drawn apart, figure 4 sized by the rank the rule reads with claim 4's block marked, and the HTML report's figures
at their drawn size. The geometry is measured here, on the drawn figure (one harness for figures 2–9, those of
every plots_* module included), not taken from the code that placed the labels."""

import itertools

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import PathCollection  # noqa: E402
from matplotlib.text import Annotation  # noqa: E402

from helpers import swap_table as _swap
from linrec.base.files import project_root  # noqa: E402
from linrec.base.tables import load_table  # noqa: E402
from linrec.outputs import plots_ceiling, plots_controls, plots_probe, plots_regimes, plots_swap  # noqa: E402
from linrec.outputs.plots_probe import fig3b_trained_pitfall  # noqa: E402
from linrec.outputs.plots_swap import fig2_swap  # noqa: E402

ROOT = project_root(__file__)
RESULTS = ROOT / "results" / "default"


def _t(name):
    return load_table(name, RESULTS)


def _full(name):
    """Table `name` of results/full as written: the default routes no block, and full's routing tables predate
    columns Figure 9 does not draw (load_table refuses them), so its placement is checked on those."""
    return pd.read_csv(ROOT / "results" / "full" / f"{name}.csv")


FIGURES = {
    "fig2_r2_lin": lambda: plots_ceiling.fig2_r2_lin(_t("r2_lin"), STEM),
    "fig3c_pitfall_mechanism": lambda: plots_probe.fig3c_pitfall_mechanism(
        _t("pitfall_budget"), _t("pitfall_dose"), STEM
    ),
    "fig4_rank_outliers": lambda: plots_regimes.fig4_rank_outliers(_t("spectrum"), STEM),
    "fig6_swap": lambda: plots_swap.fig6_swap(_t("swap"), _t("swap_rank_curve"), STEM),
    "fig7_controls": lambda: plots_controls.fig7_controls(
        _t("controls_random_init"), _t("controls_inputs"), STEM, _t("controls_learned"), _t("controls_null_blocks")
    ),
    "fig9_routing": lambda: plots_swap.fig9_routing(
        _full("routing_curve"), _full("routing_routable"), _full("r2_lin"), STEM
    ),  # fmt: skip
}


STEM = None  # set per test: where the figure is saved (saving is what places the labels)


@pytest.fixture
def drawn(tmp_path):
    def draw(name):
        global STEM
        STEM = tmp_path / name
        fig = FIGURES[name]()
        fig = fig if fig is not None and hasattr(fig, "axes") else matplotlib.pyplot.gcf()
        fig.canvas.draw()  # every position at the figure's own dpi (saving drew it at another)
        return fig, fig.canvas.get_renderer()

    return draw


def _box(artist, renderer):
    return artist.get_window_extent(renderer)


def _overlap(a, b, tol=0.5):
    return min(a.x1, b.x1) - max(a.x0, b.x0) > tol and min(a.y1, b.y1) - max(a.y0, b.y0) > tol


@pytest.mark.parametrize("name", list(FIGURES))
def test_no_label_covers_another_label_or_a_marker_and_no_legend_an_axis_label(drawn, name):
    """Figure 9 on results/full's every-block routing put the labels of blocks 0 and 8 (then 0 and 4) on each other:
    30 curves end at share 1, more labels than one column beside the ends holds, and a label on another label cost
    less than one on ten data points (linrec.outputs.labels: a second and third column, and OVER_LABEL)."""
    fig, renderer = drawn(name)
    for ax in fig.axes:
        labels = [t for t in ax.texts if isinstance(t, Annotation) and t.get_text()]
        boxes = [_box(t, renderer) for t in labels]
        for (a, ta), (b, tb) in itertools.combinations(zip(boxes, labels), 2):
            assert not _overlap(a, b), f"{name}: labels {ta.get_text()!r} and {tb.get_text()!r} overlap"
        scatters = [c for c in ax.collections if isinstance(c, PathCollection) and len(c.get_offsets())]
        markers = np.vstack(
            [c.get_offset_transform().transform(c.get_offsets()) for c in scatters] or [np.zeros((0, 2))]
        )
        for box, t in zip(boxes, labels):
            own = ax.transData.transform(np.asarray(t.xy, float))
            inside = [p for p in markers if box.contains(*p) and not np.allclose(p, own)]
            assert not inside, f"{name}: label {t.get_text()!r} prints over {len(inside)} marker(s)"
    legends = [lg for ax in fig.axes if (lg := ax.get_legend()) is not None] + list(fig.legends)
    axis_labels = [a.xaxis.label for a in fig.axes if a.get_xlabel()]
    for lg, lab in itertools.product(legends, axis_labels):
        assert not _overlap(_box(lg, renderer), _box(lab, renderer)), f"{name}: a legend covers '{lab.get_text()}'"
    for a, b in itertools.combinations(legends, 2):
        assert not _overlap(_box(a, renderer), _box(b, renderer)), f"{name}: two legends overlap"


def test_figure_7_draws_each_random_init_seed_its_own_way(drawn):
    fig, _ = drawn("fig7_controls")
    top = fig.axes[0]
    styles = [
        (str(line.get_linestyle()), line.get_marker()) for line in top.get_lines() if line.get_label() != "trained"
    ]
    assert len(styles) >= 2 and len(set(styles)) == len(styles), styles


def test_figure_4_sizes_by_the_rank_the_rule_reads_and_marks_claim_4s_blocks(drawn):
    table = _t("spectrum")
    fig, _ = drawn("fig4_rank_outliers")
    ax = fig.axes[0]
    outliers = table[table["regime"] == "outlier-concentrated"]
    named = [t.get_text() for t in ax.texts]
    for _, r in outliers.iterrows():
        assert any(t.startswith(f"block {r['block']}: rank") for t in named), named
    drawn_points = {}
    for c in ax.collections:
        for (x, y), s in zip(c.get_offsets(), np.resize(c.get_sizes(), len(c.get_offsets()))):
            drawn_points.setdefault((round(float(x), 9), round(float(y), 9)), []).append(float(s))
    size = {
        i: min(drawn_points[(round(r["r2_lin"], 9), round(r["r2_feature_median"], 9))]) for i, r in table.iterrows()
    }
    order = table["eff_rank_explained"].sort_values(kind="stable").index
    assert all(size[a] <= size[b] + 1e-9 for a, b in zip(order[:-1], order[1:]))  # smallest rank, smallest marker
    ringed = [c for c in ax.collections if len(c.get_offsets()) == 1 and c.get_sizes()[0] >= 150]
    assert len(ringed) == len(outliers)


def test_the_html_report_shows_each_figure_at_its_drawn_size(tmp_path):
    from linrec.outputs.plots import DPI, figures_at_drawn_size

    (tmp_path / "figures").mkdir()
    png = tmp_path / "figures" / "wide.png"
    png.write_bytes((ROOT / "figures" / "fig6_swap.png").read_bytes())
    width = int.from_bytes(png.read_bytes()[16:20], "big")
    html = figures_at_drawn_size('<p><img src="figures/wide.png" alt="w" /></p>', tmp_path)
    assert f'width="{round(width * 96 / DPI)}"' in html and '<a href="figures/wide.png">' in html
    assert round(width * 96 / DPI) > 1184  # wider than the text column: scrolled, not shrunk


def test_an_interval_that_misses_its_estimate_still_draws(tmp_path):
    """A percentile bootstrap interval can lie wholly on one side of its point estimate (the smoke profile's swap did):
    the bar then runs from the estimate to the far end, never a negative length (matplotlib raises on those)."""
    from linrec.outputs.plots import yerr

    t = _swap("a", 3).assign(delta_lo=lambda d: d["delta_ppl"] + 0.1, delta_hi=lambda d: d["delta_ppl"] + 0.3)
    fig = fig2_swap(t, tmp_path / "fig2_swap")
    assert (tmp_path / "fig2_swap.png").stat().st_size > 0 and len(fig.axes[0].patches) == 3
    assert np.allclose(yerr([1.0, 2.0], [1.1, 1.5], [1.3, 2.5]), [[0.0, 0.5], [0.3, 0.5]])


def test_pitfall_figure_marks_shortfalls_outside_its_axis(tmp_path):
    """A diverged baseline (shortfall far above 10) is drawn at the edge as an open triangle and counted."""
    t = pd.DataFrame({"model": ["a"] * 4, "block": range(4), "cond_gram": [1e3, 1e5, 1e7, 1e9],
                      "r2_ceiling_rows": 0.9, "r2_trained_adam": [0.5, 0.6, 0.7, 0.8],
                      "r2_trained_sgd": [0.4, -1e30, -50.0, 0.85]})  # fmt: skip
    fig = fig3b_trained_pitfall(t, tmp_path / "fig3b")
    (ax,) = fig.axes
    texts = [x.get_text() for x in ax.get_legend().get_texts()]
    assert any("shortfall > 10" in x and "(2)" in x for x in texts)
    edge = [c for c in ax.collections if len(c.get_offsets()) and np.allclose(c.get_offsets()[:, 1], 10.0)]
    assert sum(len(c.get_offsets()) for c in edge) == 2
    assert ax.get_ylim()[1] > 10.0  # the edge is inside the axes


def test_a_figure_redrawn_from_a_table_kept_within_precision_is_left_alone_and_a_real_change_redraws_it(tmp_path):
    """Issue 90, item 1: a plain rerun of notebook 02 on another machine rewrote figures/fig2_r2_lin.{pdf,png} (the
    PDF stores coordinates to 1e-10 pt, so R²_lin's 9th digit moves its bytes). The table kept within precision
    hands its stored numbers on (`save_table`), the figure drawn from them comes out the same bytes, and `save` leaves
    the files untouched (mtime too); a value moved by 1e-3 rewrites both. Planted: `save` always writing fails the
    mtime assert (`save_table` not handing on its stored numbers: tests/base/test_tables.py)."""
    import os

    from linrec.base.tables import R2_PRECISION, save_table

    (tmp_path / "r2_lin.csv").write_bytes((RESULTS / "r2_lin.csv").read_bytes())
    stored = load_table("r2_lin", tmp_path)
    stem = tmp_path / "figures" / "fig2_r2_lin"
    plots_ceiling.fig2_r2_lin(stored, stem)
    files = [stem.with_suffix(".png"), stem.with_suffix(".pdf")]
    for f in files:
        os.utime(f, ns=(10**18, 10**18))
    before = [f.read_bytes() for f in files]
    rng = np.random.default_rng(1)
    r2 = ["r2_lin", "r2_lo", "r2_hi", "r2_ex_first", "r2_ex_first_lo", "r2_ex_first_hi"]
    rerun = stored.assign(**{c: stored[c] + rng.uniform(-R2_PRECISION / 2, R2_PRECISION / 2, len(stored)) for c in r2})
    save_table(rerun, "r2_lin", tmp_path)
    plots_ceiling.fig2_r2_lin(rerun, stem)
    assert [f.read_bytes() for f in files] == before and all(f.stat().st_mtime_ns == 10**18 for f in files)
    rerun.loc[2, "r2_lin"] += 1e-3
    save_table(rerun, "r2_lin", tmp_path)
    plots_ceiling.fig2_r2_lin(rerun, stem)
    assert files[1].read_bytes() != before[1] and files[1].stat().st_mtime_ns != 10**18


def test_a_figure_drawn_from_numbers_moved_below_a_pixel_is_left_alone(tmp_path):
    """Figure 4b is drawn from a capture's statistics, not from a table, so its numbers carry another machine's 10th
    digit; its PDF (coordinates to 1e-10 pt) would change, its PNG does not. `save` leaves both files when the PNG's
    bytes are the same, and writes both when a point moves by a visible amount. Planted: the PNG rule left out
    (each file compared alone) fails the first assert."""
    import os

    import matplotlib.pyplot as plt

    from linrec.outputs.plots import save

    def draw(shift):
        fig, ax = plt.subplots(figsize=(3, 2))
        ax.plot([0, 1, 2, 3], np.array([0.297163242974, 0.5, 0.41, 0.9]) + shift, "-o")
        return fig

    stem = tmp_path / "fig"
    files = save(draw(0.0), stem)
    for f in files:
        os.utime(f, ns=(10**18, 10**18))
    before = [f.read_bytes() for f in files]
    save(draw(6.3e-10), stem)  # the r2_lin: 0.297163242974 → 0.297163243606
    assert [f.read_bytes() for f in files] == before and all(f.stat().st_mtime_ns == 10**18 for f in files)
    save(draw(0.02), stem)
    assert all(f.read_bytes() != b for f, b in zip(files, before, strict=True))
