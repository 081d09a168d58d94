"""Perplexity, the only place linrec computes it: a causal LM on fixed windows, with any FFN blocks swapped.

Token-level perplexity is exp(mean next-token NLL) over every predicted token of the windows,
the NLL summed in float64 (`nll_sum`). `perplexity(model, windows)` is the plain number;
`PerplexityEvaluator` evaluates one model on one set of windows many times, with different
swaps (`linrec.surgery.swapped`).

Speed (`PerplexityEvaluator`): a swap at block i leaves the residual stream entering block i
unchanged, so the base model runs once and every block's output is kept (tokens × d floats
per block); a run with swaps at blocks S replaces the forward of every block before min(S) by
"return what you returned in the base run" and lets the model's own code do the rest:
embeddings, rotary tables and masks are rebuilt by the model exactly as before, blocks
min(S)..end, the final norm, the LM head (and Gemma's logit soft-capping) run as usual. On
the same batches this is the same arithmetic as a plain full forward (tests/test_swap.py
checks it on every supported architecture). Blocks whose output is not a tensor (or a tuple
of them), or a cache above `max_cache_bytes`, fall back to plain full forwards.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping

import torch
from tqdm import tqdm

from linrec.errors import LinrecError
from linrec.sites import find_ffn_sites
from linrec.surgery import swapped

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


def nll_sum(logits: torch.Tensor, ids: torch.Tensor) -> float:
    """Σ next-token NLL of `ids` [B, T] under `logits` [B, T, V], in float64."""
    lg = logits[:, :-1].double()
    return float(
        torch.nn.functional.cross_entropy(lg.reshape(-1, lg.shape[-1]), ids[:, 1:].reshape(-1), reduction="sum")
    )


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
    ):
        if ids.ndim != 2 or len(ids) == 0 or ids.shape[1] < 2:
            raise LinrecError(
                f"perplexity needs at least one window of at least 2 tokens, got windows of shape {tuple(ids.shape)}"
            )
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
            log.warning(
                "hidden-state cache would take %.1f GiB (> %.1f GiB); running full forwards",
                need / 2**30,
                max_cache_bytes / 2**30,
            )
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


def perplexity(model: torch.nn.Module, windows: torch.Tensor, batch_size: int = 8) -> float:
    """Token-level perplexity: exp of the mean next-token NLL over every predicted token of `windows` [n, T]."""
    return PerplexityEvaluator(model, windows, batch_size, reuse_prefix=False).base_ppl
