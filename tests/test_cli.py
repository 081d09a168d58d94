"""`linrec` on bad input: non-zero exit, one line naming the fix, no traceback."""

import os
import subprocess
import sys

import pytest

from _tiny_text import tiny_text
from linrec.spectrum import REGIMES


def _run(*args, tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "LINREC_CACHE": str(tmp_path / "cache")}
    return subprocess.run([sys.executable, "-m", "linrec", *args], capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture
def short_text(tmp_path):
    p = tmp_path / "short.txt"
    p.write_text("Just a few words here.")
    return str(p)


@pytest.fixture
def tiny_model_dir(tmp_path, tiny_model):
    from _tiny_text import tiny_tokenizer

    d = tmp_path / "model"
    tiny_model("llama").save_pretrained(d)
    tiny_tokenizer().save_pretrained(d)
    return str(d)


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
    _one_line_error(proc, "smollm2-135m")


def test_unknown_corpus(tmp_path, tiny_model_dir):
    proc = _run("measure", "--model", tiny_model_dir, "--corpus", "no-such-corpus", tmp_path=tmp_path)
    _one_line_error(proc, "wiki")


def test_corpus_too_short_for_one_test_window(tmp_path, tiny_model_dir, short_text):
    proc = _run("measure", "--model", tiny_model_dir, "--corpus", short_text, tmp_path=tmp_path)
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
    proc = _run(command, "--model", model_dir, "--corpus", str(corpus), "--seq-len", "32", "--tokens", "2048", *extra, "--out", str(out), tmp_path=tmp_path)
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


def test_probe_writes_the_table(tmp_path, tiny_model_dir):
    _, t = _table("probe", tmp_path, tiny_model_dir, "--rank", "4")
    for col in ["model", "block", "r2_lin", "r2_poly", "gain", "r2_trained_adam", "r2_trained_sgd", "cond_gram"]:
        assert col in t.columns
    assert list(t["block"]) == [0, 1]
    assert ((t["gain"] - (t["r2_poly"] - t["r2_lin_rows"])).abs() < 1e-12).all()
    assert ((t["r2_lin_rows"] - t["r2_lin"]).abs() < 1e-6).all()  # every row is in the sample here: same held-out set


def test_spectrum_writes_the_table(tmp_path, tiny_model_dir):
    _, t = _table("spectrum", tmp_path, tiny_model_dir)
    for col in ["model", "block", "r2_lin", "r2_feature_median", "top1_var_share", "r2_ex_top1", "r2_ex_top8", "eff_rank_out", "eff_rank_in", "cond_gram", "first_var_share", "r2_ex_first", "regime"]:
        assert col in t.columns
    assert set(t["regime"]) <= set(REGIMES)
    assert ((t["eff_rank_out"] >= 1) & (t["eff_rank_out"] <= 32)).all()  # tiny llama: width 32


def test_swap_writes_the_table_and_saves_the_greedy_model(tmp_path, tiny_model_dir):
    from linrec.models import perplexity
    from linrec.swap import load_swapped

    save = tmp_path / "compressed"
    proc, t = _table("swap", tmp_path, tiny_model_dir, "--budget-ppl", "1e9", "--probe-windows", "2", "--save", str(save))
    for col in ["model", "block", "r2_lin", "ppl_base", "ppl_swapped", "delta_ppl", "params_ffn", "params_linear", "probe_delta_ppl"]:
        assert col in t.columns
    assert list(t["block"]) == [0, 1]
    assert ((t["delta_ppl"] - (t["ppl_swapped"] - t["ppl_base"])).abs() < 1e-9).all()
    assert (t["params_ffn"] == 3 * 32 * 64).all() and (t["params_linear"] == 32 * 32 + 32).all()  # tiny llama
    assert "greedy swap" in proc.stdout and "blocks [0, 1] swapped" in proc.stdout  # a huge budget keeps every block
    back = load_swapped(save)
    final = float(proc.stdout.split("→ ")[1].split()[0])
    from linrec.corpora import load_windows

    w = load_windows(str(tmp_path / "text.txt"), back.tokenizer, seq_len=32, tokens=2048)
    assert abs(perplexity(back.model, w.split("test")) - final) <= 1e-4 * final  # the printed ppl is the saved model's


def test_swap_bad_blocks_and_save_without_blocks(tmp_path, tiny_model_dir):
    corpus = tmp_path / "text.txt"
    corpus.write_text(tiny_text(6000))
    common = ("swap", "--model", tiny_model_dir, "--corpus", str(corpus), "--seq-len", "32", "--tokens", "2048")
    _one_line_error(_run(*common, "--blocks", "0,7", tmp_path=tmp_path), "0..1")
    _one_line_error(_run(*common, "--save", str(tmp_path / "x"), tmp_path=tmp_path), "--blocks")


def test_report_rebuilds_from_a_profile(tmp_path):
    import pandas as pd
    import yaml

    results = tmp_path / "results"
    results.mkdir()
    pd.DataFrame([{"model": "m", "blocks": 12, "min R²_lin": 0.25, "max R²_lin": 0.75, "largest jump between adjacent blocks": 0.5,
                   "direction changes with depth": 4, "median κ(Gram)": 1e5}]).to_csv(results / "r2_lin_summary.csv", index=False)
    profile = tmp_path / "p.yaml"
    profile.write_text(yaml.safe_dump({"models": ["m"], "results_dir": str(results), "figures_dir": str(tmp_path / "f"), "report_path": str(tmp_path / "r.md")}))
    proc = _run("report", "--params", str(profile), tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "0.250 to 0.750" in (tmp_path / "r.md").read_text()
    proc = _run("report", "--params", str(tmp_path / "missing.yaml"), tmp_path=tmp_path)
    _one_line_error(proc, "params/")
