"""The zoo in words (notebook 08 under `params/zoo.yaml`): claim 2a as the paper states it (what sets the profile's
shape and level: layout, text or seed; `zoo_2a`) and the pooled rows of claims 3, 4 and 6b (`zoo_judged`,
`zoo_line`), for the claims of `linrec.outputs.claim_text`; and the seeds experiment (notebook 08 under
`params/training.yaml`): its verdict row (`seeds_row`) and its evidence for claim 2a (`seeds_part`).

Every profile's report reads the zoo's tables from its own results, or else from `results/zoo/` (like
`results/training/` for the seeds experiment: `linrec.outputs.results.Results.get`), naming where they came from.
The verdicts are judged by today's rules, the claims' own rows (`Rule.zoo`: `linrec.claims.zoo.judge_zoo` and
`zoo_verdict`; `seeds_row`: `linrec.claims.learned.seeds_verdict`), on the measured tables, never read from the
verdict words notebook 08 stored, so a rule changed since the run cannot leave a stale word. A folder that holds the
zoo's tables (`results/zoo`, `results/zoo_paper`) is judged by the catalog like any other: its claims 2a, 3, 4 and 6b
are the zoo's verdicts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from linrec.analyses.seeds import ONSET_DISTANCE
from linrec.base.errors import LinrecError
from linrec.base.files import find_project_root
from linrec.base.tables import Quoted, load_table
from linrec.claims.learned import comparison_words, seeds_verdict
from linrec.claims.rules import CLAIM2_MIN_EFFECT, NOT_TESTABLE, Rule, Verdict
from linrec.claims.swap import FLAGS, NOT_USEFUL
from linrec.claims.zoo import INCONCLUSIVE, SAME, judge_zoo, pooled_row, zoo_verdict
from linrec.outputs.results import Line, ci, fmt

OUTCOME_WORDS = {
    "effect": "a correlation shown",
    "no effect": "shown within the equivalence margin",
    "inconclusive": "inconclusive",
    FLAGS: "a flag shown (both 95 % intervals below 0)",
    NOT_USEFUL: "a useful flag (ρ ≤ −{margin}) excluded by its one-sided 95 % bound",
}


def seeds_row(table: pd.DataFrame | None, comparisons: pd.DataFrame | None = None) -> dict:
    """The seeds experiment's verdict row (notebook 08 under `params/training.yaml`) judged again by today's rule
    (`linrec.claims.learned.seeds_verdict`) on its `comparisons` (with their words, `comparison_words`), so no word its
    stage stored under an older rule is printed; the row its stage wrote (`training_verdict`) where the comparisons
    are absent or an older linrec's; "not run" where neither is."""
    if comparisons is not None and len(comparisons):
        try:
            return seeds_verdict(comparisons)
        except (LinrecError, KeyError):  # an older linrec's comparisons: the row its stage wrote
            pass
    return table.iloc[0].to_dict() if table is not None and len(table) else {"word": "not run", "claim2a": NOT_TESTABLE}


def _compared(e: dict) -> str:
    """A seeds comparison: raw distance, level and shape (`linrec.claims.rules`), with intervals where measured."""
    text = f"{fmt(e['distance'])} {ci(e['distance_lo'], e['distance_hi'], 3)} (floor {fmt(e['floor'])}, {e['outcome']}"
    if not np.isfinite(e.get("level_lo", np.nan)):  # refreshed from the stored profiles: points only
        return f"{text}; level {e.get('level', np.nan):+.3f}, shape {fmt(e.get('shape'))}, no intervals yet)"
    return (f"{text}; level {e['level']:+.3f} {ci(e['level_lo'], e['level_hi'], 3)} {e['level_outcome']}, shape "
            f"{fmt(e['shape'])} {ci(e['shape_lo'], e['shape_hi'], 3)} {e['shape_outcome']})")  # fmt: skip


def seeds_part(r) -> tuple[str, str, str] | None:
    """(section sentence, claim-table words, claim 2a's verdict from it) of the seeds experiment (notebook 08), from
    this profile's results or `results/training/`; None where it has not run."""
    quoted = r.get("training_comparisons")  # this profile's, else results/training's (`STAND_INS`)
    if quoted.table is None or r.table("zoo_runs") is not None:  # a zoo's folder: its comparisons are the zoo's
        return None
    comp = comparison_words(quoted.table)
    v = seeds_row(quoted.also("training_verdict").table, comp)
    runs_table = quoted.also("training_runs").table

    def kind(k: str, t: pd.DataFrame = comp) -> str:
        return (
            "; ".join(f"{e['a']} vs {e['b']} {_compared(e)}" for e in t[t["kind"] == k].to_dict("records")) or "not run"
        )

    ppl = "" if runs_table is None else (
        f"; final held-out perplexity {fmt(runs_table['ppl_test_final'].min(), 1)}–"
        f"{fmt(runs_table['ppl_test_final'].max(), 1)} after {fmt(runs_table['tokens_per_param'].iloc[0], 1)} tokens "
        "per parameter"
    )  # fmt: skip
    onsets = quoted.also("training_onsets").table  # when each run's profile settled (notebook 08's summary)
    onset = ""
    if onsets is not None:
        steps, last = onsets.set_index("run")["onset"], onsets.set_index("run")["last_step"]
        settled = {run: s for run, s in steps.items() if s < last[run]}
        onset = f"; the profile settles (every later checkpoint within {ONSET_DISTANCE} of the last) " + (
            "at step " + ", ".join(f"{s} ({run})" for run, s in settled.items()) if settled else ""
        )
        if unsettled := [run for run in steps.index if run not in settled]:
            onset += ("; " if settled else "") + f"not before the last checkpoint in {', '.join(unsettled)} (still " + (
                "moving at the end of training)")  # fmt: skip
    longer = ""
    longer_run = r.get("training_comparisons", ("training_long",), own=False)  # beside: trained longer
    if longer_run.table is not None:
        runs_long = longer_run.also("training_runs").table
        factor = ""
        if runs_long is not None and runs_table is not None:
            factor = f" {fmt(runs_long['tokens_seen'].max() / runs_table['tokens_seen'].max(), 1)}×"
        cl = comparison_words(longer_run.table)
        v_long = seeds_row(longer_run.also("training_verdict").table, cl)
        longer = f". Trained{factor} longer (`params/{longer_run.source.profile}.yaml`): {v_long['word']}; " + (
            f"init seed against init seed: {kind('seed', cl)}; GELU against SwiGLU: {kind('variant', cl)}"
        )
        if runs_long is not None:
            longer += (
                f"; final held-out perplexity {fmt(runs_long['ppl_test_final'].min(), 1)}–"
                f"{fmt(runs_long['ppl_test_final'].max(), 1)}"
            )
    where = f"{quoted.source.profile} profile" if quoted.source.profile else "this profile"
    text = (
        f"seeds experiment (notebook 08, {where}; same architecture and text trained from scratch): {v['word']}, so "
        f"claim 2a from it is {v['claim2a']}. Mean |ΔR²_lin| per block (level: mean ΔR²_lin; shape: mean |ΔR²_lin| "
        "of the centred profiles), each last checkpoint against its step 0: "
        f"{kind('trained vs init')}; init seed against init seed: {kind('seed')}; data order: {kind('data order')}; "
        f"GELU against SwiGLU: {kind('variant')}{ppl}{onset}{longer}"
    )
    short = "; ".join(v["word"].split("; ")[:2]).split(" (")[0]  # the claim table's cell: what architecture sets
    return Line(text, quoted), f"from scratch: {short}", v["claim2a"]


@dataclass(frozen=True)
class ZooVerdict:
    """A claim judged on the zoo's tables (`linrec.claims.zoo.judge_zoo`, by the claim's own row): the `verdict`, its
    `pooled_row`, the zoo's regimes (`regimes`, claim 4's counts) and where the tables came from (`quoted`: the
    zoo's runs as `Results.get` found them)."""

    verdict: Verdict
    row: dict
    regimes: pd.DataFrame | None
    quoted: Quoted

    @property
    def where(self) -> str:
        """ "zoo profile" where results/zoo stood in, "" for this folder's own tables."""
        return f"{self.quoted.source.profile} profile" if self.quoted.source.profile else ""

    @property
    def own(self) -> bool:
        """Whether the zoo's tables are the folder's own (a zoo's folder: the claim's verdict is the zoo's)."""
        return not self.where


def zoo_judged(r, rule: Rule) -> ZooVerdict | None:
    """Claim `rule` judged on the zoo's tables (`rule.zoo`: this folder's, else `results/zoo/`'s, `Results.get`) by
    today's rule, as notebook 08 judges them (the converged runs alone); None where the zoo has not run, or wrote its
    tables with an older linrec today's rule cannot read."""
    if not rule.zoo:
        return None
    quoted = r.get("zoo_runs")  # this profile's, else results/zoo's (`linrec.base.tables.STAND_INS`)
    if quoted.table is None:
        return None
    tables = {"zoo_runs": quoted.table} | {n: quoted.also(n).table for n in rule.zoo}
    try:
        v = judge_zoo(rule, tables)
    except (LinrecError, KeyError):  # tables of an older linrec that today's rule cannot read
        return None
    if v is None:
        return None
    first = tables[rule.zoo[0]]
    return ZooVerdict(v, pooled_row(v, first), first, quoted)


def zoo_2a(r) -> tuple[str, str, str] | None:
    """(section sentence, claim-table words, claim 2a's verdict from the zoo) or None where the zoo has not run: the
    zoo's rule (`linrec.claims.zoo.zoo_verdict`) on its decomposition, comparisons and runs (this folder's, else
    `results/zoo/`'s, read together)."""
    quoted = r.get("zoo_components")
    comp, dist, runs = quoted.table, quoted.also("zoo_distances").table, quoted.also("zoo_runs").table
    if comp is None or dist is None:
        return None
    try:
        v = zoo_verdict(comp, quoted.also("training_comparisons").table, runs)  # it keeps the converged runs itself
    except LinrecError:  # tables of an older linrec that today's rule cannot read
        return None
    where = f"{quoted.source.profile} profile" if quoted.source.profile else ""
    size = f"{len(runs)} runs" if runs is not None else "its runs"
    kinds = "; ".join(
        f"{d['kind']} ({int(d['n_pairs'])} pair{'s' if d['n_pairs'] != 1 else ''}) shape {fmt(d['shape'])} "
        f"{ci(d['shape_lo'], d['shape_hi'], 3)}, level {fmt(d['level'])} {ci(d['level_lo'], d['level_hi'], 3)}"
        for d in dist.to_dict("records")
    )
    shares = "; ".join(
        f"{part}: " + ", ".join(
            f"{c['factor']} {fmt(c['share'], 2)} {ci(c['share_lo'], c['share_hi'], 2)}"
            for c in comp[comp["part"] == part].to_dict("records")
        )
        for part in ("shape", "level")
    )  # fmt: skip
    text = (
        f"the zoo (notebook 08, {where or 'this profile'}; GPT-2, Pythia and llama layouts trained from scratch at "
        f"equal width and block parameters, {size}): {v['word']}, so claim 2a from it is {v['claim2a']}. Mean "
        f"distance per pair of final profiles (shape: mean |Δ centred R²_lin|; level: |Δ mean R²_lin|; 95 % "
        f"intervals, delete-one-run jackknife): {kinds}. Share of the squared distance between two runs held by "
        f"each factor (95 % jackknife intervals; a factor sets a part only where the distance it adds is ≥ "
        f"{CLAIM2_MIN_EFFECT}): {shares}"
    )
    words = f"in the zoo the shape is {_short(v['shape_factor'])} and the level {_short(v['level_factor'])}"
    return Line(text, quoted), words, str(v["claim2a"])


def _short(word: str) -> str:
    """A part's word for the claim table's cell: "alike", "undecided" or "set by <factor>"."""

    return {SAME: "alike", INCONCLUSIVE: "undecided"}.get(word, f"set by {word}")


def zoo_line(z: ZooVerdict, rule: Rule) -> Line:
    """The zoo's pooled row for claim `rule` ("3", "4" or "6b", judged by `zoo_judged`) in words: its verdict by the
    claim's own rule; for 3 and 6b the pooled correlation with its intervals, the block count and whether it reaches
    the blocks the equivalence test needs (at the rule's margin), for 4 the regimes counted over every trained model's
    blocks (`zoo_regimes`)."""
    e, where = z.row, z.where
    if not np.isfinite(float(e["n_models"])):  # no run converged: nothing pooled to quote
        return Line(f"Trained zoo (notebook 08, {where or 'this profile'}): {e['verdict']}, no trained run converged",
                    z.quoted)  # fmt: skip
    if str(rule.id) == "4":
        return Line(_regimes(z.regimes, e, where), z.quoted)
    stat = "r(1 − R²_lin, gain)" if str(rule.id) == "3" else "ρ(R²_lin, ΔPPL)"
    n, need = e["n_blocks"], e["n_needed"]
    power = (
        "reaches" if bool(e["powered"]) else "falls short of"
        if np.isfinite(float(need)) else "has no estimate of"
    )  # fmt: skip
    return Line(
        f"Trained zoo (notebook 08, {where or 'this profile'}): every block of {int(e['n_models'])} trained models "
        f"pooled with a model effect, {stat} = {fmt(e['rho'], 2)}, 95 % CI {ci(e['lo'], e['hi'], 2)}, 90 % CI "
        f"{ci(e['lo90'], e['hi90'], 2)} at an effective {fmt(e['n_eff'], 1)} of {int(n)} blocks: "
        f"{OUTCOME_WORDS.get(e['outcome'], e['outcome']).format(margin=rule.thresholds.EQUIVALENCE_MARGIN)}; "
        f"the block count {power} the {fmt(need, 0)} the equivalence test needs for 80 % power; by the claim's own "
        f"rule the zoo alone is {e['verdict']} (beside the offline models' verdict, which this does not change)",
        z.quoted,
    )


def zoo_sentence(r, rule: Rule) -> str:
    """Claim `rule`'s zoo row in words (`zoo_judged`, `zoo_line`); "" where the zoo has not run."""
    z = zoo_judged(r, rule)
    return "" if z is None else zoo_line(z, rule)


def zoo_head(z: ZooVerdict, rule: Rule) -> str:
    """The claim table's cell for a claim judged on a zoo's own folder: the pooled number it was decided on."""
    e = z.row
    if not np.isfinite(float(e["n_models"])):
        return "No trained run converged"
    if str(rule.id) == "4":
        return f"There are {_counted(z.regimes)}"
    stat = "r(1 − R²_lin, gain)" if str(rule.id) == "3" else "ρ(R²_lin, ΔPPL)"
    return (f"Pooled over {int(e['n_blocks'])} blocks of {int(e['n_models'])} trained models, {stat} = "
            f"{fmt(e['rho'], 2)} {ci(e['lo'], e['hi'], 2)}")  # fmt: skip


def _regimes(regimes: pd.DataFrame | None, e: dict, where: str) -> str:
    """Claim 4's zoo row in words: the regimes summed over the trained models, and the zoo's verdict."""
    counts = "" if regimes is None else f": {_counted(regimes)}"
    return (
        f"Trained zoo (notebook 08, {where or 'this profile'}){counts}; by the claim's own rule the zoo alone is "
        f"{e['verdict']} (beside the offline models' verdict, which this does not change)"
    )


def _counted(regimes: pd.DataFrame) -> str:
    """Claim 4's regimes summed over the zoo's trained models (`zoo_regimes`), in words."""
    n = {c: int(regimes[c].sum()) for c in ("n_blocks", "n_broadly_linear", "n_outlier_concentrated")}
    return (f"{n['n_broadly_linear']} broadly linear and {n['n_outlier_concentrated']} outlier-concentrated of "
            f"{n['n_blocks']} blocks over {len(regimes)} trained models")  # fmt: skip


# the zoos beside a profile's folder whose GPT-2 against Pythia the report sets against seed noise (issue 87, item 7)
CONTRAST = (("zoo", "in miniature (`results/zoo`)"), ("zoo_paper", "at the paper's width (`results/zoo_paper`)"))
PAPER_PAIR, SEED = "gpt2 vs pythia", "seed"


def contrast_sentence(words: str, dist: pd.DataFrame, margin: float = CLAIM2_MIN_EFFECT) -> str | None:
    """The paper's contrast in one zoo, in words: GPT-2 against Pythia in shape and level with their intervals,
    against two init seeds, and whether the shape distance is shown inside the margin 'sharply different' needs
    (its interval's upper end below `margin`, 2a's minimum effect), shown beyond it (lower end at or above it), or
    neither. None where the zoo has no GPT-2 / Pythia pair or no seed pair."""
    d = dist.set_index("kind")
    if PAPER_PAIR not in d.index or SEED not in d.index:
        return None
    p, s = d.loc[PAPER_PAIR], d.loc[SEED]
    side = ("shown inside" if p["shape_hi"] < margin else "shown beyond" if p["shape_lo"] >= margin else
            "neither inside nor beyond")  # fmt: skip
    ratio = f"{p['shape'] / s['shape']:.1f}×" if s["shape"] > 0 else "n/a"
    return (f"{words}: GPT-2 against Pythia differ in shape by {fmt(p['shape'])} {ci(p['shape_lo'], p['shape_hi'], 3)} "
            f"against {fmt(s['shape'])} {ci(s['shape_lo'], s['shape_hi'], 3)} between init seeds ({ratio} seed noise), "
            f"and in level by {fmt(p['level'])} {ci(p['level_lo'], p['level_hi'], 3)} (seeds {fmt(s['level'])}); the "
            f"shape distance is {side} the {margin:g} per block that 'sharply different' needs (2a's minimum "
            f"effect).")  # fmt: skip


def pooled_layout(comp: pd.DataFrame | None) -> pd.DataFrame:
    """The layout's effect pooled over every layout pair (`zoo_components`' layout component, as the distance it adds
    between two runs, √(2 × component), its interval's ends likewise, a negative end read as 0), one row in the
    shape of `zoo_distances` ("layout (pooled)"); empty where the components are absent."""
    rows = [] if comp is None else comp[comp["factor"] == "layout"].set_index("part")
    if not len(rows):
        return pd.DataFrame()
    effect = {f"{part}{k}": float(np.sqrt(2 * max(rows.loc[part, f"component{k}"], 0.0)))
              for part in ("shape", "level") for k in ("", "_lo", "_hi")}  # fmt: skip
    return pd.DataFrame([{"kind": "layout (pooled)", "group": "layout", **effect}])


def contrast_section(results_dir, figures_dir, out, figure_lines) -> list[str]:
    """The report's section on the paper's own contrast (claim 2a's GPT-2 against Pythia-160m) in each zoo beside
    `results_dir` (`CONTRAST`; else in the checkout's `results/`): every pair's shape and level distance with its
    interval against two init seeds', in a table, a sentence per zoo (`contrast_sentence`) and Figure 8c (drawn here
    from the zoos' tables); [] where no zoo ran. `figure_lines`: the report's (linrec.outputs.report_figures)."""
    import matplotlib.pyplot as plt

    from linrec.outputs.plots_training import fig8c_contrast

    zoos, base = {}, Path(results_dir).parent  # the zoos beside this profile's folder, else the checkout's
    if not any((base / name).is_dir() for name, _ in CONTRAST) and (root := find_project_root(Path(__file__))):
        base = root / "results"  # a scratch run's report (the smoke profile's, in a temporary folder)
    for name, words in CONTRAST:
        folder = base / name
        try:
            dist = load_table("zoo_distances", folder) if folder.is_dir() else None
        except LinrecError:
            dist = None
        if dist is not None and len(dist):
            zoos[words] = pd.concat([dist, pooled_layout(load_table("zoo_components", folder))], ignore_index=True)
    said = [s for w, d in zoos.items() if (s := contrast_sentence(w, d)) is not None]
    if not said:
        return []
    rows = [f"| {w.split(' (')[0]} | {d['kind']} | {fmt(d['shape'])} {ci(d['shape_lo'], d['shape_hi'], 3)} | "
            f"{fmt(d['level'])} {ci(d['level_lo'], d['level_hi'], 3)} |"
            for w, t in zoos.items() for d in t.to_dict("records")]  # fmt: skip
    fig = fig8c_contrast({w.split(" (")[0]: d for w, d in zoos.items()}, CLAIM2_MIN_EFFECT, Path(figures_dir) /
                         "fig8c_contrast")  # fmt: skip
    plt.close(fig)  # saved; not shown again by an inline backend (notebook 09's report cell draws no figure)
    return ["## The paper's contrast: GPT-2 against Pythia", "",
            "The paper's claim 2a rests on GPT-2 and Pythia-160m, same width and both GELU, having sharply different "
            "profiles (arXiv 2606.19379). The zoos train both layouts, and llama's, from scratch with init seeds: "
            "each pair's mean distance between final profiles, in shape (the profiles centred) and level, with 95 % "
            "intervals (delete-one-run jackknife), against two init seeds of one layout; 'layout (pooled)' is the "
            "distance the layout adds between two runs over every layout pair (√(2 × its variance component)).", "",
            "| zoo | pair | shape (95 % CI) | level (95 % CI) |", "|---|---|---|---|", *rows, "",
            *(f"- {s}" for s in said), "", *figure_lines("fig8c_contrast", figures_dir, out)]  # fmt: skip
