"""Write the summary tables of `linrec.base.bench_registry.BENCH_TABLES` from their stored inputs, once, where a
benchmark or a refresh computes them, so that what quotes them (the docs' generated blocks,
`linrec.outputs.doc_blocks`) only reads a table (issue 86: rendering calls no analysis).

    python -m linrec.outputs.bench_summaries [ROOT] [NAME ...]    # every table whose inputs are present

`benchmarks/quant.py` writes `quant_summary` and `benchmarks/split.py` `split_summary` after their own tables;
`curve_other_split` reads the default's and the full profile's `r2_lin`, so it is rewritten here after either run
moves (`tests/outputs/test_bench_summaries.py` fails while a stored table differs from what its inputs give).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from linrec.analyses.large_n import other_split, split_summary
from linrec.analyses.quant import summary as quant_summary
from linrec.base.bench_registry import BENCH_TABLES
from linrec.base.errors import LinrecError
from linrec.base.files import atomic_file


def quant_table(sensitivity: pd.DataFrame) -> pd.DataFrame:
    """`quant_summary` per scale of a `quant_sensitivity` table, one row per model, scale and draw."""
    rows = []
    for scale, t in sensitivity.groupby("scale", sort=True):
        for model, s in quant_summary(t).items():
            head = {k: v for k, v in s.items() if k != "draws"}
            rows += [{"model": model, "scale": scale, **head, **d} for d in s["draws"]]
    return pd.DataFrame(rows, columns=list(BENCH_TABLES["quant_summary"].columns))


def split_table(shift: pd.DataFrame) -> pd.DataFrame:
    return split_summary(shift)[list(BENCH_TABLES["split_summary"].columns)]


def curve_table(curve: pd.DataFrame, default: pd.DataFrame, full: pd.DataFrame) -> pd.DataFrame:
    """`other_split` of the learning curve against the default's `r2_lin` and the full profile's models the default
    lacks."""
    full = full[~full["model"].isin(set(default["model"]))]
    parts = [other_split(curve, r2).assign(profile=p) for p, r2 in (("default", default), ("full", full))]
    return pd.concat(parts, ignore_index=True)[list(BENCH_TABLES["curve_other_split"].columns)]


MAKERS = {"quant_summary": quant_table, "split_summary": split_table, "curve_other_split": curve_table}


def compute(name: str, root: str | Path = ".") -> pd.DataFrame | None:
    """Table `name` from its inputs under the checkout `root`; None where one is absent."""
    if name not in BENCH_TABLES:
        raise LinrecError(f"no benchmark summary is called '{name}'; known: {', '.join(BENCH_TABLES)}")
    paths = [Path(root) / p for p in BENCH_TABLES[name].inputs]
    if not all(p.is_file() for p in paths):
        return None
    return MAKERS[name](*(pd.read_csv(p) for p in paths))


def write(root: str | Path = ".", names: tuple[str, ...] = tuple(BENCH_TABLES)) -> list[Path]:
    """Write each table of `names` whose inputs are present under `root` (floats to 12 significant digits); the
    files written."""
    done = []
    for name in names:
        table = compute(name, root)
        if table is None:
            continue
        done.append(save(table, Path(root) / BENCH_TABLES[name].path(name)))
    return done


def save(table: pd.DataFrame, path: str | Path) -> Path:
    """Write a summary table to `path` as every one is written (floats to 12 significant digits)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path) as tmp:
        table.to_csv(tmp, index=False, float_format="%.12g")
    return path


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root, names = (args[0], tuple(args[1:]) or tuple(BENCH_TABLES)) if args else (".", tuple(BENCH_TABLES))
    for path in write(root, names):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
