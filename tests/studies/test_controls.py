"""linrec.studies.controls: notebook 07's study writes exactly its tables, each the table the analysis functions give
when called one by one, and leaves cross feeding's tables unwritten where the profile switches it off."""

from pathlib import Path

import pandas as pd
import pytest

from helpers import capture_with
from linrec.analyses.controls import (
    cross_feed_pairs,
    input_control_summary,
    input_controls,
    learned_summary,
    random_init_summary,
    twin_pairs,
)
from linrec.analyses.decomposition import (
    NullDraws,
    band_table,
    band_windows,
    decomposition,
    inputs_or_weights,
    null_blocks,
)
from linrec.analyses.recoverability import ceiling_table
from linrec.app.profile import load_profile
from linrec.base.registry import TABLES
from linrec.base.tables import load_table, result_columns
from linrec.collect.config import CaptureConfig
from linrec.inputs.models import load_model, random_init_spec
from linrec.studies import controls as study

CAPTURE = {"seq_len": 32, "tokens": 3200, "sample_rows": 2000}
# the row budgets differ, so a control fed another's budget shows in its numbers
ROWS = {"control_rows": 300, "decomposition_rows": 500}


def _profile(model_dir: str, corpus: str, results: Path, **overrides):
    """The smoke profile on a tiny llama and a tiny local text: two init seeds (the fewest with a spread)."""
    values = dict(models=[model_dir], encoder_models=[], corpus=corpus, capture=CAPTURE, init_seeds=[0, 1], **ROWS,
                  null_draws=2, cross_band=1, cross_feeding=True, cross_pairs=None, n_boot=50,
                  results_dir=str(results))  # fmt: skip
    return load_profile("smoke", {**values, **overrides}).notebook("07")


@pytest.fixture
def setup(tiny_model_dir, tiny_corpus, tmp_path):
    return tiny_model_dir, tiny_corpus(8000), tmp_path


def _written(results: Path) -> set[str]:
    return {p.stem for p in results.glob("*.csv")}


def _same(got: pd.DataFrame, want: pd.DataFrame, rtol: float = 1e-11):
    """Equal tables; `rtol` 1e-10 for a table read back from its file (floats written to 12 significant digits, so a
    float 1.0 reads back as the whole number 1: dtypes are compared only in memory). In memory 1e-11: a written table
    holds the numbers its file holds (`save_table`, issue 90), the function called directly its own."""
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True), check_exact=False,
                                  rtol=rtol, atol=1e-12, check_dtype=rtol < 1e-10)  # fmt: skip


def test_run_writes_every_table_each_equal_to_the_analysis_called_directly(setup):
    model_dir, corpus, tmp = setup
    p = _profile(model_dir, corpus, tmp / "results")
    result = study.run(p)

    ours = {n for n, spec in TABLES.items() if spec.notebook == "07"}
    assert _written(tmp / "results") == ours == set(result.tables())
    for name, table in result.tables().items():  # each file holds its own table, nothing else's
        _same(load_table(name, tmp / "results"), table[list(result_columns(name))], rtol=1e-10)

    kw = dict(corpus=corpus, seed=p.seed, **{k: v for k, v in CAPTURE.items() if k != "sample_rows"}, progress=False)
    trained = capture_with(model_dir, sample_rows=CAPTURE["sample_rows"], **kw)
    init0 = capture_with(random_init_spec(model_dir, 0), sample_rows=ROWS["control_rows"], **kw)
    init1 = capture_with(random_init_spec(model_dir, 1), sample_rows=0, **kw)
    profiles = pd.concat([ceiling_table(trained).assign(model=model_dir, weights="trained"),
                          ceiling_table(init0).assign(model=model_dir, weights="random init, seed 0"),
                          ceiling_table(init1).assign(model=model_dir, weights="random init, seed 1")],
                         ignore_index=True)  # fmt: skip
    _same(result.controls_random_init, profiles)
    init_summary = random_init_summary(profiles, [0, 1])
    _same(result.controls_random_init_summary, init_summary)
    assert init_summary["mean_abs_init_seeds"].notna().all()  # two draws: a spread between untrained draws

    loaded = load_model(model_dir)
    inputs = input_controls(trained, loaded, n_rows=ROWS["control_rows"], seed=p.seed, progress=False)
    _same(result.controls_inputs, inputs)
    _same(result.controls_inputs_summary, input_control_summary(inputs))

    captures = {model_dir: trained, random_init_spec(model_dir, 0): init0}
    cross, cross_summary = cross_feed_pairs(twin_pairs([model_dir], 0), captures, {model_dir: loaded},
                                            CaptureConfig(model_dir, **{k: v for k, v in kw.items() if k != "progress"},
                                                          sample_rows=CAPTURE["sample_rows"]),
                                            n_rows=ROWS["control_rows"], seed=p.seed)  # fmt: skip
    _same(result.controls_cross_feed, cross)
    _same(result.controls_cross_feed_summary, cross_summary)

    iow = inputs_or_weights(trained, loaded, NullDraws(2, 2), band=1, n_rows=ROWS["decomposition_rows"], seed=p.seed,
                            progress=False)  # fmt: skip
    _same(result.controls_weight_nulls, iow.nulls)
    _same(result.controls_cross_matrix, iow.matrix)
    blocks = null_blocks(iow.nulls)
    _same(result.controls_null_blocks, blocks)
    row = result.controls_decomposition.iloc[0]
    assert row["n_blocks"] == trained.n_blocks and row["n_standout"] == blocks["stands_out"].sum()
    shares = decomposition(iow, n_boot=50, seed=p.seed)
    assert row["share_weights"] == pytest.approx(shares["share_weights"], abs=1e-12)
    assert row["share_weights_lo"] == pytest.approx(shares["share_weights_lo"], abs=1e-12)
    learned = learned_summary(init_summary, blocks)
    _same(result.controls_learned, learned)
    bands = result.controls_decomposition_bands  # every band, each with its own window bootstrap
    _same(bands, band_table(result.controls_decomposition, iow.matrix, band_windows(iow, n_boot=50, seed=p.seed)))
    assert list(bands["band"]) == list(bands["windows_band"]) == [1]
    assert bands.iloc[0]["se_windows"] == pytest.approx(
        (shares["share_weights_minus_inputs_hi"] - shares["share_weights_minus_inputs_lo"]) / (2 * 1.959964)
    )

    assert len(result.controls_cross_feed_summary)  # the cross-feeding summary notebook 07's findings word


def test_cross_feeding_switched_off_writes_neither_of_its_tables(setup):
    model_dir, corpus, tmp = setup
    result = study.run(_profile(model_dir, corpus, tmp / "results", cross_feeding=False))
    assert result.controls_cross_feed is None and result.controls_cross_feed_summary is None
    ours = {n for n, spec in TABLES.items() if spec.notebook == "07"}
    assert _written(tmp / "results") == ours - {"controls_cross_feed", "controls_cross_feed_summary"}


def test_the_twins_are_captured_on_at_most_twin_tokens_and_the_models_on_their_own(setup):
    """`twin_tokens` caps the random-init twins' captures (the default profile's time budget), never the trained
    model's, and never raises a twin above the model's own tokens. Guards the cap applied to the trained capture
    (planted: its tokens 1,600) and ignored (planted: the twins' 3,200)."""
    model_dir, corpus, tmp = setup
    caps = study.captures(_profile(model_dir, corpus, tmp, twin_tokens=1600))
    assert caps.trained[model_dir].config.tokens == CAPTURE["tokens"]
    assert {c.config.tokens for c in caps.inits.values()} == {1600} and len(caps.inits) == 2
    assert study.twin_config(_profile(model_dir, corpus, tmp, twin_tokens=None), model_dir, 0).tokens == 3200
    assert study.twin_config(_profile(model_dir, corpus, tmp, twin_tokens=10**6), model_dir, 0).tokens == 3200
