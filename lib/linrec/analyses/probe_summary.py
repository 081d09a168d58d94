"""Notebook 03's summaries, table to table: the bilinear probe's gain and its correlation with the block's
nonlinearity (claim 3, `probe_summary`), and how far the trained baselines fall short of the closed-form ceiling and
why (claims 7a and 7b, `pitfall_summary`: the budget curve, the constructed dose and its budget, `dose_budget`). The
rules that judge them are `linrec.claims.probe`'s.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from linrec.analyses.pitfall import REACHED, steps_to_reach
from linrec.analyses.probe import TRAIN_DEFAULTS
from linrec.analyses.uncertainty import (
    INCONCLUSIVE,
    POOLED,
    correlation_test,
    detectable_correlation,
    spearman,
    trend_slope,
)
from linrec.base.tables import require
from linrec.stats import N_BOOT

# claim 7a: a block is "short" where the better trained baseline falls more than this below the closed-form ceiling
CLAIM7_SHORTFALL = 0.01


def _probe_row(t: pd.DataFrame, sweep: pd.DataFrame | None, n_boot: int, seed: int, pooled: bool = False) -> dict:
    t = t.sort_values(["model", "block"]) if "block" in t else t  # adjacent blocks adjacent: their dependence
    stops = t["probe_stop"].value_counts()
    nonlin = 1 - t["r2_lin_rows"].to_numpy(float)
    gain = t["gain"].to_numpy(float)
    corr = {"rho": np.nan, "lo": np.nan, "hi": np.nan, "lo90": np.nan, "hi90": np.nan, "lo_iid": np.nan,
            "hi_iid": np.nan, "p": np.nan, "n_eff": np.nan, "n_needed": np.nan, "outcome": INCONCLUSIVE}  # fmt: skip
    if len(t) >= 3 and np.ptp(nonlin) > 0 and np.ptp(gain) > 0:
        groups = t["model"].to_numpy() if pooled and "model" in t else None  # pooled: blocks within model
        corr = correlation_test(nonlin, gain, kind="pearson", groups=groups)
    p = corr["p"]
    row = {
        "n_blocks": len(t),
        "gain_median": float(t["gain"].median()),
        "gain_max": float(t["gain"].max()),
        "gain_min": float(t["gain"].min()),
        "gain_quad_median": float(t["gain_quad"].median()),
        "quad_excess_median": float((t["gain_quad"] - t["gain"]).median()),
        "pearson_r": corr["rho"],
        "p": p,
        "ci_lo": corr["lo"],
        "ci_hi": corr["hi"],
        "ci_lo90": corr["lo90"],
        "ci_hi90": corr["hi90"],
        "ci_lo_iid": corr["lo_iid"],
        "ci_hi_iid": corr["hi_iid"],
        "n_eff": corr["n_eff"],
        "n_needed": corr["n_needed"],
        "correlation": corr["outcome"],
        "detectable_r": detectable_correlation(len(t)),
        **{f"n_stop_{k}": int(stops.get(k, 0)) for k in ("validation", "flattened", "max_epochs")},
        "seconds_probe_total": float(t["seconds_probe"].sum()),
    }
    row.update({"sweep_rank_min": np.nan, "sweep_gain_median_rank_min": np.nan, "sweep_rank_max": np.nan,
                "sweep_gain_median_rank_max": np.nan})  # fmt: skip
    if sweep is not None and not sweep.empty:
        lo, hi = sweep["rank"].min(), sweep["rank"].max()
        row.update(
            {
                "sweep_rank_min": int(lo),
                "sweep_gain_median_rank_min": float(sweep.loc[sweep["rank"] == lo, "gain"].median()),
                "sweep_rank_max": int(hi),
                "sweep_gain_median_rank_max": float(sweep.loc[sweep["rank"] == hi, "gain"].median()),
            }
        )
    return row


def probe_summary(
    probe: pd.DataFrame, sweep: pd.DataFrame | None = None, n_boot: int = N_BOOT, seed: int = 0
) -> pd.DataFrame:
    """Per model, then one `POOLED` row: the probe's gain, the closed-form quadratic's gain on the top input
    components (`quad_excess_median`: how far the probe stays below it), Pearson r(1 − R²_lin, gain) with its 95 %
    and 90 % Fisher intervals at the effective number of blocks (`n_eff`; `linrec.analyses.uncertainty.
    correlation_test`: `ci_lo`/`ci_hi`, `ci_lo90`/`ci_hi90`; the independent-blocks interval beside them as
    `ci_lo_iid`/`ci_hi_iid`; `p` at n_eff), `correlation`, the equivalence outcome ("no effect" = |r| < 0.3
    shown), `n_needed` (the blocks at which that test would decide with 80 % power at this dependence),
    `detectable_r` (the |r| that many blocks detect with 80 % power at the 5 % level), and from `sweep`
    (`linrec.analyses.probe.rank_sweep`) the median gain at its smallest and largest rank. The `POOLED` row pools
    the models' blocks with a model effect: each model's blocks centred on their own (the correlation within
    models), the effective n summed over models."""
    require(probe, ["model", "gain", "gain_quad", "r2_lin_rows", "probe_stop", "seconds_probe"], "probe_summary")
    rows = []
    groups = [(m, t) for m, t in probe.groupby("model", sort=False)] + [(POOLED, probe)]
    for model, t in groups:
        sw = None if sweep is None else sweep if model == POOLED else sweep[sweep["model"] == model]
        rows.append({"model": model, **_probe_row(t, sw, n_boot, seed, pooled=model == POOLED)})
    return pd.DataFrame(rows)


def trained_shortfall(probe: pd.DataFrame) -> pd.Series:
    """Per block: how far the better trained baseline (Adam or SGD) falls below the closed-form ceiling, same rows."""
    require(probe, ["r2_ceiling_rows", "r2_trained_adam", "r2_trained_sgd"], "trained_shortfall")
    return probe["r2_ceiling_rows"] - probe[["r2_trained_adam", "r2_trained_sgd"]].max(axis=1)


def pitfall_summary(
    probe: pd.DataFrame,
    budget: pd.DataFrame | None = None,
    dose: pd.DataFrame | None = None,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> pd.DataFrame:
    """Per model: claim 7a's shortfall at the practitioner's budget (`linrec.analyses.probe.TRAIN_DEFAULTS`: the
    epochs and batch both baselines trained with, as steps) and claim 7b's measurements of its mechanism.

    7a: how often and how far the better of Adam and SGD falls short (`trained_shortfall`), at `budget_steps`.
    7b, budget curve (`budget`, linrec.analyses.pitfall.budget_table): per mechanism block, the first checkpoint at
    which the better tuned optimiser comes within REACHED of the ridge-tuned ceiling (inf if not by `max_steps`; the
    first checkpoint is `first_step`) and where gradient descent from the Gram spectrum does, each the median over
    the better- and the worse-conditioned half of those blocks (`steps_reach_well` / `_ill`, `gd_steps_*`), with
    the halves' median κ(Gram) (`cond_well`, `cond_ill`).
    7b, by construction (`dose`, linrec.analyses.pitfall.dose_table): the better tuned optimiser's steps to the
    ceiling at the smallest and the largest constructed κ (`dose_steps_min`, `dose_steps_max`; inf if not by
    `dose_steps`, its longest budget; `dose_first_step` its first) and its shortfall there at `dose_steps`; the
    dose–response that decides 7b: the shortfall at `dose_budget` (the first checkpoint at which the smallest κ's
    validation R² comes within REACHED of its best, chosen on train rows: `dose_budget`) at each of the `dose_levels`
    κ (at the smallest and the largest: `dose_budget_short_min`, `_max`), its least-squares slope per decade of κ
    (`dose_slope`) with 95 % and 90 % Student-t intervals (`dose_slope_lo`/`_hi`, `dose_slope_lo90`/`_hi90`;
    `linrec.analyses.uncertainty.trend_slope`) and the residual SD (`dose_resid_sd`).
    7b, real blocks (reported beside the dose, not deciding): over the budget curve's `blocks_n` mechanism blocks,
    Spearman ρ of log κ of the Jacobi-scaled Gram (per-feature scale removed: what Adam's per-coordinate steps see)
    with the steps to the ceiling (not reached ranks last; `blocks_rho_scaled`), and that κ's range
    (`blocks_scaled_min`, `blocks_scaled_max`).
    Checks: `ceiling_excess`, the most any tuned trained fit of either table (gradient descent included) beats its
    ceiling held out, and `n_lr_edge`, the tuned rates still at an end of their extended grid.
    7b, across blocks (reported, not deciding): Spearman ρ of the 5-epoch shortfall with log κ(Gram), raw and
    Jacobi-scaled, and of Adam's with its travel (`adam_reach`), each with a 95 % Fisher interval at the effective
    number of blocks (`correlation_test`)."""

    ((epochs, batch_size),) = {(c["epochs"], c["batch_size"]) for c in TRAIN_DEFAULTS.values()}  # Adam's is SGD's

    require(probe, ["model", "r2_ceiling_rows", "r2_trained_adam", "r2_trained_sgd", "cond_gram", "cond_scaled",
                     "adam_reach", "n_train_rows"], "pitfall_summary")  # fmt: skip
    rows = []
    for model, t in probe.groupby("model", sort=False):
        t = t.sort_values("block") if "block" in t else t
        short = trained_shortfall(t)
        adam_short = t["r2_ceiling_rows"] - t["r2_trained_adam"]
        rho_c, rho_s, rho_r = (
            (c["rho"], c["lo"], c["hi"])
            for c in (
                correlation_test(np.log10(t["cond_gram"]), short),
                correlation_test(np.log10(t["cond_scaled"]), short),
                correlation_test(t["adam_reach"], adam_short),
            )
        )
        row = {
            "model": model,
            "n_blocks": len(t),
            "budget_steps": int(epochs * -(-int(t["n_train_rows"].median()) // batch_size)),
            "n_short": int((short > CLAIM7_SHORTFALL).sum()),
            "share_short": float((short > CLAIM7_SHORTFALL).mean()),
            "shortfall_median": float(short.median()),
            "shortfall_max": float(short.max()),
            "adam_shortfall_median": float(adam_short.median()),
            "sgd_shortfall_median": float((t["r2_ceiling_rows"] - t["r2_trained_sgd"]).median()),
            "spearman_cond_shortfall": rho_c[0],
            "cond_lo": rho_c[1],
            "cond_hi": rho_c[2],
            "spearman_scaled_shortfall": rho_s[0],
            "scaled_lo": rho_s[1],
            "scaled_hi": rho_s[2],
            "spearman_reach_adam": rho_r[0],
            "reach_lo": rho_r[1],
            "reach_hi": rho_r[2],
            "adam_reach_median": float(t["adam_reach"].median()),
            **_spread(np.log10(t["cond_scaled"].to_numpy(float)), short.to_numpy(float), n_boot, seed),
        }
        b = None if budget is None else budget[budget["model"] == model]
        d = None if dose is None else dose[dose["model"] == model]
        row |= _budget_steps(b) | _blocks_scaled(b) | _dose_steps(d) | _dose_trend(d) | _checks(b, d)
        rows.append(row)
    return pd.DataFrame(rows)


BUDGET_KEYS = ("max_steps", "first_step", "n_mechanism", "n_reached", "steps_reach_well", "steps_reach_ill",
               "cond_well", "cond_ill", "gd_steps_well", "gd_steps_ill")  # fmt: skip


DOSE_KEYS = ("dose_block", "dose_steps", "dose_first_step", "dose_kappa_min", "dose_kappa_max", "dose_steps_min",
             "dose_steps_max", "dose_short_min", "dose_short_max")  # fmt: skip


TREND_KEYS = ("dose_budget", "dose_budget_short_min", "dose_budget_short_max", "dose_levels", "dose_slope",
              "dose_slope_lo", "dose_slope_hi", "dose_slope_lo90", "dose_slope_hi90", "dose_resid_sd")  # fmt: skip


SCALED_KEYS = ("blocks_n", "blocks_rho_scaled", "blocks_scaled_min", "blocks_scaled_max")


def _spread(log_kappa: np.ndarray, short: np.ndarray, n_boot: int, seed: int) -> dict:
    """7b's real blocks against the dose: the interquartile range of log10 scaled κ across blocks (`scaled_iqr_decades`:
    what the dose's slope, per decade, predicts a spread of shortfalls from) and that of the 5-epoch shortfall
    (`short_iqr`), with a 95 % percentile bootstrap interval over blocks (`short_iqr_lo`, `_hi`)."""
    iqr = lambda v: float(np.subtract(*np.nanpercentile(v, [75, 25], axis=-1)))  # noqa: E731
    boot = np.random.default_rng(seed).integers(0, len(short), (n_boot, len(short)))
    reps = np.subtract(*np.nanpercentile(short[boot], [75, 25], axis=1))
    return {
        "scaled_iqr_decades": iqr(log_kappa),
        "short_iqr": iqr(short),
        "short_iqr_lo": float(np.quantile(reps, 0.025)),
        "short_iqr_hi": float(np.quantile(reps, 0.975)),
    }


def _reach(curves: pd.DataFrame, ceiling: float) -> float:
    """Steps the better of the tuned optimisers in `curves` (one row per optimizer and step) needs to the ceiling."""

    return min(steps_to_reach(c, ceiling, REACHED) for _, c in curves.groupby("optimizer"))


def _budget_steps(b: pd.DataFrame | None) -> dict:
    if b is None or b.empty:
        return dict.fromkeys(BUDGET_KEYS, np.nan)
    per = []
    for _, g in b.groupby("block", sort=False):
        ceiling = float(g["ceiling"].iloc[0])
        per.append({"cond": float(g["cond_gram"].iloc[0]), "steps": _reach(g[g["chosen"] & (g["optimizer"] != "gd")],
                    ceiling), "gd": _reach(g[g["optimizer"] == "gd"], ceiling)})  # fmt: skip
    per = pd.DataFrame(per)
    well = (per["cond"].rank(method="first") <= len(per) / 2).to_numpy()
    half = lambda col, m: float(per.loc[m, col].median())  # noqa: E731
    return {
        "max_steps": int(b["step"].max()),
        "first_step": int(b["step"].min()),
        "n_mechanism": len(per),
        "n_reached": int(np.isfinite(per["steps"]).sum()),
        "steps_reach_well": half("steps", well),
        "steps_reach_ill": half("steps", ~well),
        "cond_well": half("cond", well),
        "cond_ill": half("cond", ~well),
        "gd_steps_well": half("gd", well),
        "gd_steps_ill": half("gd", ~well),
    }


def _blocks_scaled(b: pd.DataFrame | None) -> dict:
    if b is None or b.empty:
        return dict.fromkeys(SCALED_KEYS, np.nan)
    per = [(float(g["cond_scaled"].iloc[0]), _reach(g[g["chosen"] & (g["optimizer"] != "gd")],
            float(g["ceiling"].iloc[0]))) for _, g in b.groupby("block", sort=False)]  # fmt: skip
    scaled, steps = np.array(per).T
    return {"blocks_n": len(per), "blocks_rho_scaled": spearman(np.log10(scaled), steps)[0] if len(per) >= 3 else
            np.nan, "blocks_scaled_min": float(scaled.min()), "blocks_scaled_max": float(scaled.max())}  # fmt: skip


def dose_shortfalls(d: pd.DataFrame) -> pd.DataFrame:
    """The constructed dose's shortfall per checkpoint (rows) and κ (columns): the ceiling minus the held-out R² of
    the tuned optimiser with the better validation R² there (chosen on the train rows' validation slice; the
    held-out R² only read: until 2026-11-29 the better held-out R² chose it); a checkpoint without validation R²
    keeps its last row's (in the order given)."""
    order = d.assign(_val=d["r2_val"].fillna(-np.inf)).sort_values("_val", kind="stable")
    best = order.groupby(["step", "kappa"]).tail(1).set_index(["step", "kappa"])  # the best validation R² each
    return (best["ceiling"] - best["r2_test"]).unstack("kappa").sort_index()


def _dose_trend(d: pd.DataFrame | None) -> dict:
    if d is None or d.empty:
        return dict.fromkeys(TREND_KEYS, np.nan)
    table = dose_shortfalls(d)
    budget = dose_budget(d[d["kappa"] == table.columns.min()])
    short = table.loc[budget]
    fit = trend_slope(np.log10(short.index.to_numpy(float)), short.to_numpy(float))
    return {"dose_budget": int(budget), "dose_budget_short_min": float(short.iloc[0]),
            "dose_budget_short_max": float(short.iloc[-1]), "dose_levels": int(fit["n"]), "dose_slope": fit["slope"],
            "dose_slope_lo": fit["lo"], "dose_slope_hi": fit["hi"], "dose_slope_lo90": fit["lo90"],
            "dose_slope_hi90": fit["hi90"], "dose_resid_sd": fit["resid_sd"]}  # fmt: skip


def dose_budget(smallest: pd.DataFrame) -> int:
    """The checkpoint the dose is read at, chosen on train rows alone: the first at which the smallest κ's better
    tuned optimiser comes within REACHED of the best validation R² it reaches by the dose's longest budget (its arm
    has converged). The held-out R² plays no part in the choice; it is what is then read there."""
    val = smallest.groupby("step")["r2_val"].max().sort_index().dropna()
    if val.empty:  # no validation R² stored: the longest budget, which no held-out number chooses either
        return int(smallest["step"].max())
    return int(val.index[val >= val.max() - REACHED].min())


def _dose_steps(d: pd.DataFrame | None) -> dict:
    if d is None or d.empty:
        return dict.fromkeys(DOSE_KEYS, np.nan)
    kappas = sorted(d["kappa"].unique())
    short = dose_shortfalls(d).loc[d["step"].max()]  # at the longest budget, the optimiser chosen on validation
    at = {k: _reach(d[d["kappa"] == k], float(d.loc[d["kappa"] == k, "ceiling"].iloc[0])) for k in kappas}
    return {
        "dose_block": int(d["block"].iloc[0]),
        "dose_steps": int(d["step"].max()),
        "dose_first_step": int(d["step"].min()),
        "dose_kappa_min": float(kappas[0]),
        "dose_kappa_max": float(kappas[-1]),
        "dose_steps_min": at[kappas[0]],
        "dose_steps_max": at[kappas[-1]],
        "dose_short_min": float(short.loc[kappas[0]]),
        "dose_short_max": float(short.loc[kappas[-1]]),
    }


def _checks(b: pd.DataFrame | None, d: pd.DataFrame | None) -> dict:
    """`ceiling_excess`: the most a tuned fit (budget curve, gradient descent included, and dose) beats its ceiling
    held out; `n_lr_edge`: tuned rates still at an end of their grid after extension (`tune`)."""
    fits = [t for t in (None if b is None else b[b["chosen"]], d) if t is not None and not t.empty]
    if not fits:
        return {"ceiling_excess": np.nan, "n_lr_edge": np.nan}
    both = pd.concat([t[["optimizer", "r2_test", "ceiling", "lr_interior"]] for t in fits], ignore_index=True)
    tuned = both[both["optimizer"] != "gd"]
    return {"ceiling_excess": float((both["r2_test"] - both["ceiling"]).max()),
            "n_lr_edge": int((~tuned["lr_interior"].astype(bool)).sum())}  # fmt: skip
