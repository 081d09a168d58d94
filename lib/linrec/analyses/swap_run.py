"""Notebook 06's swap study of one model, start to finish (`run_model`: the study `linrec.analyses.swap.SwapSettings`
describes, the per-token routing `RouteSettings` describes, the healing `linrec.analyses.healing.Heal` describes), and
the healing of notebook 08's trained runs (`heal_run`). The study itself is `linrec.analyses.swap.SwapStudy`.
"""

from __future__ import annotations

import gc
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from linrec.analyses.healing import Heal, heal_study
from linrec.analyses.perplexity import PerplexityEvaluator
from linrec.analyses.recoverability import ceiling_table
from linrec.analyses.routing import SHARES, RouteResult, route_study
from linrec.analyses.screening import GREEDY_ORDERS
from linrec.analyses.swap import SwapSettings
from linrec.analyses.token_context import split_study, type_study
from linrec.base.files import scratch_dir
from linrec.base.threads import one_thread
from linrec.collect.capture import get_capture
from linrec.collect.config import CaptureConfig, CaptureRun
from linrec.inputs.models import load_model
from linrec.inputs.source import ModelSource
from linrec.inputs.surgery import count_params, load_swapped
from linrec.stats import N_BOOT

if TYPE_CHECKING:
    import pandas


@dataclass(frozen=True)
class RouteSettings:
    """Per-token routing in the swap study (`linrec.analyses.routing.route_study`) and whether a token's identity
    decides its route (`linrec.analyses.token_context`): `blocks` routed blocks picked on the screening windows (None:
    every block; 0: skip it all), the share grid `shares`, the corpora a token type's need is compared on
    (`corpora`, against the capture's), the shares the token/context/full gates route at (`split_shares`), and the
    bootstrap resamples of the type agreement's interval (`n_boot`)."""

    blocks: int | None = 0
    shares: Sequence[float] = SHARES
    corpora: Sequence[str] = ()
    split_shares: Sequence[float] = (0.5,)
    n_boot: int = N_BOOT


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
    routing: RouteResult | None = None  # per-token routing of some blocks (`linrec.analyses.routing.route_study`)
    identity: pandas.DataFrame | None = None  # per token type on two corpora (`linrec.analyses.token_context`)
    split_auc: pandas.DataFrame | None = None  # gates on the token part, the context part, the whole input
    split_ppl: pandas.DataFrame | None = None  # ...their held-out ΔPPL at matched shares
    heal: pandas.DataFrame | None = None  # k blocks swapped, then fine-tuned (`linrec.analyses.healing`)
    windows: pandas.DataFrame | None = None  # per-window losses of every held-out ΔPPL (`HeldOutSwaps.window_losses`)


def run_model(
    config: CaptureConfig,
    capture_run: CaptureRun = CaptureRun(),
    swap: SwapSettings = SwapSettings(),
    route: RouteSettings = RouteSettings(),
    heal: Heal | None = None,
    *,
    device: str = "cpu",
    seed: int = 0,
    save_dir: str | Path | None = None,
) -> ModelSwapRun:
    """The whole swap study of one model, as notebook 06 runs it (`swap`: its settings): every block swapped alone
    (held out, with the position variants on the blocks whose *train* first-position share is ≥
    `swap.variant_min_first_share`), the predictors and every choice on the screening windows, the reduced-rank curve
    of `Screening.curve_block`, the greedy swap in each of `GREEDY_ORDERS`, and the larger greedy set (if both kept
    nothing, the block with the lowest screening ΔPPL) saved, reloaded and compared on the screening windows. With
    `route.blocks` other than 0, per-token routing of that many blocks picked on the screening windows
    (`linrec.analyses.routing.route_study`), and whether a token's identity decides its route
    (`linrec.analyses.token_context`): its need and its gate share per token type on `route.corpora` against the
    capture's corpus, and gates on the token and the context part of the input at `route.split_shares`. With `heal`
    (`linrec.analyses.healing.Heal`), k blocks swapped and fine-tuned against the same fine-tune unswapped.

    The saved model (0.5–1 GB) goes to `save_dir`/<model>, or to a temporary directory deleted after the check. The
    model and the study are released before returning, so a loop over models holds one model at a time."""

    model = config.model
    source = ModelSource.parse(model)  # once: the capture's key and the load read it
    capture = get_capture(config, capture_run, source=source)
    loaded = load_model(source, device=device)
    study = swap.study(capture, loaded, seed=seed)
    values = study.screening.predictors()
    sink = [i for i in range(study.n_blocks) if study.screening.first_share(i) >= swap.variant_min_first_share]
    table = study.heldout.table(first=["map", *swap.first_variants], variant_blocks=sink)
    block = study.screening.curve_block(values)
    curve = study.heldout.rank_curve(block, [r for r in swap.ranks if r < capture.stats["train"][block].d_out])
    results = {order: study.greedy(swap.budget_ppl, order=order) for order in GREEDY_ORDERS}
    n_params = count_params(loaded.model)
    greedy = [{"model": model, **g.row(), "params_model": n_params} for g in results.values()]
    steps = pd.concat([g.steps.assign(model=model, order=o) for o, g in results.items()], ignore_index=True)

    routing = identity = split_auc = split_ppl = None
    if route.blocks != 0:
        routing = route_study(study, route.blocks, route.shares, predictors=values)
        identity = type_study(study, routing, route.corpora, n_boot=route.n_boot, seed=seed)
        split_auc, split_ppl = split_study(study, routing, route.split_shares)
    healed = heal_study(study, heal, seed=seed) if heal else None

    g = max(results.values(), key=lambda r: len(r.swapped))
    chosen = sorted(g.swapped) or [int(values.sort_values("screening_delta_ppl").iloc[0]["block"])]
    in_memory = study.screening.evaluator.ppl({i: study.heldout.module(i) for i in chosen})
    scratch = None if save_dir else scratch_dir("swapped")
    try:
        out = study.heldout.save(Path(save_dir or scratch) / model.replace("/", "--"), chosen)
        reloaded = load_swapped(out, device=device, tokenizer=False)  # the check feeds token ids: no tokenizer
        ppl_reloaded = PerplexityEvaluator(
            reloaded.model, study.screening.ids, swap.batch_size, reuse_prefix=False, sites=reloaded.sites
        )
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
    run = ModelSwapRun(model, table, values, ceiling_table(capture), curve, greedy, steps, reload,
                       study.timings, routing, identity, split_auc, split_ppl, healed,
                       study.heldout.window_losses())  # fmt: skip
    del study, loaded, reloaded, ppl_reloaded
    gc.collect()
    return run


def heal_run(run, config: CaptureConfig, heal: Heal, swap: SwapSettings, *, device: str = "cpu", seed: int = 0):
    """`linrec.analyses.healing.heal_study` (`heal`) on the last checkpoint of a training run
    (`linrec.inputs.training.TrainedRun`), measured on its measuring documents as notebook 08 measures it
    (`config`: its capture settings, e.g. seq_len and tokens, its model and corpus replaced by the run's last
    checkpoint and measuring text; moments only, so notebook 08's capture is read from the cache) in the swap study
    `swap` describes (notebook 08's: the training profile's screening windows). The table's `model` is the run's
    name. One torch thread (`linrec.base.threads.one_thread`)."""
    source = ModelSource.parse(str(run.final))
    config = replace(config, model=source.spec, corpus=run.measure_corpus, sample_rows=0)
    capture = get_capture(config, CaptureRun(swap.batch_size, device), source=source, progress=False)
    loaded = load_model(source, device=device)
    study = swap.study(capture, loaded, seed=seed, progress=False)
    # at d = 128 a second thread gains little: on 2 busy cores a step took 0.8–1.1 s with 2, 0.2 with 1
    with one_thread():
        out = heal_study(study, heal, seed=seed, progress=False)
    return out.assign(model=run.config.name)
