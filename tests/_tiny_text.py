"""A tiny word-level tokenizer and text corpus for tests (no download)."""

from __future__ import annotations

import numpy as np

WORDS = [f"w{i}" for i in range(90)]


def tiny_tokenizer(bos: bool = False):
    """A word-level fast tokenizer over `WORDS` (+ <s>, </s>, <unk>); prepends <s> by default when `bos`."""
    from tokenizers import Tokenizer, processors
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{w: i + 3 for i, w in enumerate(WORDS)}}
    tok = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = Whitespace()
    if bos:
        tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="</s>"
    )


def tiny_text(n_words: int, seed: int = 0) -> str:
    """Random words with a little structure (bigram-ish), so the model input is not pure noise."""
    rng = np.random.default_rng(seed)
    ids = np.cumsum(rng.integers(-3, 4, size=n_words)) % len(WORDS)
    return " ".join(WORDS[i] for i in ids)
