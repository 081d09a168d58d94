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
