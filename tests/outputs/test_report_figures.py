"""linrec.outputs.report_figures: figures linked relative to the report or named missing, and another profile's
figure shown only when its run is current."""

import re

from helpers import claims_1_3_results as _results
from helpers import project_with_a_curve_run as _project_with_a_curve_run
from linrec.base.tables import stale_tables, stand_ins
from linrec.outputs.catalog import CATALOG
from linrec.outputs.report import render
from linrec.outputs.report_figures import DRAWN_FROM, FIGURES


def test_figures_are_linked_relative_to_the_report_or_named_missing(tmp_path):
    d, figs = _results(tmp_path), tmp_path / "figs"
    figs.mkdir()
    (figs / "fig1_method.png").write_bytes(b"png")
    text = render(d, figs, tmp_path / "paper" / "report.md")
    assert "](../figs/fig1_method.png)" in text
    for stem, nb, _ in FIGURES[1:]:
        if stem == "fig8c_contrast":  # the report's own, drawn from the checkout's zoos (none beside this folder)
            assert f"![{stem}](../figs/{stem}.png)" in text
        elif stem in DRAWN_FROM:  # drawn by another profile: named, with where to find it
            other = stand_ins(DRAWN_FROM[stem])[0]
            assert f"Drawn by `params/{other}.yaml`, not by this profile; see `results/{other}/`" in text
        else:
            assert f"not drawn: notebook {nb} has not run in this profile" in text
    assert "missing" not in text
    ids = "|".join(str(entry.id) for entry in CATALOG)
    rows = re.findall(rf"^\| \[(?:{ids})\]\(#claim-", text, flags=re.M)
    assert len(rows) == len(CATALOG)  # a row per claim of the catalog


def test_another_profiles_figure_is_shown_only_when_its_run_is_current(tmp_path):
    """results/curve/ was written by an older linrec (its r2_lin.csv lacks r2_ex_first_lo/hi) and the default report
    embedded its Figure 2c as if current (issue 45). Now: a current run's figure is shown, with where it came from;
    an old one's is not, and the report says which tables are old and the command that refreshes them, beside the
    figure's caption and in the limitation that points at the learning curve."""
    refresh = "`linrec figures --params params/curve.yaml --only 02` refreshes it"
    curve, text = _project_with_a_curve_run(tmp_path / "current", stale=False)
    assert stale_tables(curve, "02") == []
    assert "![fig2c_learning_curves](../results/curve/figures/fig2c_learning_curves.png)" in text
    assert "from the last run of `params/curve.yaml`: `results/curve/`" in text
    assert "its last run is in `results/curve/`" in text and "older linrec" not in text
    curve, text = _project_with_a_curve_run(tmp_path / "stale", stale=True)
    assert stale_tables(curve, "02") == ["r2_lin"]
    assert "results/curve/figures" not in text  # neither embedded nor linked
    assert text.count("was written by an older linrec") == 2 and text.count(refresh) == 2
    assert "Drawn by `params/curve.yaml`, not by this profile: its last run, in `results/curve/`, was written" in text
    assert "`r2_lin.csv` lack columns this linrec writes" in text
    assert "learning curve measures both. This profile skips it and `params/curve.yaml` runs it; its last run" in text
