"""The report's methods section: how often the intervals the verdicts read cover the truth (results table
`calibration`, written by notebook 09 through `linrec.outputs.refresh.coverage`; issue 45)."""

from __future__ import annotations

import numpy as np

from linrec.analyses.calibration import COVERAGE_FLOOR, NOMINAL
from linrec.analyses.uncertainty import EQUIVALENCE_MARGIN
from linrec.outputs.results import Results


def _pct(x) -> str:
    return "—" if x is None or not np.isfinite(float(x)) else f"{float(x):.3f}"


def methods_lines(r: Results) -> list[str]:
    """The section's Markdown lines; a short note where notebook 09 has not written the table."""
    t = r.get("calibration")
    head = ["## Methods: how often the intervals cover", ""]
    if t is None or t.empty:
        return head + ["The coverage table (`calibration`) was not written; rerun notebook 09.", ""]
    phi = t["phi"].to_numpy(float) if "phi" in t else np.full(len(t), np.nan)
    corr, window = t[np.isfinite(phi)], t[~np.isfinite(phi)]
    rows = [
        f"| {e['what']} | {int(e['n_blocks'])} | {_pct(e['phi'])} | {_pct(e['coverage95'])} | {_pct(e['coverage90'])} "
        f"| {_pct(e['p_effect'])} | {_pct(e['p_no_effect'])} |"
        for e in corr.to_dict("records")
    ]
    lines = head + [
        "Every correlation across blocks that a verdict reads (claims 3, 6b, 7b, routing) is Fisher's interval at "
        "Bartlett's effective number of blocks (`linrec.analyses.uncertainty.correlation_test`): neighbouring blocks "
        "share the residual stream, so a per-block series is autocorrelated through depth. Each row below simulates "
        f"that procedure {int(corr['reps'].iloc[0]) if len(corr) else 0} times at the data's own number of blocks and "
        "dependence (φ, the series' lag-1 autocorrelation through depth, bias-corrected) with the true correlation 0 "
        "(`linrec.analyses.calibration`): the share of 95 % and 90 % intervals that cover it, how often a false "
        f"'effect' comes out, and how often 'no effect' (|ρ| < {EQUIVALENCE_MARGIN} shown) is reached — the power "
        "the equivalence test has at this many blocks. The tests require at least "
        f"{COVERAGE_FLOOR:.2f} for a nominal {NOMINAL:.2f}.",
        "",
        "| interval | blocks | φ | 95 % covers | 90 % covers | false 'effect' | 'no effect' reached |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]
    if len(corr):
        lines += [
            f"The correlations cover {corr['coverage95'].min():.3f}–{corr['coverage95'].max():.3f} at 95 % "
            "(the moving-block percentile bootstrap used before covered 0.81–0.93 in the same simulation). 'No "
            f"effect' is out of reach for a single model (at most {corr['p_no_effect'].max():.0%} of data sets even "
            "pooled), which is why claims 3 and 6b state how many blocks a decision would take.",
            "",
        ]
    return lines + _window_lines(window)


def _window_lines(window) -> list[str]:
    """The window intervals' rows (`linrec.analyses.calibration.window_table`)."""
    if not len(window) or "setting" not in window:
        return ["The window intervals' coverage was not measured; rerun notebook 09.", ""]
    rows = [
        f"| {e['what']} | {e['procedure']} | {e['setting']} | {int(e['n_windows'])} | {_pct(e['coverage95'])} | "
        f"{_pct(e.get('coverage95_before', np.nan))} |"
        for e in window.to_dict("records")
    ]
    low = window[window["coverage95"] < COVERAGE_FLOOR]
    before = window["coverage95_before"].dropna() if "coverage95_before" in window else window["coverage95"][:0]
    return [
        "Every interval over held-out windows (R²_lin and the differences, shares and changes built from it) is "
        "the leave-one-window-out jackknife with a t quantile (`linrec.stats.jackknife`); ΔPPL's is the paired "
        "skew-corrected jackknife (Hall's transformation of that t, `linrec.analyses.uncertainty.delta_ppl_interval`), "
        "an interval for the held-out population ΔPPL of the swap. Each row simulates the procedure on planted blocks "
        "of known R²_lin whose positions are correlated within a window, or on planted per-window costs of a swap of "
        "each shape (`linrec.analyses.calibration.window_table`), at this run's number of held-out windows (the seeds "
        f"experiment's at its runs'), {int(window['reps'].iloc[0])} data sets each; 'before': the interval the tables "
        "carried before, in the same simulation (the percentile window bootstrap until issue 45 for R²_lin, the "
        "symmetric jackknife-t until issue 64 for ΔPPL, whose misses all fell below the truth). No interval over W "
        "windows can cover a cost carried by one window in W: a data set without that window, about (1 − 1/W)^W ≈ "
        "0.35 of them, holds no trace of it; a right-skewed (lognormal) cost is only partly corrected at 12 windows.",
        "",
        "| read by | interval | planted | windows | 95 % covers | before |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        (
            f"Every window interval covers {window['coverage95'].min():.3f}–{window['coverage95'].max():.3f}, at or "
            f"above the {COVERAGE_FLOOR:.2f} the tests require"
            if low.empty
            else f"{len(low)} window interval(s) cover less than {COVERAGE_FLOOR:.2f} ("
            + ", ".join(f"{e['procedure']}: {e['coverage95']:.3f}" for e in low.to_dict("records"))
            + "): treat them as somewhat narrow"
        )
        + (f"; the percentile bootstrap covered {before.min():.3f}–{before.max():.3f}." if len(before) else "."),
        "",
    ]
