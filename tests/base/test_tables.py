"""linrec.base.tables: results tables written and read through the registry: round trips that refuse wrong
columns, block lists and counts that survive the CSV, timings written apart (the display labels:
tests/outputs/test_results.py); and the one read that quotes a table from this folder or another profile's that
stands in for it (`read`: its order, its staleness, its source)."""

from fnmatch import fnmatchcase
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers import ROOT, planted
from helpers import claim1_row as _claim1_row
from linrec.base import tables
from linrec.base.errors import LinrecError
from linrec.base.registry import TABLES
from linrec.base.tables import load_table, profile_folder, read, save_table, stale_tables, stand_ins
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
    from pathlib import Path

    real = Path.write_text

    def full(self, text, *args, **kwargs):
        real(self, text.splitlines()[0], *args, **kwargs)  # the header fits, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
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
    numbers only, so a rerun that is slower or faster leaves it byte for byte as it was, and its timings too: they
    record the run that wrote the numbers (issue 90), and are rewritten with them."""
    from linrec.base.tables import load_table, load_timings

    cols = TABLES["probe_ranks"].columns
    rows = pd.DataFrame([{c: 0.25 for c in cols} | {"model": "m", "block": b, "rank": r, "probe_stop": "validation"}
                         for b in (1, 2) for r in (4, 16)])  # fmt: skip
    save_table(rows.assign(seconds=[1.5, 2.5, 3.5, 4.5]), "probe_ranks", tmp_path)
    first = (tmp_path / "probe_ranks.csv").read_bytes()
    timings_first = (tmp_path / "timings" / "probe_ranks.csv").read_bytes()
    save_table(rows.assign(seconds=[9.0, 9.0, 9.0, 9.0]), "probe_ranks", tmp_path)
    assert (tmp_path / "probe_ranks.csv").read_bytes() == first
    assert (tmp_path / "timings" / "probe_ranks.csv").read_bytes() == timings_first  # the numbers' own run
    loaded, timings = load_table("probe_ranks", tmp_path), load_timings("probe_ranks", tmp_path)
    assert "seconds" not in loaded.columns and list(loaded.columns) == [c for c in cols if c != "seconds"]
    assert list(timings.columns) == ["model", "block", "rank", "seconds"]
    assert list(timings["seconds"]) == [1.5, 2.5, 3.5, 4.5]
    save_table(rows.assign(gain=0.5, seconds=[9.0, 9.0, 9.0, 9.0]), "probe_ranks", tmp_path)  # new numbers
    assert list(load_timings("probe_ranks", tmp_path)["seconds"]) == [9.0] * 4
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


# ---- a rerun rewrites a table only when a value moves beyond its precision (issue 90) ----------------------------
def _committed(name, tmp_path):
    """Committed table `name` of results/default, copied to `tmp_path` as a run would find it, and read back."""
    from linrec.base.files import project_root

    committed = project_root(__file__) / "results" / "default" / f"{name}.csv"
    (tmp_path / f"{name}.csv").write_bytes(committed.read_bytes())
    return load_table(name, tmp_path)


def _machine_noise(t, columns, size, seed=0):
    """`t` with each value of `columns` moved by up to `size` of its own precision's scale, as another machine's
    forward pass moves it (the issue's r2_lin: 0.297163242974 → 0.297163243606, 6.3e-10)."""
    rng = np.random.default_rng(seed)
    return t.assign(**{c: t[c] + rng.uniform(-size, size, len(t)) for c in columns})


def test_a_rerun_within_the_stated_precision_leaves_the_stored_table_untouched_and_carries_its_numbers(tmp_path):
    """Issue 90, item 1: notebook 02 rerun on another machine left r2_lin, r2_lin_summary and r2_moves modified in
    the 9th–10th digit. A table computed within its columns' precision (R²: R2_PRECISION) is not written at all (the
    file's bytes and mtime stay), and the frame the study carries on with holds the stored numbers, so a figure
    drawn next is drawn from what the file says. Planted: `save_table` always rewriting (`agrees` returning False)
    fails the mtime assert; `_hold` left out fails the carried numbers."""
    import os

    from linrec.base.tables import R2_PRECISION

    stored = _committed("r2_lin", tmp_path)
    path = tmp_path / "r2_lin.csv"
    before, stamp = path.read_bytes(), path.stat().st_mtime_ns
    os.utime(path, ns=(stamp - 10**9, stamp - 10**9))  # a rewrite within the clock's resolution still shows
    stamp = path.stat().st_mtime_ns
    r2 = ["r2_lin", "r2_lo", "r2_hi", "r2_train", "r2_ex_first", "r2_ex_first_lo", "r2_ex_first_hi"]
    rerun = _machine_noise(stored, r2, R2_PRECISION / 2)
    assert not np.array_equal(rerun["r2_lin"], stored["r2_lin"])
    save_table(rerun, "r2_lin", tmp_path)
    assert path.read_bytes() == before and path.stat().st_mtime_ns == stamp
    assert np.array_equal(rerun["r2_lin"].to_numpy(), stored["r2_lin"].to_numpy())  # carries the stored numbers


def test_a_real_change_rewrites_the_table(tmp_path):
    """An R² moved by 1e-3 (beyond its precision) rewrites the table, so `git status` shows it, and a ΔPPL moved by
    0.02 (beyond its 1e-3, which covers the 7.4e-4 two machines' float32 forwards differ by); so
    does a value moved just beyond its precision, a new row, and a changed word. Planted: `agrees` returning True
    (never rewriting) fails every assert here."""
    from linrec.base.tables import PPL_PRECISION, R2_PRECISION

    stored = _committed("r2_lin", tmp_path)
    path = tmp_path / "r2_lin.csv"
    moved = stored.copy()
    moved.loc[3, "r2_lin"] += 1e-3
    save_table(moved, "r2_lin", tmp_path)
    assert load_table("r2_lin", tmp_path).loc[3, "r2_lin"] == pytest.approx(stored.loc[3, "r2_lin"] + 1e-3, abs=1e-12)
    moved.loc[5, "r2_hi"] += 3 * R2_PRECISION  # just beyond
    save_table(moved.copy(), "r2_lin", tmp_path)
    assert load_table("r2_lin", tmp_path).loc[5, "r2_hi"] == pytest.approx(moved.loc[5, "r2_hi"], abs=1e-12)
    save_table(moved.assign(corpus="code"), "r2_lin", tmp_path)
    assert set(load_table("r2_lin", tmp_path)["corpus"]) == {"code"}
    save_table(moved.head(4), "r2_lin", tmp_path)
    assert len(load_table("r2_lin", tmp_path)) == 4 and path.exists()
    swap = _committed("swap", tmp_path)  # ΔPPL: within its precision kept, 0.02 rewritten
    before = (tmp_path / "swap.csv").read_bytes()
    save_table(_machine_noise(swap, ["delta_ppl", "ppl_swapped"], PPL_PRECISION / 2).assign(seconds=1.0), "swap",
               tmp_path)  # fmt: skip
    assert (tmp_path / "swap.csv").read_bytes() == before
    swap.loc[0, "delta_ppl"] += 2e-2
    save_table(swap.assign(seconds=1.0), "swap", tmp_path)
    assert (tmp_path / "swap.csv").read_bytes() != before


def test_every_float_column_has_a_stated_precision_and_the_rules_read_as_documented():
    """The precision of each column is one of PRECISION's rules, and docs/numerics.md states the three numbers."""
    from linrec.base.files import project_root
    from linrec.base.tables import FIT_PRECISION, PPL_PRECISION, R2_PRECISION, precision

    assert precision("r2_lin").atol == R2_PRECISION and precision("delta_ppl").atol == PPL_PRECISION
    assert precision("gain").atol == FIT_PRECISION and precision("cond_gram").rtol == 1e-4
    assert precision("r2_trained_adam").atol == FIT_PRECISION and precision("ppl_base").atol == PPL_PRECISION
    doc = (project_root(__file__) / "docs" / "numerics.md").read_text()
    assert all(f"{v:g}" in doc for v in (R2_PRECISION, PPL_PRECISION, FIT_PRECISION))


# ---- one read of a table, from this folder or a declared stand-in -------------------------------------------------
def _replicates(folder, sd: float) -> None:
    """A one-row `r2_replicates_summary` (stood in for by params/full.yaml's run) in `folder`, its SD `sd`."""
    save_table(planted("r2_replicates_summary", model="m", samples="0 1", replication="holds", sd_median=sd),
               "r2_replicates_summary", folder)  # fmt: skip


def _older(folder, name: str = "r2_lin") -> None:
    """Table `name` in `folder` as an older linrec wrote it: one registered column missing."""
    folder.mkdir(parents=True, exist_ok=True)
    planted(name).iloc[:, :-1].to_csv(folder / f"{name}.csv", index=False)


def test_a_table_is_read_here_else_from_the_first_declared_stand_in_that_holds_it(tmp_path, monkeypatch):
    """This folder's own table first (source: this folder); absent here, the declared stand-ins in their order
    (`STAND_INS`, planted here with two), the first that holds it; nothing found: no table and no source. Guards the
    order reversed and another profile's table read where this folder has its own."""
    monkeypatch.setitem(tables.STAND_INS, "r2_replicates_summary", ("full", "paper"))
    here, full, paper = tmp_path / "default", tmp_path / "full", tmp_path / "paper"
    nothing = read("r2_replicates_summary", here)
    assert nothing.table is None and nothing.source.folder is None and nothing.source.profile is None
    assert nothing.source.among == ("full", "paper") and nothing.source.other == "full"
    _replicates(paper, 0.3)
    q = read("r2_replicates_summary", here)
    assert (q.source.folder, q.source.profile, q.table["sd_median"].iloc[0]) == (paper, "paper", 0.3)
    _replicates(full, 0.2)
    q = read("r2_replicates_summary", here)
    assert (q.source.folder, q.source.profile, q.table["sd_median"].iloc[0]) == (full, "full", 0.2)  # the first
    _replicates(here, 0.1)
    q = read("r2_replicates_summary", here)
    assert (q.source.folder, q.source.profile, q.table["sd_median"].iloc[0]) == (here, None, 0.1)  # its own, before any
    assert read("r2_replicates_summary", here, own=False).source.profile == "full"  # only the stand-ins
    assert read("r2_replicates_summary", here, ("paper",), own=False).source.profile == "paper"  # named ones
    assert read("r2_replicates_summary", full, own=False).source.profile == "paper"  # never itself as another profile


def test_a_stand_ins_run_written_by_an_older_linrec_is_skipped_and_named(tmp_path, monkeypatch):
    """A stand-in folder where any table of the same notebook lacks today's columns is not read at all (its run is
    quoted whole or not at all) and is named with those tables; the next stand-in is read. A table of this folder an
    older linrec wrote is left out (and listed for the caller), and the stand-ins are asked. Guards a stale table
    read as valid and a stale run passed over without a word."""
    monkeypatch.setitem(tables.STAND_INS, "r2_replicates_summary", ("full", "paper"))
    here, full, paper = tmp_path / "default", tmp_path / "full", tmp_path / "paper"
    _replicates(full, 0.2)
    _replicates(paper, 0.3)
    _older(full)  # notebook 02's r2_lin beside full's current replication table
    memo = {}
    q = read("r2_replicates_summary", here, memo=memo)
    assert (q.source.profile, q.source.stale, q.table["sd_median"].iloc[0]) == ("paper", {"full": ("r2_lin",)}, 0.3)
    assert memo == {(full.resolve(), "02"): ("r2_lin",), (paper.resolve(), "02"): ()}  # each run checked once
    _older(paper, "r2_replicates_summary")
    q = read("r2_replicates_summary", here)
    assert q.table is None and q.source.folder is None
    assert q.source.stale == {"full": ("r2_lin",), "paper": ("r2_replicates_summary",)}
    assert stale_tables(paper, "02") == ["r2_replicates_summary"] and stale_tables(here, "02") == []
    _older(here, "r2_replicates_summary")
    _replicates(full, 0.2)
    (full / "r2_lin.csv").unlink()
    left_out = {}
    q = read("r2_replicates_summary", here, left_out=left_out)
    assert q.source.left_out and left_out == {"r2_replicates_summary": "02"} and q.source.profile == "full"


def test_a_stand_in_that_measured_something_else_is_named_not_read(tmp_path):
    """`applies` (the notebooks': `linrec.app.profile.results`) says why a stand-in's run does not apply here; it is
    skipped with that reason, before its folder is looked at."""
    here = tmp_path / "default"
    _replicates(tmp_path / "full", 0.2)
    q = read("r2_replicates_summary", here, applies=lambda other: "corpus 'wiki', not this run's 'code'")
    assert q.table is None and q.source.differs == {"full": "corpus 'wiki', not this run's 'code'"}
    assert q.source.other == "full"
    assert read("r2_replicates_summary", here, applies=lambda other: None).source.profile == "full"


def test_a_runs_other_tables_are_read_from_the_folder_the_first_came_from(tmp_path):
    """`also`: the same folder, by the same rules: this folder's own alone where the first was its own, the same
    stand-in's where it stood in (the seeds experiment's verdict with its comparisons, never one from each)."""
    here, training = tmp_path / "default", tmp_path / "training"
    save_table(planted("training_comparisons"), "training_comparisons", training)
    save_table(planted("training_verdict", word="there"), "training_verdict", training)
    q = read("training_comparisons", here)
    assert q.source.profile == "training" and q.also("training_verdict").table["word"].iloc[0] == "there"
    assert q.also("training_runs").table is None
    save_table(planted("training_comparisons"), "training_comparisons", here)
    q = read("training_comparisons", here)
    assert q.source.profile is None and q.also("training_verdict").table is None  # not training's beside this one's
    assert read("zoo_runs", here).also("zoo_blocks") == (None, tables.Source("zoo_blocks"))


def test_the_stand_ins_are_declared_once_for_registered_tables_and_found_in_the_checkout():
    """Every pattern of `STAND_INS` names registered tables; a table matches one entry at most; another profile's
    folder is `results/<profile>` of the checkout a folder lies in, else the folder beside it."""
    for pattern in tables.STAND_INS:
        assert any(fnmatchcase(name, pattern) for name in TABLES), pattern
    for name in TABLES:
        assert sum(fnmatchcase(name, p) for p in tables.STAND_INS) <= 1, name
    assert stand_ins("zoo_runs") == ("zoo",) and stand_ins("r2_curve_overview") == ("curve",)
    assert stand_ins("r2_lin") == ()
    assert profile_folder(ROOT / "results" / "default", "full") == ROOT / "results" / "full"
    assert profile_folder(ROOT / "somewhere" / "scratch", "full") == ROOT / "results" / "full"
    assert profile_folder(Path("/nowhere/results/smoke"), "zoo") == Path("/nowhere/results/zoo")
