"""Notebook 01's study, `linrec.studies.capture`: `run` writes the `capture` table, one row per model of the profile
read from each capture it makes or finds, and uses a model already loaded instead of loading it again;
`site_table` lists where each block's FFN is."""

from pathlib import Path

import numpy as np
import pytest
import yaml

from helpers import capture_with
from linrec.app.profile import load_profile
from linrec.inputs.models import load_model
from linrec.inputs.sites import find_ffn_sites
from linrec.studies import capture

CAPTURE = {"seq_len": 32, "tokens": 2048, "sample_rows": 100}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """Two tiny models saved to disk (a llama and a GPT-2) and a local text; `profile(**values)` what notebook 01
    binds, with its results in a fresh folder."""
    from helpers import save_tiny_model, tiny_text

    tmp = tmp_path_factory.mktemp("capture")
    models = [save_tiny_model(tmp / "llama"), save_tiny_model(tmp / "gpt2", kind="gpt2")]
    corpus = tmp / "text.txt"
    corpus.write_text(tiny_text(8000, 0))
    runs = iter(range(100))

    def profile(**values):
        d = tmp / f"run{next(runs)}"
        given = {"models": models, "corpus": str(corpus), "capture": CAPTURE, "results_dir": str(d / "results"),
                 "figures_dir": str(d / "figures"), "seed": 0, **values}  # fmt: skip
        d.mkdir()
        (d / "p.yaml").write_text(yaml.safe_dump(given))
        return load_profile(d / "p.yaml").notebook("01")

    profile.models = models
    return profile


def test_run_writes_one_row_per_model_from_its_capture(setup):
    p = setup()
    result = capture.run(p)
    results = Path(p.results_dir)
    assert sorted(f.name for f in results.glob("*.csv")) == ["capture.csv", "window_icc.csv"]
    assert (results / "timings" / "capture.csv").exists()  # seconds and the cache flag, apart from the numbers
    table = result.capture
    assert list(table["model"]) == p.models  # as the profile names them, in its order
    assert not table["from_cache"].any()  # both computed here
    for row, name, blocks, width in zip(table.to_dict("records"), p.models, (2, 2), (32, 32)):
        c = capture_with(name, p.corpus, seed=0, **CAPTURE)  # the cached entry run made
        assert c.cached and capture.capture_row(name, c) == {**row, "from_cache": True}
        assert (row["n_blocks"], row["d_model"]) == (blocks, width)  # the tiny models' 2 blocks of width 32
        assert (row["n_train_rows"], row["n_test_rows"]) == (c.stats["train"][0].n, c.stats["test"][0].n)
        assert row["n_train_rows"] + row["n_test_rows"] == row["tokens"] == CAPTURE["tokens"]
    again = capture.run(p)
    assert again.capture["from_cache"].all()
    assert again.capture.drop(columns=["seconds", "from_cache"]).equals(table.drop(columns=["seconds", "from_cache"]))


def test_the_window_icc_table_reads_the_held_out_residuals_of_each_blocks_map(setup):
    """`window_icc_table` on a capture that stored every row (sample_rows ≥ tokens): each block's map equals
    `np.linalg.lstsq` with an intercept on the stored train rows, and the table's residual and input ICCs are
    `window_icc` of that lstsq map's residuals and of the inputs on the stored held-out rows, grouped by their window
    (so it reads the held-out split, the right windows and the block's own map); a capture without rows gives None.
    Planted: reading the train rows, or grouping by position instead of window, fails."""
    from linrec.stats.heldout import window_icc

    name = setup.models[0]
    c = capture_with(name, setup(models=[name]).corpus, seed=0, seq_len=32, tokens=2048, sample_rows=2048)
    table = capture.window_icc_table(name, c)
    index = c.row_index()
    test = index[:, 2] == 1
    assert list(table["block"]) == [0, 1] and (table["n_windows"] == len(np.unique(index[test, 0]))).all()
    for row in table.to_dict("records"):
        x, y = (np.asarray(a, dtype=np.float64) for a in c.rows(row["block"]))
        ones = np.ones((len(x), 1))
        coef = np.linalg.lstsq(np.hstack([x, ones])[~test], y[~test], rcond=None)[0]
        resid = y[test] - np.hstack([x, ones])[test] @ coef
        assert row["n_rows"] == test.sum() and 0 <= row["resid_icc"] < 1
        assert row["resid_icc"] == pytest.approx(window_icc(resid, index[test, 0]), rel=1e-6, abs=1e-9)
        assert row["input_icc"] == pytest.approx(window_icc(x[test], index[test, 0]), rel=1e-9)
    assert capture.window_icc_table(name, capture_with(name, setup(models=[name]).corpus, seed=0, seq_len=32,
                                                       tokens=2048, sample_rows=0)) is None  # fmt: skip


def test_a_loaded_model_is_used_not_loaded_again(setup, monkeypatch):
    p = setup(models=setup.models[:1], seed=1)  # settings no capture was made with: it must run the model
    loaded = load_model(p.models[0])

    def refuse(*args, **kwargs):
        raise AssertionError("the model was loaded again")

    monkeypatch.setattr("linrec.collect.capture.load_model", refuse)
    result = capture.run(p, loaded=loaded)
    assert not result.capture["from_cache"].any() and result.captures[0].n_blocks == 2


def test_the_site_table_names_each_blocks_mlp(setup):
    loaded = load_model(setup.models[0])
    sites = find_ffn_sites(loaded.model)
    table = capture.site_table(sites)
    assert list(table["block"]) == [0, 1]
    for block, path, kind in table.itertuples(index=False):
        mlp = loaded.model.model.layers[block].mlp  # the llama's own MLP module of that block
        assert loaded.model.get_submodule(path) is mlp and kind == type(mlp).__name__
