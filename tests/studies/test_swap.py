"""linrec.studies.swap and linrec.studies.routing: notebook 06's study writes exactly its tables, each the table the
analysis and claim functions give on the models' runs when called one by one, stacked over the models in the
profile's order; it leaves the parts the profile switches off unwritten; and `heal_trained` heals notebook 08's cached
runs (and only those it names), or says how to make them."""

from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import torch
import transformers

from helpers import _randomise, make_tiny_model, save_tiny_model, tiny_text, tiny_tokenizer
from linrec.analyses.healing import Heal
from linrec.analyses.routing import routing_summary
from linrec.analyses.swap import window_skew
from linrec.analyses.swap_run import SwapSettings, heal_run
from linrec.analyses.swap_summary import first_position_effect, swap_params, swap_predictors, swap_safety
from linrec.app.profile import load_profile
from linrec.base.errors import LinrecError
from linrec.base.registry import TABLES
from linrec.base.tables import FLOAT_FORMAT, TIMING_TABLES, result_columns, table_path
from linrec.claims.routing import anchor_table, heal_table
from linrec.claims.swap import RULE_6A, RULE_6B
from linrec.collect.config import CaptureConfig
from linrec.inputs.training import get_run, profile_configs
from linrec.inputs.training_text import EOS
from linrec.studies import routing
from linrec.studies import swap as study

NOTEBOOK_06 = {name for name, spec in TABLES.items() if spec.notebook == "06"}
SWITCHABLE = {"swap_first"} | {name for name in NOTEBOOK_06 if name.startswith("routing_")}
CAPTURE = {"seq_len": 32, "tokens": 2048, "sample_rows": 1000}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Two tiny models of different layouts (a llama of four blocks, so that claim 6b's correlations have numbers,
    and the two-block GPT-2) and two tiny texts (the capture's, and the other one routing compares token types on)."""
    root = tmp_path_factory.mktemp("swap-study")
    config = make_tiny_model("llama").config
    config.num_hidden_layers = 4
    torch.manual_seed(0)
    llama = transformers.LlamaForCausalLM(config)
    _randomise(llama)  # O(1)-scale weights, as every tiny model of the tests has
    llama.float().eval().save_pretrained(root / "llama")
    tiny_tokenizer().save_pretrained(root / "llama")
    models = [str(root / "llama"), save_tiny_model(root / "gpt2", "gpt2")]
    corpora = []
    for seed in (0, 1):
        (root / f"text-{seed}.txt").write_text(tiny_text(6000, seed))
        corpora.append(str(root / f"text-{seed}.txt"))
    return models, corpora


def _profile(inputs, results: Path, **changes) -> SimpleNamespace:
    """The smoke profile on the tiny models: every part switched on (two routed blocks, one healing step)."""
    models, corpora = inputs
    values = dict(models=models, corpus=corpora[0], capture=CAPTURE, ranks=[4], route_blocks=1, route_step=0.25,
                  route_corpora=corpora[1:], heal={"ks": [1], "steps": 1, "batch_size": 2, "lr": 1e-4}, n_boot=50,
                  results_dir=str(results))  # fmt: skip
    return load_profile("smoke", {**values, **changes}).notebook("06")


def _written(results: Path) -> set[str]:
    """The registered tables written under `results`: the CSVs there, and a timing table's under timings/."""
    return {p.stem for p in results.glob("*.csv")} | {p.stem for p in (results / "timings").glob("*.csv")} & set(
        TIMING_TABLES
    )


def _holds(name: str, results: Path, table: pd.DataFrame) -> None:
    """The file of table `name` under `results` holds `table`: its result columns, floats to 12 significant digits."""
    text = table_path(name, results).read_text()
    assert text == table[list(result_columns(name))].to_csv(index=False, float_format=FLOAT_FORMAT), name


@pytest.fixture(scope="module")
def full(inputs, tmp_path_factory):
    """(profile, the models' runs, the study's result written) with every part switched on."""
    p = _profile(inputs, tmp_path_factory.mktemp("results"))
    runs = study.run_models(p)
    return p, runs, study.tables(runs, p).write(p.results_dir)


def test_the_study_writes_every_table_of_notebook_06_each_the_functions_table_on_the_runs(full):
    p, runs, result = full
    results = Path(p.results_dir)
    assert _written(results) == NOTEBOOK_06
    for name, table in {**result.tables(), **result.routing.tables()}.items():  # each under its own name
        _holds(name, results, table)

    assert [r.model for r in runs] == p.models
    table = pd.concat([r.table for r in runs], ignore_index=True)
    values = pd.concat([r.values for r in runs], ignore_index=True)
    r2 = pd.concat([r.ceiling for r in runs], ignore_index=True)
    assert list(dict.fromkeys(result.swap["model"])) == p.models  # both models, in the profile's order
    pd.testing.assert_frame_equal(result.swap, table)
    pd.testing.assert_frame_equal(result.swap_params, swap_params(table))
    pd.testing.assert_frame_equal(result.swap_safety, swap_safety(table))
    pd.testing.assert_frame_equal(result.swap_predictor_values, values)
    predictors = swap_predictors(values, table, n_boot=p.n_boot, seed=p.seed)
    pd.testing.assert_frame_equal(result.swap_predictors, predictors)
    pd.testing.assert_frame_equal(result.swap_first, first_position_effect(table, r2))
    pd.testing.assert_frame_equal(result.swap_rank_curve, pd.concat([r.curve for r in runs], ignore_index=True))
    greedy = pd.DataFrame([g for r in runs for g in r.greedy])
    pd.testing.assert_frame_equal(result.swap_greedy, greedy)
    pd.testing.assert_frame_equal(result.swap_greedy_steps, pd.concat([r.steps for r in runs], ignore_index=True))
    pd.testing.assert_frame_equal(result.swap_timings, pd.concat([r.timings for r in runs], ignore_index=True))
    pd.testing.assert_frame_equal(result.swap_reload, pd.DataFrame([r.reload for r in runs]), rtol=1e-11)
    v6a, v6b = RULE_6A(table, values, window_skew(result.swap_windows)), RULE_6B(predictors)
    for got, want in ((result.v6a, v6a), (result.v6b, v6b)):  # evidence compared as tables: NaN != NaN in a dict
        assert (got.claim, got.verdict, got.reason) == (want.claim, want.verdict, want.reason)
        pd.testing.assert_frame_equal(result.evidence(str(want.claim)), pd.DataFrame(want.evidence))
    assert result.chosen() == {e["model"]: e["chosen_block"] for e in v6a.evidence}

    routes = [r.routing for r in runs]
    routable = pd.concat([r.routable for r in routes], ignore_index=True)
    identity = pd.concat([r.identity for r in runs], ignore_index=True)
    split_auc = pd.concat([r.split_auc for r in runs], ignore_index=True)
    out = result.routing
    pd.testing.assert_frame_equal(out.routing_gates, pd.concat([r.comparison for r in routes], ignore_index=True))
    pd.testing.assert_frame_equal(out.routing_curve, pd.concat([r.curve for r in routes], ignore_index=True))
    pd.testing.assert_frame_equal(out.routing_routable, routable)
    pd.testing.assert_frame_equal(out.routing_identity, identity)
    pd.testing.assert_frame_equal(out.routing_split_auc, split_auc)
    pd.testing.assert_frame_equal(out.routing_split_ppl, pd.concat([r.split_ppl for r in runs], ignore_index=True))
    pd.testing.assert_frame_equal(out.routing_summary, routing_summary(routable, r2, predictors, identity))
    pd.testing.assert_frame_equal(out.routing_anchor, anchor_table(identity, split_auc))
    pd.testing.assert_frame_equal(out.routing_heal, heal_table(pd.concat([r.heal for r in runs], ignore_index=True)))
    assert set(out.routing_heal["model"]) == set(p.models) and (out.trained, out.notes) == ([], [])
    row = out.routing_curve.iloc[-1]
    assert out.by_share().loc[(row["model"], row["block"]), row["share"]] == row["delta_ppl"]


def test_a_part_the_profile_switches_off_is_not_written(inputs, tmp_path):
    """No position variant, no routed block, no healing: `run` writes the swap's tables and nothing of those parts."""
    p = _profile(inputs, tmp_path / "results", models=inputs[0][:1], first_variants=[], route_blocks=0, heal={})
    result = study.run(p)
    assert _written(tmp_path / "results") == NOTEBOOK_06 - SWITCHABLE
    assert result.swap_first is None and set(result.swap["first"]) == {"map"}
    assert all(result.routing.tables().get(name) is None for name in SWITCHABLE)
    for name, table in result.tables().items():
        _holds(name, tmp_path / "results", table)


def test_heal_trained_without_the_training_profile_is_one_line_before_any_model_loads(tmp_path):
    p = load_profile("smoke", {"models": ["not-a-model"], "heal_trained": {"ks": [1]}}).notebook("06")
    with pytest.raises(LinrecError, match=r'training=load_profile\("training"\)\.notebook\("08"\)'):
        study.run(p)


def test_heal_trained_heals_the_cached_runs_it_names_in_notebook_08s_swap_study(tmp_path):
    """Before the run is trained: no healing, and the line that says how to train it. After: the run healed as
    `heal_run` heals it in notebook 08's study (the training profile's screening windows and measuring tokens, not
    notebook 06's), each fine-tune mode and k; a `runs` list without it heals nothing."""
    (tmp_path / "docs.txt").write_text(f"\n{EOS}\n".join(tiny_text(150, seed) for seed in range(40)))  # 40 documents
    tiny = dict(d_model=16, n_layers=4, n_heads=2, vocab=300, seq_len=16, batch_size=8, steps=4, lr=1e-2, warmup=1,
                n_checkpoints=2, text=str(tmp_path / "docs.txt"))  # fmt: skip
    training = SimpleNamespace(training=tiny, train_variants=["llama"], train_init_seeds=[0], train_data_seeds=[0],
                               screening_windows=3, train_measure_tokens=4096)  # fmt: skip
    options = {"ks": [1, 2], "steps": 1, "batch_size": 2, "lr": 1e-3, "modes": ["all", "maps"]}
    p = load_profile("smoke", {"heal_trained": options}).notebook("06")
    assert p.screening_windows != training.screening_windows  # so a swap study on the wrong windows shows

    before = routing.tables([], p, None, None, training)
    assert before.routing_heal is None and before.trained == [] and before.notes == [routing.NO_TRAINED_RUNS]

    (config,) = profile_configs({**tiny, "device": p.device}, ["llama"], [0], [0])
    run = get_run(config, progress=False)
    swap = SwapSettings(training.screening_windows, batch_size=p.batch_size)
    measured = CaptureConfig(str(run.final), run.measure_corpus, tiny["seq_len"], training.train_measure_tokens, p.seed)
    want = heal_table(heal_run(run, measured, Heal.of(options), swap, device=p.device, seed=p.seed))
    want = want.drop(columns="seconds")  # the clock: the only column two fine-tunes of the same run may differ in
    wrong = heal_run(run, measured, Heal.of(options), SwapSettings(p.screening_windows, batch_size=p.batch_size))
    assert list(wrong["blocks"]) != list(want["blocks"])  # notebook 06's screening windows would pick other blocks
    named = load_profile("smoke", {"heal_trained": {**options, "runs": [config.name]}}).notebook("06")
    for q in (p, named):
        after = routing.tables([], q, None, None, training)
        assert after.trained == [config.name] and after.notes == []
        pd.testing.assert_frame_equal(after.routing_heal.drop(columns="seconds"), want)
        assert set(after.routing_heal["model"]) == {config.name} and set(after.routing_heal["k"]) == {0, 1, 2}

    other = load_profile("smoke", {"heal_trained": {**options, "runs": ["another-run"]}}).notebook("06")
    left = routing.tables([], other, None, None, training)
    assert left.routing_heal is None and left.notes == [routing.NO_TRAINED_RUNS]
