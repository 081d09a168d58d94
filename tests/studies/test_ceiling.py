"""Notebook 02's study, `linrec.studies.ceiling.run`, on a tiny llama and a local text: it writes exactly the tables
the profile switches on, each byte for byte what the analysis functions write when called directly, and it puts
claim 1's rule on the profile the profile names."""

import filecmp
from pathlib import Path

import pandas as pd
import pytest
import yaml

from helpers import capture_with
from linrec.analyses.large_n import CURVE_N_BOOT, curve_overview, curve_summary, curve_table, with_profile
from linrec.analyses.profile import move_tests, profile_summary, replication_summary
from linrec.analyses.recoverability import ceiling_table, profile_replicates
from linrec.app.profile import load_profile
from linrec.base.errors import LinrecError
from linrec.base.tables import save_table, table_path
from linrec.claims.profile import claim1_holds
from linrec.collect.curves import CurveConfig, get_curve
from linrec.studies import ceiling

CAPTURE = {"seq_len": 32, "tokens": 2048, "sample_rows": 0}
CURVE = {"curve_train_tokens": [512, 1024, 1536], "curve_test_tokens": 512, "curve_seeds": 2}
ALWAYS = {"r2_lin", "r2_moves", "r2_lin_summary"}
CURVE_TABLES = {"r2_curve", "r2_curve_runs", "r2_curve_overview", "r2_lin_summary_other", "curve_split"}
REPLICATES = {"r2_replicates", "r2_replicates_summary"}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """A tiny llama of 8 blocks (enough for some adjacent blocks' intervals to part, so claim 1's rule has moves to
    test) saved to disk, and a local text long enough for two disjoint samples; `profile(**values)` the values
    notebook 02 binds (`load_profile(...).notebook("02")`) with its results in a fresh folder."""
    import torch
    import transformers

    from helpers import VOCAB, _randomise, tiny_text, tiny_tokenizer

    tmp = tmp_path_factory.mktemp("ceiling")
    widths = dict(hidden_size=32, intermediate_size=64, num_attention_heads=2, num_key_value_heads=1)
    config = transformers.LlamaConfig(vocab_size=VOCAB, num_hidden_layers=8, max_position_embeddings=64, **widths)
    torch.manual_seed(0)
    llama = transformers.LlamaForCausalLM(config)
    _randomise(llama)
    model = str(tmp / "model")
    llama.eval().save_pretrained(model)
    tiny_tokenizer().save_pretrained(model)
    corpus = tmp / "text.txt"
    corpus.write_text(tiny_text(40_000, 0))
    runs = iter(range(100))

    def profile(**values):
        d = tmp / f"run{next(runs)}"
        given = {"models": [model], "corpus": str(corpus), "capture": CAPTURE, "results_dir": str(d / "results"),
                 "figures_dir": str(d / "figures"), "seed": 0, **values}  # fmt: skip
        d.mkdir()
        (d / "p.yaml").write_text(yaml.safe_dump(given))
        return load_profile(d / "p.yaml").notebook("02")

    return profile


def _written(p) -> set[str]:
    return {f.stem for f in Path(p.results_dir).glob("*.csv")}


def _same_as_written(p, tables: dict[str, pd.DataFrame], tmp_path) -> None:
    """Each table, written through the registry into a folder of its own, is byte-identical to the study's file."""
    for name, table in tables.items():
        save_table(table, name, tmp_path)
        assert filecmp.cmp(tmp_path / f"{name}.csv", Path(p.results_dir) / f"{name}.csv", shallow=False), name


def _direct(p):
    """The analysis functions called directly on the one model: its `r2_lin` table, its moves tested on all positions
    and without the first, and its learning curve."""
    cap = capture_with(p.models[0], p.corpus, seed=0, **CAPTURE)
    r2 = ceiling_table(cap)
    moves = [move_tests(r2, profile_replicates(cap, rest=rest)[1], pos) for pos, rest in (("all", 0), ("ex_first", 1))]
    curve = get_curve(CurveConfig(p.models[0], p.corpus, 32, CURVE["curve_train_tokens"], 512, range(2)))
    return r2, pd.concat(moves, ignore_index=True), curve


def test_every_part_on_writes_every_table_as_the_analyses_compute_it(setup, tmp_path):
    p = setup(replicate_samples=[1], **CURVE)
    result = ceiling.run(p)
    # the tiny capture's train rows are none of the curve's sizes: nothing to compare (`large_n.curve_split`: None)
    assert result.curve_split is None
    assert _written(p) == ALWAYS | CURVE_TABLES - {"curve_split"} | REPLICATES
    assert set(result.tables()) == ALWAYS | CURVE_TABLES - {"curve_split"} | REPLICATES

    r2, moves, curve = _direct(p)
    summary = curve_summary(curve, n_boot=CURVE_N_BOOT, seed=0)
    sample = capture_with(p.models[0], p.corpus, seed=0, **CAPTURE, sample=1)
    reps = pd.concat([r2.assign(sample=0), ceiling_table(sample).assign(sample=1)], ignore_index=True)
    expected = {
        "r2_lin": r2,
        "r2_moves": moves,
        "r2_lin_summary": profile_summary(r2, moves),  # the capture's profile, with its move tests
        "r2_lin_summary_other": profile_summary(with_profile(r2, summary), None),  # the curve's, without
        "r2_curve": summary,
        "r2_curve_runs": curve_table(curve),
        # no 16,384 among the sizes: the reference is the middle one
        "r2_curve_overview": curve_overview(summary, ref_tokens=1024),
        "r2_replicates": reps,
        "r2_replicates_summary": replication_summary(reps, claim1_holds),
    }
    _same_as_written(p, expected, tmp_path)
    assert result.ref_tokens == 1024
    assert result.shown is result.r2_lin  # the capture's profile is what Figure 2 and claim 1 read
    assert len(moves) > 0  # the rule has moves to count, on all positions and without the first
    counts = result.move_counts()
    assert list(counts.index) == [(p.models[0], "all"), (p.models[0], "ex_first")]
    for positions, row in counts.droplevel("model").iterrows():
        tested = moves[moves["positions"] == positions]
        assert row["tested"] == len(tested) and row["counted"] == tested["counts"].sum()
    assert result.summaries()["profile_tokens"].nunique() == 2  # this profile's summary, then the other one's


def test_a_part_switched_off_is_not_written(setup):
    p = setup(curve_train_tokens=[], replicate_samples=[])
    results = Path(p.results_dir)
    results.mkdir(parents=True, exist_ok=True)
    for name in CURVE_TABLES | REPLICATES:  # an earlier run's, with those parts on: not to be read as this run's
        table_path(name, results).write_text("stale\n")
    result = ceiling.run(p)
    assert _written(p) == ALWAYS
    assert all(getattr(result, name) is None for name in CURVE_TABLES | REPLICATES)
    assert result.summaries().equals(result.r2_lin_summary)


def test_the_curve_profile_puts_the_rule_on_the_largest_train_size(setup, tmp_path):
    p = setup(profile="curve", replicate_samples=[], **CURVE)
    result = ceiling.run(p)
    r2, moves, curve = _direct(p)
    summary = curve_summary(curve, n_boot=CURVE_N_BOOT, seed=0)
    _same_as_written(p, {"r2_lin_summary": profile_summary(with_profile(r2, summary), None),
                         "r2_lin_summary_other": profile_summary(r2, moves)}, tmp_path)  # fmt: skip
    assert result.shown["profile_tokens"].eq(1536).all()  # Figure 2 shows the curve at its largest size


def test_a_curve_profile_without_a_curve_is_one_line_naming_the_fix(setup):
    p = setup(profile="curve", curve_train_tokens=[])
    with pytest.raises(LinrecError, match="curve_train_tokens"):
        ceiling.run(p)
    assert not Path(p.results_dir).exists()  # refused before any capture or table
