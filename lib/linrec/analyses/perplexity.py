"""Perplexity, the only place linrec computes it: a causal LM on fixed windows, with any FFN blocks swapped.

Token-level perplexity is exp(mean next-token NLL) over every predicted token of the windows.
Each token's NLL is logsumexp(logits) − logit[target], computed in the logits' dtype (float32;
logsumexp subtracts the row maximum, so the error per token is ~1e-7 relative), and summed per
window in float64 (`window_nll`): a [B, T, V] float64 copy of the logits, 2 GB per batch for
Gemma-3's 262k vocabulary, is never made. `perplexity(model, windows)` is the plain number;
`PerplexityEvaluator` evaluates one model on one set of windows many times, with different
swaps (`linrec.inputs.surgery.swapped`), and keeps the NLL of every window, so a change in perplexity
gets a paired skew-corrected jackknife interval over windows (`PerplexityEvaluator.delta`,
`linrec.analyses.uncertainty.delta_ppl_interval`).

Speed (`PerplexityEvaluator`): a swap at block i leaves the residual stream entering block i
unchanged, so the base model runs once and every block's output is kept (tokens × d floats
per block); a run with swaps at blocks S replaces the forward of every block before min(S) by
"return what you returned in the base run" and lets the model's own code do the rest:
embeddings, rotary tables and masks are rebuilt by the model exactly as before, blocks
min(S)..end, the final norm, the LM head (and Gemma's logit soft-capping) run as usual. On
the same batches this is the same arithmetic as a plain full forward (tests/analyses/test_perplexity.py
checks it on every supported architecture). Blocks whose output is not a tensor (or a tuple
of them), or a cache above `max_cache_bytes`, fall back to plain full forwards.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch

from linrec.analyses import memo
from linrec.analyses.uncertainty import delta_ppl_interval
from linrec.base import cache
from linrec.base.errors import LinrecError
from linrec.base.files import write_entry
from linrec.base.progress import bar as progress_bar
from linrec.inputs.sites import FfnSite, find_ffn_sites
from linrec.inputs.surgery import swapped

log = logging.getLogger(__name__)


def _clone(obj):
    """A detached copy of a block's output: a tensor or a (nested) tuple/list of tensors and Nones;
    None if it is anything else."""
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


def window_nll(logits: torch.Tensor, ids: torch.Tensor, rows: int = 16) -> torch.Tensor:
    """Σ over positions of the next-token NLL of `ids` [B, T] under `logits` [B, T, V]: [B] float64.

    Per token logsumexp(logits) − logit[target] in the logits' dtype, summed in float64. The
    logsumexp runs on `rows` positions at a time: its temporaries stay small enough for the
    allocator to reuse (a [B, T, V] temporary is fresh memory every batch, and for a 262k
    vocabulary its page faults cost more than the arithmetic)."""
    T = logits.shape[1] - 1
    lse = torch.empty(logits.shape[0], T, dtype=logits.dtype, device=logits.device)
    for b in range(logits.shape[0]):
        for s in range(0, T, rows):
            lse[b, s : s + rows] = torch.logsumexp(logits[b, s : min(s + rows, T)], dim=-1)
    target = logits[:, :-1].gather(-1, ids[:, 1:, None]).squeeze(-1)
    return (lse - target).double().sum(1)


@contextlib.contextmanager
def reused_logits(model: torch.nn.Module, rows: int):
    """Within the block, the model's LM head (a plain `nn.Linear`) writes its logits into one buffer of `rows`
    positions that every forward reuses, instead of fresh memory each time (the same product, `mm` either way).
    Logits returned inside the block are overwritten by the next forward: use them before it."""
    head = model.get_output_embeddings()
    if type(head) is not torch.nn.Linear:
        yield
        return
    buf = torch.empty(rows, head.out_features, dtype=head.weight.dtype, device=head.weight.device)

    def forward(x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])
        if flat.shape[0] > rows:
            return torch.nn.functional.linear(x, head.weight, head.bias)
        out = torch.matmul(flat, head.weight.t(), out=buf[: flat.shape[0]])
        if head.bias is not None:
            out.add_(head.bias)
        return out.view(*x.shape[:-1], head.out_features)

    head.forward = forward
    try:
        yield
    finally:
        del head.forward


@dataclass(frozen=True)
class DeltaPPL:
    """A change in perplexity on fixed windows, with a paired skew-corrected jackknife interval over the windows."""

    ppl_base: float
    ppl: float
    lo: float  # interval of ΔPPL
    hi: float
    level: float = 0.95  # the interval's nominal coverage

    @property
    def delta(self) -> float:
        return self.ppl - self.ppl_base


class PerplexityEvaluator:
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
        sites: list[FfnSite] | None = None,
    ):
        if ids.ndim != 2 or len(ids) == 0 or ids.shape[1] < 2:
            raise LinrecError(
                f"perplexity needs at least one window of at least 2 tokens, got windows of shape {tuple(ids.shape)}"
            )
        self.model = model
        self.sites = find_ffn_sites(model) if sites is None else sites  # `LoadedModel.sites`, where the caller has them
        self.blocks = [s.block for s in self.sites]
        self.device = next(model.parameters()).device
        self.batches = [ids[i : i + batch_size] for i in range(0, len(ids), batch_size)]
        self.n_windows, self.tokens_per_window = len(ids), ids.shape[1] - 1
        self.n_tokens = self.n_windows * self.tokens_per_window
        self.n_evaluations = 0  # forward passes over the windows after the base run (prefix reuse or not)
        self.seconds_base = 0.0
        width = model.get_input_embeddings().embedding_dim
        elem = next(model.parameters()).element_size()
        need = len(self.blocks) * ids.numel() * width * elem
        if reuse_prefix and need > max_cache_bytes:
            log.warning(
                "hidden-state cache would take %.1f GiB (> %.1f GiB); running full forwards",
                need / 2**30,
                max_cache_bytes / 2**30,
            )
            reuse_prefix = False
        self.reuse_prefix = reuse_prefix
        self._cache: list[list] | None = None
        t0 = time.perf_counter()
        self.base_window_nll = self._run({}, record=reuse_prefix, progress=progress, desc=desc)
        self.seconds_base = time.perf_counter() - t0
        self.seconds_swapped = 0.0  # spent in swapped evaluations
        self.n_kept = 0  # swapped evaluations read from the cache instead (`keep`)
        self._key: str | None = None  # the evaluator's part of every kept evaluation's key (`keep`)
        self._label = type(model).__name__  # what the kept evaluations' folders start with

    def keep(self, label: str | None = None) -> PerplexityEvaluator:
        """Keep every swapped evaluation in the cache from now on (folders named after `label`, the model's name),
        and read those already kept (`linrec.analyses.memo`: keyed by everything they read), so a killed run resumes;
        a model linrec cannot fingerprint is said once and evaluated as usual. Itself."""
        self._label = label or self._label
        try:
            settings = {"batch_size": len(self.batches[0]), "reuse_prefix": self._cache is not None}
            self._key = memo.evaluator_key(self.model, torch.cat([b.cpu() for b in self.batches]), settings)
        except memo.Unkeyable as err:
            log.warning("evaluations are not kept (%s): each runs as usual", err)
        return self

    @property
    def base_nll(self) -> float:
        return float(self.base_window_nll.sum())

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
        return float(self.window_nll(swaps).sum())

    def window_nll(self, swaps: Mapping[int, torch.nn.Module] | None = None) -> np.ndarray:
        """Σ next-token NLL of each window [n_windows] float64, with `swaps` in place."""
        if not swaps:
            return self.base_window_nll
        key = self._swaps_key(swaps)
        if key is None:
            return self._timed(swaps)
        entry = cache.entry_path("evaluation", self._label, key)
        about = {"model": self._label, "windows": self.n_windows, "swaps": sorted(f"{b}: {type(m).__name__}"
                 for b, m in swaps.items())}  # fmt: skip

        def compute(tmp):
            out = self._timed(swaps)
            if tmp is not None:
                np.save(tmp / "window_nll.npy", out)
                after = {"scalars": memo.scalars(swaps), "fingerprint": memo.swaps_key(swaps)}
                write_entry(tmp, {"version": memo.VERSION, "config": about, **after})
            return out

        def load(path, meta):
            before = memo.scalars(swaps)
            memo.put_scalars(swaps, meta["scalars"])
            if memo.swaps_key(swaps) != meta["fingerprint"]:  # the run left more than plain numbers: run it again
                memo.put_scalars(swaps, before)
                return None
            self.n_kept += 1
            return np.load(path / "window_nll.npy")

        return cache.get_or_compute(entry, memo.VERSION, load, compute, lease=False)  # read whole: no lease

    def _swaps_key(self, swaps) -> str | None:
        """The kept evaluation's key (None: not kept)."""
        if self._key is None:
            return None
        try:
            memo.check_unhooked(self.model)  # the model's key predates any hook added since
            return hashlib.sha256(f"{self._key}:{memo.swaps_key(swaps)}".encode()).hexdigest()
        except memo.Unkeyable as err:
            log.info("this evaluation is not kept (%s)", err)
            return None

    def _timed(self, swaps) -> np.ndarray:
        t0 = time.perf_counter()
        out = self._run(swaps)
        self.seconds_swapped += time.perf_counter() - t0
        self.n_evaluations += 1
        return out

    def delta(self, swaps: Mapping[int, torch.nn.Module], level: float = 0.95) -> DeltaPPL:
        """PPL with `swaps` against the base, with a paired interval of ΔPPL over windows
        (`linrec.analyses.uncertainty.delta_ppl_interval`: the same window left out of base and swapped, the t
        skew-corrected)."""
        return self.delta_of(self.window_nll(swaps), level)

    def delta_of(self, window_nll: np.ndarray, level: float = 0.95) -> DeltaPPL:
        """`delta` for per-window NLLs already computed on these windows."""
        lo, hi = (delta_ppl_interval(self.base_window_nll, window_nll, self.tokens_per_window, level)
                  if len(window_nll) > 1 else (math.nan, math.nan))  # fmt: skip  # one window: no interval
        return DeltaPPL(self.base_ppl, math.exp(float(window_nll.sum()) / self.n_tokens), lo, hi, level)

    @torch.no_grad()
    def logits(self, swaps: Mapping[int, torch.nn.Module] | None = None, batch: int = 0) -> torch.Tensor:
        """Logits of batch `batch` with `swaps` in place, by the same path `ppl` takes."""
        rows = self.batches[batch].numel()
        with swapped(self.model, swaps or {}, self.sites), reused_logits(self.model, rows):
            return self._forward(batch, self._start(swaps or {})).clone()

    def _start(self, swaps) -> int:
        return min(swaps) if swaps and self._cache is not None else 0

    @torch.no_grad()
    def _run(self, swaps, record: bool = False, progress: bool = False, desc: str = "") -> np.ndarray:
        parts = []
        handles = []
        if record:
            self._cache = [[None] * len(self.blocks) for _ in self.batches]
            current = {"b": 0}

            def keep(i):
                def hook(module, args, output):
                    self._cache[current["b"]][i] = _clone(output)

                return hook

            handles = [blk.register_forward_hook(keep(i)) for i, blk in enumerate(self.blocks)]
        rows = max(len(b) for b in self.batches) * self.batches[0].shape[1]
        try:
            with swapped(self.model, swaps, self.sites), reused_logits(self.model, rows):
                start = self._start(swaps)
                for b, ids in enumerate(
                    progress_bar(self.batches, desc=desc, unit="batch", disable=not progress, leave=False)
                ):
                    if record:
                        current["b"] = b
                    parts.append(window_nll(self._forward(b, start), ids.to(self.device)).cpu())
        finally:
            for h in handles:
                h.remove()
        if record and any(o is None for row in self._cache for o in row):
            log.warning("a block returned something other than tensors; running full forwards")
            self._cache = None
        return torch.cat(parts).numpy()

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


def perplexity(model: torch.nn.Module, windows: torch.Tensor, batch_size: int = 8) -> float:
    """Token-level perplexity: exp of the mean next-token NLL over every predicted token of `windows` [n, T]."""
    return PerplexityEvaluator(model, windows, batch_size, reuse_prefix=False).base_ppl
