"""linrec from Python, on a model already loaded in a notebook or script (the way nnsight or TransformerLens are used):

    import linrec
    table = linrec.measure(model, tokenizer, texts)           # one row per FFN block: R²_lin with its interval, …
    swaps = linrec.swap(model, tokenizer, texts, blocks=[0, 3])  # held-out ΔPPL of each block swapped for its map

`model` is a transformers model object of a supported architecture (`linrec.inputs.sites.FFN_SITES`, the rows the
command line reads), or what `linrec.inputs.models.load_model` returns (an offline name such as `smollm2-135m`, no hub
needed; its name labels the tables), `tokenizer` its tokenizer (None: a loaded model's own), `texts` a list of strings
(each one or more documents, cut at `<|endoftext|>` like a local corpus file) or a corpus spec (`wiki`, `wikitext-2`, a
path: `linrec.inputs.corpora`).
`capture` returns the pass both make (`linrec.collect.capture.Capture`), for the other analyses.

The same code as `linrec measure` and `linrec swap`: the windows are cut and split by `linrec.inputs.corpora`'s rules
(a seeded 20 % of them held out), the statistics come from `linrec.collect.capture.run_capture` and the tables from
`linrec.analyses.recoverability.ceiling_table` and `linrec.analyses.swap.HeldOutSwaps.table`, so on the same model
and windows the numbers are the command line's, bit for bit.

Nothing is cached: an object in memory has no identity a cache entry could be keyed by (its weights may change
between two calls, and hashing them costs a pass over every parameter), so each call runs its pass. The model is put
in eval mode for the call; `device` runs it on that device for the call and puts it back where it was afterwards
(None: where it is; move it yourself, `model.to("cuda")`, to keep it there between calls). A bad input is one line
(`linrec.LinrecError`) in this module's words (`seq_len=…`, not `--seq-len …`).

`import linrec` stays light: `linrec.measure(…)` and `linrec.swap(…)` import this module on their first call.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from linrec.analyses.recoverability import ceiling_table
from linrec.analyses.screening import check_blocks
from linrec.analyses.swap import SwapStudy
from linrec.base.errors import LinrecError
from linrec.base.progress import WORDS
from linrec.collect.capture import Capture, run_capture
from linrec.collect.config import CaptureConfig, CaptureRun
from linrec.collect.reuse import notice_short
from linrec.inputs.corpora import (
    HUB_CORPORA,
    OFFLINE_CORPORA,
    WindowCut,
    Windows,
    documents_digest,
    load_windows,
    make_windows,
    split_documents,
)
from linrec.inputs.hf import DTYPES, LoadedModel, check_context, check_device

if TYPE_CHECKING:
    import pandas

# keyword options, each with its default: the capture's settings (`CaptureConfig`'s defaults), how it runs, and a swap's
CAPTURE_OPTIONS = {f.name: f.default for f in fields(CaptureConfig) if f.name in ("seed", "test_frac", "product", "bos",
                                                                                   "sample", "split")}  # fmt: skip
RUN_OPTIONS = {"batch_size": CaptureRun.batch_size, "progress": True, "name": None}
SWAP_OPTIONS = {"first": "map", "test_windows": None}
TEXTS = "texts"  # the corpus label of a list of strings (the tables' `corpus` column, the errors)
RENAMED = {"r2_lo": "r2_lin_lo", "r2_hi": "r2_lin_hi"}  # `measure`'s columns: r2_lin's interval named beside it


def measure(model, tokenizer, texts, *, seq_len: int = 128, tokens: int = 20_480, device: str | None = None,
            **options) -> pandas.DataFrame:  # fmt: skip
    """One row per FFN block of `model`: `block`, `r2_lin` (the held-out R²_lin of its closed-form affine map),
    `r2_lin_lo`, `r2_lin_hi` (its 95 % interval over the held-out windows: for the held-out R² of the fitted map,
    held fixed; `docs/numerics.md` on a refit's), then `linrec measure`'s other columns
    (`linrec.analyses.recoverability.ceiling_table`; its `r2_lo`, `r2_hi` are named `r2_lin_lo`, `r2_lin_hi` here).

    `tokens` tokens of `texts` in windows of `seq_len`, run on `device` (None: where the model is). `options`: seed,
    test_frac, product ("float64" exact, "float32" fast), bos, sample, split (as `linrec.collect.config.CaptureConfig`),
    batch_size, progress, name (the `model` column; default: a loaded model's name, else the model's `name_or_path`,
    else its type)."""
    with _python_words():
        opts = _options(options, "measure", {**CAPTURE_OPTIONS, **RUN_OPTIONS})
        loaded = _loaded(model, tokenizer, opts["name"])
        with _running(loaded.model, device):
            table = ceiling_table(_capture(loaded, texts, seq_len, tokens, opts)[0], progress=opts["progress"])
    return table.rename(columns=RENAMED)


def swap(model, tokenizer, texts, blocks: Sequence[int] | None = None, *, seq_len: int = 128, tokens: int = 20_480,
         device: str | None = None, **options) -> pandas.DataFrame:  # fmt: skip
    """One row per block of `blocks` (None: every block), each swapped alone for its closed-form affine map (fitted on
    the train windows): `linrec swap`'s table (`linrec.analyses.swap.HeldOutSwaps.table`): `r2_lin`, the held-out
    perplexity `ppl_base` and `ppl_swapped`, `delta_ppl` with its paired 99 % skew-corrected jackknife interval
    `delta_lo`, `delta_hi` over the held-out windows, and the parameters removed and added. With two blocks or more
    (and first="map") they are also swapped together, as `linrec swap --blocks` reports: `table.attrs["joint"]`
    (blocks, ppl_base, ppl, delta_ppl, delta_lo, delta_hi, delta_level, params_removed, params_added).

    `model` must be a causal LM with its head (`AutoModelForCausalLM`). Arguments as `measure`'s; `options` also
    takes first ("map", "ffn", "mean", or several: `linrec swap --first`) and test_windows (None: every held-out
    window reports; fewer: cheaper, wider intervals)."""
    with _python_words():
        opts = _options(options, "swap", {**CAPTURE_OPTIONS, **RUN_OPTIONS, **SWAP_OPTIONS})
        loaded = _loaded(model, tokenizer, opts["name"])
        _check_causal(loaded)
        blocks = None if blocks is None else check_blocks(_block_ints(blocks), len(loaded.sites))
        with _running(loaded.model, device):
            capture, windows = _capture(loaded, texts, seq_len, tokens, opts)
            study = SwapStudy(capture, loaded, windows=windows, batch_size=opts["batch_size"],
                              progress=opts["progress"], seed=opts["seed"],
                              test_windows=opts["test_windows"])  # fmt: skip
            table = study.heldout.table(blocks, first=opts["first"])
            if blocks is not None and len(set(blocks)) > 1 and opts["first"] == "map":
                table.attrs["joint"] = study.heldout.joint(sorted(set(blocks)))
    return table


def capture(model, tokenizer, texts, *, seq_len: int = 128, tokens: int = 20_480, device: str | None = None,
            **options) -> Capture:  # fmt: skip
    """The pass `measure` and `swap` make: every FFN block's statistics per split (a
    `linrec.collect.capture.Capture`, which `linrec.analyses.spectrum.spectrum_table` and the other analyses read).
    Arguments as `measure`'s. Its statistics stay on the device the activations appeared on."""
    with _python_words():
        opts = _options(options, "capture", {**CAPTURE_OPTIONS, **RUN_OPTIONS})
        loaded = _loaded(model, tokenizer, opts["name"])
        with _running(loaded.model, device):
            return _capture(loaded, texts, seq_len, tokens, opts)[0]


# ---- the pieces ---------------------------------------------------------------------------------------------------
def _options(given: dict, function: str, allowed: dict) -> dict:
    """`allowed`'s defaults overridden by `given`; a name it does not know is a TypeError, as Python's own."""
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise TypeError(
            f"linrec.{function}() got unexpected keyword arguments {unknown}; its options are "
            f"seq_len, tokens, device, {', '.join(allowed)}"
        )
    return {**allowed, **given}


def _loaded(model, tokenizer, name: str | None) -> LoadedModel:
    """`model` and `tokenizer` as the `LoadedModel` every stage takes, its FFN sites found by the architecture rows
    (`linrec.inputs.sites.find_ffn_sites`: one line for an architecture without one). A `LoadedModel` (from
    `linrec.inputs.models.load_model`) gives its model, its tokenizer where `tokenizer` is None, and its name."""
    given_identity = None  # a loaded model's own: a capture made here then serves a SwapStudy of it
    if isinstance(model, LoadedModel):
        tokenizer = model.tokenizer if tokenizer is None else tokenizer
        name, given_identity, model = name or model.name, model.identity, model.model
    if isinstance(model, (str, Path)):
        raise LinrecError(
            f"model is the name {str(model)!r}, not a model object: load it first (e.g. transformers."
            f"AutoModelForCausalLM.from_pretrained({str(model)!r}), or linrec.inputs.models.load_model({str(model)!r}) "
            f"for an offline name), or measure it by name on the command line (linrec measure, its model option)"
        )
    if not isinstance(model, torch.nn.Module) or getattr(getattr(model, "config", None), "model_type", None) is None:
        raise LinrecError(
            f"model must be a transformers model object (a torch.nn.Module with a .config) or what "
            f"linrec.inputs.models.load_model returns, got {type(model).__name__}; load one with "
            "transformers.AutoModelForCausalLM.from_pretrained"
        )
    if not callable(tokenizer):
        raise LinrecError(
            f"tokenizer must be the model's tokenizer (callable on text), got {type(tokenizer).__name__}; "
            "load it with transformers.AutoTokenizer.from_pretrained"
        )
    params = next(model.parameters(), None)
    if params is None:
        raise LinrecError(f"the {type(model).__name__} passed has no parameters; pass the loaded model")
    if params.dtype not in DTYPES.values():
        raise LinrecError(
            f"the model runs in {str(params.dtype).removeprefix('torch.')}; linrec runs models in "
            f"{', '.join(DTYPES)} (its statistics are float64 whatever the model's dtype): pass model.float()"
        )
    label = name or getattr(model.config, "name_or_path", "") or model.config.model_type
    identity = given_identity or f"in-memory {type(model).__name__} at {id(model):#x} (not cached)"
    notes = ["a model object passed in from Python (linrec.api); nothing cached"]
    loaded = LoadedModel(model, tokenizer, str(label), identity, "memory", notes)
    loaded.sites  # noqa: B018 - found now: an unsupported architecture is its one line before any work
    return loaded


def _check_causal(loaded: LoadedModel) -> None:
    heads = getattr(loaded.model, "get_output_embeddings", None)
    if not loaded.is_causal or heads is None or heads() is None:
        raise LinrecError(
            f"swap needs a causal LM with its head to measure perplexity, and this is a {type(loaded.model).__name__} "
            f"({loaded.model_type}); load it with transformers.AutoModelForCausalLM, or measure it with linrec.measure"
        )


def _block_ints(blocks) -> list[int]:
    if isinstance(blocks, (int, str)) or not isinstance(blocks, Iterable):
        blocks = [blocks]
    try:
        return [int(b) for b in blocks]
    except (TypeError, ValueError):
        raise LinrecError(f"blocks must be block numbers, e.g. blocks=[0, 3]; got {blocks!r}") from None


def _capture(loaded: LoadedModel, texts, seq_len: int, tokens: int, opts: dict) -> tuple[Capture, Windows]:
    """The capture (and its windows) of `loaded` on `texts`, as `linrec.collect.capture.get_capture` computes one
    (uncached, without a row sample): the settings checked, the context, the windows, one pass."""
    dtype = str(next(loaded.model.parameters()).dtype).removeprefix("torch.")
    settings = {k: opts[k] for k in CAPTURE_OPTIONS}
    corpus = texts if isinstance(texts, str) else TEXTS
    config = CaptureConfig(loaded.name, corpus, seq_len, tokens, sample_rows=0, dtype=dtype, **settings)
    config.validate()
    check_context(loaded, seq_len)
    windows = windows_of(texts, loaded.tokenizer, WindowCut.of(config))
    capture = run_capture(loaded, windows, config, batch_size=opts["batch_size"], progress=opts["progress"])
    notice_short(capture)
    return capture, windows


def windows_of(texts, tokenizer, cut: WindowCut) -> Windows:
    """The windows of `texts` cut as `cut` says (`linrec.inputs.corpora.make_windows`, its train/test split
    included): a list of strings is read as a local corpus's files are (`split_documents`), a string as a corpus spec
    (`linrec.inputs.corpora.load_windows`)."""
    if isinstance(texts, str):
        if texts not in OFFLINE_CORPORA and texts.partition(":")[0] not in HUB_CORPORA and not _is_path(texts):
            shown = texts if len(texts) <= 40 else texts[:37] + "..."
            raise LinrecError(
                f"texts {shown!r} is neither a corpus name ({', '.join([*OFFLINE_CORPORA, *HUB_CORPORA])}) nor a path "
                "to text; pass text in memory as a list of strings, e.g. texts=[text]"
            )
        return load_windows(texts, tokenizer, cut)
    if isinstance(texts, bytes) or not isinstance(texts, Iterable):
        raise LinrecError(
            f"texts must be a list of strings or a corpus name or path, got {type(texts).__name__}; e.g. texts=[text]"
        )
    texts = list(texts)
    odd = next((t for t in texts if not isinstance(t, str)), None)
    if odd is not None:
        raise LinrecError(f"texts must hold strings, and one is a {type(odd).__name__}; e.g. texts=[str(t) for t in …]")
    docs = split_documents(texts)
    if not docs:
        raise LinrecError("texts holds no text (every string is empty or whitespace); pass the text to measure on")
    return make_windows(docs, tokenizer, cut, corpus=TEXTS, identity=f"texts:{documents_digest(docs)}")


def _is_path(spec: str) -> bool:
    try:
        return "\n" not in spec and Path(spec).expanduser().exists()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        return False


@contextlib.contextmanager
def _running(model: torch.nn.Module, device: str | None):
    """Within the block `model` is in eval mode and, with `device`, on that device; afterwards both are as they
    were."""
    training = model.training
    params = next(model.parameters())
    home = params.device
    if device is not None:
        device = check_device(device)
        if len({str(v) for v in (getattr(model, "hf_device_map", None) or {}).values()}) > 1:
            raise LinrecError(
                "this model is placed over several devices (device_map); leave device=None to run it where it is"
            )
    model.eval()
    try:
        if device is not None:
            model.to(device)
        yield
    finally:
        if device is not None:
            model.to(home)
        model.train(training)


FLAG = re.compile(r"--([a-z]+(?:-[a-z]+)*)(?: (\d+(?:[.,_]\d+)*))?")


def python_words(message: str) -> str:
    """A command-line error said in this module's words: `--seq-len 2048` → `seq_len=2048`, `--tokens` → `tokens`."""
    return FLAG.sub(lambda m: m[1].replace("-", "_") + (f"={m[2]}" if m[2] else ""), message)


@contextlib.contextmanager
def _python_words():
    """A `LinrecError` raised within the block is raised again in `python_words`, and a notice said in the block (a
    short corpus, rows too few) is said in them too."""
    said = WORDS.set(python_words)
    try:
        yield
    except LinrecError as err:
        raise type(err)(python_words(str(err))) from None
    finally:
        WORDS.reset(said)
