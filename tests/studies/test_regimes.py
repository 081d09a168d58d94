"""Notebook 04's study (linrec.studies.regimes) on a tiny five-block model: it writes exactly claim 4's tables, each
byte for byte what the analysis and claim functions write when called directly, its R²_lin numpy's least squares on
the stored rows; a profile without replicate samples writes no replication tables; the views the notebook shows
(the blocks where regimes meet, the anatomies) pick the blocks a planted table says; the toy table and the
replication's sentences."""

from __future__ import annotations

import dataclasses
import filecmp

import numpy as np
import pandas as pd

from helpers import capture_with
from linrec.analyses.spectrum import (
    REGIMES,
    block_anatomy,
    block_spectrum,
    input_side,
    regime_replication,
    regime_summary,
    spectrum_table,
    toy_blocks,
    toy_table,
)
from linrec.base.tables import save_table
from linrec.claims.regimes import claim4_holds
from linrec.collect.config import capture_settings
from linrec.studies import regimes as study

TABLES = {"spectrum", "spectrum_summary", "spectrum_inputs", "spectrum_replicates", "spectrum_replicates_summary"}


def written(results_dir) -> set[str]:
    return {p.stem for p in results_dir.glob("*.csv")}


def reference_tables(p) -> dict[str, pd.DataFrame]:
    """Claim 4's tables as notebook 04 built them before its study existed, from the functions themselves."""
    settings = {**capture_settings(p.capture), "seed": p.seed, "batch_size": p.batch_size, "device": p.device}
    cap = capture_with(p.models[0], p.corpus, **{**settings, "sample_rows": 0})
    fresh = capture_with(p.models[0], p.corpus, **{**settings, "sample_rows": 0, "sample": p.replicate_samples[0]})
    spectrum = spectrum_table(cap)
    reps = pd.concat([spectrum.assign(sample=0), spectrum_table(fresh).assign(sample=1)], ignore_index=True)
    return {
        "spectrum": spectrum,
        "spectrum_summary": regime_summary(spectrum, REGIMES),
        "spectrum_inputs": input_side(spectrum),
        "spectrum_replicates": reps[["sample", *study.REPLICATE_COLUMNS]],
        "spectrum_replicates_summary": regime_replication(reps, REGIMES, claim4_holds),
    }


def test_run_writes_every_table_of_notebook_04_as_its_functions_make_it(study_profile, tmp_path):
    p = study_profile()
    result = study.run(p)
    out = tmp_path / "results"
    assert written(out) == TABLES
    ref = tmp_path / "reference"
    for name, table in reference_tables(p).items():
        save_table(table, name, ref)
        assert filecmp.cmp(out / f"{name}.csv", ref / f"{name}.csv", shallow=False), f"{name}.csv differs"
        pd.testing.assert_frame_equal(result.tables()[name], table)
    assert set(result.spectrum_replicates["sample"]) == {0, 1}
    # each block's R²_lin is the least-squares map's held-out R² on its rows (numpy, float64, all rows stored)
    rows = capture_with(p.models[0], p.corpus, seed=p.seed, **capture_settings(p.capture))
    for b in range(rows.n_blocks):
        (xtr, ytr), (xte, yte) = rows.rows(b, "train"), rows.rows(b, "test")
        coef = np.linalg.lstsq(np.c_[xtr, np.ones(len(xtr))].astype(np.float64), ytr.astype(np.float64), rcond=None)[0]
        resid = yte - np.c_[xte, np.ones(len(xte))] @ coef
        r2 = 1 - (resid**2).sum() / ((yte - yte.astype(np.float64).mean(0)) ** 2).sum()
        assert abs(result.spectrum.loc[b, "r2_lin"] - r2) < 1e-5, b


def test_a_profile_without_replicate_samples_writes_no_replication(study_profile, tmp_path):
    result = study.run(study_profile(replicate_samples=[]))
    assert result.spectrum_replicates is None and result.spectrum_replicates_summary is None
    assert written(tmp_path / "results") == {"spectrum", "spectrum_summary", "spectrum_inputs"}


def test_overlaps_lists_the_blocks_where_regimes_meet_and_no_other():
    planted = pd.DataFrame(
        {
            "block": range(7),
            "regime": [
                "broadly linear",
                "broadly linear",
                "broadly linear",
                "outlier-concentrated",
                "first-token-concentrated",
                "unclassified",
                "nonlinear",
            ],  # fmt: skip
            "top1_var_share": [0.1, 0.5, 0.1, 0.1, 0.1, 0.1, 0.49],
            "first_var_share": [0.1, 0.1, 0.2, 0.1, 0.1, 0.1, 0.19],
        }
    )
    for c in study.OVERLAP_COLUMNS:
        if c not in planted:
            planted[c] = 0.0
    result = study.RegimesResult(planted, None, None, None, None, [])
    got = result.overlaps()
    assert list(got["block"]) == [1, 2, 3, 4, 5]  # at the top-1 and first-position thresholds, or concentrated
    assert list(got.columns) == study.OVERLAP_COLUMNS


def test_the_anatomies_are_the_toys_the_outlier_blocks_and_each_models_most_linear_block(study_profile):
    p = study_profile(replicate_samples=[])
    result = study.run(p)
    t = result.spectrum.copy()
    model = t["model"].iloc[0]
    t["regime"] = ["broadly linear", "outlier-concentrated", "broadly linear", "nonlinear", "broadly linear"]
    t["r2_lin"] = [0.7, 0.9, 0.95, 0.99, 0.8]  # the most linear broadly linear block is 2, not 3 (nonlinear here)
    planted = dataclasses.replace(result, spectrum=t)
    toys = toy_blocks(seed=0)
    got = planted.anatomies(toys)
    assert list(got) == [f"toy: {name}" for name in toys] + [
        f"{model} block 1: outlier-concentrated",
        f"{model} block 2: broadly linear",
    ]
    cap = result.captures[0]
    want = block_anatomy(cap.stats["train"][2], cap.stats["test"][2], cap.fit(2))
    assert all(np.array_equal(got[f"{model} block 2: broadly linear"][k], v) for k, v in want.items())


def test_the_toy_table_is_each_toys_spectrum_under_its_name():
    toys = toy_blocks(seed=3)
    table = toy_table(toys)
    assert list(table["block"]) == ["toy: broadly linear", "toy: outlier-concentrated"]
    assert list(table["regime"]) == ["broadly linear", "outlier-concentrated"]  # each is the regime it was built as
    train, test = toys["outlier-concentrated"]
    want = pd.DataFrame([block_spectrum(train, test, block="toy: outlier-concentrated")])
    pd.testing.assert_frame_equal(table.iloc[[1]].reset_index(drop=True), want)
