"""Recompute a results folder's summary tables from its per-block tables with today's procedures: each stage's
`summarise` (the function its study calls after measuring, `linrec.studies.base.Summary`) on the folder's tables,
then the coverage of the intervals the verdicts read (`linrec.analyses.coverage.coverage`, claim 6a's own windows
resampled: `linrec.outputs.methods.claim_6a_blocks`), this capture against the learning curve (`curve_split`), and
the summaries of a stand-alone measurement's folder (`STAND_ALONE`: results/quant, results/split); no model is
needed. Every summary a report quotes is computed here or by its study, so rendering computes none.

    python -m linrec.outputs.refresh results/full
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from linrec.analyses import large_n, quant
from linrec.analyses.coverage import coverage, coverage_settings
from linrec.analyses.large_n import split_summary
from linrec.base.errors import LinrecError, StaleTableError
from linrec.base.files import atomic_file
from linrec.base.tables import load_as_written, load_table, load_with_timings, read, save_table, table_path
from linrec.outputs.methods import claim_6a_blocks
from linrec.stats import N_BOOT
from linrec.studies import controls, corpora, probe, routing, swap, training
from linrec.studies.base import Settings

# every stage's summaries, in the order they read each other's (routing reads the swap's predictors)
SUMMARIES = (probe.PROBE, probe.PITFALL, swap.SWAP, routing.ROUTING, controls.CONTROLS, corpora.CORPORA,
             training.TRAINING, training.ZOO)  # fmt: skip


def quant_summary(table: pd.DataFrame) -> pd.DataFrame | None:
    """`linrec.analyses.quant.summary` of a `quant_sensitivity` table at the release's own step (scale 1), one row per
    model and draw (the model's numbers repeated, then the draw's `seed`, `ppl_change`, `ppl_change_lo`,
    `ppl_change_hi`); None where the table lacks its columns."""
    if set(quant.COLUMNS) - set(table.columns):
        return None
    rows = [{"model": m, **{k: v for k, v in e.items() if k != "draws"}, **d}
            for m, e in quant.summary(table[table["scale"] == 1]).items() for d in e["draws"]]  # fmt: skip
    return pd.DataFrame(rows)


def _split_summary(table: pd.DataFrame) -> pd.DataFrame | None:
    try:
        return split_summary(table)
    except KeyError:  # a file without split_shift's columns
        return None


# a stand-alone measurement's file (a benchmark's, no notebook's) → the summary written beside it, and how
STAND_ALONE: dict[str, tuple[str, Callable[[pd.DataFrame], pd.DataFrame | None]]] = {
    "quant_sensitivity.csv": ("quant_summary.csv", quant_summary),  # benchmarks/quant.py
    "split_shift.csv": ("split_summary.csv", _split_summary),  # benchmarks/split.py
}


def stand_alone(results_dir: str | Path) -> list[str]:
    """Write the summary of each stand-alone measurement `results_dir` holds (`STAND_ALONE`; full precision, as the
    benchmark's own file; removed where that file no longer reads as the benchmark's); the names written."""
    done = []
    for raw, (name, summarise) in STAND_ALONE.items():
        file, out = Path(results_dir) / raw, None
        if not file.is_file():
            continue
        try:
            out = summarise(pd.read_csv(file))
        except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError):
            pass
        if out is None:  # a file that does not read as the benchmark's: no summary of an earlier one stays
            (Path(results_dir) / name).unlink(missing_ok=True)
            continue
        with atomic_file(Path(results_dir) / name) as tmp:
            out.to_csv(tmp, index=False)
        done.append(name.removesuffix(".csv"))
    return done


def curve_split(results_dir: str | Path) -> pd.DataFrame | None:
    """This capture's R²_lin against the learning curve's (`linrec.analyses.large_n.curve_split`), the curve read as
    the report quotes it (this folder's, else the last run of the profile that runs it: `linrec.base.tables.read`)."""
    try:
        r2 = load_table("r2_lin", results_dir)
    except StaleTableError:
        return None
    return large_n.curve_split(read("r2_curve_overview", results_dir).also("r2_curve").table, r2)


def refresh(results_dir: str | Path, n_boot: int = N_BOOT, seed: int = 0) -> list[str]:
    """Rewrite `results_dir`'s summaries from its tables (names returned); one with inputs missing or old stays."""
    d = Path(results_dir)
    if not d.is_dir():
        raise LinrecError(f"results directory {d} not found; give a folder `linrec figures` wrote")
    tables, done = {}, []  # what each stage reads: a table read once, a summary as the stage before wrote it
    for s in SUMMARIES:
        try:
            for name in (n for n in s.reads if n not in tables):
                tables[name] = (load_as_written if name in s.as_written else load_with_timings)(name, d)
        except StaleTableError as err:  # its tables predate today's columns: only its notebook redoes them
            print(f"{d}: {s.name} left as it is ({err})", file=sys.stderr)
            continue
        out = s.summarise({n: tables[n] for n in s.reads if tables[n] is not None}, Settings(n_boot, seed))
        for name, table in out.items():
            if name not in s.where_present or table_path(name, d).exists():
                save_table(table, name, d)
                tables[name], done = table, [*done, name]
    if coverage_settings(d):
        save_table(coverage(d, chosen=claim_6a_blocks(d)), "calibration", d)
        done.append("calibration")
    if (split := curve_split(d)) is not None:
        save_table(split, "curve_split", d)
        done.append("curve_split")
    else:
        table_path("curve_split", d).unlink(missing_ok=True)  # an earlier curve's comparison must not stay
    return done + stand_alone(d)


def main(argv: list[str] | None = None) -> int:  # python -m linrec.outputs.refresh RESULTS_DIR …
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m linrec.outputs.refresh RESULTS_DIR [RESULTS_DIR ...]", file=sys.stderr)
        return 2
    for folder in args:
        print(f"{folder}: refreshed {', '.join(refresh(folder)) or 'nothing'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
