"""The subcommands (linrec.app.commands): each writes its table or its save, checks what it can before the model
loads (blocks, windows, ranks, rows, device, cache, output paths), keeps what --no-cache needs and leaves nothing,
refuses a save target it did not write, and parses a model once along its path (issue 47)."""

import importlib
import json
import os
import pkgutil
import shutil
import sys

import pandas as pd
import pytest
import torch

import linrec
import linrec.inputs.sites as sites_module
from helpers import cli_process as _run
from helpers import linrec_left_in as _ours
from helpers import no_model_load, tiny_text
from helpers import one_line_error as _one_line_error
from helpers import single_line as _single_line
from linrec.analyses.spectrum import REGIMES
from linrec.inputs.source import ModelSource


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
    _one_line_error(
        proc,
        "too small for this curve",
        "lower the largest train size (--train-tokens; a profile's curve_train_tokens) or the held-out tokens "
        "(--test-tokens; curve_test_tokens)",
    )
    proc = _run(*args, "--train-tokens", "512,lots", tmp_path=tmp_path)
    _one_line_error(proc, "--train-tokens")


def test_probe_writes_the_table(tmp_path, tiny_model_dir):
    proc, t = _table("probe", tmp_path, tiny_model_dir, "--rank", "4")
    header = proc.stdout.splitlines()[0].split()
    assert header[-2:] == ["adam_reach", "cond_gram"]  # printed, with the line that says what the trained maps are
    assert "r2_trained_adam, r2_trained_sgd: a linear map trained the way a practitioner would" in proc.stdout
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
    assert "(Δ " in proc.stdout and "99% CI [" in proc.stdout and "95% CI" not in proc.stdout  # the level it has
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
    _one_line_error(_run(*common, "--route", "1.5", tmp_path=tmp_path), "--route must be a number from 0 to 1")


def test_swap_bad_blocks_and_save_without_blocks(tmp_path, tiny_model_dir):
    corpus = tmp_path / "text.txt"
    corpus.write_text(tiny_text(6000))
    common = ("swap", "--model", tiny_model_dir, "--corpus", str(corpus), "--seq-len", "32", "--tokens", "2048")
    _one_line_error(_run(*common, "--blocks", "0,7", tmp_path=tmp_path), "last block is 1 (no 7)")
    _one_line_error(_run(*common, "--save", str(tmp_path / "x"), tmp_path=tmp_path), "--blocks")
    _one_line_error(
        _run(*common, "--blocks", "0", "--first", "ffn", "--save", str(tmp_path / "x"), tmp_path=tmp_path),
        "--first map",
    )


def test_report_rebuilds_from_a_profile(tmp_path):
    import pandas as pd
    import yaml

    from linrec.base.tables import save_table

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


def _tree(path):
    return sorted((str(p.relative_to(path)), p.read_bytes()) for p in path.rglob("*") if p.is_file())


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
    notice = [ln for ln in proc.stderr.splitlines() if "holds only" in ln]
    assert len(notice) == 1 and "of the 20,000 asked for" in notice[0], proc.stderr
    used = int(notice[0].split("using ")[1].split()[0].replace(",", ""))
    t = pd.read_csv(out)
    assert used < 20000 and (t["n_train"] + t["n_test"] == used).all()
    # said before the capture (issue 65: after a 14-minute capture), and the cost line counts the tokens used
    lines = proc.stderr.splitlines()
    cost = next(i for i, ln in enumerate(lines) if ln.startswith("capturing "))
    assert lines.index(notice[0]) < cost and f"({used:,} tokens of the 20,000 asked for)" in lines[cost]


def test_a_corpus_too_small_for_the_width_names_a_larger_corpus_not_more_tokens(tmp_path, tiny_model_dir):
    """Issue 65: a 512-token corpus with --tokens 40000 said "raise --tokens to at least 1156"; the corpus ran out,
    so the fix is a larger corpus (the tiny llama is 32 wide: 2 train windows of 16 rows are too few)."""
    corpus = tmp_path / "small.txt"
    corpus.write_text(tiny_text(40))
    proc = _run("measure", "--model", tiny_model_dir, "--corpus", corpus, "--seq-len", "16", "--tokens", "40000",
                tmp_path=tmp_path)  # fmt: skip
    _one_line_error(proc, "no affine map can be fitted", "the corpus is too small: give a larger corpus")
    assert "raise --tokens" not in proc.stderr.strip().splitlines()[-1]
    before = proc.stderr.split("capturing ")[0]
    assert "holds only" in before and "give a larger corpus" in before  # both said before the capture


def test_measure_keeps_no_row_sample_unless_asked_and_probe_keeps_one(cli, own_cache, tiny_args):
    """Issue 65 item 7: `linrec measure` kept a 10,240-row sample per block that it never reads (1.32 GiB for
    SmolLM2). Its capture now keeps none by default; `--sample-rows N` asks for N; the probe, which reads rows,
    keeps the default sample, and serves a later measure from its entry."""
    from linrec.base.files import unseal

    def entries():
        return {p.name: unseal(p / "meta.json")["config"]["sample_rows"] for p in (own_cache[0] / "captures").iterdir()
                if (p / "meta.json").is_file()}  # fmt: skip

    code, _, err = cli("measure", *tiny_args)
    assert code == 0, err
    assert list(entries().values()) == [0]
    code, _, err = cli("measure", *tiny_args, "--sample-rows", "100")
    assert code == 0, err
    assert sorted(entries().values()) == [0, 100]
    code, _, err = cli("probe", *tiny_args, "--rank", "4")
    assert code == 0, err
    assert sorted(entries().values()) == [0, 100, 10_240]


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


@pytest.mark.parametrize("blocks", ["a,b", "-1", ",", "0,,1", "1.5", "2", "0,7"])
def test_block_lists_are_checked_before_the_model_is_loaded(cli, tiny_args, monkeypatch, blocks):
    no_model_load(monkeypatch)
    code, _, err = cli("swap", *tiny_args, f"--blocks={blocks}")
    _single_line(code, err, "--blocks")
    if blocks in ("2", "0,7"):  # well formed, out of range: the config (2 blocks) is read, not the weights
        assert f"--blocks {blocks}: this model's last block is 1 (no {blocks[-1]}); e.g. --blocks 0,1" in err


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
        _single_line(code, err, "--rank 0 is out of range", "≥ 1", "--rank 16")
    else:
        _single_line(code, err, f"--rank {rank} is outside 1 … 32", "--rank 16")


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


def _cached(cache) -> list[str]:
    kinds = ("captures", "curves", "training")
    return sorted(str(p.relative_to(cache)) for kind in kinds for p in (cache / kind).glob("*"))


# ---- case 5: --no-cache keeps the rows a command needs -------------------------------------------------------------
TRAIN_TEXT = " ".join(f"doc{k} " + " ".join("red green blue cyan"[(k % 3) :] for _ in range(40)) + "\n<|endoftext|>\n"
                   for k in range(30))  # fmt: skip


NO_CACHE = {
    "measure": ["measure"],
    "curve": ["curve", "--train-tokens", "512,1024", "--test-tokens", "512", "--seeds", "2"],
    "probe": ["probe", "--rank", "4"],
    "spectrum": ["spectrum"],
    "swap": ["swap", "--blocks", "0", "--test-windows", "4"],
    "swap-route": ["swap", "--route", "0.5", "--blocks", "0", "--test-windows", "4"],
    "swap-budget": ["swap", "--budget-ppl", "1e9", "--screening-windows", "2", "--test-windows", "4"],
}


@pytest.mark.parametrize("command", [*NO_CACHE, "train"])
def test_every_subcommand_runs_with_no_cache_reading_and_leaving_nothing(cli, own_cache, tiny_args, tmp_path, command):
    """Each subcommand with --no-cache: its table, nothing written to the cache, and nothing left in TMPDIR (the
    probe's and the gate's row sample lived there while the command ran). Before: probe and swap --route captured
    everything, then "this capture kept no raw rows"."""
    cache, scratch = own_cache
    if command == "train":
        text = tmp_path / "text.txt"
        text.write_text(TRAIN_TEXT)
        args = ["train", "--d-model", "16", "--layers", "2", "--heads", "2", "--vocab", "300", "--seq-len", "16",
                "--batch-size", "8", "--steps", "3", "--text", text]  # fmt: skip
    else:
        args = [*NO_CACHE[command], *tiny_args]
        if command == "curve":
            args = [a for a in args if a not in ("--tokens", "2048")]
    code, out, err = cli(*args, "--no-cache")
    assert code == 0, err
    assert out.strip()
    if command == "swap-route":
        assert "quantile" in out or "relative" in out
    assert _cached(cache) == []
    import gc

    gc.collect()  # the capture (and its scratch rows) are garbage once the command has returned
    if command == "train":  # its checkpoints, in a temporary folder, are what it prints
        made = _ours(scratch)
        assert len(made) == 1 and made[0].startswith("linrec-train-") and str(scratch / made[0]) in out
        return
    assert _ours(scratch) == []


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["probe", "--rank", "4", "--sample-rows", "0"], "at least 43"),  # tiny llama: 32 wide, 80 % train rows
        (["probe", "--rank", "4", "--sample-rows", "40"], "at least 43"),
        (["swap", "--route", "0.5", "--sample-rows", "0"], "at least 10"),
        (["swap", "--route", "0.5", "--sample-rows", "1"], "at least 10"),
        (["swap", "--route", "0.5", "--sample-rows", "3"], "at least 10"),
    ],
)
def test_too_few_rows_for_the_probe_or_the_gate_are_refused_before_the_model_loads(
    cli, own_cache, tiny_args, monkeypatch, extra, needle
):
    no_model_load(monkeypatch)
    code, _, err = cli(*extra[:-2], *tiny_args, *extra[-2:])
    _single_line(code, err, "--sample-rows", needle)
    assert _cached(own_cache[0]) == []


# ---- case 6: checked before the load -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "extra, needles",
    [
        (["--test-windows", "1"], ["--test-windows 1 is out of range", "≥ 2"]),
        (["--screening-windows", "100000"], ["--screening-windows", "51 train windows", "50 or fewer"]),
        (["--screening-windows", "51", "--budget-ppl", "1"], ["--screening-windows", "50 or fewer"]),
    ],
)
def test_window_counts_are_checked_before_the_model_loads(cli, own_cache, tiny_args, monkeypatch, extra, needles):
    no_model_load(monkeypatch)
    code, _, err = cli("swap", *tiny_args, *extra)
    _single_line(code, err, *needles)


@pytest.mark.parametrize("command", [["measure"], ["probe", "--rank", "4"], ["swap", "--blocks", "0"]])
def test_a_cache_that_cannot_take_the_capture_is_refused_before_the_model_loads(
    cli, tmp_path, tiny_args, monkeypatch, command
):
    cache = tmp_path / "ro-cache"
    cache.mkdir()
    (cache / "captures").write_text("not a directory")  # as root, chmod cannot make a directory read-only
    monkeypatch.setenv("LINREC_CACHE", str(cache))
    no_model_load(monkeypatch)
    code, _, err = cli(*command, *tiny_args)
    _single_line(code, err, "$LINREC_CACHE", "--no-cache")


def test_a_read_only_cache_still_serves_what_it_holds(cli, own_cache, tiny_args, monkeypatch):
    import linrec.base.cache
    from linrec.base.errors import LinrecError

    assert cli("measure", *tiny_args)[0] == 0  # the entry is made

    def read_only(*a, **k):
        raise LinrecError("the cache directory … is not writable; set $LINREC_CACHE …, or pass --no-cache")

    monkeypatch.setattr(linrec.base.cache, "writable", read_only)
    monkeypatch.setattr(linrec.base.cache, "check_cache_writable", read_only)
    no_model_load(monkeypatch)
    code, out, err = cli("measure", *tiny_args)
    assert code == 0, err
    assert "r2_lin" in out


def test_prune_with_a_size_beyond_any_disk_prunes_nothing(cli, own_cache):
    (own_cache[0] / "captures" / "m-0").mkdir(parents=True)
    code, _, err = cli("cache", "prune", "--max-size", "1e300", "--dry-run")
    assert code == 0, err
    assert "would remove 0 entries" in err
    assert (own_cache[0] / "captures" / "m-0").is_dir()


# ---- report: damaged results tables and an unwritable report_path -------------------------------------------------
@pytest.fixture
def results(tmp_path):
    """A copy of the default profile's committed results, and a profile that reports from it into tmp_path."""
    import shutil

    import yaml

    from linrec.base.files import project_root

    res = tmp_path / "results"
    shutil.copytree(project_root() / "results" / "default", res, ignore=shutil.ignore_patterns("notebooks"))
    profile = tmp_path / "p.yaml"
    profile.write_text(yaml.safe_dump({"results_dir": str(res), "report_path": str(tmp_path / "out" / "r.md"),
                                       "figures_dir": str(tmp_path / "figs")}))  # fmt: skip
    return res, profile


@pytest.mark.parametrize("damage", ["empty", "random-bytes", "not-a-number", "other-csv", "a-folder", "a-fifo"])
def test_a_damaged_results_table_is_one_line_naming_its_notebook(cli, results, damage):
    res, profile = results
    code, _, err = cli("report", "--params", profile)
    assert code == 0, err  # the copy reports as it is
    swap = res / "swap.csv"
    if damage == "empty":
        swap.write_bytes(b"")
    elif damage == "random-bytes":
        swap.write_bytes(os.urandom(4096))
    elif damage == "not-a-number":
        lines = swap.read_text().splitlines()
        cells = lines[1].split(",")
        cells[4] = "abc"  # r2_lin
        swap.write_text("\n".join([lines[0], ",".join(cells), *lines[2:]]) + "\n")
    elif damage == "other-csv":
        swap.write_text("name,age\nada,36\n")
    elif damage == "a-folder":
        swap.unlink()
        swap.mkdir()
    else:
        swap.unlink()
        os.mkfifo(swap)
    code, _, err = cli("report", "--params", profile)
    _single_line(code, err, str(swap), "notebook 06")


def test_an_unwritable_report_path_is_one_line_before_the_report_is_rendered(cli, results, tmp_path, monkeypatch):
    import yaml

    import linrec.outputs.report

    res, _ = results
    monkeypatch.setattr(linrec.outputs.report, "render", lambda *a, **k: pytest.fail("rendered before the check"))
    for target, named in (("/sys/linrec-test/r.md", "/sys/linrec-test"), (tmp_path, str(tmp_path))):
        profile = tmp_path / "ro.yaml"  # sysfs: not writable even by root; a folder
        profile.write_text(yaml.safe_dump({"results_dir": str(res), "report_path": str(target)}))
        code, _, err = cli("report", "--params", profile)
        _single_line(code, err, "report_path", named)


def test_probe_with_no_cache_keeps_exactly_the_rows_it_was_asked_for(cli, own_cache, tiny_args, tmp_path):
    """Issue 50: `linrec probe … --sample-rows 512 --no-cache` stopped with "this capture kept no raw rows" although
    rows were asked for. With --no-cache the row sample lives in TMPDIR while the command runs: the probe fits on the
    rows asked for (train and test together), and nothing stays behind in the cache or TMPDIR."""
    out = tmp_path / "probe.csv"
    code, _, err = cli("probe", *tiny_args, "--rank", "4", "--sample-rows", "300", "--no-cache", "--out", out)
    assert code == 0, err
    table = pd.read_csv(out)
    assert ((table["n_train_rows"] + table["n_test_rows"]) == 300).all()
    assert _cached(own_cache[0]) == []


# ---- along the command line ------------------------------------------------------------------------------------------
@pytest.fixture
def counted(monkeypatch):
    """{"parse": [spec, …], "find_ffn_sites": [model class, …]}: every parse of a spec and every search for FFN sites
    from here on, wherever a module imported the function from (every linrec module is imported first)."""
    for info in pkgutil.walk_packages(linrec.__path__, "linrec."):
        if not info.name.endswith("__main__"):  # `python -m linrec` runs the command line on import
            importlib.import_module(info.name)
    calls = {"parse": [], "find_ffn_sites": []}
    parse, find = ModelSource.parse.__func__, sites_module.find_ffn_sites

    def counting_parse(cls, spec):
        calls["parse"].append(spec)
        return parse(cls, spec)

    def counting_find(model):
        calls["find_ffn_sites"].append(type(model).__name__)
        return find(model)

    monkeypatch.setattr(ModelSource, "parse", classmethod(counting_parse))
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("linrec") and getattr(module, "find_ffn_sites", None) is find:
            monkeypatch.setattr(module, "find_ffn_sites", counting_find)
    return calls


@pytest.fixture
def cli_args(tmp_path, tiny_model_dir):
    corpus = tmp_path / "text.txt"
    corpus.write_text(tiny_text(6000))
    return ["--corpus", str(corpus), "--seq-len", "32", "--tokens", "2048"]


def _once(cli, calls, *args, sites: int = 1) -> None:
    for v in calls.values():
        v.clear()
    code, _, err = cli(*args)
    assert code == 0, err
    assert len(calls["parse"]) == 1, calls["parse"]
    assert len(calls["find_ffn_sites"]) == sites, calls["find_ffn_sites"]


@pytest.mark.parametrize(
    "how",
    [["--blocks", "0", "--save", "SAVE"], ["--budget-ppl", "1e9", "--screening-windows", "2"], ["--route", "0.5"]],
    ids=["blocks-save", "budget", "route"],
)
def test_swap_parses_the_model_once_and_finds_its_sites_once(cli, counted, cli_args, tiny_model_dir, tmp_path, how):
    """`linrec swap` on the tiny model, its capture computed, then read from the cache: one parse of --model, one
    search for its FFN sites, each time (before `ModelSource` and `LoadedModel.sites`: 4 parses, 7 to 16 searches)."""
    how = [str(tmp_path / "saved") if a == "SAVE" else a for a in how]
    _once(cli, counted, "swap", "--model", tiny_model_dir, *cli_args, *how)
    how = [str(tmp_path / "saved-again") if a.endswith("saved") else a for a in how]
    _once(cli, counted, "swap", "--model", tiny_model_dir, *cli_args, *how)
    if "--save" in how:  # and a swap of the saved model: its sites found once too, by the loader of saves
        _once(cli, counted, "swap", "--model", str(tmp_path / "saved"), *cli_args, "--blocks", "1")


def test_measure_parses_the_model_once_and_finds_its_sites_only_to_capture(cli, counted, cli_args, tiny_model_dir):
    _once(cli, counted, "measure", "--model", tiny_model_dir, *cli_args)
    _once(cli, counted, "measure", "--model", tiny_model_dir, *cli_args, sites=0)  # from the cache: no model


def test_figures_on_a_missing_gpu_is_refused_in_one_line_before_any_notebook(monkeypatch, capsys):
    """`linrec figures --params params/zoo.yaml --device cuda` where torch has no GPU: exit 2, one line naming the
    devices there are, and no notebook started; a device that exists is passed to every notebook as `device`."""
    import linrec.app.notebooks as nb
    from linrec.app.cli import main

    called = []
    monkeypatch.setattr(nb, "run_notebooks", lambda *a, **kw: called.append(kw))
    if not torch.cuda.is_available():
        code = main(["figures", "--params", "params/zoo.yaml", "--only", "08", "--device", "cuda"])
        err = capsys.readouterr().err.strip()
        assert code == 2 and not called and len(err.splitlines()) == 1 and "cuda" in err and "available: cpu" in err
    assert main(["figures", "--params", "params/zoo.yaml", "--only", "08", "--device", "cpu"]) in (0, None)
    assert called[-1]["overrides"] == {"device": "cpu"}


def test_the_train_command_reports_the_run_and_refuses_a_missing_gpu(colour_text, capsys):
    """`linrec train` trains (or reads) one run and prints its size, tokens per parameter and checkpoints; asking for
    a GPU where there is none is one line naming the fix, before any work."""
    from linrec.app.cli import main

    args = ["train", "--text", colour_text, "--d-model", "16", "--layers", "2", "--heads", "2", "--vocab", "300",
            "--seq-len", "16", "--batch-size", "8", "--steps", "6"]  # fmt: skip
    assert main(args) in (0, None)
    out = capsys.readouterr().out
    assert "gelu-i0-d0-colours:" in out and "tokens seen" in out and out.count("step ") >= 4 and "measure.txt" in out
    if not torch.cuda.is_available():
        code = main([*args, "--device", "cuda"])
        err = capsys.readouterr().err
        assert code == 2 and "Traceback" not in err and "cuda" in err.lower()


def test_linrec_studies_lists_the_stages_and_shows_one_whole(capsys):
    """`linrec studies`: a line per stage from `STUDIES` (its claims from the claims' rows); `linrec studies NAME`:
    every parameter of its section with what it does and, with --params, that profile's value where it differs;
    its tables as the registry lists them, its claims and figures. An unknown name is one line listing the names."""
    from helpers import run_main
    from linrec.base.registry import TABLES
    from linrec.studies.stages import STUDIES, study

    assert run_main(["studies"]) == 0
    out = capsys.readouterr().out
    for s in STUDIES:
        assert f"{s.notebook}  {s.name}" in out and s.title in out
    assert "claims: 3, 7a, 7b" in out and "claims: 2a, 2b" in out
    assert run_main(["studies", "ceiling", "--params", "smoke"]) == 0
    out = capsys.readouterr().out
    for d in study("ceiling").parameters:
        assert f"{d.declaration()}  # {d.about}" in out
    assert "curve_seeds: int = 3  # the learning curve's split seeds 0 … curve_seeds − 1  [smoke: 2]" in out
    assert "profile: str = 'capture'" in out and "[smoke: 'capture']" not in out  # the same value: not repeated
    assert all(f"  {t}: {TABLES[t].about}" in out for t in study("ceiling").tables)
    assert "claims: 1 (R²_lin is heterogeneous" in out and "figures: fig2_r2_lin, fig2c_learning_curves" in out
    assert run_main(["studies", "regimes"]) == 0
    assert "parameters: none of its own" in capsys.readouterr().out
    assert run_main(["studies", "ceilings"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "no study 'ceilings' (did you mean 'ceiling'?); the studies are 01 (capture)" in err
