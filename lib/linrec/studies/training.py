"""Notebook 08's study (claim 2a, controlled): small decoders trained here from scratch, seed against seed, GELU
against SwiGLU, and under the zoo's profile the whole pipeline on every trained model.

`run(p)` trains (or reads from the cache) every run of the profile's `training` section (`profile_configs`:
`p.train_variants` × `p.train_init_seeds`, the other data orders and texts), measures every checkpoint on the held-out
measuring text (`linrec.analyses.seeds.capture_checkpoints`), and writes:

- `training_runs` (one row per run: its size, what it saw, how far it got) and `training_profiles` (R²_lin per run,
  checkpoint and block, `checkpoint_table`);
- `training_comparisons`, `training_distance_curve` and `training_verdict`: every pair of profiles that differ in one
  thing, against its noise floor (`comparisons`, `comparison_words`), the init seeds' distance at every checkpoint,
  and the seeds experiment's rule (`seeds_verdict`);
- with `p.train_pipeline` (the zoo), each run's last checkpoint through the pipeline (`measure_finals`: R²_lin, the
  probe, the regimes, the swap): `zoo_runs`, `zoo_blocks`, `training_swap`, `zoo_distances`, `zoo_components`,
  `zoo_verdict`, `zoo_probe_summary`, `zoo_swap_predictors`, `zoo_regimes`, `zoo_claims`;
- without it but with `p.train_swap`, `training_swap` alone: each run's last checkpoint, every block swapped alone
  (`SwapSettings.study`, its choices on `p.screening_windows` train windows).

What a later step reads is a table as written (read back through `load_table`), as `linrec.outputs.refresh` reads
it: the zoo's decomposition takes the final profiles, the comparisons and the runs' noise from their files. A
profile without a `training` section trains nothing: `run` returns the last stored run's tables (results/training
and results/zoo, written by `params/training.yaml` and `params/zoo.yaml`: `linrec.base.tables.STAND_INS`)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd

from linrec.analyses.factors import block_parameters, components, distance_table, final_profiles, run_factors
from linrec.analyses.probe_summary import probe_summary
from linrec.analyses.seeds import (
    approach_to_final,
    capture_checkpoints,
    checkpoint_table,
    comparisons,
    distance_over_training,
    from_profiles,
)
from linrec.analyses.spectrum import REGIMES, regime_summary
from linrec.analyses.swap import SwapSettings
from linrec.analyses.swap_summary import swap_predictors
from linrec.analyses.zoo import (
    block_table,
    convergence_table,
    measure_final,
    measure_finals,
    noise_table,
    stacked,
)
from linrec.base.cache import entry_path, folder
from linrec.base.errors import LinrecError
from linrec.base.files import project_root, unseal
from linrec.base.progress import bar as progress_bar
from linrec.base.progress import notice
from linrec.base.registry import TABLES
from linrec.base.tables import load_table, load_timings, read
from linrec.base.threads import free_cpus
from linrec.claims.learned import comparison_words, seeds_verdict
from linrec.claims.probe import RULE_3
from linrec.claims.regimes import RULE_4
from linrec.claims.swap import RULE_6B
from linrec.claims.zoo import converged_runs, pooled_table, zoo_verdict
from linrec.collect.config import CaptureConfig
from linrec.collect.reuse import REFERENCE_SECONDS, duration
from linrec.inputs.models import load_model
from linrec.inputs.training import made_on, profile_configs, runs
from linrec.studies.base import Result, Settings, Summary, Tables
from linrec.studies.stages import Profile

log = logging.getLogger(__name__)

# A training step's seconds over a capture's for the same tokens and parameters: the backward pass multiplies twice
# what the forward does, and AdamW and the LM head add to it. Measured 2026-11-27 on 1 thread beside other jobs (load
# 8 on 2 cores, so about a quarter of a core): params/training.yaml's run (d_model 128, 4 layers, 1.3M parameters)
# 8.5e-10 s per token and parameter over 10 steps, 1.16e-9 over 40, about 2-3e-10 on a core of its own: 3-4 × the
# capture's 7e-11. Not yet measured on an idle machine.
TRAIN_FACTOR = 4
# Said after the line in a notebook's cell (`linrec.base.progress.notice`): the quicker paths to notebook 08's tables.
TRAIN_QUICKER = (
    "this cell trains them now; quicker: the default profile shows the stored runs' tables (results/training, "
    'results/zoo) without training, and profile_file = "params/smoke.yaml" trains tiny runs in seconds'
)
SWAP_COLUMNS = list(TABLES["training_swap"].columns)
WINDOW_COLUMNS = list(TABLES["training_swap_windows"].columns)


@dataclass
class TrainingResult(Result):
    """Notebook 08's tables; each None where its part did not run (or, shown from a stored run, was not written)."""

    pieces: ClassVar[bool] = True  # written by several calls (runs, swap, zoo), each its own fields
    carried: ClassVar[tuple[str, ...]] = ("zoo_timings",)

    training_runs: pd.DataFrame | None = None
    training_profiles: pd.DataFrame | None = None
    training_comparisons: pd.DataFrame | None = None
    training_distance_curve: pd.DataFrame | None = None
    training_verdict: pd.DataFrame | None = None
    training_onsets: pd.DataFrame | None = None  # when each run's profile settled (`approach_to_final`)
    training_swap: pd.DataFrame | None = None
    training_swap_windows: pd.DataFrame | None = None  # every training_swap ΔPPL's per-window losses
    zoo_runs: pd.DataFrame | None = None
    zoo_blocks: pd.DataFrame | None = None
    zoo_distances: pd.DataFrame | None = None
    zoo_components: pd.DataFrame | None = None
    zoo_verdict: pd.DataFrame | None = None
    zoo_probe_summary: pd.DataFrame | None = None
    zoo_swap_predictors: pd.DataFrame | None = None
    zoo_regimes: pd.DataFrame | None = None
    zoo_claims: pd.DataFrame | None = None
    zoo_timings: pd.DataFrame | None = None  # zoo_runs' seconds (timings/): how long this machine took, not a result
    ran: bool = False  # trained and measured by this run, or read from the stored run (`source`)
    source: Path | None = None  # where the seeds experiment's tables were read from

    def sizes(self) -> pd.DataFrame:
        """Each run's size and what it saw: its MLP, width, depth, parameters, tokens, and epochs over its text."""
        cols = ["mlp", "d_model", "n_layers", "d_ff", "n_params", "n_params_blocks", "tokens_seen", "tokens_per_param",
                "train_tokens_available", "epochs"]  # fmt: skip
        return self.training_runs.set_index("run")[cols]


@dataclass
class Runs:
    """The trained runs of a profile and their measurements: `captures` {run: {step: capture}}, and the seconds each
    run's checkpoints took to capture."""

    configs: list
    trained: dict
    captures: dict
    capture_seconds: dict


def onsets(approach: pd.DataFrame) -> pd.DataFrame:
    """Per run, from `approach_to_final`'s rows: the step the profile settled (its onset), the run's last step, and
    whether it was still moving when training stopped (onset at the last step)."""
    onset = approach.groupby("run", sort=False)["onset"].first()
    last = approach.groupby("run", sort=False)["step"].max()
    return pd.DataFrame({"onset (step)": onset, "last step": last, "still moving": onset == last})


def stored(where: str | Path, ran: bool = False) -> TrainingResult:
    """Notebook 08's tables: as this run wrote them under `where` (`ran`), else as the last runs of the profiles that
    stand in for them wrote them (`linrec.base.tables.read`: results/training for the seeds experiment, results/zoo
    for the zoo); `source` is where the seeds experiment's tables came from as the checkout names it (relative to the
    project root where it lies inside it), so the notebook that prints it reads the same on every machine. A stored
    run an older linrec wrote (e.g. `zoo_runs` before its convergence columns) is left out whole (None), with a
    warning naming its tables and the rerun, until it is run again."""
    names, memo = [name for name in TrainingResult.__dataclass_fields__ if name in TABLES], {}  # memo: `read`'s
    if ran:
        tables, source, runs = {name: load_table(name, where) for name in names}, Path(where), Path(where)
    else:
        reads = {name: read(name, where, own=False, memo=memo) for name in names}
        for profile, old in {p: t for q in reads.values() for p, t in q.source.stale.items()}.items():
            log.warning("the last run of params/%s.yaml wrote %s as an older linrec did; rerun notebook 08 under it: "
                        "its tables are left out until then", profile, ", ".join(old))  # fmt: skip
        tables, runs = {name: q.table for name, q in reads.items()}, reads["zoo_runs"].source.folder
        source = next((s.folder for n, (_, s) in reads.items() if n.startswith("training_") and s.folder), None)
    root = project_root()
    if source is not None and source.is_relative_to(root):
        source = source.relative_to(root)
    return TrainingResult(**tables, ran=ran, source=source,
                          zoo_timings=load_timings("zoo_runs", runs) if runs is not None else None)  # fmt: skip


def _measured(on_cpu: bool) -> list[tuple[int, float]]:
    """(parameters, seconds per token and parameter) of every run cached here made on the same kind of device."""
    out = []
    here = folder("training")
    for meta_file in here.glob("*/meta.json") if here.is_dir() else []:
        try:
            meta = unseal(meta_file)
            if (meta.get("made_on") == "cpu") == on_cpu and meta.get("seconds") and meta.get("tokens_seen"):
                n = int(meta["n_params"])
                out.append((n, float(meta["seconds"]) / (float(meta["tokens_seen"]) * n)))
        except (ValueError, OSError, TypeError, KeyError):
            continue
    return out


def training_seconds(configs: list, threads: int) -> tuple[float | None, str]:
    """About how long training `configs` (`TrainConfig`) takes here on `threads` CPU threads, and on what that rests:
    for each run, the median seconds per token and parameter of this machine's cached runs made on the same kind of
    device and within 2× its size (a tiny run's rate is mostly overhead), else `TRAIN_FACTOR` × a capture's reference
    rate (`linrec.collect.reuse.REFERENCE_SECONDS`) on a CPU; on a GPU with nothing measured there, (None, why)."""
    on_cpu = made_on(configs[0].device) == "cpu"
    measured, total, bases = _measured(on_cpu), 0.0, set()
    for c in configs:
        n, tokens = c.param_count(), c.steps * c.batch_size * c.seq_len
        near = [rate for size, rate in measured if 0.5 <= size / n <= 2]
        if near:
            total += float(np.median(near)) * n * tokens
            bases.add("the runs of that size trained here")
        elif on_cpu:
            total += TRAIN_FACTOR * REFERENCE_SECONDS * n * tokens / max(threads, 1)
            bases.add(f"the reference rate on {threads} CPU thread(s)")
        else:
            return None, "no run of that size on this device is cached yet to estimate it from"
    return total, " and ".join(sorted(bases))


def _cached(c) -> bool:
    return (entry_path("training", c.name, c.key(made_on(c.device))) / "meta.json").is_file()


def say_training(configs: list) -> None:
    """Before notebook 08 trains: one line naming the runs not in the cache, their tokens and about how long they
    take (`training_seconds`); in a notebook's cell followed by the quicker paths (`TRAIN_QUICKER`). Nothing when
    every run is cached."""
    missing = [c for c in configs if not _cached(c)]
    if not missing:
        return
    import torch  # here, not at the top: only a profile that trains gets here

    seconds, basis = training_seconds(missing, torch.get_num_threads())
    took = f"time not estimated ({basis})" if seconds is None else f"{duration(seconds)} (from {basis})"
    tokens = sum(c.steps * c.batch_size * c.seq_len for c in missing)
    names = ", ".join(c.name for c in missing)
    notice(f"training {len(missing)} of {len(configs)} runs ({names}; {tokens:,} tokens in all): {took}",
           in_notebook=TRAIN_QUICKER)  # fmt: skip


def train(p: Profile) -> Runs:
    """Every run of the profile, trained or read from the cache (`$LINREC_CACHE/training/`), and every checkpoint of
    each captured on its measuring text (the last one with `p.train_probe_rows` rows per block where the pipeline
    runs: the probe needs them)."""
    configs = profile_configs({**p.training, "device": p.device}, p.train_variants, p.train_init_seeds,
                              p.train_data_seeds, p.train_texts, p.train_text_seeds or None,
                              p.train_block_tolerance)  # fmt: skip
    say_training(configs)
    trained = runs(configs)
    captures, seconds = {}, {}
    for c in configs:
        t0 = time.perf_counter()
        captures[c.name] = _checkpoints(p, trained[c.name])
        seconds[c.name] = time.perf_counter() - t0
    return Runs(configs, trained, captures, seconds)


def _checkpoints(p: Profile, run, last_only: bool = False) -> dict:
    """{step: capture} of `run`'s checkpoints on its measuring text, as `train` measures them (the last one's alone
    with `last_only`)."""
    config = CaptureConfig(str(run.final), run.measure_corpus, run.config.seq_len, p.train_measure_tokens, p.seed)
    return capture_checkpoints(run, config, p.capture_run(), final_rows=p.train_probe_rows if p.train_pipeline else 0,
                               progress=not last_only, last_only=last_only)  # fmt: skip


def _pipeline_settings(p: Profile) -> dict:
    """`measure_final`'s settings under profile `p`."""
    return dict(probe_rows=p.train_probe_rows, swap=SwapSettings(p.screening_windows, batch_size=p.batch_size),
                seed=p.seed, device=p.device)  # fmt: skip


def _measure_one(p: Profile, config, threads: int) -> dict:
    """A worker of `measure_in_workers`: run `config`'s last checkpoint through `measure_final`, the run and its
    capture read from the cache, where the parent put them."""
    import torch

    torch.set_num_threads(threads)
    run = runs([config], progress=False)[config.name]
    final = _checkpoints(p, run, last_only=True)
    return measure_final(run, final[max(final)], progress=False, **_pipeline_settings(p))


def measure_in_workers(p: Profile, r: Runs, workers: int) -> dict[str, dict]:
    """`measure_finals` of every run, `workers` runs at once, each in its own process on its share of the CPUs other
    work leaves free (`free_cpus`, as `linrec figures` sizes its kernels); the numbers are those of one process: every
    run's are computed alone, and a thread count changes none of them. {run name: its tables}."""
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from multiprocessing import get_context

    workers = max(1, min(workers, len(r.configs)))
    threads = max(1, free_cpus() // workers)
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
        futures = {pool.submit(_measure_one, p, c, threads): c.name for c in r.configs}
        done = {futures[f]: f.result() for f in progress_bar(as_completed(futures), total=len(futures),
                                                              desc="pipeline", unit="model")}  # fmt: skip
    return {c.name: done[c.name] for c in r.configs}


def run_row(config, run, profiles: pd.DataFrame) -> dict:
    """`training_runs`' row of one run: its configuration, its size, the tokens it saw (per parameter, and as epochs
    over its training text), its last training loss and its last checkpoint's held-out perplexity."""
    meta, mine = run.meta, profiles[profiles["run"] == config.name]
    return {
        "run": config.name, "mlp": config.layout, "init_seed": config.init_seed, "data_seed": config.data_seed,
        "d_model": config.d_model, "n_layers": config.n_layers, "d_ff": config.ffn_width,
        "n_params": meta["n_params"], "n_params_blocks": meta["n_params_blocks"], "tokens_seen": meta["tokens_seen"],
        "tokens_per_param": meta["tokens_seen"] / meta["n_params"],
        "train_tokens_available": meta["train_tokens_available"],
        "epochs": meta["tokens_seen"] / meta["train_tokens_available"],
        "final_train_loss": meta["final_train_loss"],
        "ppl_test_final": mine[mine["step"] == mine["step"].max()]["ppl_test"].iloc[0],
        "made_on": meta["made_on"], "seconds": meta["seconds"], "from_cache": run.cached,
    }  # fmt: skip


def swap_table(p: Profile, r: Runs) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`training_swap` without the pipeline: each run's last checkpoint, every block swapped alone for its map,
    held-out ΔPPL with its paired skew-corrected jackknife interval (the swap study of notebook 06,
    `p.screening_windows`); and `training_swap_windows`, the per-window losses of each."""
    settings = SwapSettings(p.screening_windows, batch_size=p.batch_size)
    parts, windows = [], []
    for c in r.configs:
        last = max(r.captures[c.name])
        loaded = load_model(str(r.trained[c.name].final))
        loaded.name = f"{c.name} step {last}"  # what the progress line calls it
        swap = settings.study(r.captures[c.name][last], loaded, seed=p.seed)
        parts.append(swap.heldout.table().assign(run=c.name)[SWAP_COLUMNS])
        windows.append(swap.heldout.window_losses().assign(run=c.name)[WINDOW_COLUMNS])
    return pd.concat(parts, ignore_index=True), pd.concat(windows, ignore_index=True)


def zoo(p: Profile, r: Runs, where: Path) -> None:
    """The pipeline on every run's last checkpoint (`measure_finals`, its swap study on `p.screening_windows` train
    windows), then what the layout, the text and the seed each set (`components`, `zoo_verdict`) and the across-block
    claims pooled over every run's blocks (`pooled_table`: claims 3, 6b and 4 by their rows); its tables written
    under `where`. Every run is measured and shown (`zoo_runs`, `zoo_blocks`, `training_swap`), but the distances,
    the decomposition and every verdict are drawn from the runs that converged alone (`convergence_table`: the
    plateau rule on the held-out loss)."""
    if p.train_pipeline_workers > 1:  # a machine with cores to spare (a GPU's): several runs at once, same numbers
        measured = measure_in_workers(p, r, p.train_pipeline_workers)
    else:
        measured = measure_finals(r.trained, {c.name: r.captures[c.name][max(r.captures[c.name])] for c in r.configs},
                                  **_pipeline_settings(p))  # fmt: skip
    timing = noise_table(measured).assign(
        seconds_train=[r.trained[c.name].meta["seconds"] for c in r.configs],
        from_cache=[r.trained[c.name].cached for c in r.configs],
        seconds_capture=[r.capture_seconds[c.name] for c in r.configs],
    )
    factors = run_factors(r.configs)
    zoo_runs = (factors.assign(block_params=block_parameters(r.configs).values())
                .merge(convergence_table(r.trained), on="run").merge(timing, on="run"))  # fmt: skip
    swap = stacked(measured, "swap").rename(columns={"model": "run"})[SWAP_COLUMNS]
    windows = stacked(measured, "windows").rename(columns={"model": "run"})[WINDOW_COLUMNS]
    TrainingResult(zoo_blocks=block_table(measured, r.configs), zoo_runs=zoo_runs, training_swap=swap,
                   training_swap_windows=windows).write(where)  # fmt: skip
    runs_written = load_table("zoo_runs", where)
    keep = converged_runs(runs_written)
    factors = factors[factors["run"].isin(keep)].reset_index(drop=True)
    measured = {name: m for name, m in measured.items() if name in keep}
    wide, table = final_profiles(load_table("training_profiles", where)), load_table("training_comparisons", where)
    wide = wide.loc[[n for n in wide.index if n in keep]]
    table = table[table["a"].astype(str).isin(keep) & table["b"].astype(str).str.removesuffix(" step 0").isin(keep)]
    comp = dist = None
    try:
        comp = components(wide, factors, runs_written[runs_written["run"].isin(keep)])
        dist = distance_table(wide, factors, comparisons=table)
    except LinrecError as err:  # too few converged runs for a decomposition: no verdict, and the reason shown
        log.warning("the zoo's decomposition is not testable on its %d converged run(s): %s", len(keep), err)
    probe = pred = regimes = None
    if measured:
        probe = probe_summary(stacked(measured, "probe"), None, n_boot=p.n_boot, seed=p.seed)
        pred = swap_predictors(stacked(measured, "values"), stacked(measured, "swap"), n_boot=p.n_boot, seed=p.seed)
        regimes = regime_summary(stacked(measured, "spectrum"), REGIMES)
    verdicts = TrainingResult(
        zoo_distances=dist,
        zoo_components=comp,
        **summarise_zoo({"zoo_components": comp, "training_comparisons": table, "zoo_runs": runs_written}, p),
        zoo_probe_summary=probe,
        zoo_swap_predictors=pred,
        zoo_regimes=regimes,
        zoo_claims=pooled_table(
            (RULE_3, RULE_6B, RULE_4),
            {"zoo_probe_summary": probe, "zoo_swap_predictors": pred, "zoo_regimes": regimes, "zoo_runs": runs_written},
        ),
    ).write(where)
    # not computable on these runs: an earlier run's table must not stay (the other fields are other stages')
    verdicts.drop_absent(where, ("zoo_distances", "zoo_components", "zoo_probe_summary", "zoo_swap_predictors",
                                 "zoo_regimes"))  # fmt: skip


def summarise(tables: Tables, p: Settings) -> Tables:
    """The seeds experiment judged: each comparison's words (`comparison_words`; its level and shape points from
    `training_profiles` where a former linrec did not write them, `from_profiles`), the distance curve's points
    likewise, when each run's profile settled (`training_onsets`) and the verdict row (`seeds_verdict`)."""
    comp, prof = tables.get("training_comparisons"), tables.get("training_profiles")
    if comp is None or prof is None:
        return {}
    comp = comparison_words(from_profiles(comp, prof))
    out = {"training_comparisons": comp[list(TABLES["training_comparisons"].columns)]}
    if (curve := tables.get("training_distance_curve")) is not None:
        out["training_distance_curve"] = from_profiles(curve, prof)[list(TABLES["training_distance_curve"].columns)]
    onset = approach_to_final(prof).groupby("run", sort=False)["onset"].first()
    last = prof.groupby("run", sort=False)["step"].max()
    out["training_onsets"] = pd.DataFrame(
        {"run": onset.index, "onset": onset.to_numpy(), "last_step": last[onset.index].to_numpy()}
    )
    return {**out, "training_verdict": pd.DataFrame([seeds_verdict(comp)])}


TRAINING = Summary("the seeds experiment's verdict", ("training_comparisons", "training_profiles",
                   "training_distance_curve"), summarise,
                   as_written=("training_comparisons", "training_distance_curve"))  # fmt: skip


def summarise_zoo(tables: Tables, p: Settings) -> Tables:
    """The zoo's verdict row (`zoo_verdict`) from its decomposition, the comparisons and the runs (only the converged
    ones decide); nothing where the zoo wrote no runs table (a seeds-experiment folder)."""
    if tables.get("zoo_runs") is None:
        return {}
    verdict = zoo_verdict(tables.get("zoo_components"), tables.get("training_comparisons"), tables["zoo_runs"])
    return {"zoo_verdict": pd.DataFrame([verdict])}


ZOO = Summary("the zoo's verdict", ("zoo_components", "training_comparisons", "zoo_runs"), summarise_zoo)


def run(p: Profile) -> TrainingResult:
    """The seeds experiment (and, with `p.train_pipeline`, the zoo) of the module docstring: its tables written under
    `p.results_dir` and returned as written; without a `training` section, the stored run's tables."""
    root = project_root()
    if not p.training:
        return stored(root / p.results_dir)
    where = root / p.results_dir  # an absolute results_dir (linrec figures --out) stays as it is
    r = train(p)
    profiles = pd.concat([checkpoint_table(r.trained[c.name], r.captures[c.name]) for c in r.configs],
                         ignore_index=True)  # fmt: skip
    runs_table = pd.DataFrame([run_row(c, r.trained[c.name], profiles) for c in r.configs])
    measured = {
        "training_profiles": profiles,
        "training_comparisons": comparisons(r.configs, r.captures, seed=p.seed),
        "training_distance_curve": distance_over_training(r.configs, r.captures, "seed", seed=p.seed),
    }
    TrainingResult(training_runs=runs_table, training_profiles=profiles, **summarise(measured, p)).write(where)
    if p.train_pipeline:
        zoo(p, r, where)
    elif p.train_swap:
        swap, windows = swap_table(p, r)
        TrainingResult(training_swap=swap, training_swap_windows=windows).write(where)
    return stored(where, ran=True)
