"""What a Python caller hands `linrec.api`, checked before any forward pass: a model object already in memory (its
FFN sites found, each block's own, its weights loaded, not on the meta device) and what to measure it on, cut into
windows by the corpora's rules (`linrec.inputs.corpora.make_windows`): a list of strings (each cut into documents at
`<|endoftext|>`, like a local corpus's files), a `datasets.Dataset` (its text column; not imported here), token ids
(a 1-d or 2-d integer tensor or array, a list of ints, a list of lists: documents already tokenised, taken as they
are), or a corpus spec. The documents are joined by the tokenizer's EOS token; a notice says so where it has none
(they are then joined with nothing between them). Every id of the windows is checked against the model's
vocabulary before the pass (past it, the embedding raises an IndexError, on CUDA a device assert).

Each bad input is one line naming the fix: a `LinrecTypeError` (also a TypeError) for the wrong kind of thing, a
`LinrecValueError` (also a ValueError) for a value linrec cannot use.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import torch

from linrec.base.constraints import Blocks
from linrec.base.errors import LinrecTypeError, LinrecValueError
from linrec.base.progress import notice
from linrec.inputs.corpora import (
    HUB_CORPORA,
    OFFLINE_CORPORA,
    WindowCut,
    Windows,
    documents_digest,
    load_documents,
    make_windows,
    split_documents,
)
from linrec.inputs.hf import DTYPES, LoadedModel, check_device

TEXTS = "texts"  # the corpus label of a list of strings or a dataset's text column (the tables' `corpus` column)
IDS = "ids"  # the corpus label of token ids


def check_exist(blocks: list[int] | None, n_blocks: int) -> None:
    """Each of `blocks` (checked ints ≥ 0, or None) one of the model's `n_blocks` (`Blocks(below=n_blocks)`'s rule)."""
    Blocks(below=n_blocks).check("blocks", blocks)


def loaded_of(model, tokenizer, name: str | None) -> LoadedModel:
    """`model` and `tokenizer` as the `LoadedModel` every stage takes, its FFN sites found by the architecture rows
    (`linrec.inputs.sites.find_ffn_sites`: one line for an architecture without one). A `LoadedModel` (from
    `linrec.inputs.models.load_model`) gives its model, its tokenizer where `tokenizer` is None, and its name."""
    given_identity = None  # a loaded model's own: a capture made here then serves a SwapStudy of it
    if isinstance(model, LoadedModel):
        tokenizer = model.tokenizer if tokenizer is None else tokenizer
        name, given_identity, model = name or model.name, model.identity, model.model
    if isinstance(model, (str, Path)):
        raise LinrecTypeError(
            f"model is the name {str(model)!r}, not a model object: load it first (e.g. transformers."
            f"AutoModelForCausalLM.from_pretrained({str(model)!r}), or linrec.inputs.models.load_model({str(model)!r}) "
            f"for an offline name), or measure it by name on the command line (linrec measure, its model option)"
        )
    if not isinstance(model, torch.nn.Module) or getattr(getattr(model, "config", None), "model_type", None) is None:
        raise LinrecTypeError(
            f"model must be a transformers model object (a torch.nn.Module with a .config) or what "
            f"linrec.inputs.models.load_model returns, got {type(model).__name__}; load one with "
            "transformers.AutoModelForCausalLM.from_pretrained"
        )
    if not callable(tokenizer):
        raise LinrecTypeError(
            f"tokenizer must be the model's tokenizer (callable on text), got {type(tokenizer).__name__}; "
            "load it with transformers.AutoTokenizer.from_pretrained"
        )
    params = next(model.parameters(), None)
    if params is None:
        raise LinrecValueError(f"the {type(model).__name__} passed has no parameters; pass the loaded model")
    meta = sorted({n.split(".")[0] for n, p in model.named_parameters() if p.device.type == "meta"})
    if meta:
        raise LinrecValueError(
            f"the model's weights are on the meta device (no values: {', '.join(meta)}), so it cannot run; load it "
            "with its weights (from_pretrained without device_map='meta', or to_empty then load_state_dict)"
        )
    if params.dtype not in DTYPES.values():
        raise LinrecValueError(
            f"the model runs in {str(params.dtype).removeprefix('torch.')}; linrec runs models in "
            f"{', '.join(DTYPES)} (its statistics are float64 whatever the model's dtype): pass model.float()"
        )
    label = name or getattr(model.config, "name_or_path", "") or model.config.model_type
    identity = given_identity or f"in-memory {type(model).__name__} at {id(model):#x} (not cached)"
    notes = ["a model object passed in from Python (linrec.api); nothing cached"]
    loaded = LoadedModel(model, tokenizer, str(label), identity, "memory", notes)
    check_distinct(loaded.sites)  # found now: an unsupported architecture is its one line before any work
    return loaded


def check_distinct(sites) -> None:
    """One FFN module object per block: one shared by two blocks would be hooked twice per forward."""
    seen: dict[int, int] = {}
    for s in sites:
        for module in {id(s.ffn_in): s.ffn_in, id(s.ffn_out): s.ffn_out}.values():
            first = seen.setdefault(id(module), s.index)
            if first != s.index:
                raise LinrecValueError(
                    f"blocks {first} and {s.index} share one FFN module object ({s.path} is block {first}'s), so "
                    "neither can be captured or swapped alone; give each block its own (e.g. copy.deepcopy of it)"
                )


def check_causal(loaded: LoadedModel) -> None:
    """A swap measures perplexity: the model must be a causal LM with its output head."""
    heads = getattr(loaded.model, "get_output_embeddings", None)
    if not loaded.is_causal or heads is None or heads() is None:
        raise LinrecValueError(
            f"swap needs a causal LM with its head to measure perplexity, and this is a {type(loaded.model).__name__} "
            f"({loaded.model_type}); load it with transformers.AutoModelForCausalLM, or measure it with linrec.measure"
        )


def checked_device(device, model: torch.nn.Module) -> str:
    """`device` (a name or a `torch.device`) as a name this torch can run on, for a model on one device."""
    if not isinstance(device, (str, torch.device)) or isinstance(device, bool):
        raise LinrecTypeError(f"device={device!r} is a {type(device).__name__}; pass a device name, e.g. device='cpu'")
    device = check_device(str(device))
    if len({str(v) for v in (getattr(model, "hf_device_map", None) or {}).values()}) > 1:
        raise LinrecValueError(
            "this model is placed over several devices (device_map); leave device=None to run it where it is"
        )
    return device


def _vocabulary(model: torch.nn.Module) -> int | None:
    """Rows of the model's input embedding (its config's vocab_size where it has none to ask)."""
    emb = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    n = getattr(emb, "num_embeddings", None)
    return int(n) if n is not None else getattr(model.config, "vocab_size", None)


def check_vocabulary(windows: Windows, model: torch.nn.Module) -> None:
    """Every id of the windows is a row of the model's embedding (a tokenizer of another model, ids made for
    another): checked on the ids themselves, before the pass (past the table it is an IndexError, on CUDA an
    assert)."""
    n = _vocabulary(model)
    if n is None or windows.ids.numel() == 0:
        return
    low, high = int(windows.ids.min()), int(windows.ids.max())
    if low < 0 or high >= n:
        bad = low if low < 0 else high
        raise LinrecValueError(
            f"token id {bad} is outside the model's vocabulary of {n:,} (ids 0..{n - 1:,}): the tokenizer or the ids "
            "are another model's; pass this model's tokenizer, or ids made with it"
        )


# ---- what is measured ------------------------------------------------------------------------------------------
def is_ids(texts) -> bool:
    """Whether `texts` is token ids: an integer tensor or array, a list of ints, or a list of those."""
    if isinstance(texts, (torch.Tensor, np.ndarray)):
        return True
    if isinstance(texts, (list, tuple)) and texts:
        head = texts[0]
        return _is_int(head) or isinstance(head, (torch.Tensor, np.ndarray)) or (
            isinstance(head, (list, tuple)) and len(head) > 0 and _is_int(head[0]))  # fmt: skip
    return False


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _id_documents(texts) -> list[list[int]]:
    """Token ids as documents of ints: a 1-d tensor, array or list is one; a 2-d one, or a list of them, one a row."""
    if isinstance(texts, (torch.Tensor, np.ndarray)):
        kind = texts.dtype
        integer = (not kind.is_floating_point and not kind.is_complex and kind != torch.bool
                   if isinstance(texts, torch.Tensor) else np.issubdtype(kind, np.integer))  # fmt: skip
        if not integer:
            raise LinrecTypeError(f"texts is a {type(texts).__name__} of {kind}, not of token ids; pass integer ids "
                                  "(e.g. tokenizer(text, return_tensors='pt').input_ids)")  # fmt: skip
        if texts.ndim not in (1, 2):
            raise LinrecValueError(f"texts holds token ids in {texts.ndim} dimensions; pass 1 (a document) or 2 "
                                   "(one document a row)")  # fmt: skip
        rows = texts.tolist()
        return [rows] if texts.ndim == 1 else rows
    if _is_int(texts[0]):
        texts = [texts]
    docs = []
    for d, doc in enumerate(texts):
        if isinstance(doc, (torch.Tensor, np.ndarray)):
            doc = _id_documents(doc)
            docs.extend(doc)
            continue
        if not isinstance(doc, (list, tuple)):
            raise LinrecTypeError(f"texts[{d}] is a {type(doc).__name__} among token ids; pass one kind: strings, "
                                  "or lists of ints")  # fmt: skip
        odd = next((i for i, t in enumerate(doc) if not _is_int(t)), None)
        if odd is not None:
            raise LinrecTypeError(f"texts[{d}][{odd}] is {doc[odd]!r} ({type(doc[odd]).__name__}), not a token id; "
                                  "token ids are ints")  # fmt: skip
        docs.append([int(t) for t in doc])
    return docs


def _dataset_texts(dataset, column: str | None):
    """The column of a `datasets.Dataset` to measure: `column`, else "text", else "input_ids", else its one string
    column; one line naming its columns otherwise."""
    columns = dataset.column_names
    if isinstance(columns, dict):  # a DatasetDict: one dataset per split
        raise LinrecTypeError(f"texts is a DatasetDict of splits {sorted(columns)}; pass one split, e.g. "
                              f"texts=dataset[{sorted(columns)[0]!r}]")  # fmt: skip
    features = getattr(dataset, "features", None) or {}
    strings = [c for c in columns if getattr(features.get(c), "dtype", None) in ("string", "large_string")]
    if column is None:
        column = ("text" if "text" in columns else "input_ids" if "input_ids" in columns
                  else strings[0] if len(strings) == 1 else None)  # fmt: skip
    if column is None or column not in columns:
        said = f"has no column {column!r}" if column is not None else "has no text column to guess"
        raise LinrecValueError(f"the dataset {said} (its columns: {', '.join(columns)}); name it, e.g. "
                               f"text_column={(strings or columns or ['text'])[0]!r}")  # fmt: skip
    return list(dataset[column])


def windows_of(texts, tokenizer, cut: WindowCut, text_column: str | None = None) -> Windows:
    """The windows of `texts` cut as `cut` says (`linrec.inputs.corpora.make_windows`, its train/test split
    included): a list of strings is read as a local corpus's files are (`split_documents`), a `datasets.Dataset` by
    its text column, token ids as documents already tokenised, a string as a corpus spec
    (`linrec.inputs.corpora.load_documents`). More than one document and no EOS token: a notice."""
    corpus = TEXTS
    if isinstance(texts, str):
        if texts not in OFFLINE_CORPORA and texts.partition(":")[0] not in HUB_CORPORA and not _is_path(texts):
            shown = texts if len(texts) <= 40 else texts[:37] + "..."
            raise LinrecValueError(
                f"texts {shown!r} is neither a corpus name ({', '.join([*OFFLINE_CORPORA, *HUB_CORPORA])}) nor a path "
                "to text; pass text in memory as a list of strings, e.g. texts=[text]"
            )
        docs, identity = load_documents(texts)
        corpus = texts
    elif hasattr(texts, "column_names"):  # a datasets.Dataset (not imported: only a caller who has one has it)
        return windows_of(_dataset_texts(texts, text_column), tokenizer, cut)
    elif is_ids(texts):
        docs, corpus = _id_documents(texts), IDS
        identity = (
            "ids:"
            + hashlib.sha256(
                np.concatenate(
                    [np.asarray(d, dtype=np.int64) for d in docs] + [np.asarray([len(d) for d in docs])]
                ).tobytes()
            ).hexdigest()
        )
    else:
        if isinstance(texts, (bytes, dict)) or not isinstance(texts, Iterable):
            raise LinrecTypeError(
                f"texts must be a list of strings, a datasets.Dataset, token ids, or a corpus name or path, got "
                f"{type(texts).__name__}; e.g. texts=[text]"
            )
        texts = list(texts)
        odd = next((i for i, t in enumerate(texts) if not isinstance(t, str)), None)
        if odd is not None:
            raise LinrecTypeError(
                f"texts must hold strings, and texts[{odd}] is {_shown(texts[odd])} ({type(texts[odd]).__name__}); "
                "drop it, or pass e.g. [str(t) for t in texts]"
            )
        docs = split_documents(texts)
        if not docs:
            raise LinrecValueError("texts holds no text (every string is empty or whitespace); pass the text to "
                                   "measure on")  # fmt: skip
        identity = f"texts:{documents_digest(docs)}"
    if len(docs) > 1 and getattr(tokenizer, "eos_token_id", None) is None:
        notice(f"the tokenizer has no EOS token, so the {len(docs)} documents of texts are joined with "
                         "nothing between them; give it one (tokenizer.eos_token = ...) to separate them")  # fmt: skip
    return make_windows(docs, tokenizer, cut, corpus=corpus, identity=identity)


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _is_path(spec: str) -> bool:
    try:
        return "\n" not in spec and Path(spec).expanduser().exists()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        return False


@contextlib.contextmanager
def running(model: torch.nn.Module, device: str | None):
    """Within the block `model` is in eval mode and, with `device`, on that device; afterwards both are as they
    were."""
    training = model.training
    home = next(model.parameters()).device
    model.eval()
    try:
        if device is not None:
            model.to(device)
        yield
    finally:
        if device is not None:
            model.to(home)
        model.train(training)
