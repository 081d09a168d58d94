"""Beyond the paper (notebook 06): per-token routing set against the anchor paper's three results (arXiv 2603.03459,
"Half the Nonlinearity Is Wasted", Balogh 2026).

1. "25–56 % linear routing at < 1 % perplexity cost in GPT-2": each routed block's largest share within +1 %
   (`linrec.analyses.routing.routing_summary`).
2. "Nonlinearity need cannot be predicted from token identity": two quantities, one of which is the anchor's
   (`need_outcome`, `split_outcome`, `anchor_table`):
   - the anchor's: per token type, the mean *need* (the map's error) on one corpus against another, Pearson r over
     the types frequent in both; and gates on the token part and the context part of the input;
   - not the anchor's: per token type, the share *the gate* routes linear on one corpus against another (what
     linrec reported before issue 49). The gate reads the input, which carries the token's identity, so this r can
     be high when the need itself is contextual.
3. "Whole middle MLPs replaced by frozen linear maps cost nothing after a short fine-tune": healed ΔPPL against the
   same fine-tune unswapped (`heal_outcome`, `heal_table`).

Each rule's words are in `ANCHOR_RULES`; `tests/claims/test_routing.py` puts each rule on both sides of each
threshold.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from linrec.claims.rules import NOT_TESTABLE, require, tally_decided
from linrec.stats.equivalence import EFFECT, EQUIVALENCE_MARGIN, NO_EFFECT, correlation_outcome

AUC_MARGIN = 0.02  # two gates "match" when their held-out AUCs differ by less than this (2 points of AUC)
HEAL_BUDGET = 0.01  # a healed swap costs "nothing" within +1 % of the fine-tuned control's perplexity (the anchor's)
CONTEXT, TOKEN, UNDECIDED = "context", "token", "undecided"
HEALED, COSTS = "healed", "costs"

ANCHOR_RULES = {
    "need": "per routed block and corpus pair, Pearson r of the token types' mean need (the map's squared error) on "
    "one corpus against the other, over the types seen ≥ 5 times in both, with a percentile bootstrap over types: "
    f"'context' (no type effect) if its 90 % interval lies inside ±{EQUIVALENCE_MARGIN:g}, 'token' if its 95 % "
    "interval excludes 0, undecided otherwise. The anchor's 'need cannot be predicted from token identity' is "
    "reproduced if every decided pair is 'context', partly if some are, not reproduced if none is, not testable if "
    "none is decided",
    "split": "per routed block, on the stored held-out rows with leave-one-window-out jackknife intervals: 'context' "
    f"if the context gate matches the full gate (90 % interval of AUC(full) − AUC(context) below +{AUC_MARGIN:g}) "
    f"and the token gate falls short (95 % interval of AUC(full) − AUC(token) above +{AUC_MARGIN:g}); 'token' if "
    "the token gate matches the full gate or the context gate falls short (the same intervals, the other way); "
    "undecided otherwise. The anchor's 'a gate on the context matches the full gate, token identity adds nothing' "
    "is reproduced if every decided block is 'context', partly if some are, not reproduced if none is",
    "heal": f"per model, mode and k: 'healed' if the 95 % interval of PPL(swapped, fine-tuned) − PPL(control) lies at "
    f"or below +{HEAL_BUDGET:.0%} of the control's perplexity, 'costs' if it lies above, undecided otherwise; the "
    "control is the unswapped model given the same fine-tune: every weight (mode all), or the same blocks' own FFNs "
    "(mode maps)",
}


# ---- 2. token identity against context ---------------------------------------------------------------------------
def need_outcome(lo: float, hi: float, lo90: float, hi90: float) -> str:
    """`ANCHOR_RULES["need"]` for one block and corpus pair, from the intervals of its need r."""
    word = correlation_outcome(lo, hi, lo90, hi90, EQUIVALENCE_MARGIN)
    return CONTEXT if word == NO_EFFECT else TOKEN if word == EFFECT else UNDECIDED


def split_outcome(context: dict | pd.Series, token: dict | pd.Series) -> str:
    """`ANCHOR_RULES["split"]` for one block, from its `routing_split_auc` rows of the context and the token gate."""
    vals = [context[k] for k in ("full_minus_lo", "full_minus_hi90")] + [
        token[k] for k in ("full_minus_lo", "full_minus_hi90")
    ]
    if not all(np.isfinite(v) for v in vals):
        return UNDECIDED
    context_matches, context_short = context["full_minus_hi90"] < AUC_MARGIN, context["full_minus_lo"] > AUC_MARGIN
    token_matches, token_short = token["full_minus_hi90"] < AUC_MARGIN, token["full_minus_lo"] > AUC_MARGIN
    if context_matches and token_short:
        return CONTEXT
    if token_matches or context_short:
        return TOKEN
    return UNDECIDED


def anchor_table(identity: pd.DataFrame | None, split_auc: pd.DataFrame | None) -> pd.DataFrame:
    """Per model, the anchor's token-identity claim judged twice (`ANCHOR_RULES`): from the per-type need across
    corpora (`need_*`: pairs of each outcome, the median r, the median share of the other corpus's per-token need a
    type lookup explains, and the verdict) and from the token/context/full gates (`split_*`: blocks of each outcome,
    the median held-out AUC of each gate, and the verdict); beside them the median gate-share r (not the anchor's)."""
    models = list(dict.fromkeys([*(identity["model"] if identity is not None else []),
                                 *(split_auc["model"] if split_auc is not None else [])]))  # fmt: skip
    rows = []
    for model in models:
        row = {"model": model}
        t = identity[identity["model"] == model] if identity is not None else pd.DataFrame()
        cols = ["r_need_lo", "r_need_hi", "r_need_lo90", "r_need_hi90"]
        words = [need_outcome(*r) for r in t[cols].to_numpy()] if len(t) else []
        row |= {"need_pairs": len(words), "need_context": words.count(CONTEXT), "need_token": words.count(TOKEN),
                "need_r_median": float(t["r_need"].median()) if len(t) else np.nan,
                "need_r_min": float(t["r_need"].min()) if len(t) else np.nan,
                "need_r_max": float(t["r_need"].max()) if len(t) else np.nan,
                "lookup_r2_median": float(t["lookup_r2"].median()) if len(t) else np.nan,
                "need_rel_r_median": float(t["r_need_rel"].median()) if len(t) and "r_need_rel" in t else np.nan,
                "gate_r_median": float(t["r"].median()) if len(t) else np.nan,
                "need_verdict": tally_decided(words, CONTEXT, UNDECIDED) if words else NOT_TESTABLE}  # fmt: skip
        s = split_auc[split_auc["model"] == model] if split_auc is not None else pd.DataFrame()
        words, auc = [], {}
        for _, b in s.groupby("block", sort=True):
            by = b.set_index("part")
            if {"context", "token"} <= set(by.index):
                words.append(split_outcome(by.loc["context"], by.loc["token"]))
        for part in ("full", "token", "context"):
            auc[f"auc_{part}_median"] = float(s[s["part"] == part]["auc"].median()) if len(s) else np.nan
        verdict = tally_decided(words, CONTEXT, UNDECIDED) if words else NOT_TESTABLE
        row |= {"split_blocks": len(words), "split_context": words.count(CONTEXT), "split_token": words.count(TOKEN),
                **auc, "split_verdict": verdict}  # fmt: skip
        rows.append(row)
    return pd.DataFrame(rows)


# ---- 3. healing ----------------------------------------------------------------------------------------------------
def heal_outcome(delta_lo: float, delta_hi: float, ppl_control: float) -> str:
    """`ANCHOR_RULES["heal"]` for one healed swap."""
    if not all(np.isfinite(v) for v in (delta_lo, delta_hi, ppl_control)):
        return UNDECIDED
    budget = HEAL_BUDGET * ppl_control
    return HEALED if delta_hi <= budget else COSTS if delta_lo > budget else UNDECIDED


def heal_table(heal: pd.DataFrame) -> pd.DataFrame:
    """`linrec.analyses.healing.heal_study`'s rows with each swap's `outcome` (`heal_outcome`; the control rows, k = 0,
    get none) and the share of the zero-shot cost the fine-tune removed (`healed_share` = 1 − ΔPPL after / ΔPPL before,
    where the zero-shot cost is positive)."""
    require(heal, ["model", "mode", "k", "delta_before", "delta_after", "delta_after_lo", "delta_after_hi",
                   "ppl_control"], "heal_table")  # fmt: skip
    out = heal.copy()
    cols = out[["delta_after_lo", "delta_after_hi", "ppl_control", "k"]].to_numpy()
    out["outcome"] = [heal_outcome(lo, hi, c) if k > 0 else "" for lo, hi, c, k in cols]
    with np.errstate(divide="ignore", invalid="ignore"):
        share = 1 - out["delta_after"] / out["delta_before"]
    out["healed_share"] = np.where((out["k"] > 0) & (out["delta_before"] > 0), share, np.nan)
    return out
