"""linrec.outputs.plots_bands: figure 7c draws one line per model with every band of the table, its interval as error
bars, and shades the bands that do not decide."""

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402

from linrec.outputs.plots_bands import fig7c_bands  # noqa: E402


def test_share_against_band_per_model(tmp_path):
    bands = pd.DataFrame({"model": ["a"] * 3 + ["b"] * 2, "band": [1, 2, 3, 1, 2],
                          "wmi": [0.1, 0.3, 0.5, 0.0, -0.1], "wmi_lo": [-0.1, 0.1, 0.2, -0.3, -0.4],
                          "wmi_hi": [0.3, 0.5, 0.8, 0.3, 0.2]})  # fmt: skip
    fig = fig7c_bands(bands, tmp_path / "fig7c")
    assert (tmp_path / "fig7c.png").stat().st_size > 0 and (tmp_path / "fig7c.pdf").stat().st_size > 0
    (ax,) = fig.axes
    assert [c.get_label() for c in ax.containers] == ["a", "b"]  # one error-bar line per model
    lines = [c.lines[0] for c in ax.containers]
    assert [list(line.get_xdata()) for line in lines] == [[1, 2, 3], [1, 2]]
    assert [list(line.get_ydata()) for line in lines] == [[0.1, 0.3, 0.5], [0.0, -0.1]]
    labels = ax.get_legend_handles_labels()[1]
    assert "a" in labels and "b" in labels and "bands < 2: not deciding" in labels
