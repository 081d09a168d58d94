"""Capture settings, written once: `CaptureConfig` holds everything that determines a capture's numbers (and so its
cache key), with the defaults that `linrec.collect.capture.get_capture`, the command line (`linrec measure …`) and the
default profile all start from. A profile's `capture:` section (params/*.yaml) is a mapping of some of these fields,
declared once there and handed whole to every notebook (`settings` checks it).

Light to import (the command line builds its options from it): what validation and the key need is imported when used.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING

from linrec.base.constraints import Integer, Optional, Options, Real
from linrec.base.constraints import validate as checked
from linrec.base.errors import LinrecError
from linrec.base.params import check_settings, checks, param

if TYPE_CHECKING:
    from linrec.inputs.source import ModelSource

# bump when what a capture contains or means changes
# (2: held-out per-window sums; 3: first-position moments; 4: sha256 of every file; 5: moment matrices stored as
# their upper triangles; 6: first positions kept as rows, not moments; 7: held-out sums without the first position, for
# the map fitted without it)
CAPTURE_VERSION = "7"
SPLITS = ("train", "test")
# fields added after the first captures were cached, and the value at which each leaves a key as it was before
KEY_AS_BEFORE = {"dtype": "float32", "sample": 0, "bos": "auto", "split": "windows"}


# the values some settings may take, light to import here (the command line's choices); the modules that act on them
# hold the same (`linrec.stats.moments.PRODUCTS`, `linrec.inputs.hf.DTYPES`, `linrec.inputs.corpora.BOS_MODES` and
# `SPLITS`, `linrec.inputs.models.DEVICE_MAPS`: tests/collect/test_config.py checks they agree)
PRODUCT_NAMES = ("float64", "float32")
DTYPE_NAMES = ("float32", "bfloat16", "float16")
BOS_NAMES = ("auto", "yes", "no")
SPLIT_NAMES = ("windows", "documents")
DEVICE_MAP_NAMES = ("auto", "balanced", "balanced_low_0", "sequential")
SAMPLE_ROWS = 10_240


@dataclass(frozen=True)
class CaptureConfig:
    """Everything that determines a capture's numbers (and so its cache key): each setting's default, what it does
    and its rule, declared once (`linrec.base.params.param`: the command line's options and `linrec.api`'s rules are
    read from here)."""

    model: str = param(about="offline name (smollm2-135m, gemma3-270m, minilm-l6), hub id (gpt2), local dir or .gguf "
                       "file; init:SEED:MODEL (random-init twin), first:N:MODEL (its first N blocks)")  # fmt: skip
    corpus: str = param("wiki", "wiki | web | code | wikitext-2 | path to a text file or directory")
    seq_len: int = param(128, "window length in tokens", Integer(low=2, example=128))  # the paper's window
    tokens: int = param(20_480, "token budget", Integer(low=1, example=20_480))
    seed: int = param(0, "seed of the train/test split and row sample", Integer(low=0))
    test_frac: float = param(0.2, "share of the windows held out", Real(0, 1, example=0.2))
    sample_rows: int = param(
        SAMPLE_ROWS, "raw (x, y) rows kept per block on disk for the probes (0: statistics only)", Integer(low=0),
        unset=f"none where the command reads no rows: measure, spectrum, swap; {SAMPLE_ROWS:,} where it does: probe, "
        "swap --route, as make figures keeps; a cached capture keeping more rows serves a request for fewer",
    )  # fmt: skip
    product: str = param(
        "float64", "the statistics' products: float64 exact, float32 fast (linrec.stats.moments)",
        Options(PRODUCT_NAMES), flags=("--fast",), const="float32",
        help="float32 products merged in float64 (error printed by benchmarks/capture.py)",
    )  # fmt: skip
    dtype: str = param("float32", "the model's dtype; statistics stay float64", Options(DTYPE_NAMES))
    sample: int = param(
        0, "which disjoint stretch of --tokens tokens of the corpus to read: 0 the first, 1 the next, … (fresh text "
        "for a replication)", Integer(low=0),
    )  # fmt: skip
    bos: str = param(
        "auto", "start every window with the BOS token: as the tokenizer does (auto), always (yes) or never (no); "
        "moves the attention sink of a model that runs without one", Options(BOS_NAMES),
    )  # fmt: skip
    split: str = param(
        "windows", "what is held out: a seeded share of the windows (a held-out window's document goes on in train "
        "windows beside it) or of whole documents", Options(SPLIT_NAMES),
    )  # fmt: skip

    def validate(self) -> None:
        """Each setting by its rule (`linrec.base.constraints`), then the window against the budget."""
        checked(checks(CaptureConfig), asdict(self))
        if self.seq_len > self.tokens:
            raise LinrecError(
                f"--seq-len {self.seq_len} is longer than the token budget --tokens {self.tokens}, so no window fits; "
                "raise --tokens or lower --seq-len"
            )

    def key(self, source: ModelSource | None = None) -> str:
        """The cache key. `source`: `model` parsed (`linrec.inputs.source.ModelSource`), where the caller has it;
        else it is parsed here."""
        # here, not at the top: `linrec` imports this module when it starts, and --help stays free of torch
        from linrec.inputs.corpora import corpus_identity
        from linrec.inputs.source import ModelSource

        if source is None:
            source = ModelSource.parse(self.model)
        elif source.spec != self.model:
            raise ValueError(f"the source of {source.spec!r} is not that of this config's model {self.model!r}")
        values = asdict(self)
        for name, value in KEY_AS_BEFORE.items():  # a field added later leaves the key as it was at this value
            if values[name] == value:
                del values[name]
        ident = {
            **values,
            "model": source.identity(),
            "corpus": corpus_identity(self.corpus),
            "version": CAPTURE_VERSION,
        }
        return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:20]


SETTINGS = tuple(f.name for f in fields(CaptureConfig) if f.name not in ("model", "corpus"))


@dataclass(frozen=True)
class CaptureRun:
    """How a capture is run, none of it in its key (`linrec.collect.capture.get_captures`): `batch_size` windows per
    forward pass, on `device` or placed over several devices by `device_map` (`linrec.inputs.models.load_model`; from
    Python also a {module: device} dict), and `blocks_per_pass` blocks hooked per pass over the windows (None: every
    block; fewer: less memory)."""

    batch_size: int = param(8, "windows per forward pass; not part of the cache key: it changes R²_lin by rounding "
                            "only (≤ 1e-12)", Integer(low=1, example=8))  # fmt: skip
    device: str = param("cpu", "torch device: cpu, cuda, cuda:N, mps, auto (cuda if present)")
    device_map: str | dict | None = param(
        None, "spread a model larger than one device over all visible devices (accelerate); each block's statistics "
        "stay on its block's device", Optional(Options(DEVICE_MAP_NAMES)), unset="the whole model on --device",
    )  # fmt: skip
    blocks_per_pass: int | None = param(
        None, "capture in groups of this many blocks, one pass each (same numbers; on a GPU only one group's "
        "statistics on the device at a time)", Optional(Integer(low=1)), unset="all blocks in one pass",
    )  # fmt: skip


SECTION = tuple(s for s in SETTINGS if s != "seed")  # what a profile's capture section may set (seed is its own key)


def capture_settings(section: Mapping | None = None, where: str = "the profile's capture section") -> dict:
    """Every capture setting a notebook passes on (`SECTION`): `CaptureConfig`'s defaults, overridden by `section`
    (a profile's `capture:` mapping); a name it does not know is one line naming those it does."""
    checked = check_settings(section or {}, CaptureConfig, where, "capture setting", SECTION,
                             " (seed and corpus are the profile's own keys)")  # fmt: skip
    return {**{f.name: f.default for f in fields(CaptureConfig) if f.name in SECTION}, **checked}
