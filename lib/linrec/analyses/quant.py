"""Quantisation sensitivity (issue 64, item 9): each block's R²_lin and the model's held-out perplexity with one more
quantisation error of the release's own size in every quantised weight (`linrec.inputs.quant_noise.perturb`), against
the model as shipped, on the same windows.

The offline models are quantised releases, so every number the report gives is of a model that already carries one
rounding error per weight. How much a second error of the same size moves R²_lin says how much of a block's R²_lin
is the release's rounding rather than the trained block: a block whose |change| is comparable with its interval's
half-width cannot be told from its neighbours more finely than that, and the perplexity change is the scale a +1
perplexity budget (claim 6a) is spent against.

`sensitivity(loaded, windows, config, types, seeds)` runs the base capture (or takes it), then per seed perturbs the
model in place, captures it on the same windows (uncached: a perturbed model has no identity a cache entry could be
keyed by), computes the held-out perplexity, and puts the weights back bit for bit. One row per seed and block
(`COLUMNS`); `summary(table)` is what the limitations and the report quote. `benchmarks/quant.py` runs it once per
model on the notebooks' capture (SmolLM2-135M: the default profile's, Q4_1/Q8_0; Gemma-3-270M: the full profile's,
Q4_K_M's Q4_K/Q6_K/Q5_0/Q8_0; the same windows) and writes `results/quant/quant_sensitivity.csv` (`RESULTS`); it is
not a notebook stage (the default `make figures` has no time left for two more captures per model).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from linrec.analyses.perplexity import PerplexityEvaluator
from linrec.analyses.recoverability import ceiling_table
from linrec.analyses.uncertainty import delta_ppl_interval
from linrec.base.errors import LinrecError
from linrec.collect.capture import Capture, run_capture
from linrec.collect.config import CaptureConfig
from linrec.inputs.corpora import Windows
from linrec.inputs.hf import LoadedModel
from linrec.inputs.quant_noise import perturb

RESULTS = Path("results/quant/quant_sensitivity.csv")  # relative to the project root
COLUMNS = [
    "model", "seed", "scale", "block", "r2_lin_base", "r2_lin_perturbed", "r2_lin_change", "half_width_base",
    "r2_ex_first_base", "r2_ex_first_perturbed", "ppl_base", "ppl_perturbed", "ppl_change", "ppl_change_lo",
    "ppl_change_hi", "ppl_change_pct", "n_test_windows", "error_rms_over_step",
]  # fmt: skip


def _window_nll(loaded: LoadedModel, ids: torch.Tensor, batch_size: int) -> np.ndarray:
    """Σ next-token NLL of each window of `ids` under `loaded` as its weights are now (one plain forward per batch)."""
    return PerplexityEvaluator(loaded.model, ids, batch_size, reuse_prefix=False, sites=loaded.sites).base_window_nll


def _ceiling(capture: Capture) -> pd.DataFrame:
    t = ceiling_table(capture)
    return t.set_index("block")[["r2_lin", "r2_lo", "r2_hi", "r2_ex_first"]]


def sensitivity(
    loaded: LoadedModel,
    windows: Windows,
    config: CaptureConfig,
    types: dict[str, str],
    seeds: list[int],
    *,
    scale: float = 1.0,
    base: Capture | None = None,
    batch_size: int = 8,
) -> pd.DataFrame:
    """One row per seed and block (`COLUMNS`): R²_lin (and without position 0) of `loaded` as given and with one
    `perturb` of `scale` steps drawn with that seed, both captured on `windows` with `config`'s settings (`base`: the
    capture as given, where the caller has it, e.g. from the cache; else run here), the base interval's half-width,
    and the held-out perplexity (every test window) of both with the paired skew-corrected interval of the change
    (`linrec.analyses.uncertainty.delta_ppl_interval`). The model's weights are as given again afterwards, whatever
    happens in between."""
    if not seeds:
        raise LinrecError("no seeds given; pass at least one, e.g. seeds=[0]")
    run = replace(config, sample_rows=0)  # statistics only: the row sample changes none of them
    if base is None:
        base = run_capture(loaded, windows, run, None, batch_size)
    before = _ceiling(base)
    ids = windows.split("test")
    nll0 = _window_nll(loaded, ids, batch_size)
    tokens = ids.shape[1] - 1
    ppl0 = float(np.exp(nll0.sum() / (len(ids) * tokens)))
    saved = {n: p.detach().clone() for n, p in loaded.model.named_parameters() if n in types}
    rows = []
    for seed in seeds:
        try:
            added = perturb(loaded.model, types, seed, scale)
            after = _ceiling(run_capture(loaded, windows, run, None, batch_size))
            nll1 = _window_nll(loaded, ids, batch_size)
        finally:
            with torch.no_grad():
                params = dict(loaded.model.named_parameters())
                for name, value in saved.items():
                    params[name].copy_(value)
        ppl1 = float(np.exp(nll1.sum() / (len(ids) * tokens)))
        lo, hi = delta_ppl_interval(nll0, nll1, tokens)
        ratio = float(np.median([a["error_rms"] / a["step_median"] for a in added if a["step_median"] > 0]))
        for block in before.index:
            b, a = before.loc[block], after.loc[block]
            rows.append({
                "model": loaded.name, "seed": int(seed), "scale": float(scale), "block": int(block),
                "r2_lin_base": b["r2_lin"], "r2_lin_perturbed": a["r2_lin"], "r2_lin_change": a["r2_lin"] - b["r2_lin"],
                "half_width_base": (b["r2_hi"] - b["r2_lo"]) / 2, "r2_ex_first_base": b["r2_ex_first"],
                "r2_ex_first_perturbed": a["r2_ex_first"], "ppl_base": ppl0, "ppl_perturbed": ppl1,
                "ppl_change": ppl1 - ppl0, "ppl_change_lo": lo, "ppl_change_hi": hi,
                "ppl_change_pct": 100 * (ppl1 / ppl0 - 1), "n_test_windows": len(ids), "error_rms_over_step": ratio,
            })  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)


def summary(table: pd.DataFrame) -> dict:
    """What the limitations and the report quote from a `sensitivity` table, per model (in the table's order) pooled
    over its seeds: {model: {n_seeds, n_blocks, change_median, change_max (of |r2_lin_change|), max_block,
    half_width_median, beyond (blocks × seeds whose |change| exceeds their half-width, as a share; n_beyond of n_rows),
    up (the share that rose), draw_spread (median over blocks of the change's range between seeds; NaN with one seed),
    ppl_base, ppl_pct_min, ppl_pct_max, draws (per seed in order: {seed, ppl_change, ppl_change_lo,
    ppl_change_hi})}}."""
    out = {}
    for model, t in table.groupby("model", sort=False):
        change = t["r2_lin_change"].abs()
        per_block = t.groupby("block")["r2_lin_change"]
        spread = (per_block.max() - per_block.min()).median() if t["seed"].nunique() > 1 else np.nan
        beyond = change > t["half_width_base"]
        draws = t.drop_duplicates("seed").sort_values("seed")
        out[model] = {
            "n_seeds": int(t["seed"].nunique()),
            "n_blocks": int(t["block"].nunique()),
            "change_median": float(change.median()),
            "change_max": float(change.max()),
            "max_block": int(t.loc[change.idxmax(), "block"]),
            "half_width_median": float(t.drop_duplicates("block")["half_width_base"].median()),
            "beyond": float(beyond.mean()),
            "n_beyond": int(beyond.sum()),
            "n_rows": len(t),
            "up": float((t["r2_lin_change"] > 0).mean()),
            "draw_spread": float(spread),
            "ppl_base": float(t["ppl_base"].iloc[0]),
            "ppl_pct_min": float(t["ppl_change_pct"].min()),
            "ppl_pct_max": float(t["ppl_change_pct"].max()),
            "draws": [
                {"seed": int(d["seed"])} | {k: float(d[k]) for k in ("ppl_change", "ppl_change_lo", "ppl_change_hi")}
                for _, d in draws.iterrows()
            ],
        }
    return out
