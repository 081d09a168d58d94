"""Recompute a results folder's summary tables from its per-block tables, with today's procedures.

The summaries a verdict reads (`probe_summary`, `probe_summary_ex_first`, `pitfall_summary`, `swap_predictors`,
`routing_summary`) are functions of per-block tables the notebooks already wrote (`probe`, `probe_ranks`,
`probe_ex_first`, `pitfall_budget`, `pitfall_dose`, `swap_predictor_values`, `swap`, `routing_routable`, `r2_lin`,
`routing_identity`): no model, capture or perplexity is needed to redo them. When a procedure changes (issue 45
replaced the moving-block percentile bootstrap of the correlations across blocks, which under-covered, by Fisher's
interval at an effective number of blocks), `refresh` brings a folder's summaries up to date in seconds, exactly
as notebooks 03 and 06 would write them from the same per-block tables; the executed notebooks in that folder keep
what they printed when they ran.

    python -m linrec.claims.refresh results/full
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from linrec.base.errors import LinrecError
from linrec.claims.probe import pitfall_summary, probe_summary
from linrec.claims.swap import routing_summary, swap_predictors
from linrec.claims.tables import ROW_KEYS, load_table, load_timings, save_table, table_path


def _read_all(results_dir: Path, name: str) -> pd.DataFrame | None:
    """Table `name` as its notebook had it: the result columns with the timing columns (`timings/<name>.csv`)
    joined back on the columns that name each row. None where the notebook did not write it."""
    df = load_table(name, results_dir)
    timings = load_timings(name, results_dir)
    if df is None or timings is None:
        return df
    keys = [c for c in ROW_KEYS if c in df.columns and c in timings.columns]
    extra = [c for c in timings.columns if c not in df.columns]
    if not keys or not extra or len(timings) != len(df):
        return df
    return df.merge(timings[keys + extra], on=keys, how="left", validate="one_to_one")


def refresh(results_dir: str | Path, n_boot: int = 2000, seed: int = 0) -> list[str]:
    """Rewrite the summary tables of `results_dir` that can be rebuilt from its per-block tables; returns their
    names. A summary whose inputs are missing is left as it is."""
    d = Path(results_dir)
    if not d.is_dir():
        raise LinrecError(f"results directory {d} not found; give a folder `linrec figures` wrote")
    done = []
    probe = _read_all(d, "probe")
    if probe is not None:
        save_table(probe_summary(probe, _read_all(d, "probe_ranks"), n_boot=n_boot, seed=seed), "probe_summary", d)
        done.append("probe_summary")
        pitfall = pitfall_summary(probe, _read_all(d, "pitfall_budget"), _read_all(d, "pitfall_dose"), n_boot, seed)
        save_table(pitfall, "pitfall_summary", d)
        done.append("pitfall_summary")
    ex = _read_all(d, "probe_ex_first")
    if ex is not None:
        save_table(probe_summary(ex, None, n_boot=n_boot, seed=seed), "probe_summary_ex_first", d)
        done.append("probe_summary_ex_first")
    values, swap = _read_all(d, "swap_predictor_values"), _read_all(d, "swap")
    pred = None
    if values is not None and swap is not None:
        pred = swap_predictors(values, swap, n_boot=n_boot, seed=seed)
        save_table(pred, "swap_predictors", d)
        done.append("swap_predictors")
    routable, r2 = _read_all(d, "routing_routable"), _read_all(d, "r2_lin")
    if routable is not None and r2 is not None and table_path("routing_summary", d).exists():
        corpus = _study_corpus(d, r2)
        r2 = r2[r2["corpus"] == corpus] if corpus is not None else r2
        routing = routing_summary(routable, r2, pred, _read_all(d, "routing_identity"), n_boot=n_boot, seed=seed)
        save_table(routing, "routing_summary", d)
        done.append("routing_summary")
    return done


def _study_corpus(d: Path, r2: pd.DataFrame) -> str | None:
    """The corpus the swap study ran on (notebook 06's ceilings): the swap table's, else the first in r2_lin."""
    swap = load_table("swap", d)
    if swap is not None and "corpus" in swap.columns and len(swap):
        return str(swap["corpus"].iloc[0])
    return str(r2["corpus"].iloc[0]) if "corpus" in r2.columns and len(r2) else None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m linrec.claims.refresh RESULTS_DIR [RESULTS_DIR ...]", file=sys.stderr)
        return 2
    for folder in args:
        print(f"{folder}: refreshed {', '.join(refresh(folder)) or 'nothing'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
