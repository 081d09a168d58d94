"""linrec.outputs.methods: the report's methods section states the measured coverage of the intervals and flags a
short one (issue 45)."""

from __future__ import annotations

import numpy as np

from helpers import DEFAULT
from linrec.analyses.calibration import COVERAGE_FLOOR
from linrec.claims.tables import load_table, save_table
from linrec.outputs.methods import methods_lines
from linrec.outputs.results import Results


def test_methods_section_states_the_measured_coverage_and_flags_a_short_one(tmp_path):
    table = load_table("calibration", DEFAULT)
    corr_rows = np.isfinite(table["phi"].to_numpy(float))
    assert table is not None and (table.loc[corr_rows, "coverage95"] >= COVERAGE_FLOOR).all()
    window = table[~corr_rows]
    # every window interval, measured; below the floor only ΔPPL's stated limits (issue 64): heavily skewed
    # (lognormal σ 1) costs and one costly window in W, which no interval over W windows can cover
    limits = window["setting"].str.contains("lognormal costs, σ 1,|1 window in (?!4,)", regex=True)
    assert len(window) >= 10 and (window.loc[~limits, "coverage95"] >= COVERAGE_FLOOR).all()
    d = tmp_path / "r"
    save_table(table, "calibration", d)
    text = "\n".join(methods_lines(Results(d)))
    corr = table[corr_rows]
    assert f"cover {corr['coverage95'].min():.3f}–{corr['coverage95'].max():.3f} at 95 %" in text
    low = window[window["coverage95"] < COVERAGE_FLOOR]
    assert (
        f"Every window interval covers {window['coverage95'].min():.3f}–{window['coverage95'].max():.3f}" in text
        if low.empty
        else f"{len(low)} window interval(s) cover less than {COVERAGE_FLOOR:.2f}" in text
    )
    assert all(f"| {e['setting']} | {int(e['n_windows'])} | {e['coverage95']:.3f} |" in text for e in
               window.to_dict("records"))  # fmt: skip
    short = table.copy()
    short.loc[~corr_rows, "coverage95"] = 0.9
    save_table(short, "calibration", d)
    text = "\n".join(methods_lines(Results(d)))
    assert f"{len(window)} window interval(s) cover less than {COVERAGE_FLOOR:.2f}" in text
