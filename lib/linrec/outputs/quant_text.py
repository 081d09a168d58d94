"""The quantisation sensitivity in words (issue 64, item 9): what a second quantisation error of the release's own
size does to R²_lin (beside claim 1's evidence) and to perplexity (beside claim 6a's), and the limitation the report
states, from `results/quant/quant_sensitivity.csv` (`benchmarks/quant.py`, `linrec.analyses.quant`).

That file is a stand-alone measurement, run once and committed (no notebook writes it), so it is read where it sits:
the `quant` folder beside a profile's results folder. Each function is silent ([] or None) where the file is absent,
unreadable, or measured none of this profile's models.
"""

from __future__ import annotations

from linrec.analyses.quant import COLUMNS, summary
from linrec.outputs.results import Results, fmt

SOURCE = "`results/quant/quant_sensitivity.csv`, on the default profile's windows"


def quant_summary(r: Results) -> dict:
    """`linrec.analyses.quant.summary` of the stored table, for the models of this profile (`r2_lin`'s) only;
    {} where the file is absent, lacks its columns, or holds none of them."""
    r2 = r.get("r2_lin")
    table = r.stored("quant/quant_sensitivity.csv") if r2 is not None else None
    if table is None or set(COLUMNS) - set(table.columns):
        return {}
    table = table[table["model"].isin(set(r2["model"])) & (table["scale"] == 1)]
    return summary(table) if not table.empty else {}


def _draws(s: dict) -> str:
    return f"{s['n_seeds']} draw{'s' if s['n_seeds'] != 1 else ''}"


def quant_evidence(r: Results, claim: int | str) -> list[str]:
    """The evidence bullet of claim 1 (R²_lin) or 6a (perplexity) on a second quantisation error; [] for the other
    claims and where nothing was measured."""
    s = quant_summary(r)
    if str(claim) == "1":
        return [
            f"{m}, quantisation ({SOURCE}, {_draws(e)}): one more rounding error of the release's own step in every "
            f"quantised weight moves R²_lin by a median {fmt(e['change_median'])} (max {fmt(e['change_max'])}, block "
            f"{e['max_block']}; up in {e['up'] * 100:.0f} % of blocks × draws) against a median interval half-width of "
            f"{fmt(e['half_width_median'])}, and by more than its half-width in {e['beyond'] * 100:.0f} %: the "
            "intervals cover the windows, not the rounding"
            for m, e in s.items()
        ]
    if str(claim) == "6a":
        return [
            f"{m}, quantisation ({SOURCE}, {_draws(e)}): one more rounding error of the release's own step raises "
            f"held-out perplexity by {_pct(e)} (base {e['ppl_base']:.1f}), so the budget is spent on a model that "
            "already carries one such error"
            for m, e in s.items()
        ]
    return []


def _pct(e: dict) -> str:
    lo, hi = e["ppl_pct_min"], e["ppl_pct_max"]
    return f"{lo:.0f} %" if round(lo) == round(hi) else f"{lo:.0f}–{hi:.0f} %"


def quant_limitation(r: Results) -> list[str]:
    """The report's limitation bullet on quantisation noise, with its numbers; [] where nothing was measured."""
    s = quant_summary(r)
    if not s:
        return []
    parts = [
        f"{m}: R²_lin moves by a median {fmt(e['change_median'])} (max {fmt(e['change_max'])}) against a median "
        f"half-width of {fmt(e['half_width_median'])}, perplexity +{_pct(e)}"
        for m, e in s.items()
    ]
    return [
        "- The offline weights already carry one quantisation error; one more of the same size (a uniform dither of "
        f"±half the release's step in every quantised weight, {SOURCE}, `benchmarks/quant.py`) moves the numbers: "
        + "; ".join(parts)
        + ". The window intervals do not include this, and claim 6a's budget is spent on the damaged base."
    ]
