"""Hugging Face glue shared by every loader: the `LoadedModel` record (with its FFN sites, found once), tokenizers,
quiet loading, device and context checks."""

from __future__ import annotations

import contextlib
import json
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path

import huggingface_hub.constants as hub_constants
import torch

from linrec.base.errors import LinrecError
from linrec.inputs.sites import FfnSite, find_ffn_sites

ENCODER_TYPES = ("bert",)


def transformers_version() -> str:
    """transformers' version, read from its installed metadata: the same string as `transformers.__version__`
    without importing it. transformers (and accelerate) load only where a model or tokenizer is built (here and in
    `linrec.inputs.models`, `surgery`, `training`, `training_text`, `layouts`): a notebook that reads only the cache
    imported in about 3 s instead of 6 on 2 cores (issue 65: kernels and commands are much of the suite's time)."""
    from importlib.metadata import version

    return version("transformers")


@dataclass
class LoadedModel:
    """A frozen model with what the rest of linrec needs to know about it, its FFN sites included (`sites`)."""

    model: torch.nn.Module
    tokenizer: object
    name: str  # what the user asked for
    identity: str  # what determines the weights (for cache keys)
    source: str  # how it was read: "offline", "gguf", "local", "hub", "swapped" or "random-init"
    notes: list[str] = field(default_factory=list)
    _sites: tuple[torch.nn.Module, list[FfnSite]] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def sites(self) -> list[FfnSite]:
        """Every block's FFN site (`linrec.inputs.sites.find_ffn_sites`), found once, on first use, and handed to
        every stage that hooks or swaps the model. They hold the model's own modules: a swap installed for a while
        (`linrec.inputs.surgery.swapped`) leaves them as they are; a `model` replaced by another object is looked at
        afresh."""
        if self._sites is None or self._sites[0] is not self.model:
            self._sites = (self.model, find_ffn_sites(self.model))
        return self._sites[1]

    @sites.setter
    def sites(self, sites: list[FfnSite]) -> None:
        """For a loader that already knows them (the first blocks of a model, a swapped save)."""
        self._sites = (self.model, list(sites))

    @property
    def model_type(self) -> str:
        return self.model.config.model_type

    @property
    def is_causal(self) -> bool:
        return self.model_type not in ENCODER_TYPES


def input_device(model: torch.nn.Module) -> torch.device:
    """Where token ids go in: the input embedding's device. An embedding offloaded by accelerate (weights on
    "meta" between calls) takes them on the CPU, and its hook moves them to where it runs."""
    dev = model.get_input_embeddings().weight.device
    return torch.device("cpu") if dev.type == "meta" else dev


@contextlib.contextmanager
def no_tf32():
    """Within the block, CUDA matmuls and convolutions run in true float32 (TF32 off); the caller's setting is put
    back afterwards. Every capture runs inside it: TF32 keeps 10 mantissa bits, too few for statistics that are
    accumulated in float64 precisely so that no digits are lost."""
    flags = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = flags


def load_tokenizer(path: str | Path, **kw):
    """The tokenizer of a local directory or hub id (a generic tokenizer.json is loaded as such)."""

    cfg = Path(path) / "tokenizer_config.json"
    if cfg.exists() and json.loads(cfg.read_text()).get("tokenizer_class") in (
        "TokenizersBackend",
        "PreTrainedTokenizerFast",
    ):
        # a generic tokenizer.json: AutoTokenizer would rebuild the model type's own class from it
        # and lose the vocabulary
        from transformers import PreTrainedTokenizerFast

        return PreTrainedTokenizerFast.from_pretrained(str(path), **kw)
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path), **kw)


def auto_class(model_type: str):
    """transformers' Auto class for a model type: the bare encoder for encoders, the causal LM otherwise."""

    from transformers import AutoModel, AutoModelForCausalLM

    return AutoModel if model_type in ENCODER_TYPES else AutoModelForCausalLM


@contextlib.contextmanager
def quiet_transformers():
    """Silence transformers' progress bars and info chatter during a load."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        hf_logging.enable_progress_bar()


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def model_dtype(name: str) -> torch.dtype:
    """The torch dtype the model runs in (its statistics stay float64 whatever it is); one line if unknown."""
    if name not in DTYPES:
        raise LinrecError(f"--dtype must be one of {', '.join(DTYPES)}, got '{name}'")
    return DTYPES[name]


def resolve_device(device: str) -> str:
    """`auto` → the first CUDA device if this torch build sees one, else cpu; any other name is checked as given."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return check_device(device)


def check_device(device: str) -> str:
    """`device` if this torch build can run on it; else one line naming the devices it has."""
    available = ["cpu"]
    if torch.cuda.is_available():
        available += ["cuda", *(f"cuda:{i}" for i in range(torch.cuda.device_count()))]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        available.append("mps")
    if device == "auto":
        return resolve_device(device)
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        dev = None
    ok = dev is not None and (
        dev.type == "cpu"
        or (dev.type == "cuda" and torch.cuda.is_available() and (dev.index or 0) < torch.cuda.device_count())
        or (dev.type == "mps" and "mps" in available)
    )
    if dev is None:
        raise LinrecError(f"unknown device '{device}' (a device is cpu, cuda, cuda:N, mps or auto); available: "
                          f"{', '.join(available)} (or auto)")  # fmt: skip
    if not ok:
        raise LinrecError(
            f"device '{device}' is not available in this torch build ({torch.__version__}); "
            f"available: {', '.join(available)} (or auto)"
        )
    return device


def context_length(model_or_config) -> int | None:
    """The longest input the model's position scheme accepts, from its config (None if it states none)."""
    cfg = getattr(model_or_config, "config", model_or_config)
    for c in (cfg, getattr(cfg, "text_config", None)):
        for name in ("max_position_embeddings", "n_positions", "n_ctx"):
            value = getattr(c, name, None)
            if isinstance(value, int) and value > 0:
                return value
    return None


def context_error(name: str, seq_len: int, limit: int | None) -> LinrecError | None:
    """The one-line error for windows of `seq_len` tokens longer than `name`'s context of `limit`; None if they fit."""
    if limit is None or seq_len <= limit:
        return None
    return LinrecError(
        f"--seq-len {seq_len} is longer than {name}'s context of {limit} tokens; use --seq-len {limit} or less"
    )


def check_context(loaded: LoadedModel, seq_len: int) -> None:
    """One line if windows of `seq_len` tokens are longer than the model's context."""
    err = context_error(loaded.name, seq_len, context_length(loaded.model))
    if err is not None:
        raise err


_HUB_STATE: dict[str, bool] = {}


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hugging Face hub can be reached: False under HF_HUB_OFFLINE,
    else one TCP connect, remembered per process.

    Asked once, so that an unreachable hub costs one failed connect (a DNS failure is ~0.1 s)
    instead of the hub clients' retries with their warnings (26 s and 22 lines for one model name,
    30 s and five retries for one data set).
    """
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return False
    if "reachable" not in _HUB_STATE:
        host = os.environ.get("HF_ENDPOINT", "https://huggingface.co").split("://")[-1].split("/")[0]
        try:
            socket.create_connection((host, 443), timeout=timeout).close()
            _HUB_STATE["reachable"] = True
        except OSError:
            _HUB_STATE["reachable"] = False
    return _HUB_STATE["reachable"]


@contextlib.contextmanager
def hub_offline():
    """Inside the block the hub clients (huggingface_hub, datasets) run in offline mode, as under HF_HUB_OFFLINE=1:
    local caches only, no request, no retry. For when `hub_reachable()` said no."""

    try:
        import datasets.config as ds_config  # here, not at the top: datasets (and pyarrow) only where a hub client runs
    except ImportError:  # pragma: no cover - datasets is a pinned dependency
        ds_config = None
    saved = (hub_constants.HF_HUB_OFFLINE, getattr(ds_config, "HF_HUB_OFFLINE", None))
    hub_constants.HF_HUB_OFFLINE = True
    if ds_config is not None:
        ds_config.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        hub_constants.HF_HUB_OFFLINE = saved[0]
        if ds_config is not None:
            ds_config.HF_HUB_OFFLINE = saved[1]
