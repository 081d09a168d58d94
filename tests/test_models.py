"""linrec.inputs.models without a network: error messages, local directories, perplexity, identity."""

from __future__ import annotations

import pytest
import torch

from linrec.analyses.perplexity import perplexity
from linrec.base.errors import LinrecError


def _token_ids(n=2, t=7, seed=1):
    return torch.randint(0, 100, (n, t), generator=torch.Generator().manual_seed(seed))


# 1. hub ids with the hub unreachable ----------------------------------------------------------


# 2. local paths that are not models ------------------------------------------------------------


# 3. local model directories ---------------------------------------------------------------------


# 4. perplexity ------------------------------------------------------------------------------------


@torch.no_grad()
def test_perplexity_is_exp_of_hf_causal_lm_loss(tiny_model):
    model = tiny_model("llama")
    windows = _token_ids(n=5, t=9, seed=3)
    hf = float(torch.exp(model(input_ids=windows, labels=windows).loss))
    for batch_size in (2, 8):  # several batches with a remainder, and one batch
        ppl = perplexity(model, windows, batch_size=batch_size)
        assert ppl == pytest.approx(hf, rel=1e-5)
    assert ppl > 1.0
    # a different set of windows gives a different number (the comparison above is not vacuous)
    assert perplexity(model, _token_ids(n=5, t=9, seed=4)) != pytest.approx(hf, rel=1e-3)


def test_perplexity_needs_two_tokens(tiny_model):
    with pytest.raises(LinrecError):
        perplexity(tiny_model("llama"), _token_ids(n=3, t=1))


# 5. model identity ---------------------------------------------------------------------------------
