"""Recompute a results folder's summary tables from its per-block tables with today's procedures: each stage's
`summarise` (the function its study calls after measuring, `linrec.studies.base.Summary`) on the folder's tables,
then the coverage of the intervals the verdicts read (`linrec.analyses.coverage.coverage`, claim 6a's own windows
resampled: `linrec.outputs.methods.claim_6a_blocks`); no model is needed.

    python -m linrec.outputs.refresh results/full
"""

from __future__ import annotations

import sys
from pathlib import Path

from linrec.analyses.coverage import coverage, coverage_settings
from linrec.base.errors import LinrecError, StaleTableError
from linrec.base.tables import load_as_written, load_with_timings, save_table, table_path
from linrec.outputs.methods import claim_6a_blocks
from linrec.stats import N_BOOT
from linrec.studies import controls, corpora, probe, routing, swap, training
from linrec.studies.base import Settings

# every stage's summaries, in the order they read each other's (routing reads the swap's predictors)
SUMMARIES = (probe.PROBE, probe.PITFALL, swap.SWAP, routing.ROUTING, controls.CONTROLS, corpora.CORPORA,
             training.TRAINING, training.ZOO)  # fmt: skip


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
    return done


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
