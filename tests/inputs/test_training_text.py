"""linrec.inputs.training_text: a text held as one document is cut into documents."""


def test_a_text_held_as_one_document_is_cut_into_documents():
    """A one-document text is cut at the separator and at blank lines into documents of at least MIN_DOC_CHARS
    characters (a short tail joins the last), losing no paragraph and keeping their order."""
    from linrec.inputs.training_text import MIN_DOC_CHARS, cut_document

    paras = [f"paragraph {k} " + "x" * (150 + 37 * k % 300) for k in range(40)]
    doc = "\n\n".join(paras[:20]) + "\n<|endoftext|>\n" + "\n\n  \n".join(paras[20:])
    docs = cut_document(doc)
    assert len(docs) > 2 and all(len(d) >= MIN_DOC_CHARS for d in docs)
    assert [p for d in docs for p in d.split("\n\n")] == paras
    assert cut_document("short") == ["short"]


def test_runs_alike_share_one_tokenizer_and_windows_and_a_changed_text_gets_its_own(monkeypatch):
    """`tokenized` trains the tokenizer once for runs with the same texts (notebook 08's runs differ only in seeds and
    layout), gives the windows `train_windows` makes, and trains again when any document, the vocabulary or the
    window length differs: the memory is keyed on the text itself, so a file rewritten under the same name is new."""
    import torch

    import linrec.inputs.training_text as tt
    from helpers import tiny_text

    trained = []
    real = tt.train_tokenizer
    monkeypatch.setattr(tt, "train_tokenizer", lambda docs, vocab: trained.append(vocab) or real(docs, vocab))
    docs = [tiny_text(400, seed=k) for k in range(3)]
    tok, windows = tt.tokenized(docs[:2], docs, 300, 16)
    assert torch.equal(windows, tt.train_windows(docs[:2], real(docs, 300), 16)) and windows.shape[1] == 16
    again = tt.tokenized(list(docs[:2]), list(docs), 300, 16)  # equal lists, other objects: the same pair
    assert again[0] is tok and again[1] is windows and trained == [300]
    changed = [docs[0], docs[1][:-1] + "?"]  # one character of one training document
    tt.tokenized(changed, docs, 300, 16)
    tt.tokenized(docs[:2], docs, 301, 16)
    tt.tokenized(docs[:2], docs, 301, 8)
    assert trained == [300, 300, 301, 301]
