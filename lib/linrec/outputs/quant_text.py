"""The quantisation sensitivity in words (issue 64, item 9; both models: issue 87, item 8): what a second quantisation
error of the release's own size does to R²_lin (beside claim 1's evidence) and to perplexity (beside claim 6a's, read
against its +1 budget), and the limitation the report states, from `results/quant/quant_summary.csv` (the summary of
`quant_sensitivity.csv`, `benchmarks/quant.py`, written by `linrec.outputs.refresh`).

That file is a stand-alone measurement, run once per model and committed (no notebook writes it), so it is read where
it sits: the `quant` folder beside a profile's results folder. Where it measured one of this profile's models, every
model it holds is quoted, this profile's first: the answer is judged on the widest evidence (SmolLM2 alone in the
default profile, both models in full), and the rounding the pretrained models carry is one fact about them whichever
profile reports it. Each function is silent ([] or None) where the file is absent, unreadable, or measured none of
this profile's models.
"""

from __future__ import annotations

from linrec.claims.rules import CLAIM6_BUDGET, joined
from linrec.outputs.results import Results, fmt

SOURCE = "`results/quant/quant_sensitivity.csv`, on the full profile's windows"
DRAW = ("seed", "ppl_change", "ppl_change_lo", "ppl_change_hi")  # a draw's columns in `quant_summary.csv`


def quant_summary(r: Results) -> dict:
    """The stored summary (`quant_summary.csv`, `linrec.outputs.refresh.quant_summary`: `linrec.analyses.quant.summary`
    at the release's own step) as {model: its numbers, `draws` the list of its draws}, this profile's models
    (`r2_lin`'s) first, then the other models it holds; {} where the file is absent, lacks its columns, or holds none
    of this profile's models."""
    r2 = r.table("r2_lin")
    table = r.stored("quant/quant_summary.csv") if r2 is not None else None
    if table is None or set(DRAW) - set(table.columns) or "model" not in table.columns:
        return {}
    ours = [m for m in dict.fromkeys(r2["model"]) if m in set(table["model"])]
    if not ours:
        return {}
    order = ours + [m for m in dict.fromkeys(table["model"]) if m not in ours]
    out = {}
    for model, t in table.groupby("model", sort=False):
        rows = t.to_dict("records")
        out[model] = {k: v for k, v in rows[0].items() if k not in DRAW} | {"draws": [{k: d[k] for k in DRAW}
                                                                                     for d in rows]}  # fmt: skip
    return {m: out[m] for m in order}


def _draws(s: dict) -> str:
    return f"{s['n_seeds']} draw{'s' if s['n_seeds'] != 1 else ''}"


def _changes(e: dict) -> str:
    """Each draw's perplexity change with its paired 95 % interval: "+10.8 [+8.4, +13.8] and +12.2 [+9.7, +14.7]"."""
    return joined(f"{d['ppl_change']:+.1f} [{d['ppl_change_lo']:+.1f}, {d['ppl_change_hi']:+.1f}]" for d in e["draws"])


def _range(lo: float, hi: float, unit: str = " %") -> str:
    return f"{lo:.0f}{unit}" if round(lo) == round(hi) else f"{lo:.0f}–{hi:.0f}{unit}"


def _pct(e: dict) -> str:
    return _range(e["ppl_pct_min"], e["ppl_pct_max"])


def _budget_share(e: dict) -> str:
    """Claim 6a's budget as a share of the rise one more rounding error brings ("8–9 %")."""
    rises = [d["ppl_change"] for d in e["draws"] if d["ppl_change"] > 0]
    if not rises:
        return "n/a"
    return _range(100 * CLAIM6_BUDGET / max(rises), 100 * CLAIM6_BUDGET / min(rises))


def quant_evidence(r: Results, claim: int | str) -> list[str]:
    """The evidence bullets of claim 1 (R²_lin) or 6a (perplexity) on a second quantisation error, one per model;
    [] for the other claims and where nothing was measured."""
    s = quant_summary(r)
    if str(claim) == "1":
        return [
            f"{m}, quantisation ({SOURCE}, {_draws(e)}): one more rounding error of the release's own step in every "
            f"quantised weight moves R²_lin by a median {fmt(e['change_median'])} (max {fmt(e['change_max'])}, block "
            f"{e['max_block']}; up in {e['up'] * 100:.0f} % of blocks × draws) against a median interval half-width of "
            f"{fmt(e['half_width_median'])}, and by more than its half-width in {e['beyond'] * 100:.0f} % "
            f"({e['n_beyond']} of {e['n_rows']} blocks × draws): the intervals cover the windows, not the rounding"
            for m, e in s.items()
        ]
    if str(claim) == "6a":
        return [
            f"{m}, quantisation ({SOURCE}, {_draws(e)}): one more rounding error of the release's own step raises "
            f"held-out perplexity by {_pct(e)} (base {e['ppl_base']:.1f}; {_changes(e)}, paired 95 % intervals), so "
            f"the +{CLAIM6_BUDGET:g} budget is {_budget_share(e)} of that rise, spent on a model that already carries "
            "one such error"
            for m, e in s.items()
        ]
    return []


def quant_limitation(r: Results) -> list[str]:
    """The report's limitation bullet on quantisation noise, with every measured model's numbers; [] where nothing
    was measured."""
    s = quant_summary(r)
    if not s:
        return []
    parts = [
        f"{m}: R²_lin moves by a median {fmt(e['change_median'])} (max {fmt(e['change_max'])}) against a median "
        f"half-width of {fmt(e['half_width_median'])}, beyond it in {e['n_beyond']} of {e['n_rows']} blocks × draws, "
        f"perplexity +{_pct(e)} ({_changes(e)})"
        for m, e in s.items()
    ]
    return [
        "- The offline weights already carry one quantisation error; one more of the same size (a uniform dither of "
        f"±half the release's step in every quantised weight, {SOURCE}, `benchmarks/quant.py`) moves the numbers: "
        + "; ".join(parts)
        + ". The window intervals do not include this, and claim 6a's budget is spent on the damaged base."
    ]
