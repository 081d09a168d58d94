"""The swap study: what replacing FFN blocks by their closed-form affine maps costs in perplexity
and saves in parameters, which choices can be made without the held-out windows, and what
predicts the cost.

Zero-shot: each block's map is the capture's (`Capture.fit`, the closed-form ceiling from the
train statistics); no training. The cost is held-out token-level perplexity over the capture's
*test* windows (the same seeded split the statistics came from; `linrec.analyses.perplexity`), and
ΔPPL = PPL(block i swapped) − PPL(base), with a paired skew-corrected jackknife interval over the test windows
(`PerplexityEvaluator.delta`); every swapped set's per-window losses are kept (`HeldOutSwaps.window_losses`) and
their skew summarised (`window_skew`). The model surgery (the affine module, the position-aware module,
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
(`report_ids`: cheaper, with wider intervals; the smoke and healing profiles' setting, all of them in the others).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from linrec.analyses import SCREENING_WINDOWS
from linrec.analyses.perplexity import DeltaPPL, PerplexityEvaluator
from linrec.analyses.screening import (
    Clock,
    GreedyResult,
    Screening,
    check_blocks,
    draw_windows,
    screening_ids,
    site_dtype,
)
from linrec.analyses.uncertainty import (
    SWAP_LEVEL,
    SWAP_MIN_WINDOWS,
    delta_ppl_interval,
    delta_ppl_jackknife_t,
    delta_ppl_skew,
    own_skew_check,
)
from linrec.base.errors import LinrecError
from linrec.base.progress import bar as progress_bar
from linrec.base.progress import notice
from linrec.inputs.corpora import WindowCut, Windows, load_windows
from linrec.inputs.hf import LoadedModel
from linrec.inputs.surgery import FIRST_MODES, AffineFFN, FirstPositionSwap, count_params, save_swapped
from linrec.stats.ceiling import AffineFit, LowRankFit, Score, fit_affine, output_directions, reduce_rank, score
from linrec.stats.jackknife import skewness
from linrec.stats.moments import Moments

if TYPE_CHECKING:
    import pandas

log = logging.getLogger(__name__)


# ---- windows -------------------------------------------------------------------------------------
def capture_windows(capture, tokenizer) -> Windows:
    """The windows (and train/test split) `capture` was made from, rebuilt and checked against its record."""
    cfg = capture.config
    w = load_windows(cfg.corpus, tokenizer, WindowCut.of(cfg))
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


def report_ids(windows: Windows, n: int | None = None, seed: int = 0) -> torch.Tensor:
    """The held-out windows every reported perplexity is measured on: all of them (`n` None), or `n` of them drawn
    by seed alone (sorted), never by anything measured on them. A smaller `n` makes the study cheaper (each swap
    costs one pass over these windows) and its intervals wider; the profile says which."""
    if n is None or n >= len(windows.test):
        return windows.split("test")
    if n < 2:
        raise LinrecError(f"ΔPPL intervals need at least 2 held-out windows, got test_windows={n}")
    return draw_windows(windows, windows.test, n, [seed, 3])


# ---- the held-out part ------------------------------------------------------------------------------------------
class HeldOutSwaps:
    """What the swap study reports, on the held-out windows `report_ids`: the capture's maps (`Capture.fit`, from its
    train statistics), their held-out scores, and ΔPPL with paired intervals per block (`table`), against parameters
    (`rank_curve`) and for sets of blocks (`joint`); `save` writes a swapped model."""

    keep_evaluations = False  # `SwapStudy.keep`: its evaluator keeps every evaluation in the cache

    def __init__(self, capture, loaded: LoadedModel, report_ids: torch.Tensor, *, batch_size: int = 8,
                 progress: bool = True, clock: Clock | None = None):  # fmt: skip
        self.capture, self.loaded, self.model = capture, loaded, loaded.model
        self.sites, self.report_ids = loaded.sites, report_ids
        self.batch_size, self.progress = batch_size, progress
        self.clock = clock or Clock()
        self._dirs: dict[int, tuple] = {}
        self._fits: dict[tuple[int, str], AffineFit] = {}
        self._evaluator: PerplexityEvaluator | None = None
        self._test_nlls: dict[tuple, np.ndarray] = {}  # (block, rank, first) specs → per-window NLL on the test windows

    @property
    def n_blocks(self) -> int:
        return len(self.sites)

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
        dtype, device = site_dtype(self.sites[block])
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

    @property
    def evaluator(self) -> PerplexityEvaluator:
        """Perplexity on the capture's test windows (reporting only)."""
        if self._evaluator is None:
            t0 = time.perf_counter()
            self._evaluator = PerplexityEvaluator(
                self.model,
                self.report_ids,
                self.batch_size,
                progress=self.progress,
                desc="base ppl (test)",
                sites=self.sites,
            )
            if self.keep_evaluations:
                self._evaluator.keep(self.loaded.name)
            self.clock.add("test: base run", time.perf_counter() - t0, 1)
        return self._evaluator

    def test_nll(self, spec: Sequence[tuple[int, int | None, str]], step: str) -> np.ndarray:
        """Per-window NLL on the test windows with the swaps of `spec` ((block, rank, first) each, as `module` takes
        them), run once per spec: the per-block table, the rank curve's dense map and a chosen set of one block
        are the same swapped model on the same windows, so the second ask reads the first one's numbers."""
        key = tuple(sorted((int(b), int(r or 0), f) for b, r, f in spec))
        if key not in self._test_nlls:
            t0 = time.perf_counter()
            self._test_nlls[key] = self.evaluator.window_nll({b: self.module(b, r or None, f) for b, r, f in key})
            self.clock.add(step, time.perf_counter() - t0, 1)
        return self._test_nlls[key]

    def window_losses(self) -> pandas.DataFrame:
        """Every swapped set measured on the held-out windows so far (`test_nll`: the per-block table, the rank curve,
        the greedy sets), one row per set and window: the mean next-token NLL per token of the window, base and
        swapped (results table `swap_windows`; `swap` names the set: `swap_label`)."""
        rows = []
        ev = self.evaluator if self._test_nlls else None  # nothing measured: no base run for it
        for key, nll in self._test_nlls.items():
            base = ev.base_window_nll / ev.tokens_per_window
            for w, (b, o) in enumerate(zip(base, nll / ev.tokens_per_window, strict=True)):
                rows.append({"model": self.capture.model_label, "swap": swap_label(key), "window": w,
                             "tokens": ev.tokens_per_window, "loss_base": float(b),
                             "loss_swapped": float(o)})  # fmt: skip
        return pd.DataFrame(rows, columns=["model", "swap", "window", "tokens", "loss_base", "loss_swapped"])

    def timed(self, run, step: str):
        """`run()` (one pass over the held-out windows), its seconds and one evaluation booked to `step`."""
        t0 = time.perf_counter()
        out = run()
        self.clock.add(step, time.perf_counter() - t0, 1)
        return out

    def test_delta(self, spec: Sequence[tuple[int, int | None, str]], step: str) -> DeltaPPL:
        """`test_nll` as a ΔPPL with its paired skew-corrected jackknife interval at `SWAP_LEVEL` (99 %)."""
        return self.evaluator.delta_of(self.test_nll(spec, step), SWAP_LEVEL)

    def table(
        self,
        blocks: Sequence[int] | None = None,
        first: Sequence[str] | str = "map",
        variant_blocks: Sequence[int] | None = None,
    ) -> pandas.DataFrame:
        """One row per block and position variant (`first`, see the module docstring): held-out R²_lin of the map
        on the positions it is applied to, output MSE, base and swapped perplexity, ΔPPL with its paired
        skew-corrected jackknife interval at 99 % (`delta_lo`, `delta_hi`; `SWAP_LEVEL`), and parameters: of the FFN,
        of the affine map, of
        the whole swap module (the map plus the kept FFN for "ffn", plus d_out for "mean"). With "map" and another
        variant, that variant's rows also carry `vs_map` = PPL(variant) − PPL(map) with its paired interval
        (`vs_map_lo`, `vs_map_hi`): how much of the map's cost the variant removes. `variant_blocks` limits the
        variants other than "map" to those blocks (default: all of `blocks`)."""

        firsts = [first] if isinstance(first, str) else list(first)
        for f in firsts:
            _check_first(f)
        if "map" in firsts:  # the map first, so the variants can be compared with it window by window
            firsts = ["map", *[f for f in firsts if f != "map"]]
        ev = self.evaluator
        blocks = check_blocks(blocks, self.n_blocks)
        extra = set(blocks if variant_blocks is None else check_blocks(variant_blocks, self.n_blocks))
        jobs = [(i, f) for i in blocks for f in firsts if f == "map" or i in extra]
        rows, map_nll = [], {}
        for i, f in progress_bar(jobs, desc=f"swap ΔPPL {self.loaded.name}", unit="swap", disable=not self.progress):
            t0 = time.perf_counter()
            s = self.score(i, first=f)
            m = self.module(i, first=f)
            nll = self.test_nll([(i, None, f)], f"test: blocks alone ({f})")
            d = ev.delta_of(nll, SWAP_LEVEL)
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
                lo, hi = delta_ppl_interval(map_nll[i], nll, ev.tokens_per_window, SWAP_LEVEL)
                ppl_map = float(np.exp(map_nll[i].sum() / ev.n_tokens))
                row.update(vs_map=d.ppl - ppl_map, vs_map_lo=lo, vs_map_hi=hi)
            row["n_test_tokens"] = ev.n_tokens
            row["seconds"] = time.perf_counter() - t0
            rows.append(row)
        return pd.DataFrame(rows)

    def rank_curve(self, block: int, ranks: Sequence[int]) -> pandas.DataFrame:
        """ΔPPL (with interval) against parameters for `block`: one row per rank (reduced-rank maps) and one for
        the dense map."""

        d_out = self.fit(block).W.shape[1]
        rows = []
        for r in progress_bar([*ranks, None], desc=f"rank curve block {block}", unit="rank", disable=not self.progress):
            m = self.module(block, r)
            d = self.test_delta([(block, r, "map")], "test: rank curve")
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
        mods = {i: self.module(i, (ranks or {}).get(i)) for i in check_blocks(blocks, self.n_blocks)}
        d = self.test_delta([(i, (ranks or {}).get(i), "map") for i in mods], "test: sets")
        return {
            "blocks": sorted(mods),
            "ppl_base": d.ppl_base,
            "ppl": d.ppl,
            "delta_ppl": d.delta,
            "delta_lo": d.lo,
            "delta_hi": d.hi,
            "delta_level": d.level,
            "params_removed": sum(self.params_ffn(i) for i in mods),
            "params_added": sum(m.n_params for m in mods.values()),
        }

    def save(self, directory: str | Path, blocks: Sequence[int], ranks: Mapping[int, int] | None = None) -> Path:
        """Write the model with `blocks` swapped (format: `linrec.inputs.surgery`)."""
        mods = {i: self.module(i, (ranks or {}).get(i)) for i in check_blocks(blocks, self.n_blocks)}
        info = {
            "base_model": self.capture.model_label,
            "base_identity": self.loaded.identity,
            "capture": asdict(self.capture.config),
        }
        return save_swapped(self.model, self.loaded.tokenizer, mods, directory, info, self.sites)


def swap_label(spec: Sequence[tuple[int, int, str]]) -> str:
    """A swapped set's name in `swap_windows`: its blocks joined by '+', each with 'r<rank>' if reduced and
    ':<first>' for a position variant other than 'map' (e.g. '3', '3:ffn', '3r16', '1+3')."""
    return "+".join(f"{b}{f'r{r}' if r else ''}{'' if f == 'map' else f':{f}'}" for b, r, f in sorted(spec))


def window_skew(windows: pandas.DataFrame) -> pandas.DataFrame:
    """Per model and swapped set of `windows` (results table `swap_windows`): ΔPPL with the swap's interval
    (`delta_lo`, `delta_hi`; `linrec.analyses.uncertainty.delta_ppl_interval` at `SWAP_LEVEL`, 99 %) beside the
    symmetric 95 % jackknife-t (`jack_lo`, `jack_hi`), how skewed the per-window costs are: their mean per token
    (`cost_mean`), the G₁ of the costs (`cost_skew`) and of ΔPPL's jackknife pseudo-values (`pseudo_skew`, the one the
    interval corrects for), the costliest window's share of the summed positive cost (`max_window_share`: 1/W if every
    window costs the same, 1 if one window carries it all) — and how the interval fares with the set's own windows as
    the population (`own_cover`, `own_miss_below`, `own_miss_above`: `own_skew_check`), which claim 6a reads. Results
    table `swap_skew`."""
    rows = []
    for (model, swap), g in windows.groupby(["model", "swap"], sort=False):
        g = g.sort_values("window")
        tokens = int(g["tokens"].iloc[0])
        base, other = (g[c].to_numpy(float) * tokens for c in ("loss_base", "loss_swapped"))
        cost = (other - base) / tokens
        row = {"model": model, "swap": swap, "n_windows": len(g),
               "delta_ppl": float(np.exp(other.mean() / tokens) - np.exp(base.mean() / tokens)),
               "cost_mean": float(cost.mean()), "cost_skew": skewness(cost)}  # fmt: skip
        if len(g) > 1:
            row["delta_lo"], row["delta_hi"] = delta_ppl_interval(base, other, tokens, SWAP_LEVEL)
            row["jack_lo"], row["jack_hi"] = delta_ppl_jackknife_t(base, other, tokens)
            row["pseudo_skew"] = delta_ppl_skew(base, other, tokens)
            row |= own_skew_check(base, other, tokens)
        pos = np.clip(cost, 0, None)
        row["max_window_share"] = float(pos.max() / pos.sum()) if pos.sum() > 0 else float("nan")
        rows.append(row)
    return pd.DataFrame(rows).reindex(columns=SKEW_COLUMNS)


SKEW_COLUMNS = ["model", "swap", "n_windows", "delta_ppl", "delta_lo", "delta_hi", "jack_lo", "jack_hi",
                "cost_mean", "cost_skew", "pseudo_skew", "max_window_share", "own_cover", "own_miss_below",
                "own_miss_above"]  # fmt: skip


def rewindowed(tables: dict, windows: pandas.DataFrame) -> dict:
    """The swap study's stored intervals recomputed from its stored per-window losses (`windows`, results table
    `swap_windows`) with today's interval (`delta_ppl_interval` at `SWAP_LEVEL`): `swap`'s `delta_lo`/`delta_hi` (and a
    position variant's `vs_map_lo`/`vs_map_hi`, against the map's own windows), `swap_rank_curve`'s and
    `swap_greedy`'s held-out intervals, `swap_first`'s copies of them, and `swap_skew`. Only the tables in `tables`
    (name → table) are returned, a row without windows as it was; no model is needed (`linrec.outputs.refresh`)."""
    per = {(m, str(s)): g.sort_values("window") for (m, s), g in windows.groupby(["model", "swap"], sort=False)}

    def interval(model, label, against=None) -> tuple[float, float]:
        g = per.get((model, label))
        if g is None or len(g) < 2 or (against is not None and (model, against) not in per):
            return np.nan, np.nan
        t = int(g["tokens"].iloc[0])
        ref = per[(model, against)]["loss_swapped"] if against is not None else g["loss_base"]
        return delta_ppl_interval(ref.to_numpy(float) * t, g["loss_swapped"].to_numpy(float) * t, t, SWAP_LEVEL)

    def refill(t: pandas.DataFrame, label, cols, against=None) -> pandas.DataFrame:
        t = t.copy()
        for k, r in t.iterrows():
            lo, hi = interval(r["model"], label(r), against(r) if against else None)
            if np.isfinite(lo):
                t.loc[k, cols] = (lo, hi)
        return t

    out = {"swap_skew": window_skew(windows)}
    if (swap := tables.get("swap")) is not None:
        first = swap["first"] if "first" in swap.columns else pd.Series("map", index=swap.index)
        swap = refill(swap, lambda r: swap_label([(int(r["block"]), 0, first[r.name])]), ["delta_lo", "delta_hi"])
        variant = first != "map"
        swap.loc[variant] = refill(swap.loc[variant], lambda r: swap_label([(int(r["block"]), 0, r["first"])]),
                                   ["vs_map_lo", "vs_map_hi"], against=lambda r: str(int(r["block"])))  # fmt: skip
        out["swap"] = swap
        if (fp := tables.get("swap_first")) is not None:
            fp = fp.copy()
            ends = swap.assign(first=first).drop_duplicates(["model", "block", "first"])  # each swap's first row
            ends = {(m, b, f): (lo, hi) for m, b, f, lo, hi in ends[["model", "block", "first", "delta_lo", "delta_hi"]]
                    .itertuples(index=False)}  # fmt: skip
            for f in ("map", "ffn", "mean"):
                if f"delta_lo_{f}" not in fp.columns:
                    continue
                for k, m, b in zip(fp.index, fp["model"], fp["block"], strict=True):
                    if (m, b, f) in ends:
                        fp.loc[k, [f"delta_lo_{f}", f"delta_hi_{f}"]] = ends[(m, b, f)]
            out["swap_first"] = fp
    if (curve := tables.get("swap_rank_curve")) is not None:
        rank = lambda r: int(r["rank"]) if bool(r["factored"]) else 0  # noqa: E731  # the dense map: no 'r<rank>'
        out["swap_rank_curve"] = refill(curve, lambda r: swap_label([(int(r["block"]), rank(r), "map")]),
                                        ["delta_lo", "delta_hi"])  # fmt: skip
    if (greedy := tables.get("swap_greedy")) is not None:
        kept = lambda r: swap_label([(int(b), 0, "map") for b in str(r["blocks_swapped"]).split()])  # noqa: E731
        out["swap_greedy"] = refill(greedy, kept, ["test_delta_lo", "test_delta_hi"])
    return out


# ---- one model, one capture: the study a notebook or the CLI runs ----------------------------------------
@dataclass(frozen=True)
class SwapSettings:
    """A swap study's settings (the profile's keys of the same names; notebook 06 uses them all, a study of one
    trained run the first three): `screening_windows` seeded train windows for every choice, `test_windows` held-out
    windows for every reported ΔPPL (None: all), `batch_size`; the reduced `ranks` of the ΔPPL-vs-parameters curve,
    the greedy swap's `budget_ppl`, and the position variants `first_variants` on the blocks whose train
    first-position share is ≥ `variant_min_first_share`."""

    screening_windows: int = SCREENING_WINDOWS
    test_windows: int | None = None
    batch_size: int = 8
    ranks: Sequence[int] = (16, 64, 256)
    budget_ppl: float = 1.0
    first_variants: Sequence[str] = ("ffn", "mean")
    variant_min_first_share: float = 0.5
    keep_evaluations: bool = False

    def study(self, capture, loaded, seed: int = 0, progress: bool = True) -> SwapStudy:
        """The `SwapStudy` of `capture` and `loaded` these settings describe (`keep_evaluations`: it keeps them)."""
        study = SwapStudy(capture, loaded, batch_size=self.batch_size, progress=progress,
                          screening_windows=self.screening_windows, seed=seed,
                          test_windows=self.test_windows)  # fmt: skip
        return study.keep() if self.keep_evaluations else study


class SwapStudy:
    """Swap experiments on one loaded model with its capture, in two parts: `screening` (`Screening`: every choice,
    on `screening_windows` seeded train windows and the train statistics; it is never given the held-out windows) and
    `heldout` (`HeldOutSwaps`: the per-block table, rank curves and sets, on the capture's test windows, all or
    `test_windows` of them: `report_ids`). `greedy` chooses on the first and reports on the second."""

    def __init__(
        self,
        capture,
        loaded: LoadedModel,
        windows: Windows | None = None,
        batch_size: int = 8,
        progress: bool = True,
        screening_windows: int = SCREENING_WINDOWS,
        seed: int = 0,
        test_windows: int | None = None,
    ):
        if capture.meta.get("identity") not in (None, loaded.identity):
            raise LinrecError(
                f"the capture was made from {capture.meta['identity']}, not {loaded.identity}; "
                "load the model the capture was made from"
            )
        self.capture, self.loaded = capture, loaded
        n_sites = len(loaded.sites)
        if n_sites != capture.n_blocks:
            raise LinrecError(
                f"the capture has {capture.n_blocks} blocks, the model {n_sites}; "
                "load the model the capture was made from"
            )
        self.windows = windows if windows is not None else capture_windows(capture, loaded.tokenizer)
        _check_windows(capture, self.windows)
        if screening_windows < 1:
            raise LinrecError(f"the swap study needs at least one screening window, got {screening_windows}")
        self.clock = Clock()
        common = dict(batch_size=batch_size, progress=progress, clock=self.clock)
        first = capture.first["train"] if capture.first is not None else None
        self.screening = Screening(loaded, capture.stats["train"], screening_ids(self.windows, screening_windows,
                                   seed), train_first=first, label=capture.model_label, **common)  # fmt: skip
        self.heldout = HeldOutSwaps(capture, loaded, report_ids(self.windows, test_windows, seed), **common)
        if (n := len(self.heldout.report_ids)) < SWAP_MIN_WINDOWS:  # docs/numerics.md: coverage at 12 and 32
            notice(f"{capture.model_label}: ΔPPL intervals from {n} held-out windows, under the {SWAP_MIN_WINDOWS} "
                   "their coverage is measured at: they can be far off; use more tokens or test windows")  # fmt: skip

    @property
    def n_blocks(self) -> int:
        return self.heldout.n_blocks

    def keep(self) -> SwapStudy:
        """Keep every swapped evaluation of both parts in the cache, and read those kept by an earlier run
        (`PerplexityEvaluator.keep`), so a killed study resumes. Itself."""
        self.screening.keep_evaluations = self.heldout.keep_evaluations = True
        return self

    def greedy(
        self, budget_ppl: float = 1.0, order: str = "r2_lin", blocks: Sequence[int] | None = None
    ) -> GreedyResult:
        """The greedy multi-block swap chosen on the screening windows alone (`Screening.greedy`); the kept set, with
        the capture's maps, is then measured once on the held-out windows (`GreedyResult.test`), which played no
        part in choosing it."""
        result = self.screening.greedy(budget_ppl, order, blocks)
        if result.swapped:
            result.test = self.heldout.test_delta([(i, None, "map") for i in result.swapped], "test: sets")
        return result

    @property
    def timings(self) -> pandas.DataFrame:
        """Seconds and evaluations per step so far (evaluations: passes over that step's windows)."""

        c = self.clock
        return pd.DataFrame(
            [{"model": self.capture.model_label, "step": k, "seconds": v, "evaluations": c.evaluations[k]}
             for k, v in c.seconds.items()]
        )  # fmt: skip


def _check_first(first: str) -> None:
    if first not in FIRST_MODES:
        raise LinrecError(f"first must be one of {', '.join(FIRST_MODES)}, got {first!r}; e.g. --first map")
