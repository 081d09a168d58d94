"""The zoo's verdicts (notebook 08 under `params/zoo.yaml`): what sets the profile's shape and its level (`part_word`,
ZOO_RULE), claim 2a from it (`zoo_2a`), and the across-block claims on every trained model's blocks pooled with a
model effect (`judge_zoo`: claims 3, 4 and 6b by their own rules on the zoo's tables, `Rule.zoo`).

Every verdict is drawn from the converged runs alone (`zoo_runs`' `converged`: the plateau rule of
`linrec.inputs.training.plateau`): `zoo_verdict` judges "learned" on their comparisons only and names the runs left
out; `judge_zoo` refuses tables that hold a run that did not converge, and with no converged run every claim is
not testable.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from linrec.analyses.uncertainty import POOLED
from linrec.base.errors import LinrecError
from linrec.claims.learned import comparison_words
from linrec.claims.rules import (
    CLAIM2_MIN_EFFECT,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    PARTLY,
    REPRODUCED,
    ZOO_FACTORS,
    Rule,
    Verdict,
    require,
)

SAME, INCONCLUSIVE = "the same for every factor", "inconclusive"  # a part's word when no factor sets it


def _part(components: pd.DataFrame, part: str) -> pd.DataFrame:
    require(components, ["part", "factor", "share", "component", "component_lo", "component_hi"], "the zoo's rule")
    t = components[components["part"] == part].set_index("factor")
    missing = [f for f in ZOO_FACTORS if f not in t.index]
    if missing:
        raise LinrecError(f"the decomposition has no {', '.join(missing)} row for the {part}; rerun notebook 08")
    return t


def effect(component: float) -> float:
    """The distance a factor adds between two runs, √(2 · component) (0 for a component ≤ 0; NaN stays NaN)."""
    return float(np.sqrt(2 * max(component, 0.0))) if np.isfinite(component) else np.nan


@dataclass(frozen=True)
class PartWord:
    """What sets one part (ZOO_RULE): `word` is a factor, SAME or INCONCLUSIVE; `largest` the shown factor with the
    largest share ("" for none) and its effect with the effects of its interval's ends."""

    word: str
    largest: str
    effect: float
    effect_lo: float
    effect_hi: float
    varied: tuple[str, ...] = ZOO_FACTORS  # the factors the zoo varies (those with a component)


def part_word(components: pd.DataFrame, part: str, margin: float = CLAIM2_MIN_EFFECT) -> PartWord:
    """ZOO_RULE for `part` ("level" or "shape"): the factor that sets it, SAME where the effect of every factor the
    zoo varies is bounded below `margin` (a factor it holds fixed, such as the text of `params/zoo_paper.yaml`, has no
    component and is left out), INCONCLUSIVE otherwise."""
    t = _part(components, part)
    shown = [f for f in ZOO_FACTORS if np.isfinite(t.loc[f, "component_lo"]) and t.loc[f, "component_lo"] > 0]
    top = max(shown, key=lambda f: t.loc[f, "share"]) if shown else ""
    e = [effect(t.loc[top, c]) if top else np.nan for c in ("component", "component_lo", "component_hi")]
    varied = [f for f in ZOO_FACTORS if np.isfinite(t.loc[f, "component"])]  # a factor the zoo holds fixed has none
    bounded = bool(varied) and all(np.isfinite(t.loc[f, "component_hi"]) and effect(t.loc[f, "component_hi"]) < margin
                                   for f in varied)  # fmt: skip
    if bounded:
        word = SAME
    elif top and e[0] >= margin:
        word = top
    else:
        word = INCONCLUSIVE
    return PartWord(word, top, *e, tuple(varied))


def learned(comparisons: pd.DataFrame | None) -> bool | None:
    """Whether every run's profile moved from its own step 0 (True: every 'trained vs init' comparison differs in its
    raw distance, `linrec.claims.learned.comparison_words`), none did (False), or neither / not measured (None)."""
    if comparisons is None or comparisons.empty:
        return None

    words = list(comparison_words(comparisons[comparisons["kind"] == "trained vs init"])["outcome"])
    if words and all(w == "differ" for w in words):
        return True
    if words and all(w == "agree" for w in words):
        return False
    return None


def zoo_2a(components: pd.DataFrame | None, comparisons: pd.DataFrame | None = None,
           margin: float = CLAIM2_MIN_EFFECT) -> str:  # fmt: skip
    """Claim 2a from the zoo (ZOO_RULE): reproduced, partly, not reproduced or not testable, decided on the shape; a
    reproduced becomes partly where the layout sets the level (the convention's level counts, as for claim 5)."""
    if components is None or components.empty:
        return NOT_TESTABLE
    on_shape = _zoo_2a_shape(components, comparisons, margin)
    if on_shape == REPRODUCED and part_word(components, "level", margin).word == "layout":
        return PARTLY
    return on_shape


def _zoo_2a_shape(components: pd.DataFrame, comparisons: pd.DataFrame | None, margin: float) -> str:
    w = part_word(components, "shape", margin)
    if w.word == "layout":
        return NOT_REPRODUCED
    if w.word in ("text", "seed"):
        t = _part(components, "shape")
        if effect(t.loc["layout", "component_hi"]) < margin:
            return REPRODUCED
        return PARTLY if t.loc["layout", "component_lo"] > 0 and effect(t.loc["layout", "component"]) >= margin \
            else NOT_TESTABLE  # fmt: skip
    if w.word == SAME:
        return {True: REPRODUCED, False: NOT_REPRODUCED, None: NOT_TESTABLE}[learned(comparisons)]
    return NOT_TESTABLE


def _says(w: PartWord, part: str) -> str:
    most = (f" (the {w.largest} moves it most, by {w.effect:.3f} [{w.effect_lo:.3f}, {w.effect_hi:.3f}])"
            if w.largest else "")  # fmt: skip
    if w.word == SAME:
        every = ", ".join(w.varied[:-1]) + " and " * (len(w.varied) > 1) + w.varied[-1]  # "layout, text and seed"
        return f"the {part} is the same for every {every} within {CLAIM2_MIN_EFFECT}{most}"
    if w.word == INCONCLUSIVE:
        return f"what sets the {part} is inconclusive{most}"
    return f"{w.word} sets the {part} ({w.effect:.3f} [{w.effect_lo:.3f}, {w.effect_hi:.3f}])"


def converged_runs(runs: pd.DataFrame) -> list[str]:
    """The runs of `runs` (a table with `run` and `converged`, e.g. `zoo_runs`) that converged, in order."""
    return [str(r) for r, ok in zip(runs["run"], runs["converged"]) if _true(ok)]


def _true(value) -> bool:
    """A `converged` cell as written or in memory (True/False, or "True"/"False" read back from a CSV)."""
    return str(value).strip().lower() in ("true", "1", "1.0")


NOT_CONVERGED = "not converged"  # the word for the runs every zoo verdict leaves out


def split_converged(runs: pd.DataFrame | None) -> tuple[list[str] | None, list[str]]:
    """(the converged runs, the others) of `runs` (`zoo_runs`: run, converged); (None, []) without the table (every
    run counts)."""
    if runs is None:
        return None, []
    require(runs, ["run", "converged"], "the zoo's converged runs")
    kept = converged_runs(runs)
    return kept, [str(r) for r in runs["run"] if str(r) not in kept]


def _excluded_words(out: list[str], total: int) -> str:
    return f"; {len(out)} of {total} runs {NOT_CONVERGED} and left out ({', '.join(out)})" if out else ""


def zoo_verdict(components: pd.DataFrame | None, comparisons: pd.DataFrame | None = None,
                runs: pd.DataFrame | None = None) -> dict:  # fmt: skip
    """The zoo's row: `shape_factor`, `level_factor` (`part_word`: a factor, SAME or INCONCLUSIVE), `word` (what sets
    each, with the effect of the factor that moves it most, and whether the profiles were learned where that
    decides; the runs left out for not having converged) and `claim2a` (`zoo_2a`). With `runs` (`zoo_runs`), only
    the converged runs' "trained vs init" comparisons say whether the profiles were learned; `components` must be
    the converged runs' decomposition (the caller's: `linrec.studies.training.zoo`)."""
    kept, out = split_converged(runs)
    if kept is not None and comparisons is not None and not comparisons.empty:
        trained = comparisons["kind"] == "trained vs init"
        comparisons = comparisons[~trained | comparisons["a"].astype(str).isin(kept)]
    excluded = _excluded_words(out, len(kept) + len(out)) if kept is not None else ""
    if components is None or components.empty:
        why = "not run" if kept is None or kept else "no run converged"
        return {"word": why + excluded, "claim2a": NOT_TESTABLE, "shape_factor": "", "level_factor": ""}
    shape, level = part_word(components, "shape"), part_word(components, "level")
    word = f"{_says(shape, 'shape')}; {_says(level, 'level')}"
    if shape.word == SAME:
        moved = learned(comparisons)
        word += {True: "; every profile learned (moved from its initialisation)",
                 False: "; no profile learned (each within the margin of its initialisation)",
                 None: "; learned in some runs only, or not measured"}[moved]  # fmt: skip
    return {"word": word + excluded, "claim2a": zoo_2a(components, comparisons), "shape_factor": shape.word,
            "level_factor": level.word}  # fmt: skip


CLAIM_COLUMNS = ["claim", "verdict", "reason", "n_models", "n_blocks", "n_eff", "n_needed", "powered", "rho", "lo",
                 "hi", "lo90", "hi90", "outcome"]  # fmt: skip
# the pooled row's correlation and its intervals, by the column names of the claim's evidence (3: Pearson, 6b: Spearman)
POOLED_COLUMNS = {"pearson_r": ("pearson_r", "ci_lo", "ci_hi", "ci_lo90", "ci_hi90", "correlation"),
                  "spearman_rho": ("spearman_rho", "rho_lo", "rho_hi", "rho_lo90", "rho_hi90", "outcome")}  # fmt: skip


def judge_zoo(rule: Rule, tables) -> Verdict | None:
    """`rule` judged on the zoo's tables (`rule.zoo`, taken by name from `tables`, a dict of tables,
    with `zoo_runs`): claims 3, 4 and 6b by their own verdict functions on every trained model's blocks pooled with a
    model effect. None where the zoo wrote none of them and no runs table (or the rule reads none of the zoo's).

    With `zoo_runs`, the tables must be the converged runs' (a pooled row cannot be recomputed without a model, so a
    table holding one that did not converge is refused: one line naming it); with no converged run the claim is not
    testable."""
    found = [tables.get(name) for name in rule.zoo]
    kept, out = split_converged(tables.get("zoo_runs"))
    if not rule.zoo or (kept is None and all(x is None for x in found)):
        return None
    if kept is not None:
        for name, table in zip(rule.zoo, found):
            held = [] if table is None else sorted(set(table["model"].astype(str)) & set(out))
            if held:
                raise LinrecError(
                    f"the zoo's {name} holds run(s) {', '.join(held)}, which did not converge; measure the "
                    "converged runs alone (linrec.claims.zoo.converged_runs)"
                )
        if not kept:
            return Verdict(rule.id, NOT_TESTABLE, reason=f"no zoo run converged ({len(out)} {NOT_CONVERGED})")
    return None if all(x is None for x in found) else rule(*found)


def pooled_row(v: Verdict, table: pd.DataFrame | None = None) -> dict:
    """A zoo verdict (`judge_zoo`) as one row of `CLAIM_COLUMNS`: `claim`, `verdict`, `reason` and, where its evidence
    holds the pooled row (claims 3 and 6b), `n_models`, `n_blocks`, `n_eff`, `n_needed` (blocks the equivalence test
    needs at this dependence), `powered` (n_blocks ≥ n_needed), `rho` with its 95 % and 90 % intervals and the
    outcome its rule gave it (the correlation's for 3, `linrec.claims.swap.flag_outcome` for 6b); for claim 4 the
    models and blocks of the regimes' `table`. Absent numbers are NaN."""
    row = dict.fromkeys(CLAIM_COLUMNS, np.nan) | {"claim": str(v.claim), "verdict": v.verdict, "reason": v.reason}
    pool = next((e for e in v.evidence if e.get("model") == POOLED), None)
    cols = next((c for k, c in POOLED_COLUMNS.items() if pool is not None and k in pool), None)
    if cols is not None:
        row.update({"n_models": sum(e.get("model") != POOLED for e in v.evidence), "n_blocks": int(pool["n_blocks"]),
                    "n_eff": float(pool["n_eff"]), "n_needed": float(pool["n_needed"]),
                    "powered": bool(pool["n_blocks"] >= pool["n_needed"]),
                    **dict(zip(("rho", "lo", "hi", "lo90", "hi90", "outcome"), (pool[c] for c in cols)))})  # fmt: skip
    elif table is not None and "n_blocks" in table and str(v.claim) == "4":
        row.update({"n_models": len(table), "n_blocks": int(table["n_blocks"].sum())})
    return row


def pooled_table(rules, tables) -> pd.DataFrame:
    """Notebook 08's `zoo_claims`: each of `rules` (claims 3, 6b and 4) judged on the zoo's `tables` (`judge_zoo`),
    one `pooled_row` each."""
    rows = [pooled_row(v, tables.get(rule.zoo[0])) for rule in rules if (v := judge_zoo(rule, tables)) is not None]
    return pd.DataFrame(rows).reindex(columns=CLAIM_COLUMNS)
