"""linrec from Python, on a model already loaded in a notebook or script (the way nnsight or TransformerLens are used):

    import linrec
    table = linrec.measure(model, tokenizer, texts)           # one row per FFN block: R²_lin with its interval, …
    swaps = linrec.swap(model, tokenizer, texts, blocks=[0, 3])  # held-out ΔPPL of each block swapped for its map

    fit = linrec.capture(model, tokenizer, texts)   # one pass; then, with no second pass over the corpus:
    fit.table()                                     # = linrec.measure's table
    fit[3].coef_, fit[3].intercept_, fit[3].kappa   # block 3's map, its conditioning
    fit.swap(blocks=[0, 3])                         # = linrec.swap's table, on the same windows
    fit.save("swapped", blocks=[0, 3])              # the model with those FFNs replaced, as `linrec swap --save`

`model` is a transformers model object of a supported architecture (`linrec.inputs.sites.FFN_SITES`, the rows the
command line reads), or what `linrec.inputs.models.load_model` returns (an offline name such as `smollm2-135m`, no hub
needed; its name labels the tables), `tokenizer` its tokenizer (None: a loaded model's own). `texts` is a list of
strings (each one or more documents, cut at `<|endoftext|>` like a local corpus file), a `datasets.Dataset` with a
text column, token ids (a 1-d or 2-d integer tensor or array, a list of ints, a list of lists: each a document,
checked against the model's vocabulary), or a corpus spec (`wiki`, `wikitext-2`, a path: `linrec.inputs.corpora`).
Documents are joined by the tokenizer's EOS token (a `LinrecWarning` says so where it has none: they are then joined
with nothing between them).

The same code as `linrec measure` and `linrec swap`: the windows are cut and split by `linrec.inputs.corpora`'s rules
(a seeded 20 % of them held out), the statistics come from `linrec.collect.capture.run_capture` and the tables from
`linrec.analyses.recoverability.ceiling_table` and `linrec.analyses.swap.HeldOutSwaps.table`, so on the same model
and windows the numbers are the command line's, bit for bit. The fitted pass is `linrec.analyses.fitted.Fit`; what a
caller hands over is read and checked by `linrec.inputs.memory`.

The keyword options travel together (`Settings`, a frozen dataclass: each one's default, the command line's, and its
rule in `CONSTRAINTS`); each function's signature is written from them (`__signature__`), so `help(linrec.measure)`,
`inspect.signature` and an editor's completion show every option, and a name none takes is Python's own TypeError.

Every argument is checked before any forward pass, in one place (`CONSTRAINTS`, `linrec.base.constraints`): a bad
one is one line naming it and the fix, a `linrec.LinrecError` that is also a ValueError or TypeError
(`LinrecValueError`, `LinrecTypeError`). Integral floats are taken as the whole number they name (`tokens=2e4`
is 20000); a fraction, a bool or a string for a number is refused by name.

Nothing is cached, and no cache folder is needed: an object in memory has no identity a cache entry could be keyed by
(its weights may change between two calls, and hashing them costs a pass over every parameter), so each `capture`
runs its pass; keep the `Fit` it returns to ask more of the same pass. The model is put in eval mode for each call;
`device` runs it on that device for the call and puts it back where it was afterwards (None: where it is).

Notices said on the way (a short corpus, train rows too few for the width, few held-out windows, no EOS token) are
`LinrecWarning`s with `progress=True` (filter them as any warning) and the capture's cost line is written beside the
progress bars; with `progress=False` nothing is written: both go to the `linrec.api` logger at INFO, for a handler
that wants them.

`import linrec` stays light: `linrec.measure(…)` and the others import this module on their first call.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import TYPE_CHECKING, get_type_hints

import torch

from linrec.analyses.fitted import SWAP_CONSTRAINTS, BlockMap, Fit
from linrec.base.constraints import Boolean, Optional, Text, validate
from linrec.base.params import checks
from linrec.base.voice import checking, in_python_words, python_words, speaking
from linrec.collect.capture import run_capture
from linrec.collect.config import CaptureConfig, CaptureRun
from linrec.inputs.corpora import WindowCut
from linrec.inputs.hf import check_context
from linrec.inputs.memory import (
    TEXTS,
    check_causal,
    check_exist,
    check_vocabulary,
    checked_device,
    loaded_of,
    running,
    windows_of,
)

if TYPE_CHECKING:
    import pandas

__all__ = ["CONSTRAINTS", "BlockMap", "Fit", "Settings", "capture", "measure", "python_words", "swap", "windows_of"]
_loaded = loaded_of  # its name before `linrec.inputs.memory` (tests/analyses/test_quant.py imports it)


@dataclass(frozen=True)
class Settings:
    """Every keyword option of `measure`, `swap` and `capture`, with its default: the command line's
    (`CaptureConfig`, `CaptureRun`). What each means: `measure`'s docstring; its rule: `CONSTRAINTS`."""

    blocks: object = None
    seq_len: int = CaptureConfig.seq_len
    tokens: int = CaptureConfig.tokens
    device: object = None
    seed: int = CaptureConfig.seed
    test_frac: float = CaptureConfig.test_frac
    product: str = CaptureConfig.product
    bos: str = CaptureConfig.bos
    sample: int = CaptureConfig.sample
    split: str = CaptureConfig.split
    batch_size: int = CaptureRun.batch_size
    progress: bool = True
    name: str | None = None
    text_column: str | None = None
    first: object = "map"
    test_windows: int | None = None


CAPTURE_SETTINGS = ("seed", "test_frac", "product", "bos", "sample", "split")  # `CaptureConfig`'s, in its key
# Every option's rule, checked before any work (`linrec.base.constraints.validate`): a capture's settings by the rules
# declared with them (`CaptureConfig`, `CaptureRun`: the command line's too); `device` is checked against the devices
# this torch has (`linrec.inputs.memory.checked_device`).
CONSTRAINTS = {
    "blocks": SWAP_CONSTRAINTS["blocks"],
    **checks(CaptureConfig, ("seq_len", "tokens", *CAPTURE_SETTINGS)),
    **checks(CaptureRun, ("batch_size",)),
    "progress": Boolean(),
    "name": Optional(Text()),
    "text_column": Optional(Text()),
    "first": SWAP_CONSTRAINTS["first"],  # `Fit.swap`'s own, checked again there
    "test_windows": SWAP_CONSTRAINTS["test_windows"],
}
SWAP_ONLY = ("first", "test_windows")
ANNOTATIONS = {"blocks": int | Sequence[int] | None, "device": str | torch.device | None,
               "first": str | Sequence[str]}  # fmt: skip


def _signature(swap: bool, returns: str) -> inspect.Signature:
    """`model, tokenizer, texts` (and `swap`'s `blocks`), then every option of `Settings` it takes, keyword-only."""
    P = inspect.Parameter
    params = [P(n, P.POSITIONAL_OR_KEYWORD) for n in ("model", "tokenizer", "texts")]
    if swap:
        params.append(P("blocks", P.POSITIONAL_OR_KEYWORD, default=None, annotation=ANNOTATIONS["blocks"]))
    hints = get_type_hints(Settings)
    for f in fields(Settings):
        if (swap and f.name == "blocks") or (not swap and f.name in SWAP_ONLY):
            continue
        params.append(P(f.name, P.KEYWORD_ONLY, default=f.default, annotation=ANNOTATIONS.get(f.name, hints[f.name])))
    return inspect.Signature(params, return_annotation=returns)


def _settings(function, model, tokenizer, texts, *args, **options) -> Settings:
    """The call's options bound to `function`'s signature (a name it does not take: Python's own TypeError), its
    defaults filled in, each checked by `CONSTRAINTS` (one line naming the first bad one), as `Settings`."""
    bound = function.__signature__.bind(model, tokenizer, texts, *args, **options)
    given = {k: v for k, v in bound.arguments.items() if k not in ("model", "tokenizer", "texts")}
    with in_python_words():
        return replace(Settings(), **validate(CONSTRAINTS, given))


# ---- the three functions ---------------------------------------------------------------------------------------
def measure(model, tokenizer, texts, **options) -> pandas.DataFrame:
    """R²_lin of every FFN block of a model in memory: `linrec measure`'s table.

    One pass over the first `tokens` tokens of `texts` in windows of `seq_len` (a seeded `test_frac` of them held
    out); each block's closed-form affine map is fitted on the train windows and scored on the held-out ones.
    The same as ``linrec.capture(...).table()``.

    Parameters
    ----------
    model : transformers model, or linrec.inputs.hf.LoadedModel
        A model object of an architecture with a known FFN site (`linrec.inputs.sites.FFN_SITES`), in float32,
        bfloat16 or float16, with its weights loaded (not on the meta device); or what
        `linrec.inputs.models.load_model` returns (its name labels the table).
    tokenizer : transformers tokenizer or None
        The model's tokenizer; None takes a `LoadedModel`'s own. Its EOS token joins the documents.
    texts : list of str, datasets.Dataset, token ids, or str
        Strings (each cut into documents at ``<|endoftext|>``), a `datasets.Dataset` (its `text_column`), token
        ids (an integer tensor or array, 1-d: one document, 2-d: one a row; a list of ints; a list of lists), or a
        corpus spec (``"wiki"``, ``"wikitext-2"``, a path to a text file or folder).
    blocks : int or list of int, optional
        The blocks to report (distinct ints); None, every block. The pass captures them all.
    seq_len : int, default 128
        Tokens per window (at most the model's context). An integral float (``128.0``) is taken as its int.
    tokens : int, default 20480
        Tokens measured, cut into ``tokens // seq_len`` windows.
    device : str, optional
        Run the model there for the call and put it back afterwards; None runs it where it is.
    seed : int, default 0
        The train/test split's seed.
    test_frac : float, default 0.2
        Share of the windows held out, in (0, 1).
    product : {"float64", "float32"}
        Statistics accumulated exactly, or faster in float32 products.
    bos : {"auto", "yes", "no"}
        A BOS token per window as the tokenizer does, always, or never.
    sample : int, default 0
        Which disjoint stretch of `tokens` tokens of the text to take (0: the first).
    split : {"windows", "documents"}
        Hold out a seeded share of windows, or of whole documents.
    batch_size : int, default 8
        Windows per forward call (≥ 1).
    progress : bool, default True
        Progress bars and notices (`linrec.LinrecWarning`); False: nothing is written.
    name : str, optional
        The table's `model` column; default a loaded model's name, else the model's ``name_or_path``, else its type.
    text_column : str, optional
        The column of a `datasets.Dataset` to read: default ``"text"``, else ``"input_ids"``, else its one string
        column.

    Returns
    -------
    pandas.DataFrame
        One row per block: `block`, `r2_lin` (held-out R²_lin), `r2_lin_lo`, `r2_lin_hi` (its 95 % interval over the
        held-out windows), then `linrec measure`'s other columns (`r2_train`, `r2_ex_first`, `cond_gram`, `d_in`,
        `n_train`, `n_test`, …: `linrec.analyses.recoverability.ceiling_table`).

    Raises
    ------
    linrec.LinrecError
        One line naming the fix; a bad argument is a `LinrecValueError` or `LinrecTypeError` (also a ValueError or
        TypeError), raised before any forward pass.
    """
    settings = _settings(measure, model, tokenizer, texts, **options)
    return _fit(model, tokenizer, texts, settings).table()


def swap(model, tokenizer, texts, blocks=None, **options) -> pandas.DataFrame:
    """Held-out ΔPPL of each block swapped for its closed-form affine map: `linrec swap`'s table.

    The same as ``linrec.capture(...).swap(blocks, first=..., test_windows=...)``; every argument (`first` and
    `test_windows` included) is checked before the capture's pass.

    Parameters
    ----------
    model, tokenizer, texts
        As `linrec.measure`'s; `model` must be a causal LM with its head (``AutoModelForCausalLM``).
    blocks : int or list of int, optional
        The blocks to swap, each alone (distinct ints); None, every block. With two or more (and ``first="map"``)
        they are also swapped together (`Fit.joint`).
    first : {"map", "ffn", "mean"} or a list of them
        How each window's first position is swapped (`linrec swap --first`).
    test_windows : int, optional
        Held-out windows the perplexities are measured on (≥ 2; None: all of them; fewer: cheaper, wider
        intervals).
    seq_len, tokens, device, seed, test_frac, product, bos, sample, split, batch_size, progress, name, text_column
        As `linrec.measure`'s.

    Returns
    -------
    pandas.DataFrame
        One row per block: `r2_lin`, `ppl_base`, `ppl_swapped`, `delta_ppl` with its paired 99 % jackknife interval
        `delta_lo`, `delta_hi`, the parameters removed and added (`linrec.analyses.swap.HeldOutSwaps.table`). With
        two blocks or more, ``table.attrs["joint"]`` holds them swapped together (also `Fit.joint`, which concat and
        merge cannot drop).
    """
    settings = _settings(swap, model, tokenizer, texts, blocks, **options)
    fit = _fit(model, tokenizer, texts, settings, swap=True)
    return fit.swap(settings.blocks, first=settings.first, test_windows=settings.test_windows)


def capture(model, tokenizer, texts, **options) -> Fit:
    """One pass over `texts`, fitted: every FFN block's affine map, to read and to swap without another pass.

    Parameters
    ----------
    model, tokenizer, texts, blocks, seq_len, tokens, device, seed, test_frac, product, bos, sample, split, batch_size,
    progress, name, text_column
        As `linrec.measure`'s. `blocks` chooses the blocks `Fit.table`, `Fit.swap` and `Fit.plot` report by
        default.

    Returns
    -------
    Fit
        The fitted pass: ``fit[i]`` block i's map (`BlockMap`: `W`, `b`, `coef_`, `intercept_`, the interval, κ,
        rank), ``fit.table()`` (`linrec.measure`'s table), ``fit.swap(blocks)`` (`linrec.swap`'s, on the same
        windows), ``fit.swapped_model(blocks)``, ``fit.save(directory, blocks)``, ``fit.plot()``; ``fit.capture``
        is the pass itself (`linrec.collect.capture.Capture`) for the other analyses.
    """
    return _fit(model, tokenizer, texts, _settings(capture, model, tokenizer, texts, **options))


measure.__signature__ = _signature(False, "pandas.DataFrame")
swap.__signature__ = _signature(True, "pandas.DataFrame")
capture.__signature__ = _signature(False, "Fit")


def _fit(model, tokenizer, texts, s: Settings, swap: bool = False) -> Fit:
    """`capture` of checked settings `s`: every other check (the model, its blocks, the device, the windows and
    their ids) before the pass, then the pass. `swap`: for `linrec.swap`, whose model needs its head (checked before
    the pass too) and whose `blocks` are the ones to swap, not the fit's."""
    with speaking(s.progress):
        with checking():
            loaded = loaded_of(model, tokenizer, s.name)
            if swap:
                check_causal(loaded)
            check_exist(s.blocks, len(loaded.sites))
            dtype = str(next(loaded.model.parameters()).dtype).removeprefix("torch.")
            config = CaptureConfig(loaded.name, texts if isinstance(texts, str) else TEXTS, s.seq_len, s.tokens,
                                   sample_rows=0, dtype=dtype,
                                   **{k: v for k, v in asdict(s).items() if k in CAPTURE_SETTINGS})  # fmt: skip
            config.validate()
            check_context(loaded, config.seq_len)
            device = None if s.device is None else checked_device(s.device, loaded.model)
            windows = windows_of(texts, loaded.tokenizer, WindowCut.of(config), s.text_column)
            config = replace(config, corpus=windows.corpus)
            check_vocabulary(windows, loaded.model)
        with running(loaded.model, device):
            made = run_capture(loaded, windows, config, batch_size=s.batch_size, progress=s.progress)
    return Fit(made, loaded, windows, None if swap else s.blocks, device, s.batch_size, s.progress)
