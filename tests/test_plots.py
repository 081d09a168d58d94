"""The swap figures draw from the tables notebook 06 writes, including a model whose blocks got no position
variants and ΔPPL below 0."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from linrec.plots import fig2_r2_lin, fig6_swap  # noqa: E402


def _swap(model, n, variants=()):
    rows = []
    for b in range(n):
        for first in ("map", *(variants if b == 1 else ())):
            d = float(b - 1) + (0.5 if first == "map" else 0.0)  # block 0 swaps for less than the base
            rows.append({"model": model, "block": b, "first": first, "r2_lin": 0.5 + 0.1 * b, "delta_ppl": d,
                         "delta_lo": d - 0.2, "delta_hi": d + 0.2, "ppl_base": 20.0})  # fmt: skip
    return pd.DataFrame(rows)


def test_swap_figures_with_and_without_variants(tmp_path):
    table = pd.concat([_swap("a", 4, ("ffn", "mean")), _swap("b", 3)], ignore_index=True)
    curve = pd.DataFrame({"model": "a", "block": 1, "rank": [2, 8], "factored": [True, False], "params": [10, 40],
                          "params_ffn": 100, "delta_ppl": [2.0, 0.5], "delta_lo": [1.5, 0.2],
                          "delta_hi": [2.5, 0.9]})  # fmt: skip
    fig = fig6_swap(table, curve, tmp_path / "fig6")
    assert len(fig.axes) == 3 and (tmp_path / "fig6.png").stat().st_size > 0
    (c,) = [a for a in fig.axes if "first position" in a.get_title()]
    assert len(c.collections) == 1  # one scatter: model b has no variants and is left out of panel (c)
    r2 = pd.DataFrame({"model": np.repeat(["a", "b"], [4, 3]), "block": [0, 1, 2, 3, 0, 1, 2],
                       "r2_lin": 0.7, "r2_lo": 0.6, "r2_hi": 0.8, "r2_feature_median": 0.5})  # fmt: skip
    fig = fig2_r2_lin(r2, tmp_path / "fig2", swap=table)
    bottom = fig.axes[2:]
    assert [len(ax.patches) for ax in bottom] == [4, 3]  # one bar per block, map rows only
    fig6_swap(table[table["model"] == "b"], curve.iloc[:0], tmp_path / "fig6b")  # no variants anywhere: 2 panels
