"""linrec.studies.training: notebook 08's study trains the profile's runs, writes exactly the tables of the parts the
profile switches on, each the table the analysis functions give when called one by one, reads later steps' inputs
as written, takes the swap study's screening windows from the profile, and under a profile that trains nothing shows
the stored runs and writes nothing."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers import tiny_text
from linrec.analyses.seeds import capture_checkpoints, checkpoint_table, comparisons, distance_over_training
from linrec.analyses.swap import SwapSettings
from linrec.app.profile import load_profile
from linrec.base.registry import TABLES
from linrec.base.tables import result_columns, save_table
from linrec.claims.learned import comparison_words, seeds_verdict
from linrec.collect.config import CaptureConfig, CaptureRun
from linrec.inputs.models import load_model
from linrec.inputs.training import profile_configs, runs
from linrec.inputs.training_text import EOS
from linrec.studies import training as study

TRAINING = dict(d_model=16, n_layers=2, n_heads=2, vocab=300, seq_len=16, batch_size=8, steps=6, n_checkpoints=3)
SEEDS = ["training_runs", "training_profiles", "training_comparisons", "training_distance_curve", "training_onsets",
         "training_verdict"]  # fmt: skip
ZOO = [n for n in TABLES if n.startswith("zoo_")]


@pytest.fixture(scope="module")
def text(tmp_path_factory) -> str:
    """Forty short documents of tiny words: enough that the held-out 15 % fill the measuring windows. One file for
    the module, so each run is trained once and read from the (session's) cache after."""
    path = tmp_path_factory.mktemp("training") / "text.txt"
    path.write_text(f"\n{EOS}\n".join(tiny_text(150, seed) for seed in range(40)))
    return str(path)


def _profile(text: str, results: Path, **overrides):
    """The smoke profile's notebook 08 on the tiny text: GELU and SwiGLU at init seeds 0 and 1, the swap alone."""
    values = dict(training={**TRAINING, "text": text}, train_variants=["gelu", "swiglu"], train_init_seeds=[0, 1],
                  train_data_seeds=[0], train_measure_tokens=1024, train_pipeline=False, train_swap=True,
                  screening_windows=3, batch_size=8, results_dir=str(results))  # fmt: skip
    return load_profile("smoke", {**values, **overrides}).notebook("08")


def _written(results: Path) -> set[str]:
    return {p.stem for p in results.glob("*.csv")}


def _windows_give_the_swap(result) -> None:
    """training_swap_windows holds every training_swap ΔPPL's own held-out windows: each run and block's perplexities
    come back from its per-window losses (equal windows: exp of the mean loss), base and swapped, to 1e-9."""
    w, swap = result.training_swap_windows, result.training_swap
    assert list(w.columns) == list(TABLES["training_swap_windows"].columns) and w["tokens"].nunique() == 1
    means = w.astype({"swap": str}).groupby(["run", "swap"])[["loss_base", "loss_swapped"]].mean()
    assert len(means) == len(swap)  # one set of windows per ΔPPL, none left over
    for _, row in swap.iterrows():
        base, swapped = np.exp(means.loc[(row["run"], str(row["block"]))])
        assert base == pytest.approx(row["ppl_base"], rel=1e-9) and swapped == pytest.approx(
            row["ppl_swapped"], rel=1e-9
        )
        assert swapped - base == pytest.approx(row["delta_ppl"], rel=1e-9, abs=1e-9)


def _same(got: pd.DataFrame, want: pd.DataFrame):
    """`got` (a table as written, read back) holds `want`'s result columns, to the 12 digits a table is written with
    (an empty text reads back as missing)."""
    want = want[list(got.columns)].replace({"": np.nan}).reset_index(drop=True)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want, check_exact=False, rtol=1e-10, atol=1e-12,
                                  check_dtype=False)  # fmt: skip


def test_the_seeds_experiment_writes_its_tables_each_the_analysis_called_directly(text, tmp_path, monkeypatch):
    built = []  # every SwapSettings the study builds: its screening windows must be the profile's
    monkeypatch.setattr(study, "SwapSettings", lambda *a, **k: built.append((a, k)) or SwapSettings(*a, **k))
    p = _profile(text, tmp_path / "results")
    result = study.run(p)
    assert result.ran and result.source == tmp_path / "results"
    assert _written(tmp_path / "results") == {*SEEDS, "training_swap", "training_swap_windows"} == set(result.tables())
    assert built and all(a[0] == 3 for a, _ in built)  # the profile's screening_windows, not a literal

    configs = profile_configs({**p.training, "device": "cpu"}, ["gelu", "swiglu"], [0, 1], [0])
    trained = runs(configs, progress=False)
    measured = {c.name: CaptureConfig(str(trained[c.name].final), trained[c.name].measure_corpus, 16, 1024, p.seed)
                for c in configs}  # fmt: skip
    captures = {c.name: capture_checkpoints(trained[c.name], measured[c.name], CaptureRun(8, "cpu"), progress=False)
                for c in configs}  # fmt: skip
    profiles = pd.concat([checkpoint_table(trained[c.name], captures[c.name]) for c in configs], ignore_index=True)
    _same(result.training_profiles, profiles)
    table = comparison_words(comparisons(configs, captures, seed=p.seed))
    _same(result.training_comparisons, table)
    assert set(table["kind"]) == {"trained vs init", "seed", "variant"}
    _same(result.training_distance_curve, distance_over_training(configs, captures, "seed", seed=p.seed))
    _same(result.training_verdict, pd.DataFrame([seeds_verdict(table)]))

    runs_table = result.training_runs.set_index("run")
    assert list(runs_table.index) == [c.name for c in configs]
    for c in configs:
        r, row = trained[c.name], runs_table.loc[c.name]
        assert row["mlp"] == c.layout and row["init_seed"] == c.init_seed and row["d_ff"] == c.ffn_width
        assert row["tokens_seen"] == 6 * 8 * 16 == r.meta["tokens_seen"]
        assert row["tokens_per_param"] == pytest.approx(r.meta["tokens_seen"] / r.meta["n_params"], rel=1e-10)
        assert row["epochs"] == pytest.approx(r.meta["tokens_seen"] / r.meta["train_tokens_available"], rel=1e-10)
        last = profiles[(profiles["run"] == c.name) & (profiles["step"] == 6)]
        assert row["ppl_test_final"] == pytest.approx(last["ppl_test"].iloc[0], rel=1e-10)

    last = configs[-1]
    loaded = load_model(str(trained[last.name].final))
    swap = SwapSettings(3, batch_size=8).study(captures[last.name][6], loaded, seed=p.seed, progress=False)
    _same(result.training_swap[result.training_swap["run"] == last.name], swap.heldout.table().assign(run=last.name))
    assert set(result.training_swap["run"]) == {c.name for c in configs}
    _windows_give_the_swap(result)


def test_a_profile_of_one_run_writes_an_empty_distance_curve_and_its_verdict(text, tmp_path):
    """One layout at one seed (a user's own single run; params/zoo_paper.yaml cut to one run): no seed pair, so the
    distance curve has no row but its columns, and the study goes on to its verdict (it stopped with a KeyError)."""
    p = _profile(text, tmp_path / "results", train_variants=["gelu"], train_init_seeds=[0], train_swap=False)
    result = study.run(p)
    curve = result.training_distance_curve
    assert curve is not None and curve.empty and list(curve.columns) == list(TABLES["training_distance_curve"].columns)
    assert set(result.training_comparisons["kind"]) == {"trained vs init"} and len(result.training_verdict) == 1


def test_a_switched_off_swap_is_not_written(text, tmp_path):
    result = study.run(_profile(text, tmp_path / "results", train_swap=False))
    assert result.training_swap is None and result.training_swap_windows is None
    assert _written(tmp_path / "results") == set(SEEDS)


def test_the_zoo_reads_the_tables_as_written_and_writes_its_own(text, tmp_path, monkeypatch):
    """With the pipeline the zoo's tables are written too (training_swap is the pipeline's), and the decomposition
    reads the runs' noise from zoo_runs as written: a shift planted in the written table reaches it."""
    from linrec.inputs import plateau

    write, decompose, seen = study.TrainingResult.write, study.components, {}

    def write_shifted(self, where):  # zoo_runs as written carries a planted shift of the noise that memory lacks
        if self.zoo_runs is not None:
            self.zoo_runs = self.zoo_runs.assign(noise_level=self.zoo_runs["noise_level"] + 1.0)
        return write(self, where)

    monkeypatch.setattr(study.TrainingResult, "write", write_shifted)
    monkeypatch.setattr(study, "components", lambda wide, factors, noise: seen.update(noise=noise) or decompose(
        wide, factors, noise))  # fmt: skip
    monkeypatch.setattr(plateau, "PLATEAU_MAX_GAIN", 10.0)  # six steps count as converged: every verdict computed
    monkeypatch.setattr(plateau, "LEARNED_MIN_DROP", 0.0)
    result = study.run(_profile(text, tmp_path / "results", train_pipeline=True, train_probe_rows=300,
                                training={**TRAINING, "text": text, "n_evals": 3}))  # fmt: skip
    assert result.zoo_runs["converged"].all()
    assert _written(tmp_path / "results") == {*SEEDS, "training_swap", "training_swap_windows", *ZOO}
    assert set(result.zoo_blocks["model"]) == set(result.training_runs["run"]) == set(result.training_swap["run"])
    assert result.zoo_timings is not None and {"seconds_train", "seconds_swap"} <= set(result.zoo_timings)
    assert (seen["noise"]["noise_level"] >= 1.0).all()  # read back from the file, not taken from memory
    # the per-block table reads each run's last checkpoint: its held-out R²_lin is the profile's at the last step
    # (planted: the first checkpoint's capture, `min` for `max`, fails), its ΔPPL the plain map swap's
    prof = result.training_profiles
    last = prof[prof["step"] == prof.groupby("run")["step"].transform("max")]
    assert last["step"].gt(0).all()
    blocks = result.zoo_blocks.merge(last.rename(columns={"run": "model"}), on=["model", "block"], suffixes=("", "_p"))
    assert len(blocks) == len(result.zoo_blocks)
    assert np.allclose(blocks["r2_lin"], blocks["r2_lin_p"], rtol=0, atol=1e-12)
    swap = result.training_swap.rename(columns={"run": "model"})  # the plain map alone: the study asks no variant
    both = result.zoo_blocks.merge(swap, on=["model", "block"], suffixes=("", "_s"))
    assert len(both) == len(result.zoo_blocks) and (both["delta_ppl"] == both["delta_ppl_s"]).all()
    _windows_give_the_swap(result)  # the pipeline's swaps keep their windows too


def test_the_pipeline_in_worker_processes_gives_the_numbers_of_one_process(text, tmp_path):
    """`train_pipeline_workers` (params/zoo_paper.yaml: a GPU machine's cores, so its call fits) runs each run's last
    checkpoint through `measure_final` in its own process, reading the run and its capture from the cache: every
    table equals the one process's to the bit (planted: a worker measuring the first checkpoint fails). One run in one
    worker (the run of the one-run test above, cached): what is tested is another process reading it back."""
    p = _profile(text, tmp_path / "results", train_pipeline=True, train_probe_rows=300, train_variants=["gelu"],
                 train_init_seeds=[0])  # fmt: skip
    r = study.train(p)
    one = study.measure_finals(r.trained, {c.name: r.captures[c.name][max(r.captures[c.name])] for c in r.configs},
                               progress=False, **study._pipeline_settings(p))  # fmt: skip
    workers = study.measure_in_workers(p, r, 2)  # as many as there are runs: one
    assert list(workers) == list(one) == [c.name for c in r.configs] and len(one) == 1
    for name, tables in one.items():
        assert set(workers[name]) == set(tables)
        for part, table in tables.items():
            if part == "seconds":
                continue
            if isinstance(table, pd.DataFrame):  # every column but the seconds a stage took
                timed = [c for c in table if str(c).startswith("seconds")]
                pd.testing.assert_frame_equal(workers[name][part].drop(columns=timed), table.drop(columns=timed),
                                              check_exact=True)  # fmt: skip
            else:
                assert workers[name][part] == table, (name, part)


def test_a_profile_that_trains_nothing_shows_the_stored_runs_and_writes_nothing(tmp_path, caplog):
    """The stored runs are those of the profiles that stand in for notebook 08's tables (`STAND_INS`: training, zoo),
    beside this scratch run's folder; a zoo run an older linrec wrote is left out whole, with a warning."""
    stored = tmp_path / "results"
    table = pd.DataFrame({c: [0.5] for c in TABLES["training_verdict"].columns}).assign(word="agree")
    save_table(table, "training_verdict", stored / "training")
    p = load_profile("smoke", {"training": {}, "results_dir": str(stored / "smoke")}).notebook("08")
    result = study.run(p)
    assert not result.ran and result.source == stored / "training"
    assert list(result.tables()) == ["training_verdict"] and result.training_verdict["word"].iloc[0] == "agree"
    assert result.training_runs is None and result.zoo_blocks is None and result.zoo_timings is None
    assert not (stored / "smoke").exists()
    assert list(result_columns("training_verdict")) == list(result.training_verdict.columns)
    runs = pd.DataFrame({c: [0.5] for c in TABLES["zoo_runs"].columns}).assign(run="a")
    save_table(runs, "zoo_runs", stored / "zoo")
    assert study.run(p).zoo_runs is not None
    runs.drop(columns=["converged"]).to_csv(stored / "zoo" / "zoo_runs.csv", index=False)  # an older linrec's
    result = study.run(p)
    assert result.zoo_runs is None and result.training_verdict is not None
    assert "params/zoo.yaml wrote zoo_runs as an older linrec did" in caplog.text


def test_the_stored_runs_are_named_as_the_checkout_names_them():
    """Notebook 08 prints where the stored runs came from: inside the checkout, the path from its root (an absolute
    path put the machine's own folders into the committed notebooks)."""
    p = load_profile("default").notebook("08")  # trains nothing: the stored runs of params/training.yaml
    assert study.run(p).source == Path("results/training")


def test_the_zoo_shows_a_run_that_did_not_train_and_leaves_it_out_of_every_verdict(text, tmp_path, monkeypatch):
    """Issue 61: one layout planted not to train (learning rate 0 at every step): its runs are measured and shown
    (zoo_runs with converged False and learned False, zoo_blocks, training_swap) but left out of the decomposition,
    the pooled claims and the verdict, whose word names them. The rule's thresholds are tested on their own
    (tests/inputs/test_training.py); here they are loosened so that six steps count as a plateau."""
    from linrec.inputs import plateau, training

    real = training.lr_at
    monkeypatch.setattr(training, "lr_at", lambda step, cfg: 0.0 if cfg.layout == "swiglu" else real(step, cfg))
    monkeypatch.setattr(plateau, "PLATEAU_MAX_GAIN", 10.0)
    monkeypatch.setattr(plateau, "LEARNED_MIN_DROP", 0.02)
    p = _profile(text, tmp_path / "results", train_pipeline=True, train_probe_rows=300,
                 training={**TRAINING, "text": text, "n_evals": 3, "lr": 0.02, "warmup": 1})  # fmt: skip
    result = study.run(p)
    runs_table = result.zoo_runs.set_index("run")
    out = ["swiglu-i0-d0-text", "swiglu-i1-d0-text"]
    assert not runs_table.loc[out, "converged"].any() and not runs_table.loc[out, "learned"].any()
    assert runs_table.loc[out, "heldout_drop"].abs().max() == 0.0
    assert runs_table.loc[["gelu-i0-d0-text", "gelu-i1-d0-text"], "converged"].all()
    assert set(result.zoo_blocks["model"]) == set(runs_table.index) == set(result.training_swap["run"])
    assert set(result.zoo_probe_summary["model"]) == {"gelu-i0-d0-text", "gelu-i1-d0-text", "all"}
    assert set(result.zoo_regimes["model"]) == {"gelu-i0-d0-text", "gelu-i1-d0-text"}
    assert result.zoo_claims.set_index("claim").loc["3", "n_models"] == 2
    assert result.zoo_components["n_runs"].eq(2).all()
    word = result.zoo_verdict["word"].iloc[0]
    assert "2 of 4 runs not converged and left out (swiglu-i0-d0-text, swiglu-i1-d0-text)" in word


def test_runs_not_in_the_cache_are_announced_first_in_the_notebook_and_cached_ones_are_not(
    text, tmp_path, monkeypatch, capsys
):
    """Issue 65, item 2, for notebook 08: before it trains, a cell in Jupyter Lab (a kernel Jupyter's server started;
    planted) says on stdout, like every notice in a kernel, which runs are not cached, their tokens, about how long
    (TRAIN_FACTOR × the capture's reference rate on a fresh cache; this machine's runs of that size once there are
    some) and the quicker paths; once they are cached, nothing."""
    from linrec.base import progress
    from linrec.collect import reuse
    from linrec.inputs.training import TrainConfig, get_run

    monkeypatch.setenv("LINREC_CACHE", str(tmp_path / "cache"))
    for name in ("LINREC_PROGRESS", "LINREC_NOTEBOOK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "notebooks" / "08_training.py"))
    monkeypatch.setattr(progress, "in_kernel", lambda: True)
    monkeypatch.setattr(reuse, "REFERENCE_SECONDS", 1e-3)  # planted, so the line's number can be checked
    monkeypatch.setattr(study, "REFERENCE_SECONDS", 1e-3)
    configs = [TrainConfig(**{**TRAINING, "text": text, "init_seed": s}) for s in (0, 1)]
    tokens = TRAINING["steps"] * TRAINING["batch_size"] * TRAINING["seq_len"]
    work = sum(c.param_count() for c in configs) * tokens

    study.say_training(configs)
    said = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("training ")]
    assert len(said) == 1, said
    names = [c.name for c in configs]
    assert f"training 2 of 2 runs ({names[0]}, {names[1]}; {2 * tokens:,} tokens in all): " in said[0]
    threads = __import__("torch").get_num_threads()
    assert f"{reuse.duration(study.TRAIN_FACTOR * 1e-3 * work / threads)} (from the reference rate" in said[0]
    assert said[0].endswith(" — " + study.TRAIN_QUICKER) and 'profile_file = "params/smoke.yaml"' in said[0]

    run = get_run(configs[0], progress=False)  # one trained and cached: the other is said alone, at its rate
    capsys.readouterr()
    study.say_training(configs)
    said = capsys.readouterr().out
    assert f"training 1 of 2 runs ({names[1]}; " in said and "from the runs of that size trained here" in said
    rate = run.meta["seconds"] / (run.meta["tokens_seen"] * run.meta["n_params"])
    assert reuse.duration(rate * configs[1].param_count() * tokens) in said

    study.say_training(configs[:1])
    assert capsys.readouterr().out == ""  # every run cached: nothing said


def test_the_study_announces_its_runs_before_it_trains_them(text, tmp_path, monkeypatch):
    """`train` hands every configuration of the profile to `say_training` before `runs` trains any."""
    order = []

    class Stop(Exception):
        pass

    def runs(configs, **kwargs):
        order.append("runs")
        raise Stop

    monkeypatch.setattr(study, "say_training", lambda configs: order.append(("said", len(configs))))
    monkeypatch.setattr(study, "runs", runs)
    with pytest.raises(Stop):
        study.train(_profile(text, tmp_path))
    assert order == [("said", 4), "runs"]
