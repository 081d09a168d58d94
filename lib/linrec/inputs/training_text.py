"""The texts a decoder is trained on here (`linrec.inputs.training`): a text's documents, cut where it is held as one
document, split by document into training and measuring documents, and the byte-level BPE tokenizer trained on the
training documents alone.

A text is a corpus spec (`linrec.inputs.corpora`: an offline corpus's name, a hub corpus or a file), several joined
by "+" being one text (`text_documents`, `text_identity`). A text held as one document (the offline code, technical
and stories texts) is cut at its separators and blank lines into documents of at least `MIN_DOC_CHARS` characters
(`cut_document`), so a share of it can be held out for measuring (`split_documents`: seeded, at least one document,
never all). The tokenizer (`train_tokenizer`, `tokenizers`, deterministic) has `vocab` tokens, `EOS` as the document
separator and no BOS token. Of a run: its training, tokenizer and measuring documents (`split_texts`), its own text's
held-out documents (`heldout_documents`, where its held-out loss is evaluated while it trains), and the token windows
of a list of documents (`train_windows`).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from linrec.base.errors import LinrecError
from linrec.inputs.corpora import (
    DOC_SEPARATOR,
    HUB_CORPORA,
    OFFLINE_CORPORA,
    corpus_identity,
    load_documents,
    token_stream,
)

EOS = "<|endoftext|>"
MIN_DOC_CHARS = 1000  # a one-document text is cut into documents of at least this many characters


def text_tag(spec: str) -> str:
    """A text's short name in a run's name: an offline corpus's name, a path's stem."""
    return spec if spec in OFFLINE_CORPORA or spec.partition(":")[0] in HUB_CORPORA else Path(spec).stem or spec


def text_identity(spec: str) -> str:
    """The identity of a text (`linrec.inputs.corpora.corpus_identity`), of each part of a "+"-joined one."""
    return "+".join(corpus_identity(p) for p in spec.split("+"))


def cut_document(doc: str, min_chars: int = MIN_DOC_CHARS) -> list[str]:
    """A text held as one document cut into documents: at the separator, then at blank lines, consecutive pieces
    joined until each holds at least `min_chars` characters (a short tail joins the last one)."""
    pieces = [p.strip() for part in doc.split(DOC_SEPARATOR) for p in re.split(r"\n\s*\n", part) if p.strip()]
    out, cur = [], ""
    for p in pieces:
        cur = f"{cur}\n\n{p}" if cur else p
        if len(cur) >= min_chars:
            out.append(cur)
            cur = ""
    if cur:
        out[-1:] = [f"{out[-1]}\n\n{cur}"] if out else [cur]
    return out


def text_documents(spec: str) -> tuple[list[str], str]:
    """(documents, identity) of a training text: `linrec.inputs.corpora.load_documents` of each "+"-joined part, in
    order; a part held as one document is cut into several (`cut_document`), so a share can be held out."""
    docs, idents = [], []
    for part in spec.split("+"):
        d, ident = load_documents(part)
        docs += cut_document(d[0]) if len(d) == 1 else d
        idents.append(ident)
    return docs, "+".join(idents)


def split_documents(docs: list[str], measure_frac: float, seed: int = 0) -> tuple[list[str], list[str]]:
    """(training documents, measuring documents): a seeded `measure_frac` of the documents (at least one, never all)
    held out for measuring, each list in corpus order."""
    if len(docs) < 2:
        raise LinrecError(
            f"the training text holds {len(docs)} document(s); it needs at least 2 to keep one for measuring only"
        )
    n = min(len(docs) - 1, max(1, round(measure_frac * len(docs))))
    held = set(np.random.default_rng([seed, 35]).permutation(len(docs))[:n].tolist())
    return [d for i, d in enumerate(docs) if i not in held], [d for i, d in enumerate(docs) if i in held]


def train_tokenizer(docs: list[str], vocab: int):
    """A byte-level BPE of `vocab` tokens trained on `docs`, as a transformers fast tokenizer with EOS and no BOS."""

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        special_tokens=[EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(docs, trainer=trainer)
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, pad_token=EOS, model_max_length=1 << 20)


def split_texts(cfg) -> tuple[list[str], list[str], list[str], str]:
    """Of a run (`cfg`: a `linrec.inputs.training.TrainConfig`): (the training documents of `cfg.text`, the
    tokenizer's documents, the measuring documents, the text's identity): each of `cfg.texts` split by
    `split_documents`; the tokenizer trained on every shared text's training documents; the measuring documents
    every shared text's held-out ones, shuffled together under `split_seed` where there are several texts (so a
    prefix of the measuring stream holds each), in corpus order for one."""
    train, vocab, measure, identity = [], [], [], ""
    for t in cfg.texts:
        docs, ident = text_documents(t)
        tr, me = split_documents(docs, cfg.measure_frac, cfg.split_seed)
        vocab += tr
        measure += me
        if t == cfg.text:
            train, identity = tr, ident
    if len(cfg.texts) > 1:
        order = np.random.default_rng([cfg.split_seed, 39]).permutation(len(measure))
        measure = [measure[i] for i in order]
    return train, vocab, measure, identity


def heldout_documents(cfg) -> list[str]:
    """The held-out documents of the run's own training text (`cfg.text`; with shared texts, not the others'): the
    text whose loss says how far the run has trained (`linrec.inputs.plateau`)."""
    docs, _ = text_documents(cfg.text)
    return split_documents(docs, cfg.measure_frac, cfg.split_seed)[1]


def train_windows(docs: list[str], tokenizer, seq_len: int) -> torch.Tensor:
    """The training documents tokenised, joined by EOS and cut into windows of `seq_len` ([n, seq_len] int64)."""
    stream = token_stream(docs, tokenizer, 1 << 62)
    n = len(stream) // seq_len
    return torch.tensor(stream[: n * seq_len], dtype=torch.long).view(n, seq_len)


_LAST: dict = {}  # `tokenized`'s last result, by the digest of its inputs (one entry: a long text's windows are large)


def tokenized(train_docs: list[str], vocab_docs: list[str], vocab: int, seq_len: int):
    """(`train_tokenizer(vocab_docs, vocab)`, `train_windows(train_docs, it, seq_len)`): a run's tokenizer and its
    training windows. The last pair made is kept in memory under a digest of these inputs (their text, not their
    names), so runs that differ only in layout or seeds, trained one after another in one process (notebook 08's
    five), train the tokenizer and tokenise the text once: on the smoke profile that was 45 % of notebook 08's study
    (2026-11-27). The same inputs give the same tokenizer and windows either way; the windows are never written to."""
    h = hashlib.blake2b(f"{vocab} {seq_len} {len(vocab_docs)} {len(train_docs)}".encode(), digest_size=16)
    for doc in (*vocab_docs, *train_docs):
        h.update(len(doc).to_bytes(8, "little"))
        h.update(doc.encode())
    key = h.hexdigest()
    if key not in _LAST:
        tokenizer = train_tokenizer(vocab_docs, vocab)
        _LAST.clear()
        _LAST[key] = (tokenizer, train_windows(train_docs, tokenizer, seq_len))
    return _LAST[key]
