"""The swap study: what replacing FFN blocks by their closed-form affine maps
costs in perplexity and saves in parameters.

Zero-shot: each block's map is the capture's (`Capture.fit`, the closed-form ceiling from the
train statistics); no training. The cost is held-out token-level perplexity over the capture's
*test* windows (the same seeded split the statistics came from; `linrec.perplexity`), and
ΔPPL = PPL(block i swapped) − PPL(base). The model surgery (the affine module, installing it,
saving and loading) is `linrec.surgery`; reduced-rank maps are `linrec.ceiling.reduce_rank`.

Screening windows (`screening_ids`): a few seeded *train* windows on which a block's map,
fitted without them, is tried cheaply before the held-out evaluation. `greedy_swap` swaps
blocks cumulatively in score order, keeping each one while ΔPPL on its evaluator stays within a
budget. `SwapStudy` ties one loaded model and its capture together for the notebook and the CLI.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from tqdm import tqdm

from linrec.capture import block_moments
from linrec.ceiling import AffineFit, LowRankFit, Score, fit_affine, output_directions, reduce_rank, score
from linrec.corpora import Windows, load_windows
from linrec.errors import LinrecError
from linrec.hf import LoadedModel
from linrec.moments import Moments, remove_rows
from linrec.perplexity import PerplexityEvaluator
from linrec.sites import find_ffn_sites
from linrec.surgery import AffineFFN, count_params, save_swapped

if TYPE_CHECKING:
    import pandas

log = logging.getLogger(__name__)


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


def screening_ids(windows: Windows, n: int, seed: int = 0) -> torch.Tensor:
    """`n` seeded *train* windows (sorted): the screening set, a cheap "is this block safe to swap?" check."""
    if n < 1:
        raise LinrecError(f"screening needs at least one window, got {n}")
    pick = np.sort(
        np.random.default_rng([seed, 2]).choice(windows.train, size=min(n, len(windows.train)), replace=False)
    )
    return windows.ids[pick]


# ---- greedy multi-block swap ---------------------------------------------------------------------------
@dataclass
class GreedyResult:
    """Blocks swapped cumulatively in score order, each kept only while ΔPPL stays within the budget."""

    swapped: list[int]  # kept blocks, in the order they were accepted
    steps: pandas.DataFrame  # one row per block tried: block, score, ppl, delta_ppl, kept
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
    evaluator: PerplexityEvaluator,
    modules: Mapping[int, torch.nn.Module],
    scores: Mapping[int, float],
    budget_ppl: float = 1.0,
    holdout: PerplexityEvaluator | None = None,
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
        swapped=list(kept),
        steps=pd.DataFrame(rows, columns=["block", "score", "ppl", "delta_ppl", "kept"]),
        budget_ppl=budget_ppl,
        ppl_base=evaluator.base_ppl,
        ppl_final=ppl_final,
        params_removed=removed,
        params_added=added,
    )
    if holdout is not None:
        result.holdout_ppl_base, result.holdout_ppl_final = holdout.base_ppl, holdout.ppl(kept)
    return result


# ---- one model, one capture: the study a notebook or the CLI runs ----------------------------------------
class SwapStudy:
    """Swap experiments on one loaded model with its capture: per-block table, rank curves, greedy swap, save.

    Fits come from the capture's train statistics (cached per block); perplexities are on the
    capture's test windows (one `PerplexityEvaluator`, built on first use).
    """

    def __init__(
        self, capture, loaded: LoadedModel, windows: Windows | None = None, batch_size: int = 8, progress: bool = True
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
        self.batch_size, self.progress = batch_size, progress
        self._dirs: dict[int, tuple] = {}
        self._evaluator: PerplexityEvaluator | None = None
        self._screenings: dict[tuple[int, int], PerplexityEvaluator] = {}
        self._screening_stats: dict[tuple[int, int], list[Moments]] = {}
        self._screening_fits: dict[tuple[int, int, int], AffineFit] = {}

    # fits and modules
    def fit(self, block: int) -> AffineFit:
        """The block's closed-form map: the capture's own (`Capture.fit`), so every analysis swaps the same map."""
        return self.capture.fit(block)

    def score(self, block: int, rank: int | None = None) -> Score:
        """Held-out fit quality of the block's map (full, or at `rank`)."""
        return score(
            self.low_rank(block, rank) if rank else self.fit(block), self.capture.stats["test"][block], block=block
        )

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
    def evaluator(self) -> PerplexityEvaluator:
        """Perplexity on the capture's test windows."""
        if self._evaluator is None:
            self._evaluator = PerplexityEvaluator(
                self.model, self.windows.split("test"), self.batch_size, progress=self.progress, desc="base ppl (test)"
            )
        return self._evaluator

    def screening(self, n_windows: int = 4, seed: int = 0) -> PerplexityEvaluator:
        """Perplexity on `n_windows` seeded train windows (the screening set)."""
        key = (n_windows, seed)
        if key not in self._screenings:
            self._screenings[key] = PerplexityEvaluator(
                self.model, screening_ids(self.windows, n_windows, seed), self.batch_size, desc="base ppl (screening)"
            )
        return self._screenings[key]

    @torch.no_grad()
    def _screening_moments(self, n_windows: int, seed: int) -> list[Moments]:
        key = (n_windows, seed)
        if key not in self._screening_stats:
            ids = screening_ids(self.windows, n_windows, seed)
            self._screening_stats[key] = block_moments(self.model, ids, self.batch_size)
        return self._screening_stats[key]

    def screening_fit(self, block: int, n_windows: int = 4, seed: int = 0) -> AffineFit:
        """The block's map fitted on the train split *without* the screening windows, so they are held out for it."""
        key = (block, n_windows, seed)
        if key not in self._screening_fits:
            rest = remove_rows(self.capture.stats["train"][block], self._screening_moments(n_windows, seed)[block])
            self._screening_fits[key] = fit_affine(rest, block=block)
        return self._screening_fits[key]

    def screening_module(self, block: int, n_windows: int = 4, seed: int = 0) -> AffineFFN:
        """The affine module of `block` fitted without the screening windows (`screening_fit`)."""
        p = next(self.sites[block].module.parameters())
        return AffineFFN.from_fit(self.screening_fit(block, n_windows, seed), p.dtype, p.device)

    def screening_delta_ppl(self, block: int, n_windows: int = 4, seed: int = 0) -> float:
        """ΔPPL on the screening windows with the block swapped for its leave-screening-out map:
        a cheap "safe to swap?" predictor."""
        return self.screening(n_windows, seed).delta_ppl({block: self.screening_module(block, n_windows, seed)})

    def _blocks(self, blocks: Sequence[int] | None) -> list[int]:
        blocks = list(range(len(self.sites))) if blocks is None else [int(b) for b in blocks]
        bad = [b for b in blocks if not 0 <= b < len(self.sites)]
        if bad:
            raise LinrecError(f"blocks {bad} do not exist; this model has blocks 0..{len(self.sites) - 1}")
        return blocks

    # experiments
    def table(self, blocks: Sequence[int] | None = None, screening_windows: int = 0, seed: int = 0) -> pandas.DataFrame:
        """One row per block: held-out R²_lin and output MSE, base and swapped perplexity, ΔPPL, parameters;
        with `screening_windows`, `screening_delta_ppl`: ΔPPL on that many seeded train windows, the block swapped
        for its map fitted without them (`screening_fit`; the in-sample map overfits them and looks harmless)."""
        import pandas as pd

        ev = self.evaluator
        screen = self.screening(screening_windows, seed) if screening_windows else None
        rows = []
        for i in tqdm(
            self._blocks(blocks), desc=f"swap ΔPPL {self.loaded.name}", unit="block", disable=not self.progress
        ):
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
            if screen is not None:
                row["screening_ppl_base"] = screen.base_ppl
                row["screening_delta_ppl"] = self.screening_delta_ppl(i, screening_windows, seed)
            row["n_test_tokens"] = ev.n_tokens
            row["seconds"] = time.perf_counter() - t0
            rows.append(row)
        return pd.DataFrame(rows)

    def rank_curve(self, block: int, ranks: Sequence[int]) -> pandas.DataFrame:
        """ΔPPL against parameters for `block`: one row per rank (reduced-rank maps) and one for the dense map."""
        import pandas as pd

        ev = self.evaluator
        d_out = self.fit(block).W.shape[1]
        rows = []
        for r in tqdm([*ranks, None], desc=f"rank curve block {block}", unit="rank", disable=not self.progress):
            m = self.module(block, r)
            ppl = ev.ppl({block: m})
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
                    "ppl": ppl,
                    "delta_ppl": ppl - ev.base_ppl,
                }
            )
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
        holdout: PerplexityEvaluator | None = None,
        select_on: str = "test",
        screening_windows: int = 8,
        seed: int = 0,
    ) -> GreedyResult:
        """`greedy_swap` over `blocks` (default all), in descending `scores` (default R²_lin).

        `select_on="test"`: blocks are accepted by ΔPPL on the test windows (optimistic: the
        reported ΔPPL is the one that was selected on). `select_on="screening"`: accepted by ΔPPL on
        `screening_windows` seeded train windows with every map refitted without them, and the kept
        set with those same maps then evaluated on the test windows (`holdout_ppl_*`): selection
        and report on disjoint windows, both held out from the maps.
        """
        blocks = self._blocks(blocks if blocks is not None else (list(scores) if scores is not None else None))
        if scores is None:
            scores = {i: self.score(i).r2 for i in blocks}
        scores = {i: scores[i] for i in blocks}
        if select_on == "test":
            return greedy_swap(
                self.evaluator, {i: self.module(i) for i in blocks}, scores, budget_ppl, holdout, self.progress
            )
        if select_on != "screening":
            raise LinrecError(f"select_on must be 'test' or 'screening', got {select_on!r}")
        if holdout is not None:
            raise LinrecError("select_on='screening' evaluates on the test windows itself; do not pass holdout")
        mods = {i: self.screening_module(i, screening_windows, seed) for i in blocks}
        return greedy_swap(
            self.screening(screening_windows, seed), mods, scores, budget_ppl, self.evaluator, self.progress
        )

    def save(self, directory: str | Path, blocks: Sequence[int], ranks: Mapping[int, int] | None = None) -> Path:
        """Write the model with `blocks` swapped (format: module docstring)."""
        mods = {i: self.module(i, (ranks or {}).get(i)) for i in self._blocks(blocks)}
        info = {
            "base_model": self.capture.model_label,
            "base_identity": self.loaded.identity,
            "capture": asdict(self.capture.config),
        }
        return save_swapped(self.model, self.loaded.tokenizer, mods, directory, info)
