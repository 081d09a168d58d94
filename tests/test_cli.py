"""`linrec` on bad input: non-zero exit, one line naming the fix, no traceback."""

import json
import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from helpers import linrec_without_the_hub, no_model_load, tiny_text
from helpers import run_main as _main
from helpers import single_line as _single_line
from linrec.analyses.spectrum import REGIMES


def _run(*args, tmp_path):
    """`linrec ARGS` in this process (`linrec.app.cli.main`, output captured), with its own cache under `tmp_path`:
    (returncode, stdout, stderr) as a process would give them. What only a real process shows (the entry point) is
    started by `helpers.linrec_without_the_hub`."""
    import contextlib
    import io
    from types import SimpleNamespace

    env = {"HF_HUB_OFFLINE": "1", "LINREC_CACHE": str(tmp_path / "cache")}
    old = {k: os.environ.get(k) for k in env}
    out, err = io.StringIO(), io.StringIO()
    os.environ.update(env)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = _main(args)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


@pytest.fixture
def short_text(tmp_path):
    p = tmp_path / "short.txt"
    p.write_text("Just a few words here.")
    return str(p)


def _one_line_error(proc, *needles):
    assert proc.returncode != 0
    err = proc.stderr.strip().splitlines()
    assert len(err) >= 1 and "Traceback" not in proc.stderr
    line = err[-1]
    assert line.startswith("linrec: error:") or "error:" in line
    for n in needles:
        assert n in line, line


def test_unknown_model(tmp_path):
    proc = _run("measure", "--model", "no-such/model-xyz", "--tokens", "256", tmp_path=tmp_path)
    _one_line_error(proc, "smollm2-135m")  # the real entry point: test_misspelt_model_without_the_hub_…


def test_unknown_corpus(tmp_path, tiny_model_dir):
    proc = _run("measure", "--model", tiny_model_dir, "--corpus", "no-such-corpus", tmp_path=tmp_path)
    _one_line_error(proc, "wiki")


def test_corpus_too_short_for_one_test_window(tmp_path, tiny_model_dir, short_text):
    proc = _run("measure", "--model", tiny_model_dir, "--corpus", short_text, "--seq-len", "16", tmp_path=tmp_path)
    _one_line_error(proc, "too small")


@pytest.mark.parametrize("tokens", ["0", "-5", "lots"])
def test_non_positive_token_budget(tmp_path, tokens):
    proc = _run("measure", "--model", "smollm2-135m", "--tokens", tokens, tmp_path=tmp_path)
    _one_line_error(proc, "--tokens")


def _table(command, tmp_path, model_dir, *extra):
    """Run `linrec COMMAND` on the tiny model and a small corpus; (process, the CSV it wrote)."""
    import pandas as pd

    corpus = tmp_path / "text.txt"
    corpus.write_text(tiny_text(6000))
    out = tmp_path / f"{command}.csv"
    proc = _run(
        command,
        "--model",
        model_dir,
        "--corpus",
        str(corpus),
        "--seq-len",
        "32",
        "--tokens",
        "2048",
        *extra,
        "--out",
        str(out),
        tmp_path=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    return proc, pd.read_csv(out)


def test_measure_writes_the_table(tmp_path, tiny_model_dir):
    proc, t = _table("measure", tmp_path, tiny_model_dir)
    assert list(t["block"]) == [0, 1]
    for col in ["model", "block", "r2_lin", "r2_lo", "r2_hi", "r2_feature_median", "cond_gram", "n_train", "n_test"]:
        assert col in t.columns
    assert (t["n_train"] + t["n_test"] == 2048).all()
    assert ((t["r2_lo"] <= t["r2_lin"]) & (t["r2_lin"] <= t["r2_hi"])).all()
    assert "r2_lin" in proc.stdout


def test_curve_writes_the_table_and_names_the_fix_for_a_short_corpus(tmp_path, tiny_model_dir):
    import pandas as pd

    corpus = tmp_path / "text.txt"
    corpus.write_text(tiny_text(6000))
    out = tmp_path / "curve.csv"
    args = ["curve", "--model", tiny_model_dir, "--corpus", str(corpus), "--seq-len", "16", "--test-tokens", "512"]
    proc = _run(*args, "--train-tokens", "512,1024,2048", "--seeds", "2", "--out", str(out), tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    t = pd.read_csv(out)
    assert len(t) == 2 * 4  # 2 blocks × (3 sizes + the large-n estimate)
    assert sorted(set(t["train_tokens"])) == [512, 1024, 2048, float("inf")]
    measured = t[t["train_tokens"] < float("inf")]
    assert ((measured["r2_lo"] <= measured["r2"]) & (measured["r2"] <= measured["r2_hi"])).all()
    proc = _run(*args, "--train-tokens", "512,1024,204800", tmp_path=tmp_path)
    _one_line_error(proc, "too small for this curve", "lower the largest train size")
    proc = _run(*args, "--train-tokens", "512,lots", tmp_path=tmp_path)
    _one_line_error(proc, "--train-tokens")


def test_probe_writes_the_table(tmp_path, tiny_model_dir):
    _, t = _table("probe", tmp_path, tiny_model_dir, "--rank", "4")
    for col in ["model", "block", "r2_lin", "r2_poly", "gain", "r2_trained_adam", "r2_trained_sgd", "cond_gram"]:
        assert col in t.columns
    assert list(t["block"]) == [0, 1]
    assert ((t["gain"] - (t["r2_poly"] - t["r2_lin_rows"])).abs() < 1e-12).all()
    assert ((t["r2_lin_rows"] - t["r2_lin"]).abs() < 1e-6).all()  # every row is in the sample here: same held-out set


def test_spectrum_writes_the_table(tmp_path, tiny_model_dir):
    _, t = _table("spectrum", tmp_path, tiny_model_dir)
    for col in [
        "model",
        "block",
        "r2_lin",
        "r2_feature_median",
        "top1_var_share",
        "r2_ex_top1",
        "r2_ex_top8",
        "eff_rank_out",
        "eff_rank_in",
        "cond_gram",
        "first_var_share",
        "r2_ex_first",
        "regime",
    ]:
        assert col in t.columns
    assert set(t["regime"]) <= set(REGIMES)
    assert ((t["eff_rank_out"] >= 1) & (t["eff_rank_out"] <= 32)).all()  # tiny llama: width 32


def test_swap_writes_the_table_and_saves_the_greedy_model(tmp_path, tiny_model_dir):
    from linrec.analyses.perplexity import perplexity
    from linrec.inputs.surgery import load_swapped

    save = tmp_path / "compressed"
    proc, t = _table(
        "swap", tmp_path, tiny_model_dir, "--budget-ppl", "1e9", "--screening-windows", "2", "--save", str(save)
    )
    for col in ["model", "block", "first", "r2_lin", "ppl_base", "ppl_swapped", "delta_ppl", "delta_lo", "delta_hi",
                "params_ffn", "params_linear", "params_swap"]:  # fmt: skip
        assert col in t.columns
    assert list(t["block"]) == [0, 1] and set(t["first"]) == {"map"}
    assert ((t["delta_ppl"] - (t["ppl_swapped"] - t["ppl_base"])).abs() < 1e-9).all()
    assert ((t["delta_lo"] <= t["delta_ppl"]) & (t["delta_ppl"] <= t["delta_hi"])).all()
    assert (t["params_ffn"] == 3 * 32 * 64).all() and (t["params_linear"] == 32 * 32 + 32).all()  # tiny llama
    assert "greedy swap" in proc.stdout and "blocks [0, 1] kept" in proc.stdout  # a huge budget keeps every block
    back = load_swapped(save)
    final = float(proc.stdout.split("held out ")[1].split("→ ")[1].split()[0])
    from linrec.inputs.corpora import WindowCut, load_windows

    w = load_windows(
        str(tmp_path / "text.txt"), back.tokenizer, WindowCut(seq_len=32, tokens=2048, seed=0, test_frac=0.2)
    )
    assert abs(perplexity(back.model, w.split("test")) - final) <= 1e-4 * final  # the printed ppl is the saved model's


def test_swap_position_variants(tmp_path, tiny_model_dir):
    _, t = _table("swap", tmp_path, tiny_model_dir, "--first", "mean", "--blocks", "1")
    assert list(t["first"]) == ["mean"] and list(t["block"]) == [1]
    assert t.loc[0, "params_swap"] == t.loc[0, "params_linear"] + 32  # the map plus the mean vector


def test_swap_route_prints_the_routed_table_and_refuses_to_save(tmp_path, tiny_model_dir):
    """`linrec swap --route 0.5`: one row per block at the share asked for, its held-out share near it; a routed
    model is not saved (one line says why), and a share outside [0, 1] is refused by the parser."""
    _, t = _table("swap", tmp_path, tiny_model_dir, "--route", "0.5", "--blocks", "0,1")
    assert list(t["block"]) == [0, 1] and (t["share"] == 0.5).all()
    assert ((t["share_heldout"] > 0.2) & (t["share_heldout"] < 0.8)).all()
    assert set(t["target"]) <= {"quantile", "relative"} and (t["delta_lo"] <= t["delta_hi"]).all()
    corpus = tmp_path / "text.txt"
    common = ("swap", "--model", tiny_model_dir, "--corpus", str(corpus), "--seq-len", "32", "--tokens", "2048")
    _one_line_error(_run(*common, "--route", "0.5", "--save", str(tmp_path / "x"), tmp_path=tmp_path), "saves no")
    _one_line_error(_run(*common, "--route", "1.5", tmp_path=tmp_path), "between 0 and 1")


def test_swap_bad_blocks_and_save_without_blocks(tmp_path, tiny_model_dir):
    corpus = tmp_path / "text.txt"
    corpus.write_text(tiny_text(6000))
    common = ("swap", "--model", tiny_model_dir, "--corpus", str(corpus), "--seq-len", "32", "--tokens", "2048")
    _one_line_error(_run(*common, "--blocks", "0,7", tmp_path=tmp_path), "0..1")
    _one_line_error(_run(*common, "--save", str(tmp_path / "x"), tmp_path=tmp_path), "--blocks")
    _one_line_error(
        _run(*common, "--blocks", "0", "--first", "ffn", "--save", str(tmp_path / "x"), tmp_path=tmp_path),
        "--first map",
    )


def test_report_rebuilds_from_a_profile(tmp_path):
    import pandas as pd
    import yaml

    from linrec.claims.tables import save_table

    results = tmp_path / "results"
    summary = {
        "model": "m",
        "n_blocks": 12,
        "r2_min": 0.25,
        "r2_max": 0.75,
        "max_adjacent_jump": 0.5,
        "direction_changes": 4,
        "max_jump_disjoint": 0.5,
        "direction_changes_disjoint": 4,
        "as_extreme_as_paper": False,
        "r2_ex_first_min": 0.25,
        "max_jump_disjoint_ex_first": 0.5,
        "direction_changes_disjoint_ex_first": 4,
        **dict.fromkeys(["moves_tested", "moves_fdr", "max_jump_fdr", "direction_changes_fdr"], float("nan")),
        **dict.fromkeys(["moves_tested_ex_first", "moves_fdr_ex_first", "max_jump_fdr_ex_first"], float("nan")),
        "direction_changes_fdr_ex_first": float("nan"),
        "cond_gram_median": 1e5,
        "r2_ex_first_max": 0.5,
        "first_token_blocks": "",
        "profile_tokens": 16384.0,
    }
    save_table(pd.DataFrame([summary]), "r2_lin_summary", results)
    profile = tmp_path / "p.yaml"
    profile.write_text(
        yaml.safe_dump(
            {
                "models": ["m"],
                "results_dir": str(results),
                "figures_dir": str(tmp_path / "f"),
                "report_path": str(tmp_path / "r.md"),
                "capture": {"sample_rows": 30000},
            }
        )
    )
    proc = _run("report", "--params", str(profile), tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "r.md").read_text()
    assert "0.250 to 0.750" in text
    # the capture's settings, as notebook 09 states them: the profile's section over CaptureConfig's defaults, and
    # the seed the profile leaves at its default
    assert "seq_len = 128, tokens = 20480, seed = 0, sample_rows = 30000 (80/20" in text
    proc = _run("report", "--params", str(tmp_path / "missing.yaml"), tmp_path=tmp_path)
    _one_line_error(proc, "params/")


# ---- the error boundary: one row of issue 15's table per test -------------------------------------------


def _tree(path):
    return sorted((str(p.relative_to(path)), p.read_bytes()) for p in path.rglob("*") if p.is_file())


@pytest.fixture
def tiny_args(tmp_path, tiny_model_dir):
    corpus = tmp_path / "text.txt"
    corpus.write_text(tiny_text(6000))
    return ["--model", tiny_model_dir, "--corpus", str(corpus), "--seq-len", "32", "--tokens", "2048"]


def _entries():
    import os
    from pathlib import Path

    d = Path(os.environ["LINREC_CACHE"]) / "captures"
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


@pytest.mark.parametrize("target", ["other-files", "cwd"])
def test_save_into_a_directory_with_other_files_is_refused_and_nothing_is_deleted(
    cli, tiny_args, tmp_path, monkeypatch, target
):
    d = tmp_path / "mine"
    d.mkdir()
    (d / "thesis.tex").write_text("three years of work")
    (d / "sub").mkdir()
    (d / "sub" / "data.csv").write_text("1,2,3")
    before = _tree(d)
    if target == "cwd":
        monkeypatch.chdir(d)
        save = "."
    else:
        save = str(d)
    code, _, err = cli("swap", *tiny_args, "--blocks", "0", "--save", save)
    _single_line(code, err, "never deletes")
    assert _tree(d) == before


def test_save_over_an_earlier_save_or_into_an_empty_directory_works(cli, tiny_args, tmp_path):
    from linrec.inputs.surgery import load_swapped

    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli("swap", *tiny_args, "--blocks", "0", "--save", empty)[0] == 0
    assert [s["block"] for s in json.loads((empty / "linrec_swaps.json").read_text())["swaps"]] == [0]
    assert cli("swap", *tiny_args, "--blocks", "1", "--save", empty)[0] == 0  # replaces linrec's own save
    assert load_swapped(empty).notes == ["FFN blocks [1] replaced by affine maps"]
    (empty / "notes.txt").write_text("mine")  # a user's file inside an earlier save: refused from now on
    code, _, err = cli("swap", *tiny_args, "--blocks", "0", "--save", empty)
    _single_line(code, err, "notes.txt")
    assert (empty / "notes.txt").read_text() == "mine"


def test_a_saved_model_swapped_again_still_loads(cli, tiny_args, tmp_path):
    """Issue 51's first case, as a user runs it: save block 1, copy the save, swap block 0 of the copy into itself;
    the copy holds both maps, says so, and `linrec measure` reads it (it refused the weights before)."""
    from linrec.inputs.surgery import load_swapped

    first, copy = tmp_path / "first", tmp_path / "copy"
    assert cli("swap", *tiny_args, "--blocks", "1", "--save", first)[0] == 0
    shutil.copytree(first, copy)
    model_at = tiny_args.index("--model") + 1
    again = [*tiny_args[:model_at], str(copy), *tiny_args[model_at + 1 :]]
    code, _, err = cli("swap", *again, "--blocks", "0", "--save", copy)
    assert code == 0 and "blocks [0] swapped; with the maps it already held, blocks [0, 1] are affine" in err, err
    assert load_swapped(copy).notes == ["FFN blocks [0, 1] replaced by affine maps"]
    code, out, err = cli("measure", *again, "--out", tmp_path / "r2.csv")
    assert code == 0, err
    r2 = pd.read_csv(tmp_path / "r2.csv").set_index("block")["r2_lin"]
    assert r2[0] > 1 - 1e-9 and r2[1] > 1 - 1e-9  # both blocks are affine maps now


def test_a_damaged_save_is_a_one_line_error_on_load(cli, tiny_args, tmp_path):
    from linrec.base.errors import LinrecError
    from linrec.inputs.surgery import load_swapped

    d = tmp_path / "s"
    assert cli("swap", *tiny_args, "--blocks", "0", "--save", d)[0] == 0
    w = d / "model.safetensors"
    data = bytearray(w.read_bytes())
    data[len(data) // 2] ^= 0xFF
    w.write_bytes(bytes(data))
    with pytest.raises(LinrecError, match="damaged"):
        load_swapped(d)


@pytest.mark.parametrize("device", ["cuda", "cuda:3", "mps", "nonsense"])
def test_unavailable_device_is_refused_before_any_work_even_on_a_cache_hit(cli, tiny_args, device):
    assert cli("measure", *tiny_args)[0] == 0  # the capture is now cached
    code, _, err = cli("measure", *tiny_args, "--device", device)
    _single_line(code, err, f"'{device}'", "available: cpu")


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--seed", "-1"], "--seed"),
        (["--batch-size", "0"], "--batch-size"),
        (["--screening-windows", "-2"], "--screening-windows"),
    ],
)
def test_bad_numbers_are_argparse_errors(cli, tiny_args, args, needle):
    code, _, err = cli("swap", *tiny_args, *args)
    _single_line(code, err, needle, "--help")


def test_argument_errors_are_one_line_without_usage(cli):
    code, _, err = cli("measure")
    _single_line(code, err, "--model", "linrec measure --help")
    code, _, err = cli("figures", "--only")
    _single_line(code, err, "--only")
    code, _, err = cli("nonsense-command")
    _single_line(code, err, "invalid choice")


@pytest.mark.parametrize("case", ["out-dir", "out-unwritable", "save-file", "save-unwritable"])
def test_output_paths_are_checked_before_the_capture(cli, tiny_args, tmp_path, monkeypatch, case):
    monkeypatch.setenv("LINREC_CACHE", str(tmp_path / "own-cache"))
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    extra = {
        "out-dir": ["--out", tmp_path],
        "out-unwritable": ["--out", "/sys/linrec-test/t.csv"],  # sysfs: not writable even by root
        "save-file": ["--blocks", "0", "--save", a_file],
        "save-unwritable": ["--blocks", "0", "--save", "/sys/linrec-test-save"],
    }[case]
    command = "swap" if case.startswith("save") else "measure"
    code, _, err = cli(command, *tiny_args, *extra)
    _single_line(code, err, "--out" if case.startswith("out") else "--save")
    assert _entries() == []  # refused before any capture ran
    assert a_file.read_text() == "x"


def test_unwritable_cache_is_one_line_naming_the_variable(cli, tiny_args, tmp_path, monkeypatch):
    cache = tmp_path / "ro-cache"
    cache.mkdir()
    (cache / "captures").write_text("not a directory")  # as root, chmod cannot make a directory read-only
    monkeypatch.setenv("LINREC_CACHE", str(cache))
    code, _, err = cli("measure", *tiny_args)
    _single_line(code, err, "$LINREC_CACHE", "--no-cache")
    assert cli("measure", *tiny_args, "--no-cache")[0] == 0
    monkeypatch.setenv("LINREC_CACHE", "/sys/linrec-cache")
    _single_line(*cli("measure", *tiny_args)[::2], "$LINREC_CACHE")


def test_misspelt_model_without_the_hub_is_one_line_without_retries(tmp_path):
    """One line naming the offline models, and no retries (the hub clients' retries took 26 s and 22 lines before
    the error): checked by the connections tried, not by a clock (benchmarks/clocks.py times it)."""
    proc, hosts = linrec_without_the_hub(tmp_path, "measure", "--model", "smolllm2-135m")
    # linrec's one connect (linrec.inputs.hf.hub_reachable) and huggingface_hub's one fetch of its list of agents;
    # with that connect's answer ignored, the clients looked the hub up 19 times
    assert 1 <= len(hosts) <= 2 and set(hosts) == {"hub.invalid"}, hosts  # looked up, and not retried
    _single_line(proc.returncode, proc.stderr, "smollm2-135m")


def test_tokens_beyond_the_corpus_give_a_notice_and_the_real_counts(tmp_path, tiny_model_dir):
    import pandas as pd

    corpus = tmp_path / "small.txt"
    corpus.write_text(tiny_text(700))
    out = tmp_path / "t.csv"
    proc = _run(
        "measure",
        "--model",
        tiny_model_dir,
        "--corpus",
        corpus,
        "--seq-len",
        "32",
        "--tokens",
        "20000",
        "--out",
        out,
        tmp_path=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    notice = [ln for ln in proc.stderr.splitlines() if "asked for" in ln]
    assert len(notice) == 1 and "of the 20000 asked for" in notice[0], proc.stderr
    used = int(notice[0].split("using ")[1].split()[0])
    t = pd.read_csv(out)
    assert used < 20000 and (t["n_train"] + t["n_test"] == used).all()


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--seq-len", "64", "--tokens", "32"], "longer than the token budget"),
        (["--seq-len", "100", "--tokens", "2048"], "context of 64 tokens"),  # the tiny llama's max_position_embeddings
        (["--corpus", ""], "empty string"),
    ],
)
def test_window_and_corpus_specs_give_the_real_reason(cli, tiny_model_dir, args, needle):
    code, _, err = cli("measure", "--model", tiny_model_dir, *args)
    _single_line(code, err, needle)


def test_unexpected_errors_are_one_line_and_debug_shows_the_traceback(cli, monkeypatch):
    import linrec.app.cli as cli_mod

    def boom(args):
        raise ZeroDivisionError("planted")

    monkeypatch.setattr(cli_mod, "cmd_fetch", boom)
    parser = cli_mod.build_parser
    monkeypatch.setattr(cli_mod, "build_parser", lambda: _with(parser(), "fetch", boom))
    code, _, err = cli("fetch", "wiki")
    _single_line(code, err, "ZeroDivisionError", "--debug", expect=1, internal=True)
    with pytest.raises(ZeroDivisionError):
        cli("--debug", "fetch", "wiki")


def _with(parser, name, func):
    sub = next(a for a in parser._actions if isinstance(a, __import__("argparse")._SubParsersAction))
    sub.choices[name].set_defaults(func=func)
    return parser


def test_params_file_errors_are_one_line(cli, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: [smollm2-135m\ntokens: 2560\n")
    code, _, err = cli("figures", "--params", bad)
    _single_line(code, err, str(bad), "line")
    typo = tmp_path / "typo.yaml"
    typo.write_text("models: [smollm2-135m]\ntokenz: 2560\n")
    code, _, err = cli("figures", "--params", typo)
    _single_line(code, err, "tokenz", "known:", "tokens")


def test_device_map_measures_the_same_table_and_is_refused_where_it_does_not_apply(cli, tiny_args, tmp_path):
    assert cli("measure", *tiny_args, "--out", tmp_path / "one.csv")[0] == 0
    code, _, err = cli("measure", *tiny_args, "--device-map", "auto", "--no-cache", "--out", tmp_path / "map.csv")
    assert code == 0, err
    import pandas as pd

    one, mapped = pd.read_csv(tmp_path / "one.csv"), pd.read_csv(tmp_path / "map.csv")
    assert (one["r2_lin"] - mapped["r2_lin"]).abs().max() < 1e-12
    code, _, err = cli("swap", *tiny_args, "--device-map", "auto")
    _single_line(code, err, "--device-map is for the capturing commands")
    code, _, err = cli("measure", *tiny_args, "--device-map", "everywhere")
    _single_line(code, err, "--device-map", "--help")


def test_swap_of_an_encoder_is_one_line(cli, tmp_path):
    from helpers import save_tiny_model

    d = save_tiny_model(tmp_path / "bert", "bert")
    corpus = tmp_path / "text.txt"
    corpus.write_text(tiny_text(6000))
    code, _, err = cli("swap", "--model", d, "--corpus", corpus, "--seq-len", "32", "--tokens", "2048")
    _single_line(code, err, "is an encoder (bert): no LM head", "linrec measure")


def test_output_into_a_reader_that_stops_early_ends_quietly(tmp_path):
    """`linrec cache list | head -0`: the reader is gone before the first line is written; no error, exit 0."""
    env = {**os.environ, "LINREC_CACHE": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "linrec", "cache", "list"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    proc.stdout.close()  # our end of the pipe closes before the child has written anything
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0 and err == "", err


# ---- issue 30: nothing lost, nothing stale, nothing slow to refuse ---------------------------------------------
@pytest.fixture
def saved(cli, tiny_args, tmp_path):
    """An earlier linrec save of block 0 (its directory) and the bytes it holds."""
    d = tmp_path / "save"
    assert cli("swap", *tiny_args, "--blocks", "0", "--save", d)[0] == 0
    return d


def _edit(path, offset=-1):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("edited", ["config.json", "model.safetensors", "linrec_swaps.json"])
def test_an_edited_earlier_save_is_refused_and_kept_byte_for_byte(cli, tiny_args, saved, edited):
    st = (saved / edited).stat()
    if edited == "config.json":
        (saved / edited).write_text((saved / edited).read_text().replace("}", ', "note": "mine"}', 1))
    elif edited == "linrec_swaps.json":
        meta = json.loads((saved / edited).read_text())
        meta["info"]["note"] = "mine"
        (saved / edited).write_text(json.dumps(meta))
    else:
        _edit(saved / edited)  # a weight changed, same size
        os.utime(saved / edited, ns=(st.st_atime_ns, st.st_mtime_ns))  # and its mtime restored, as cp -p does
    before = _tree(saved)
    code, _, err = cli("swap", *tiny_args, "--blocks", "1", "--save", saved)
    _single_line(code, err, "never deletes or overwrites" if edited != "linrec_swaps.json" else "never deletes")
    if edited != "linrec_swaps.json":
        assert f"{edited} changed since linrec wrote it" in err
    assert _tree(saved) == before  # the user's bytes, untouched


@pytest.mark.parametrize("content", ["empty-folder", "folder-symlink", "file-symlink", "hidden-file"])
def test_a_save_directory_holding_anything_unlisted_is_refused(cli, tiny_args, tmp_path, saved, content):
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    for d in (saved, tmp_path / "fresh"):  # inside an earlier save, and alone in an otherwise empty directory
        d.mkdir(exist_ok=True)
        if content == "empty-folder":
            (d / "sub").mkdir()
        elif content == "folder-symlink":
            (d / "link").symlink_to(target, target_is_directory=True)
        elif content == "file-symlink":
            (d / "link.txt").symlink_to(target / "keep.txt")
        else:
            (d / ".notes").write_text("mine")
        names = sorted(p.name for p in d.iterdir())
        code, _, err = cli("swap", *tiny_args, "--blocks", "1", "--save", d)
        _single_line(code, err, "--save")
        assert sorted(p.name for p in d.iterdir()) == names  # nothing removed
    assert (target / "keep.txt").read_text() == "mine"


def test_a_symlinked_save_target_is_refused(cli, tiny_args, tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    code, _, err = cli("swap", *tiny_args, "--blocks", "0", "--save", tmp_path / "link")
    _single_line(code, err, "symbolic link")
    assert (tmp_path / "link").is_symlink() and list(real.iterdir()) == []


def _slow_save_in_a_child(flag, err, args) -> int:
    """`linrec ARGS` in a child forked from this process (torch and transformers already imported: a fresh
    interpreter spends 4 s importing them), with safetensors' save slowed down: once the staging folder is on disk the
    child writes `flag` and sleeps, to be killed. The child's output goes to `err`; it never returns into pytest (it
    leaves with os._exit, with the exit code the command line gives or 128 + the signal it caught). Returns its pid."""
    import time

    pid = os.fork()
    if pid:
        return pid
    code = 70
    try:
        fd = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        import safetensors.torch as st
        import torch

        torch.set_num_threads(1)  # no thread pool from before the fork is used in the child
        real = st.save_model

        def slow(*a, **k):
            real(*a, **k)
            flag.write_text("writing")  # the staging folder is on disk now
            time.sleep(120)

        st.save_model = slow
        code = _main(args)
    except SystemExit as exc:  # SIGTERM caught by the command line: 128 + SIGTERM
        code = exc.code if isinstance(exc.code, int) else 70
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        os._exit(code)


@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGKILL"])
def test_a_killed_save_leaves_nothing_in_the_users_directory(cli, tmp_path, tiny_args, signal_name):
    import signal
    import time

    home = tmp_path / "home"
    home.mkdir()
    (home / "thesis.tex").write_text("three years")
    flag, err = tmp_path / "flag", tmp_path / "child.err"
    args = ["swap", *tiny_args, "--blocks", "0", "--save", str(home / "swapped")]
    pid = _slow_save_in_a_child(flag, err, args)
    t0, status = time.time(), None
    while not flag.exists() and status is None and time.time() - t0 < 240:
        done, st = os.waitpid(pid, os.WNOHANG)
        status = st if done else None
        time.sleep(0.05)
    if not flag.exists():
        if status is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        pytest.fail(f"the child never staged its save: {err.read_text()[-3000:]}")
    staging = [p.name for p in home.iterdir() if p.name.startswith(".swapped.tmp-")]
    assert len(staging) == 1  # the save was being staged beside its target
    os.kill(pid, getattr(signal, signal_name))
    returncode = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    left = sorted(p.name for p in home.iterdir())
    if signal_name == "SIGTERM":  # caught: the staging folder is removed on the way out
        assert returncode == 128 + signal.SIGTERM and left == ["thesis.tex"], err.read_text()[-3000:]
    else:  # uncatchable: the leftover stays until the next save to that target removes it
        assert returncode == -signal.SIGKILL and left == sorted(["thesis.tex", *staging])
        code, _, err_text = cli(*args)  # the next save to that target
        assert code == 0, err_text
        assert sorted(p.name for p in home.iterdir()) == ["swapped", "thesis.tex"]
    assert (home / "thesis.tex").read_text() == "three years"


@pytest.mark.parametrize("blocks", ["a,b", "-1", ",", "0,,1", "1.5", "2", "0,7"])
def test_block_lists_are_checked_before_the_model_is_loaded(cli, tiny_args, monkeypatch, blocks):
    no_model_load(monkeypatch)
    code, _, err = cli("swap", *tiny_args, f"--blocks={blocks}")
    _single_line(code, err, "--blocks")
    if blocks in ("2", "0,7"):  # well formed, out of range: the config (2 blocks) is read, not the weights
        assert "blocks 0..1" in err


def test_window_longer_than_the_context_is_refused_before_loading_with_the_real_limit(cli, tmp_path, tiny_model):
    import transformers

    d = tmp_path / "ctx"
    tiny_model("llama").save_pretrained(d)
    cfg = transformers.AutoConfig.from_pretrained(d)
    assert cfg.max_position_embeddings >= 64
    corpus = tmp_path / "text.txt"
    corpus.write_text(tiny_text(6000))
    limit = cfg.max_position_embeddings
    for cmd in ("measure", "swap", "probe"):
        code, _, err = cli(cmd, "--model", d, "--corpus", corpus, "--seq-len", limit + 1, "--tokens", 100_000)
        _single_line(code, err, f"context of {limit} tokens", f"--seq-len {limit} or less")


@pytest.mark.parametrize("rank", ["33", "40", "0"])
def test_probe_ranks_beyond_the_width_are_refused_before_loading(cli, tiny_args, monkeypatch, rank):
    no_model_load(monkeypatch)
    code, _, err = cli("probe", *tiny_args, "--rank", rank)
    if rank == "0":
        _single_line(code, err, "--rank", "positive")
    else:
        _single_line(code, err, f"--rank {rank} is outside 1 … 32", "--rank 16")


@pytest.mark.parametrize("arg", [["--older-than", "-1"], ["--max-size", "-5"], ["--older-than", "nan"],
                                 ["--max-size", "inf"], ["--older-than", "-0.5"], ["--max-size", "1e400"]])  # fmt: skip
def test_prune_numbers_must_be_finite_and_not_negative(cli, tmp_path, monkeypatch, arg):
    monkeypatch.setenv("LINREC_CACHE", str(tmp_path / "c"))
    (tmp_path / "c" / "captures" / "m-0").mkdir(parents=True)
    code, _, err = cli("cache", "prune", *arg, "--dry-run")
    _single_line(code, err, arg[0], "finite number ≥ 0")
    assert (tmp_path / "c" / "captures" / "m-0").is_dir()


def test_report_bench_with_a_wrong_folder_leaves_the_readme_as_it_was(cli, tmp_path, monkeypatch):
    from linrec.base.files import project_root

    readme = project_root() / "docs" / "performance.md"
    before = readme.read_bytes()
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "capture.csv").write_text("benchmark,measure,value\n")
    for bench in (tmp_path / "NO_SUCH_DIR", tmp_path / "half", tmp_path):
        code, _, err = cli("report", "--bench", bench)
        _single_line(code, err, str(bench), "make bench")
        assert readme.read_bytes() == before


def test_report_from_a_missing_results_folder_leaves_the_report_as_it_was(cli, tmp_path):
    import yaml

    out = tmp_path / "r.md"
    out.write_text("the last report")
    for results in (tmp_path / "typo", tmp_path / "empty"):
        if results.name == "empty":
            results.mkdir()
        profile = tmp_path / "p.yaml"
        profile.write_text(yaml.safe_dump({"results_dir": str(results), "report_path": str(out)}))
        code, _, err = cli("report", "--params", profile)
        _single_line(code, err, str(results))
        assert out.read_text() == "the last report"
