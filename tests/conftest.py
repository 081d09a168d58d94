"""Shared fixtures: an isolated cache for the whole session,
tiny random-weight models built from configs (no download).

Tests marked `models` read the offline models and corpora `make test` fetches (FETCHED); when the selected tests
include one and they are not in the cache, the session stops at collection with one line saying how to fetch them
and how to run the rest (`pytest -m "not models"`)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest


def pytest_configure(config):
    """Under pytest-xdist (pyproject's addopts: `-n auto --dist loadfile`, one worker per CPU), each worker and what
    it starts (CLI subprocesses, torchrun ranks) runs torch and BLAS on one thread: workers side by side with pools
    sized to every CPU would stall each other (see `linrec.base.threads.free_cpus`). A notebook run inside a worker
    sizes
    its kernels to the CPUs the other workers leave free, as `linrec figures` always does."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ[var] = "1"
        import torch

        torch.set_num_threads(1)
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist): where workers leave a stop line
        config.stash[_STOP] = Path(tempfile.mkdtemp(prefix="linrec-stop-")) / "line"


def pytest_unconfigure(config):
    if _STOP in config.stash:
        shutil.rmtree(config.stash[_STOP].parent, ignore_errors=True)


# The files that take longest, longest first (pytest --durations, 2 cores, 2026-11-27: test_notebooks.py 632 CPU s
# on its worker, then about 20-35 s each for the next; the rest of the list from the summed --durations of a run
# under load, 2026-11-29), by their path under tests/: with one file per worker (`--dist loadfile`) the longest start
# first and the short ones fill in beside them. pytest-xdist keeps this order only under `--no-loadscope-reorder`
# (pyproject's addopts): by default it reorders the files by how many tests each holds, which had put
# test_notebooks.py eighth and the one- to three-test files (test_integration.py, test_reproducible.py,
# stats/test_distributed.py, 20-40 s each) last. A file missing here only runs later; the order changes no result
# (test_lab.py stays before test_teaching.py: both run notebook 00, and the order they ran in is kept).
LONGEST_FIRST = ("test_notebooks.py", "outputs/test_report.py", "test_lab.py", "test_teaching.py",
                 "test_integration.py", "app/test_notebooks.py", "studies/test_probe.py", "studies/test_training.py",
                 "test_environment.py", "test_reproducible.py", "test_peers.py", "stats/test_distributed.py",
                 "analyses/test_memo.py", "outputs/test_claim_table.py", "studies/test_swap.py",
                 "outputs/test_plots_swap.py", "analyses/test_calibration.py", "outputs/test_rule_log.py",
                 "app/test_commands.py", "outputs/test_refresh.py")  # fmt: skip
TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(session, config, items):
    """The longest files first (LONGEST_FIRST), every other file after them in its usual order."""
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(_under_tests(item.path), len(rank)))


def _under_tests(path: Path) -> str:
    """`path` as LONGEST_FIRST names it: under tests/, or its name alone for a file elsewhere."""
    path = path.resolve()
    return path.relative_to(TESTS).as_posix() if path.is_relative_to(TESTS) else path.name


SHARED = ("wheels", "models", "corpora")  # fetched downloads, shared read-only with the user's cache
FETCHED = ("smollm2-135m", "minilm-l6", "wiki", "web", "code")  # what `make test` fetches; `models` tests read them
_STOP = pytest.StashKey[Path]()


def _user_cache() -> Path:
    return Path(os.environ.get("LINREC_CACHE") or Path.home() / ".cache" / "linrec").expanduser()


def not_fetched(cache: Path) -> list[str]:
    """Which of FETCHED are not in `cache`: by the files `linrec fetch` leaves there (whether they exist; the tests
    that read them check their sha256)."""
    from linrec.inputs.corpora import EXLLAMA, OFFLINE_CORPORA
    from linrec.inputs.fetching import wheel_name
    from linrec.inputs.models import COMPLETE_FILE, OFFLINE_MODELS

    missing = []
    for name in FETCHED:
        if name in OFFLINE_MODELS:
            spec = OFFLINE_MODELS[name]
            built = [spec.gguf_name, f"hf-{spec.sha256[:12]}/{COMPLETE_FILE}"] if spec.kind == "gguf" else []
            built += [f"st-{spec.sha256[:12]}/{file}" for file, _ in spec.files]
            files = [cache / "models" / name / f for f in built]
            files += [cache / "wheels" / wheel_name(package) for package in spec.packages]
        else:
            extracted = cache / "corpora" / EXLLAMA.replace("==", "-") / OFFLINE_CORPORA[name]
            files = [extracted, cache / "wheels" / wheel_name(EXLLAMA)]
        if not all(f.is_file() for f in files):
            missing.append(name)
    return missing


def stop_line(cache: Path, missing: list[str]) -> str:
    return (
        f"the tests marked `models` read the offline models and corpora, and {', '.join(missing)} "
        f"{'is' if len(missing) == 1 else 'are'} not fetched into {cache}: fetch them with `make fetch` (or "
        f"`.venv/bin/linrec fetch {' '.join(FETCHED)}`), or run the other tests with "
        '`.venv/bin/python -m pytest -m "not models"`'
    )


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker reports its collection to the controller
def pytest_collection_finish(session):
    """Selected `models` tests without the fetched models: the session stops here, with one line. Under pytest-xdist
    a worker cannot stop the session itself (pytest.exit in a worker is an INTERNALERROR): it writes the line where
    the controller looks when the worker's collection arrives (`pytest_xdist_node_collection_finished`)."""
    if not any(item.get_closest_marker("models") for item in session.items):
        return
    missing = not_fetched(_user_cache())
    if not missing:
        return
    line = stop_line(_user_cache(), missing)
    worker = getattr(session.config, "workerinput", None)
    if worker is None:
        pytest.exit(line, returncode=pytest.ExitCode.INTERRUPTED)
    Path(worker["linrec_stop"]).write_text(line)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist, in the controller: each worker is told where to leave the stop line."""
    node.workerinput["linrec_stop"] = str(node.config.stash[_STOP])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    """pytest-xdist, in the controller: a worker that left a stop line stops the session with it."""
    stop = node.config.stash[_STOP]
    if stop.is_file():
        pytest.exit(stop.read_text(), returncode=pytest.ExitCode.INTERRUPTED)


@pytest.fixture(scope="session", autouse=True)
def isolated_cache(tmp_path_factory):
    """Every test writes captures into a fresh per-session `$LINREC_CACHE`,
    so no test passes on an earlier run's entries.

    The fetched wheels, models and corpora (`make test` fetches them first) are shared from
    the user's cache by symlink where they exist there: tests read them and never change them (a test that damages a
    model works on its own copy); where they do not, the session gets empty folders of its own, and nothing is created
    in the user's cache. Subprocesses and notebook kernels inherit the variable.
    """
    user = _user_cache()
    root = tmp_path_factory.mktemp("linrec-cache")
    for name in SHARED:
        if (user / name).is_dir():
            (root / name).symlink_to(user / name, target_is_directory=True)
        else:  # nothing fetched there: the session's own folder, so no test creates anything in the user's cache
            (root / name).mkdir()
    _copy_shared_digests(user, root)
    old = os.environ.get("LINREC_CACHE")
    os.environ["LINREC_CACHE"] = str(root)
    yield root
    if old is None:
        os.environ.pop("LINREC_CACHE", None)
    else:
        os.environ["LINREC_CACHE"] = old


def _copy_shared_digests(user: Path, root: Path) -> None:
    """The user's remembered digests of the shared files (`linrec.base.files.file_digest`), copied into the session's
    cache: a record names the resolved path and is trusted only while that file's size, times, inode and device are
    those it was made with, so a copy is as safe as the user's own; without them each worker and the first notebook
    kernel hash SmolLM2's 0.6 GB again (notebook 01's model load: 9 s, with them about 3 s on 2 cores)."""
    shared = [str((user / name).resolve()) + os.sep for name in SHARED if (user / name).is_dir()]
    for record in sorted((user / "digests").glob("*.json")):
        try:
            path = json.loads(record.read_text())["path"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if isinstance(path, str) and path.startswith(tuple(shared)):
            (root / "digests").mkdir(exist_ok=True)
            shutil.copyfile(record, root / "digests" / record.name)


@pytest.fixture(autouse=True)
def _close_figures():
    """Every figure a test drew is closed after it: the plot functions return their figure (a notebook shows it), and
    pyplot keeps each one open, so a worker that ran twenty plotting tests warned 'More than 20 figures'."""
    yield
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


# model kind → (config class, model class, config kwargs); "gpt_neox_seq" is GPT-NeoX without parallel residual
@pytest.fixture
def tiny_model():
    """Factory: `tiny_model(kind, seed=0)`
    (kinds: gpt2, gpt_neox, gpt_neox_seq, llama, qwen2, gemma3_text, bert, opt)."""
    from helpers import make_tiny_model  # here, not at the top: pytest-xdist's controller never imports torch

    return make_tiny_model


@pytest.fixture
def tiny_model_dir(tmp_path):
    """A tiny random llama and the tiny tokenizer saved to a directory: a local model spec for linrec."""
    from helpers import save_tiny_model

    return save_tiny_model(tmp_path / "model")


@pytest.fixture
def tiny_corpus(tmp_path):
    """Factory: `tiny_corpus(n_words, seed=0)` writes a tiny text file and returns its path (a local corpus spec)."""

    from helpers import tiny_text

    def make(n_words: int = 6000, seed: int = 0) -> str:
        p = tmp_path / f"text-{n_words}-{seed}.txt"
        p.write_text(tiny_text(n_words, seed))
        return str(p)

    return make


@pytest.fixture
def affine_llama(tiny_model):
    """Tiny llama whose block 1 FFN is an affine map (a Linear); block 0 is its random SwiGLU."""
    import torch

    model = tiny_model("llama", seed=2)  # a seed where swapping block 0 raises perplexity (random models go either way)
    torch.manual_seed(0)
    model.model.layers[1].mlp = torch.nn.Linear(32, 32)
    return model


@pytest.fixture
def colour_text(tmp_path):
    """A text file of `helpers.colour_cycle_text()`: a task a tiny decoder learns in sixty steps (its path)."""
    from helpers import colour_cycle_text

    p = tmp_path / "colours.txt"
    p.write_text(colour_cycle_text())
    return str(p)


@pytest.fixture
def tiny_args(tmp_path, tiny_model_dir):
    """`--model` and `--corpus` for a linrec command: the tiny llama saved to disk and a small local corpus."""
    from helpers import tiny_text

    corpus = tmp_path / "text.txt"
    corpus.write_text(tiny_text(6000))
    return ["--model", tiny_model_dir, "--corpus", str(corpus), "--seq-len", "32", "--tokens", "2048"]


@pytest.fixture
def tiny_setup(tiny_model_dir, tiny_corpus, tmp_path, monkeypatch):
    """A tiny trained-looking llama on disk, a local corpus, and a capture that stores every row."""
    monkeypatch.setenv("LINREC_CACHE", str(tmp_path / "cache"))
    kw = dict(corpus=tiny_corpus(8000), seq_len=32, tokens=3200, sample_rows=10_000, progress=False)
    return tiny_model_dir, kw


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """A fresh `$LINREC_CACHE` of this test's own (nothing cached), and TMPDIR in tmp_path (what --no-cache uses)."""
    cache = tmp_path / "own-cache"
    cache.mkdir()
    monkeypatch.setenv("LINREC_CACHE", str(cache))
    scratch = tmp_path / "tmpdir"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    return cache, scratch


@pytest.fixture
def cli(capsys):
    """`cli(*args)` runs `linrec ARGS` in this process: (exit code, stdout, stderr)."""
    from helpers import run_main

    def run(*args):
        capsys.readouterr()  # drop what fixtures printed (e.g. save_pretrained's progress bar)
        code = run_main(args)
        out, err = capsys.readouterr()
        return code, out, err

    return run
