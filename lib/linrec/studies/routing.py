"""Notebook 06's second half: the anchor paper's three claims (arXiv 2603.03459) measured with the exact closed-form
map, from the per-model runs of the swap study (`linrec.studies.swap`), and the healing of notebook 08's small models.

`tables` stacks the models' routing results into `routing_gates`, `routing_curve` and `routing_routable`
(`linrec.analyses.routing`), `routing_identity`, `routing_split_auc` and `routing_split_ppl`
(`linrec.analyses.token_context`), summarises them (`routing_summary`: `linrec.analyses.routing`) and judges them
(`routing_anchor`: `linrec.claims.routing`);
each is None where the profile routes no block (`route_blocks: 0`). `routing_heal` holds the healed swaps of the
models (`heal`) and of the cached runs of params/training.yaml (`heal_trained`, `heal_trained_runs`); None where
neither heals anything."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from linrec.analyses.healing import Heal, cached_runs
from linrec.analyses.routing import routing_summary, study_r2
from linrec.analyses.swap_run import ModelSwapRun, SwapSettings, heal_run
from linrec.base.errors import LinrecError
from linrec.claims.routing import anchor_table, heal_table
from linrec.collect.config import CaptureConfig
from linrec.inputs.training import profile_configs
from linrec.studies.base import Result, Settings, Summary, Tables
from linrec.studies.stages import Profile

NO_TRAINED_RUNS = (
    "no cached run of params/training.yaml to heal: linrec figures --params params/training.yaml --only 08"
)


@dataclass
class RoutingResult(Result):
    routing_gates: pd.DataFrame | None = None
    routing_curve: pd.DataFrame | None = None
    routing_routable: pd.DataFrame | None = None
    routing_identity: pd.DataFrame | None = None
    routing_split_auc: pd.DataFrame | None = None
    routing_split_ppl: pd.DataFrame | None = None
    routing_summary: pd.DataFrame | None = None
    routing_anchor: pd.DataFrame | None = None
    routing_heal: pd.DataFrame | None = None
    # not written: the names of notebook 08's runs healed (`heal_trained`; [] where none was cached or none asked),
    # and what could not be done, each with its fix (a line to print)
    trained: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def by_share(self) -> pd.DataFrame:
        """Held-out ΔPPL of each routed block (rows) at each share routed to the map (columns)."""
        return self.routing_curve.pivot_table(index=["model", "block"], columns="share", values="delta_ppl")

    def auc_by_part(self) -> pd.DataFrame:
        """Held-out AUC of each routed block's gates (rows) on the token part, the context part and the whole input."""
        return self.routing_split_auc.pivot_table(index=["model", "block"], columns="part", values="auc")


def check_training(p: Profile, training: Profile | None) -> None:
    """`p.heal_trained` heals notebook 08's runs, so it needs that profile's values: one line naming them."""
    if p.heal_trained and training is None:
        raise LinrecError(
            "heal_trained heals notebook 08's runs: pass the training profile's values, "
            'training=load_profile("training").notebook("08") (linrec.app.profile)'
        )


def heal_trained_runs(p: Profile, training: Profile) -> tuple[list[pd.DataFrame], list[str]]:
    """`heal_run` (`p.heal_trained`'s settings; its `runs`, a list of run names, picks some) on each run of
    `training` (notebook 08's profile) that is cached, in the swap study notebook 08 runs on them (that profile's
    screening windows); a run not trained yet is left out (healing never trains one). The healed tables and the
    names of the runs healed."""
    configs = profile_configs({**training.training, "device": p.device}, training.train_variants,
                              training.train_init_seeds, training.train_data_seeds)  # fmt: skip
    heal, names = Heal.of_trained(p.heal_trained)
    runs = [r for r in cached_runs(configs) if names is None or r.config.name in names]
    swap = SwapSettings(training.screening_windows, batch_size=p.batch_size)
    measured = [CaptureConfig(str(r.final), r.measure_corpus, r.config.seq_len, training.train_measure_tokens, p.seed)
                for r in runs]  # fmt: skip
    healed = [heal_run(r, c, heal, swap, device=p.device, seed=p.seed) for r, c in zip(runs, measured)]
    return healed, [r.config.name for r in runs]


def tables(
    runs: list[ModelSwapRun],
    p: Profile,
    r2: pd.DataFrame,
    predictors: pd.DataFrame,
    training: Profile | None = None,
) -> RoutingResult:
    """The routing tables of the models' runs (those that routed: `p.route_blocks` other than 0), judged against
    R²_lin (`r2`) and the swap's predictors (`predictors`), and the healing table of the models and, where
    `p.heal_trained` asks, of notebook 08's cached runs (`training`: that profile's values)."""
    out = RoutingResult()
    routes = [r.routing for r in runs if r.routing is not None]
    if routes:
        out.routing_gates = pd.concat([r.comparison for r in routes], ignore_index=True)
        out.routing_curve = pd.concat([r.curve for r in routes], ignore_index=True)
        out.routing_routable = pd.concat([r.routable for r in routes], ignore_index=True)
        out.routing_identity = pd.concat([r.identity for r in runs if r.identity is not None], ignore_index=True)
        out.routing_split_auc = pd.concat([r.split_auc for r in runs if r.split_auc is not None], ignore_index=True)
        out.routing_split_ppl = pd.concat([r.split_ppl for r in runs if r.split_ppl is not None], ignore_index=True)
        judged = summarise(
            {
                "routing_routable": out.routing_routable,
                "r2_lin": r2,
                "swap_predictors": predictors,
                "routing_identity": out.routing_identity,
                "routing_split_auc": out.routing_split_auc,
            },
            p,
        )
        out.routing_summary, out.routing_anchor = judged["routing_summary"], judged["routing_anchor"]
    healed = [r.heal for r in runs if r.heal is not None]
    if p.heal_trained:
        check_training(p, training)
        more, out.trained = heal_trained_runs(p, training)
        healed += more
        out.notes += [] if out.trained else [NO_TRAINED_RUNS]
    out.routing_heal = heal_table(pd.concat(healed, ignore_index=True)) if healed else None
    return out


def summarise(tables: Tables, p: Settings) -> Tables:
    """The anchor paper's claims judged (`routing_summary`: the routable shares against R²_lin of the swap study's
    corpus and the swap's predictors; `routing_anchor`: token or context), each where its tables were written."""
    routable, identity, split = (tables.get(n) for n in ("routing_routable", "routing_identity", "routing_split_auc"))
    r2, out = study_r2(tables.get("r2_lin"), tables.get("swap")), {}
    if routable is not None and r2 is not None:
        out["routing_summary"] = routing_summary(routable, r2, tables.get("swap_predictors"), identity)
    if identity is not None or split is not None:
        out["routing_anchor"] = anchor_table(identity, split)
    return out


ROUTING = Summary("routing_summary and routing_anchor", ("routing_routable", "r2_lin", "swap", "routing_identity",
                  "routing_split_auc", "swap_predictors"), summarise,
                  where_present=("routing_summary", "routing_anchor"))  # fmt: skip
