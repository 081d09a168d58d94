"""The report's routing section in words (notebook 06's tables, beyond the paper): per-token routing set against the
anchor paper's three results (arXiv 2603.03459, "Half the Nonlinearity Is Wasted"; `linrec.claims.routing`).

`routing_section` is the whole section, with its tables; its findings are notebook 06's rows of
`linrec.outputs.findings.TOLD`, worded there once: per model, the largest routable share at 0.05 resolution
("routing"); the anchor's token-identity claim judged on its own quantity (the per-type need) and on the
token/context/full gates, beside the gate-share r linrec reported before ("anchor"); the healed ΔPPL for each k
against the fine-tuned control ("heal")."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from linrec.base.errors import LinrecError
from linrec.claims.routing import ANCHOR_RULES, anchor_table, heal_table
from linrec.outputs.findings import tell
from linrec.outputs.report_figures import figure_lines, relative
from linrec.outputs.results import ci


def _judged_anchor(get) -> pd.DataFrame | None:
    """The anchor's verdicts judged again by today's rules (`linrec.claims.routing.anchor_table`) on the tables they
    are drawn from (`get(name)`: `routing_identity`, `routing_split_auc`), so no word notebook 06 stored under an older
    rule is printed; the stored `routing_anchor` where neither is there."""
    identity, split = get("routing_identity"), get("routing_split_auc")
    if identity is None and split is None:
        return get("routing_anchor")
    try:
        return anchor_table(identity, split)
    except (LinrecError, KeyError):  # an older linrec's tables: the verdicts notebook 06 stored
        return get("routing_anchor")


def _judged_heal(heal: pd.DataFrame) -> pd.DataFrame:
    """A healing table with each swap's outcome judged again by today's rule (`heal_table`); as stored where it
    cannot be (an older linrec's columns)."""
    try:
        return heal_table(heal.drop(columns=["outcome", "healed_share"], errors="ignore"))
    except (LinrecError, KeyError):
        return heal


def _need_table(identity: pd.DataFrame) -> pd.DataFrame:
    t = identity.assign(
        pair=identity["corpus_a"] + "–" + identity["corpus_b"],
        need_r=[f"{r:+.2f} {ci(lo, hi)}" for r, lo, hi in identity[["r_need", "r_need_lo", "r_need_hi"]].to_numpy()],
        gate_r=[f"{r:+.2f} {ci(lo, hi)}" for r, lo, hi in identity[["r", "r_lo", "r_hi"]].to_numpy()],
    )
    cols = {"model": "model", "block": "block", "pair": "corpora", "n_types": "types", "need_r": "need r (anchor's)",
            "rho_need": "need ρ", "r_need_rel": "need / ‖y‖² r", "lookup_r2": "lookup R²",
            "gate_r": "gate-share r"}  # fmt: skip
    cols = {k: v for k, v in cols.items() if k in t}
    return t[list(cols)].rename(columns=cols)


def _split_table(split: pd.DataFrame) -> pd.DataFrame:
    t = split.assign(cell=[f"{a:.2f} {ci(lo, hi)}" for a, lo, hi in split[["auc", "auc_lo", "auc_hi"]].to_numpy()])
    wide = t.pivot_table(index=["model", "block"], columns="part", values="cell", aggfunc="first").reset_index()
    wide.columns.name = None
    return wide.rename(columns={"full": "AUC whole", "token": "AUC token", "context": "AUC context"})[
        ["model", "block", "AUC whole", "AUC context", "AUC token"]
    ]


def _heal_table(heal: pd.DataFrame) -> pd.DataFrame:
    t = heal[heal["k"] > 0]
    t = t.assign(after=[f"{d:+.2f} {ci(lo, hi)}" for d, lo, hi in t[["delta_after", "delta_after_lo",
                                                                       "delta_after_hi"]].to_numpy()])  # fmt: skip
    cols = {"model": "model", "mode": "trained", "k": "k", "blocks": "blocks", "delta_before": "ΔPPL before",
            "after": "ΔPPL after (vs control)", "delta_after_base": "after vs base", "outcome": "outcome"}  # fmt: skip
    return t[list(cols)].rename(columns=cols)


HEADING = "## Beyond the paper: each token to the FFN or to its map"
ANCHOR = "routing"  # the section's link target (`<a id>`), where a profile that routes no block points for the tables


def _tables_in_full(quoted, identity: pd.DataFrame | None, split: pd.DataFrame | None, out: Path) -> list[str]:
    """Where a profile that quotes another's routing (`quoted`: its `routing_summary`, `results/full/`'s) finds the
    anchor's per-block tables (`identity`, `split`: each None where there is none to quote): a link to that folder's
    report (its routing section), with how many rows each table has, instead of the tables again."""
    parts = []
    if identity is not None:
        n = len(identity)
        parts.append(f"token identity, {n} block × corpus pair{'s' * (n != 1)}")
    if split is not None:
        n = split.groupby(["model", "block"]).ngroups
        parts.append(f"the token / context / whole gates' held-out AUC, {n} block{'s' * (n != 1)}")
    if not parts:
        return []
    report, other = quoted.source.folder / "report.md", quoted.source.profile
    where = (f"[`results/{other}/report.md`]({relative(report, out.parent)}#{ANCHOR})" if report.exists()
             else f"`results/{other}/report.md` (`linrec report --params params/{other}.yaml` writes it)")  # fmt: skip
    return [f"The per-block tables behind these lines ({'; '.join(parts)}), each with its rule, are in {where}.", ""]


def routing_section(r, table, figures_dir: str | Path, out: Path) -> list[str]:
    """The report's routing section from the results `r` (`linrec.outputs.results.Results`), with Figure 9: the
    routable share, the anchor's token-identity claim on its own quantity and on the gates, and healing (this
    profile's `routing_heal`, else params/healing.yaml's); `table(df, floatfmt)` renders a markdown table. A profile
    that routes no block (the default: `route_blocks: 0`) quotes the last run of params/full.yaml, and says so, with
    its figure from `results/full/figures/` and a link to that run's report for the per-block tables; where that
    run's routing tables are older than this linrec, the section says so and quotes nothing. [] where neither routed.
    The figure is linked relative to `out` (the report)."""
    quoted = r.get("routing_summary")  # this profile's, else the last run of params/full.yaml (`STAND_INS`)
    summary, own, other = quoted.table, quoted.source.profile is None, quoted.source.other

    def get(name: str):
        return quoted.also(name).table

    lines = tell("routing", summary)
    if not lines:
        if stale := quoted.source.why_stale:
            return [HEADING, "", "This profile routes no block (`route_blocks: 0`) and quotes the routing of "
                    f"`params/{other}.yaml`, which routes every block; but {stale}.", ""]  # fmt: skip
        return []
    text = [f'<a id="{ANCHOR}"></a>', "", HEADING, "",
            "Notebook 06 routes a share of each block's tokens to its closed-form map by a logistic gate on the "
            "block's input (d + 1 parameters, trained on train rows), the per-token version of the swap from "
            "arXiv 2603.03459 (the *anchor*); held-out ΔPPL against the share routed on a 0.05 grid, with paired "
            "skew-corrected jackknife intervals; the routable share's interval inverts one-sided t tests over windows "
            "(tables `routing_curve`, `routing_routable`, `routing_summary`, `routing_identity`, "
            "`routing_split_auc`, `routing_split_ppl`, `routing_anchor`, `routing_heal`).", ""]  # fmt: skip
    if not own:
        text += [
            "This profile routes no block (`route_blocks: 0`, which keeps the default `make figures` within "
            "its 20-minute budget); every number and the figure of this section are from the last run of "
            f"`params/{other}.yaml` (`results/{other}/`), which routes every block.",
            "",
        ]
    text += [f"- {line}" for line in lines]
    beside = r.get("routing_summary", own=False) if own else None  # the stand-in's run, beside this one's
    if beside is not None and beside.table is not None:
        text += [f"- With `params/{beside.source.profile}.yaml` (every block routed, every held-out window): {line}"
                 for line in tell("routing", beside.table)]  # fmt: skip
    text += [*[f"- {line}" for line in tell("anchor", _judged_anchor(get))], ""]
    cols = {"model": "model", "best_block": "best block", "best_routable_pct1": "share within +1 %",
            "best_lo": "lo", "best_hi": "hi", "n_quarter": "blocks ≥ 25 %", "n_monotone": "monotone",
            "rho_r2_routable": "ρ(R²_lin, share)", "rho_lo": "ρ lo", "rho_hi": "ρ hi",
            "rho_r2_swap": "6b: ρ(R²_lin, ΔPPL)", "need_r_median": "need r (anchor's)",
            "identity_r_median": "gate-share r"}  # fmt: skip
    text += [table(summary[[c for c in cols if c in summary]].rename(columns=cols), "{:.2f}"), ""]
    identity, split = get("routing_identity"), get("routing_split_auc")
    identity = identity if identity is not None and "r_need" in identity and len(identity) else None
    split = split if split is not None and len(split) else None
    if not own:  # quoting full: its summary above; its per-block tables stay in its own report, linked
        text += _tables_in_full(quoted, identity, split, out)
    if own and identity is not None:
        text += [f"The rule: {ANCHOR_RULES['need']}.", "", table(_need_table(identity), "{:.2f}"), ""]
    if own and split is not None:
        text += [f"The rule: {ANCHOR_RULES['split']}.", "", table(_split_table(split), "{:.2f}"), ""]
    healing = r.get("routing_heal", ("healing",), own=False)  # params/healing.yaml's, beside this profile's
    heals = [(get("routing_heal"), ""), (healing.table, f" (params/{healing.source.profile}.yaml)")]
    heals = [(_judged_heal(h), where) for h, where in heals if h is not None and "outcome" in h and len(h)]
    for heal, where in heals:
        text += [*[f"- {line}" for line in tell("heal", heal, where=where)], ""]
    if heals:
        both = pd.concat([h.assign(model=h["model"] + where) for h, where in heals], ignore_index=True)
        text += [f"The rule: {ANCHOR_RULES['heal']}.", "", table(_heal_table(both), "{:.2f}"), ""]
    return text + figure_lines("fig9_routing", figures_dir if own else quoted.source.folder / "figures", out)
