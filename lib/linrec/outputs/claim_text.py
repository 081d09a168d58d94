"""Each of the paper's claims decided once and worded once: what a claim's row (`linrec.outputs.catalog.Claim`) holds
beside its rule.

A row's decision (`decided`, or `decided_1`, `decided_2a`, `decided_3`, `decided_zoo` for a claim whose verdict is
joined with another experiment's or read beside another table's) applies its `Rule` to the results tables once and
returns a `Decision`; its templates word that decision, `lines_<id>` (the evidence, one entry per model, then what
other tables add) and `head_<id>` (the claim table's cell, the fullest sentence first); `catalog.render` puts them
into one `Said`, which every narrator prints: the notebooks' findings, the report's section, the claim table and the
README block. Nothing here judges while wording."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from linrec.analyses.profile import FIRST_TOKEN_SHARE
from linrec.analyses.spectrum import OUTLIER_RANK, REGIME_HIGH_R2
from linrec.analyses.uncertainty import POOLED
from linrec.claims.bands import lean_text
from linrec.claims.probe import CONDITIONING, NOT_CONDITIONING, SUFFICIENT
from linrec.claims.profile import claim1_counts
from linrec.claims.rules import NOT_TESTABLE, Rule, Verdict, joined
from linrec.claims.swap import UNCHECKED, own_words
from linrec.outputs.ceiling_text import curve_sentence
from linrec.outputs.results import Line, Results, ci, fmt, listed, shift_words
from linrec.outputs.zoo_text import zoo_line
from linrec.stats.equivalence import correlation_outcome


@dataclass
class Decision:
    """A claim decided once on one folder's tables (`r`): its rule's verdict `v` (`rule` with its thresholds), the
    claim's `verdict` word (2a's joined with the seeds experiment's and the zoo's; 3, 4 and 6b's the zoo's on a zoo's
    own folder), the verdict without position 0 and what else was judged for it (`also`: "other", claim 1 at the
    other train-token count; "ex_first", claim 3 refitted without position 0; "zoo", a `ZooVerdict`; "trained", 2a's
    (line, cell words, verdict) from the seeds experiment and the zoo). The templates word it; nothing judges there."""

    rule: Rule
    r: Results
    v: Verdict
    verdict: str
    without_first: str = ""
    also: dict = field(default_factory=dict)

    @property
    def t(self):
        return self.rule.thresholds

    @property
    def ev(self) -> list[dict]:
        return self.v.evidence


@dataclass
class Said:
    """Everything said about one claim, rendered once (`linrec.outputs.catalog.render`): the verdict, its evidence
    (`details`, one entry per model, then what other tables add: the report section's bullets, the notebook's
    findings), the claim table's and README block's cell (`headline`, ≤ CELL_LIMIT characters) and the verdict
    without position 0; the catalog adds the paper's title and words."""

    number: int | str  # the rule's id: 1 … 7, claim 6 as "6a" and "6b"
    verdict: str  # one of linrec.claims.rules.VERDICTS
    without_first: str = ""  # the verdict on every position but the windows' first ("" where the rule has none)
    headline: str = ""  # the claim table's cell: each model's headline number (≤ CELL_LIMIT characters)
    details: list[str] = field(default_factory=list)  # the evidence, one entry per model (the section's bullets)
    title: str = ""  # the paper's claim in a few words (from the catalog)
    paper: str = ""  # the paper's own words and numbers (from the catalog)
    row: object = None  # the catalog's row (`linrec.outputs.catalog.Claim`) it words

    @property
    def anchor(self) -> str:
        return f"claim-{self.number}"

    @property
    def ours(self) -> str:
        """Every number the verdict was decided on, in words."""
        return "; ".join(self.details)

    def findings(self, notebook: str | None = None) -> list[str]:
        """The claim as a notebook prints it: its verdict line, then its evidence, one line per model (the report's
        words). In notebook `notebook`'s findings, the lines drawn from another notebook of the same run are left to
        the report: whether that notebook has run yet would otherwise change what this one prints."""
        details = [d for d in self.details if not (isinstance(d, Line) and d.elsewhere(notebook))]  # by `Line.quoted`
        return [f"Claim {self.number} ({self.title}): {self.verdict}.", *(f"  - {d}" for d in details)]

    def section(self, hashed: str, figures: Callable[[str], list[str]]) -> list[str]:
        """The claim's section of the report: the verdict beside the paper's words, the rule (its hash `hashed`),
        the evidence, the figures (`figures(stem)`: a figure's lines), what would change it and the caveat."""
        rule, out = self.row.rule, [f'<a id="{self.anchor}"></a>', "", f"### Claim {self.number}: {self.title}", ""]
        out += [f"**Verdict: {self.verdict}.** The paper: {self.paper}.", ""]
        out += [f"**Rule.** {sentence(rule.words)} *Rule `{hashed}`.*", ""]
        out += ["**Evidence.**", "", *(f"- {d}" for d in self.details), ""]
        out += [line for stem in self.row.figures for line in figures(stem)]
        return out + [f"**What would change it.** {sentence(rule.change)}", "", f"**Caveats.** "
                      f"{sentence(self.row.caveat)}", ""]  # fmt: skip


def zoo_lines(d: Decision) -> list[str]:
    """The zoo's pooled row in words, where it ran (claims 3, 4 and 6b)."""
    z = d.also.get("zoo")
    return [] if z is None else [zoo_line(z, d.rule)]


# ---- one sentence per claim: what the verdict was decided on (linrec.claims), in words ----------------------
CELL_LIMIT = 200  # characters in a claim table cell


_and = joined  # clauses listed as a sentence lists them (linrec.claims.rules.joined)


def cell(*sentences: str) -> str:
    """A claim table cell: the first of `sentences` (the fullest first) that fits in `CELL_LIMIT` characters, else
    the last; each reads as a sentence and ends with a full stop (issue 65: a cell read "cause: dose, blocks: …")."""
    done = [t[:1].upper() + t[1:].rstrip(".") + "." for t in sentences]
    return next((t for t in done if len(t) <= CELL_LIMIT), done[-1])


def sentence(text: str) -> str:
    """`text` as a sentence: first letter upper case (the rest as written), one full stop."""
    return text[:1].upper() + text[1:].rstrip(".") + "."


def _in(model: str) -> str:
    """Where a per-model number is: "in smollm2-135m", or "pooled" for the row of every model's blocks."""
    return "pooled" if model == POOLED else f"in {model}"


def claim1_jump(e: dict) -> float:
    return claim1_counts(e, "")[0]


def lines_1(d: Decision) -> list[str]:
    parts = []
    for e in d.ev:
        jump, turns = claim1_counts(e, "")
        fdr = (
            f" that survive a false-discovery rate of {d.t.MOVES_FDR:g} ({int(e['moves_fdr'])} of "
            f"{int(e['moves_tested'])} moves)"
            if np.isfinite(e.get("moves_fdr", np.nan))
            else ""
        )
        text = (
            f"{e['model']}: {fmt(e['r2_min'])} to {fmt(e['r2_max'])}; between blocks with disjoint intervals{fdr} "
            f"the largest adjacent jump is {fmt(jump)} and the profile turns {int(turns)} times over "
            f"{int(e['n_blocks'])} blocks (as seen, without the intervals: {fmt(e['max_adjacent_jump'])}, "
            f"{int(e['direction_changes'])} turns); as extreme as the "
            f"paper (> {d.t.PAPER_HIGH} next to < {d.t.PAPER_LOW}): "
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
    if parts and np.isfinite(d.ev[0].get("profile_tokens", np.nan)):
        parts.insert(0, f"Judged on the profile at {d.ev[0]['profile_tokens']:.0f} train tokens.")
    if parts and "other" in d.also:
        tokens, o = d.also["other"]
        parts.append(f"The same rule on the profile at {tokens:.0f} train tokens: {o.verdict}")
    if parts and (ov := d.r.table("r2_curve_overview")) is not None:
        parts.append("; ".join(curve_sentence(row) for row in ov.to_dict("records")))
    return parts


def head_1(d: Decision) -> tuple[str, ...]:
    spans = [(f"{fmt(e['r2_min'], 2)}–{fmt(e['r2_max'], 2)} {_in(e['model'])}", fmt(claim1_jump(e), 2),
              int(claim1_counts(e, "")[1])) for e in d.ev]  # fmt: skip
    return (
        "R²_lin spans " + _and([f"{s} (largest resolved jump {j}, {t} turns)" for s, j, t in spans]),
        "R²_lin spans " + _and([f"{s} (jump {j}, {t} turns)" for s, j, t in spans]),
    )


NOTE_2A = "The paper's own comparison (GPT-2 vs Pythia-160m) needs the hub: `params/paper.yaml`"


def lines_2a(d: Decision) -> list[str]:
    trained = [t[0] for t in d.also["trained"]]  # the seeds experiment, the zoo
    if not d.ev:
        return trained
    parts = []
    for e in d.ev:
        twin = "degenerate" if e["twin_degenerate"] else "a valid reference"
        parts.append(
            f"{e['model']}: {e['outcome'] or 'not measured'}; the random-init twin is {twin} (train − held-out gap "
            f"{fmt(e['twin_gap'], 2)} vs {fmt(e['trained_gap'], 2)} trained), so the reference is the "
            f"{e['reference']}: mean |trained − untrained| {fmt(e['effect'])} per block vs {fmt(e['noise'])} between "
            f"untrained draws (needs > {d.t.CLAIM2_NOISE_FACTOR:g}× that and ≥ {d.t.CLAIM2_MIN_EFFECT})"
        )
    return [*parts, *trained, NOTE_2A]


def head_2a(d: Decision) -> tuple[str, ...]:
    words = [t[1] for t in d.also["trained"]]
    if not d.ev:
        return ("; ".join(words),)
    effects = _and([f"{fmt(e['effect'], 2)} {_in(e['model'])}" for e in d.ev])
    head = f"Training moves R²_lin {effects} (untrained draws: {_and([fmt(e['noise'], 3) for e in d.ev])})"
    for w in words:
        if len(head) + len(w) + 3 <= CELL_LIMIT:  # the section states it whole; the cell where it fits
            head += f"; {w}"
    return (head,)


def _leaned(d: Decision) -> bool:
    return d.v.verdict != NOT_TESTABLE and any("lean" in e for e in d.ev)  # decided per model at most bands


def lines_2b(d: Decision) -> list[str]:
    parts = [
        f"{e['model']}: {e['outcome'] or 'not measured'}; unique share of the cross matrix's variance of the weights "
        f"{fmt(e['share_weights'], 2)} {ci(e['share_weights_lo'], e['share_weights_hi'])}, of the inputs "
        f"{fmt(e['share_inputs'], 2)} {ci(e['share_inputs_lo'], e['share_inputs_hi'])} (difference "
        f"{fmt(e['share_weights_minus_inputs'], 2)}: held-out windows alone "
        f"{ci(e['share_weights_minus_inputs_lo'], e['share_weights_minus_inputs_hi'])}, with the blocks' "
        f"variability (leave-one-block-out jackknife, se {fmt(e.get('wmi_se_jack'), 2)}) "
        f"{ci(e.get('wmi_lo'), e.get('wmi_hi'))}; bands {e.get('bands_covered')} measured: {e.get('bands')}); "
        f"{int(e['n_standout'])} of {int(e['n_blocks'])} blocks are more linear than both null ensembles, "
        f"{_n(e.get('n_below_init'))} less linear than their random-init draws"
        for e in d.ev
    ]
    return parts + [d.v.reason] * bool(parts and (d.v.verdict == NOT_TESTABLE or _leaned(d)))


def head_2b(d: Decision) -> tuple[str, ...]:
    shares = _and([f"{fmt(e['share_weights_minus_inputs'], 2)} {ci(e.get('wmi_lo'), e.get('wmi_hi'))} "
                   f"{_in(e['model'])}" for e in d.ev])  # fmt: skip
    most, short = (f"; at most bands (none decides every band) {lean_text(d.ev)}", f"At most bands (none "
                   f"decides every band) the answer is {lean_text(d.ev)}") if _leaned(d) else ("", "")  # fmt: skip
    return (f"The weights' share of the cross matrix minus the inputs' is {shares} at the widest band (95 % CI over "
            f"blocks and windows){most}", f"The weights' minus the inputs' share is {shares}{most}",
            short or f"The weights' minus the inputs' share is {shares}")  # fmt: skip


def _n(x) -> str:
    return "n/a" if x is None or not np.isfinite(float(x)) else f"{int(x)}"


def _outcome(e: dict) -> str:
    """A claim 3 correlation's equivalence outcome, in words."""
    word = correlation_outcome(e["ci_lo"], e["ci_hi"], e.get("ci_lo90", np.nan), e.get("ci_hi90", np.nan))
    return {"no effect": "uncorrelated shown", "effect": "a correlation shown",
            "inconclusive": "inconclusive (not testable at this power)"}[word]  # fmt: skip


def lines_3(d: Decision) -> list[str]:
    if not d.ev:
        return []
    parts = []
    for e in d.ev:
        word = {True: "holds", False: "fails", None: "not testable"}[e["passes"]]
        if e["model"] == POOLED:
            word = "their blocks pooled within model, which decides 'uncorrelated'"
        text = (
            f"{e['model']} ({word}): median gain {fmt(e['gain_median'], 3)} (max {fmt(e['gain_max'], 3)}) over "
            f"{int(e['n_blocks'])} blocks, closed-form quadratic {fmt(e['gain_quad_median'], 3)}; Pearson r = "
            f"{fmt(e['pearson_r'], 2)}, 95 % CI {ci(e['ci_lo'], e['ci_hi'])} at an effective "
            f"{fmt(e.get('n_eff'), 1)} blocks (as if blocks were independent "
            f"{ci(e.get('ci_lo_iid'), e.get('ci_hi_iid'))}); 90 % CI {ci(e.get('ci_lo90'), e.get('ci_hi90'))} "
            f"against the ±{d.t.EQUIVALENCE_MARGIN} margin: {_outcome(e)} (|r| ≥ "
            f"{fmt(e['detectable_r'], 2)} detectable with 80 % power; showing |r| < "
            f"{d.t.EQUIVALENCE_MARGIN} with 80 % power would take about "
            f"{_n(e.get('n_needed'))} blocks at this dependence)"
        )
        if np.isfinite(e.get("sweep_rank_max", np.nan)):
            text += (
                f"; rank {int(e['sweep_rank_min'])} → {int(e['sweep_rank_max'])}: median gain "
                f"{fmt(e['sweep_gain_median_rank_min'], 3)} → {fmt(e['sweep_gain_median_rank_max'], 3)}"
            )
        parts.append(text)
    if (v1 := d.also["ex_first"]) is not None:
        parts.append(
            "without position 0 (probe and map refitted on the rows at positions ≥ 1): "
            + "; ".join(
                f"{e['model']} r = {fmt(e['pearson_r'], 2)} {ci(e['ci_lo'], e['ci_hi'])}, {_outcome(e)}, "
                f"median gain {fmt(e['gain_median'], 3)}"
                for e in v1.evidence
            )  # fmt: skip
        )
    return parts + zoo_lines(d)


def head_3(d: Decision) -> tuple[str, ...]:
    gains = [f"{fmt(e['gain_median'])} {_in(e['model'])}" for e in d.ev]
    rs = [f"{fmt(e['pearson_r'], 2)} {ci(e['ci_lo'], e['ci_hi'])}" for e in d.ev]
    return (
        f"The probe's median gain is {_and(gains)}; its Pearson r with 1 − R²_lin is {_and(rs)}, in that order",
        f"The probe's median gain is {_and(gains)}; its r with 1 − R²_lin is {_and(rs)}",
    )


def lines_4(d: Decision) -> list[str]:
    if not d.ev:
        return []
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
        for e in d.ev
    ]
    return parts + zoo_lines(d)  # the zoo's verdict beside the offline models' (it does not change theirs)


def head_4(d: Decision) -> tuple[str, ...]:
    first, *rest = d.ev
    return (
        f"There are {int(first['n_broadly_linear'])} broadly linear and {int(first['n_outlier_concentrated'])} "
        f"outlier-concentrated blocks {_in(first['model'])}"
        + "".join(
            f", {int(e['n_broadly_linear'])} and {int(e['n_outlier_concentrated'])} {_in(e['model'])}" for e in rest
        ),  # fmt: skip
    )


def lines_5(d: Decision) -> list[str]:
    margin = fmt(d.t.CLAIM5_MARGIN, 2)
    parts = []
    for e in d.ev:
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
                f"{fmt(e['shape_share'])} {ci(e['shape_lo'], e['shape_hi'], 3)} and the level "
                f"{fmt(e['level_share'])} {ci(e['level_lo'], e['level_hi'], 3)}; {int(e['n_pairs_fdr'])} of "
                f"{int(e['n_pairs'])} block–corpus pairs differ at a 5 % false-discovery rate"
            )
        parts.append(text)
    return parts


def head_5(d: Decision) -> tuple[str, ...]:
    margin = fmt(d.t.CLAIM5_MARGIN, 2)
    heads, short = [], []
    for e in d.ev:
        pairs = e["pairs"]
        level = max(pairs, key=lambda q: abs(q["level"]) if np.isfinite(q["level"]) else -1.0)
        shape = max(pairs, key=lambda q: q["shape"] if np.isfinite(q["shape"]) else -1.0)
        up = not level["level"] < 0  # the largest shift read upwards: "code − web 0.13 [0.10, 0.15]"
        a, b = (level["corpus_a"], level["corpus_b"]) if up else (level["corpus_b"], level["corpus_a"])
        lo, hi = (level["level_lo"], level["level_hi"]) if up else (-level["level_hi"], -level["level_lo"])
        lvl = f"{fmt(level['level'] if up else -level['level'], 2)} {ci(lo, hi)}"
        shp = f"{fmt(shape['shape'], 2)} {ci(shape['shape_lo'], shape['shape_hi'])}"
        heads.append(f"{lvl} in level ({a} − {b}) and {shp} in shape {_in(e['model'])}")
        short.append(f"{lvl} and {shp} {_in(e['model'])}")
    return (
        f"Between corpora the profile shifts by up to {_and(heads)} (margin {margin})",
        f"Between corpora the profile shifts by up to {_and(short)} in level and shape (margin {margin})",
    )


def lines_6a(d: Decision) -> list[str]:
    return [
        f"{e['model']}: affine map {e['ffn_over_linear']:.1f}× fewer parameters than the FFN; "
        f"block {e['chosen_block']} (lowest screening ΔPPL, {e['chosen_screening_delta_ppl']:+.2f}) "
        f"costs {e['delta_ppl']:+.2f} held out "
        f"[{e['delta_lo']:+.2f}, {e['delta_hi']:+.2f}] ({e.get('interval', UNCHECKED)}{own_words(e)}; base "
        f"{e['ppl_base']:.2f}): {e['outcome']}; "
        f"{e['n_within_budget']} of {e['n_blocks']} blocks have intervals within +{d.t.CLAIM6_BUDGET:g}"
        for e in d.ev
    ]


def head_6a(d: Decision) -> tuple[str, ...]:
    costs = [f"{e['delta_ppl']:+.2f} [{e['delta_lo']:+.2f}, {e['delta_hi']:+.2f}] {_in(e['model'])} (block "
             f"{e['chosen_block']})" for e in d.ev]  # fmt: skip
    levels = " or ".join(sorted({e.get("interval", UNCHECKED)[:4] for e in d.ev}))  # "99 %" (or "95 %")
    return (f"Swapping the block chosen on screening windows for its map changes held-out perplexity ({levels} "
                 f"CI) by {_and(costs)}",)  # fmt: skip


def lines_6b(d: Decision) -> list[str]:
    if not d.ev:
        return []
    parts = []
    for e in d.ev:
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
                f"{d.t.EQUIVALENCE_MARGIN} with 80 % power would take about {_n(e.get('n_needed'))} blocks"
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
    return parts + zoo_lines(d) + ([d.v.reason] if d.v.verdict == NOT_TESTABLE else [])


def head_6b(d: Decision) -> tuple[str, ...]:
    rhos = [f"{e['spearman_rho']:+.2f} [{e['rho_lo']:+.2f}, {e['rho_hi']:+.2f}] {_in(e['model'])}" for e in d.ev]
    margin, bounds = d.t.EQUIVALENCE_MARGIN, [f"{e['rho_lo90']:+.2f} {_in(e['model'])}" for e in d.ev]
    said = f"The rank correlation of R²_lin with a swap's ΔPPL is {_and(rhos)}"
    return (f"{said}; its one-sided 95 % lower bound is {_and(bounds)} (a useful flag: ρ ≤ −{margin})",
                 f"{said}; a useful flag needs ρ ≤ −{margin}", said)  # fmt: skip


def lines_7a(d: Decision) -> list[str]:
    return [
        f"{e['model']}: at {int(e['budget_steps'])} steps (5 epochs), the better of Adam and SGD is "
        f"> {d.t.CLAIM7_SHORTFALL} short on {int(e['n_short'])} of {int(e['n_blocks'])} blocks (median "
        f"{fmt(e['shortfall_median'])}, up to {fmt(e['shortfall_max'])}; Adam alone {fmt(e['adam_shortfall_median'])})"
        for e in d.ev
    ]


def head_7a(d: Decision) -> tuple[str, ...]:
    short = [
        f"{int(e['n_short'])} of {int(e['n_blocks'])}{' blocks' if k == 0 else ''} {_in(e['model'])} "
        f"({'median shortfall ' if k == 0 else ''}{fmt(e['shortfall_median'])})"
        for k, e in enumerate(d.ev)
    ]
    return (f"The better of Adam and SGD falls more than {d.t.CLAIM7_SHORTFALL} short of the ceiling on {_and(short)}",)


def _measured(d: Decision) -> list[dict]:
    return [e for e in d.ev if e.get("mechanism") is not None]


# the rise over the dose: the slope per decade times the decades it spans, with its 95 % (or 90 %) interval
def _rise(e: dict, lo: str = "") -> str:
    return fmt(e[f"dose_slope{lo}"] * np.log10(e["dose_kappa_max"] / e["dose_kappa_min"]))


def _dose(e: dict, k: str = "") -> str:
    return f"{_rise(e)} [{_rise(e, '_lo' + k)}, {_rise(e, '_hi' + k)}]"


def _real(e: dict) -> str:
    return f"ρ = {fmt(e['spearman_scaled_shortfall'], 2)} {ci(e['scaled_lo'], e['scaled_hi'])}"


def lines_7b(d: Decision) -> list[str]:
    steps = lambda v, cap: f"not within {cap:.0f}" if not np.isfinite(v) else f"{v:.0f}"  # noqa: E731
    spread = lambda e: "" if pd.isna(e.get("short_iqr")) else (  # noqa: E731
        f"; its spread (IQR) {fmt(e['short_iqr'])} {ci(e['short_iqr_lo'], e['short_iqr_hi'], 3)} against "
        f"{ci(*(e[k] * e['scaled_iqr_decades'] for k in ('dose_slope_lo', 'dose_slope_hi')), 3)} from the dose"
    )  # fmt: skip
    rho = lambda e: (f"ρ = {fmt(e['blocks_rho_scaled'], 2)}" if np.isfinite(e["blocks_rho_scaled"])  # noqa: E731
                     else "no ρ (none under 3 blocks)")  # fmt: skip
    parts = [
        f"{e['model']}: {e['mechanism']} (constructed dose, block {int(e['dose_block'])}, κ {e['dose_kappa_min']:.0e}"
        f" → {e['dose_kappa_max']:.0e} over {int(e['dose_levels'])} levels: shortfall at {int(e['dose_budget'])} "
        f"steps {fmt(e['dose_budget_short_min'])} → {fmt(e['dose_budget_short_max'])}, rise over the dose "
        f"{_dose(e)} (90 % [{_rise(e, '_lo90')}, {_rise(e, '_hi90')}]), {e['dose_outcome']}; steps to the ceiling "
        f"{steps(e['dose_steps_min'], e['dose_steps'])} → {steps(e['dose_steps_max'], e['dose_steps'])}; the most a "
        f"tuned fit beats its ceiling {fmt(e['ceiling_excess'])}, {int(e['n_lr_edge'])} tuned rates at a grid end; "
        f"{int(e['blocks_n'])} mechanism blocks at scaled κ {e['blocks_scaled_min']:.0e}–"
        f"{e['blocks_scaled_max']:.0e}, steps to the ceiling against it {rho(e)}; the real blocks (attribution): "
        f"log scaled κ against the 5-epoch shortfall across every block {_real(e)}{spread(e)})"
        for e in _measured(d)
    ]
    return parts + [d.v.reason] * (bool(parts) and d.v.verdict == NOT_TESTABLE)


def head_7b(d: Decision) -> tuple[str, ...]:
    # the dose shows κ acting on one block by construction; the real blocks (ρ and spread) decide the attribution
    said = lambda e: _in(e["model"]) + " " + {CONDITIONING: "conditioning raises the shortfall, in the real blocks too",  # noqa: E731
                                              SUFFICIENT: "conditioning raises the shortfall by construction only",
                                              NOT_CONDITIONING: "conditioning leaves the shortfall flat by "
                                              "construction"}.get(e["mechanism"], "the dose is undecided")  # fmt: skip
    return (
        "; ".join(f"{said(e)} (one block at κ {e['dose_kappa_min']:.0e} → {e['dose_kappa_max']:.0e}: shortfall "
                  f"{_dose(e)} at {int(e['dose_budget'])} steps; across real blocks {_real(e)})" for e in _measured(d)),
        "; ".join(f"{said(e)} (dose {_dose(e)}; across real blocks {_real(e)})" for e in _measured(d)),
        "; ".join(f"{said(e)} (dose {_dose(e)})" for e in _measured(d)),
        "; ".join(said(e) for e in _measured(d)),
    )  # fmt: skip
