"""linrec.analyses.perplexity: perplexity is the exponential of the causal LM's own loss, and the cached-prefix path
answers as a full forward."""

from __future__ import annotations

import pytest
import torch

from helpers import swap_study, tiny_tokenizer, tiny_windows
from helpers import token_ids as _token_ids
from linrec.analyses.perplexity import PerplexityEvaluator, perplexity
from linrec.base.errors import LinrecError
from linrec.inputs.surgery import swapped


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


KINDS = ["gpt2", "gpt_neox", "gpt_neox_seq", "llama", "qwen2", "gemma3_text"]  # every causal LM with an FFN site


def test_perplexity_equals_hf_loss(tiny_model):
    model = tiny_model("llama")
    ids = tiny_windows(tiny_tokenizer(), 1024).ids
    ev = PerplexityEvaluator(model, ids, batch_size=5)
    with torch.no_grad():
        hf = float(torch.exp(model(input_ids=ids, labels=ids).loss.double()))
    assert abs(ev.base_ppl - hf) / hf < 1e-6
    assert (
        abs(ev.base_ppl - perplexity(model, ids, batch_size=5)) / hf < 1e-6
    )  # models.perplexity returns exp taken in float32
    assert ev.n_tokens == ids.shape[0] * (ids.shape[1] - 1)


@pytest.mark.parametrize("kind", KINDS)
def test_cached_prefix_equals_full_forward(tiny_model, kind):
    """Blocks before the first swap answer from the base run: same logits and ppl as a plain forward."""
    model = tiny_model(kind)
    st = swap_study(model, tokens=640, seq_len=16, batch_size=3)  # seq_len 16 > Gemma's sliding window 4
    ev = st.heldout.evaluator
    assert ev._cache is not None  # the cached path is in use
    plain = PerplexityEvaluator(model, st.windows.split("test"), batch_size=3, reuse_prefix=False)
    assert plain.base_ppl == ev.base_ppl
    n = len(ev.sites)
    sets = [{i: st.heldout.module(i)} for i in range(n)] + [
        {0: st.heldout.module(0), n - 1: st.heldout.module(n - 1)},
        {n - 1: st.heldout.module(n - 1, rank=3)},
    ]
    calls = []
    handle = ev.sites[0].module.register_forward_hook(lambda *a: calls.append(1))
    try:
        for swaps in sets:
            for b, ids in enumerate(ev.batches):
                with swapped(model, swaps), torch.no_grad():
                    ref = model(input_ids=ids).logits
                assert (ev.logits(swaps, batch=b) - ref).abs().max() <= 1e-5
            q = plain.ppl(swaps)
            calls.clear()
            p = ev.ppl(swaps)
            assert abs(p - q) <= 1e-9 * q, (kind, sorted(swaps), p, q)
            if min(swaps) > 0:
                assert not calls  # block 0 really was skipped
    finally:
        handle.remove()
