"""What each notebook concludes, in words, from one narrator (issue 86).

A notebook's findings are of two kinds. The paper's claims it decides are worded once, by the claim's row of the
catalog (`linrec.outputs.catalog.render`: the verdict and one line of evidence per model, the words the report's
claim section and the README block show); `Said.findings` prints them as they stand. What a study measures beside
its claims has no claim section: each such finding is a `Told` row here (`TOLD`: the notebook, the tables it reads,
its template, and where the report prints it), rendered by `tell` for the notebook and the report alike: notebook
04's regimes and their replication on fresh text (the notebook alone), notebook 06's first position and greedy swaps
and notebook 07's random-init twins, Gaussian inputs and cross feeding (the report's "What the notebooks concluded",
`beside`), notebook 06's per-token routing, the anchor paper's token-identity claim and healing (the report's routing
section, `linrec.outputs.routing_text`).
Nothing here judges: the numbers are the stored tables', the verdicts the catalog's and the stored rules'.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from linrec.analyses.controls import GAUSSIAN_DROP
from linrec.analyses.spectrum import concentrated
from linrec.base.tables import blocks
from linrec.claims.routing import HEAL_BUDGET
from linrec.outputs.catalog import build, of_study
from linrec.outputs.claim_text import Said
from linrec.outputs.results import Results, ci


def _records(t: pd.DataFrame | None) -> list[dict]:
    return [] if t is None or not len(t) else t.to_dict("records")


def swap_beside(r: Results) -> list[str]:
    """Notebook 06 beside claims 6a and 6b: each block whose first position holds most of its output with the FFN or
    its train mean kept there (`swap_first`), and the greedy multi-block swaps (`swap_greedy`)."""
    lines = []
    for x in _records(r.table("swap_first")):
        if "delta_ppl_ffn" in x:
            lines.append(
                f"{x['model']} block {x['block']} ({x['first_var_share']:.0%} of its held-out output variance at "
                f"position 0): ΔPPL {x['delta_ppl_map']:+.2f} with the map everywhere, {x['delta_ppl_ffn']:+.2f} "
                f"[{x['delta_lo_ffn']:+.2f}, {x['delta_hi_ffn']:+.2f}] with the FFN kept at position 0, "
                f"{x['delta_ppl_mean']:+.2f} with the train mean there: position 0 carries "
                f"{x['share_of_cost_at_first']:.0%} of the cost."
            )
    for x in _records(r.table("swap_greedy")):
        lines.append(
            f"{x['model']}: the greedy swap in order of {x['order']}, within +{x['budget_ppl']:g} on the screening "
            f"windows, kept blocks [{x['blocks_swapped']}] (screening ΔPPL {x['screening_delta_ppl']:+.2f}; held out "
            f"{x['test_delta_ppl']:+.2f} [{x['test_delta_lo']:+.2f}, {x['test_delta_hi']:+.2f}]), removing "
            f"{x['params_removed']:,} FFN parameters for {x['params_added']:,} affine ones "
            f"({(x['params_removed'] - x['params_added']) / x['params_model']:.1%} of the model)."
        )
    return lines


def controls_beside(r: Results) -> list[str]:
    """Notebook 07 beside claims 2a and 2b: trained profiles against their random-init twins, the Gaussian-input
    control (a block "loses" by more than `GAUSSIAN_DROP`) and cross feeding."""
    lines = []
    for x in _records(r.table("controls_random_init_summary")):
        seeds = x["mean_abs_init_seeds"]
        seeds = "" if pd.isna(seeds) else f" against {seeds:.3f} between two init seeds"
        lines.append(
            f"{x['model']}: trained R²_lin spans {x['trained_r2_min']:.3f}–{x['trained_r2_max']:.3f}, its random-init "
            f"twins {x['init_r2_min']:.3f}–{x['init_r2_max']:.3f}; mean |trained − init| = "
            f"{x['mean_abs_trained_init']:.3f}{seeds}; the init twin's median block fits its train split to R² "
            f"{x['init_r2_train_median']:.2f} and held-out windows to {x['init_r2_test_median']:.2f} (trained model's "
            f"gap {x['trained_gap_median']:.2f})."
        )
    for x in _records(r.table("controls_inputs_summary")):
        lines.append(
            f"{x['model']}: on Gaussian inputs with the captured mean and covariance, the median block's R² is "
            f"{x['r2_gaussian_median']:.3f} (own inputs {x['r2_own_median']:.3f}); {int(x['n_gaussian_drop'])} blocks "
            f"lose more than {GAUSSIAN_DROP}."
        )
    for x in _records(r.table("controls_cross_feed_summary")):
        lines.append(
            f"inputs of {x['inputs_from']} → FFN of {x['ffn_of']}: median R² {x['r2_raw']:.3f} raw, "
            f"{x['r2_recoloured']:.3f} re-coloured, {x['r2_ffn_own_inputs']:.3f} on its own inputs."
        )
    return lines


def regimes_told(r) -> list[str]:
    """Notebook 04 beside claim 4, from the per-block table (`spectrum`), one line per model: how many blocks are in
    each of the paper's two regimes and how many in neither (and why), the outlier-concentrated blocks the verdict
    rests on with their explained part's effective rank, and the blocks concentrated in a few features whose explained
    part is not rank ≈ 1 (with that rank's range)."""
    lines = []
    for model, t in r.get("spectrum").groupby("model", sort=False):
        n = len(t)
        count = t["regime"].value_counts()
        linear, outlier = int(count.get("broadly linear", 0)), int(count.get("outlier-concentrated", 0))
        others = [
            f"{int(count[k])} {k}" for k in ("nonlinear", "first-token-concentrated", "unclassified") if k in count
        ]
        neither = n - linear - outlier
        line = (f"{model}: of {n} blocks, {linear} broadly linear and {outlier} outlier-concentrated (the paper's two "
                f"regimes); {neither} ({neither / n:.0%}) in neither: {', '.join(others) or 'none'}.")  # fmt: skip
        rests = t[t["regime"] == "outlier-concentrated"]
        if len(rests):
            named = ", ".join(f"block {b.block} (explained part's effective rank {b.eff_rank_explained:.1f})"
                              for b in rests.itertuples())  # fmt: skip
            line += f" Its outlier-concentrated side rests on {named}."
        conc = np.array([concentrated(b.r2_lin, b.r2_feature_median, b.top1_var_share, b.eff_rank_out, b.d_out)
                         for b in t.itertuples()], dtype=bool) & (t["regime"] == "unclassified").to_numpy()  # fmt: skip
        if conc.any():
            ranks = t.loc[conc, "eff_rank_explained"]
            listed = ", ".join(blocks(t, conc).split())
            span = f"{ranks.min():.1f}" if len(ranks) == 1 else f"{ranks.min():.1f}–{ranks.max():.1f}"
            which = "block" if len(ranks) == 1 else "blocks"
            line += f" Concentrated in a few features but not rank ≈ 1: {which} {listed} (explained part's "
            line += f"effective rank {span})."
        lines.append(line)
    return lines


def replication_told(r) -> list[str]:
    """Notebook 04's regimes on fresh text (`spectrum_replicates_summary`), one line per model: over which samples,
    its broadly linear and outlier-concentrated counts, the outlier blocks on each sample and on every one, and claim
    4's replication word."""
    return [
        f"{x['model']}: over samples {x['samples']}, broadly linear {x['n_broadly_linear']}, outlier-concentrated "
        f"{x['n_outlier_concentrated']} (blocks {x['outlier_blocks']}; on every sample: "
        f"{x['outlier_blocks_every_sample'] or 'none'}); claim 4 {x['replication']}."
        for x in _records(r.get("spectrum_replicates_summary"))
    ]


def routing_told(r) -> list[str]:
    """What per-token routing shows (notebook 06's `routing_summary`), one sentence per model, beside the anchor's
    numbers (GPT-2: 25–56 % of tokens routed linear for under 1 % perplexity)."""
    lines = []
    for row in _records(r.get("routing_summary")):
        n = int(row["n_blocks_routed"])
        text = (
            f"{row['model']} (per-token routing, {n} blocks, shares every 0.05): the best of them, picked on "
            f"these held-out numbers (so an optimistic pick), block {int(row['best_block'])}, routes "
            f"{row['best_routable_pct1']:.0%} of its tokens to its map within +1 % "
            f"perplexity, 95 % CI {ci(row['best_lo'], row['best_hi'])} (the anchor paper: 25–56 % in GPT-2)"
        )
        if pd.notna(row.get("n_quarter")):
            text += f"; {int(row['n_quarter'])} of {n} routed blocks route at least 25 %"
        if pd.notna(row.get("n_monotone")):
            text += f"; {int(row['n_monotone'])} of {n} curves rise with the share without a fall beyond noise"
        text += (
            f"; ρ(R²_lin, routable share) = {row['rho_r2_routable']:+.2f} {ci(row['rho_lo'], row['rho_hi'])}, "
            f"{row['outcome'] or 'not computed'}"
            if pd.notna(row.get("rho_r2_routable"))
            else f"; ρ(R²_lin, routable share) undefined on {n} routed blocks"
        )
        if pd.notna(row.get("rho_r2_swap")):
            text += (
                f", beside 6b's ρ(R²_lin, whole-block ΔPPL) = {row['rho_r2_swap']:+.2f} "
                f"{ci(row['rho_r2_swap_lo'], row['rho_r2_swap_hi'])}"
            )
        lines.append(text + ".")
    return lines


def anchor_told(r) -> list[str]:
    """The anchor's "nonlinearity need cannot be predicted from token identity", per model (`routing_anchor`): on
    its own quantity, then on the gates, with the gate-share r that is not its quantity named as such."""
    lines = []
    for row in _records(r.get("routing_anchor")):
        text = f"{row['model']}, token identity"
        if int(row["need_pairs"]):
            text += (
                f" — the anchor's quantity, each token type's mean need (the map's error) on one corpus against "
                f"another: median r = {row['need_r_median']:+.2f} (from {row['need_r_min']:+.2f} to "
                f"{row['need_r_max']:+.2f}) over {int(row['need_pairs'])} block × corpus pairs, "
                f"{int(row['need_context'])} shown near 0, {int(row['need_token'])} shown away from it; a lookup of "
                f"one corpus's type means explains a median {row['lookup_r2_median']:.2f} of the other's per-token "
                f"need (the anchor: r < 0.05): **{row['need_verdict']}**"
            )
            if pd.notna(row.get("need_rel_r_median")):
                text += f"; with each token's need divided by its ‖y‖², median r = {row['need_rel_r_median']:+.2f}"
            text += (
                f". The share of a type's tokens the gate routes "
                f"correlates at a median r = {row['gate_r_median']:+.2f} across corpora, but that is not the "
                "anchor's quantity: the gate reads the input, which carries the token's identity"
            )
        if int(row["split_blocks"]):
            text += (
                f". Gates on the token part of the input, the context part and the whole (median held-out AUC "
                f"{row['auc_token_median']:.2f}, {row['auc_context_median']:.2f}, {row['auc_full_median']:.2f}): "
                f"the context gate matches the whole and the token gate falls short in {int(row['split_context'])} "
                f"of {int(row['split_blocks'])} blocks, the other way in {int(row['split_token'])} (the anchor: the "
                f"context gate matches the full gate, token identity adds nothing): **{row['split_verdict']}**"
            )
        lines.append(text + ".")
    return lines


def heal_told(r, where: str = "") -> list[str]:
    """Per model and mode, the healed ΔPPL for each k against the same fine-tune unswapped (`routing_heal`; `where`:
    the profile it was quoted from, after the model's name)."""
    heal, lines = r.get("routing_heal"), []
    for (model, mode), t in heal[heal["k"] > 0].groupby(["model", "mode"], sort=False):
        first = t.iloc[0]
        parts = [
            f"k = {int(x['k'])} (blocks {x['blocks']}): {x['delta_before']:+.2f} before, {x['delta_after']:+.2f} "
            f"{ci(x['delta_after_lo'], x['delta_after_hi'])} after, {x['outcome']}"
            for x in t.sort_values("k").to_dict("records")
        ]
        if mode == "all":
            ppl = f"{first['ppl_control']:.2f}"
            what, control = "every weight", f"the same fine-tune unswapped, control perplexity {ppl}"
        else:
            ppls = " / ".join(f"{v:.2f}" for v in t.sort_values("k")["ppl_control"])
            what, control = "the maps alone", f"the same blocks' own FFNs fine-tuned alike, control perplexity {ppls}"
        lines.append(
            f"{model}{where}, healing ({what} fine-tuned for {int(first['steps'])} steps of {int(first['batch_size'])} "
            f"train windows, against {control}): " + "; ".join(parts)
            + f" (ΔPPL; 'healed' within +{HEAL_BUDGET:.0%} of the control; the anchor: 5 of 24 GPT-2 layers at no "
            "cost)."
        )  # fmt: skip
    return lines


CONCLUDED, ROUTING = "concluded", "routing"  # where the report prints a row: its list of what the notebooks concluded,
# its routing section (linrec.outputs.routing_text); "" for a row the notebook alone prints


@dataclass(frozen=True)
class Told:
    """One thing a study measured beside its claims, worded once: its `notebook`, the results tables it `reads` (the
    first is the one a lone table stands for in `tell`), its template (`lines`: the tables, by name, to one line per
    model) and where the report prints it (`report`: CONCLUDED, ROUTING or "")."""

    notebook: str
    reads: tuple[str, ...]
    lines: Callable[..., list[str]]
    report: str = ""


TOLD: dict[str, Told] = {  # in the order a notebook prints them
    "regimes": Told("04", ("spectrum",), regimes_told),
    "replication": Told("04", ("spectrum_replicates_summary",), replication_told),
    "swap": Told("06", ("swap_first", "swap_greedy"), swap_beside, CONCLUDED),
    "routing": Told("06", ("routing_summary",), routing_told, ROUTING),
    "anchor": Told("06", ("routing_anchor",), anchor_told, ROUTING),
    "heal": Told("06", ("routing_heal",), heal_told, ROUTING),
    "controls": Told(
        "07",
        ("controls_random_init_summary", "controls_inputs_summary", "controls_cross_feed_summary"),
        controls_beside,
        CONCLUDED,
    ),  # fmt: skip
}


def tell(name: str, tables, **context) -> list[str]:
    """Row `name` of `TOLD` in words on `tables` (anything that gives a table by name, `.get`: `Results`, a dict; or
    one table, the first the row reads), `context` passed to its template; [] where no table it reads has a row."""
    row = TOLD[name]
    if tables is None or isinstance(tables, pd.DataFrame):
        tables = {row.reads[0]: tables}
    tables = _ByName(tables)
    return row.lines(tables, **context) if any(_records(tables.get(n)) for n in row.reads) else []


class _ByName:
    """Tables by name for a template, `.get(name)` and `.table(name)` alike: from a dict, or this run's own table of a
    `Results` (its `.get` is the provenance-aware read, which a template does not need)."""

    def __init__(self, tables):
        self._tables = tables

    def get(self, name: str) -> pd.DataFrame | None:
        t = self._tables
        return t.table(name) if isinstance(t, Results) else t.get(name)

    table = get


def notebooks(report: str = CONCLUDED) -> tuple[str, ...]:
    """The notebooks with rows the report prints in `report` (CONCLUDED: "06", "07")."""
    return tuple(dict.fromkeys(row.notebook for row in TOLD.values() if row.report == report))


def beside(r: Results, notebook: str, report: str = CONCLUDED) -> list[str]:
    """What study `notebook` measured beside its claims, in words: its `TOLD` rows the report prints in `report`
    (CONCLUDED: its list of what the notebooks concluded; "": those of the notebook alone), on the tables of `r`."""
    return [line for name, row in TOLD.items() if row.notebook == notebook and row.report == report
            for line in tell(name, r)]  # fmt: skip


def findings(r: Results, notebook: str, claims: list[Said] | None = None) -> list[str]:
    """Notebook `notebook`'s conclusion on the tables of `r`: each claim it decides (`Said.findings`, from `claims`, the
    catalog's words judged on `r`, judged here where not given), then what it measured beside them that the report
    lists too (`beside`)."""
    ids = {str(row.id) for row in of_study(notebook)}
    judged = [c for c in (build(r) if claims is None else claims) if str(c.number) in ids]
    return [line for c in judged for line in c.findings(notebook)] + beside(r, notebook)
