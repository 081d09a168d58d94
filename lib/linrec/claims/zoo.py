"""The zoo's verdicts (notebook 08 under `params/zoo.yaml`): which factor sets the profile's shape and which its level
(`setter`, `zoo_2a`, ZOO_RULE), and the across-block claims on every trained model's blocks pooled with a model effect
(`pooled_claims`: claims 3, 4 and 6b by their own rules on the zoo's tables).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from linrec.claims.rules import (
    NOT_REPRODUCED,
    NOT_TESTABLE,
    PARTLY,
    POOLED,
    REPRODUCED,
    ZOO_FACTORS,
    ZOO_MINOR_SHARE,
    require,
)

NONE_SHOWN = "none shown"  # no factor's component clears 0: measurement noise, or too few runs to tell


def _part(components: pd.DataFrame, part: str) -> pd.DataFrame:
    require(components, ["part", "factor", "share", "share_lo", "share_hi", "component_lo"], "the zoo's rule")
    t = components[components["part"] == part].set_index("factor")
    missing = [f for f in ZOO_FACTORS if f not in t.index]
    if missing:
        from linrec.base.errors import LinrecError

        raise LinrecError(f"the decomposition has no {', '.join(missing)} row for the {part}; rerun notebook 08")
    return t


def shown(components: pd.DataFrame, part: str) -> list[str]:
    """The factors whose component's 95 % interval lies above 0 for `part` ("level" or "shape")."""
    t = _part(components, part)
    return [f for f in ZOO_FACTORS if np.isfinite(t.loc[f, "component_lo"]) and t.loc[f, "component_lo"] > 0]


def setter(components: pd.DataFrame, part: str) -> str:
    """The factor that sets `part` (ZOO_RULE): the shown factor with the largest share, or NONE_SHOWN."""
    t = _part(components, part)
    candidates = shown(components, part)
    return max(candidates, key=lambda f: t.loc[f, "share"]) if candidates else NONE_SHOWN


def zoo_2a(components: pd.DataFrame | None) -> str:
    """Claim 2a from the zoo (ZOO_RULE), on shape: reproduced, partly, not reproduced or not testable."""
    if components is None or components.empty:
        return NOT_TESTABLE
    t = _part(components, "shape")
    who = setter(components, "shape")
    if who == "layout":
        return NOT_REPRODUCED
    if who == NONE_SHOWN:
        return NOT_TESTABLE
    if "layout" in shown(components, "shape"):
        return PARTLY
    return REPRODUCED if t.loc["layout", "share_hi"] < ZOO_MINOR_SHARE else NOT_TESTABLE


def zoo_verdict(components: pd.DataFrame | None) -> dict:
    """The zoo's row: `shape_factor`, `level_factor` (`setter`), `word` ("<factor> sets the shape; <factor> sets the
    level") and `claim2a` (`zoo_2a`)."""
    if components is None or components.empty:
        return {"word": "not run", "claim2a": NOT_TESTABLE, "shape_factor": "", "level_factor": ""}
    shape, level = setter(components, "shape"), setter(components, "level")

    def says(who: str, part: str) -> str:
        return f"no factor shown to set the {part}" if who == NONE_SHOWN else f"{who} sets the {part}"

    return {"word": f"{says(shape, 'shape')}; {says(level, 'level')}", "claim2a": zoo_2a(components),
            "shape_factor": shape, "level_factor": level}  # fmt: skip


def pooled_claims(probe_summary: pd.DataFrame | None, predictors: pd.DataFrame | None,
                  regimes: pd.DataFrame | None) -> pd.DataFrame:  # fmt: skip
    """Claims 3, 4 and 6b by their own rules (`linrec.claims.probe.claim3`, `regimes.claim4`, `swap.claim6b`) on the
    zoo's tables, one row each: `claim`, `verdict`, `reason`, and for 3 and 6b the pooled row's numbers: `n_models`,
    `n_blocks`, `n_eff`, `n_needed` (blocks the equivalence test needs at this dependence), `powered` (n_blocks ≥
    n_needed), `rho` with its 95 % and 90 % intervals and the correlation's outcome."""
    from linrec.claims.probe import claim3
    from linrec.claims.regimes import claim4
    from linrec.claims.swap import claim6b

    rows = []
    for claim, v, table, cols in (
        ("3", claim3(probe_summary), probe_summary,
         ("pearson_r", "ci_lo", "ci_hi", "ci_lo90", "ci_hi90", "correlation")),
        ("6b", claim6b(predictors), None if predictors is None else predictors[predictors["column"] == "r2_lin"],
         ("spearman_rho", "rho_lo", "rho_hi", "rho_lo90", "rho_hi90", "outcome")),
        ("4", claim4(regimes), None, ()),
    ):  # fmt: skip
        row = {"claim": claim, "verdict": v.verdict, "reason": v.reason}
        pool = None if table is None else table[table["model"] == POOLED]
        if pool is not None and len(pool):
            r = pool.iloc[0]
            row.update({"n_models": int((table["model"] != POOLED).sum()), "n_blocks": int(r["n_blocks"]),
                        "n_eff": float(r["n_eff"]), "n_needed": float(r["n_needed"]),
                        "powered": bool(r["n_blocks"] >= r["n_needed"]),
                        **dict(zip(("rho", "lo", "hi", "lo90", "hi90", "outcome"), (r[c] for c in cols)))})  # fmt: skip
        elif regimes is not None and claim == "4":
            row.update({"n_models": len(regimes), "n_blocks": int(regimes["n_blocks"].sum())})
        rows.append(row)
    return pd.DataFrame(rows).reindex(columns=CLAIM_COLUMNS)


CLAIM_COLUMNS = ["claim", "verdict", "reason", "n_models", "n_blocks", "n_eff", "n_needed", "powered", "rho", "lo",
                 "hi", "lo90", "hi90", "outcome"]  # fmt: skip
