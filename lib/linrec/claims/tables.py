"""The results tables: written, read and labelled through the registry (`linrec.claims.registry.TABLES`).

Every table a notebook saves goes through `save_table` and every table the report reads goes
through `load_table`, so a renamed or missing column fails where it is written, not as a wrong
sentence in the report. Columns are snake_case and numeric wherever the quantity is a number
(an interval is two columns, `ci_lo` and `ci_hi`, never a formatted string); a few columns hold
identifiers (`model`, `corpus`, `regime`, block lists such as `first_token_blocks` = "11 28").
`labelled(df)` applies the display labels, only where a table is shown.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from pandas.api.types import is_bool_dtype, is_numeric_dtype

from linrec.analyses.spectrum import REGIME_HIGH_R2, REGIME_TOP1
from linrec.base.errors import LinrecError, StaleTableError
from linrec.base.files import atomic_file
from linrec.claims.registry import TABLES, TableSpec
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


# The columns that hold words, not numbers (identifiers, verdicts, descriptions); every other column of a results
# table, but the block lists (`is_block_list`), holds numbers or true/false, and `load_table` refuses a file where it
# does not. Two names are words in one table and numbers in the others (`TEXT_IN`).
TEXT_COLUMNS = frozenset(
    "a b claim2a column corpus corpus_a corpus_b corpus_highest corpus_lowest correlation data_order_words descriptor "
    "directory ffn ffn_of finding first inputs_from kind made_on max_diff_corpus_a max_diff_corpus_b mlp model "
    "model_type optimizer order outcome partial_outcome positions probe_stop reference regime regime_ex_first "
    "replication run samples seed_words shape_verdict target trained_words variant_words verdict weights what word "
    "procedure overlay_verdict level_outcome shape_outcome text_words ridge_basis setting before claim reason layout "
    "text part factor group interval shape_factor level_factor".split()
)
TEXT_IN = {"spectrum_replicates_summary": ("n_broadly_linear", "n_outlier_concentrated"), "swap_timings": ("step",),
           "routing_anchor": ("need_verdict", "split_verdict"), "routing_split_auc": ("part",),
           "routing_split_ppl": ("part",), "routing_heal": ("mode",),
           # a swapped set's name: '3', '3:ffn', '3r16', '1+3' (read as text: '3' alone would come back as 3)
           "swap_windows": ("swap",), "swap_skew": ("swap",),
           # a rule's record (linrec.outputs.rule_log): hashes that may read as numbers ('01234567'), and dates
           "rule_hashes": ("claim", "rule_hash", "tables_hash", "recorded"),
           "rule_changes": ("claim", "recorded", "hash_before", "hash_after", "verdict_before", "verdict_after",
                            "tables")}  # fmt: skip


def _not_a_number(name: str, df: pd.DataFrame) -> tuple[str, int, object] | None:
    """(column, row, value) of the first value of a number column of table `name` that is no number, else None."""

    for c in df.columns:
        if is_block_list(c) or c in TEXT_COLUMNS or c in TEXT_IN.get(name, ()):
            continue
        col = df[c]
        if is_numeric_dtype(col) or is_bool_dtype(col):
            continue
        as_number = pd.to_numeric(col.replace({"True": 1, "False": 0, True: 1, False: 0}), errors="coerce")
        bad = col.notna() & as_number.isna()
        if bad.any():
            row = int(bad.to_numpy().nonzero()[0][0])
            return c, row, col.iloc[row]
    return None


def is_block_list(column: str) -> bool:
    """Whether `column` holds block numbers as text ("11 28"; "" for none), e.g. `first_token_blocks` or
    `outlier_blocks_every_sample`, not a count (`n_blocks`, `n_params_blocks`). Read back as text: a column holding
    one block would otherwise come back as 2.0, and one holding none as NaN."""
    return column in ("blocks", "blocks_swapped") or ("_blocks" in column and not column.startswith("n_"))


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
        _spec_of(table)
    labels = {**LABELS, **TABLE_LABELS.get(table, {})}
    return df.drop(columns=[c for c in df.columns if is_timing(c)]).rename(columns=labels)


def _spec_of(name: str) -> TableSpec:
    if name not in TABLES:
        raise LinrecError(f"no results table is called '{name}'; registered: {', '.join(TABLES)}")
    return TABLES[name]


# Every float of a results table is written with 12 significant digits: more than any number here carries (the
# float64 statistics agree with lstsq to 1e-9 at best), fewer than the 17 at which summation order shows, so a rerun
# that reproduces the numbers writes the same bytes.
FLOAT_FORMAT = "%.12g"


# What records how a run went rather than what it found: seconds, and whether a capture came from the cache. These
# columns are written apart, to `<results_dir>/timings/<name>.csv` with the columns that name each row, so a rerun
# that reproduces every number leaves the results tables byte for byte as they were and only timings/ changes. A
# table made of nothing else (`TIMING_TABLES`) goes there whole.
TIMINGS_DIR = "timings"
TIMING_TABLES = ("swap_timings",)
ROW_KEYS = (
    "model",
    "run",
    "corpus",
    "block",
    "rank",
    "first",
    "step",
)  # the columns that name a row, where a table has them


def is_timing(column: str) -> bool:
    """Whether `column` records the run rather than a result: `seconds`, `seconds_*`, `from_cache`."""
    return column in ("seconds", "from_cache") or column.startswith("seconds_")


def result_columns(name: str) -> tuple[str, ...]:
    """The columns of table `name` that its `<name>.csv` holds: the registered ones, timings left out (a table made
    of timings keeps them all, in timings/)."""
    spec = _spec_of(name)
    return spec.columns if name in TIMING_TABLES else tuple(c for c in spec.columns if not is_timing(c))


def table_path(name: str, results_dir: str | Path) -> Path:
    """Where table `name`'s results live: `<results_dir>/<name>.csv` (`timings/<name>.csv` for a timing table)."""
    return timings_path(name, results_dir) if name in TIMING_TABLES else Path(results_dir) / f"{name}.csv"


def timings_path(name: str, results_dir: str | Path) -> Path:
    """Where table `name`'s timing columns live: `<results_dir>/timings/<name>.csv`."""
    return Path(results_dir) / TIMINGS_DIR / f"{name}.csv"


def save_table(df: pd.DataFrame, name: str, results_dir: str | Path) -> Path:
    """Write `df` as results table `name` (CSV, columns in registry order, floats to 12 significant digits); its
    timing columns go to `timings/<name>.csv` beside the row-naming columns (`ROW_KEYS`).

    Its columns must be exactly the registered ones: a renamed or extra column fails here."""
    spec = _spec_of(name)
    got = list(df.columns)
    if set(got) != set(spec.columns) or len(got) != len(spec.columns):
        extra, missing = sorted(set(got) - set(spec.columns)), sorted(set(spec.columns) - set(got))
        raise LinrecError(
            f"table '{name}' (notebook {spec.notebook}): unexpected columns {extra}, missing {missing}; update "
            "linrec.claims.registry.TABLES"
        )
    path = table_path(name, results_dir)
    kept = list(result_columns(name))
    with atomic_file(path) as tmp:
        df[kept].to_csv(tmp, index=False, float_format=FLOAT_FORMAT)
    timing = [c for c in spec.columns if c not in kept]
    if timing:
        keys = [c for c in kept if c in ROW_KEYS]
        with atomic_file(timings_path(name, results_dir)) as tmp:
            df[keys + timing].to_csv(tmp, index=False, float_format=FLOAT_FORMAT)
    return path


def load_table(name: str, results_dir: str | Path) -> pd.DataFrame | None:
    """Results table `name` from `results_dir` (its result columns; `load_timings` has the rest), or None if its
    notebook has not written it.

    A table without its registered columns (written by an older linrec) is an error naming its notebook; so is a
    file that is not a table linrec wrote (empty, not CSV, not text, not a regular file, unreadable)."""
    spec = _spec_of(name)
    path = table_path(name, results_dir)
    if not path.exists():
        return None
    rerun = f"rerun notebook {spec.notebook} to write it again (or restore it from git)"
    if not path.is_file():
        raise LinrecError(f"{path} is not a regular file, so not a results table; remove it and {rerun}")
    try:
        df = pd.read_csv(
            path,
            keep_default_na=True,
            dtype={c: str for c in spec.columns if is_block_list(c) or c in TEXT_IN.get(name, ())},
        )
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError, ValueError, OSError) as err:
        reason = "it is empty" if isinstance(err, pd.errors.EmptyDataError) else _first_line(err)
        raise LinrecError(f"{path} is not a results table linrec wrote ({reason}); {rerun}") from None
    missing = sorted(set(result_columns(name)) - set(df.columns))
    if missing and not set(result_columns(name)) & set(df.columns):
        raise LinrecError(f"{path} holds none of the columns of table '{name}', so it is not a results table; {rerun}")
    if missing:
        raise StaleTableError(
            f"{path} lacks columns {missing}: it was written by an older linrec; rerun notebook {spec.notebook}"
        )
    df = df[list(result_columns(name))].copy()  # a file from before the timings moved out still has them: left out here
    if (bad := _not_a_number(name, df)) is not None:
        column, row, value = bad
        raise LinrecError(f"{path}: column {column} holds {value!r} (row {row + 1}), not a number; {rerun}")
    for c in df.columns:
        if is_block_list(c):
            df[c] = df[c].fillna("")
    return df


def _first_line(err: Exception) -> str:
    text = " ".join(str(err).split())
    return (text[:120] + "…" if len(text) > 120 else text) or type(err).__name__


def load_timings(name: str, results_dir: str | Path) -> pd.DataFrame | None:
    """The timing columns of table `name` with the columns that name its rows (`timings/<name>.csv`), or None."""
    path = timings_path(name, results_dir)
    return pd.read_csv(path) if path.exists() else None


def load_with_timings(name: str, results_dir: str | Path) -> pd.DataFrame | None:
    """Table `name` as its study had it in memory: the result columns with the timing columns (`timings/<name>.csv`)
    joined back on the columns that name each row. None where its notebook did not write it."""
    df = load_table(name, results_dir)
    timings = load_timings(name, results_dir)
    if df is None or timings is None:
        return df
    keys = [c for c in ROW_KEYS if c in df.columns and c in timings.columns]
    extra = [c for c in timings.columns if c not in df.columns]
    if not keys or not extra or len(timings) != len(df):
        return df
    return df.merge(timings[keys + extra], on=keys, how="left", validate="one_to_one")


def load_as_written(name: str, results_dir: str | Path) -> pd.DataFrame | None:
    """Table `name` as written, whatever linrec wrote it (the columns a newer registry adds may be missing), or None."""
    path = table_path(name, results_dir)
    return pd.read_csv(path) if path.exists() else None
