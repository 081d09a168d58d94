"""linrec.outputs.plots_swap: figures 2 (its swap row), 6 and 9 draw from the tables the notebooks write (the swap
figures including a model whose blocks got no position variants and ΔPPL below 0), with legends that name what is
drawn and hide no panel's data."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from helpers import swap_table as _swap
from linrec.outputs.plots_ceiling import fig2_r2_lin  # noqa: E402
from linrec.outputs.plots_swap import fig2_swap, fig6_swap  # noqa: E402


def test_swap_figures_with_and_without_variants(tmp_path):
    table = pd.concat([_swap("a", 4, ("ffn", "mean")), _swap("b", 3)], ignore_index=True)
    curve = pd.DataFrame({"model": "a", "block": 1, "rank": [2, 8], "factored": [True, False], "params": [10, 40],
                          "params_ffn": 100, "delta_ppl": [2.0, 0.5], "delta_lo": [1.5, 0.2],
                          "delta_hi": [2.5, 0.9]})  # fmt: skip
    fig = fig6_swap(table, curve, tmp_path / "fig6")
    assert len(fig.axes) == 3 and (tmp_path / "fig6.png").stat().st_size > 0
    (c,) = [a for a in fig.axes if "first position" in a.get_title() or "position 0" in a.get_title()]
    assert len(c.patches) == 3  # one group (model a, block 1) of three bars: map, FFN at 0, mean at 0
    assert [t.get_text() for t in c.get_xticklabels()] == ["a\nblock 1"]  # model b has no variants: left out of (c)
    assert fig.legends and not fig.axes[0].get_legend()  # the model legend sits below the panels, not on (a)
    r2 = pd.DataFrame({"model": np.repeat(["a", "b"], [4, 3]), "block": [0, 1, 2, 3, 0, 1, 2],
                       "r2_lin": 0.7, "r2_lo": 0.6, "r2_hi": 0.8, "r2_feature_median": 0.5})  # fmt: skip
    fig = fig2_r2_lin(r2, tmp_path / "fig2")
    assert all(ax.get_legend() is not None for ax in fig.axes)  # every model's panel explains its lines
    fig = fig2_swap(table, tmp_path / "fig2_swap", chosen={"a": 2})
    assert [len(ax.patches) for ax in fig.axes] == [4 + 1, 3]  # one bar per block (map rows only); a's pick outlined
    assert "block 2" in fig.axes[0].get_legend().get_texts()[0].get_text()
    fig6_swap(table[table["model"] == "b"], curve.iloc[:0], tmp_path / "fig6b")  # no variants anywhere: 2 panels


def test_the_routing_figure_draws_the_anchor_row_only_where_its_tables_are_given(tmp_path):
    """Figure 9: the curves and the routable shares on top; with the per-type table, the gates and the healing table,
    a bottom row whose three panels each draw their rows (one point per block × corpus pair, three gates per block,
    one line per model and mode)."""
    from linrec.outputs.plots_swap import fig9_routing

    shares = [0.0, 0.05, 0.1]
    curve = pd.DataFrame([{"model": m, "block": b, "target": "quantile", "share": s, "share_heldout": s,
                           "ppl_base": 20.0, "delta_ppl": s * b, "delta_lo": s * b - 0.1, "delta_hi": s * b + 0.1}
                          for m in ("a", "b") for b in (1, 2) for s in shares])  # fmt: skip
    routable = pd.DataFrame({"model": ["a", "a", "b", "b"], "block": [1, 2, 1, 2], "routable_pct1": 0.05,
                             "routable_pct1_lo": 0.0, "routable_pct1_hi": 0.1})  # fmt: skip
    r2 = pd.DataFrame({"model": ["a", "a", "b", "b"], "block": [1, 2, 1, 2], "r2_lin": [0.2, 0.9, 0.5, 0.6]})
    fig = fig9_routing(curve, routable, r2, tmp_path / "fig9")
    assert len([a for a in fig.axes if a.get_visible() and a.get_title()]) == 3  # two models and the routable panel
    identity = pd.DataFrame({"model": ["a", "a", "b"], "block": [1, 2, 1], "r": 0.8, "r_lo": 0.7, "r_hi": 0.9,
                             "r_need": [0.1, 0.3, -0.1], "r_need_lo": -0.2, "r_need_hi": 0.4})  # fmt: skip
    split = pd.DataFrame([{"model": "a", "block": b, "part": p, "auc": 0.6, "auc_lo": 0.55, "auc_hi": 0.65}
                          for b in (1, 2) for p in ("full", "token", "context")])  # fmt: skip
    heal = pd.DataFrame({"model": "t", "mode": ["all", "all", "all", "maps", "maps"], "k": [0, 1, 2, 1, 2],
                         "ppl_control": 20.0, "delta_before": [0, 1.0, 2.0, 1.0, 2.0],
                         "delta_after": [0, 0.1, 0.3, 0.2, 0.5], "delta_after_lo": [0, 0.0, 0.2, 0.1, 0.4],
                         "delta_after_hi": [0, 0.2, 0.4, 0.3, 0.6]})  # fmt: skip
    fig = fig9_routing(curve, routable, r2, tmp_path / "fig9b", identity=identity, split_auc=split, heal=heal)
    titled = {a.get_title(): a for a in fig.axes if a.get_visible() and a.get_title()}
    assert len(titled) == 6 and (tmp_path / "fig9b.png").stat().st_size > 0
    need = next(a for t, a in titled.items() if t.startswith("token identity"))
    gates = next(a for t, a in titled.items() if t.startswith("token against context"))
    healing = next(a for t, a in titled.items() if t.startswith("healing"))
    assert sum(len(c.get_offsets()) for c in need.collections if hasattr(c, "get_offsets")) >= 3
    assert [t.get_text() for t in gates.get_xticklabels()] == ["a 1", "a 2"]
    assert len([ln for ln in healing.get_lines() if ln.get_linestyle() == ":"]) == 2  # "before", per mode
    one = fig9_routing(curve[curve["model"] == "a"], routable[routable["model"] == "a"], r2, None, identity=identity,
                       split_auc=split, heal=heal)  # fmt: skip
    assert len([a for a in one.axes if a.get_visible() and a.get_title()]) == 5  # one model: 2 on top, 3 below
