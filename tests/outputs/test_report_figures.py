"""linrec.outputs.report_figures: figures linked relative to the report or named missing, and another profile's
figure shown only when its run is current."""

import re
from pathlib import Path

import numpy as np
import pandas as pd

from linrec.claims.registry import TABLES
from linrec.claims.tables import load_table, save_table
from linrec.outputs.report import render
from linrec.outputs.report_figures import FIGURES, OTHER_PROFILE, stale_tables


def _results(
    tmp_path: Path, max_r2: float = 0.99, jump: float = 0.7, gain: float = 0.01, ci=(-0.30, 0.25), ci90=(-0.2, 0.2)
) -> Path:
    """A results directory with the tables of claims 1 and 3, written through the registry."""
    d = tmp_path / "results"
    summary = {
        "model": "m", "n_blocks": 12, "r2_min": 0.2, "r2_max": max_r2, "max_adjacent_jump": 0.9,
        "direction_changes": 7, "max_jump_disjoint": jump, "direction_changes_disjoint": 5,
        "as_extreme_as_paper": False, "r2_ex_first_min": 0.2, "max_jump_disjoint_ex_first": jump,
        "direction_changes_disjoint_ex_first": 1, "cond_gram_median": 1e6, "r2_ex_first_max": 0.5,
        "moves_tested": 10, "moves_fdr": 9, "max_jump_fdr": jump, "direction_changes_fdr": 5,
        "moves_tested_ex_first": np.nan, "moves_fdr_ex_first": np.nan, "max_jump_fdr_ex_first": np.nan,
        "direction_changes_fdr_ex_first": np.nan, "first_token_blocks": "",
        "profile_tokens": 16384.0,
    }  # fmt: skip
    save_table(pd.DataFrame([summary]), "r2_lin_summary", d)
    probe = {
        "model": "m", "n_blocks": 12, "gain_median": gain, "gain_max": 0.05, "gain_min": 0.0, "gain_quad_median": gain,
        "quad_excess_median": 0.0, "pearson_r": 0.02, "p": 0.9, "ci_lo": ci[0], "ci_hi": ci[1], "ci_lo90": ci90[0],
        "ci_hi90": ci90[1], "ci_lo_iid": ci[0], "ci_hi_iid": ci[1], "n_eff": 10.0, "n_needed": 120, "correlation": "",
        "detectable_r": 0.7,
        "n_stop_validation": 12, "n_stop_flattened": 0, "n_stop_max_epochs": 0, "seconds_probe_total": 1.0,
        "sweep_rank_min": 16, "sweep_gain_median_rank_min": gain, "sweep_rank_max": 256,
        "sweep_gain_median_rank_max": 0.04,
    }  # fmt: skip
    save_table(pd.DataFrame([probe, {**probe, "model": "all"}]), "probe_summary", d)  # one model and its pool
    blocks = pd.DataFrame({c: [0.5, 0.6] for c in TABLES["r2_lin"].columns}).assign(model="m", block=[0, 1])
    save_table(blocks, "r2_lin", d)
    return d


def test_figures_are_linked_relative_to_the_report_or_named_missing(tmp_path):
    d, figs = _results(tmp_path), tmp_path / "figs"
    figs.mkdir()
    (figs / "fig1_method.png").write_bytes(b"png")
    text = render(d, figs, tmp_path / "paper" / "report.md")
    assert "](../figs/fig1_method.png)" in text
    for stem, nb, _ in FIGURES[1:]:
        if stem in OTHER_PROFILE:  # drawn by another profile: named, with where to find it
            assert f"Drawn by `{OTHER_PROFILE[stem][0]}`, not by this profile" in text
        else:
            assert f"not drawn: notebook {nb} has not run in this profile" in text
    assert "missing" not in text
    rows = re.findall(r"^\| \[(?:1|2a|2b|[3-5]|6a|6b|7a|7b)\]\(#claim-", text, flags=re.M)
    assert len(rows) == 10  # a row per claim (2, 6 and 7 in two)


def _project_with_a_curve_run(tmp_path: Path, stale: bool) -> tuple[Path, str]:
    """A project folder (pyproject.toml beside notebooks/) whose results/curve/ holds a last run of params/curve.yaml
    (its Figure 2c and notebook 02's r2_lin table, with its registered columns or, `stale`, without two of them as
    an older linrec wrote it), and the default profile's report rendered into paper/."""
    root = tmp_path / "project"
    (root / "notebooks").mkdir(parents=True)
    (root / "pyproject.toml").write_text("")
    d = _results(root)
    curve = root / "results" / "curve"
    blocks = load_table("r2_lin", d)
    if stale:
        curve.mkdir(parents=True)
        blocks.drop(columns=["r2_ex_first_lo", "r2_ex_first_hi"]).to_csv(curve / "r2_lin.csv", index=False)
    else:
        save_table(blocks, "r2_lin", curve)
    (curve / "figures").mkdir()
    (curve / "figures" / "fig2c_learning_curves.png").write_bytes(b"png")
    return curve, render(d, root / "figures", root / "paper" / "report.md")


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
