"""The catalog of the paper's claims: one `Claim` row per claim, in the paper's order (`CATALOG`), each holding
everything about that claim in one place: its rule (`linrec.claims`: the tables it reads, its thresholds, a frozen
dataclass and their only source, the decision, what it says and what would change it, all built from the same
thresholds), how it is decided on a folder (`decide`, once), the templates of its evidence and headline
(`linrec.outputs.claim_text`), the paper's title and own numbers (arXiv 2606.19379; sources in `paper/claims.md`),
the studies whose tables it reads (their notebooks, `linrec.studies.stages`), its figures (stems of
`linrec.outputs.report_figures.FIGURES`) and its caveat.

`render(claim, decision)` is the one narrator: it words a decision into a `Said`, whose evidence and cell every
sentence about the claim is taken from (a notebook's findings, `Said.findings`; the report's section,
`Said.section`; the claim table and the README block, `linrec.outputs.claim_table`). The report, the README's
results block, the notebooks and the command line read the claims through this module only (`row`, `rule`,
`build`, `claims`); nothing else lists them. Adding a claim over tables that exist touches two source files: its
verdict function and `Rule` in its topic module under `linrec/claims/`, and its row here with its templates (a short
template may sit beside its row; the paper's claims keep theirs in `claim_text`); the tests count the claims from
`CATALOG`, and `tests/test_battery.py` runs every row through the same checks (tried on 2026-11-27, issue 62:
a trial claim 8 over `probe_summary`, 49 lines in `claims/probe.py`, this module and one test file; `linrec report`
then rewrites the generated rules changelog). `tests/outputs/test_catalog.py` checks that each row's parts agree and
that each rule's words follow its thresholds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from linrec.base.errors import LinrecError
from linrec.claims.corpora import RULE_5
from linrec.claims.learned import RULE_2A, RULE_2B, combine_2a
from linrec.claims.probe import RULE_3, RULE_7A, RULE_7B
from linrec.claims.profile import RULE_1
from linrec.claims.regimes import RULE_4
from linrec.claims.rules import CEILING_SLACK, Rule, judge
from linrec.claims.swap import RULE_6A, RULE_6B
from linrec.outputs import claim_text as words
from linrec.outputs.claim_text import Decision, Said, cell
from linrec.outputs.quant_text import quant_evidence
from linrec.outputs.results import Results
from linrec.outputs.zoo_text import seeds_part, zoo_2a, zoo_head, zoo_judged, zoo_line


def decided(r: Results, rule: Rule) -> Decision:
    """`rule` judged on `r` (`judge`), nothing joined: the decision of most claims."""
    v = judge(rule, {name: r.table(name) for name in rule.reads})
    return Decision(rule, r, v, v.verdict, v.without_first)


def _zoo_decided(d: Decision) -> Decision:
    """Claims 3, 4 and 6b: the zoo's pooled row judged by the claim's rule beside the offline models' (`zoo_judged`);
    on a zoo's own folder, where the offline models decided nothing, its verdict is the claim's."""
    d.also["zoo"] = z = zoo_judged(d.r, d.rule)
    if not d.ev:
        d.verdict, d.without_first = (z.verdict.verdict if z is not None and z.own else d.verdict), ""
    return d


def decided_1(r: Results, rule: Rule) -> Decision:
    """Claim 1, and the same rule on the profile at the other train-token count (`r2_lin_summary_other`)."""
    d = decided(r, rule)
    other = r.table("r2_lin_summary_other") if d.ev else None
    if other is not None and not other.empty:
        d.also["other"] = (other["profile_tokens"].iloc[0], rule(other))
    return d


def decided_2a(r: Results, rule: Rule) -> Decision:
    """Claim 2a: the offline models' rule joined with the seeds experiment's and the zoo's, the weakest taken."""
    d = decided(r, rule)
    d.also["trained"] = trained = [p for p in (seeds_part(r), zoo_2a(r)) if p is not None]
    d.verdict, d.without_first = combine_2a(d.v.verdict, *[t[2] for t in trained]), ""
    return d


def decided_3(r: Results, rule: Rule) -> Decision:
    """Claim 3, the same rule on the probe refitted without position 0, and the zoo's pooled row."""
    d = decided(r, rule)
    ex = r.table("probe_summary_ex_first")
    d.also["ex_first"] = v1 = rule(ex) if d.ev and ex is not None and not ex.empty else None
    d.without_first = v1.verdict if v1 else "not measured"
    return _zoo_decided(d)


def decided_zoo(r: Results, rule: Rule) -> Decision:
    """Claims 4 and 6b: the rule, and the zoo's pooled row beside it."""
    return _zoo_decided(decided(r, rule))


@dataclass(frozen=True)
class Claim:
    """One claim of the paper, whole: its `rule` (the tables it reads, its thresholds, the decision and its words:
    what it says and what would change it, all built from those thresholds), how it is decided on a folder
    (`decide`, once), the templates of its evidence (`lines`) and its headline (`head`, the fullest first), the
    paper's `title` and words (`paper`), the studies whose tables it reads, its figures and its caveat. `render`
    words a decision with them, for every narrator."""

    rule: Rule  # its id, verdict function, thresholds and words (linrec.claims)
    notebooks: tuple[str, ...]  # the studies whose tables its rule reads (linrec.studies.stages: "02", …)
    title: str  # the claim as the paper makes it, in a few words
    paper: str  # the paper's own words and numbers
    figures: tuple[str, ...]  # stems of linrec.outputs.report_figures.FIGURES, in the order shown
    caveat: str  # what to keep in mind when reading the verdict
    decide: Callable[[Results, Rule], Decision] = decided  # judged once on a folder's tables
    # the evidence in words, one entry per model ([]: nothing measured), and the claim table's cell, the fullest
    # sentence first; None: claim_text's templates named after the claim (`lines_<id>`, `head_<id>`)
    lines: Callable[[Decision], list[str]] | None = None
    head: Callable[[Decision], tuple[str, ...]] | None = None

    def __post_init__(self):
        for part in ("lines", "head"):
            if getattr(self, part) is None:
                object.__setattr__(self, part, getattr(words, f"{part}_{self.id}"))

    @property
    def id(self) -> int | str:
        return self.rule.id

    @property
    def reads(self) -> tuple[str, ...]:
        return self.rule.reads

    @property
    def thresholds(self):
        return self.rule.thresholds

    def planted(self, **values) -> Claim:
        """This row with the thresholds `values` in place of its rule's own (`Rule.planted`)."""
        return replace(self, rule=self.rule.planted(**values))


# the paper's claims in its order (claims 2, 6 and 7 in two parts each); the ids are the rules'
CATALOG: tuple[Claim, ...] = (
    Claim(
        rule=RULE_1,
        notebooks=("02",),
        title="R²_lin is heterogeneous and non-monotone with depth",
        paper="> 0.99 to < 0.3 between adjacent blocks (GPT-2, Pythia-160m, llama-160m)",
        decide=decided_1,
        figures=("fig2_r2_lin", "fig2c_learning_curves"),
        caveat=(
            "the models are quantised offline releases, not the paper's GPT-2 / Pythia-160m / llama-160m; R²_lin is "
            "biased low at 16k train rows (notebook 02's learning curve)"
        ),
    ),
    Claim(
        rule=RULE_2A,
        notebooks=("07", "08"),
        title="It is learned, not architectural",
        paper="GPT-2 and Pythia-160m (same width, both GELU) have sharply different profiles",
        decide=decided_2a,
        figures=("fig7_controls", "fig8_training", "fig8b_zoo"),
        caveat=(
            "the paper's comparison (GPT-2 vs Pythia-160m) needs the hub (`params/paper.yaml`); here the untrained "
            "reference is each model's own random-init twin or FFNs. The seeds experiment's decoders "
            "(`params/training.yaml`: 4 blocks, d = 128, about 2 tokens per parameter on the offline wiki text) are "
            "far smaller and shorter-trained than the paper's models: what it shows is how a profile forms at that "
            "scale; the zoo's (`params/zoo.yaml`: the paper's three layouts at 8 blocks, d = 128, about 3 tokens per "
            "parameter, 13-21 passes over a small text) likewise, and at the paper's width (`params/zoo_paper.yaml`, "
            "results/zoo_paper) its 88 M parameters overfit that text"
        ),
    ),
    Claim(
        rule=RULE_2B,
        notebooks=("07",),
        title="… a property of each block's own weights",
        paper="recoverability is a learned property of individual trained blocks",
        figures=("fig7b_inputs_or_weights", "fig7c_bands"),
        caveat="the cross matrix scores FFN i on block j's inputs with the block's norm gain folded in",
    ),
    Claim(
        rule=RULE_3,
        notebooks=("03",),
        title="A rank-16 bilinear probe adds little, uncorrelated with nonlinearity",
        paper="a few points of R²; Pearson r ≈ 0 with 1 − R²_lin",
        decide=decided_3,
        figures=("fig3_bilinear_gain",),
        caveat="30 and 18 blocks give low power: |r| below about 0.5 cannot be detected",
    ),
    Claim(
        rule=RULE_4,
        notebooks=("04",),
        title="High R²_lin hides two regimes",
        paper="broadly linear (median ≈ global, high rank) vs outlier-concentrated (median ≪ global, rank ≈ 1)",
        decide=decided_zoo,
        figures=("fig4_rank_outliers", "fig4b_block_anatomy"),
        caveat="SmolLM2 runs without a BOS token, so some of its high-R²_lin blocks sit on the first position",
    ),
    Claim(
        rule=RULE_5,
        notebooks=("05",),
        title="Profiles are a property of the model, not the corpus",
        paper="three corpus domains overlay",
        figures=("fig5_corpora",),
        caveat="the three corpora are small offline samples (wiki, web, code)",
    ),
    Claim(
        rule=RULE_6A,
        notebooks=("06",),
        title="Compression: some block swaps cheaply",
        paper="GPT-2's early FFN replaced by its linear map at 8× fewer parameters for +0.77 perplexity",
        figures=("fig2_swap", "fig6_swap"),
        caveat="ΔPPL on held-out windows of the same corpus, at the profile's window length",
    ),
    Claim(
        rule=RULE_6B,
        notebooks=("06",),
        title="Compression signal: R²_lin flags the safe blocks",
        paper="high-recoverability blocks admit replacement, low-recoverability blocks flag where it is unsafe",
        decide=decided_zoo,
        figures=(),
        caveat="a correlation over 30 or 18 blocks, neighbours dependent: the interval uses their effective number",
    ),
    Claim(
        rule=RULE_7A,
        notebooks=("03",),
        title="Trained linear baselines under-converge",
        paper="SGD/Adam fall short of the closed-form ceiling",
        figures=("fig3b_trained_pitfall",),
        caveat="the budget is 5 epochs of the probe rows; tuned optimisers reach the ceiling given more steps (7b)",
    ),
    Claim(
        rule=RULE_7B,
        notebooks=("03",),
        title="… because the activations are ill-conditioned",
        paper="the shortfall is put down to ill-conditioned transformer activations",
        figures=("fig3c_pitfall_mechanism",),
        caveat=(
            "the mechanism blocks are the best- and worst-conditioned, on the probe rows; the ceiling, a ridge fit "
            f"tuned on the validation slice, may be beaten by a tuned fit by {CEILING_SLACK:g} (a stated slack, not an "
            "interval)"
        ),
    ),
)


def row(claim_id: int | str) -> Claim:
    """The catalog's row of claim `claim_id` (1, "2a", …; a number may be given as text)."""
    for r in CATALOG:
        if str(r.id) == str(claim_id):
            return r
    raise LinrecError(f"no claim {claim_id!r}; the claims are {', '.join(str(r.id) for r in CATALOG)}")


def of_study(notebook: str) -> tuple[Claim, ...]:
    """The claims whose rules read study `notebook`'s tables ("03": claims 3, 7a and 7b), in the paper's order."""
    return tuple(r for r in CATALOG if notebook in r.notebooks)


def rule(claim_id: int | str) -> Rule:
    """Claim `claim_id`'s `Rule`: call it on its tables for the verdict; `.words` is the rule, `.change` what would
    change it."""
    return row(claim_id).rule


def render(claim: Claim, d: Decision) -> Said:
    """Everything said about `claim` as decided in `d`, once, for every narrator: its evidence (`claim.lines`, or why
    nothing was measured, with the zoo's pooled row where that decided), its cell (`claim.head`, the first that fits),
    the paper's words beside them; a claim left untestable because its notebook's tables were written by an older
    linrec says so (and which notebook to rerun) instead of "not run"."""
    lines = claim.lines(d)
    if lines:
        said = Said(claim.id, d.verdict, d.without_first, cell(*claim.head(d)), lines)
    elif (z := d.also.get("zoo")) is not None and z.own:  # a zoo's own folder: the zoo's row decided
        said = Said(claim.id, d.verdict, "", cell(zoo_head(z, claim.rule)), [zoo_line(z, claim.rule)])
    else:  # nothing measured: why, and the zoo's row beside it where it ran
        said = Said(claim.id, d.verdict, "", d.v.reason, [d.v.reason] + ([zoo_line(z, claim.rule)] if z else []))
    said.title, said.paper, said.row = claim.title, claim.paper, claim
    said.details += quant_evidence(d.r, claim.id)  # claims 1 and 6a: a second quantisation error (results/quant)
    for nb in sorted({nb for nb in d.r.stale.values() if f"notebook {nb} not run" in said.ours}):
        why = (f"notebook {nb}'s tables in this folder were written by an older linrec "
               f"({', '.join(t for t, n in d.r.stale.items() if n == nb)}); rerun notebook {nb}")  # fmt: skip
        said.headline = said.headline.replace(f"notebook {nb} not run", why)
        said.details = [x.replace(f"notebook {nb} not run", why) for x in said.details]
    return said


def build(r: Results) -> list[Said]:
    """Every claim decided on `r` and rendered, in the catalog's order."""
    return [render(claim, claim.decide(r, claim.rule)) for claim in CATALOG]


def claims(results_dir: str | Path) -> list[Said]:
    """Every claim in words, from the results tables in `results_dir`."""
    return build(Results(results_dir))
