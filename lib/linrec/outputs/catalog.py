"""The catalog of the paper's claims: one `ClaimRow` per claim, in the paper's order (`CATALOG`), each holding
everything about that claim in one place: its rule (`linrec.claims`: the verdict function, the thresholds it reads,
the rule's words and what would change the verdict, all built from the same thresholds), the paper's title and own
numbers (arXiv 2606.19379; sources in `paper/claims.md`), the studies whose tables it reads (their notebooks,
`linrec.studies.stages`), our sentence (`linrec.outputs.claim_text`), its figures (stems of
`linrec.outputs.report_figures.FIGURES`) and its caveat.

The report, the README's results block, the notebooks and the command line read the claims through this module
only (`row`, `rule`, `claims`); nothing else lists them. Adding a claim over tables that exist touches two
source files: its verdict function and `Rule` in its topic module under `linrec/claims/` (a `Rule` names the tables
it reads and holds its thresholds, a frozen dataclass), and its row here with its sentence (a short sentence may sit
beside its row; the paper's claims keep theirs in `claim_text`); the tests count the claims from `CATALOG`, so only
the new claim's own test is added (tried on 2026-11-27, issue 62: a trial claim 8 over `probe_summary`, 49 lines in
`claims/probe.py`, this module and one test file; `linrec report` then rewrites the generated rules changelog).
`tests/outputs/test_catalog.py` checks that each row's parts agree and that each rule's words follow its thresholds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from linrec.base.errors import LinrecError
from linrec.claims.corpora import RULE_5
from linrec.claims.learned import RULE_2A, RULE_2B
from linrec.claims.probe import RULE_3, RULE_7A, RULE_7B
from linrec.claims.profile import RULE_1
from linrec.claims.regimes import RULE_4
from linrec.claims.rules import CEILING_SLACK, Rule
from linrec.claims.swap import RULE_6A, RULE_6B
from linrec.outputs.claim_text import (
    Claim,
    sentence_1,
    sentence_2a,
    sentence_2b,
    sentence_3,
    sentence_4,
    sentence_5,
    sentence_6a,
    sentence_6b,
    sentence_7a,
    sentence_7b,
)
from linrec.outputs.quant_text import quant_evidence
from linrec.outputs.results import Results


@dataclass(frozen=True)
class ClaimRow:
    """One claim of the paper, whole: `rule` decides it, `sentence` puts its numbers into words; the report shows
    `title` and `paper` beside them, then `figures` and `caveat` in the claim's section."""

    rule: Rule  # its id, verdict function, thresholds and words (linrec.claims)
    notebooks: tuple[str, ...]  # the studies whose tables its rule reads (linrec.studies.stages: "02", …)
    title: str  # the claim as the paper makes it, in a few words
    paper: str  # the paper's own words and numbers
    sentence: Callable[[Results, Rule], Claim]  # our numbers and the verdict in words (linrec.outputs.claim_text)
    figures: tuple[str, ...]  # stems of linrec.outputs.report_figures.FIGURES, in the order shown
    caveat: str  # what to keep in mind when reading the verdict

    @property
    def id(self) -> int | str:
        return self.rule.id


# the paper's claims in its order (claims 2, 6 and 7 in two parts each); the ids are the rules'
CATALOG: tuple[ClaimRow, ...] = (
    ClaimRow(
        rule=RULE_1,
        notebooks=("02",),
        title="R²_lin is heterogeneous and non-monotone with depth",
        paper="> 0.99 to < 0.3 between adjacent blocks (GPT-2, Pythia-160m, llama-160m)",
        sentence=sentence_1,
        figures=("fig2_r2_lin", "fig2c_learning_curves"),
        caveat=(
            "the models are quantised offline releases, not the paper's GPT-2 / Pythia-160m / llama-160m; R²_lin is "
            "biased low at 16k train rows (notebook 02's learning curve)"
        ),
    ),
    ClaimRow(
        rule=RULE_2A,
        notebooks=("07", "08"),
        title="It is learned, not architectural",
        paper="GPT-2 and Pythia-160m (same width, both GELU) have sharply different profiles",
        sentence=sentence_2a,
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
    ClaimRow(
        rule=RULE_2B,
        notebooks=("07",),
        title="… a property of each block's own weights",
        paper="recoverability is a learned property of individual trained blocks",
        sentence=sentence_2b,
        figures=("fig7b_inputs_or_weights", "fig7c_bands"),
        caveat="the cross matrix scores FFN i on block j's inputs with the block's norm gain folded in",
    ),
    ClaimRow(
        rule=RULE_3,
        notebooks=("03",),
        title="A rank-16 bilinear probe adds little, uncorrelated with nonlinearity",
        paper="a few points of R²; Pearson r ≈ 0 with 1 − R²_lin",
        sentence=sentence_3,
        figures=("fig3_bilinear_gain",),
        caveat="30 and 18 blocks give low power: |r| below about 0.5 cannot be detected",
    ),
    ClaimRow(
        rule=RULE_4,
        notebooks=("04",),
        title="High R²_lin hides two regimes",
        paper="broadly linear (median ≈ global, high rank) vs outlier-concentrated (median ≪ global, rank ≈ 1)",
        sentence=sentence_4,
        figures=("fig4_rank_outliers", "fig4b_block_anatomy"),
        caveat="SmolLM2 runs without a BOS token, so some of its high-R²_lin blocks sit on the first position",
    ),
    ClaimRow(
        rule=RULE_5,
        notebooks=("05",),
        title="Profiles are a property of the model, not the corpus",
        paper="three corpus domains overlay",
        sentence=sentence_5,
        figures=("fig5_corpora",),
        caveat="the three corpora are small offline samples (wiki, web, code)",
    ),
    ClaimRow(
        rule=RULE_6A,
        notebooks=("06",),
        title="Compression: some block swaps cheaply",
        paper="GPT-2's early FFN replaced by its linear map at 8× fewer parameters for +0.77 perplexity",
        sentence=sentence_6a,
        figures=("fig2_swap", "fig6_swap"),
        caveat="ΔPPL on held-out windows of the same corpus, at the profile's window length",
    ),
    ClaimRow(
        rule=RULE_6B,
        notebooks=("06",),
        title="Compression signal: R²_lin flags the safe blocks",
        paper="high-recoverability blocks admit replacement, low-recoverability blocks flag where it is unsafe",
        sentence=sentence_6b,
        figures=(),
        caveat="a correlation over 30 or 18 blocks, neighbours dependent: the interval uses their effective number",
    ),
    ClaimRow(
        rule=RULE_7A,
        notebooks=("03",),
        title="Trained linear baselines under-converge",
        paper="SGD/Adam fall short of the closed-form ceiling",
        sentence=sentence_7a,
        figures=("fig3b_trained_pitfall",),
        caveat="the budget is 5 epochs of the probe rows; tuned optimisers reach the ceiling given more steps (7b)",
    ),
    ClaimRow(
        rule=RULE_7B,
        notebooks=("03",),
        title="… because the activations are ill-conditioned",
        paper="the shortfall is put down to ill-conditioned transformer activations",
        sentence=sentence_7b,
        figures=("fig3c_pitfall_mechanism",),
        caveat=(
            "the mechanism blocks are the best- and worst-conditioned, on the probe rows; the ceiling, a ridge fit "
            f"tuned on the validation slice, may be beaten by a tuned fit by {CEILING_SLACK:g} (a stated slack, not an "
            "interval)"
        ),
    ),
)


def row(claim_id: int | str) -> ClaimRow:
    """The catalog's row of claim `claim_id` (1, "2a", …; a number may be given as text)."""
    for r in CATALOG:
        if str(r.id) == str(claim_id):
            return r
    raise LinrecError(f"no claim {claim_id!r}; the claims are {', '.join(str(r.id) for r in CATALOG)}")


def of_study(notebook: str) -> tuple[ClaimRow, ...]:
    """The claims whose rules read study `notebook`'s tables ("03": claims 3, 7a and 7b), in the paper's order."""
    return tuple(r for r in CATALOG if notebook in r.notebooks)


def rule(claim_id: int | str) -> Rule:
    """Claim `claim_id`'s `Rule`: call it on its tables for the verdict; `.words` is the rule, `.change` what would
    change it."""
    return row(claim_id).rule


def build(r: Results) -> list[Claim]:
    """Every claim in words, in the catalog's order; a claim left untestable because its notebook's tables were
    written by an older linrec says so (and which notebook to rerun) instead of "not run"."""
    out = []
    for entry in CATALOG:
        c = entry.sentence(r, entry.rule)
        c.title, c.paper = entry.title, entry.paper
        c.details += quant_evidence(r, c.number)  # claims 1 and 6a: a second quantisation error (results/quant)
        stale = sorted({nb for nb in r.stale.values() if f"notebook {nb} not run" in c.ours})
        for nb in stale:
            why = (f"notebook {nb}'s tables in this folder were written by an older linrec "
                   f"({', '.join(t for t, n in r.stale.items() if n == nb)}); rerun notebook {nb}")  # fmt: skip
            c.ours, c.headline = (x.replace(f"notebook {nb} not run", why) for x in (c.ours, c.headline))
            c.details = [d.replace(f"notebook {nb} not run", why) for d in c.details]
        out.append(c)
    return out


def claims(results_dir: str | Path) -> list[Claim]:
    """Every claim in words, from the results tables in `results_dir`."""
    return build(Results(results_dir))
