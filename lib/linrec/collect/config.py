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

from linrec.base.errors import LinrecError
from linrec.base.params import check_settings

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


@dataclass(frozen=True)
class CaptureConfig:
    """Everything that determines a capture's numbers (and so its cache key)."""

    model: str
    corpus: str = "wiki"
    seq_len: int = 128  # the paper's window
    tokens: int = 20_480  # token budget per model (80/20 train/test by window)
    seed: int = 0  # train/test split and row sample
    test_frac: float = 0.2
    sample_rows: int = 10_240  # raw (x, y) rows kept per block on disk for the probes (0: statistics only)
    product: str = "float64"  # "float64" exact, "float32" fast (see linrec.stats.moments)
    dtype: str = "float32"  # the model's dtype (float32, bfloat16, float16); statistics are float64 whatever it is
    sample: int = 0  # which disjoint stretch of `tokens` tokens of the corpus (linrec.inputs.corpora.make_windows)
    bos: str = "auto"  # BOS token per window: the tokenizer's habit, "yes" always, "no" never
    split: str = "windows"  # held out: a seeded share of windows, or of whole "documents" (make_windows)

    def validate(self) -> None:
        # here, not at the top: `linrec` imports this module when it starts, and --help stays free of torch
        from linrec.inputs.corpora import BOS_MODES, SPLITS
        from linrec.inputs.hf import model_dtype
        from linrec.stats.moments import PRODUCTS

        if self.tokens <= 0:
            raise LinrecError(f"token budget must be positive, got {self.tokens}; try --tokens {CaptureConfig.tokens}")
        if self.seq_len < 2:
            raise LinrecError(f"seq_len must be at least 2, got {self.seq_len}")
        if self.seq_len > self.tokens:
            raise LinrecError(
                f"--seq-len {self.seq_len} is longer than the token budget --tokens {self.tokens}, so no window fits; "
                "raise --tokens or lower --seq-len"
            )
        if self.seed < 0:
            raise LinrecError(f"seed must be ≥ 0, got {self.seed}")
        if self.product not in PRODUCTS:
            raise LinrecError(f"product must be one of {', '.join(PRODUCTS)}, got '{self.product}'")
        if self.sample_rows < 0:
            raise LinrecError(f"sample_rows must be ≥ 0, got {self.sample_rows}")
        if self.sample < 0:
            raise LinrecError(f"sample must be ≥ 0, got {self.sample}")
        if self.bos not in BOS_MODES:
            raise LinrecError(f"bos must be one of {', '.join(BOS_MODES)}, got '{self.bos}'")
        if self.split not in SPLITS:
            raise LinrecError(f"split must be one of {', '.join(SPLITS)}, got '{self.split}'")
        model_dtype(self.dtype)

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
    forward pass, on `device` or placed over several devices by `device_map` (`linrec.inputs.models.load_model`), and
    `blocks_per_pass` blocks hooked per pass over the windows (None: every block; fewer: less memory)."""

    batch_size: int = 8
    device: str = "cpu"
    device_map: str | dict | None = None
    blocks_per_pass: int | None = None


SECTION = tuple(s for s in SETTINGS if s != "seed")  # what a profile's capture section may set (seed is its own key)


def capture_settings(section: Mapping | None = None, where: str = "the profile's capture section") -> dict:
    """Every capture setting a notebook passes on (`SECTION`): `CaptureConfig`'s defaults, overridden by `section`
    (a profile's `capture:` mapping); a name it does not know is one line naming those it does."""
    checked = check_settings(section or {}, CaptureConfig, where, "capture setting", SECTION,
                             " (seed and corpus are the profile's own keys)")  # fmt: skip
    return {**{f.name: f.default for f in fields(CaptureConfig) if f.name in SECTION}, **checked}
