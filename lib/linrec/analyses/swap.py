"""The swap study: what replacing FFN blocks by their closed-form affine maps costs in perplexity
and saves in parameters, which choices can be made without the held-out windows, and what
predicts the cost.

Zero-shot: each block's map is the capture's (`Capture.fit`, the closed-form ceiling from the
train statistics); no training. The cost is held-out token-level perplexity over the capture's
*test* windows (the same seeded split the statistics came from; `linrec.analyses.perplexity`), and
ΔPPL = PPL(block i swapped) − PPL(base), with a paired bootstrap interval over the test windows
(`PerplexityEvaluator.delta`). The model surgery (the affine module, the position-aware module,
installing them, saving and loading) is `linrec.inputs.surgery`; reduced-rank maps are
`linrec.stats.ceiling.reduce_rank`.

Position-aware variants (`first=`): "map" swaps every position for the map fitted on all of
them; "ffn" and "mean" use the map fitted on positions ≥ 1 (`Capture.without_first`) and give
each window's first position the FFN's own output or the train mean of its output there
(`linrec.inputs.surgery.FirstPositionSwap`).

Screening windows (`screening_ids`): a few seeded *train* windows. Every choice the study makes
is made on them and on the train statistics, never on the test windows: the maps used there are
refitted without them (`screening_fit`), the predictors of ΔPPL are computed on their rows
(`predictors`), and the greedy multi-block swap (`greedy`) orders and accepts blocks by them.
The test windows only report: all of them, or `test_windows` of them drawn by seed alone
(`report_ids`; the lesson profile's cheaper setting, with wider intervals).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from linrec.analyses.perplexity import DeltaPPL, PerplexityEvaluator
from linrec.analyses.uncertainty import delta_ppl_interval
from linrec.base.errors import LinrecError
from linrec.base.progress import bar as progress_bar
from linrec.inputs.corpora import Windows, load_windows
from linrec.inputs.hf import LoadedModel
from linrec.inputs.sites import StopForward, ffn_hooks, find_ffn_sites, run_until_stop
from linrec.inputs.surgery import FIRST_MODES, AffineFFN, FirstPositionSwap, count_params, save_swapped
from linrec.stats.ceiling import AffineFit, LowRankFit, Score, fit_affine, output_directions, reduce_rank, score
from linrec.stats.moments import Moments, output_sum_squares, remove_rows

if TYPE_CHECKING:
    import pandas

log = logging.getLogger(__name__)

GREEDY_ORDERS = ("r2_lin", "screening")  # greedy: descending screening R²_lin, or ascending screening ΔPPL alone


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
            "corpus, seq_len, tokens, seed and test fraction (linrec.analyses.swap.capture_windows)"
        )


def screening_ids(windows: Windows, n: int, seed: int = 0) -> torch.Tensor:
    """`n` seeded *train* windows (sorted): the screening set, a cheap "is this block safe to swap?" check."""
    if n < 1:
        raise LinrecError(f"screening needs at least one window, got {n}")
    return _draw(windows, windows.train, n, [seed, 2])


def report_ids(windows: Windows, n: int | None = None, seed: int = 0) -> torch.Tensor:
    """The held-out windows every reported perplexity is measured on: all of them (`n` None), or `n` of them drawn
    by seed alone (sorted), never by anything measured on them. A smaller `n` makes the study cheaper (each swap
    costs one pass over these windows) and its intervals wider; the profile says which."""
    if n is None or n >= len(windows.test):
        return windows.split("test")
    if n < 2:
        raise LinrecError(f"ΔPPL intervals need at least 2 held-out windows, got test_windows={n}")
    return _draw(windows, windows.test, n, [seed, 3])


def _draw(windows: Windows, pool: np.ndarray, n: int, seed: list[int]) -> torch.Tensor:
    """The ids of min(n, len(pool)) windows of `pool` drawn without replacement by `seed` alone, sorted."""
    pick = np.sort(np.random.default_rng(seed).choice(pool, size=min(n, len(pool)), replace=False))
    return windows.ids[pick]


# ---- the screening windows' rows -----------------------------------------------------------------------
@dataclass
class BlockRows:
    """Every row of some windows at one block (float32, on the CPU), and their statistics (float64)."""

    x: torch.Tensor  # [n_rows, d_in] FFN input
    y: torch.Tensor  # [n_rows, d_out] FFN output
    resid: torch.Tensor  # [n_rows, d_model] the residual stream leaving the block
    first: torch.Tensor  # [n_rows] bool: the row is its window's first position
    moments: Moments
    first_moments: Moments


@torch.no_grad()
def block_rows(model: torch.nn.Module, ids: torch.Tensor, batch_size: int = 8) -> list[BlockRows]:
    """Each FFN block's input, output and outgoing residual stream on the windows `ids` [n, T], in one hooked
    pass that stops after the last block (no LM head). Meant for a few windows: every row is kept."""
    sites = find_ffn_sites(model)
    parts: dict[str, list[list[torch.Tensor]]] = {k: [[] for _ in sites] for k in ("x", "y", "resid")}
    last = sites[-1].index

    def grab(block: int, x: torch.Tensor, y: torch.Tensor) -> None:
        parts["x"][block].append(x.detach().reshape(-1, x.shape[-1]).to("cpu", torch.float32, copy=True))
        parts["y"][block].append(y.detach().reshape(-1, y.shape[-1]).to("cpu", torch.float32, copy=True))

    def out_hook(site):
        def hook(module, args, output):
            h = output[0] if isinstance(output, (tuple, list)) else output
            parts["resid"][site.index].append(h.detach().reshape(-1, h.shape[-1]).to("cpu", torch.float32, copy=True))
            if site.index == last:
                raise StopForward

        return hook

    device = next(model.parameters()).device
    handles = [s.block.register_forward_hook(out_hook(s)) for s in sites]
    try:
        with ffn_hooks(sites, grab):
            for start in range(0, len(ids), batch_size):
                run_until_stop(model, input_ids=ids[start : start + batch_size].to(device), use_cache=False)
    finally:
        for h in handles:
            h.remove()
    first = (torch.arange(ids.numel()) % ids.shape[1]) == 0
    out = []
    for s in sites:
        x, y, r = (torch.cat(parts[k][s.index]) for k in ("x", "y", "resid"))
        out.append(BlockRows(x, y, r, first, Moments.of(x, y), Moments.of(x[first], y[first])))
    return out


# ---- greedy multi-block swap ---------------------------------------------------------------------------
@dataclass
class GreedyResult:
    """Blocks tried in a fixed order and kept while ΔPPL on the selection windows stays within the budget;
    the kept set then measured on the held-out windows."""

    order: str
    swapped: list[int]  # kept blocks, in the order they were accepted
    steps: pandas.DataFrame  # one row per block in the order: block, position, alone, tried, ppl, delta_ppl, kept
    budget_ppl: float
    ppl_base: float  # on the selection (screening) windows
    ppl_final: float
    params_removed: int  # FFN parameters of the kept blocks
    params_added: int  # parameters of their affine maps
    test: DeltaPPL | None = None  # the kept set (the capture's maps) on the held-out windows

    @property
    def delta_ppl(self) -> float:
        return self.ppl_final - self.ppl_base

    def row(self) -> dict:
        """One row of the swap_greedy table."""
        t = self.test
        test_delta = t.delta if t else 0.0
        return {
            "order": self.order,
            "budget_ppl": self.budget_ppl,
            "blocks_swapped": " ".join(map(str, sorted(self.swapped))),
            "n_swapped": len(self.swapped),
            "n_tried": int(self.steps["tried"].sum()),
            "screening_ppl_base": self.ppl_base,
            "screening_ppl_final": self.ppl_final,
            "screening_delta_ppl": self.delta_ppl,
            "test_ppl_base": t.ppl_base if t else np.nan,
            "test_ppl_final": t.ppl if t else np.nan,
            "test_delta_ppl": test_delta,
            "test_delta_lo": t.lo if t else 0.0,
            "test_delta_hi": t.hi if t else 0.0,
            "heldout_minus_screening": test_delta - self.delta_ppl,
            "params_removed": self.params_removed,
            "params_added": self.params_added,
        }

    def summary(self) -> str:
        text = (
            f"greedy swap in order of {self.order}, within +{self.budget_ppl:g} ppl on the screening windows: "
            f"blocks {sorted(self.swapped)} kept ({len(self.swapped)} of {len(self.steps)}; "
            f"{int(self.steps['tried'].sum())} tried); screening ppl {self.ppl_base:.4f} → {self.ppl_final:.4f} "
            f"(Δ {self.delta_ppl:+.4f})"
        )
        if self.test is not None:
            t = self.test
            text += f"; held out {t.ppl_base:.4f} → {t.ppl:.4f} (Δ {t.delta:+.4f}, 95% CI [{t.lo:+.4f}, {t.hi:+.4f}])"
        return text + (
            f"; FFN parameters removed {self.params_removed:,}, affine parameters added {self.params_added:,} "
            f"(net −{self.params_removed - self.params_added:,})"
        )


def greedy_swap(
    evaluator: PerplexityEvaluator,
    modules: Mapping[int, torch.nn.Module],
    order: Sequence[int],
    budget_ppl: float = 1.0,
    alone: Mapping[int, float] | None = None,
    name: str = "given",
    progress: bool = True,
) -> GreedyResult:
    """Try the blocks of `order` in turn; keep each one whose addition keeps ΔPPL on `evaluator` ≤ `budget_ppl`.

    `alone`: ΔPPL of each block swapped alone on the same evaluator. With it, a block whose
    own ΔPPL is over the budget is not tried (the cost of a set is rarely below the cost of
    its most costly member; `tried` marks what was evaluated), and the first trial reuses its
    number instead of evaluating it again.
    """
    import pandas as pd

    if not budget_ppl >= 0:
        raise LinrecError(f"the perplexity budget must be ≥ 0, got {budget_ppl}; try --budget-ppl 1.0")
    missing = [i for i in order if i not in modules]
    if missing:
        raise LinrecError(f"no affine module for blocks {missing}; fit them first")
    kept: dict[int, torch.nn.Module] = {}
    rows = []
    ppl_final = evaluator.base_ppl
    for pos, i in enumerate(progress_bar(order, desc=f"greedy swap ({name})", unit="block", disable=not progress)):
        own = None if alone is None else float(alone[i])
        row = {"block": i, "position": pos, "alone": own, "tried": False, "ppl": np.nan, "delta_ppl": np.nan}
        if own is None or own <= budget_ppl:
            trial = {**kept, i: modules[i]}
            ppl = own + evaluator.base_ppl if (own is not None and not kept) else evaluator.ppl(trial)
            ok = ppl - evaluator.base_ppl <= budget_ppl
            if ok:
                kept, ppl_final = trial, ppl
            row.update(tried=True, ppl=ppl, delta_ppl=ppl - evaluator.base_ppl)
        rows.append({**row, "kept": i in kept})
    return GreedyResult(
        order=name,
        swapped=list(kept),
        steps=pd.DataFrame(rows, columns=["block", "position", "alone", "tried", "ppl", "delta_ppl", "kept"]),
        budget_ppl=budget_ppl,
        ppl_base=evaluator.base_ppl,
        ppl_final=ppl_final,
        params_removed=sum(count_params(evaluator.sites[i].module) for i in kept),
        params_added=sum(count_params(m) for m in kept.values()),
    )


# ---- one model, one capture: the study a notebook or the CLI runs ----------------------------------------
@dataclass
class _Clock:
    """Seconds and evaluations per step of a study (what `SwapStudy.timings` reports)."""

    seconds: dict[str, float] = field(default_factory=dict)
    evaluations: dict[str, int] = field(default_factory=dict)

    def add(self, step: str, seconds: float, evaluations: int = 0) -> None:
        self.seconds[step] = self.seconds.get(step, 0.0) + seconds
        self.evaluations[step] = self.evaluations.get(step, 0) + evaluations


class SwapStudy:
    """Swap experiments on one loaded model with its capture: per-block table, predictors, rank curves,
    greedy swap, save.

    Fits come from the capture's train statistics (cached per block); perplexities are on the
    capture's test windows (all, or `test_windows` of them: `report_ids`; one `PerplexityEvaluator`, built on
    first use). Choices use the
    `screening_windows` seeded train windows only.
    """

    def __init__(
        self,
        capture,
        loaded: LoadedModel,
        windows: Windows | None = None,
        batch_size: int = 8,
        progress: bool = True,
        screening_windows: int = 8,
        seed: int = 0,
        n_boot: int = 2000,
        test_windows: int | None = None,
    ):
        if capture.meta.get("identity") not in (None, loaded.identity):
            raise LinrecError(
                f"the capture was made from {capture.meta['identity']}, not {loaded.identity}; "
                "load the model the capture was made from"
            )
        self.capture, self.loaded, self.model = capture, loaded, loaded.model
        self.sites = find_ffn_sites(self.model)
        if len(self.sites) != capture.n_blocks:
            raise LinrecError(
                f"the capture has {capture.n_blocks} blocks, the model {len(self.sites)}; "
                "load the model the capture was made from"
            )
        self.windows = windows if windows is not None else capture_windows(capture, loaded.tokenizer)
        _check_windows(capture, self.windows)
        if screening_windows < 1:
            raise LinrecError(f"the swap study needs at least one screening window, got {screening_windows}")
        self.batch_size, self.progress, self.n_boot = batch_size, progress, n_boot
        self.screening_windows, self.seed = screening_windows, seed
        self.report_ids = report_ids(self.windows, test_windows, seed)
        self.clock = _Clock()
        self._dirs: dict[int, tuple] = {}
        self._fits: dict[tuple[int, str], AffineFit] = {}
        self._evaluator: PerplexityEvaluator | None = None
        self._screening: PerplexityEvaluator | None = None
        self._rows: list[BlockRows] | None = None
        self._screening_fits: dict[int, AffineFit] = {}
        self._alone: dict[int, float] = {}
        self._predictors: dict[tuple[int, ...], pandas.DataFrame] = {}
        self._test_nlls: dict[tuple, np.ndarray] = {}  # (block, rank, first) specs → per-window NLL on the test windows

    @property
    def n_blocks(self) -> int:
        return len(self.sites)

    def _blocks(self, blocks: Sequence[int] | None) -> list[int]:
        blocks = list(range(self.n_blocks)) if blocks is None else [int(b) for b in blocks]
        bad = [b for b in blocks if not 0 <= b < self.n_blocks]
        if bad:
            raise LinrecError(f"blocks {bad} do not exist; this model has blocks 0..{self.n_blocks - 1}")
        return blocks

    def _dtype(self, block: int) -> tuple[torch.dtype, torch.device]:
        p = next(self.sites[block].module.parameters())
        return p.dtype, p.device

    # fits and modules
    def fit(self, block: int, first: str = "map") -> AffineFit:
        """The block's closed-form map: the capture's own (`Capture.fit`) for `first="map"`, so every analysis swaps
        the same map; for "ffn"/"mean", the map fitted on the train split's positions ≥ 1."""
        _check_first(first)
        if first == "map":
            return self.capture.fit(block)
        if (block, "ex_first") not in self._fits:
            train = self._without_first(block)[0]
            self._fits[(block, "ex_first")] = fit_affine(train, block=block)
        return self._fits[(block, "ex_first")]

    def _first(self) -> dict[str, list[Moments]]:
        """The capture's first-position statistics per split, or the one-line error of a capture without them."""
        if self.capture.first is None:
            raise LinrecError(
                "this capture has no first-position statistics; recompute it with this linrec (it is cached by version)"
            )
        return self.capture.first

    def _without_first(self, block: int) -> tuple[Moments, Moments]:
        self._first()
        return self.capture.without_first(block)

    def first_share(self, block: int) -> float:
        """Share of the block's *train* output variance at each window's first position: 1 − SST(positions ≥ 1) /
        SST(all), from train statistics (so a choice made on it does not touch the test windows)."""
        total = self.capture.stats["train"][block]
        return 1.0 - output_sum_squares(total, self._first()["train"][block]) / output_sum_squares(total)

    def score(self, block: int, rank: int | None = None, first: str = "map") -> Score:
        """Held-out fit quality of the block's map (full, or at `rank`) on the positions it is applied to."""
        if first != "map":
            return score(self.fit(block, first), self._without_first(block)[1], block=block)
        return score(
            self.low_rank(block, rank) if rank else self.fit(block), self.capture.stats["test"][block], block=block
        )

    def low_rank(self, block: int, rank: int) -> LowRankFit:
        if block not in self._dirs:
            self._dirs[block] = output_directions(self.fit(block), self.capture.stats["train"][block])
        return reduce_rank(self.fit(block), self.capture.stats["train"][block], rank, self._dirs[block])

    def module(self, block: int, rank: int | None = None, first: str = "map") -> torch.nn.Module:
        """The swap module of `block`, in the dtype and device of the FFN it replaces: the affine map (rank-r
        factors with `rank`), or for `first="ffn"/"mean"` a `FirstPositionSwap` around the positions-≥-1 map."""
        _check_first(first)
        dtype, device = self._dtype(block)
        if first == "map":
            return AffineFFN.from_fit(self.low_rank(block, rank) if rank else self.fit(block), dtype, device)
        if rank:
            raise LinrecError("reduced-rank maps are for --first map only")
        affine = AffineFFN.from_fit(self.fit(block, first), dtype, device)
        if first == "ffn":
            return FirstPositionSwap(affine, "ffn", ffn=self.sites[block].module)
        return FirstPositionSwap(affine, "mean", mean=self.capture.first["train"][block].mean_y)

    def params_ffn(self, block: int) -> int:
        return count_params(self.sites[block].module)

    # evaluators
    @property
    def evaluator(self) -> PerplexityEvaluator:
        """Perplexity on the capture's test windows (reporting only)."""
        if self._evaluator is None:
            t0 = time.perf_counter()
            self._evaluator = PerplexityEvaluator(
                self.model, self.report_ids, self.batch_size, progress=self.progress, desc="base ppl (test)"
            )
            self.clock.add("test: base run", time.perf_counter() - t0, 1)
        return self._evaluator

    @property
    def screening(self) -> PerplexityEvaluator:
        """Perplexity on the screening windows (seeded train windows; choices only)."""
        if self._screening is None:
            t0 = time.perf_counter()
            self._screening = PerplexityEvaluator(
                self.model, self.screening_ids, self.batch_size, desc="base ppl (screening)"
            )
            self.clock.add("screening: base run", time.perf_counter() - t0, 1)
        return self._screening

    @property
    def screening_ids(self) -> torch.Tensor:
        return screening_ids(self.windows, self.screening_windows, self.seed)

    def _delta(self, ev: PerplexityEvaluator, swaps: Mapping[int, torch.nn.Module], step: str) -> DeltaPPL:
        t0 = time.perf_counter()
        d = ev.delta(swaps, n_boot=self.n_boot, seed=self.seed)
        self.clock.add(step, time.perf_counter() - t0, 1)
        return d

    def _test_nll(self, spec: Sequence[tuple[int, int | None, str]], step: str) -> np.ndarray:
        """Per-window NLL on the test windows with the swaps of `spec` ((block, rank, first) each, as `module` takes
        them), run once per spec: the per-block table, the rank curve's dense map and a chosen set of one block
        are the same swapped model on the same windows, so the second ask reads the first one's numbers."""
        key = tuple(sorted((int(b), int(r or 0), f) for b, r, f in spec))
        if key not in self._test_nlls:
            t0 = time.perf_counter()
            self._test_nlls[key] = self.evaluator.window_nll({b: self.module(b, r or None, f) for b, r, f in key})
            self.clock.add(step, time.perf_counter() - t0, 1)
        return self._test_nlls[key]

    def _test_delta(self, spec: Sequence[tuple[int, int | None, str]], step: str) -> DeltaPPL:
        """`_test_nll` as a ΔPPL with its paired bootstrap interval."""
        return self.evaluator.delta_of(self._test_nll(spec, step), self.n_boot, self.seed)

    # the screening windows: leave-out fits, predictors, ΔPPL alone
    @property
    def rows(self) -> list[BlockRows]:
        """Every block's rows on the screening windows (one hooked pass, no LM head)."""
        if self._rows is None:
            t0 = time.perf_counter()
            self._rows = block_rows(self.model, self.screening_ids, self.batch_size)
            self.clock.add("screening: rows", time.perf_counter() - t0)
        return self._rows

    def screening_fit(self, block: int) -> AffineFit:
        """The block's map fitted on the train split *without* the screening windows, so they are held out for it."""
        if block not in self._screening_fits:
            rest = remove_rows(self.capture.stats["train"][block], self.rows[block].moments)
            self._screening_fits[block] = fit_affine(rest, block=block, condition=False)
        return self._screening_fits[block]

    def screening_module(self, block: int) -> AffineFFN:
        """The affine module of `block` fitted without the screening windows (`screening_fit`)."""
        return AffineFFN.from_fit(self.screening_fit(block), *self._dtype(block))

    def alone(self, block: int) -> float:
        """ΔPPL on the screening windows with `block` alone swapped for its leave-screening-out map.
        It runs the swapped model: the target measured on other windows, used to choose, never to report."""
        if block not in self._alone:
            self._alone[block] = self._delta(
                self.screening, {block: self.screening_module(block)}, "screening: blocks alone"
            ).delta
        return self._alone[block]

    def predictors(self, blocks: Sequence[int] | None = None, alone: bool = True) -> pandas.DataFrame:
        """Per block, candidate predictors of ΔPPL from the screening windows' rows and the leave-screening-out
        map, none of which runs the swapped model (except `screening_delta_ppl`, with `alone`):

        depth_from_end   min(i, L − 1 − i), the distance to the nearest end of the stack
        r2_lin           R² of the map on the screening rows (variance-weighted over outputs)
        r2_ex_first      the same without each window's first position
        mse_out          mean over rows of ‖ŷ − y‖² (the raw output-space error)
        err_rel_resid    Σ‖ŷ − y‖² / Σ‖h‖², h the residual stream leaving the block
        err_post_norm_rel_resid  Σ‖N(ŷ) − N(y)‖² / Σ‖h‖² with N the block's post-FFN norm (Gemma-3);
                         NaN for models that add y as it is
        screening_delta_ppl  ΔPPL of the swap on the screening windows (runs the swapped model)
        """
        import pandas as pd

        blocks = self._blocks(blocks)
        if tuple(blocks) in self._predictors:
            table = self._predictors[tuple(blocks)].copy()
        else:
            table = pd.DataFrame([self._predictor_row(i) for i in blocks])
            self._predictors[tuple(blocks)] = table.copy()
        if alone:
            blocks_ = table["block"].tolist()
            it = progress_bar(
                blocks_, desc=f"screening ΔPPL {self.loaded.name}", unit="block", disable=not self.progress
            )
            table["screening_delta_ppl"] = [self.alone(i) for i in it]
        return table

    def _predictor_row(self, i: int) -> dict:
        t0 = time.perf_counter()
        r, fit = self.rows[i], self.screening_fit(i)
        s = score(fit, r.moments, block=i)
        x = r.x.double()
        y_hat = torch.from_numpy(fit.b) + x @ torch.from_numpy(fit.W)
        resid_ss = float(r.resid.double().square().sum())
        err_ss = float((y_hat - r.y.double()).square().sum())
        post = self.sites[i].post_norm
        if post is not None:
            dtype, device = self._dtype(i)
            with torch.no_grad():
                n_hat = post(y_hat.to(device, dtype)).double().cpu()
                n_y = post(r.y.to(device, dtype)).double().cpu()
            err_post = float((n_hat - n_y).square().sum()) / resid_ss
        else:
            err_post = np.nan
        ex = remove_rows(r.moments, r.first_moments) if r.first_moments.n < r.moments.n else None
        row = {
            "model": self.capture.model_label,
            "block": i,
            "depth_from_end": min(i, self.n_blocks - 1 - i),
            "r2_lin": s.r2,
            "r2_ex_first": score(fit, ex, block=i).r2 if ex is not None else np.nan,
            "mse_out": float(s.sse.sum() / s.n),
            "err_rel_resid": err_ss / resid_ss,
            "err_post_norm_rel_resid": err_post,
            "n_screening_rows": s.n,
        }
        self.clock.add("screening: predictors", time.perf_counter() - t0)
        return row

    # experiments, reported on the test windows
    def table(
        self,
        blocks: Sequence[int] | None = None,
        first: Sequence[str] | str = "map",
        variant_blocks: Sequence[int] | None = None,
    ) -> pandas.DataFrame:
        """One row per block and position variant (`first`, see the module docstring): held-out R²_lin of the map
        on the positions it is applied to, output MSE, base and swapped perplexity, ΔPPL with its paired bootstrap
        interval (`delta_lo`, `delta_hi`), and parameters: of the FFN, of the affine map, of the whole swap module
        (the map plus the kept FFN for "ffn", plus d_out for "mean"). With "map" and another variant, that
        variant's rows also carry `vs_map` = PPL(variant) − PPL(map) with its paired interval (`vs_map_lo`,
        `vs_map_hi`): how much of the map's cost the variant removes. `variant_blocks` limits the variants other
        than "map" to those blocks (default: all of `blocks`)."""
        import pandas as pd

        firsts = [first] if isinstance(first, str) else list(first)
        for f in firsts:
            _check_first(f)
        if "map" in firsts:  # the map first, so the variants can be compared with it window by window
            firsts = ["map", *[f for f in firsts if f != "map"]]
        ev = self.evaluator
        blocks = self._blocks(blocks)
        extra = set(blocks if variant_blocks is None else self._blocks(variant_blocks))
        jobs = [(i, f) for i in blocks for f in firsts if f == "map" or i in extra]
        rows, map_nll = [], {}
        for i, f in progress_bar(jobs, desc=f"swap ΔPPL {self.loaded.name}", unit="swap", disable=not self.progress):
            t0 = time.perf_counter()
            s = self.score(i, first=f)
            m = self.module(i, first=f)
            nll = self._test_nll([(i, None, f)], f"test: blocks alone ({f})")
            d = ev.delta_of(nll, self.n_boot, self.seed)
            affine = m.affine if isinstance(m, FirstPositionSwap) else m
            row = {
                "model": self.capture.model_label,
                "corpus": self.capture.config.corpus,
                "block": i,
                "first": f,
                "r2_lin": s.r2,
                "mse_out": float(s.sse.sum() / s.n),
                "ppl_base": d.ppl_base,
                "ppl_swapped": d.ppl,
                "delta_ppl": d.delta,
                "delta_lo": d.lo,
                "delta_hi": d.hi,
                "params_ffn": self.params_ffn(i),
                "params_linear": affine.n_params,
                "params_swap": m.n_params,
            }
            row["param_ratio"] = row["params_swap"] / row["params_ffn"] if row["params_ffn"] else float("nan")
            row.update(vs_map=np.nan, vs_map_lo=np.nan, vs_map_hi=np.nan)
            if f == "map":
                map_nll[i] = nll
            elif i in map_nll:
                lo, hi = delta_ppl_interval(map_nll[i], nll, ev.tokens_per_window, self.n_boot, self.seed)
                ppl_map = float(np.exp(map_nll[i].sum() / ev.n_tokens))
                row.update(vs_map=d.ppl - ppl_map, vs_map_lo=lo, vs_map_hi=hi)
            row["n_test_tokens"] = ev.n_tokens
            row["seconds"] = time.perf_counter() - t0
            rows.append(row)
        return pd.DataFrame(rows)

    def curve_block(self, predictors: pandas.DataFrame | None = None) -> int:
        """The block for the ΔPPL-vs-parameters curve, chosen on the screening windows: among the blocks whose
        screening R²_lin is at least the median, the one with the lowest screening ΔPPL alone."""
        p = self.predictors() if predictors is None else predictors
        high = p[p["r2_lin"] >= p["r2_lin"].median()]
        return int(high.sort_values(["screening_delta_ppl", "block"]).iloc[0]["block"])

    def rank_curve(self, block: int, ranks: Sequence[int]) -> pandas.DataFrame:
        """ΔPPL (with interval) against parameters for `block`: one row per rank (reduced-rank maps) and one for
        the dense map."""
        import pandas as pd

        d_out = self.fit(block).W.shape[1]
        rows = []
        for r in progress_bar([*ranks, None], desc=f"rank curve block {block}", unit="rank", disable=not self.progress):
            m = self.module(block, r)
            d = self._test_delta([(block, r, "map")], "test: rank curve")
            rows.append(
                {
                    "model": self.capture.model_label,
                    "block": block,
                    "rank": d_out if r is None else r,
                    "factored": r is not None,
                    "params": m.n_params,
                    "params_ffn": self.params_ffn(block),
                    "param_ratio": m.n_params / self.params_ffn(block),
                    "var_kept": 1.0 if r is None else self.low_rank(block, r).var_kept,
                    "r2_lin": self.score(block, r).r2,
                    "ppl": d.ppl,
                    "delta_ppl": d.delta,
                    "delta_lo": d.lo,
                    "delta_hi": d.hi,
                }
            )
        return pd.DataFrame(rows)

    def joint(self, blocks: Sequence[int], ranks: Mapping[int, int] | None = None) -> dict:
        """Perplexity on the test windows with all `blocks` swapped at once (with its interval), and the
        parameters removed and added."""
        mods = {i: self.module(i, (ranks or {}).get(i)) for i in self._blocks(blocks)}
        d = self._test_delta([(i, (ranks or {}).get(i), "map") for i in mods], "test: sets")
        return {
            "blocks": sorted(mods),
            "ppl_base": d.ppl_base,
            "ppl": d.ppl,
            "delta_ppl": d.delta,
            "delta_lo": d.lo,
            "delta_hi": d.hi,
            "params_removed": sum(self.params_ffn(i) for i in mods),
            "params_added": sum(m.n_params for m in mods.values()),
        }

    def order(self, by: str, blocks: Sequence[int] | None = None) -> list[int]:
        """Blocks in the greedy swap's order, from the screening windows: "r2_lin", descending R²_lin of the
        leave-out map on their rows (the paper's "high R²_lin is a compression signal"); "screening", ascending
        ΔPPL of each block swapped alone there."""
        if by not in GREEDY_ORDERS:
            raise LinrecError(f"the greedy order must be one of {', '.join(GREEDY_ORDERS)}, got {by!r}")
        blocks = self._blocks(blocks)
        if by == "r2_lin":
            p = self.predictors(blocks, alone=False)
            key = dict(zip(p["block"], -p["r2_lin"]))
        else:
            key = {i: self.alone(i) for i in blocks}
        return sorted(blocks, key=lambda i: (key[i], i))

    def greedy(
        self, budget_ppl: float = 1.0, order: str = "r2_lin", blocks: Sequence[int] | None = None
    ) -> GreedyResult:
        """The greedy multi-block swap (`greedy_swap`) chosen on the screening windows alone: blocks in `order`
        (`SwapStudy.order`), a block not tried when its own screening ΔPPL is over the budget, accepted while the
        set's screening ΔPPL (leave-screening-out maps) stays within `budget_ppl`. The kept set, with the capture's
        maps, is then measured once on the test windows (`GreedyResult.test`), which played no part in choosing it."""
        blocks = self._blocks(blocks)
        seq = self.order(order, blocks)
        alone = {i: self.alone(i) for i in blocks}
        t0 = time.perf_counter()
        n0 = self.screening.n_evaluations
        result = greedy_swap(
            self.screening, {i: self.screening_module(i) for i in blocks}, seq, budget_ppl, alone, order, self.progress
        )
        self.clock.add("screening: greedy", time.perf_counter() - t0, self.screening.n_evaluations - n0)
        if result.swapped:
            result.test = self._test_delta([(i, None, "map") for i in result.swapped], "test: sets")
        return result

    @property
    def timings(self) -> pandas.DataFrame:
        """Seconds and evaluations per step so far (evaluations: passes over that step's windows)."""
        import pandas as pd

        c = self.clock
        return pd.DataFrame(
            [{"model": self.capture.model_label, "step": k, "seconds": v, "evaluations": c.evaluations[k]}
             for k, v in c.seconds.items()]
        )  # fmt: skip

    def save(self, directory: str | Path, blocks: Sequence[int], ranks: Mapping[int, int] | None = None) -> Path:
        """Write the model with `blocks` swapped (format: `linrec.inputs.surgery`)."""
        mods = {i: self.module(i, (ranks or {}).get(i)) for i in self._blocks(blocks)}
        info = {
            "base_model": self.capture.model_label,
            "base_identity": self.loaded.identity,
            "capture": asdict(self.capture.config),
        }
        return save_swapped(self.model, self.loaded.tokenizer, mods, directory, info)


def _check_first(first: str) -> None:
    if first not in FIRST_MODES:
        raise LinrecError(f"first must be one of {', '.join(FIRST_MODES)}, got {first!r}; e.g. --first map")


@dataclass
class ModelSwapRun:
    """Everything notebook 06 reports for one model (`run_model`): the swap table, the screening predictors, the
    R²_lin table of the capture, the rank curve, the greedy sets and their steps, the reload check and the clock."""

    model: str
    table: pandas.DataFrame
    values: pandas.DataFrame
    ceiling: pandas.DataFrame
    curve: pandas.DataFrame
    greedy: list[dict]
    steps: pandas.DataFrame
    reload: dict
    timings: pandas.DataFrame


def run_model(
    model: str,
    capture_kw: Mapping,
    *,
    batch_size: int = 8,
    device: str = "cpu",
    screening_windows: int = 4,
    test_windows: int | None = None,
    ranks: Sequence[int] = (16, 64, 256),
    budget_ppl: float = 1.0,
    first_variants: Sequence[str] = ("ffn", "mean"),
    variant_min_first_share: float = 0.5,
    n_boot: int = 2000,
    seed: int = 0,
    save_dir: str | Path | None = None,
) -> ModelSwapRun:
    """The whole swap study of one model, as notebook 06 runs it: every block swapped alone (held out, with the
    position variants on the blocks whose *train* first-position share is ≥ `variant_min_first_share`), the
    predictors and every choice on the screening windows, the reduced-rank curve of `SwapStudy.curve_block`, the
    greedy swap in each of `GREEDY_ORDERS`, and the larger greedy set (if both kept nothing, the block with the
    lowest screening ΔPPL) saved, reloaded and compared on the screening windows.

    The saved model (0.5–1 GB) goes to `save_dir`/<model>, or to a temporary directory deleted after the check. The
    model and the study are released before returning, so a loop over models holds one model at a time."""
    import gc
    import shutil
    import tempfile

    import pandas as pd

    from linrec.analyses.recoverability import ceiling_table
    from linrec.inputs.models import load_model
    from linrec.inputs.surgery import load_swapped
    from linrec.measure.capture import get_capture

    capture = get_capture(model, **capture_kw)
    loaded = load_model(model, device=device)
    study = SwapStudy(capture, loaded, batch_size=batch_size, screening_windows=screening_windows, seed=seed,
                      n_boot=n_boot, test_windows=test_windows)  # fmt: skip
    values = study.predictors()
    sink = [i for i in range(study.n_blocks) if study.first_share(i) >= variant_min_first_share]
    table = study.table(first=["map", *first_variants], variant_blocks=sink)
    block = study.curve_block(values)
    curve = study.rank_curve(block, [r for r in ranks if r < capture.stats["train"][block].d_out])
    results = {order: study.greedy(budget_ppl, order=order) for order in GREEDY_ORDERS}
    n_params = count_params(loaded.model)
    greedy = [{"model": model, **g.row(), "params_model": n_params} for g in results.values()]
    steps = pd.concat([g.steps.assign(model=model, order=o) for o, g in results.items()], ignore_index=True)

    g = max(results.values(), key=lambda r: len(r.swapped))
    chosen = sorted(g.swapped) or [int(values.sort_values("screening_delta_ppl").iloc[0]["block"])]
    in_memory = study.screening.ppl({i: study.module(i) for i in chosen})
    scratch = None if save_dir else tempfile.mkdtemp(prefix="linrec-swapped-")
    try:
        out = study.save(Path(save_dir or scratch) / model.replace("/", "--"), chosen)
        reloaded = load_swapped(out, device=device, tokenizer=False)  # the check feeds token ids: no tokenizer
        ppl_reloaded = PerplexityEvaluator(reloaded.model, study.screening_ids, batch_size, reuse_prefix=False)
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    reload = {
        "model": model,
        "blocks": " ".join(map(str, chosen)),
        "ppl_in_memory": in_memory,
        "ppl_reloaded": ppl_reloaded.base_ppl,
        "abs_diff": abs(ppl_reloaded.base_ppl - in_memory),
        "directory": str(out) if save_dir else "(temporary, deleted; set save_dir to keep it)",
    }
    study.clock.add("screening: reload check", ppl_reloaded.seconds_base, 1)
    run = ModelSwapRun(model, table, values, ceiling_table(capture, seed=seed), curve, greedy, steps, reload,
                       study.timings)  # fmt: skip
    del study, loaded, reloaded, ppl_reloaded
    gc.collect()
    return run
