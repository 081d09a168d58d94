"""Each of the paper's claims in words: the verdict and the numbers it was decided on, per model.

One builder per claim (`sentence_1` … `sentence_7b`) applies the claim's `Rule` to the results tables (`Results`) and
returns a `Claim`: the verdict and its numbers in words (a missing table: "not testable"); the catalog pairs each rule
with its sentence, and the report and the README's results block reach them through it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from linrec.analyses.profile import FIRST_TOKEN_SHARE
from linrec.analyses.seeds import ONSET_DISTANCE
from linrec.analyses.spectrum import OUTLIER_RANK, REGIME_HIGH_R2
from linrec.analyses.uncertainty import POOLED
from linrec.claims.bands import lean_text
from linrec.claims.learned import combine_2a, comparison_words
from linrec.claims.probe import CONDITIONING, NOT_CONDITIONING, SUFFICIENT
from linrec.claims.profile import claim1_counts
from linrec.claims.rules import NOT_TESTABLE, Rule, Verdict, joined, judge
from linrec.claims.swap import UNCHECKED, own_words
from linrec.outputs.ceiling_text import curve_sentence
from linrec.outputs.results import Line, Results, fmt, listed, shift_words
from linrec.outputs.zoo_text import seeds_row, zoo_2a, zoo_head, zoo_judged, zoo_line, zoo_sentence
from linrec.stats.equivalence import correlation_outcome


@dataclass
class Claim:
    """One claim's check in words: our numbers, the verdict its rule reached, and the claim table's cell; the
    catalog (`linrec.outputs.catalog.build`) adds the paper's title and words beside them."""

    number: int | str  # the rule's id: 1 … 7, claim 6 as "6a" and "6b"
    ours: str  # every number the verdict was decided on, in words (the claim's section)
    verdict: str  # one of linrec.claims.rules.VERDICTS
    without_first: str = ""  # the verdict on every position but the windows' first ("" where the rule has none)
    headline: str = ""  # the claim table's cell: each model's headline number (≤ CELL_LIMIT characters)
    details: list[str] = field(default_factory=list)  # `ours`, one entry per model (the section's bullets)
    title: str = ""  # the paper's claim in a few words (from the catalog)
    paper: str = ""  # the paper's own words and numbers (from the catalog)

    @property
    def anchor(self) -> str:
        return f"claim-{self.number}"


def _untestable(v: Verdict) -> Claim:
    return Claim(v.claim, v.reason, v.verdict, headline=v.reason, details=[v.reason])


# ---- one sentence per claim: what the verdict was decided on (linrec.claims), in words ----------------------
CELL_LIMIT = 200  # characters in a claim table cell


_and = joined  # clauses listed as a sentence lists them (linrec.claims.rules.joined)


def _head(*sentences: str) -> str:
    """A claim table cell: the first of `sentences` (the fullest first) that fits in `CELL_LIMIT` characters, else
    the last; each reads as a sentence and ends with a full stop (issue 65: a cell read "cause: dose, blocks: …")."""
    done = [t[:1].upper() + t[1:].rstrip(".") + "." for t in sentences]
    return next((t for t in done if len(t) <= CELL_LIMIT), done[-1])


def _in(model: str) -> str:
    """Where a per-model number is: "in smollm2-135m", or "pooled" for the row of every model's blocks."""
    return "pooled" if model == POOLED else f"in {model}"


def claim1_jump(e: dict) -> float:
    return claim1_counts(e, "")[0]


def sentence_1(r: Results, rule: Rule) -> Claim:
    v = judge(rule, r)
    if not v.evidence:
        return _untestable(v)
    parts = []
    for e in v.evidence:
        jump, turns = claim1_counts(e, "")
        fdr = (
            f" that survive a false-discovery rate of {rule.thresholds.MOVES_FDR:g} ({int(e['moves_fdr'])} of "
            f"{int(e['moves_tested'])} moves)"
            if np.isfinite(e.get("moves_fdr", np.nan))
            else ""
        )
        text = (
            f"{e['model']}: {fmt(e['r2_min'])} to {fmt(e['r2_max'])}; between blocks with disjoint intervals{fdr} "
            f"the largest adjacent jump is {fmt(jump)} and the profile turns {int(turns)} times over "
            f"{int(e['n_blocks'])} blocks (as seen, without the intervals: {fmt(e['max_adjacent_jump'])}, "
            f"{int(e['direction_changes'])} turns); as extreme as the "
            f"paper (> {rule.thresholds.PAPER_HIGH} next to < {rule.thresholds.PAPER_LOW}): "
            f"{'yes' if e.get('as_extreme_as_paper') else 'no'}"
        )
        if e.get("passes_ex_first") is not None:
            jump1, turns1 = claim1_counts(e, "_ex_first")
            text += (
                f"; without position 0: {fmt(e['r2_ex_first_min'])} to {fmt(e['r2_ex_first_max'])}, largest jump "
                f"{fmt(jump1)}, {int(turns1)} turns "
                f"({'passes' if e['passes_ex_first'] else 'fails'})"
            )
        if e["first_token_blocks"]:
            text += (
                f" (blocks {listed(e['first_token_blocks'])}: ≥ {FIRST_TOKEN_SHARE * 100:.0f} % of the "
                f"output variance on the first token; without it, max R²_lin {fmt(e['r2_ex_first_max'])})"
            )
        parts.append(text)
    text = "; ".join(parts)
    details = list(parts)
    if v.evidence and np.isfinite(v.evidence[0].get("profile_tokens", np.nan)):
        text = f"on the profile at {v.evidence[0]['profile_tokens']:.0f} train tokens, " + text
        details.insert(0, f"Judged on the profile at {v.evidence[0]['profile_tokens']:.0f} train tokens.")
    other = r.get("r2_lin_summary_other")
    if other is not None and not other.empty:
        o = rule(other)
        extra = f"The same rule on the profile at {other['profile_tokens'].iloc[0]:.0f} train tokens: {o.verdict}"
        text += ". " + extra
        details.append(extra)
    ov = r.get("r2_curve_overview")
    if ov is not None:
        extra = "; ".join(curve_sentence(row) for row in ov.to_dict("records"))
        text += ". " + extra
        details.append(extra)
    spans = [(f"{fmt(e['r2_min'], 2)}–{fmt(e['r2_max'], 2)} {_in(e['model'])}", fmt(claim1_jump(e), 2),
              int(claim1_counts(e, "")[1])) for e in v.evidence]  # fmt: skip
    head = _head(
        "R²_lin spans " + _and([f"{s} (largest resolved jump {j}, {t} turns)" for s, j, t in spans]),
        "R²_lin spans " + _and([f"{s} (jump {j}, {t} turns)" for s, j, t in spans]),
    )
    return Claim(rule.id, text, v.verdict, v.without_first, head, details)


def _parts(e: dict) -> str:
    """A seeds comparison: raw distance, level and shape (`linrec.claims.rules`), with intervals where measured."""
    text = f"{fmt(e['distance'])} {_ci(e['distance_lo'], e['distance_hi'], 3)} (floor {fmt(e['floor'])}, {e['outcome']}"
    if not np.isfinite(e.get("level_lo", np.nan)):  # refreshed from the stored profiles: points only
        return f"{text}; level {e.get('level', np.nan):+.3f}, shape {fmt(e.get('shape'))}, no intervals yet)"
    return (f"{text}; level {e['level']:+.3f} {_ci(e['level_lo'], e['level_hi'], 3)} {e['level_outcome']}, shape "
            f"{fmt(e['shape'])} {_ci(e['shape_lo'], e['shape_hi'], 3)} {e['shape_outcome']})")  # fmt: skip


def _seeds_part(r: Results) -> tuple[str, str, str] | None:
    """(section sentence, claim-table words, claim 2a's verdict from it) of the seeds experiment (notebook 08), from
    this profile's results or `results/training/`; None where it has not run."""
    quoted = r.read("training_comparisons")  # this profile's, else results/training's (`STAND_INS`)
    if quoted.table is None or r.get("zoo_runs") is not None:  # a zoo's folder: its comparisons are the zoo's
        return None
    comp = comparison_words(quoted.table)
    v = seeds_row(quoted.also("training_verdict").table, comp)
    runs_table = quoted.also("training_runs").table

    def kind(k: str, t: pd.DataFrame = comp) -> str:
        return "; ".join(f"{e['a']} vs {e['b']} {_parts(e)}" for e in t[t["kind"] == k].to_dict("records")) or "not run"

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
    longer_run = r.read("training_comparisons", ("training_long",), own=False)  # beside: trained longer
    if longer_run.table is not None:
        runs_long = longer_run.also("training_runs").table
        factor = ""
        if runs_long is not None and runs_table is not None:
            factor = f" {fmt(runs_long['tokens_seen'].max() / runs_table['tokens_seen'].max(), 1)}×"
        cl = comparison_words(longer_run.table)
        v_long = seeds_row(longer_run.also("training_verdict").table, cl)
        longer = f". Trained{factor} longer (`params/{longer_run.profile}.yaml`): {v_long['word']}; " + (
            f"init seed against init seed: {kind('seed', cl)}; GELU against SwiGLU: {kind('variant', cl)}"
        )
        if runs_long is not None:
            longer += (
                f"; final held-out perplexity {fmt(runs_long['ppl_test_final'].min(), 1)}–"
                f"{fmt(runs_long['ppl_test_final'].max(), 1)}"
            )
    where = f"{quoted.profile} profile" if quoted.profile else "this profile"
    text = (
        f"seeds experiment (notebook 08, {where}; same architecture and text trained from scratch): {v['word']}, so "
        f"claim 2a from it is {v['claim2a']}. Mean |ΔR²_lin| per block (level: mean ΔR²_lin; shape: mean |ΔR²_lin| "
        "of the centred profiles), each last checkpoint against its step 0: "
        f"{kind('trained vs init')}; init seed against init seed: {kind('seed')}; data order: {kind('data order')}; "
        f"GELU against SwiGLU: {kind('variant')}{ppl}{onset}{longer}"
    )
    short = "; ".join(v["word"].split("; ")[:2]).split(" (")[0]  # the claim table's cell: what architecture sets
    return Line(text, quoted), f"from scratch: {short}", v["claim2a"]


def sentence_2a(r: Results, rule: Rule) -> Claim:
    v = judge(rule, r)
    trained = [p for p in (_seeds_part(r), zoo_2a(r)) if p is not None]  # the seeds experiment, the zoo
    if not v.evidence and not trained:
        return _untestable(v)
    if not v.evidence:
        texts = [t[0] for t in trained]
        verdict = combine_2a(v.verdict, *[t[2] for t in trained])
        head = _head("; ".join(t[1] for t in trained))
        return Claim(rule.id, "; ".join(texts), verdict, "", head, texts)
    parts = []
    for e in v.evidence:
        twin = "degenerate" if e["twin_degenerate"] else "a valid reference"
        parts.append(
            f"{e['model']}: {e['outcome'] or 'not measured'}; the random-init twin is {twin} (train − held-out gap "
            f"{fmt(e['twin_gap'], 2)} vs {fmt(e['trained_gap'], 2)} trained), so the reference is the "
            f"{e['reference']}: mean |trained − untrained| {fmt(e['effect'])} per block vs {fmt(e['noise'])} between "
            f"untrained draws (needs > {rule.thresholds.CLAIM2_NOISE_FACTOR:g}× that and ≥ "
            f"{rule.thresholds.CLAIM2_MIN_EFFECT})"
        )
    note = ". The paper's own comparison (GPT-2 vs Pythia-160m) needs the hub: `params/paper.yaml`"
    effects = _and([f"{fmt(e['effect'], 2)} {_in(e['model'])}" for e in v.evidence])
    head = f"Training moves R²_lin {effects} (untrained draws: {_and([fmt(e['noise'], 3) for e in v.evidence])})"
    verdict = v.verdict
    for text, words, word in trained:
        parts.append(text)
        if len(head) + len(words) + 3 <= CELL_LIMIT:  # the section states it whole; the cell where it fits
            head += f"; {words}"
        verdict = combine_2a(verdict, word)
    head = _head(head)
    return Claim(rule.id, "; ".join(parts) + note, verdict, "", head, [*parts, note.removeprefix(". ")])


def sentence_2b(r: Results, rule: Rule) -> Claim:
    v = judge(rule, r)
    if not v.evidence:
        return _untestable(v)
    parts = [
        f"{e['model']}: {e['outcome'] or 'not measured'}; unique share of the cross matrix's variance of the weights "
        f"{fmt(e['share_weights'], 2)} {_ci(e['share_weights_lo'], e['share_weights_hi'])}, of the inputs "
        f"{fmt(e['share_inputs'], 2)} {_ci(e['share_inputs_lo'], e['share_inputs_hi'])} (difference "
        f"{fmt(e['share_weights_minus_inputs'], 2)}: held-out windows alone "
        f"{_ci(e['share_weights_minus_inputs_lo'], e['share_weights_minus_inputs_hi'])}, with the blocks' "
        f"variability (leave-one-block-out jackknife, se {fmt(e.get('wmi_se_jack'), 2)}) "
        f"{_ci(e.get('wmi_lo'), e.get('wmi_hi'))}; bands {e.get('bands_covered')} measured: {e.get('bands')}); "
        f"{int(e['n_standout'])} of {int(e['n_blocks'])} blocks are more linear than both null ensembles, "
        f"{_n(e.get('n_below_init'))} less linear than their random-init draws"
        for e in v.evidence
    ]
    shares = _and([f"{fmt(e['share_weights_minus_inputs'], 2)} {_ci(e.get('wmi_lo'), e.get('wmi_hi'))} "
                   f"{_in(e['model'])}" for e in v.evidence])  # fmt: skip
    leaned = v.verdict != NOT_TESTABLE and any("lean" in e for e in v.evidence)  # decided per model at most bands
    most, short = (f"; at most bands (none decides every band) {lean_text(v.evidence)}", f"At most bands (none "
                   f"decides every band) the answer is {lean_text(v.evidence)}") if leaned else ("", "")  # fmt: skip
    head = _head(f"The weights' share of the cross matrix minus the inputs' is {shares} at the widest band (95 % CI "
                 f"over blocks and windows){most}", f"The weights' minus the inputs' share is {shares}{most}",
                 short or f"The weights' minus the inputs' share is {shares}")  # fmt: skip
    if v.verdict == NOT_TESTABLE or leaned:
        parts.append(v.reason)
    return Claim(rule.id, "; ".join(parts), v.verdict, "", head, parts)


def _with_zoo(c: Claim, r: Results, rule: Rule) -> Claim:
    """An across-block claim the offline models did not decide, with the zoo's pooled row beside it where it ran; on
    a zoo's own folder (`results/zoo`: its tables this folder's) the zoo's verdict, decided on that row, is the
    claim's."""
    z = zoo_judged(r, rule)
    if z is None:
        return c
    zoo = zoo_line(z, rule)
    if z.own:
        return Claim(rule.id, zoo, z.verdict.verdict, "", _head(zoo_head(z, rule)), [zoo])
    c.ours, c.details = f"{c.ours}. {zoo}", [*c.details, zoo]
    return c


def _ci(lo, hi, nd: int = 2) -> str:
    return f"[{fmt(lo, nd)}, {fmt(hi, nd)}]"


def _n(x) -> str:
    return "n/a" if x is None or not np.isfinite(float(x)) else f"{int(x)}"


def _outcome(e: dict) -> str:
    """A claim 3 correlation's equivalence outcome, in words."""
    word = correlation_outcome(e["ci_lo"], e["ci_hi"], e.get("ci_lo90", np.nan), e.get("ci_hi90", np.nan))
    return {"no effect": "uncorrelated shown", "effect": "a correlation shown",
            "inconclusive": "inconclusive (not testable at this power)"}[word]  # fmt: skip


def sentence_3(r: Results, rule: Rule) -> Claim:
    v = judge(rule, r)
    if not v.evidence:
        return _with_zoo(_untestable(v), r, rule)
    parts = []
    for e in v.evidence:
        word = {True: "holds", False: "fails", None: "not testable"}[e["passes"]]
        if e["model"] == POOLED:
            word = "their blocks pooled within model, which decides 'uncorrelated'"
        text = (
            f"{e['model']} ({word}): median gain {fmt(e['gain_median'], 3)} (max {fmt(e['gain_max'], 3)}) over "
            f"{int(e['n_blocks'])} blocks, closed-form quadratic {fmt(e['gain_quad_median'], 3)}; Pearson r = "
            f"{fmt(e['pearson_r'], 2)}, 95 % CI {_ci(e['ci_lo'], e['ci_hi'])} at an effective "
            f"{fmt(e.get('n_eff'), 1)} blocks (as if blocks were independent "
            f"{_ci(e.get('ci_lo_iid'), e.get('ci_hi_iid'))}); 90 % CI {_ci(e.get('ci_lo90'), e.get('ci_hi90'))} "
            f"against the ±{rule.thresholds.EQUIVALENCE_MARGIN} margin: {_outcome(e)} (|r| ≥ "
            f"{fmt(e['detectable_r'], 2)} detectable with 80 % power; showing |r| < "
            f"{rule.thresholds.EQUIVALENCE_MARGIN} with 80 % power would take about "
            f"{_n(e.get('n_needed'))} blocks at this dependence)"
        )
        if np.isfinite(e.get("sweep_rank_max", np.nan)):
            text += (
                f"; rank {int(e['sweep_rank_min'])} → {int(e['sweep_rank_max'])}: median gain "
                f"{fmt(e['sweep_gain_median_rank_min'], 3)} → {fmt(e['sweep_gain_median_rank_max'], 3)}"
            )
        parts.append(text)
    gains = [f"{fmt(e['gain_median'])} {_in(e['model'])}" for e in v.evidence]
    rs = [f"{fmt(e['pearson_r'], 2)} {_ci(e['ci_lo'], e['ci_hi'])}" for e in v.evidence]
    head = _head(
        f"The probe's median gain is {_and(gains)}; its Pearson r with 1 − R²_lin is {_and(rs)}, in that order",
        f"The probe's median gain is {_and(gains)}; its r with 1 − R²_lin is {_and(rs)}",
    )
    ex = r.get("probe_summary_ex_first")
    v1 = rule(ex) if ex is not None and not ex.empty else None
    if v1 is not None:
        parts.append(
            "without position 0 (probe and map refitted on the rows at positions ≥ 1): "
            + "; ".join(
                f"{e['model']} r = {fmt(e['pearson_r'], 2)} {_ci(e['ci_lo'], e['ci_hi'])}, {_outcome(e)}, "
                f"median gain {fmt(e['gain_median'], 3)}"
                for e in v1.evidence
            )  # fmt: skip
        )
    if zoo := zoo_sentence(r, rule):
        parts.append(zoo)
    return Claim(rule.id, "; ".join(parts), v.verdict, v1.verdict if v1 else "not measured", head, parts)


def sentence_4(r: Results, rule: Rule) -> Claim:
    v = judge(rule, r)
    if not v.evidence:
        return _with_zoo(_untestable(v), r, rule)
    parts = [
        f"{e['model']}: {int(e['n_broadly_linear'])} broadly linear, {int(e['n_outlier_concentrated'])} "
        f"outlier-concentrated (blocks {listed(e['outlier_blocks'])}), {int(e['n_first_token_concentrated'])} "
        f"first-token-concentrated (blocks {listed(e['first_token_blocks'])}), {int(e['n_nonlinear'])} nonlinear, "
        f"{int(e.get('n_unclassified', 0))} unclassified (blocks {listed(e.get('unclassified_blocks', ''))}); "
        f"outlier-concentrated blocks with ≥ 20 % of their variance on the first token: "
        f"{listed(e.get('outlier_first_blocks', ''))}; concentrated in a few features but not rank ≈ 1 (explained "
        f"part's effective rank ≥ {OUTLIER_RANK:g}): {listed(e.get('concentrated_not_rank1_blocks', ''))}; among "
        f"the {int(e.get('n_high_r2', 0))} blocks with R²_lin ≥ {REGIME_HIGH_R2}: "
        f"{int(e.get('n_broadly_linear_high_r2', 0))} broadly linear, "
        f"{int(e.get('n_outlier_concentrated_high_r2', 0))} outlier-concentrated, "
        f"{int(e.get('n_first_token_concentrated_high_r2', 0))} first-token-concentrated, "
        f"{int(e.get('n_unclassified_high_r2', 0))} unclassified"
        + (
            f"; without position 0: {int(e['n_broadly_linear_ex_first'])} broadly linear, "
            f"{int(e['n_outlier_concentrated_ex_first'])} outlier-concentrated (blocks "
            f"{listed(e.get('outlier_ex_first_blocks', ''))})"
            if e.get("n_broadly_linear_ex_first", -1) >= 0
            else ""
        )
        for e in v.evidence
    ]
    if zoo := zoo_sentence(r, rule):  # the zoo's verdict beside the offline models' (it does not change theirs)
        parts.append(zoo)
    first, *rest = v.evidence
    head = _head(
        f"There are {int(first['n_broadly_linear'])} broadly linear and {int(first['n_outlier_concentrated'])} "
        f"outlier-concentrated blocks {_in(first['model'])}"
        + "".join(
            f", {int(e['n_broadly_linear'])} and {int(e['n_outlier_concentrated'])} {_in(e['model'])}" for e in rest
        )  # fmt: skip
    )
    return Claim(rule.id, "; ".join(parts), v.verdict, v.without_first, head, parts)


def sentence_5(r: Results, rule: Rule) -> Claim:
    v = judge(rule, r)
    if not v.evidence:
        return _untestable(v)
    margin = fmt(rule.thresholds.CLAIM5_MARGIN, 2)
    parts, heads, short = [], [], []
    for e in v.evidence:
        pairs = e["pairs"]
        text = (f"{e['model']}: {e['overlay_verdict']}; each pair of corpora's shift (95 % CI; margin {margin}): "
                + "; ".join(f"{shift_words(q)} ({q['outcome']})" for q in pairs)
                + f": {e['overlay_verdict_all']}")  # fmt: skip
        if e["overlay_verdict_ex_first"]:
            ex = "; ".join(f"{shift_words(q, '_ex_first')} ({q['outcome_ex_first']})" for q in pairs)
            text += f"; without position 0: {ex}: {e['overlay_verdict_ex_first']}"
        else:
            text += "; without position 0: not measured"
        if "shape_share" in e:  # context: the variance shares claim 5 read until 2026-11-29
            text += (
                f"; of R²_lin's variance over blocks × corpora the shape (block × corpus) holds "
                f"{fmt(e['shape_share'])} {_ci(e['shape_lo'], e['shape_hi'], 3)} and the level "
                f"{fmt(e['level_share'])} {_ci(e['level_lo'], e['level_hi'], 3)}; {int(e['n_pairs_fdr'])} of "
                f"{int(e['n_pairs'])} block–corpus pairs differ at a 5 % false-discovery rate"
            )
        parts.append(text)
        level = max(pairs, key=lambda q: abs(q["level"]) if np.isfinite(q["level"]) else -1.0)
        shape = max(pairs, key=lambda q: q["shape"] if np.isfinite(q["shape"]) else -1.0)
        up = not level["level"] < 0  # the largest shift read upwards: "code − web 0.13 [0.10, 0.15]"
        a, b = (level["corpus_a"], level["corpus_b"]) if up else (level["corpus_b"], level["corpus_a"])
        lo, hi = (level["level_lo"], level["level_hi"]) if up else (-level["level_hi"], -level["level_lo"])
        lvl = f"{fmt(level['level'] if up else -level['level'], 2)} {_ci(lo, hi)}"
        shp = f"{fmt(shape['shape'], 2)} {_ci(shape['shape_lo'], shape['shape_hi'])}"
        heads.append(f"{lvl} in level ({a} − {b}) and {shp} in shape {_in(e['model'])}")
        short.append(f"{lvl} and {shp} {_in(e['model'])}")
    head = _head(
        f"Between corpora the profile shifts by up to {_and(heads)} (margin {margin})",
        f"Between corpora the profile shifts by up to {_and(short)} in level and shape (margin {margin})",
    )
    return Claim(rule.id, "; ".join(parts), v.verdict, v.without_first, head, parts)


def sentence_6a(r: Results, rule: Rule) -> Claim:
    v = judge(rule, r)
    if not v.evidence:
        return _untestable(v)
    parts = [
        f"{e['model']}: affine map {e['ffn_over_linear']:.1f}× fewer parameters than the FFN; "
        f"block {e['chosen_block']} (lowest screening ΔPPL, {e['chosen_screening_delta_ppl']:+.2f}) "
        f"costs {e['delta_ppl']:+.2f} held out "
        f"[{e['delta_lo']:+.2f}, {e['delta_hi']:+.2f}] ({e.get('interval', UNCHECKED)}{own_words(e)}; base "
        f"{e['ppl_base']:.2f}): {e['outcome']}; "
        f"{e['n_within_budget']} of {e['n_blocks']} blocks have intervals within +{rule.thresholds.CLAIM6_BUDGET:g}"
        for e in v.evidence
    ]
    costs = [f"{e['delta_ppl']:+.2f} [{e['delta_lo']:+.2f}, {e['delta_hi']:+.2f}] {_in(e['model'])} (block "
             f"{e['chosen_block']})" for e in v.evidence]  # fmt: skip
    levels = " or ".join(sorted({e.get("interval", UNCHECKED)[:4] for e in v.evidence}))  # "99 %" (or "95 %")
    head = _head(f"Swapping the block chosen on screening windows for its map changes held-out perplexity ({levels} "
                 f"CI) by {_and(costs)}")  # fmt: skip
    return Claim(rule.id, "; ".join(parts), v.verdict, "", head, parts)


def sentence_6b(r: Results, rule: Rule) -> Claim:
    v = judge(rule, r)
    if not v.evidence:
        return _with_zoo(_untestable(v), r, rule)
    parts = []
    for e in v.evidence:
        best = (
            f"{e['best']} (ρ = {e['best_rho']:+.2f})" if e.get("best") else "none survives Holm's correction"
        )  # fmt: skip
        if e["model"] == POOLED:
            parts.append(
                f"every model's blocks pooled within model ({e['outcome']}; this decides where it is decided): "
                f"ρ(R²_lin, ΔPPL) = {e['spearman_rho']:+.2f} [{e['rho_lo']:+.2f}, {e['rho_hi']:+.2f}] (one-sided 95 % "
                f"lower bound {e['rho_lo90']:+.2f}) at an effective {fmt(e.get('n_eff'), 1)} of {e['n_blocks']} "
                "blocks, with depth taken out "
                f"{e['partial_rho_depth']:+.2f} [{e['partial_lo']:+.2f}, {e['partial_hi']:+.2f}] (bound "
                f"{e['partial_lo90']:+.2f}); showing |ρ| < "
                f"{rule.thresholds.EQUIVALENCE_MARGIN} with 80 % power would take about {_n(e.get('n_needed'))} blocks"
            )
            continue
        parts.append(
            f"{e['model']} ({e['outcome']}): ρ(R²_lin, ΔPPL) = {e['spearman_rho']:+.2f} [{e['rho_lo']:+.2f}, "
            f"{e['rho_hi']:+.2f}] (one-sided 95 % lower bound {e['rho_lo90']:+.2f}) at an effective "
            f"{fmt(e.get('n_eff'), 1)} of {e['n_blocks']} blocks "
            "(as if independent "
            f"[{e['rho_lo_iid']:+.2f}, {e['rho_hi_iid']:+.2f}]), with depth taken out {e['partial_rho_depth']:+.2f} "
            f"[{e['partial_lo']:+.2f}, {e['partial_hi']:+.2f}] (bound {e['partial_lo90']:+.2f}; depth alone: ρ = "
            f"{e['depth_rho']:+.2f}); the best "
            f"screened predictor: {best}"
            + (f"; with R²_lin without position 0: {e['outcome_ex_first']}" if "outcome_ex_first" in e else "")
        )
    if zoo := zoo_sentence(r, rule):
        parts.append(zoo)
    text = "; ".join(parts)
    if v.verdict == NOT_TESTABLE:
        text += f". {v.reason}"
    rhos = [f"{e['spearman_rho']:+.2f} [{e['rho_lo']:+.2f}, {e['rho_hi']:+.2f}] {_in(e['model'])}" for e in v.evidence]
    margin, bounds = rule.thresholds.EQUIVALENCE_MARGIN, [f"{e['rho_lo90']:+.2f} {_in(e['model'])}" for e in v.evidence]
    said = f"The rank correlation of R²_lin with a swap's ΔPPL is {_and(rhos)}"
    head = _head(f"{said}; its one-sided 95 % lower bound is {_and(bounds)} (a useful flag: ρ ≤ −{margin})",
                 f"{said}; a useful flag needs ρ ≤ −{margin}", said)  # fmt: skip
    details = parts + ([v.reason] if v.verdict == NOT_TESTABLE else [])
    return Claim(rule.id, text, v.verdict, v.without_first, head, details)


def sentence_7a(r: Results, rule: Rule) -> Claim:
    v = judge(rule, r)
    if not v.evidence:
        return _untestable(v)
    parts = [
        f"{e['model']}: at {int(e['budget_steps'])} steps (5 epochs), the better of Adam and SGD is "
        f"> {rule.thresholds.CLAIM7_SHORTFALL} short on {int(e['n_short'])} of {int(e['n_blocks'])} blocks (median "
        f"{fmt(e['shortfall_median'])}, up to {fmt(e['shortfall_max'])}; Adam alone {fmt(e['adam_shortfall_median'])})"
        for e in v.evidence
    ]
    short = [
        f"{int(e['n_short'])} of {int(e['n_blocks'])}{' blocks' if k == 0 else ''} {_in(e['model'])} "
        f"({'median shortfall ' if k == 0 else ''}{fmt(e['shortfall_median'])})"
        for k, e in enumerate(v.evidence)
    ]
    head = _head(
        f"The better of Adam and SGD falls more than {rule.thresholds.CLAIM7_SHORTFALL} short of the ceiling on "
        f"{_and(short)}"
    )
    return Claim(rule.id, "; ".join(parts), v.verdict, "", head, parts)


def sentence_7b(r: Results, rule: Rule) -> Claim:
    v = judge(rule, r)
    measured = [e for e in v.evidence if e.get("mechanism") is not None]
    if not measured:
        return _untestable(v)
    steps = lambda v, cap: f"not within {cap:.0f}" if not np.isfinite(v) else f"{v:.0f}"  # noqa: E731
    # the rise over the dose: the slope per decade times the decades it spans, with its 95 % (or 90 %) interval
    rise = lambda e, lo="": fmt(e[f"dose_slope{lo}"] * np.log10(e["dose_kappa_max"] / e["dose_kappa_min"]))  # noqa: E731
    dose = lambda e, k="": f"{rise(e)} [{rise(e, '_lo' + k)}, {rise(e, '_hi' + k)}]"  # noqa: E731
    real = lambda e: f"ρ = {fmt(e['spearman_scaled_shortfall'], 2)} {_ci(e['scaled_lo'], e['scaled_hi'])}"  # noqa: E731
    spread = lambda e: "" if pd.isna(e.get("short_iqr")) else (  # noqa: E731
        f"; its spread (IQR) {fmt(e['short_iqr'])} {_ci(e['short_iqr_lo'], e['short_iqr_hi'], 3)} against "
        f"{_ci(*(e[k] * e['scaled_iqr_decades'] for k in ('dose_slope_lo', 'dose_slope_hi')), 3)} from the dose"
    )  # fmt: skip
    rho = lambda e: (f"ρ = {fmt(e['blocks_rho_scaled'], 2)}" if np.isfinite(e["blocks_rho_scaled"])  # noqa: E731
                     else "no ρ (none under 3 blocks)")  # fmt: skip
    parts = [
        f"{e['model']}: {e['mechanism']} (constructed dose, block {int(e['dose_block'])}, κ {e['dose_kappa_min']:.0e}"
        f" → {e['dose_kappa_max']:.0e} over {int(e['dose_levels'])} levels: shortfall at {int(e['dose_budget'])} "
        f"steps {fmt(e['dose_budget_short_min'])} → {fmt(e['dose_budget_short_max'])}, rise over the dose "
        f"{dose(e)} (90 % [{rise(e, '_lo90')}, {rise(e, '_hi90')}]), {e['dose_outcome']}; steps to the ceiling "
        f"{steps(e['dose_steps_min'], e['dose_steps'])} → {steps(e['dose_steps_max'], e['dose_steps'])}; the most a "
        f"tuned fit beats its ceiling {fmt(e['ceiling_excess'])}, {int(e['n_lr_edge'])} tuned rates at a grid end; "
        f"{int(e['blocks_n'])} mechanism blocks at scaled κ {e['blocks_scaled_min']:.0e}–"
        f"{e['blocks_scaled_max']:.0e}, steps to the ceiling against it {rho(e)}; the real blocks (attribution): "
        f"log scaled κ against the 5-epoch shortfall across every block {real(e)}{spread(e)})"
        for e in measured
    ]
    # the dose shows κ acting on one block by construction; the real blocks (ρ and spread) decide the attribution
    said = lambda e: _in(e["model"]) + " " + {CONDITIONING: "conditioning raises the shortfall, in the real blocks too",  # noqa: E731
                                              SUFFICIENT: "conditioning raises the shortfall by construction only",
                                              NOT_CONDITIONING: "conditioning leaves the shortfall flat by "
                                              "construction"}.get(e["mechanism"], "the dose is undecided")  # fmt: skip
    head = _head(
        "; ".join(f"{said(e)} (one block at κ {e['dose_kappa_min']:.0e} → {e['dose_kappa_max']:.0e}: shortfall "
                  f"{dose(e)} at {int(e['dose_budget'])} steps; across real blocks {real(e)})" for e in measured),
        "; ".join(f"{said(e)} (dose {dose(e)}; across real blocks {real(e)})" for e in measured),
        "; ".join(f"{said(e)} (dose {dose(e)})" for e in measured),
        "; ".join(said(e) for e in measured),
    )  # fmt: skip
    return Claim(rule.id, "; ".join(parts), v.verdict, "", head, parts + [v.reason] * (v.verdict == NOT_TESTABLE))
