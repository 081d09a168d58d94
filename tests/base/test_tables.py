"""linrec.base.tables: results tables written and read through the registry: round trips that refuse wrong
columns, block lists and counts that survive the CSV, timings written apart (the display labels:
tests/outputs/test_results.py)."""

import pandas as pd
import pytest

from helpers import claim1_row as _claim1_row
from linrec.base.errors import LinrecError
from linrec.base.registry import TABLES
from linrec.base.tables import load_table, save_table
from linrec.outputs.results import labelled


# ---- the registry ---------------------------------------------------------------------------------------
def test_tables_round_trip_and_refuse_wrong_columns(tmp_path):
    row = _claim1_row()
    path = save_table(pd.DataFrame([dict(reversed(list(row.items())))]), "r2_lin_summary", tmp_path)
    assert list(pd.read_csv(path).columns) == list(TABLES["r2_lin_summary"].columns)  # registry order on disk
    back = load_table("r2_lin_summary", tmp_path)
    assert back.loc[0, "first_token_blocks"] == "" and back.loc[0, "r2_max"] == pytest.approx(row["r2_max"], rel=1e-12)
    # floats are written to 12 significant digits (tables.FLOAT_FORMAT): the summation-order noise is not kept
    noisy = pd.DataFrame([{**row, "r2_max": 0.1 + 0.2}])  # 0.30000000000000004
    assert ",0.3," in save_table(noisy, "r2_lin_summary", tmp_path).read_text().replace("\n", ",")
    with pytest.raises(LinrecError, match="unexpected columns \\['extra'\\]"):
        save_table(pd.DataFrame([{**row, "extra": 1}]), "r2_lin_summary", tmp_path)
    with pytest.raises(LinrecError, match="missing \\['r2_min'\\]"):
        save_table(pd.DataFrame([{k: v for k, v in row.items() if k != "r2_min"}]), "r2_lin_summary", tmp_path)
    with pytest.raises(LinrecError, match="no results table"):
        load_table("nope", tmp_path)
    assert load_table("probe_summary", tmp_path) is None


def test_a_results_table_on_a_full_disk_is_one_line_naming_it_and_the_old_table_stays(tmp_path, monkeypatch):
    """Issue 60: a refused write of a results table names the table (not its temporary copy) and the fix, and
    leaves the table as it was and no temporary file."""
    import errno

    row = _claim1_row()
    path = save_table(pd.DataFrame([row]), "r2_lin_summary", tmp_path)
    before = path.read_bytes()
    real = pd.DataFrame.to_csv

    def full(self, target, *args, **kwargs):
        real(self.head(0), target, *args, **kwargs)  # the header fits, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", full)
    with pytest.raises(LinrecError) as err:
        save_table(pd.DataFrame([{**row, "r2_max": 0.5}]), "r2_lin_summary", tmp_path)
    assert str(err.value).startswith(f"No space left on device: {path}; the disk is full") and "\n" not in str(
        err.value
    )
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_block_lists_survive_the_csv_and_counts_stay_numbers(tmp_path):
    save_table(pd.DataFrame([_claim1_row() | {"first_token_blocks": "11 28"}]), "r2_lin_summary", tmp_path)
    back = load_table("r2_lin_summary", tmp_path)
    assert back.loc[0, "first_token_blocks"] == "11 28" and back.loc[0, "n_blocks"] == 10
    assert pd.api.types.is_integer_dtype(back["n_blocks"]) and pd.api.types.is_integer_dtype(back["direction_changes"])


def test_block_lists_read_back_as_blocks_one_block_and_none_included(tmp_path):
    """`outlier_blocks_every_sample` with one block came back as 2.0 and with none as nan (notebook 04 printed
    "on every sample: 2.0" and "nan")."""
    rows = [
        {"model": "a", "samples": "0 1 2", "n_samples": 3, "n_broadly_linear": "3 4 3", "n_outlier_concentrated":
         "1 1 1", "outlier_blocks": "2 | 2 | 2", "outlier_blocks_every_sample": "2", "n_claim4_passes": 3,
         "replication": "holds on every sample"},
        {"model": "b", "samples": "0 1 2", "n_samples": 3, "n_broadly_linear": "8 8 5", "n_outlier_concentrated":
         "0 0 0", "outlier_blocks": "none | none | none", "outlier_blocks_every_sample": "", "n_claim4_passes": 3,
         "replication": "holds on every sample"},
    ]  # fmt: skip
    save_table(pd.DataFrame(rows), "spectrum_replicates_summary", tmp_path)
    back = load_table("spectrum_replicates_summary", tmp_path)
    assert list(back["outlier_blocks_every_sample"]) == ["2", ""]
    assert pd.api.types.is_integer_dtype(back["n_samples"])


def test_timings_are_written_apart_so_a_rerun_with_the_same_numbers_rewrites_the_same_table(tmp_path):
    """Seconds and the cache flag go to timings/<name>.csv with the row-naming columns; the results table keeps the
    numbers only, so a rerun that is slower or faster leaves it byte for byte as it was."""
    from linrec.base.tables import load_table, load_timings

    cols = TABLES["probe_ranks"].columns
    rows = pd.DataFrame([{c: 0.25 for c in cols} | {"model": "m", "block": b, "rank": r, "probe_stop": "validation"}
                         for b in (1, 2) for r in (4, 16)])  # fmt: skip
    save_table(rows, "probe_ranks", tmp_path)
    first = (tmp_path / "probe_ranks.csv").read_bytes()
    save_table(rows.assign(seconds=[1.5, 2.5, 3.5, 4.5]), "probe_ranks", tmp_path)
    assert (tmp_path / "probe_ranks.csv").read_bytes() == first
    loaded, timings = load_table("probe_ranks", tmp_path), load_timings("probe_ranks", tmp_path)
    assert "seconds" not in loaded.columns and list(loaded.columns) == [c for c in cols if c != "seconds"]
    assert list(timings.columns) == ["model", "block", "rank", "seconds"]
    assert list(timings["seconds"]) == [1.5, 2.5, 3.5, 4.5]
    assert "seconds" not in labelled(rows).columns and "seconds" in rows.columns  # shown without, never changed
    steps = pd.DataFrame({"model": ["m"], "step": ["screening"], "seconds": [2.5], "evaluations": [3]})
    save_table(steps, "swap_timings", tmp_path)  # a table of timings goes to timings/ whole
    assert (tmp_path / "timings" / "swap_timings.csv").exists() and not (tmp_path / "swap_timings.csv").exists()
    assert load_table("swap_timings", tmp_path).equals(steps)


def test_a_swapped_sets_name_is_read_back_as_text(tmp_path):
    """`swap_windows` names each swapped set ('11', '11:ffn', '3r16', '1+3'): a make figures run stopped in notebook 09
    with "column swap holds '11:ffn', not a number", and a table of single blocks alone would come back as numbers."""
    rows = [{"model": "m", "swap": s, "window": 0, "tokens": 127, "loss_base": 3.0, "loss_swapped": 3.1}
            for s in ("3", "11:ffn", "3r16", "1+3")]  # fmt: skip
    save_table(pd.DataFrame(rows), "swap_windows", tmp_path / "mixed")
    assert load_table("swap_windows", tmp_path / "mixed")["swap"].tolist() == ["3", "11:ffn", "3r16", "1+3"]
    save_table(pd.DataFrame(rows[:1]), "swap_windows", tmp_path / "blocks")
    assert load_table("swap_windows", tmp_path / "blocks")["swap"].tolist() == ["3"]
