"""Shared fixtures: an isolated cache for the whole session,
tiny random-weight models built from configs (no download)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import make_tiny_model, tiny_text, tiny_tokenizer


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


def pytest_collection_modifyitems(session, config, items):
    """The notebook run first: it is the longest file, so with one file per worker (`--dist loadfile`) starting it
    first lets the other workers finish everything else beside it."""
    items.sort(key=lambda item: item.path.name != "test_notebooks.py")


SHARED = ("wheels", "models", "corpora")  # fetched downloads, shared read-only with the user's cache


@pytest.fixture(scope="session", autouse=True)
def isolated_cache(tmp_path_factory):
    """Every test writes captures into a fresh per-session `$LINREC_CACHE`,
    so no test passes on an earlier run's entries.

    The fetched wheels, models and corpora (`make test` fetches them first) are shared from
    the user's cache by symlink where they exist there: tests read them and never change them (a test that damages a
    model works on its own copy); where they do not, the session gets empty folders of its own, and nothing is created
    in the user's cache. Subprocesses and notebook kernels inherit the variable.
    """
    user = Path(os.environ.get("LINREC_CACHE") or Path.home() / ".cache" / "linrec").expanduser()
    root = tmp_path_factory.mktemp("linrec-cache")
    for name in SHARED:
        if (user / name).is_dir():
            (root / name).symlink_to(user / name, target_is_directory=True)
        else:  # nothing fetched there: the session's own folder, so no test creates anything in the user's cache
            (root / name).mkdir()
    old = os.environ.get("LINREC_CACHE")
    os.environ["LINREC_CACHE"] = str(root)
    yield root
    if old is None:
        os.environ.pop("LINREC_CACHE", None)
    else:
        os.environ["LINREC_CACHE"] = old


# model kind → (config class, model class, config kwargs); "gpt_neox_seq" is GPT-NeoX without parallel residual
@pytest.fixture
def tiny_model():
    """Factory: `tiny_model(kind, seed=0)`
    (kinds: gpt2, gpt_neox, gpt_neox_seq, llama, qwen2, gemma3_text, bert, opt)."""
    return make_tiny_model


@pytest.fixture
def tiny_model_dir(tmp_path, tiny_model):
    """A tiny random llama and the tiny tokenizer saved to a directory: a local model spec for linrec."""
    d = tmp_path / "model"
    tiny_model("llama").save_pretrained(d)
    tiny_tokenizer().save_pretrained(d)
    return str(d)


@pytest.fixture
def tiny_corpus(tmp_path):
    """Factory: `tiny_corpus(n_words, seed=0)` writes a tiny text file and returns its path (a local corpus spec)."""

    def make(n_words: int = 6000, seed: int = 0) -> str:
        p = tmp_path / f"text-{n_words}-{seed}.txt"
        p.write_text(tiny_text(n_words, seed))
        return str(p)

    return make
