"""A results folder as the report reads it: `Results` (the tables the numbered notebooks wrote, through the registry,
`linrec.base.tables`; `Results.get`, a table with where it came from: this one's, else a declared fallback's, and
what was passed over as an older linrec's; `elsewhere`, a fallback's table in words; `Line`, an evidence line that
keeps its source), the words for a number, a list of blocks or a pair of corpora's shift (`fmt`, `listed`,
`shift_words`) that every text of the report uses, and the display labels a table is shown with in a notebook or the
report (`labelled`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from linrec.analyses.spectrum import REGIME_HIGH_R2, REGIME_TOP1
from linrec.base.errors import LinrecError
from linrec.base.registry import TABLES
from linrec.base.tables import Quoted, is_timing, read, spec_of, table_path
from linrec.claims.rules import CLAIM6_BUDGET, FIRST_TOKEN_OVERLAP, FIRST_TOKEN_SHARE, SWAP_HIGH_R2

LABELS = {  # display labels, applied by `labelled` where a table is shown
    "model_type": "type",
    "n_train_rows": "train rows",
    "n_test_rows": "test rows",
    "bos": "BOS per window",
    "n_blocks": "blocks",
    "r2_min": "min R²_lin",
    "r2_max": "max R²_lin",
    "max_adjacent_jump": "largest jump between adjacent blocks",
    "direction_changes": "direction changes with depth",
    "max_jump_disjoint": "largest jump, disjoint intervals",
    "direction_changes_disjoint": "direction changes, disjoint intervals",
    "cond_gram_median": "median κ(Gram)",
    "r2_ex_first_max": "max R²_lin without first tokens",
    "first_token_blocks": "first-token blocks",
    "gain_median": "median gain",
    "gain_quad_median": "median gain, closed-form quadratic (top-k components)",
    "quad_excess_median": "median quadratic gain − probe gain",
    "detectable_r": "|r| detectable (80 % power)",
    "sweep_gain_median_rank_min": "median gain, sweep's lowest rank",
    "sweep_gain_median_rank_max": "median gain, sweep's highest rank",
    "share_short": "share of blocks > 0.01 short",
    "shortfall_median": "median shortfall (best baseline)",
    "adam_shortfall_median": "median shortfall, Adam",
    "sgd_shortfall_median": "median shortfall, SGD",
    "spearman_cond_shortfall": "Spearman ρ(log κ, shortfall)",
    "spearman_reach_adam": "Spearman ρ(Adam reach, Adam shortfall)",
    "adam_reach_median": "median Adam reach",
    "spearman_scaled_shortfall": "Spearman ρ(Jacobi-scaled κ, shortfall)",
    "budget_steps": "budget (steps)",
    "n_reached": "mechanism blocks reached",
    "steps_reach_well": "steps to the ceiling, best-conditioned",
    "steps_reach_ill": "steps to the ceiling, worst-conditioned",
    "cond_well": "κ(Gram), best-conditioned",
    "cond_ill": "κ(Gram), worst-conditioned",
    "dose_steps_min": "steps to the ceiling at the smallest constructed κ",
    "dose_steps_max": "steps to the ceiling at the largest constructed κ",
    "ceiling_excess": "most a tuned fit beats its ceiling",
    "n_lr_edge": "tuned rates at a grid end",
    "gd_steps_well": "GD steps (spectrum), best-conditioned",
    "gd_steps_ill": "GD steps (spectrum), worst-conditioned",
    "dose_short_min": "shortfall at the smallest constructed κ, longest budget",
    "dose_short_max": "shortfall at the largest constructed κ, longest budget",
    "dose_budget": "budget the dose's shortfall is read at (steps)",
    "dose_budget_short_min": "shortfall at that budget, smallest constructed κ",
    "dose_budget_short_max": "shortfall at that budget, largest constructed κ",
    "dose_levels": "constructed κ levels",
    "dose_slope": "dose: shortfall slope per decade of κ",
    "dose_slope_lo": "dose slope, 95 % CI low",
    "dose_slope_hi": "dose slope, 95 % CI high",
    "dose_slope_lo90": "dose slope, 90 % CI low",
    "dose_slope_hi90": "dose slope, 90 % CI high",
    "dose_resid_sd": "dose: residual SD about the line",
    "blocks_n": "mechanism blocks",
    "blocks_rho_scaled": "Spearman ρ(log scaled κ, steps to the ceiling), mechanism blocks",
    "blocks_scaled_min": "scaled κ, least (mechanism blocks)",
    "blocks_scaled_max": "scaled κ, most (mechanism blocks)",
    "gain_max": "max gain",
    "gain_min": "min gain",
    "pearson_r": "Pearson r",
    "ci_lo": "95 % CI low",
    "ci_hi": "95 % CI high",
    "n_broadly_linear": "broadly linear",
    "n_first_token_concentrated": "first-token-concentrated",
    "n_outlier_concentrated": "outlier-concentrated",
    "n_nonlinear": "nonlinear",
    "n_unclassified": "unclassified (high R²_lin, low-rank explained part)",
    "unclassified_blocks": "unclassified blocks",
    "outlier_first_blocks": f"outlier-concentrated with first position ≥ {FIRST_TOKEN_OVERLAP * 100:g} %",
    "outlier_blocks": "outlier-concentrated blocks",
    "outlier_ex_first_blocks": "outlier-concentrated without position 0",
    "concentrated_not_rank1_blocks": "concentrated, not rank ≈ 1",
    "first_share_blocks": f"first position ≥ {FIRST_TOKEN_SHARE * 100:g} % of output variance",
    "massive_blocks": "blocks with massive output features",
    "top1_broadly_linear_blocks": f"top-1 share ≥ {REGIME_TOP1:g} yet broadly linear",
    "max_drop_ex_top8": "largest drop R²_lin → ex-top-8",
    "eff_rank_out_frac_median": "median eff. rank out / width",
    "spearman_rho": "Spearman ρ",
    "spearman_min": "min Spearman ρ over pairs",
    "pearson_min": "min Pearson r over pairs",
    "corpus_depth_ratio": "corpus/depth",
    "max_abs_diff": "largest per-block difference",
    "ci_width_median": "median CI width",
    "ffn_over_linear": "FFN / linear parameters",
    "n_high_r2_costly": f"of those, ΔPPL > +{CLAIM6_BUDGET:g}",
    "high_r2_costly_blocks": "those blocks",
    "n_within_budget": f"blocks with ΔPPL ≤ +{CLAIM6_BUDGET:g} (interval's upper end)",
    "within_budget_blocks": "those blocks",
    "delta_ppl_median": "median ΔPPL",
    "ppl_base": "base perplexity",
    "mean_abs_trained_init": "mean |trained − init|",
    "spearman_trained_init": "Spearman ρ(trained, init seed 0)",
    "init_r2_train_median": "init seed 0: median in-sample R²",
    "init_r2_test_median": "init seed 0: median held-out R²",
    "mean_abs_init_seeds": "mean |init seed 0 − seed 1|",
    "spearman_init_seeds": "Spearman ρ(init seed 0, seed 1)",
    "init_r2_spread": "init seed 0: spread across blocks (sd)",
    "share_init_ffn": "profile variance explained by random-init FFN on trained inputs",
    "share_shuffled": "profile variance explained by shuffled FFN on trained inputs",
    "rho_inputs": "ρ(FFN_i on inputs_j, R²_lin of j), |i − j| = 1",
    "rho_weights": "ρ(FFN_i on inputs_j, R²_lin of i), |i − j| = 1",
    "r2_own_median": "median R²_lin (own inputs)",
    "r2_gaussian_median": "median R² on Gaussian inputs",
    "n_gaussian_drop": "blocks where Gaussian R² < own − 0.1",
    "r2_next_block_median": "median R² on the next block's inputs",
    "spearman_own_gaussian": "Spearman ρ(own, Gaussian)",
}


# Labels of a column whose meaning depends on its table: `n_high_r2` counts blocks above the regimes' "high" in
# spectrum_summary and above the swap study's in swap_safety (one label for both named the wrong threshold).
TABLE_LABELS = {
    "spectrum_summary": {"n_high_r2": f"blocks with R²_lin ≥ {REGIME_HIGH_R2:g}"},
    "swap_safety": {"n_high_r2": f"blocks with R²_lin ≥ {SWAP_HIGH_R2:g}"},
}


def labelled(df: pd.DataFrame, table: str | None = None) -> pd.DataFrame:
    """`df` for showing (never for saving): display labels for the columns that have one (those of results table
    `table` where a column's meaning depends on it, `TABLE_LABELS`), and without the timing columns (`is_timing`),
    so a notebook's saved output is the same on every run that finds the same numbers. Every threshold a label
    names is the constant the table's rule uses."""
    if table is not None:
        spec_of(table)
    labels = {**LABELS, **TABLE_LABELS.get(table, {})}
    return df.drop(columns=[c for c in df.columns if is_timing(c)]).rename(columns=labels)


class Results:
    """The results tables of one directory, read through the registry (`linrec.base.tables`): `get(name)` is the one
    read of a table, with where it came from; `applies` (`linrec.app.profile.results`': whether another profile's run
    measured what this one measures) is asked of each fallback before it is read."""

    def __init__(self, directory: str | Path, applies: Callable[[str], str | None] | None = None):
        self.dir = Path(directory)
        if not self.dir.is_dir():
            raise LinrecError(f"results directory {self.dir} not found; run `linrec figures` (or `make figures`) first")
        if not any(table_path(name, self.dir).is_file() for name in TABLES):  # a report of "missing" everywhere
            raise LinrecError(
                f"results directory {self.dir} holds no results table; run `linrec figures` (or `make figures`) "
                "first, or give the folder it wrote"
            )

        self.stale: dict[str, str] = {}  # table → its notebook, for tables an older linrec wrote (left out)
        self._runs: dict = {}  # another profile's run: which of its tables an older linrec wrote (`read`'s memo)
        self._applies = applies

    def get(self, name: str, among: tuple[str, ...] | None = None, *, own: bool = True) -> Quoted:
        """Table `name` and its `Source` (`linrec.base.tables.read`): this folder's own (`own`; `source.own`), else
        the last run of the first profile `among` (default: the fallbacks declared for it, `STAND_INS`) that holds it
        current (`source.profile`); None with the source saying what was passed over: an older linrec's table here
        (`source.left_out`, and listed in `stale`, so the claims that read it say which notebook to rerun instead of
        "not run"), a fallback's run an older linrec wrote (`source.why_stale`) or one that measured otherwise
        (`source.differs`)."""
        return read(name, self.dir, among, own=own, applies=self._applies, memo=self._runs, left_out=self.stale)

    def table(self, name: str) -> pd.DataFrame | None:
        """This folder's own table `name` (`get` with no fallback), as a claim reads it; None where its notebook has
        not written it or an older linrec did."""
        return self.get(name, ()).table

    def stored(self, path: str) -> pd.DataFrame | None:
        """A stand-alone measurement's CSV beside this results folder (`path` relative to its parent, e.g.
        "quant/quant_sensitivity.csv": a benchmark's file, run once and committed, that no notebook writes); None
        where it is absent or does not read as a table."""
        file = self.dir.parent / path
        if not file.is_file():
            return None
        try:
            return pd.read_csv(file)
        except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError, OSError):
            return None


class Line(str):
    """An evidence line that carries where it was drawn from: `quoted`, the `linrec.base.tables.Quoted` of the table
    it words (its `source`: the folder, the `profile` that stood in, None for the folder's own, and the `notebook` that
    wrote it); None for a line of the folder's own tables. A notebook's findings leave out the lines another notebook
    of the same run wrote (`linrec.outputs.claim_text.Said.findings`)."""

    quoted: Quoted | None

    def __new__(cls, text: str, quoted: Quoted | None = None) -> Line:
        line = super().__new__(cls, text)
        line.quoted = quoted
        return line

    def elsewhere(self, notebook: str | None) -> bool:
        """Whether this line words a table of this run's folder that a notebook other than `notebook` wrote."""
        q = self.quoted
        return q is not None and q.table is not None and q.source.own and q.source.notebook != notebook


def elsewhere(quoted: Quoted, words: Callable[[pd.DataFrame], str], what: str | None = None,
              absent: str | None = None, found: str = " found") -> str | None:  # fmt: skip
    """Where this profile does not run what writes `quoted`'s table (`Results.get(name, own=False)`): what the last
    run of the fallback that runs it found (`words` of its table, under a head naming its file and `found`), or that
    its settings differ from this run's, or that an older linrec wrote it (`Source.why_stale`), each led by `what`
    (None: "Not run in this profile"); where there is no such run, `absent` after that lead, its `{other}` the
    fallback's name (None: None)."""
    table, s = quoted
    lead, other = f"{what}: not run in this profile" if what else "Not run in this profile", s.other
    if why := s.differs.get(other):
        return f"{lead}; params/{other}.yaml, which runs it, measured {why}"
    if stale := s.why_stale:  # an older linrec's run: no numbers from it
        return f"{lead}; params/{other}.yaml runs it, but {stale}."
    if table is not None:
        head = f"Not run in this profile. The last run of params/{other}.yaml (results/{other}/{s.name}.csv)"
        return f"{head}{found}:\n{words(table)}"
    return f"{lead} {absent.format(other=other)}" if absent else None


def fmt(x, nd: int = 3, spec: str = "") -> str:
    """`x` to `nd` decimals (or in format `spec`); "n/a" for None or a number that is not finite."""
    return "n/a" if x is None or not np.isfinite(float(x)) else format(float(x), spec or f".{nd}f")


def ci(lo, hi, nd: int = 2) -> str:
    """An interval: "[lo, hi]", each end to `nd` decimals (`fmt`)."""
    return f"[{fmt(lo, nd)}, {fmt(hi, nd)}]"


def span(x, nd: int = 3) -> str:
    """The range of the numbers `x`, "lo–hi" to `nd` decimals (one number where they round alike); "—" for none."""
    x = pd.Series(x, dtype=float).dropna()
    lo, hi = ("—", "—") if x.empty else (f"{x.min():.{nd}f}", f"{x.max():.{nd}f}")
    return lo if lo == hi else f"{lo}–{hi}"


def listed(blocks) -> str:
    """Block numbers as a list: "1, 2"; "none" for none. A CSV column of block lists reads back as a float where it
    holds one block (2.0) and NaN where it holds none."""
    if blocks is None or (isinstance(blocks, float) and not np.isfinite(blocks)):
        return "none"
    if isinstance(blocks, (int, float, np.integer, np.floating)):
        return str(int(blocks))
    return ", ".join(str(blocks).split()) or "none"


def shift_words(q, suffix: str = "") -> str:
    """One pair of corpora's shift (a `corpora_agreement` row) in words: "wiki − web: level +0.039 [0.016, 0.063], shape
    0.013 [0.005, 0.022]"; `suffix` "_ex_first": without position 0."""
    level = [fmt(q.get(f"level{k}{suffix}"), spec=f) for k, f in (("", "+.3f"), ("_lo", ".3f"), ("_hi", ".3f"))]
    shape = [fmt(q.get(f"shape{k}{suffix}"), spec=".3f") for k in ("", "_lo", "_hi")]
    return (f"{q['corpus_a']} − {q['corpus_b']}: level {level[0]} [{level[1]}, {level[2]}], shape {shape[0]} "
            f"[{shape[1]}, {shape[2]}]")  # fmt: skip
