"""Issue 51: every input a user can type and every file state a user can make ends in one line naming the fix, checked
before the model loads where it can be; `--no-cache` keeps what each subcommand needs."""

import errno
import os
import sys

import pandas as pd
import pytest

from helpers import no_model_load, tiny_text
from helpers import single_line as _single_line


@pytest.fixture
def tiny_args(tmp_path, tiny_model_dir):
    corpus = tmp_path / "text.txt"
    corpus.write_text(tiny_text(6000))
    return ["--model", tiny_model_dir, "--corpus", str(corpus), "--seq-len", "32", "--tokens", "2048"]


def _cached(cache) -> list[str]:
    kinds = ("captures", "curves", "training")
    return sorted(str(p.relative_to(cache)) for kind in kinds for p in (cache / kind).glob("*"))


def _ours(scratch) -> list[str]:
    """What linrec left in TMPDIR (torch leaves its own folders there)."""
    return sorted(p.name for p in scratch.iterdir() if p.name.startswith("linrec-"))


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
        (["--test-windows", "1"], ["--test-windows", "at least 2"]),
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


# ---- case 7: input and environment errors are one line, never "a bug" ----------------------------------------------
@pytest.mark.parametrize(
    "arg",
    [
        ["--lr", "nan"],
        ["--lr", "inf"],
        ["--lr", "-inf"],
        ["--lr", "0"],
        ["--lr", "-1e-3"],
        ["--data-seed", "-1"],
        ["--init-seed", "-1"],
    ],  # fmt: skip
)
def test_train_numbers_are_refused_by_the_parser(cli, own_cache, monkeypatch, arg):
    import linrec.inputs.training

    monkeypatch.setattr(linrec.inputs.training, "get_run", lambda *a, **k: pytest.fail("trained on a bad number"))
    code, _, err = cli("train", *arg, "--no-cache")
    _single_line(code, err, arg[0])


def test_prune_with_a_size_beyond_any_disk_prunes_nothing(cli, own_cache):
    (own_cache[0] / "captures" / "m-0").mkdir(parents=True)
    code, _, err = cli("cache", "prune", "--max-size", "1e300", "--dry-run")
    assert code == 0, err
    assert "would remove 0 entries" in err
    assert (own_cache[0] / "captures" / "m-0").is_dir()


def test_a_closed_stdout_is_one_line_before_any_work(cli, own_cache, monkeypatch):
    import linrec.app.commands

    monkeypatch.setattr(linrec.app.commands, "cmd_cache", lambda args: pytest.fail("ran with nowhere to print"))
    monkeypatch.setattr(sys, "stdout", None)  # what Python sets when started with fd 1 closed (`linrec … >&-`)
    code, _, err = cli("cache", "list")
    _single_line(code, err, "standard output is closed", "/dev/null")


def _raising(monkeypatch, err: BaseException):
    """`linrec fetch wiki` raises `err`."""
    import argparse

    import linrec.app.cli as cli_mod

    def boom(args):
        raise err

    parser = cli_mod.build_parser

    def build():
        p = parser()
        sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
        sub.choices["fetch"].set_defaults(func=boom)
        return p

    monkeypatch.setattr(cli_mod, "build_parser", build)


def _wrapped(inner: OSError) -> Exception:
    try:
        try:
            raise inner
        except OSError as e:
            raise RuntimeError("safetensors: failed to write") from e
    except RuntimeError as outer:
        return outer


@pytest.mark.parametrize(
    "err, needles",
    [
        (OSError(errno.ENOSPC, "No space left on device"), ["No space left", "free space", "$LINREC_CACHE"]),
        (OSError(errno.ENOSPC, "No space left on device", "/data/cache/x.npy"), ["/data/cache/x.npy", "free space"]),
        (OSError(errno.EROFS, "Read-only file system", "/mnt/ro/t.csv"), ["/mnt/ro/t.csv", "writable place"]),
        (PermissionError(errno.EACCES, "Permission denied", "/srv/x"), ["/srv/x", "make it writable"]),
        (_wrapped(BrokenPipeError(errno.EPIPE, "Broken pipe")), ["output went away", "file"]),
        (OSError(errno.EBADF, "Bad file descriptor"), ["output is closed"]),
        ("wrapped", ["No space left", "free space"]),
    ],
)
def test_what_the_machine_refuses_is_one_line_naming_the_fix(cli, monkeypatch, err, needles):
    if err == "wrapped":
        err = _wrapped(OSError(errno.ENOSPC, "No space left on device"))
    _raising(monkeypatch, err)
    code, _, text = cli("fetch", "wiki")
    _single_line(code, text, *needles)


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


# ---- case 9: a profile's nested keys and empty lists, checked when it is loaded ------------------------------------
@pytest.mark.parametrize(
    "profile, needles",
    [
        ({"training": {"d_model": "lots"}}, ["training: d_model must be a whole number", "'lots'"]),
        ({"training": {"d_modle": 16}}, ["unknown training setting(s) d_modle", "known: layout, d_model"]),
        ({"training": {"steps": 1.5}}, ["training: steps must be a whole number"]),
        ({"training": {"lr": float("nan")}}, ["training: lr must be a finite number > 0"]),
        ({"training": {"d_model": 30, "n_heads": 4}}, ["training: d_model 30 must split into 4 heads"]),
        ({"training": {"device": "cuda"}}, ["unknown training setting(s) device", "profile's own key"]),
        ({"models": []}, ["models is empty", "models: [smollm2-135m]"]),
        ({"corpora": []}, ["corpora is empty"]),
        ({"train_init_seeds": []}, ["train_init_seeds is empty"]),
        ({"init_seeds": []}, ["init_seeds is empty"]),
        ({"capture": {"tokens": -5}}, ["capture: token budget must be positive"]),
        ({"capture": {"seq_len": 4096, "tokens": 1024}}, ["capture: --seq-len 4096 is longer"]),
        ({"cross_pairs": [["gpt2"]]}, ["cross_pairs must be a list of [inputs model, FFN model] pairs"]),
    ],
)
def test_a_profiles_nested_keys_and_empty_lists_are_checked_when_it_is_loaded(cli, tmp_path, monkeypatch, profile,
                                                                               needles):  # fmt: skip
    """`linrec figures` stops at the profile, before notebook 01 (`models: []` was an IndexError there; a typo in
    `training:` failed in notebook 08 after 01–07 had run)."""
    import yaml

    import linrec.app.notebooks

    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({**profile, "results_dir": str(tmp_path / "results")}))
    monkeypatch.setattr(linrec.app.notebooks, "notebooks", lambda root: pytest.fail("a notebook list was read"))
    code, _, err = cli("figures", "--params", path)
    _single_line(code, err, str(path), *needles)


def test_the_repositorys_profiles_load(tmp_path):
    from linrec.app.profile import load_profile
    from linrec.base.files import project_root

    root = project_root()
    for profile in sorted((root / "params").glob("*.yaml")):
        load_profile(profile, root=root)


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
