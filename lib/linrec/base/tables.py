"""The results tables: written and read through the registry (`linrec.base.registry.TABLES`).

Every table a notebook saves goes through `save_table` and every table the report reads goes
through `load_table`, so a renamed or missing column fails where it is written, not as a wrong
sentence in the report. Columns are snake_case and numeric wherever the quantity is a number
(an interval is two columns, `ci_lo` and `ci_hi`, never a formatted string); a few columns hold
identifiers (`model`, `corpus`, `regime`, block lists such as `first_token_blocks` = "11 28").
The display labels a table is shown with are `linrec.outputs.results.labelled`'s (they name claims' thresholds).

A table quoted where its notebook did not run here is read by `read`: this folder's own, else the last run of the
profile declared to stand in for it (`STAND_INS`), with where it came from (`Quoted`: the table and its `Source`),
never a run an older linrec wrote (`stale_tables`).
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import partial
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
from pandas.api.types import is_bool_dtype, is_float_dtype, is_numeric_dtype

from linrec.base.errors import LinrecError, StaleTableError
from linrec.base.files import atomic_file, find_project_root
from linrec.base.registry import TABLES, TableSpec

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
           "rule_hashes": ("claim", "rule_hash", "tables_hash", "recorded", "models"),
           "rule_changes": ("claim", "recorded", "hash_before", "hash_after", "verdict_before", "verdict_after",
                            "tables", "why")}  # fmt: skip


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


def blocks(t: pd.DataFrame, mask) -> str:
    """Block numbers where `mask` holds, space-separated ("" for none): a block list (`is_block_list`), identifiers,
    not a formatted number."""
    return " ".join(str(int(b)) for b in t.loc[mask, "block"])


def require(t: pd.DataFrame, cols, what: str) -> None:
    """The columns `cols` a summary `what` reads must be in `t`: one line naming those missing."""
    missing = sorted(set(cols) - set(t.columns))
    if missing:
        raise LinrecError(f"{what} needs columns {missing}; give the table the notebook writes")


def spec_of(name: str) -> TableSpec:
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
    spec = spec_of(name)
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

    A stored table that agrees with `df` within the project's precision (`PRECISION`, `agrees`) is kept as it is,
    its timings with it: a rerun on another machine, whose forward pass moves R²_lin in the 9th digit, leaves the
    clone clean, and a value that moves beyond its precision rewrites the table. Either way `df` is left holding
    the numbers the file holds (its float columns replaced in place by the stored values), so whatever is drawn or
    judged from it next (a figure, a summary) is what a reader of the file gets, and a redrawn figure is the same
    bytes (`linrec.outputs.plots.save` then leaves its files alone).

    Its columns must be exactly the registered ones: a renamed or extra column fails here."""
    spec = spec_of(name)
    got = list(df.columns)
    if set(got) != set(spec.columns) or len(got) != len(spec.columns):
        extra, missing = sorted(set(got) - set(spec.columns)), sorted(set(spec.columns) - set(got))
        raise LinrecError(
            f"table '{name}' (notebook {spec.notebook}): unexpected columns {extra}, missing {missing}; update "
            "linrec.base.registry.TABLES"
        )
    path = table_path(name, results_dir)
    kept = list(result_columns(name))
    text = df[kept].to_csv(index=False, float_format=FLOAT_FORMAT)
    new = _parse(text, name)
    old = _stored(path, name)
    if old is None or not agrees(name, new, old):
        with atomic_file(path) as tmp:
            tmp.write_text(text)
        timing = [c for c in spec.columns if c not in kept]
        if timing:
            keys = [c for c in kept if c in ROW_KEYS]
            with atomic_file(timings_path(name, results_dir)) as tmp:
                df[keys + timing].to_csv(tmp, index=False, float_format=FLOAT_FORMAT)
        old = new
    _hold(df, old)
    return path


# ---- when a rerun rewrites a table -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Precision:
    """How far a number may move between two runs (two machines: docs/numerics.md, "What a rerun rewrites") before
    its table is rewritten: |new − stored| ≤ atol + rtol·|stored|."""

    columns: tuple[str, ...]  # column names or shell patterns (`fnmatch`); the first rule that matches applies
    atol: float
    rtol: float
    why: str


# Measured (docs/numerics.md, "What a rerun rewrites"): the default profile rerun on another machine from an empty
# capture cache (2026-11-29) against the committed tables moved an R² of the float64 statistics by up to 2.5e-4 (the
# refits without position 0; R²_lin itself 1e-6), a ΔPPL by up to 7.4e-4 (2.9e-4 of itself), a trained fit's R² or
# gain by up to 1.1e-5, any other number by up to 1.4e-4 of itself (an output variance ratio near 26); each bound
# below covers its class with room to spare and still sees a real change of 1e-3 in an R².
R2_PRECISION = 5e-4  # an R² of the float64 statistics (R²_lin, its interval, a move, a share): float32 forwards
PPL_PRECISION = 1e-3  # a perplexity, ΔPPL or per-token loss: float32 forward passes summed over windows
FIT_PRECISION = 1e-4  # an R² or gain of a trained fit (probe, Adam/SGD baselines): a thousand steps amplify bits
RELATIVE = 2e-4  # every other float (a count of tokens per parameter, a width, an effective rank), relative to itself

# The rules, first match wins; every float column not named falls to the last one. Integers, true/false and text
# must be equal.
PRECISION = (
    Precision(("cond_*", "*kappa*", "dynamic_range*", "ridge_alpha", "cond_lo", "cond_hi", "cond_well", "cond_ill"),
              0.0, 1e-4, "a condition number: its smallest eigenvalue moves by κ times the Gram's own rounding"),
    Precision(("p", "q", "*_p", "p_*", "*_p_holm", "z_*", "se_*", "*_se_*"), 1e-8, 1e-3,
              "a p-value, z or standard error: a ratio of small differences, read to two digits"),
    Precision(("*ppl*", "delta_*", "loss_*", "*_loss", "vs_map*", "vs_full*", "cost_*", "pseudo_skew", "full_minus*",
               "*_share_of_cost*", "share_of_cost_at_first", "max_window_share", "test_delta*", "own_*", "jack_*",
               "budget_ppl", "compute_saved"),
              PPL_PRECISION, 1e-4, "from a forward pass's per-token losses (ΔPPL, perplexity, a window's loss)"),
    Precision(("r2_poly", "gain", "gain_*", "*_gain*", "r2_trained*", "r2_val", "r2_test", "*shortfall*",
               "dose_short*", "dose_budget_short*", "dose_slope*", "dose_resid_sd", "quad_excess*", "*reach*",
               "ceiling_excess", "r2_quad", "lookup_r2*", "auc*", "*_auc*", "distance*", "component*", "level*",
               "shape*"),
              FIT_PRECISION, 1e-4, "a trained fit's R² or gain, or a statistic of trained models"),
    Precision(("*",), R2_PRECISION, RELATIVE, "an R² of the float64 statistics, or any number derived from them"),
)  # fmt: skip


def precision(column: str) -> Precision:
    """The rule (`PRECISION`) that says how far a float in `column` may move before its table is rewritten."""
    return next(r for r in PRECISION if any(fnmatchcase(column, pattern) for pattern in r.columns))


def agrees(name: str, new: pd.DataFrame, old: pd.DataFrame) -> bool:
    """Whether table `name` as computed (`new`) says what the stored one (`old`) says: the same columns and rows,
    text, integers and true/false equal, every float within its column's precision (`precision`; NaN where NaN).
    A timing table (`TIMING_TABLES`) is compared on its other columns: its seconds differ on every run."""
    if list(new.columns) != list(old.columns) or len(new) != len(old):
        return False
    for c in new.columns:
        if is_timing(c):
            continue
        a, b = new[c], old[c]
        if is_float_dtype(a) or is_float_dtype(b):
            if not (is_numeric_dtype(a) and is_numeric_dtype(b)):
                return False
            x, y = a.to_numpy(dtype=float), b.to_numpy(dtype=float)
            if not np.array_equal(np.isnan(x), np.isnan(y)):
                return False
            rule = precision(c)
            finite = np.isfinite(x) & np.isfinite(y)
            if not np.array_equal(x[~finite & ~np.isnan(x)], y[~finite & ~np.isnan(y)]):
                return False  # ±inf where ±inf
            if np.any(np.abs(x[finite] - y[finite]) > rule.atol + rule.rtol * np.abs(y[finite])):
                return False
        elif not a.astype(str).equals(b.astype(str)):
            return False
    return True


def _read_options(name: str) -> dict:
    spec = spec_of(name)
    return {"keep_default_na": True,
            "dtype": {c: str for c in spec.columns if is_block_list(c) or c in TEXT_IN.get(name, ())}}  # fmt: skip


def _parse(text: str, name: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(text), **_read_options(name))


def _stored(path: Path, name: str) -> pd.DataFrame | None:
    """The stored table at `path` as `load_table` parses it, or None where there is none or it is not readable (it is
    then rewritten)."""
    try:
        return _parse(path.read_text(), name) if path.is_file() else None
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError, ValueError, OSError):
        return None


def _hold(df: pd.DataFrame, stored: pd.DataFrame) -> None:
    """Replace, in place, each float column of `df` by the stored table's values: what is drawn next is what the
    file says."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a slice of another frame: its own copy changes, which is all that is read
        for c in stored.columns:
            if is_timing(c) or c not in df.columns or len(df) != len(stored):
                continue
            if is_float_dtype(df[c]) and is_numeric_dtype(stored[c]):
                df[c] = stored[c].to_numpy(dtype=float)


def load_table(name: str, results_dir: str | Path) -> pd.DataFrame | None:
    """Results table `name` from `results_dir` (its result columns; `load_timings` has the rest), or None if its
    notebook has not written it.

    A table without its registered columns (written by an older linrec) is an error naming its notebook; so is a
    file that is not a table linrec wrote (empty, not CSV, not text, not a regular file, unreadable)."""
    spec = spec_of(name)
    path = table_path(name, results_dir)
    if not path.exists():
        return None
    rerun = f"rerun notebook {spec.notebook} to write it again (or restore it from git)"
    if not path.is_file():
        raise LinrecError(f"{path} is not a regular file, so not a results table; remove it and {rerun}")
    try:
        df = pd.read_csv(path, **_read_options(name))
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


# ---- a table quoted from another profile's last run ------------------------------------------------------------------
# Which other profile's folder may stand in for a table this one has not written: the table (or a pattern of names)
# → the profiles whose folders `read` tries, in order. The one place it is said; a report, a notebook and notebook 08's
# study all read through `read`, which names the folder each table came from.
STAND_INS: dict[str, tuple[str, ...]] = {
    "r2_curve*": ("curve",),  # notebook 02's learning curve: params/curve.yaml
    "r2_replicates_summary": ("full",),  # the replication on fresh text (claims 1 and 4): params/full.yaml's samples
    "spectrum_replicates_summary": ("full",),
    "routing_*": ("full",),  # notebook 06 routing every block: params/full.yaml
    "training_*": ("training",),  # notebook 08's seeds experiment: params/training.yaml
    "zoo_*": ("zoo",),  # notebook 08's zoo: params/zoo.yaml
}


def stand_ins(name: str) -> tuple[str, ...]:
    """The profiles whose last run may stand in for table `name` (`STAND_INS`), in the order tried; () for none."""
    spec_of(name)
    return next((profiles for pattern, profiles in STAND_INS.items() if fnmatchcase(name, pattern)), ())


def profile_folder(folder: str | Path, profile: str) -> Path:
    """The results folder of `profile`'s last run as seen from results folder `folder`: `results/<profile>` of the
    project `folder` lies in, else (a scratch run outside any checkout) the folder `<profile>` beside `folder`."""
    root = find_project_root(folder)
    return root / "results" / profile if root is not None else Path(folder).parent / profile


def stale_tables(folder: str | Path, notebook: str) -> list[str]:
    """The results tables of `notebook` in `folder` that an older linrec wrote (`load_table` refuses them: a
    registered column is missing, or the file is not a table linrec wrote), by name."""
    stale = []
    for name, spec in TABLES.items():
        if spec.notebook == notebook:
            try:
                load_table(name, folder)
            except LinrecError:
                stale.append(name)
    return stale


@dataclass(frozen=True)
class Source:
    """Where `read` found table `name`: the `folder` it came from (None where no folder tried holds it written,
    current and not empty) and `profile`, the declared fallback whose last run stood in (None: the folder asked, or
    nothing found). Beside them, what was passed over: `left_out`, the folder asked holds it as an older linrec wrote
    it; `stale`, profile → its notebook's tables in that profile's folder an older linrec wrote (the run is not quoted
    at all); `differs`, profile → why its run does not apply here (the caller's `applies`). `among`: the fallbacks
    asked, in order."""

    name: str
    folder: Path | None = None
    profile: str | None = None
    among: tuple[str, ...] = ()
    left_out: bool = False
    stale: dict[str, tuple[str, ...]] = field(default_factory=dict)
    differs: dict[str, str] = field(default_factory=dict)
    again: Callable[..., Quoted] | None = field(default=None, repr=False, compare=False)

    @property
    def own(self) -> bool:
        """Whether the table is the asked folder's own (this run's), not a fallback's."""
        return self.folder is not None and self.profile is None

    @property
    def other(self) -> str | None:
        """The other profile this source is about: the one that stood in, else the first passed over, else the first
        asked; None where no other profile was asked."""
        skipped = [p for p in self.among if p in self.differs or p in self.stale]
        return self.profile or next(iter(skipped), None) or next(iter(self.among), None)

    @property
    def notebook(self) -> str:
        """The notebook that writes the table."""
        return spec_of(self.name).notebook

    @property
    def why_stale(self) -> str | None:
        """Where the last run of the fallback asked (`other`) was written by an older linrec: a sentence saying so,
        naming its old tables and the command that refreshes them; None where it is current (or absent)."""
        other = self.other
        if other not in self.stale:
            return None
        return (
            f"its last run, in `results/{other}/`, was written by an older linrec and nothing of it is shown here: "
            f"{', '.join(f'`{t}.csv`' for t in self.stale[other])} lack columns this linrec writes; `linrec figures "
            f"--params params/{other}.yaml --only {self.notebook}` refreshes it"
        )


class Quoted(NamedTuple):
    """What `read` found: the `table` (None where nothing was found) and its `Source`; unpacks as (table, source)."""

    table: pd.DataFrame | None
    source: Source

    def also(self, other: str) -> Quoted:
        """Table `other` from this quote's folder alone (nothing where this quote found nothing): a run's tables are
        quoted together, by the same rules."""
        s = self.source
        if s.folder is None or s.again is None:
            return Quoted(None, Source(other))
        return s.again(other, among=(s.profile,) if s.profile else (), own=s.profile is None)


def read(
    name: str,
    folder: str | Path,
    among: tuple[str, ...] | None = None,
    *,
    own: bool = True,
    applies: Callable[[str], str | None] | None = None,
    memo: dict | None = None,
    left_out: dict[str, str] | None = None,
) -> Quoted:
    """Table `name` as quoted in results folder `folder`: its own (`own`), else from the last run of the first profile
    `among` (default: the declared fallbacks, `STAND_INS`) that holds it, with where it came from (`Source`). The one
    read of a table another profile may stand in for: `linrec.outputs.results.Results.get` is it for a results folder.

    Never read: an empty table where a fallback is asked; one an older linrec wrote (in `folder`: `left_out`, as
    `Results` lists it); another profile's run where any table of the same notebook there is an older linrec's
    (`stale`: the run is quoted whole or not at all); a fallback folder that is `folder` itself; a profile whose run
    `applies(profile)` says does not apply here (`differs`, e.g. another corpus: `linrec.app.profile.results`). `memo`
    (a dict the caller keeps) holds what was found stale per folder and notebook, so a report checks each run once;
    `left_out` (the caller's too) gets table → notebook for each table of `folder` itself an older linrec wrote."""
    folder, memo = Path(folder), {} if memo is None else memo
    among = stand_ins(name) if among is None else tuple(among)
    again = partial(read, folder=folder, applies=applies, memo=memo, left_out=left_out)
    found = {"name": name, "among": among, "again": again, "stale": {}, "differs": {}}
    if own:
        try:
            table = load_table(name, folder)
        except StaleTableError:
            found["left_out"], table = True, None
            if left_out is not None:
                left_out[name] = spec_of(name).notebook
        if table is not None and not (table.empty and among):
            return Quoted(table, Source(folder=folder, **found))
    for profile in among:
        other = profile_folder(folder, profile)
        if other.resolve() == folder.resolve():
            continue
        if applies is not None and (why := applies(profile)):
            found["differs"][profile] = why
            continue
        if not other.is_dir():
            continue
        key = (other.resolve(), spec_of(name).notebook)
        if key not in memo:
            memo[key] = tuple(stale_tables(other, key[1]))
        if memo[key]:
            found["stale"][profile] = memo[key]
            continue
        table = load_table(name, other)
        if table is not None and not table.empty:
            return Quoted(table, Source(folder=other, profile=profile, **found))
    return Quoted(None, Source(**found))
