"""The coverage of the intervals a results folder's verdicts read, measured (issue 45; results table `calibration`,
which the report's methods section states: `linrec.outputs.methods`): each across-block correlation a verdict reads
simulated at its data's own number of blocks and dependence (`coverage_settings`), and each window interval at the
run's number of held-out windows, its width, its window length and its largest residual ICC, with the run's own swap
windows resampled (`own_windows`); `coverage` is the table (`linrec.analyses.calibration` simulates).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from linrec.analyses.calibration import REFIT_WIDTH, R2Plant, correlation_coverage, dependence, window_table
from linrec.analyses.parallel import run_processes
from linrec.analyses.probe_summary import trained_shortfall
from linrec.analyses.routing import study_r2
from linrec.analyses.swap_summary import predictor_target
from linrec.base.errors import StaleTableError
from linrec.base.registry import TABLES
from linrec.base.tables import load_table, load_with_timings
from linrec.collect.config import CaptureConfig
from linrec.stats.jackknife import skewness


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
    probe = load_with_timings("probe", d)
    if probe is not None and len(probe):
        probe = probe.assign(nonlin=1 - probe["r2_lin_rows"])
        out += _series_settings("claim 3, r(1 − R²_lin, gain)", "pearson", probe, "nonlin", "gain")
        out += [s for s in _series_settings("claim 7b, ρ(log κ, shortfall)", "spearman",
                                            probe.assign(log_cond=np.log10(probe["cond_gram"])), "log_cond",
                                            trained_shortfall) if "pooled" not in s["what"]]  # fmt: skip
    values, swap = load_with_timings("swap_predictor_values", d), load_with_timings("swap", d)
    if values is not None and swap is not None and len(values):
        t = predictor_target(values, swap)
        out += _series_settings("claim 6b, ρ(R²_lin, ΔPPL)", "spearman", t, "r2_lin", "delta_ppl")
        out += _series_settings("claim 6b, partial ρ given depth", "partial", t, "r2_lin", "delta_ppl")
    try:
        routable, r2 = load_with_timings("routing_routable", d), _study_r2(d)
    except StaleTableError:  # notebook 06's routing predates today's columns: no setting until it is rerun
        routable = r2 = None
    if routable is not None and r2 is not None and len(routable):
        t = routable.merge(r2[["model", "block", "r2_lin"]], on=["model", "block"])
        out += [s for s in _series_settings("routing, ρ(R²_lin, routable share)", "spearman", t, "r2_lin",
                                            "routable_pct1") if "pooled" not in s["what"]]  # fmt: skip
    return out


def coverage(results_dir: str | Path, reps: int = 1000, seed: int = 0,
             chosen: Iterable[tuple[str, str]] = ()) -> pd.DataFrame:  # fmt: skip
    """The measured coverage of every interval a verdict in `results_dir` reads: each across-block correlation
    simulated at its data's number of blocks and dependence (`coverage_settings`), at ρ = 0 (where "no effect" and a
    false "effect" are also counted), and each window interval at the run's number of held-out windows
    (`linrec.analyses.calibration.window_table`, with the swaps `own_windows` resamples; `chosen`: claim 6a's blocks,
    `linrec.outputs.methods.claim_6a_blocks`) — the report's methods table (results table `calibration`)."""

    table = coverage_table(coverage_settings(results_dir), reps=reps, seed=seed)
    cap = load_table("capture", results_dir)
    if cap is not None and len(cap):  # the window intervals, at this run's number of held-out windows
        seq_len = window_length(load_table("r2_lin", results_dir))
        n_windows = int(cap["n_test_rows"].min()) // seq_len
        swap = load_table("swap", results_dir)
        # the swap table counts predicted tokens: seq_len − 1 per window
        swap_windows = (int(swap["n_test_tokens"].min()) // (seq_len - 1)
                        if swap is not None and len(swap) else None)  # fmt: skip
        table = pd.concat([table, window_table(n_windows, reps=max(reps // 2, 50), seed=seed, swap_windows=swap_windows,
                                               observed=own_windows(results_dir, chosen), plant=R2Plant(
                                                   rows_per_parameter(cap), min(REFIT_WIDTH, int(cap["d_model"].min())),
                                                   largest_icc(load_table("window_icc", results_dir)), seq_len))],
                          ignore_index=True)  # fmt: skip
    # ΔPPL's misses below (`upper_covers` is tabled) and the refit row's own diagnostics, not tabled; a column no
    # simulation wrote (a folder with no capture has no window rows, one with no correlation no correlation rows) empty
    return table.reindex(columns=list(TABLES["calibration"].columns))


def rows_per_parameter(capture: pd.DataFrame) -> float:
    """The fewest train rows per parameter of one output's affine map (n_train_rows / (d_model + 1)) over the
    capture table's models: the ratio at which the methods table refits its planted blocks (SmolLM2-135M in the
    default: 16,384 / 577 = 28.4)."""
    return float((capture["n_train_rows"] / (capture["d_model"] + 1)).min())


def window_length(r2: pd.DataFrame | None) -> int:
    """The run's positions a window (its seq_len): held-out rows over held-out windows in `r2_lin`; the capture's
    default where the table is absent."""
    if r2 is None or r2.empty:
        return CaptureConfig.seq_len
    return int(round(float((r2["n_test"] / r2["n_test_windows"]).median())))


def largest_icc(icc: pd.DataFrame | None) -> float:
    """The largest residual intraclass correlation within a window over the blocks of `window_icc` (notebook 01's
    table), rounded up to 0.005: what the methods table's planted R²_lin blocks share within a window; 0 (independent
    rows) where the table is absent or empty (a run before it, or a capture that kept no rows)."""
    x = pd.Series(np.nan if icc is None or icc.empty else icc["resid_icc"], dtype=float).dropna()
    return 0.0 if x.empty else float(np.ceil(x.max() * 200) / 200)


def own_windows(results_dir: str | Path,
                chosen: Iterable[tuple[str, str]] = ()) -> list[tuple[str, np.ndarray, np.ndarray]]:  # fmt: skip
    """(label, per-window base losses, swapped losses) of the swaps whose own windows the methods table resamples:
    each model's block that claim 6a reads (`chosen`: (model, block) of its verdict's chosen blocks, given by the
    caller) and the swap whose costs are the most right-skewed (G₁) of `results_dir`'s `swap_windows`; [] without the
    table (runs before issue 64) or with fewer than 4 windows a swap."""
    w = load_table("swap_windows", results_dir)
    if w is None or w.empty:
        return []
    sets = {(m, str(s)): g.sort_values("window") for (m, s), g in w.groupby(["model", "swap"], sort=False)}
    sets = {k: g for k, g in sets.items() if len(g) >= 4}
    out = [(f"{m}, block {b}, claim 6a's", sets[(m, b)]) for m, b in chosen if (m, b) in sets]
    if sets:
        cost = {k: skewness(g["loss_swapped"] - g["loss_base"]) for k, g in sets.items()}
        (m, s) = max(cost, key=cost.get)
        out.append((f"{m}, swap {s}, the most skewed", sets[(m, s)]))
    return [(label, g["loss_base"].to_numpy(float), g["loss_swapped"].to_numpy(float)) for label, g in out]


def _study_r2(d: Path) -> pd.DataFrame | None:
    """`r2_lin`'s rows of the corpus the swap study ran on (`study_r2`)."""
    return study_r2(load_with_timings("r2_lin", d), load_table("swap", d))


def coverage_table(settings: list[dict], reps: int = 1000, seed: int = 0, workers: int | None = None) -> pd.DataFrame:
    """One row per setting: each a dict of `correlation_coverage`'s keywords (n, phi, rho, kind, models) and an
    optional `what` (the claim it stands for), simulated with `reps` data sets; the settings side by side on
    `workers` processes (`run_processes`: each draws from its own seeded generator, so any number gives the same)."""
    settings = [dict(s) for s in settings]
    whats = [s.pop("what", "") for s in settings]
    done = run_processes([partial(correlation_coverage, reps=reps, seed=seed, **s) for s in settings], workers,
                         desc="coverage of the correlations", unit="setting")  # fmt: skip
    return pd.DataFrame([{"what": what, **row} for what, row in zip(whats, done)])
