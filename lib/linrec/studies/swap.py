"""Notebook 06's study (the paper's Fig. 2 ΔPPL panel and Fig. 6, claims 6a and 6b): every block of every model
swapped alone for its closed-form affine map, every choice made on screening windows, the held-out windows only
reporting; then the per-token routing, token-or-context and healing of the anchor paper (`linrec.studies.routing`).

`run(p)` runs `linrec.analyses.swap_run.run_model` on each of `p.models` (one model in memory at a time) and writes
`swap` (held-out ΔPPL per block and position variant), `swap_params`, `swap_safety`, `swap_predictor_values` and
`swap_predictors` (claim 6b's screen, `linrec.analyses.swap_summary`), `swap_first` (where the profile runs position
variants), `swap_rank_curve`, `swap_greedy` and `swap_greedy_steps`, `swap_windows` (the per-window losses of every
held-out ΔPPL) and `swap_skew` (their skew per swapped set, `linrec.analyses.swap.window_skew`), `swap_reload` (the
saved model's perplexity read back) and `swap_timings`; the routing and healing tables are its `routing` result's
(`linrec.studies.routing.RoutingResult`). The findings in words are `linrec.outputs.findings`' (claims 6a and 6b as
the catalog words them, the rest beside them), from these tables."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pandas as pd

from linrec.analyses.healing import Heal
from linrec.analyses.routing import share_grid
from linrec.analyses.swap import rewindowed, window_skew
from linrec.analyses.swap_run import ModelSwapRun, RouteSettings, SwapSettings, run_model
from linrec.analyses.swap_summary import first_position_effect, swap_params, swap_predictors, swap_safety
from linrec.claims.rules import Verdict, judge
from linrec.claims.swap import RULE_6A, RULE_6B
from linrec.studies import routing
from linrec.studies.base import Result, Settings, Summary, Tables
from linrec.studies.stages import Profile


@dataclass
class SwapResult(Result):
    carried: ClassVar[tuple[str, ...]] = ("r2",)
    swap: pd.DataFrame
    swap_params: pd.DataFrame
    swap_safety: pd.DataFrame
    swap_predictor_values: pd.DataFrame
    swap_predictors: pd.DataFrame
    swap_first: pd.DataFrame | None  # None where the profile runs no position variant (first_variants: [])
    swap_rank_curve: pd.DataFrame
    swap_greedy: pd.DataFrame
    swap_greedy_steps: pd.DataFrame
    swap_windows: pd.DataFrame | None  # None only from runs made before issue 64
    swap_skew: pd.DataFrame | None
    swap_reload: pd.DataFrame
    swap_timings: pd.DataFrame
    # not written: what the notebook shows beside the tables
    r2: pd.DataFrame  # R²_lin per model and block of the captures the swaps used (notebook 02's table)
    v6a: Verdict  # claim 6a (`judge(RULE_6A, …)`: its rule on the tables it reads)
    v6b: Verdict  # claim 6b (`judge(RULE_6B, …)`)
    routing: routing.RoutingResult  # the routing and healing tables (written with this result)

    def evidence(self, claim: str) -> pd.DataFrame:
        """The numbers claim `claim` ("6a" or "6b") was decided on, one row per model (or pooled row)."""
        return pd.DataFrame({"6a": self.v6a, "6b": self.v6b}[claim].evidence)

    def chosen(self) -> dict[str, int]:
        """{model: the block claim 6a picked on the screening windows}."""
        return {e["model"]: e["chosen_block"] for e in self.v6a.evidence}


def settings(p: Profile) -> tuple[SwapSettings, RouteSettings, Heal | None]:
    """The profile's swap settings, routing settings and healing (None: `p.heal` is {}), as `run_model` takes them
    (beside its capture, `p.capture_config(model)` run as `p.capture_run()`)."""
    swap = SwapSettings(p.screening_windows, p.test_windows, p.batch_size, p.ranks, p.budget_ppl, p.first_variants,
                        p.variant_min_first_share, p.keep_evaluations)  # fmt: skip
    route = RouteSettings(p.route_blocks, share_grid(p.route_step), p.route_corpora, p.route_split_shares, p.n_boot)
    return swap, route, Heal.of(p.heal) if p.heal else None


def run_models(p: Profile) -> list[ModelSwapRun]:
    """`run_model` on each of `p.models` in turn, with the profile's settings (`settings`)."""
    swap, route, heal = settings(p)
    return [run_model(p.capture_config(m), p.capture_run(), swap, route, heal, device=p.device, seed=p.seed,
                      save_dir=p.save_dir) for m in p.models]  # fmt: skip


def _joined(tables: list[pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(tables, ignore_index=True)


def tables(runs: list[ModelSwapRun], p: Profile, training: Profile | None = None) -> SwapResult:
    """Every table of notebook 06 from the models' runs: the per-model tables stacked, claim 6a and 6b's rules
    applied, and the routing and healing tables (`linrec.studies.routing.tables`, which heals
    notebook 08's runs where `p.heal_trained` asks: `training`, that profile's values)."""
    table = _joined([r.table for r in runs])
    values = _joined([r.values for r in runs])
    r2 = _joined([r.ceiling for r in runs])
    predictors = summarise({"swap": table, "swap_predictor_values": values}, p)["swap_predictors"]
    first = first_position_effect(table, r2) if p.first_variants else None
    greedy = pd.DataFrame([row for r in runs for row in r.greedy])
    parts = [r.windows for r in runs if r.windows is not None]
    windows = _joined(parts) if parts else None
    skew = window_skew(windows) if windows is not None else None
    v6a = judge(RULE_6A, {"swap": table, "swap_predictor_values": values, "swap_skew": skew})
    v6b = judge(RULE_6B, {"swap_predictors": predictors})
    return SwapResult(
        swap=table,
        swap_params=swap_params(table),
        swap_safety=swap_safety(table),
        swap_predictor_values=values,
        swap_predictors=predictors,
        swap_first=first,
        swap_rank_curve=_joined([r.curve for r in runs]),
        swap_greedy=greedy,
        swap_greedy_steps=_joined([r.steps for r in runs]),
        swap_windows=windows,
        swap_skew=skew,
        swap_reload=pd.DataFrame([r.reload for r in runs]),
        swap_timings=_joined([r.timings for r in runs]),
        r2=r2,
        v6a=v6a,
        v6b=v6b,
        routing=routing.tables(runs, p, r2, predictors, training),
    )


def summarise(tables: Tables, p: Settings) -> Tables:
    """Claim 6b's screen (`swap_predictors`) from the swap table and the predictors' values per block.
    Where the run stored its per-window losses (`swap_windows`), the swap's intervals are first recomputed from them
    with today's interval (`linrec.analyses.swap.rewindowed`: `swap`, `swap_skew`, `swap_rank_curve`, `swap_greedy`,
    `swap_first`), so claim 6a reads today's interval and its own-skew check."""
    tables = dict(tables)
    out = {}
    if tables.get("swap_windows") is not None:
        out = rewindowed(tables, tables["swap_windows"])
        tables |= out
    values, swap = tables.get("swap_predictor_values"), tables.get("swap")
    if values is None or swap is None:
        return out
    predictors = swap_predictors(values, swap, n_boot=p.n_boot, seed=p.seed)
    return out | {"swap_predictors": predictors}


SWAP = Summary("swap_predictors", ("swap_predictor_values", "swap", "swap_first", "swap_greedy", "swap_windows",
                                   "swap_rank_curve", "swap_skew"), summarise, as_written=("swap_skew",),
               where_present=("swap_first", "swap_greedy", "swap_rank_curve", "swap_skew",
                              "swap"))  # fmt: skip


def run(p: Profile, training: Profile | None = None) -> SwapResult:
    """Every model of `p.models` swapped, routed and healed (`run_models`), and every table above written under
    `p.results_dir`. `training`: the values of the profile whose runs `p.heal_trained` heals (notebook 08's,
    `load_profile("training").notebook("08")`); needed only where `p.heal_trained` is set."""
    routing.check_training(p, training)
    return tables(run_models(p), p, training).write(p.results_dir)  # routing switched off: its tables removed
