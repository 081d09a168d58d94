"""Recompute a results folder's summary tables from its per-block tables, with today's procedures.

The summaries a verdict reads (`probe_summary`, `probe_summary_ex_first`, `pitfall_summary`, `swap_predictors`,
`routing_summary`, `routing_anchor`) are functions of per-block tables the notebooks already wrote (`probe`,
`probe_ranks`, `probe_ex_first`, `pitfall_budget`, `pitfall_dose`, `swap_predictor_values`, `swap`,
`routing_routable`, `r2_lin`, `routing_identity`, `routing_split_auc`); claim 2b's `controls_null_blocks` and the
intervals of `controls_decomposition` are functions of `controls_weight_nulls`, `controls_cross_matrix` and the
decomposition's window-bootstrap interval;
claim 5's word in `corpora_verdict` is a function of its own shares and intervals; the seeds experiment's level and
shape points (`training_comparisons`, `training_distance_curve`) are functions of `training_profiles` (their
intervals and floors need the held-out windows: left as written, NaN where a former linrec did not write them), and
`training_verdict` of the comparisons (issue 45's convention for shape and level, `linrec.claims.rules`). No
model, capture or perplexity is needed to redo them. When a procedure changes (issue 45
replaced the moving-block percentile bootstrap of the correlations across blocks, which under-covered, by Fisher's
interval at an effective number of blocks), `refresh` brings a folder's summaries up to date in seconds, exactly
as notebooks 03, 06 and 07 would write them from the same per-block tables; the executed notebooks in that folder keep
what they printed when they ran.

    python -m linrec.outputs.refresh results/full
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from linrec.analyses.calibration import coverage_table, dependence, window_table
from linrec.analyses.seeds import from_profiles
from linrec.base.errors import LinrecError, StaleTableError
from linrec.claims.corpora import LEVEL_EX_FIRST, overlay_word
from linrec.claims.learned import (
    comparison_words,
    controls_findings,
    decomposition_intervals,
    null_blocks,
    seeds_verdict,
)
from linrec.claims.probe import pitfall_summary, probe_summary
from linrec.claims.registry import TABLES
from linrec.claims.routing import anchor_table, routing_summary
from linrec.claims.swap import swap_predictors
from linrec.claims.tables import ROW_KEYS, load_table, load_timings, save_table, table_path
from linrec.measure.config import CaptureConfig
from linrec.outputs.catalog import rule
from linrec.stats import N_BOOT
from linrec.stats.jackknife import skewness


def _read_all(results_dir: Path, name: str) -> pd.DataFrame | None:
    """Table `name` as its notebook had it: the result columns with the timing columns (`timings/<name>.csv`)
    joined back on the columns that name each row. None where the notebook did not write it."""
    df = load_table(name, results_dir)
    timings = load_timings(name, results_dir)
    if df is None or timings is None:
        return df
    keys = [c for c in ROW_KEYS if c in df.columns and c in timings.columns]
    extra = [c for c in timings.columns if c not in df.columns]
    if not keys or not extra or len(timings) != len(df):
        return df
    return df.merge(timings[keys + extra], on=keys, how="left", validate="one_to_one")


def refresh(results_dir: str | Path, n_boot: int = N_BOOT, seed: int = 0) -> list[str]:
    """Rewrite the summary tables of `results_dir` that can be rebuilt from its per-block tables; returns their
    names. A summary whose inputs are missing is left as it is."""
    d = Path(results_dir)
    if not d.is_dir():
        raise LinrecError(f"results directory {d} not found; give a folder `linrec figures` wrote")
    done = []
    probe = _read_all(d, "probe")
    if probe is not None:
        save_table(probe_summary(probe, _read_all(d, "probe_ranks"), n_boot=n_boot, seed=seed), "probe_summary", d)
        done.append("probe_summary")
        try:
            budget, dose = _read_all(d, "pitfall_budget"), _read_all(d, "pitfall_dose")
        except StaleTableError as err:  # claim 7's runs predate today's columns: only notebook 03 redoes them
            print(f"{d}: pitfall_summary left as it is ({err})", file=sys.stderr)
        else:
            save_table(pitfall_summary(probe, budget, dose, n_boot, seed), "pitfall_summary", d)
            done.append("pitfall_summary")
    ex = _read_all(d, "probe_ex_first")
    if ex is not None:
        save_table(probe_summary(ex, None, n_boot=n_boot, seed=seed), "probe_summary_ex_first", d)
        done.append("probe_summary_ex_first")
    values, swap = _read_all(d, "swap_predictor_values"), _read_all(d, "swap")
    pred = None
    if values is not None and swap is not None:
        pred = swap_predictors(values, swap, n_boot=n_boot, seed=seed)
        save_table(pred, "swap_predictors", d)
        done.append("swap_predictors")
    try:
        routable, r2, identity = _read_all(d, "routing_routable"), _study_r2(d), _read_all(d, "routing_identity")
        split = _read_all(d, "routing_split_auc")
    except StaleTableError as err:  # routing's tables predate today's columns: only notebook 06 redoes them
        print(f"{d}: routing_summary and routing_anchor left as they are ({err})", file=sys.stderr)
    else:
        if routable is not None and r2 is not None and table_path("routing_summary", d).exists():
            save_table(routing_summary(routable, r2, pred, identity), "routing_summary", d)
            done.append("routing_summary")
        if (identity is not None or split is not None) and table_path("routing_anchor", d).exists():
            save_table(anchor_table(identity, split), "routing_anchor", d)
            done.append("routing_anchor")
    nulls, matrix = _read_all(d, "controls_weight_nulls"), _read_all(d, "controls_cross_matrix")
    dec = _read_raw(d, "controls_decomposition")  # read as written: the columns refresh adds may be missing
    if dec is not None:  # the columns refresh writes are computed again; any a former linrec wrote are dropped
        dec = dec[[c for c in dec.columns if c in TABLES["controls_decomposition"].columns]]
    if nulls is not None and matrix is not None and dec is not None:
        blocks = null_blocks(nulls)
        save_table(blocks, "controls_null_blocks", d)
        decomposed = decomposition_intervals(dec, matrix, blocks)
        save_table(decomposed, "controls_decomposition", d)
        done += ["controls_null_blocks", "controls_decomposition"]
        init_summary, learned = _read_all(d, "controls_random_init_summary"), _read_all(d, "controls_learned")
        if init_summary is not None and learned is not None and table_path("controls_verdict", d).exists():
            lines = controls_findings(init_summary, _read_all(d, "controls_inputs_summary"),
                                      _read_all(d, "controls_cross_feed_summary"), rule("2a")(learned),
                                      rule("2b")(decomposed))  # fmt: skip
            save_table(pd.DataFrame({"finding": lines}), "controls_verdict", d)
            done.append("controls_verdict")
    done += refresh_corpora(d) + refresh_training(d)
    if coverage_settings(d):
        save_table(coverage(d), "calibration", d)
        done.append("calibration")
    return done


def _read_raw(d: Path, name: str) -> pd.DataFrame | None:
    """Table `name` as written, whatever linrec wrote it (the columns a newer registry adds may be missing)."""
    path = table_path(name, d)
    return pd.read_csv(path) if path.exists() else None


def refresh_corpora(d: Path) -> list[str]:
    """Claim 5's word (`overlay_verdict`, shape and level) on `corpora_verdict`'s own shares; the level without
    position 0, where a former linrec did not measure it, NaN (notebook 05 measures it). A table whose intervals are
    the percentile bootstrap's (it counts `n_boot`, not `n_windows`) is left as it is: its claim stays "rerun
    notebook 05"."""

    t = _read_raw(d, "corpora_verdict")
    if t is None or "shape_hi" not in t or "n_windows" not in t:
        return []
    t = t.assign(**{c: t[c] if c in t else float("nan") for c in LEVEL_EX_FIRST})
    t["overlay_verdict"] = [overlay_word(r) for r in t.to_dict("records")]
    save_table(t[list(TABLES["corpora_verdict"].columns)], "corpora_verdict", d)
    return ["corpora_verdict"]


def refresh_training(d: Path) -> list[str]:
    """The seeds experiment's comparisons with their level and shape (points from `training_profiles` where missing),
    their words, and the verdict row, by today's rule."""

    comp, prof = _read_raw(d, "training_comparisons"), load_table("training_profiles", d)
    if comp is None or comp.empty or prof is None:
        return []
    comp = comparison_words(from_profiles(comp, prof))
    save_table(comp[list(TABLES["training_comparisons"].columns)], "training_comparisons", d)
    done = ["training_comparisons"]
    curve = _read_raw(d, "training_distance_curve")
    if curve is not None:
        save_table(from_profiles(curve, prof)[list(TABLES["training_distance_curve"].columns)],
                   "training_distance_curve", d)  # fmt: skip
        done.append("training_distance_curve")
    save_table(pd.DataFrame([seeds_verdict(comp)]), "training_verdict", d)
    return [*done, "training_verdict"]


# ---- the measured coverage of every interval procedure a verdict reads (issue 45) ---------------------------------
def _series_settings(what: str, kind: str, t: pd.DataFrame, a: str, b, models: str = "model") -> list[dict]:
    """Settings for `correlation_coverage` at each model's number of blocks and its own dependence (the mean AR(1)
    coefficient of the two series through depth), and one for the models pooled. A series of 3 blocks or fewer is
    left out: its Fisher interval has no degrees of freedom, so the correlation carries no interval (its verdict
    reads "inconclusive") and there is no coverage to measure."""

    out = []
    for model, g in t.groupby(models, sort=False):
        if len(g) <= 3:
            continue
        g = g.sort_values("block")
        yb = g[b] if isinstance(b, str) else b(g)
        phi = round((dependence(g[a]) + dependence(yb)) / 2, 2)
        out.append({"what": f"{what}: {model}", "n": len(g), "phi": phi, "kind": kind})
    if len(out) > 1:
        n = int(round(sum(o["n"] for o in out) / len(out)))
        phi = round(sum(o["phi"] for o in out) / len(out), 2)
        out.append({"what": f"{what}: models pooled", "n": n, "phi": phi, "kind": kind, "models": len(out)})
    return out


def coverage_settings(results_dir: str | Path) -> list[dict]:
    """One simulation setting per across-block correlation a verdict reads in `results_dir`, at the data's own
    number of blocks and dependence: claim 3 (Pearson r(1 − R²_lin, gain)), 6b (Spearman ρ(R²_lin, ΔPPL) and the
    partial ρ given depth), 7b (ρ(log κ, shortfall)), routing (ρ(R²_lin, routable share))."""

    d = Path(results_dir)
    out = []
    probe = _read_all(d, "probe")
    if probe is not None and len(probe):
        probe = probe.assign(nonlin=1 - probe["r2_lin_rows"])
        out += _series_settings("claim 3, r(1 − R²_lin, gain)", "pearson", probe, "nonlin", "gain")
        short = lambda g: g["r2_ceiling_rows"] - g[["r2_trained_adam", "r2_trained_sgd"]].max(axis=1)  # noqa: E731
        out += [s for s in _series_settings("claim 7b, ρ(log κ, shortfall)", "spearman",
                                            probe.assign(log_cond=np.log10(probe["cond_gram"])), "log_cond", short)
                if "pooled" not in s["what"]]  # fmt: skip
    values, swap = _read_all(d, "swap_predictor_values"), _read_all(d, "swap")
    if values is not None and swap is not None and len(values):
        rows = swap[swap["first"] == "map"] if "first" in swap.columns else swap
        t = values.merge(rows[["model", "block", "delta_ppl"]], on=["model", "block"])
        out += _series_settings("claim 6b, ρ(R²_lin, ΔPPL)", "spearman", t, "r2_lin", "delta_ppl")
        out += _series_settings("claim 6b, partial ρ given depth", "partial", t, "r2_lin", "delta_ppl")
    try:
        routable, r2 = _read_all(d, "routing_routable"), _study_r2(d)
    except StaleTableError:  # notebook 06's routing predates today's columns: no setting until it is rerun
        routable = r2 = None
    if routable is not None and r2 is not None and len(routable):
        t = routable.merge(r2[["model", "block", "r2_lin"]], on=["model", "block"])
        out += [s for s in _series_settings("routing, ρ(R²_lin, routable share)", "spearman", t, "r2_lin",
                                            "routable_pct1") if "pooled" not in s["what"]]  # fmt: skip
    return out


def most_skewed(results_dir: str | Path) -> tuple[str, np.ndarray] | None:
    """(label, per-window costs per token) of the swap in `results_dir`'s `swap_windows` whose costs are the most
    right-skewed (G₁) — the methods table's ΔPPL row at the run's own skew; None without the table (runs before issue
    64) or with fewer than 4 windows a swap."""
    w = load_table("swap_windows", results_dir)
    if w is None or w.empty:
        return None
    best = None
    for (model, swap), g in w.groupby(["model", "swap"], sort=False):
        cost = (g["loss_swapped"] - g["loss_base"]).to_numpy(float)
        if len(cost) >= 4 and (best is None or skewness(cost) > best[0]):
            best = (skewness(cost), f"{model}, swap {swap}, G₁ {skewness(cost):.2f}", cost)
    return None if best is None else best[1:]


def coverage(results_dir: str | Path, reps: int = 1000, seed: int = 0) -> pd.DataFrame:
    """The measured coverage of every interval a verdict in `results_dir` reads: each across-block correlation
    simulated at its data's number of blocks and dependence (`coverage_settings`), at ρ = 0 (where "no effect" and a
    false "effect" are also counted), and each window interval at the run's number of held-out windows
    (`linrec.analyses.calibration.window_table`) — the report's methods table (results table `calibration`)."""

    table = coverage_table(coverage_settings(results_dir), reps=reps, seed=seed)
    cap = load_table("capture", results_dir)
    if cap is not None and len(cap):  # the window intervals, at this run's number of held-out windows
        n_windows = int(cap["n_test_rows"].min()) // CaptureConfig.seq_len
        swap = load_table("swap", results_dir)
        # the swap table counts predicted tokens: seq_len − 1 per window
        swap_windows = (int(swap["n_test_tokens"].min()) // (CaptureConfig.seq_len - 1)
                        if swap is not None and len(swap) else None)  # fmt: skip
        table = pd.concat([table, window_table(n_windows, reps=max(reps // 2, 50), seed=seed, swap_windows=swap_windows,
                                               observed=most_skewed(results_dir))], ignore_index=True)  # fmt: skip
    return table.drop(columns=["miss_below", "miss_below_before"], errors="ignore")  # ΔPPL's, not tabled


def write_calibration(results_dir: str | Path, seed: int = 0, reps: int = 1000) -> pd.DataFrame:
    """`coverage(results_dir, reps, seed)` written as the results table `calibration` in `results_dir` (notebook 09's
    first step: the report's methods section reads it); the table."""
    table = coverage(results_dir, reps=reps, seed=seed)
    save_table(table, "calibration", results_dir)
    return table


def _study_r2(d: Path) -> pd.DataFrame | None:
    """`r2_lin`'s rows of the corpus the swap study ran on (notebook 06's ceilings): the swap table's corpus, else the
    first in r2_lin; None without r2_lin."""
    r2 = _read_all(d, "r2_lin")
    if r2 is None or "corpus" not in r2.columns or not len(r2):
        return r2
    swap = load_table("swap", d)
    corpus = swap["corpus"].iloc[0] if swap is not None and "corpus" in swap.columns and len(swap) else None
    return r2[r2["corpus"] == (corpus if corpus is not None else r2["corpus"].iloc[0])]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m linrec.outputs.refresh RESULTS_DIR [RESULTS_DIR ...]", file=sys.stderr)
        return 2
    for folder in args:
        print(f"{folder}: refreshed {', '.join(refresh(folder)) or 'nothing'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
