"""A model loaded once (issue 47): `linrec.inputs.source.ModelSource` parses a spec once and keys the caches exactly
as the string-dispatching code before it did; `LoadedModel.sites` finds a model's FFN sites once and hands them to
every stage; along `linrec swap` (and `linrec measure`) the spec is parsed once and the sites are found once."""

import importlib
import pkgutil
import sys

import pytest

import linrec
import linrec.inputs.sites as sites_module
from helpers import tiny_text
from linrec.inputs.source import ModelSource


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
