"""Claims 6a and 6b (notebook 06): a block's FFN swapped for its affine map; whether a cheap swap exists (`verdict_6a`)
and whether R²_lin flags it (`flag_outcome`, `verdict_6b`, on `linrec.analyses.swap_summary.swap_predictors`' screen),
with the swap's findings in words in `linrec.outputs.findings`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from linrec.analyses.swap_summary import CLAIM6_BUDGET, PREDICTOR_SIGNS
from linrec.analyses.uncertainty import EQUIVALENCE_MARGIN, INCONCLUSIVE, POOLED
from linrec.claims.rules import (
    CHANCE_ALPHA,
    CHANCE_RATE,
    CLAIM6_OWN_MISS,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    PARTLY,
    PREDICTOR_FWER,
    REPRODUCED,
    Rule,
    Verdict,
    beyond_chance,
    require,
    tally_decided,
    thresholds,
)

# ---- notebook 06: the swap -------------------------------------------------------------------------------
# each rule's thresholds (its `Rule`'s; a verdict function reads them from its `t`)
T_6A = thresholds("Claim6aThresholds", CLAIM6_BUDGET=CLAIM6_BUDGET, CLAIM6_OWN_MISS=CLAIM6_OWN_MISS)
CHECKED = "99 % skew-corrected jackknife"  # the interval of a run that stored its per-window losses (`swap_windows`)
UNCHECKED = "95 % interval as stored, skew unchecked"  # a run before issue 64: a jackknife-t or percentile bootstrap
T_6B = thresholds(
    "Claim6bThresholds",
    EQUIVALENCE_MARGIN=EQUIVALENCE_MARGIN,
    CHANCE_RATE=CHANCE_RATE,
    CHANCE_ALPHA=CHANCE_ALPHA,
    PREDICTOR_FWER=PREDICTOR_FWER,
)


def _map_rows(swap: pd.DataFrame) -> pd.DataFrame:  # linrec.analyses.swap_summary.map_rows; here for RULE_6A's hash
    """The swap table's rows of the plain affine swap (`first` = "map", or a table without variants)."""
    return swap[swap["first"] == "map"] if "first" in swap.columns else swap


def best_predictors(predictors: pd.DataFrame, t=T_6B) -> pd.DataFrame:
    """Per model, the screened predictor that points the right way most strongly among those that survive Holm's
    correction (`p_holm` < PREDICTOR_FWER, sign · ρ > 0), and the same for the partial ρ given depth; "" where none
    survives, so no predictor is named after the fact from an uncorrected screen."""
    rows = []
    for model, p in predictors[predictors["model"] != POOLED].groupby("model", sort=False):
        real = p[~p["runs_swapped_model"]]
        signs = real["column"].map(PREDICTOR_SIGNS).to_numpy(float)
        row = {"model": model, "n_screened": len(real)}
        for key, rho, padj in (("best", "spearman_rho", "p_holm"), ("best_partial", "partial_rho_depth",
                                                                   "partial_p_holm")):  # fmt: skip
            useful = signs * real[rho].to_numpy(float)
            ok = (useful > 0) & (real[padj].to_numpy(float) < t.PREDICTOR_FWER)
            if ok.any():
                r = real.iloc[int(np.flatnonzero(ok)[np.argmax(useful[ok])])]
                row.update({key: r["column"], f"{key}_rho": float(r[rho]), f"{key}_p_holm": float(r[padj])})
            else:
                row.update({key: "", f"{key}_rho": np.nan, f"{key}_p_holm": np.nan})
        rows.append(row)
    return pd.DataFrame(rows)


def _block_row(t: pd.DataFrame, block: int) -> pd.Series:
    return t.loc[t["block"] == block].iloc[0]


def _own_check(skew: pd.DataFrame | None, model: str, block: int) -> dict:
    """The own-skew check of a map swap of `block` (its `swap_skew` row), or NaNs where the run stored no windows."""
    nan = dict.fromkeys(("own_cover", "own_miss_below", "own_miss_above"), np.nan)
    if skew is None or "own_miss_below" not in skew.columns:
        return nan
    row = skew[(skew["model"] == model) & (skew["swap"].astype(str) == str(block))]
    return nan if row.empty else {k: float(row[k].iloc[0]) for k in nan}


def own_words(e: Mapping) -> str:
    miss = e.get("own_miss_below", np.nan)
    return f"; its upper end misses {miss:.1%} of resamples of its own windows" if np.isfinite(miss) else ""


def outcome_6a(lo: float, hi: float, own: Mapping, t=T_6A) -> str:
    """One model's outcome: "holds" if the interval's upper end is within the budget, "fails" if its lower end is
    above it, else "undecided" — and "undecided" too where the deciding end misses the truth in more than
    CLAIM6_OWN_MISS of resamples of the swap's own windows (`own`: `_own_check`; NaN: no windows stored, unchecked)."""
    word = "holds" if hi <= t.CLAIM6_BUDGET else "fails" if lo > t.CLAIM6_BUDGET else "undecided"
    miss = {"holds": own["own_miss_below"], "fails": own["own_miss_above"]}.get(word, np.nan)
    return "undecided" if np.isfinite(miss) and miss > t.CLAIM6_OWN_MISS else word


def verdict_6a(swap: pd.DataFrame | None, values: pd.DataFrame | None, skew: pd.DataFrame | None = None, *,
               t=T_6A) -> Verdict:  # fmt: skip
    """Some block swaps for its affine map within the budget: per model, the block with the lowest screening ΔPPL
    alone (`values`: `Screening.predictors`) is chosen without the held-out windows, and its held-out interval
    decides (`outcome_6a`): within the budget (holds), above it (fails), or across it (undecided); a decision whose
    interval end misses the truth too often when the swap's own windows are resampled (`skew`: results table
    `swap_skew`) is undecided. A run without stored windows is judged on its stored 95 % interval, its skew unchecked
    (the evidence says which). A model whose screening values or whose chosen block's held-out row is missing is not
    judged; with no model judged the claim is not testable (no evidence is never "reproduced")."""
    if swap is None or values is None:
        return Verdict("6a", NOT_TESTABLE, reason="notebook 06 not run")
    swap = _map_rows(swap)
    require(swap, ["model", "block", "delta_ppl", "delta_lo", "delta_hi", "params_ffn", "params_linear"], "claim 6a")
    require(values, ["model", "block", "screening_delta_ppl"], "claim 6a")
    ev, outcome, unjudged = [], [], []
    for model, g in swap.groupby("model", sort=False):
        v = values[(values["model"] == model) & np.isfinite(values["screening_delta_ppl"].to_numpy(float))]
        if v.empty:
            unjudged.append(f"{model} has no screening values")
            continue
        chosen = int(v.sort_values(["screening_delta_ppl", "block"]).iloc[0]["block"])
        if not (g["block"] == chosen).any():
            unjudged.append(f"{model}'s screened block {chosen} has no held-out swap row")
            continue
        r = _block_row(g, chosen)
        if not np.isfinite([r["delta_lo"], r["delta_hi"]]).all():
            unjudged.append(f"{model}'s screened block {chosen} has no held-out interval")
            continue
        own = _own_check(skew, model, chosen)
        word = outcome_6a(r["delta_lo"], r["delta_hi"], own, t)
        outcome.append(word)
        best = g.loc[g["delta_ppl"].idxmin()]
        screened = float(_block_row(v, chosen)["screening_delta_ppl"])
        ev.append({"model": model, "ffn_over_linear": float(r["params_ffn"] / r["params_linear"]),
                   "chosen_block": chosen, "chosen_screening_delta_ppl": screened,
                   **{k: float(r[k]) for k in ("delta_ppl", "delta_lo", "delta_hi")},
                   "interval": CHECKED if np.isfinite(own["own_cover"]) else UNCHECKED,
                   **own, "outcome": word, "n_within_budget": int((g["delta_hi"] <= t.CLAIM6_BUDGET).sum()),
                   "n_blocks": len(g), "best_heldout_block": int(best["block"]),
                   "best_heldout_delta_ppl": float(best["delta_ppl"]),
                   "ppl_base": float(r["ppl_base"]) if "ppl_base" in r else np.nan})  # fmt: skip
    if not outcome:
        why = "; ".join(unjudged) if unjudged else "the swap table has no rows"
        return Verdict("6a", NOT_TESTABLE, ev, reason=f"no model could be judged ({why})")
    if all(o == "holds" for o in outcome):
        word = REPRODUCED
    elif any(o == "holds" for o in outcome):
        word = PARTLY
    elif all(o == "fails" for o in outcome):
        word = NOT_REPRODUCED
    else:
        return Verdict("6a", NOT_TESTABLE, ev, reason="the held-out intervals straddle the budget, or miss too often "
                       "at their own windows' skew")  # fmt: skip
    return Verdict("6a", word, ev)


RULE_6A = Rule(
    "6a",
    ("swap", "swap_predictor_values", "swap_skew"),
    T_6A,
    verdict_6a,
    says=lambda t: (
        "holds for a model if the block with the lowest screening ΔPPL (train windows) has a held-out 99 % "
        f"skew-corrected jackknife interval of ΔPPL ≤ +{t.CLAIM6_BUDGET:g}, fails if the interval is above it, each "
        f"only if that end misses the truth in at most {t.CLAIM6_OWN_MISS:.1%} of resamples of the block's own "
        "held-out windows (a run without stored windows: its stored 95 % interval, skew unchecked); reproduced if it "
        "holds for every model, partly if for some, not reproduced if it fails for every model, not testable if an "
        "interval straddles the budget or fails its own-skew check"
    ),
    would_change=lambda t: (
        f"a screened block whose held-out interval stays within +{t.CLAIM6_BUDGET:g} perplexity holds; one above "
        "fails; one across it, or one whose deciding end misses more than "
        f"{t.CLAIM6_OWN_MISS:.1%} of its own windows' resamples (a cost carried by one window of the few), leaves the "
        "model undecided"
    ),
)


FLAGS, NOT_USEFUL = "flags", "not a useful flag"  # claim 6b's decided outcomes (beside INCONCLUSIVE)


def flag_outcome(row: Mapping, t=T_6B) -> str:
    """Claim 6b for one model (or the pooled blocks) from its R²_lin row of `swap_predictors`. A useful flag is a
    negative ρ(R²_lin, ΔPPL) of at least the equivalence margin (ρ ≤ −EQUIVALENCE_MARGIN: higher R²_lin, smaller
    ΔPPL, so R²_lin points at the blocks safe to swap). NOT_USEFUL if ρ or the partial ρ with depth taken out has
    that effect excluded: its one-sided 95 % lower bound (the 90 % interval's lower end) lies above −margin (a
    correlation shown within ±margin, or shown above 0, is such a case). Else FLAGS if both 95 % intervals lie below
    0; else "inconclusive". The exclusion is checked first: a flag shown weaker than useful is not useful."""
    lows = (row["rho_lo90"], row["partial_lo90"])
    if any(np.isfinite(lo) and lo > -t.EQUIVALENCE_MARGIN for lo in lows):
        return NOT_USEFUL
    if all(np.isfinite(hi) and hi < 0 for hi in (row["rho_hi"], row["partial_hi"])):
        return FLAGS
    return INCONCLUSIVE


def verdict_6b(predictors: pd.DataFrame | None, *, t=T_6B) -> Verdict:
    """R²_lin flags the safe blocks: per model, `flag_outcome` of its R²_lin row; inconclusive models are left out
    of the tally (not testable at this power), and a verdict needs at least one decided model."""
    if predictors is None:
        return Verdict("6b", NOT_TESTABLE, reason="notebook 06 not run")
    screened = {"runs_swapped_model", "p_holm", "partial_p_holm"} <= set(predictors.columns)
    best = best_predictors(predictors, t).set_index("model") if screened and len(predictors) else pd.DataFrame()
    ev, ok, pooled = [], [], None
    for model, p in predictors.groupby("model", sort=False):
        rows = p[p["column"] == "r2_lin"]
        if rows.empty:
            continue
        r = rows.iloc[0]
        outcome = flag_outcome(r, t)
        if model == POOLED:
            pooled = outcome
        elif outcome != INCONCLUSIVE:
            ok.append(outcome == FLAGS)
        depth = p[p["column"] == "depth_from_end"]
        b = best.loc[model] if model in best.index else {}
        ev.append(
            {
                "model": model,
                **{
                    k: float(r.get(k, np.nan))
                    for k in (
                        "spearman_rho",
                        "rho_lo",
                        "rho_hi",
                        "rho_lo90",
                        "rho_hi90",
                        "rho_lo_iid",
                        "rho_hi_iid",
                        "partial_rho_depth",
                        "partial_lo",
                        "partial_hi",
                        "partial_lo90",
                        "partial_hi90",
                        "middle_rho",
                        "p_holm",
                    )
                },  # fmt: skip
                "n_blocks": int(r["n_blocks"]),
                "n_eff": float(r.get("n_eff", np.nan)),
                "n_needed": float(r.get("n_needed", np.nan)),
                "depth_rho": float(depth["spearman_rho"].iloc[0]) if len(depth) else np.nan,
                "outcome": outcome,
                "passes": None if outcome == INCONCLUSIVE else outcome == FLAGS,
                "best": b.get("best", ""),
                "best_rho": b.get("best_rho", np.nan),
                "best_partial": b.get("best_partial", ""),
                "best_partial_rho": b.get("best_partial_rho", np.nan),
            }
        )
    if not ev:
        return Verdict("6b", NOT_TESTABLE, reason="no R²_lin predictor row")
    ex = predictors[predictors["column"] == "r2_ex_first"]
    word1 = ""
    if ex["model"].nunique() == len(ev):  # the same rule on R²_lin without the first position
        outcomes = {r["model"]: flag_outcome(r, t) for r in ex.to_dict("records")}
        for e in ev:
            e["outcome_ex_first"] = outcomes[e["model"]]
        word1 = flags_verdict(outcomes.pop(POOLED, None), [o for o in outcomes.values()], t)
    word = flags_verdict(pooled, [e["outcome"] for e in ev if e["model"] != POOLED], t)
    if word == NOT_TESTABLE:
        need = next((e["n_needed"] for e in ev if e["model"] == POOLED), max(e["n_needed"] for e in ev))
        more = f"; a decision needs about {need:.0f} blocks at this dependence" if np.isfinite(need) else ""
        models = [e["outcome"] for e in ev if e["model"] != POOLED]
        decided = {w: models.count(w) for w in (FLAGS, NOT_USEFUL) if w in models}
        what = "every model and the pooled blocks are inconclusive"
        if decided:  # some models decided, but no more of them than chance would
            shown = " and ".join(f"{k} of {len(models)} models {'flag' if w == FLAGS else 'show no useful flag'}"
                                 for w, k in decided.items())  # fmt: skip
            what = (
                f"the pooled blocks are inconclusive and {shown}, no more than chance at {t.CHANCE_RATE * 100:g} % "
                f"a model ({beyond_chance(len(models), t.CHANCE_RATE, t.CHANCE_ALPHA)} needed)"
            )
        return Verdict("6b", NOT_TESTABLE, ev, reason=f"not testable at this power: {what}{more}",
                       without_first=word1)  # fmt: skip
    return Verdict("6b", word, ev, without_first=word1)


RULE_6B = Rule(
    "6b",
    ("swap_predictors",),
    T_6B,
    verdict_6b,
    says=lambda t: (
        "per model, and over every model's blocks pooled with a model effect, on Spearman ρ(R²_lin, held-out ΔPPL) and "
        "the partial ρ with depth (distance to the nearest end) taken out, each with Fisher's interval at Bartlett's "
        f"effective number of blocks; a useful flag is ρ ≤ −{t.EQUIVALENCE_MARGIN} (higher R²_lin, smaller ΔPPL): "
        "'not a useful flag' if either's one-sided 95 % lower bound (the 90 % interval's lower end) lies above "
        f"−{t.EQUIVALENCE_MARGIN} (checked first); 'flags' if both 95 % intervals lie below 0; otherwise inconclusive. "
        "The pooled outcome decides where it is decided: 'flags' is reproduced (partly if some model on its own shows "
        "'not a useful flag'), 'not a useful flag' not reproduced (partly if some model on its own flags); where it "
        "is inconclusive an outcome counts only where more models show it than chance would at "
        f"{t.CHANCE_RATE * 100:g} % a model (the smallest k with P(Binomial(models, {t.CHANCE_RATE:g}) ≥ k) ≤ "
        f"{t.CHANCE_ALPHA:g}: {beyond_chance(2, t.CHANCE_RATE, t.CHANCE_ALPHA)} of 2, "
        f"{beyond_chance(12, t.CHANCE_RATE, t.CHANCE_ALPHA)} of 12), those are tallied (reproduced if every one flags, "
        "partly if some do), and with none the claim is not testable (the report states how many blocks a decision "
        "would take). A screened predictor is named best only if it survives Holm's correction over the screen "
        f"(adjusted p < {t.PREDICTOR_FWER})"
    ),
    would_change=lambda t: (
        "95 % intervals of ρ(R²_lin, ΔPPL) and of the partial ρ given depth below 0, with neither one-sided lower "
        f"bound above −{t.EQUIVALENCE_MARGIN}, reproduce it; either lower bound above −{t.EQUIVALENCE_MARGIN} (the "
        "useful effect excluded) makes it not reproduced; the pooled blocks decide where they are decided"
    ),
    zoo=("zoo_swap_predictors",),
)


def flags_verdict(pooled: str | None, per_model: list[str], t=T_6B) -> str:
    """Claim 6b's verdict from the pooled outcome (blocks within model; None with one model) and each model's:
    the pooled test decides where it is decided — "flags" is reproduced, or partly where some model on its own shows
    "not a useful flag"; "not a useful flag" is not reproduced, or partly where some model on its own flags — and
    where it is inconclusive the outcomes that more models show than chance would give at 5 % a model
    (`beyond_chance`: 2 of 2, 3 of 12) are tallied, and where it is absent (one model) that model decides; not
    testable when nothing is decided."""
    if pooled == FLAGS:
        return PARTLY if NOT_USEFUL in per_model else REPRODUCED
    if pooled == NOT_USEFUL:
        return PARTLY if FLAGS in per_model else NOT_REPRODUCED
    if pooled is not None:  # several models, the pooled test undecided: an outcome counts where more models show it
        need = beyond_chance(len(per_model), t.CHANCE_RATE, t.CHANCE_ALPHA)  # than chance would (`rules.beyond_chance`)
        per_model = [w for w in per_model if w != INCONCLUSIVE and per_model.count(w) >= need]
    return tally_decided(per_model, FLAGS, INCONCLUSIVE)
