"""Evaluations kept in the cache, so that a study killed after hours resumes where it stopped.

Notebook 06 on the full profile routes every block: about a thousand evaluations of 8–25 s each on 2 cores, more
than a session holds. With keeping on (`PerplexityEvaluator.keep`, the profile's `keep_evaluations`), each swapped
evaluation (`PerplexityEvaluator.window_nll`) is a cache entry (kind "evaluation", `linrec.base.cache`), and a rerun
reads the ones already made instead of running them.

An entry is found only by a key made of everything the evaluation reads (`evaluator_key`, `swaps_key`):
- the evaluator's part: the model (`fingerprint`: its class and every tensor and setting, configuration included),
  the windows' token ids, the batch size, whether the prefix is reused, the device, the versions of torch and
  transformers, the float32 matmul precision, and the source of the code that evaluates
  (`linrec.analyses.perplexity`, `linrec.inputs.surgery`, `linrec.inputs.sites`). Not the thread count: a forward
  pass gives the same bits on any (its products split their output, not their sums; `linrec.base.threads.one_thread`),
  which tests/analyses/test_memo.py checks, so a run resumed beside other work, on fewer threads, reads what the
  first one kept;
- each swapped block: its index and its module's fingerprint (its class, the source file that defines it, every
  tensor, every plain attribute, recursively: a routed block's gate and threshold, the FFN it wraps).

Anything `fingerprint` cannot read with certainty (a function made inside another, a lambda, an object of a kind it
does not know, a hook registered on a swapped module or, at the time of the evaluation, on the model) raises
`Unkeyable`, and that evaluation is run, never kept. What an evaluation
leaves on its modules (a routed block's token counts) is stored with it and put back on a read; the modules'
fingerprint after that must equal the one recorded after the real run, or the evaluation runs again. Entries are
written like every cache entry (sealed, checked file by file, renamed into place only when complete), so a killed
run leaves nothing that is read as valid."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import inspect
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch

from linrec.base.stages import PASSIVE

VERSION = 1  # of the entry's layout; the key carries the code's own source
CODE = ("linrec.analyses.perplexity", "linrec.inputs.surgery", "linrec.inputs.sites")  # what evaluates
_SCALARS = (bool, int, float, str, type(None))
_SOURCES: dict[str, str] = {}


class Unkeyable(Exception):
    """Something an evaluation reads that `fingerprint` cannot capture: the evaluation is run, not kept."""


def _file_digest(path: str | None) -> str:
    if path is None:
        return "-"
    if path not in _SOURCES:
        _SOURCES[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return _SOURCES[path]


def source_digest(obj: object) -> str:
    """sha256 of the source file defining `obj` (a class, a function or a module); "-" for built-in code."""
    try:
        return _file_digest(inspect.getsourcefile(obj))
    except TypeError:  # built in
        return "-"


def _tensor(h, t: torch.Tensor, path: str) -> None:
    h.update(f"T{t.dtype}{tuple(t.shape)};".encode())  # the shape as it is: [2, 3] and [3, 2] hold the same bytes
    try:
        flat = t.detach().to("cpu").contiguous().reshape(-1)
        h.update(flat.view(torch.uint8).numpy() if flat.numel() else b"")
    except (RuntimeError, TypeError) as err:  # a sparse, quantised or meta tensor
        raise Unkeyable(f"{path} is a tensor linrec cannot read as bytes ({err})") from None


def _array(h, a: np.ndarray, path: str) -> None:
    if a.dtype.hasobject:
        raise Unkeyable(f"{path} is an array of Python objects")
    h.update(f"A{a.dtype.str}{a.shape};".encode())
    h.update(np.ascontiguousarray(a).reshape(-1).view(np.uint8) if a.size else b"")


def _hooks(module: torch.nn.Module) -> list[str]:
    """The kinds of forward or backward hook registered on `module` itself (a hook can change what it returns), those
    marked passive left out (`linrec.base.stages`' token count, which `linrec figures` puts on every block)."""
    passive = {i for d in (module._forward_pre_hooks, module._forward_hooks) for i, fn in d.items()
               if getattr(fn, PASSIVE, False)}  # fmt: skip
    return [k for k, v in vars(module).items()
            if k.startswith(("_forward", "_backward")) and "hook" in k and v and set(v) - passive]  # fmt: skip


def _feed(h, obj: object, path: str, stack: set[int]) -> None:
    if isinstance(obj, float):
        h.update(f"f{obj.hex() if math.isfinite(obj) else obj};".encode())
    elif isinstance(obj, _SCALARS):
        h.update(f"{type(obj).__name__}{obj!r};".encode())
    elif isinstance(obj, (torch.dtype, torch.device)):
        h.update(f"{obj!r};".encode())
    elif isinstance(obj, torch.Tensor):
        _tensor(h, obj, path)
    elif isinstance(obj, np.ndarray):
        _array(h, obj, path)
    elif isinstance(obj, np.generic):
        _feed(h, obj.item(), path, stack)
    elif isinstance(obj, functools.partial):  # e.g. Gemma's tanh-approximate GELU
        h.update(b"P")
        _feed(h, [obj.func, list(obj.args), dict(obj.keywords)], path, stack)
    elif inspect.isfunction(obj) or inspect.isbuiltin(obj):
        if "<" in obj.__qualname__ or getattr(obj, "__closure__", None):  # a lambda or a closure: unreadable state
            raise Unkeyable(f"{path} is a function made at run time ({obj.__qualname__})")
        h.update(f"F{obj.__module__}.{obj.__qualname__}:{source_digest(obj)};".encode())
    else:
        _container(h, obj, path, stack)


def _container(h, obj: object, path: str, stack: set[int]) -> None:
    if id(obj) in stack:
        raise Unkeyable(f"{path} refers back to itself")
    stack.add(id(obj))
    try:
        if isinstance(obj, (list, tuple)):
            h.update(f"{type(obj).__name__}{len(obj)}[".encode())
            for i, v in enumerate(obj):
                _feed(h, v, f"{path}[{i}]", stack)
        elif isinstance(obj, (set, frozenset)):
            _feed(h, sorted(obj, key=repr), path, stack)
        elif isinstance(obj, Mapping):
            if not all(isinstance(k, (str, int)) for k in obj):
                raise Unkeyable(f"{path} has keys other than names and numbers")
            h.update(f"D{len(obj)}{{".encode())
            for k in sorted(obj, key=repr):
                h.update(f"{k!r}:".encode())
                _feed(h, obj[k], f"{path}.{k}", stack)
        elif isinstance(obj, torch.nn.Module) or dataclasses.is_dataclass(obj):
            cls = type(obj)
            hooked = _hooks(obj) if isinstance(obj, torch.nn.Module) else []
            if hooked:  # a hook can change what the module returns, and its state is not the module's
                raise Unkeyable(f"{path} has hooks registered ({hooked[0]})")
            h.update(f"C{cls.__module__}.{cls.__qualname__}:{source_digest(cls)}(".encode())
            if isinstance(obj, torch.nn.Module):  # saving and loading hooks do not touch the forward
                state = {k: v for k, v in vars(obj).items() if not ("state_dict" in k and "hook" in k)}
            else:
                state = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
            _feed(h, state, path, stack)
        elif callable(getattr(obj, "to_dict", None)) and callable(getattr(obj, "to_json_string", None)):
            h.update(f"J{type(obj).__qualname__}{obj.to_json_string(use_diff=False)};".encode())  # a model's config
        else:
            raise Unkeyable(f"{path} is a {type(obj).__name__}, which linrec cannot fingerprint")
    finally:
        stack.discard(id(obj))


def fingerprint(*objs: object) -> str:
    """sha256 of the content of `objs`: tensors and arrays by dtype, shape and bytes, numbers exactly, modules and
    dataclasses by class, defining source and every attribute; `Unkeyable` for anything else."""
    g = torch.nn.modules.module
    if any(getattr(g, n) for n in dir(g) if n.startswith("_global_") and "hook" in n):
        raise Unkeyable("a global module hook is registered")
    h = hashlib.sha256()
    for i, obj in enumerate(objs):
        _feed(h, obj, f"[{i}]", set())
    return h.hexdigest()


def evaluator_key(model: torch.nn.Module, ids: torch.Tensor, settings: Mapping) -> str:
    """The evaluator's part of every key: the model, the windows, `settings` (batch size, prefix reuse), the device,
    the libraries' versions, the float32 matmul precision and the source of the code that evaluates."""
    import transformers

    code = {name: source_digest(importlib.import_module(name)) for name in CODE}
    context = {"torch": torch.__version__, "transformers": transformers.__version__, "code": code,
               "device": str(next(model.parameters()).device),
               "matmul": torch.get_float32_matmul_precision()}  # fmt: skip  # "highest": never TF32
    return fingerprint(model, ids, dict(settings), context)


def check_unhooked(model: torch.nn.Module) -> None:
    """`Unkeyable` if a forward or backward hook is registered on `model` or any module in it now: the model's key
    (`evaluator_key`) was taken before, and a hook added since can change what it returns (notebook 06's
    `linrec.analyses.token_context.feeding_ids` adds one that hands the token ids to a gate)."""
    for name, m in model.named_modules():
        if _hooks(m):
            raise Unkeyable(f"a hook is registered on {name or 'the model'}")


def swaps_key(swaps: Mapping[int, torch.nn.Module]) -> str:
    """The swapped blocks' part of a key: each block's index and its module's fingerprint."""
    return fingerprint({int(b): m for b, m in swaps.items()})


def scalars(swaps: Mapping[int, torch.nn.Module]) -> dict[str, object]:
    """{"block/module path/attribute": value} of the plain attributes of the swapped modules (what an evaluation may
    leave on them, such as a routed block's token counts)."""
    out = {}
    for b, m in swaps.items():
        for name, sub in m.named_modules():
            for k, v in vars(sub).items():
                if isinstance(v, _SCALARS) and not k.startswith("_"):
                    out[f"{b}/{name}/{k}"] = v
    return out


def put_scalars(swaps: Mapping[int, torch.nn.Module], values: Mapping[str, object]) -> None:
    """Set the plain attributes `scalars` listed back on the swapped modules."""
    for key, v in values.items():
        b, name, k = key.split("/", 2)
        setattr(swaps[int(b)].get_submodule(name), k, v)
