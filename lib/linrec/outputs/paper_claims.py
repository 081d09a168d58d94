"""The paper's claims as the paper states them, and the `Claim` each of our checks fills in.

`CLAIMS` holds each claim's title and the paper's own numbers (arXiv 2606.19379; sources in `paper/claims.md`), keyed
by claim number (claims 2, 6 and 7 in two parts each). A `Claim` is one check's outcome in words: our numbers, the
verdict its rule in `linrec.claims` reached, and the claim table's cell; `linrec.outputs.claim_text` builds one per
claim, and the report (`linrec.outputs.report`) lays them out beside the paper's words.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# the paper's claims (arXiv 2606.19379; sources in paper/claims.md), with the paper's numbers as the paper states them
CLAIMS = {
    1: (
        "R²_lin is heterogeneous and non-monotone with depth",
        "> 0.99 to < 0.3 between adjacent blocks (GPT-2, Pythia-160m, llama-160m)",
    ),
    "2a": (
        "It is learned, not architectural",
        "GPT-2 and Pythia-160m (same width, both GELU) have sharply different profiles",
    ),
    "2b": (
        "… a property of each block's own weights",
        "recoverability is a learned property of individual trained blocks",
    ),
    3: (
        "A rank-16 bilinear probe adds little, uncorrelated with nonlinearity",
        "a few points of R²; Pearson r ≈ 0 with 1 − R²_lin",
    ),
    4: (
        "High R²_lin hides two regimes",
        "broadly linear (median ≈ global, high rank) vs outlier-concentrated (median ≪ global, rank ≈ 1)",
    ),
    5: ("Profiles are a property of the model, not the corpus", "three corpus domains overlay"),
    "6a": (
        "Compression: some block swaps cheaply",
        "GPT-2's early FFN replaced by its linear map at 8× fewer parameters for +0.77 perplexity",
    ),
    "6b": (
        "Compression signal: R²_lin flags the safe blocks",
        "high-recoverability blocks admit replacement, low-recoverability blocks flag where it is unsafe",
    ),
    "7a": (
        "Trained linear baselines under-converge",
        "SGD/Adam fall short of the closed-form ceiling",
    ),
    "7b": (
        "… because the activations are ill-conditioned",
        "the shortfall is put down to ill-conditioned transformer activations",
    ),
}


@dataclass
class Claim:
    number: int | str  # 1 … 7, claim 6 as "6a" and "6b"
    ours: str  # every number the verdict was decided on, in words (the claim's section)
    verdict: str  # one of linrec.claims.VERDICTS
    without_first: str = ""  # the verdict on every position but the windows' first ("" where the rule has none)
    headline: str = ""  # the claim table's cell: each model's headline number (≤ CELL_LIMIT characters)
    details: list[str] = field(default_factory=list)  # `ours`, one entry per model (the section's bullets)

    @property
    def anchor(self) -> str:
        return f"claim-{self.number}"

    @property
    def title(self) -> str:
        return CLAIMS[self.number][0]

    @property
    def paper(self) -> str:
        return CLAIMS[self.number][1]
