"""What a study test runs on: a tiny random llama of five blocks (more than the shared tiny model's two, so the
best-, worst- and median-conditioned blocks a study picks are different blocks) saved with the tiny tokenizer, a
tiny text long enough for two disjoint samples, and `study_profile(**changes)`: the profile a notebook binds
(`linrec.studies.stages.Profile`), small: the smoke profile with the tiny model, text and budgets."""

from __future__ import annotations

import pytest

from linrec.app.profile import load_profile

BLOCKS = 5


@pytest.fixture(scope="session")
def study_inputs(tmp_path_factory):
    """(model directory, corpus file) made once per session; their captures land in the session's cache."""
    import torch  # here, not at the top: pytest-xdist's controller never imports torch (tests/conftest.py)
    import transformers

    from helpers import _SPECS, VOCAB, _randomise, tiny_text, tiny_tokenizer

    root = tmp_path_factory.mktemp("study")
    shapes = {**_SPECS["llama"][2], "num_hidden_layers": BLOCKS}  # the shared tiny llama's, with more blocks
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(vocab_size=VOCAB, **shapes))
    _randomise(model)  # O(1)-scale random weights, as every tiny model of the tests has
    model.float().eval().save_pretrained(root / "model")
    tiny_tokenizer().save_pretrained(root / "model")
    text = root / "text.txt"
    text.write_text(tiny_text(12_000))
    return str(root / "model"), str(text)


@pytest.fixture
def study_profile(study_inputs, tmp_path):
    """`study_profile(**changes)`: a small profile's values for notebooks 03 and 04, writing under a fresh folder."""
    model, corpus = study_inputs

    def make(**changes):
        values = {
            "models": [model],
            "corpus": corpus,
            "capture": {"seq_len": 32, "tokens": 3200, "sample_rows": 10_000},
            "seed": 0,
            "batch_size": 8,
            "device": "cpu",
            "results_dir": str(tmp_path / "results"),
            "n_boot": 50,
            # notebook 03
            "rank": 2,
            "probe_rows": 2000,  # of 2,560 train rows: the seeded subset is used
            "probe_ranks": [2, 4],
            "probe_without_first": True,
            "mechanism_k": 1,
            "budget_max_steps": 100,
            "pitfall_outputs": 4,
            "dose_kappas": [1e2, 1e4],
            "dose_steps": 30,
            # notebook 04
            "replicate_samples": [1],
        }
        return load_profile("smoke", {**values, **changes}).notebook("03")  # checked as any profile is

    return make
