"""The screening part of the swap study: every choice it makes, on seeded *train* windows and train statistics.

`Screening` is built from the model, the capture's *train* statistics and the ids of a few seeded train windows
(`screening_ids`); it is never given the held-out windows or the held-out statistics, so no choice can read them.
On the screening windows' rows it refits each block's map without them (`screening_fit`), computes the candidate
predictors of ΔPPL (`predictors`), runs each block swapped alone (`alone`), orders the blocks (`order`), picks the
rank curve's block (`curve_block`) and the greedy multi-block swap's set (`greedy`). What is reported, held out, is
`linrec.analyses.swap` (notebook 06; arXiv 2606.19379, §5).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from linrec.analyses.perplexity import DeltaPPL, PerplexityEvaluator
from linrec.base.constraints import Blocks
from linrec.base.errors import LinrecError
from linrec.base.progress import bar as progress_bar
from linrec.inputs.corpora import Windows
from linrec.inputs.hf import LoadedModel
from linrec.inputs.sites import FfnSite, StopForward, ffn_hooks, find_ffn_sites, run_until_stop
from linrec.inputs.surgery import AffineFFN, count_params
from linrec.stats.ceiling import AffineFit, fit_affine, score
from linrec.stats.moments import Moments, output_sum_squares, remove_rows

if TYPE_CHECKING:
    import pandas

GREEDY_ORDERS = ("r2_lin", "screening")  # greedy: descending screening R²_lin, or ascending screening ΔPPL alone


# ---- what both parts share ---------------------------------------------------------------------------------
@dataclass
class Clock:
    """Seconds and evaluations per step of a study (what `SwapStudy.timings` reports)."""

    seconds: dict[str, float] = field(default_factory=dict)
    evaluations: dict[str, int] = field(default_factory=dict)

    def add(self, step: str, seconds: float, evaluations: int = 0) -> None:
        self.seconds[step] = self.seconds.get(step, 0.0) + seconds
        self.evaluations[step] = self.evaluations.get(step, 0) + evaluations


def check_blocks(blocks: Sequence[int] | None, n_blocks: int) -> list[int]:
    """`blocks` as ints (every block for None), each one that exists."""
    blocks = list(range(n_blocks)) if blocks is None else [int(b) for b in blocks]
    if blocks:  # the API's and the command line's rule and words (linrec.base.constraints.Blocks)
        Blocks(below=n_blocks).check("blocks", sorted(set(blocks)))
    return blocks


def site_dtype(site) -> tuple[torch.dtype, torch.device]:
    """The dtype and device of the FFN at `site` (a swap module is built in them)."""
    p = next(site.module.parameters())
    return p.dtype, p.device


def screening_ids(windows: Windows, n: int, seed: int = 0) -> torch.Tensor:
    """`n` seeded *train* windows (sorted): the screening set, a cheap "is this block safe to swap?" check."""
    if n < 1:
        raise LinrecError(f"screening needs at least one window, got {n}")
    return draw_windows(windows, windows.train, n, [seed, 2])


def draw_windows(windows: Windows, pool: np.ndarray, n: int, seed: list[int]) -> torch.Tensor:
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
def block_rows(
    model: torch.nn.Module, ids: torch.Tensor, batch_size: int = 8, sites: list[FfnSite] | None = None
) -> list[BlockRows]:
    """Each FFN block's input, output and outgoing residual stream on the windows `ids` [n, T], in one hooked
    pass that stops after the last block (no LM head). Meant for a few windows: every row is kept. `sites`: the
    model's FFN sites, where the caller has them (`LoadedModel.sites`)."""
    sites = find_ffn_sites(model) if sites is None else sites
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
            text += (f"; held out {t.ppl_base:.4f} → {t.ppl:.4f} (Δ {t.delta:+.4f}, {t.level:.0%} CI [{t.lo:+.4f}, "
                     f"{t.hi:+.4f}])")  # fmt: skip
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


# ---- the screening part --------------------------------------------------------------------------------------
class Screening:
    """Every choice of the swap study, on `ids` (seeded train windows) and the capture's train statistics `train`
    ([block] → Moments; `train_first`: the same at each window's first position). Built without the held-out windows.
    """

    keep_evaluations = False  # `SwapStudy.keep`: its evaluator keeps every evaluation in the cache

    def __init__(self, loaded: LoadedModel, train: Sequence[Moments], ids: torch.Tensor, *,
                 train_first: Sequence[Moments] | None = None, label: str = "", batch_size: int = 8,
                 progress: bool = True, clock: Clock | None = None):  # fmt: skip
        self.model, self.sites, self.train, self.train_first = loaded.model, loaded.sites, list(train), train_first
        self.ids, self.label, self.name = ids, label, loaded.name  # name: what the progress line calls the model
        self.batch_size, self.progress = batch_size, progress
        self.clock = clock or Clock()
        self._evaluator: PerplexityEvaluator | None = None
        self._rows: list[BlockRows] | None = None
        self._screening_fits: dict[int, AffineFit] = {}
        self._alone: dict[int, float] = {}
        self._predictors: dict[tuple[int, ...], pandas.DataFrame] = {}

    @property
    def n_blocks(self) -> int:
        return len(self.sites)

    @property
    def evaluator(self) -> PerplexityEvaluator:
        """Perplexity on the screening windows (choices only)."""
        if self._evaluator is None:
            t0 = time.perf_counter()
            self._evaluator = PerplexityEvaluator(
                self.model, self.ids, self.batch_size, desc="base ppl (screening)", sites=self.sites
            )
            if self.keep_evaluations:
                self._evaluator.keep(self.name)
            self.clock.add("screening: base run", time.perf_counter() - t0, 1)
        return self._evaluator

    @property
    def rows(self) -> list[BlockRows]:
        """Every block's rows on the screening windows (one hooked pass, no LM head)."""
        if self._rows is None:
            t0 = time.perf_counter()
            self._rows = block_rows(self.model, self.ids, self.batch_size, self.sites)
            self.clock.add("screening: rows", time.perf_counter() - t0)
        return self._rows

    def screening_fit(self, block: int) -> AffineFit:
        """The block's map fitted on the train split *without* the screening windows, so they are held out for it."""
        if block not in self._screening_fits:
            rest = remove_rows(self.train[block], self.rows[block].moments)
            self._screening_fits[block] = fit_affine(rest, block=block, condition=False)
        return self._screening_fits[block]

    def screening_module(self, block: int) -> AffineFFN:
        """The affine module of `block` fitted without the screening windows (`screening_fit`)."""
        return AffineFFN.from_fit(self.screening_fit(block), *site_dtype(self.sites[block]))

    def alone(self, block: int) -> float:
        """ΔPPL on the screening windows with `block` alone swapped for its leave-screening-out map.
        It runs the swapped model: the target measured on other windows, used to choose, never to report."""
        if block not in self._alone:
            t0 = time.perf_counter()
            d: DeltaPPL = self.evaluator.delta({block: self.screening_module(block)})
            self.clock.add("screening: blocks alone", time.perf_counter() - t0, 1)
            self._alone[block] = d.delta
        return self._alone[block]

    def first_share(self, block: int) -> float:
        """Share of the block's *train* output variance at each window's first position: 1 − SST(positions ≥ 1) /
        SST(all), from train statistics (so a choice made on it does not touch the test windows)."""
        total = self.train[block]
        return 1.0 - output_sum_squares(total, self._train_first()[block]) / output_sum_squares(total)

    def _train_first(self) -> Sequence[Moments]:
        if self.train_first is None:
            raise LinrecError(
                "this capture has no first-position statistics; recompute it with this linrec (it is cached by version)"
            )
        return self.train_first

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

        blocks = check_blocks(blocks, self.n_blocks)
        if tuple(blocks) in self._predictors:
            table = self._predictors[tuple(blocks)].copy()
        else:
            table = pd.DataFrame([self._predictor_row(i) for i in blocks])
            self._predictors[tuple(blocks)] = table.copy()
        if alone:
            blocks_ = table["block"].tolist()
            it = progress_bar(blocks_, desc=f"screening ΔPPL {self.name}", unit="block", disable=not self.progress)
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
            dtype, device = site_dtype(self.sites[i])
            with torch.no_grad():
                n_hat = post(y_hat.to(device, dtype)).double().cpu()
                n_y = post(r.y.to(device, dtype)).double().cpu()
            err_post = float((n_hat - n_y).square().sum()) / resid_ss
        else:
            err_post = np.nan
        ex = remove_rows(r.moments, r.first_moments) if r.first_moments.n < r.moments.n else None
        row = {
            "model": self.label,
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

    def curve_block(self, predictors: pandas.DataFrame | None = None) -> int:
        """The block for the ΔPPL-vs-parameters curve, chosen on the screening windows: among the blocks whose
        screening R²_lin is at least the median, the one with the lowest screening ΔPPL alone."""
        p = self.predictors() if predictors is None else predictors
        high = p[p["r2_lin"] >= p["r2_lin"].median()]
        return int(high.sort_values(["screening_delta_ppl", "block"]).iloc[0]["block"])

    def order(self, by: str, blocks: Sequence[int] | None = None) -> list[int]:
        """Blocks in the greedy swap's order, from the screening windows: "r2_lin", descending R²_lin of the
        leave-out map on their rows (the paper's "high R²_lin is a compression signal"); "screening", ascending
        ΔPPL of each block swapped alone there."""
        if by not in GREEDY_ORDERS:
            raise LinrecError(f"the greedy order must be one of {', '.join(GREEDY_ORDERS)}, got {by!r}")
        blocks = check_blocks(blocks, self.n_blocks)
        if by == "r2_lin":
            p = self.predictors(blocks, alone=False)
            key = dict(zip(p["block"], -p["r2_lin"]))
        else:
            key = {i: self.alone(i) for i in blocks}
        return sorted(blocks, key=lambda i: (key[i], i))

    def greedy(
        self, budget_ppl: float = 1.0, order: str = "r2_lin", blocks: Sequence[int] | None = None
    ) -> GreedyResult:
        """The greedy multi-block swap (`greedy_swap`) on the screening windows alone: blocks in `order` (`order`), a
        block not tried when its own screening ΔPPL is over the budget, accepted while the set's screening ΔPPL
        (leave-screening-out maps) stays within `budget_ppl`. The held-out part measures the kept set."""
        blocks = check_blocks(blocks, self.n_blocks)
        seq = self.order(order, blocks)
        alone = {i: self.alone(i) for i in blocks}
        t0 = time.perf_counter()
        n0 = self.evaluator.n_evaluations
        modules = {i: self.screening_module(i) for i in blocks}
        result = greedy_swap(self.evaluator, modules, seq, budget_ppl, alone, order, self.progress)
        self.clock.add("screening: greedy", time.perf_counter() - t0, self.evaluator.n_evaluations - n0)
        return result
