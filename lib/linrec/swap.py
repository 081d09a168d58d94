"""Zero-shot swap of FFN blocks for their closed-form affine maps: what it costs in perplexity and saves in parameters.

Per block i, the FFN module (`FfnSite.module`; for Gemma-3 the `mlp`, whose output is taken
before `post_feedforward_layernorm`, so the swap replaces exactly the map that was fitted) is
replaced by `AffineFFN`, y = Wᵀx + b with (W, b) = `linrec.ceiling.fit_affine(train moments)`,
computed in float64 and run in the model's dtype. No training. The cost is measured as
held-out token-level perplexity, exp(mean next-token NLL) over every predicted token of the
capture's *test* windows (the same seeded split the statistics came from), and
ΔPPL = PPL(block i swapped) − PPL(base).

Speed (`SwapEvaluator`): a swap at block i leaves the residual stream entering block i
unchanged, so the base model runs once and every block's output is kept (tokens × d floats
per block); a run with swaps at blocks S replaces the forward of every block before min(S) by
"return what you returned in the base run" and lets the model's own code do the rest:
embeddings, rotary tables and masks are rebuilt by the model exactly as before, blocks
min(S)..end, the final norm, the LM head (and Gemma's logit soft-capping) run as usual. On
the same batches this is the same arithmetic as a plain full forward (tests/test_swap.py
checks it on every supported architecture). Blocks whose output is not a tensor (or a tuple
of them), or a cache above `max_cache_bytes`, fall back to plain full forwards.

Parameter budget: params_ffn counts the FFN module's parameters; params_linear = d_in·d_out +
d_out. A rank-r map comes from reduced-rank regression on the train statistics: with the OLS
W and train Cxx, the fitted outputs' covariance is WᵀCxxW = V Λ Vᵀ and the rank-r minimiser of
the train SSE is W_r = W V_r V_rᵀ (V_r: top-r eigenvectors), b_r = μy − W_rᵀμx; its train SSE
is SSE(W) + Σ_{k>r} λ_k. It is stored as factors, y = up(down(x)) + bias, with
r·(d_in + d_out) + d_out parameters.

Saved format (`save_swapped` / `load_swapped`), one directory:

    config.json            the base model's Hugging Face config, unchanged
    tokenizer files        `tokenizer.save_pretrained`
    model.safetensors      the *swapped* model's state dict (tied tensors stored once, as
                           `safetensors.torch.save_model` does): a swapped block's FFN keys
                           (e.g. model.layers.3.mlp.gate_proj.weight) are gone; in their place
                           <path>.weight [d_out, d_in] and <path>.bias [d_out] (full rank) or
                           <path>.down [r, d_in], <path>.up [d_out, r], <path>.bias (rank r)
    linrec_swaps.json      {"format": "linrec-swaps", "version": 1, "model_type", "dtype",
                           "attn_implementation", "swaps": [{"block", "path", "d_in", "d_out",
                           "rank" (null = full), "params_ffn", "params_linear"}, …], "info": {…},
                           "files": {name: {"size", "sha256"}} of every other file}

The target directory must be new, empty, or an earlier linrec save holding only the files its
`linrec_swaps.json` lists (`check_save_target`, run before any work): linrec never deletes a
file it did not write. An earlier save is replaced in one rename once the new one is complete.

`load_swapped(dir)` checks every file against its recorded sha256, builds the model from
config.json, installs an `AffineFFN` of the recorded shape at each listed path and loads
model.safetensors strictly (every key must match). Plain
`from_pretrained` on such a directory would silently re-initialise the swapped FFNs at random:
use `load_swapped`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import torch
from tqdm import tqdm

from linrec._io import atomic_dir, check_writable_dir, manifest, verify_manifest
from linrec.ceiling import AffineFit, Score, _one_thread, fit_affine, score
from linrec.corpora import Windows, load_windows
from linrec.errors import LinrecError
from linrec.models import LoadedModel, model_identity
from linrec.sites import ffn_hooks, find_ffn_sites, run_until_stop
from linrec.stats import Moments, remove_rows  # noqa: F401  (remove_rows: part of this module's API)

log = logging.getLogger(__name__)

SWAPS_FILE = "linrec_swaps.json"
WEIGHTS_FILE = "model.safetensors"
FORMAT, FORMAT_VERSION = "linrec-swaps", 1


# ---- the replacement module ----------------------------------------------------------------
class AffineFFN(torch.nn.Module):
    """y = Wᵀx + b in place of an FFN: dense (`weight` [d_out, d_in]) or rank-r factors (`down` [r, d_in], `up` [d_out, r])."""

    def __init__(self, d_in: int, d_out: int, rank: int | None = None, dtype: torch.dtype = torch.float32, device=None):
        super().__init__()
        self.d_in, self.d_out, self.rank = d_in, d_out, rank
        kw = dict(dtype=dtype, device=device)
        if rank is None:
            self.weight = torch.nn.Parameter(torch.zeros(d_out, d_in, **kw), requires_grad=False)
        else:
            self.down = torch.nn.Parameter(torch.zeros(rank, d_in, **kw), requires_grad=False)
            self.up = torch.nn.Parameter(torch.zeros(d_out, rank, **kw), requires_grad=False)
        self.bias = torch.nn.Parameter(torch.zeros(d_out, **kw), requires_grad=False)

    @classmethod
    def from_fit(cls, fit: "AffineFit | LowRankFit", dtype: torch.dtype = torch.float32, device=None) -> "AffineFFN":
        """The module of a fitted map (float64 numbers, rounded once to `dtype`)."""
        t = lambda a: torch.from_numpy(np.ascontiguousarray(a)).to(dtype=dtype, device=device)  # noqa: E731
        if isinstance(fit, LowRankFit):
            m = cls(fit.A.shape[0], fit.B.shape[1], fit.rank, dtype, device)
            m.down.data.copy_(t(fit.A.T))
            m.up.data.copy_(t(fit.B.T))
        else:
            m = cls(fit.W.shape[0], fit.W.shape[1], None, dtype, device)
            m.weight.data.copy_(t(fit.W.T))
        m.bias.data.copy_(t(fit.b))
        return m

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.rank is None:
            return torch.nn.functional.linear(x, self.weight, self.bias)
        return torch.nn.functional.linear(torch.nn.functional.linear(x, self.down), self.up, self.bias)

    @property
    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def extra_repr(self) -> str:
        return f"d_in={self.d_in}, d_out={self.d_out}, rank={'full' if self.rank is None else self.rank}"


def params_linear(d_in: int, d_out: int, rank: int | None = None) -> int:
    """Parameters of the affine map: d_in·d_out + d_out, or r·(d_in + d_out) + d_out at rank r."""
    return (d_in * d_out if rank is None else rank * (d_in + d_out)) + d_out


def count_params(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


# ---- reduced-rank regression -----------------------------------------------------------------
@dataclass
class LowRankFit:
    """A rank-r affine map y ≈ (A B)ᵀx + b, the train-SSE-optimal one of its rank (see module docstring)."""

    A: np.ndarray  # [d_in, r] = W V_r
    B: np.ndarray  # [r, d_out] = V_rᵀ
    b: np.ndarray  # [d_out] = μy − W_rᵀμx
    rank: int
    var_kept: float  # share of the fitted outputs' train variance in the kept directions
    n_train: int

    @property
    def W(self) -> np.ndarray:
        """The dense [d_in, d_out] map (so `linrec.ceiling.score` takes a LowRankFit too)."""
        return self.A @ self.B

    def predict(self, x: np.ndarray) -> np.ndarray:
        return (x @ self.A) @ self.B + self.b


def output_directions(fit: AffineFit, train: Moments) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (descending) and eigenvectors [d_out, d_out] (columns) of the fitted outputs' covariance WᵀCxxW."""
    W = torch.from_numpy(np.ascontiguousarray(fit.W))
    G = W.T @ (torch.from_numpy(np.ascontiguousarray(train.Cxx)) @ W)
    G = 0.5 * (G + G.T)
    with _one_thread():
        lam, V = torch.linalg.eigh(G)
    return lam.numpy()[::-1].copy(), V.numpy()[:, ::-1].copy()


def reduce_rank(fit: AffineFit, train: Moments, rank: int, directions: tuple[np.ndarray, np.ndarray] | None = None) -> LowRankFit:
    """The rank-`rank` reduced-rank regression map from the OLS `fit` and its train statistics.

    Pass `directions` (from `output_directions`) to reuse one eigendecomposition across ranks.
    """
    d_out = fit.W.shape[1]
    if not 1 <= rank <= d_out:
        raise LinrecError(f"rank must be between 1 and the FFN output width {d_out}, got {rank}")
    lam, V = directions if directions is not None else output_directions(fit, train)
    Vr = V[:, :rank]
    A = fit.W @ Vr
    B = Vr.T.copy()
    b = train.mean_y - (train.mean_x @ A) @ B
    total = float(np.clip(lam, 0, None).sum())
    kept = float(np.clip(lam[:rank], 0, None).sum() / total) if total > 0 else 1.0
    return LowRankFit(A=A, B=B, b=b, rank=rank, var_kept=kept, n_train=train.n)


# ---- swapping ----------------------------------------------------------------------------
def _set_submodule(model: torch.nn.Module, path: str, module: torch.nn.Module) -> None:
    parent, _, name = path.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, name, module)


@contextlib.contextmanager
def swapped(model: torch.nn.Module, swaps: Mapping[int, torch.nn.Module]):
    """Within the block, FFN block i of `model` is `swaps[i]`; the originals are put back on exit, exceptions included."""
    sites = find_ffn_sites(model)
    bad = [i for i in swaps if not 0 <= i < len(sites)]
    if bad:
        raise LinrecError(f"blocks {bad} do not exist; this model has blocks 0..{len(sites) - 1}")
    originals: list[tuple[str, torch.nn.Module]] = []
    try:
        for i, module in swaps.items():
            original = sites[i].module
            originals.append((sites[i].path, original))
            _set_submodule(model, sites[i].path, module)
        yield model
    finally:
        for path, original in reversed(originals):
            _set_submodule(model, path, original)


# ---- perplexity with swaps ---------------------------------------------------------------------
def _clone(obj):
    """A detached copy of a block's output: a tensor or a (nested) tuple/list of tensors and Nones; None if it is anything else."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone()
    if isinstance(obj, (tuple, list)):
        parts = []
        for o in obj:
            c = None if o is None else _clone(o)
            if o is not None and c is None:
                return None
            parts.append(c)
        return type(obj)(parts)
    return None


def nll_sum(logits: torch.Tensor, ids: torch.Tensor) -> float:
    """Σ next-token NLL of `ids` [B, T] under `logits` [B, T, V], in float64."""
    lg = logits[:, :-1].double()
    return float(torch.nn.functional.cross_entropy(lg.reshape(-1, lg.shape[-1]), ids[:, 1:].reshape(-1), reduction="sum"))


class SwapEvaluator:
    """Perplexity of a causal LM on fixed windows, with any set of its FFN blocks swapped.

    The base model runs once at construction (base perplexity, and with `reuse_prefix` every
    block's output); `ppl(swaps)` then recomputes only from the first swapped block on (see the
    module docstring). The model is evaluated as it was at construction: pass swaps explicitly.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        ids: torch.Tensor,
        batch_size: int = 8,
        reuse_prefix: bool = True,
        max_cache_bytes: int = 4 << 30,
        progress: bool = False,
        desc: str = "base",
    ):
        if ids.ndim != 2 or len(ids) == 0 or ids.shape[1] < 2:
            raise LinrecError(f"perplexity needs at least one window of at least 2 tokens, got windows of shape {tuple(ids.shape)}")
        self.model = model
        self.sites = find_ffn_sites(model)
        self.blocks = [s.block for s in self.sites]
        self.device = next(model.parameters()).device
        self.batches = [ids[i : i + batch_size] for i in range(0, len(ids), batch_size)]
        self.n_tokens = len(ids) * (ids.shape[1] - 1)
        self.seconds_base = 0.0
        width = model.get_input_embeddings().embedding_dim
        elem = next(model.parameters()).element_size()
        need = len(self.blocks) * ids.numel() * width * elem
        if reuse_prefix and need > max_cache_bytes:
            log.warning("hidden-state cache would take %.1f GiB (> %.1f GiB); running full forwards", need / 2**30, max_cache_bytes / 2**30)
            reuse_prefix = False
        self.reuse_prefix = reuse_prefix
        self._cache: list[list] | None = None
        t0 = time.perf_counter()
        self.base_nll = self._run({}, record=reuse_prefix, progress=progress, desc=desc)
        self.seconds_base = time.perf_counter() - t0

    @property
    def base_ppl(self) -> float:
        return math.exp(self.base_nll / self.n_tokens)

    def ppl(self, swaps: Mapping[int, torch.nn.Module] | None = None) -> float:
        """exp(mean next-token NLL) with `swaps` ({block: module}) in place."""
        return math.exp(self.nll(swaps) / self.n_tokens)

    def delta_ppl(self, swaps: Mapping[int, torch.nn.Module]) -> float:
        return self.ppl(swaps) - self.base_ppl

    def nll(self, swaps: Mapping[int, torch.nn.Module] | None = None) -> float:
        """Σ next-token NLL over every predicted token, with `swaps` in place."""
        if not swaps:
            return self.base_nll
        return self._run(swaps)

    @torch.no_grad()
    def logits(self, swaps: Mapping[int, torch.nn.Module] | None = None, batch: int = 0) -> torch.Tensor:
        """Logits of batch `batch` with `swaps` in place, by the same path `ppl` takes."""
        with swapped(self.model, swaps or {}):
            return self._forward(batch, self._start(swaps or {}))

    def _start(self, swaps) -> int:
        return min(swaps) if swaps and self._cache is not None else 0

    @torch.no_grad()
    def _run(self, swaps, record: bool = False, progress: bool = False, desc: str = "") -> float:
        total = 0.0
        handles = []
        if record:
            self._cache = [[None] * len(self.blocks) for _ in self.batches]
            current = {"b": 0}

            def keep(i):
                def hook(module, args, output):
                    self._cache[current["b"]][i] = _clone(output)

                return hook

            handles = [blk.register_forward_hook(keep(i)) for i, blk in enumerate(self.blocks)]
        try:
            with swapped(self.model, swaps):
                start = self._start(swaps)
                for b, ids in enumerate(tqdm(self.batches, desc=desc, unit="batch", disable=not progress, leave=False)):
                    if record:
                        current["b"] = b
                    total += nll_sum(self._forward(b, start), ids.to(self.device))
        finally:
            for h in handles:
                h.remove()
        if record and any(o is None for row in self._cache for o in row):
            log.warning("a block returned something other than tensors; running full forwards")
            self._cache = None
        return total

    def _forward(self, b: int, start: int) -> torch.Tensor:
        """Logits of batch `b`, blocks before `start` answering from the base run's cache."""
        patched = []
        try:
            for i in range(start):
                blk, out = self.blocks[i], self._cache[b][i]
                blk.forward = lambda *a, _out=out, **k: _clone(_out)
                patched.append(blk)
            ids = self.batches[b].to(self.device)
            return self.model(input_ids=ids, use_cache=False).logits
        finally:
            for blk in patched:
                del blk.forward


# ---- windows -------------------------------------------------------------------------------------
def capture_windows(capture, tokenizer) -> Windows:
    """The windows (and train/test split) `capture` was made from, rebuilt and checked against its record."""
    cfg = capture.config
    w = load_windows(cfg.corpus, tokenizer, cfg.seq_len, cfg.tokens, cfg.seed, cfg.test_frac)
    _check_windows(capture, w)
    return w


def _check_windows(capture, w: Windows) -> None:
    want = capture.meta.get("n_windows", {})
    got = {"train": len(w.train), "test": len(w.test)}
    ident = capture.meta.get("corpus_identity")
    if (want and want != got) or (ident and w.identity and ident != w.identity):
        raise LinrecError(
            f"these windows ({got}) are not the ones the capture used ({want}); rebuild them with the capture's "
            "corpus, seq_len, tokens, seed and test fraction (linrec.swap.capture_windows)"
        )


def probe_ids(windows: Windows, n: int, seed: int = 0) -> torch.Tensor:
    """`n` seeded *train* windows (sorted): a cheap probe set for "is this block safe to swap"."""
    if n < 1:
        raise LinrecError(f"a probe needs at least one window, got {n}")
    pick = np.sort(np.random.default_rng([seed, 2]).choice(windows.train, size=min(n, len(windows.train)), replace=False))
    return windows.ids[pick]


# ---- greedy multi-block swap ---------------------------------------------------------------------------
@dataclass
class GreedyResult:
    """Blocks swapped cumulatively in score order, each kept only while ΔPPL stays within the budget."""

    swapped: list[int]  # kept blocks, in the order they were accepted
    steps: "pandas.DataFrame"  # one row per block tried: block, score, ppl, delta_ppl, kept
    budget_ppl: float
    ppl_base: float
    ppl_final: float
    params_removed: int  # FFN parameters of the kept blocks
    params_added: int  # parameters of their affine maps
    holdout_ppl_base: float | None = None  # with `holdout`: the kept set evaluated there
    holdout_ppl_final: float | None = None

    @property
    def delta_ppl(self) -> float:
        return self.ppl_final - self.ppl_base

    def summary(self) -> str:
        text = (
            f"greedy swap within +{self.budget_ppl:g} ppl: blocks {sorted(self.swapped)} swapped "
            f"({len(self.swapped)} of {len(self.steps)} tried); ppl {self.ppl_base:.4f} → {self.ppl_final:.4f} "
            f"(Δ {self.delta_ppl:+.4f}); FFN parameters removed {self.params_removed:,}, affine parameters added "
            f"{self.params_added:,} (net −{self.params_removed - self.params_added:,})"
        )
        if self.holdout_ppl_final is not None:
            text += f"; holdout ppl {self.holdout_ppl_base:.4f} → {self.holdout_ppl_final:.4f}"
        return text


def greedy_swap(
    evaluator: SwapEvaluator,
    modules: Mapping[int, torch.nn.Module],
    scores: Mapping[int, float],
    budget_ppl: float = 1.0,
    holdout: SwapEvaluator | None = None,
    progress: bool = True,
) -> GreedyResult:
    """Try the blocks of `scores` in descending score; keep each one whose addition keeps ΔPPL ≤ `budget_ppl`.

    ΔPPL is measured by `evaluator` (selection); with `holdout`, the final set is also
    evaluated there (selecting on the test windows and reporting them is optimistic).
    """
    import pandas as pd

    if not budget_ppl >= 0:
        raise LinrecError(f"the perplexity budget must be ≥ 0, got {budget_ppl}; try --budget-ppl 1.0")
    missing = [i for i in scores if i not in modules]
    if missing:
        raise LinrecError(f"no affine module for blocks {missing}; fit them first")
    order = sorted(scores, key=lambda i: (-scores[i], i))
    kept: dict[int, torch.nn.Module] = {}
    rows = []
    ppl_final = evaluator.base_ppl
    for i in tqdm(order, desc="greedy swap", unit="block", disable=not progress):
        trial = {**kept, i: modules[i]}
        ppl = evaluator.ppl(trial)
        ok = ppl - evaluator.base_ppl <= budget_ppl
        if ok:
            kept, ppl_final = trial, ppl
        rows.append({"block": i, "score": scores[i], "ppl": ppl, "delta_ppl": ppl - evaluator.base_ppl, "kept": ok})
    removed = sum(count_params(evaluator.sites[i].module) for i in kept)
    added = sum(count_params(m) for m in kept.values())
    result = GreedyResult(
        swapped=list(kept), steps=pd.DataFrame(rows, columns=["block", "score", "ppl", "delta_ppl", "kept"]), budget_ppl=budget_ppl,
        ppl_base=evaluator.base_ppl, ppl_final=ppl_final, params_removed=removed, params_added=added,
    )
    if holdout is not None:
        result.holdout_ppl_base, result.holdout_ppl_final = holdout.base_ppl, holdout.ppl(kept)
    return result


# ---- save and reload --------------------------------------------------------------------------------
def save_swapped(model: torch.nn.Module, tokenizer, swaps: Mapping[int, "AffineFFN"], directory: str | Path, info: dict | None = None) -> Path:
    """Write the model with `swaps` installed to `directory` (format: module docstring); returns the directory."""
    from safetensors.torch import save_model

    if not swaps:
        raise LinrecError("nothing to save: no block is swapped; choose blocks (--blocks) or raise --budget-ppl")
    not_affine = [i for i, m in swaps.items() if not isinstance(m, AffineFFN)]
    if not_affine:
        raise LinrecError(f"blocks {not_affine}: only AffineFFN swaps can be saved; build them with AffineFFN.from_fit")
    sites = find_ffn_sites(model)
    entries = []
    for i in sorted(swaps):
        m = swaps[i]
        entries.append({"block": i, "path": sites[i].path, "d_in": m.d_in, "d_out": m.d_out, "rank": m.rank, "params_ffn": count_params(sites[i].module), "params_linear": m.n_params})
    dtype = next(model.parameters()).dtype
    meta = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "model_type": model.config.model_type,
        "dtype": str(dtype).removeprefix("torch."),
        "attn_implementation": getattr(model.config, "_attn_implementation", None),
        "swaps": entries,
        "info": info or {},
    }
    directory = Path(directory)
    replace = check_save_target(directory)
    with atomic_dir(directory, replace=replace) as tmp, swapped(model, swaps):
        model.config.save_pretrained(tmp)
        if tokenizer is not None:
            tokenizer.save_pretrained(tmp)
        save_model(model, str(tmp / WEIGHTS_FILE), metadata={"format": "pt"})
        meta["files"] = manifest(tmp)
        (tmp / SWAPS_FILE).write_text(json.dumps(meta, indent=1))
    return directory


def check_save_target(directory: str | Path) -> bool:
    """Refuse (one line) a save target linrec must not write; True if it is an earlier linrec save to replace.

    Allowed: a new path in a writable directory, an empty directory, or an earlier save whose
    files are exactly those its `linrec_swaps.json` lists. Anything else (a file, a directory
    holding other files, `.`) is refused before any work, and nothing is deleted.
    """
    directory = Path(directory)
    fix = "choose a new or empty directory for --save"
    if directory.exists() and not directory.is_dir():
        raise LinrecError(f"--save {directory} is a file, not a directory; {fix}")
    check_writable_dir(directory.resolve().parent, "the directory above --save", fix)
    if not directory.exists():
        return False
    files = (p for p in directory.rglob("*") if not p.is_dir())
    first = next(files, None)
    if first is None:
        return True  # empty: nothing of the user's is lost
    marker = directory / SWAPS_FILE
    try:
        listed = json.loads(marker.read_text()).get("files") if marker.is_file() else None
    except (OSError, ValueError, AttributeError):
        listed = None
    if not isinstance(listed, dict):
        raise LinrecError(f"--save {directory} holds files linrec did not write (e.g. {first.relative_to(directory)}); linrec never deletes them: {fix}")
    allowed = {*listed, SWAPS_FILE}
    for p in (first, *files):
        if p.relative_to(directory).as_posix() not in allowed:
            raise LinrecError(f"--save {directory} is an earlier linrec save with other files added (e.g. {p.relative_to(directory)}); linrec never deletes them: {fix}")
    return True


def load_swapped(directory: str | Path, device: str = "cpu") -> LoadedModel:
    """The model saved by `save_swapped`: built from its config, affine modules installed, weights loaded strictly."""
    from safetensors.torch import load_model
    from transformers import AutoConfig, AutoModelForCausalLM

    from linrec.models import _load_tokenizer, _quiet_transformers

    directory = Path(directory)
    meta_file = directory / SWAPS_FILE
    if not meta_file.is_file() or not (directory / WEIGHTS_FILE).is_file():
        raise LinrecError(f"{directory} is not a swapped model (needs {SWAPS_FILE} and {WEIGHTS_FILE}); write one with linrec swap --save")
    try:
        meta = json.loads(meta_file.read_text())
    except (OSError, ValueError):
        meta = None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("version") != FORMAT_VERSION:
        raise LinrecError(f"{meta_file} is not {FORMAT} version {FORMAT_VERSION}; save the model again with this linrec")
    problem = verify_manifest(directory, meta.get("files"))
    if problem:
        raise LinrecError(f"the saved model in {directory} is damaged ({problem}); save it again with linrec swap --save")
    dtype = getattr(torch, meta["dtype"])
    with _quiet_transformers():
        config = AutoConfig.from_pretrained(str(directory))
        kw = {"attn_implementation": meta["attn_implementation"]} if meta.get("attn_implementation") else {}
        model = AutoModelForCausalLM.from_config(config, **kw).to(dtype)
    sites = find_ffn_sites(model)
    for s in meta["swaps"]:
        i = s["block"]
        if not 0 <= i < len(sites) or sites[i].path != s["path"]:
            raise LinrecError(f"{meta_file}: block {i} at {s['path']} does not match this config's model; the directory is inconsistent, save it again")
        _set_submodule(model, s["path"], AffineFFN(s["d_in"], s["d_out"], s["rank"], dtype))
    try:
        load_model(model, str(directory / WEIGHTS_FILE), strict=True)
    except RuntimeError as err:
        raise LinrecError(f"{directory / WEIGHTS_FILE} does not match {SWAPS_FILE} ({' '.join(str(err).split())[:200]}); save the model again") from None
    model.eval().requires_grad_(False).to(device)
    tok = _load_tokenizer(directory) if (directory / "tokenizer_config.json").exists() else None
    if tok is not None and getattr(tok, "pad_token", None) is None and getattr(tok, "eos_token", None) is not None:
        tok.pad_token = tok.eos_token
    blocks = [s["block"] for s in meta["swaps"]]
    return LoadedModel(model=model, tokenizer=tok, name=str(directory), identity=model_identity(str(directory)), source="swapped", notes=[f"FFN blocks {blocks} replaced by affine maps"])


# ---- one model, one capture: the study a notebook or the CLI runs ----------------------------------------
class SwapStudy:
    """Swap experiments on one loaded model with its capture: per-block table, rank curves, greedy swap, save.

    Fits come from the capture's train statistics (cached per block); perplexities are on the
    capture's test windows (one `SwapEvaluator`, built on first use).
    """

    def __init__(self, capture, loaded: LoadedModel, windows: Windows | None = None, batch_size: int = 8, progress: bool = True):
        if capture.meta.get("identity") not in (None, loaded.identity):
            raise LinrecError(f"the capture was made from {capture.meta['identity']}, not {loaded.identity}; load the model the capture was made from")
        self.capture, self.loaded, self.model = capture, loaded, loaded.model
        self.sites = find_ffn_sites(self.model)
        if len(self.sites) != capture.n_blocks:
            raise LinrecError(f"the capture has {capture.n_blocks} blocks, the model {len(self.sites)}; load the model the capture was made from")
        self.windows = windows if windows is not None else capture_windows(capture, loaded.tokenizer)
        _check_windows(capture, self.windows)
        self.batch_size, self.progress = batch_size, progress
        self._fits: dict[int, AffineFit] = {}
        self._dirs: dict[int, tuple] = {}
        self._evaluator: SwapEvaluator | None = None
        self._probes: dict[tuple[int, int], SwapEvaluator] = {}
        self._probe_stats: dict[tuple[int, int], list[Moments]] = {}
        self._probe_fits: dict[tuple[int, int, int], AffineFit] = {}

    # fits and modules
    def fit(self, block: int) -> AffineFit:
        if block not in self._fits:
            self._fits[block] = fit_affine(self.capture.stats["train"][block], block=block)
        return self._fits[block]

    def score(self, block: int, rank: int | None = None) -> Score:
        """Held-out fit quality of the block's map (full, or at `rank`)."""
        return score(self.low_rank(block, rank) if rank else self.fit(block), self.capture.stats["test"][block], block=block)

    def low_rank(self, block: int, rank: int) -> LowRankFit:
        if block not in self._dirs:
            self._dirs[block] = output_directions(self.fit(block), self.capture.stats["train"][block])
        return reduce_rank(self.fit(block), self.capture.stats["train"][block], rank, self._dirs[block])

    def module(self, block: int, rank: int | None = None) -> AffineFFN:
        """The affine module of `block` (rank-r factors with `rank`), in the dtype and device of the FFN it replaces."""
        p = next(self.sites[block].module.parameters())
        return AffineFFN.from_fit(self.low_rank(block, rank) if rank else self.fit(block), p.dtype, p.device)

    def params_ffn(self, block: int) -> int:
        return count_params(self.sites[block].module)

    # evaluators
    @property
    def evaluator(self) -> SwapEvaluator:
        """Perplexity on the capture's test windows."""
        if self._evaluator is None:
            self._evaluator = SwapEvaluator(self.model, self.windows.split("test"), self.batch_size, progress=self.progress, desc="base ppl (test)")
        return self._evaluator

    def probe(self, n_windows: int = 4, seed: int = 0) -> SwapEvaluator:
        """Perplexity on `n_windows` seeded train windows (the probe set)."""
        key = (n_windows, seed)
        if key not in self._probes:
            self._probes[key] = SwapEvaluator(self.model, probe_ids(self.windows, n_windows, seed), self.batch_size, desc="base ppl (probe)")
        return self._probes[key]

    @torch.no_grad()
    def _probe_moments(self, n_windows: int, seed: int) -> list[Moments]:
        key = (n_windows, seed)
        if key not in self._probe_stats:
            train = self.capture.stats["train"]
            stats = [Moments(m.d_in, m.d_out) for m in train]
            ids = probe_ids(self.windows, n_windows, seed)
            device = next(self.model.parameters()).device
            with ffn_hooks(self.sites, lambda i, x, y: stats[i].update(x, y), stop_after_last=True):
                for start in range(0, len(ids), self.batch_size):
                    run_until_stop(self.model, input_ids=ids[start : start + self.batch_size].to(device), use_cache=False)
            self._probe_stats[key] = stats
        return self._probe_stats[key]

    def probe_fit(self, block: int, n_windows: int = 4, seed: int = 0) -> AffineFit:
        """The block's map fitted on the train split *without* the probe windows, so the probe is held out for it."""
        key = (block, n_windows, seed)
        if key not in self._probe_fits:
            rest = remove_rows(self.capture.stats["train"][block], self._probe_moments(n_windows, seed)[block])
            self._probe_fits[key] = fit_affine(rest, block=block)
        return self._probe_fits[key]

    def probe_module(self, block: int, n_windows: int = 4, seed: int = 0) -> AffineFFN:
        """The affine module of `block` fitted without the probe windows (`probe_fit`)."""
        p = next(self.sites[block].module.parameters())
        return AffineFFN.from_fit(self.probe_fit(block, n_windows, seed), p.dtype, p.device)

    def probe_delta_ppl(self, block: int, n_windows: int = 4, seed: int = 0) -> float:
        """ΔPPL on the probe windows with the block swapped for its leave-probe-out map: a cheap "safe to swap?" predictor."""
        return self.probe(n_windows, seed).delta_ppl({block: self.probe_module(block, n_windows, seed)})

    def _blocks(self, blocks: Sequence[int] | None) -> list[int]:
        blocks = list(range(len(self.sites))) if blocks is None else [int(b) for b in blocks]
        bad = [b for b in blocks if not 0 <= b < len(self.sites)]
        if bad:
            raise LinrecError(f"blocks {bad} do not exist; this model has blocks 0..{len(self.sites) - 1}")
        return blocks

    # experiments
    def table(self, blocks: Sequence[int] | None = None, probe_windows: int = 0, seed: int = 0) -> "pandas.DataFrame":
        """One row per block: held-out R²_lin and output MSE, base and swapped perplexity, ΔPPL, parameters;
        with `probe_windows`, `probe_delta_ppl`: ΔPPL on that many seeded train windows, the block swapped
        for its map fitted without them (`probe_fit`; the in-sample map overfits them and looks harmless)."""
        import pandas as pd

        ev = self.evaluator
        probe = self.probe(probe_windows, seed) if probe_windows else None
        rows = []
        for i in tqdm(self._blocks(blocks), desc=f"swap ΔPPL {self.loaded.name}", unit="block", disable=not self.progress):
            t0 = time.perf_counter()
            s = self.score(i)
            m = self.module(i)
            ppl = ev.ppl({i: m})
            row = {
                "model": self.capture.model_label,
                "corpus": self.capture.config.corpus,
                "block": i,
                "r2_lin": s.r2,
                "mse_out": float(s.sse.sum() / s.n),
                "ppl_base": ev.base_ppl,
                "ppl_swapped": ppl,
                "delta_ppl": ppl - ev.base_ppl,
                "params_ffn": self.params_ffn(i),
                "params_linear": m.n_params,
            }
            row["param_ratio"] = row["params_linear"] / row["params_ffn"] if row["params_ffn"] else float("nan")
            if probe is not None:
                row["probe_ppl_base"] = probe.base_ppl
                row["probe_delta_ppl"] = self.probe_delta_ppl(i, probe_windows, seed)
            row["n_test_tokens"] = ev.n_tokens
            row["seconds"] = time.perf_counter() - t0
            rows.append(row)
        return pd.DataFrame(rows)

    def rank_curve(self, block: int, ranks: Sequence[int]) -> "pandas.DataFrame":
        """ΔPPL against parameters for `block`: one row per rank (reduced-rank maps) and one for the dense map."""
        import pandas as pd

        ev = self.evaluator
        d_out = self.fit(block).W.shape[1]
        rows = []
        for r in tqdm([*ranks, None], desc=f"rank curve block {block}", unit="rank", disable=not self.progress):
            m = self.module(block, r)
            ppl = ev.ppl({block: m})
            rows.append({
                "model": self.capture.model_label,
                "block": block,
                "rank": d_out if r is None else r,
                "factored": r is not None,
                "params": m.n_params,
                "params_ffn": self.params_ffn(block),
                "param_ratio": m.n_params / self.params_ffn(block),
                "var_kept": 1.0 if r is None else self.low_rank(block, r).var_kept,
                "r2_lin": self.score(block, r).r2,
                "ppl": ppl,
                "delta_ppl": ppl - ev.base_ppl,
            })
        return pd.DataFrame(rows)

    def joint(self, blocks: Sequence[int], ranks: Mapping[int, int] | None = None) -> dict:
        """Perplexity with all `blocks` swapped at once, and the parameters removed and added."""
        mods = {i: self.module(i, (ranks or {}).get(i)) for i in self._blocks(blocks)}
        ppl = self.evaluator.ppl(mods)
        return {
            "blocks": sorted(mods),
            "ppl_base": self.evaluator.base_ppl,
            "ppl": ppl,
            "delta_ppl": ppl - self.evaluator.base_ppl,
            "params_removed": sum(self.params_ffn(i) for i in mods),
            "params_added": sum(m.n_params for m in mods.values()),
        }

    def greedy(
        self,
        budget_ppl: float = 1.0,
        blocks: Sequence[int] | None = None,
        scores: Mapping[int, float] | None = None,
        holdout: SwapEvaluator | None = None,
        select_on: str = "test",
        probe_windows: int = 8,
        seed: int = 0,
    ) -> GreedyResult:
        """`greedy_swap` over `blocks` (default all), in descending `scores` (default R²_lin).

        `select_on="test"`: blocks are accepted by ΔPPL on the test windows (optimistic: the
        reported ΔPPL is the one that was selected on). `select_on="probe"`: accepted by ΔPPL on
        `probe_windows` seeded train windows with every map refitted without them, and the kept
        set with those same maps then evaluated on the test windows (`holdout_ppl_*`): selection
        and report on disjoint windows, both held out from the maps.
        """
        blocks = self._blocks(blocks if blocks is not None else (list(scores) if scores is not None else None))
        if scores is None:
            scores = {i: self.score(i).r2 for i in blocks}
        scores = {i: scores[i] for i in blocks}
        if select_on == "test":
            return greedy_swap(self.evaluator, {i: self.module(i) for i in blocks}, scores, budget_ppl, holdout, self.progress)
        if select_on != "probe":
            raise LinrecError(f"select_on must be 'test' or 'probe', got {select_on!r}")
        if holdout is not None:
            raise LinrecError("select_on='probe' evaluates on the test windows itself; do not pass holdout")
        mods = {i: self.probe_module(i, probe_windows, seed) for i in blocks}
        return greedy_swap(self.probe(probe_windows, seed), mods, scores, budget_ppl, self.evaluator, self.progress)

    def save(self, directory: str | Path, blocks: Sequence[int], ranks: Mapping[int, int] | None = None) -> Path:
        """Write the model with `blocks` swapped (format: module docstring)."""
        mods = {i: self.module(i, (ranks or {}).get(i)) for i in self._blocks(blocks)}
        info = {"base_model": self.capture.model_label, "base_identity": self.loaded.identity, "capture": asdict(self.capture.config)}
        return save_swapped(self.model, self.loaded.tokenizer, mods, directory, info)
