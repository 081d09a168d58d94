"""Claims 3, 7a and 7b (notebook 03): the bilinear probe's gain and its correlation with the block's nonlinearity
(`probe_summary`, `claim3`), and how far trained baselines fall short of the closed-form ceiling, and why
(`pitfall_summary`, `claim7a`, `claim7b`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from linrec.analyses.uncertainty import (
    EFFECT,
    EQUIVALENCE_MARGIN,
    INCONCLUSIVE,
    NO_EFFECT,
    correlation_outcome,
    correlation_test,
)
from linrec.claims.rules import (
    CLAIM3_MAX_GAIN,
    CLAIM7_SHARE,
    CLAIM7_SHORTFALL,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    POOLED,
    REPRODUCED,
    Verdict,
    by_share,
    require,
    tally,
)

# ---- notebook 03: the bilinear probe and the trained baselines --------------------------------------------


def _probe_row(t: pd.DataFrame, sweep: pd.DataFrame | None, n_boot: int, seed: int, pooled: bool = False) -> dict:
    from linrec.analyses.uncertainty import detectable_correlation

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
    probe: pd.DataFrame, sweep: pd.DataFrame | None = None, n_boot: int = 2000, seed: int = 0
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


def claim3_passes(row: Mapping, correlation: str) -> bool | None:
    """One model's claim 3 test, given the correlation's outcome (`correlation_outcome` of the pooled row, blocks
    within model): None (not testable) when the closed-form quadratic beats the probe by ≥ CLAIM3_MAX_GAIN at the
    median (the probe did not converge) or the correlation is inconclusive (not testable at this power); else True
    if the median gain is below CLAIM3_MAX_GAIN and "uncorrelated" is shown (no effect), False otherwise."""
    if not np.isfinite(row["gain_median"]) or row["quad_excess_median"] >= CLAIM3_MAX_GAIN:
        return None
    if row["gain_median"] >= CLAIM3_MAX_GAIN or correlation == EFFECT:
        return False
    return None if correlation == INCONCLUSIVE else correlation == NO_EFFECT


def claim3(summary: pd.DataFrame | None) -> Verdict:
    """The rank-16 probe adds little, uncorrelated with nonlinearity: the gain per model, the correlation judged
    once on every model's blocks pooled with a model effect (the `POOLED` row: each model's blocks centred on their
    own, Fisher z at the summed effective n), which is where the equivalence test has the most power."""
    if summary is None or summary.empty:
        return Verdict(3, NOT_TESTABLE, reason="notebook 03 not run")
    per_model = summary[summary["model"] != POOLED]
    pooled = summary[summary["model"] == POOLED]
    if pooled.empty or per_model.empty:
        return Verdict(3, NOT_TESTABLE, reason="the probe summary has no pooled row; rerun notebook 03")
    pool = pooled.iloc[0].to_dict()
    corr = correlation_outcome(pool["ci_lo"], pool["ci_hi"], pool["ci_lo90"], pool["ci_hi90"])
    ev = [{**r, "passes": claim3_passes(r, corr)} for r in per_model.to_dict("records")]
    ev.append({**pool, "passes": None, "correlation": corr})
    tested = [e["passes"] for e in ev[:-1] if e["passes"] is not None]
    if not tested:
        need = pool.get("n_needed", np.nan)
        need_text = f"; a decision needs about {need:.0f} blocks at this dependence" if np.isfinite(need) else ""
        return Verdict(
            3, NOT_TESTABLE, ev, reason=f"not testable at this power: the pooled correlation over "
            f"{int(pool['n_blocks'])} blocks is neither shown within ±{EQUIVALENCE_MARGIN} nor shown nonzero "
            f"(or no probe converged){need_text}"
        )  # fmt: skip
    return Verdict(3, tally(tested), ev)


def trained_shortfall(probe: pd.DataFrame) -> pd.Series:
    """Per block: how far the better trained baseline (Adam or SGD) falls below the closed-form ceiling, same rows."""
    require(probe, ["r2_ceiling_rows", "r2_trained_adam", "r2_trained_sgd"], "trained_shortfall")
    return probe["r2_ceiling_rows"] - probe[["r2_trained_adam", "r2_trained_sgd"]].max(axis=1)


def pitfall_summary(
    probe: pd.DataFrame,
    budget: pd.DataFrame | None = None,
    dose: pd.DataFrame | None = None,
    n_boot: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Per model: claim 7a's shortfall at the practitioner's budget (`linrec.analyses.probe.TRAIN_DEFAULTS`: the
    epochs and
    batch both baselines trained with, as steps) and claim 7b's three measurements of its mechanism.

    7a: how often and how far the better of Adam and SGD falls short (`trained_shortfall`), at `budget_steps`.
    7b, across blocks: Spearman ρ of that shortfall with log κ(Gram), raw and Jacobi-scaled, and of Adam's with its
    travel (`adam_reach`), each with a 95 % Fisher interval at the effective number of blocks (`correlation_test`).
    7b, budget curve (`budget`,
    linrec.analyses.pitfall.
    budget_table): per mechanism block, the first checkpoint at which the better tuned optimiser comes within
    REACHED of the ceiling (`steps_reach_*`; inf if not by `max_steps`) and where gradient descent from the Gram
    spectrum does (`gd_steps_*`), on the better- and the worse-conditioned half of those blocks (median).
    7b, by construction (`dose`, linrec.analyses.pitfall.dose_table): the better tuned optimiser's shortfall at the
    smallest
    and the largest constructed κ, and whether it rises with κ (`dose_rises`)."""
    from linrec.analyses.pitfall import REACHED, steps_to_reach
    from linrec.analyses.probe import TRAIN_DEFAULTS

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
        }
        row |= {k: np.nan for k in ("max_steps", "n_mechanism", "n_reached", "steps_reach_well", "steps_reach_ill",
                                    "gd_steps_well", "gd_steps_ill", "dose_block", "dose_steps", "dose_kappa_min",
                                    "dose_kappa_max", "dose_short_min", "dose_short_max", "dose_rises")}  # fmt: skip
        b = None if budget is None else budget[budget["model"] == model]
        if b is not None and not b.empty:
            per = []
            for _, g in b.groupby("block", sort=False):
                ceiling = float(g["ceiling"].iloc[0])
                chosen = g[g["chosen"] & (g["optimizer"] != "gd")]
                trained = min(steps_to_reach(c, ceiling, REACHED) for _, c in chosen.groupby("optimizer"))
                gd = steps_to_reach(g[g["optimizer"] == "gd"], ceiling, REACHED)
                per.append({"cond": float(g["cond_gram"].iloc[0]), "steps": trained, "gd": gd})
            per = pd.DataFrame(per)
            well = (per["cond"].rank(method="first") <= len(per) / 2).to_numpy()
            row |= {
                "max_steps": int(b["step"].max()),
                "n_mechanism": len(per),
                "n_reached": int(np.isfinite(per["steps"]).sum()),
                "steps_reach_well": float(per.loc[well, "steps"].median()),
                "steps_reach_ill": float(per.loc[~well, "steps"].median()),
                "gd_steps_well": float(per.loc[well, "gd"].median()),
                "gd_steps_ill": float(per.loc[~well, "gd"].median()),
            }
        d = None if dose is None else dose[dose["model"] == model]
        if d is not None and not d.empty:
            best = d.assign(shortfall=d["ceiling"] - d["r2_test"]).groupby("kappa")["shortfall"].min().sort_index()
            row |= {
                "dose_block": int(d["block"].iloc[0]),
                "dose_steps": int(d["step"].iloc[0]),
                "dose_kappa_min": float(best.index[0]),
                "dose_kappa_max": float(best.index[-1]),
                "dose_short_min": float(best.iloc[0]),
                "dose_short_max": float(best.iloc[-1]),
                "dose_rises": float(dose_rises(best.to_numpy())),
            }
        rows.append(row)
    return pd.DataFrame(rows)


def dose_rises(shortfalls) -> bool:
    """Whether a shortfall measured at increasing κ rises with it: the largest κ's exceeds the smallest's by more
    than CLAIM7_SHORTFALL, and no step down between neighbouring κ exceeds CLAIM7_SHORTFALL / 2 (noise). A fit that
    diverged (shortfall inf) counts as falling as far short as can be."""
    s = np.nan_to_num(np.asarray(shortfalls, float), nan=np.nan, posinf=1e6)
    if len(s) < 2 or np.isnan(s).any():
        return False
    return bool(s[-1] - s[0] > CLAIM7_SHORTFALL and (np.diff(s) >= -CLAIM7_SHORTFALL / 2 - 1e-12).all())


def mechanism_word(row: Mapping) -> str | None:
    """Claim 7b for one model: "conditioning" if the constructed dose–response rises (`dose_rises`) and the 95 % CI
    of ρ(log κ, shortfall) across blocks lies above 0; else "budget" if the tuned optimisers reach the ceiling on
    every mechanism block within the budget curve's steps, whatever its κ; else "other". None: not measured."""
    if not np.isfinite(row.get("dose_rises", np.nan)) or not np.isfinite(row.get("n_mechanism", np.nan)):
        return None
    if row["dose_rises"] and np.isfinite(row["cond_lo"]) and row["cond_lo"] > 0:
        return "conditioning"
    if row["n_reached"] == row["n_mechanism"]:
        return "budget"
    return "other"


def claim7a(summary: pd.DataFrame | None) -> Verdict:
    if summary is None or summary.empty or "share_short" not in summary:
        return Verdict("7a", NOT_TESTABLE, reason="notebook 03 not run")
    share = float(summary["n_short"].sum() / summary["n_blocks"].sum())
    ev = [{**r, "share_short_all": share} for r in summary.to_dict("records")]
    return Verdict("7a", REPRODUCED if share >= CLAIM7_SHARE else NOT_REPRODUCED, ev)


def claim7b(summary: pd.DataFrame | None) -> Verdict:
    if summary is None or summary.empty or "dose_rises" not in summary:
        return Verdict("7b", NOT_TESTABLE, reason="notebook 03 not run")
    ev = [{**r, "mechanism": mechanism_word(r)} for r in summary.to_dict("records")]
    return by_share("7b", ev, "mechanism", "conditioning", "no budget curve or dose–response was measured")
