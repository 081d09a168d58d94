"""The report's methods section: how often the intervals the verdicts read cover the truth (results table
`calibration`, measured by `linrec.analyses.coverage.coverage` and written by notebook 09 through `write_calibration`
below; issue 45), and the section in words."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from linrec.analyses.calibration import COVERAGE_FLOOR, DELTA_PPL, FITTED_MAP, NOMINAL, REFIT, REFIT_DRAWS, REFIT_WIDTH
from linrec.analyses.coverage import coverage
from linrec.analyses.uncertainty import EQUIVALENCE_MARGIN
from linrec.base.tables import load_table, save_table
from linrec.claims.rules import CLAIM6_OWN_MISS, judge
from linrec.claims.swap import RULE_6A
from linrec.outputs.results import Results, span


def _pct(x) -> str:
    return "—" if x is None or not np.isfinite(float(x)) else f"{float(x):.3f}"


def methods_lines(r: Results) -> list[str]:
    """The section's Markdown lines; a short note where notebook 09 has not written the table."""
    t = r.table("calibration")
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
        "Every correlation across blocks that a verdict reads (claims 3, 6b, routing; 7b's beside its dose) is "
        "Fisher's interval at "
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
        f"{_pct(e.get('coverage95_before', np.nan))} | {_pct(e.get('upper_covers', np.nan))} |"
        for e in window.to_dict("records")
    ]
    low = window[window["coverage95"] < COVERAGE_FLOOR]
    before = window["coverage95_before"].dropna() if "coverage95_before" in window else window["coverage95"][:0]
    before = before[window.loc[before.index, "procedure"] != DELTA_PPL]  # ΔPPL's 'before' is stated in its own lines
    reps = int(window["reps"].min())
    r2_reps = [int(n) for n in window.loc[window["procedure"].isin([FITTED_MAP, REFIT]), "reps"].unique() if n > reps]
    many = f" (the R²_lin rows {' and '.join(f'{n:,}' for n in r2_reps)}: they sit near the floor)" if r2_reps else ""
    text = (
        "Every interval over held-out windows (the fitted map's held-out R² and the differences, shares and changes "
        "built from it) is the leave-one-window-out jackknife with a t quantile (`linrec.stats.jackknife`); ΔPPL's "
        "is the paired skew-corrected jackknife at 99 % (above). Each row simulates the procedure on planted blocks "
        "of known R²_lin whose positions are correlated within a window, or on planted per-window costs of a swap "
        "of each shape (`linrec.analyses.calibration.window_table`), at this run's number of held-out windows (the "
        f"seeds experiment's at its runs'), {reps} data sets each{many}; 'before': the interval the tables carried "
        "before, in the same simulation (the percentile window bootstrap until issue 45 for R², the skew-corrected "
        "jackknife at 95 % for ΔPPL); 'upper end covers': for ΔPPL, the share of upper ends at or above the truth, "
        "what 'within budget' leans on."
    )
    span = f"{window['coverage95'].min():.3f}–{window['coverage95'].max():.3f}"
    closing = (
        f"Every window interval covers {span}, at or above the {COVERAGE_FLOOR:.2f} the tests require"
        if low.empty
        else f"{len(low)} window interval(s) cover less than {COVERAGE_FLOOR:.2f} ("
        + ", ".join(f"{e['procedure']}: {e['coverage95']:.3f}" for e in low.to_dict("records"))
        + "): treat them as somewhat narrow"
    ) + (f"; the percentile bootstrap covered {before.min():.3f}–{before.max():.3f} for R²." if len(before) else ".")
    return [
        *_fitted_map_lines(window),
        *_delta_lines(window),
        text,
        "",
        "| read by | interval | planted | windows | 95 % covers | before | upper end covers |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        closing,
        "",
    ]


def _delta_lines(window) -> list[str]:
    """What ΔPPL's interval is and covers (issue 64): the planted cost shapes' range at 99 % and at 95 % before, the
    rows no interval over these windows can lift (one costly window in W), and the run's own windows resampled."""
    d = window[window["procedure"] == DELTA_PPL]
    if not len(d):
        return []
    own = d["setting"].str.startswith("own windows")
    rare = d["setting"].str.contains(r"1 window in (?!4,)", regex=True)
    shapes = d[~own & ~rare]
    w = int(d["n_windows"].iloc[0])
    words = [
        "ΔPPL (claims 6a, 6b) gets the paired skew-corrected jackknife at a nominal **99 %**: Hall's transformation "
        "of the leave-one-window-out t, the same window left out of the base and the swapped model "
        "(`linrec.analyses.uncertainty.delta_ppl_interval` at `SWAP_LEVEL`). Under symmetric, Gamma, lognormal and "
        f"one-costly-window-in-4 costs at {w} windows it covers {span(shapes['coverage95'])} (upper end "
        f"{span(shapes['upper_covers'])}); at 95 % it covered {span(shapes['coverage95_before'])}, nearly every "
        "miss below the truth, the side that flatters a swap."
    ]
    if rare.any():
        words.append(f" One costly window in {w} it covers {span(d.loc[rare, 'coverage95'])}, and no interval over "
                     f"{w} windows can do better than about {1 - (1 - 1 / w) ** w:.2f}: a data set without that window "
                     f"(a share (1 − 1/{w})^{w} = {(1 - 1 / w) ** w:.2f}) holds no trace of it.")  # fmt: skip
    for e in d[own].to_dict("records"):
        words.append(f" This run's own windows resampled ({e['setting'].split('(', 1)[1].split(')')[0]}): "
                     f"{e['coverage95']:.3f}, upper end {e['upper_covers']:.3f}.")  # fmt: skip
    if own.any():
        words.append(" Claim 6a reads its chosen block's interval only where the deciding end misses at most "
                     f"{CLAIM6_OWN_MISS:.1%} of that block's own resamples (else 'undecided').")  # fmt: skip
    else:
        words.append(" This run stored no per-window losses: its swap tables carry the 95 % interval of its time (a "
                     "jackknife-t or a paired percentile bootstrap), whose skew cannot be checked.")  # fmt: skip
    return ["".join(words), ""]


def _fitted_map_lines(window) -> list[str]:
    """What the R²_lin interval is for, with the coverage of its two rows: the fitted map's held-out R² (what it
    covers) and the block's R²_lin with the fit's variability (`refit_coverage`; issue 64), flagged where short."""
    own, refit = window[window["procedure"] == FITTED_MAP], window[window["procedure"] == REFIT]
    if not len(own) or not len(refit):
        return []
    lo = refit["coverage95"].min()
    label = refit["what"].iloc[0].split(": ", 1)[-1]
    setting = refit["setting"].iloc[0].split(", true")[0].split(", ", 1)[-1]  # "refit on N rows (… per parameter, d …)"
    icc = own["setting"].iloc[0].partition("residual ICC ")[2].split(",")[0]
    shared = (f", their residuals sharing {icc} of their variance within a window: this run's largest, rounded up, "
              "table `window_icc`" if icc else ", their residuals independent within a window")  # fmt: skip
    # the truth's refits beside those data sets (`linrec.analyses.calibration.refit_draws`: as many, up to REFIT_DRAWS)
    draws = min(REFIT_DRAWS, max(int(refit["reps"].min()), 1))
    capped = re.search(rf"\bd {REFIT_WIDTH}\b", setting) is not None  # the run's models are at least that wide
    where = (f"under the {COVERAGE_FLOOR:.2f} floor the tests require of a nominal {NOMINAL:.2f}"
             if lo < COVERAGE_FLOOR else f"at or above the {COVERAGE_FLOOR:.2f} floor")  # fmt: skip
    return [
        "Every R²_lin interval in the tables (`r2_lo`, `r2_hi`) is an interval for the **held-out R² of the fitted "
        "map**: this capture's map, fitted once on the train split and held fixed, scored on held-out text like "
        f"this; it covers that {own['coverage95'].min():.3f}–{own['coverage95'].max():.3f} (rows 'held-out R² of the "
        f"fitted map'{shared}). It leaves out the fit's own variability; as an interval for the **block's R²_lin** — "
        "the held-out R² a refit on other text of the same size would score, its expected value estimated by a "
        f"separate Monte Carlo over {draws:,} planted refits, each scored exactly — it covers "
        f"{span(refit['coverage95'])} (rows '{label}': {setting}), {where}"
        + (
            "; for the block's R²_lin it is somewhat narrow, though the same planted blocks' intervals miss their own "
            "fitted map about as often: what falls short is the window jackknife at this window correlation more "
            "than the fit"
            if lo < COVERAGE_FLOOR
            else ""
        )
        + ". The fit's spread is about √(2/p) of its mean excess error for p parameters per output: it weighs most "
        "at a few features and little at the width planted here"
        + (f", the run's width up to {REFIT_WIDTH} features" if capped else ", the run's own")
        + " (`docs/numerics.md`).",
        "",
    ]


# ---- the measured coverage of every interval procedure a verdict reads (issue 45) ---------------------------------
def claim_6a_blocks(results_dir: str | Path) -> list[tuple[str, str]]:
    """(model, block) of each model's block claim 6a reads in `results_dir` (its verdict's chosen block, `RULE_6A`):
    the swaps whose own windows `coverage` resamples; none where the run stored no per-window losses."""
    w = load_table("swap_windows", results_dir)
    if w is None or w.empty:
        return []
    tables = {n: load_table(n, results_dir) for n in ("swap", "swap_predictor_values")}
    return [(e["model"], str(e["chosen_block"])) for e in judge(RULE_6A, tables).evidence]


def write_calibration(results_dir: str | Path, seed: int = 0, reps: int = 1000) -> pd.DataFrame:
    """`coverage(results_dir, reps, seed)`, claim 6a's own windows resampled (`claim_6a_blocks`), written as the
    results table `calibration` in `results_dir` (notebook 09's first step: the report's methods section reads it);
    the table."""
    table = coverage(results_dir, reps=reps, seed=seed, chosen=claim_6a_blocks(results_dir))
    save_table(table, "calibration", results_dir)
    return table
