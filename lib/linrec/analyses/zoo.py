"""The whole pipeline on every trained model of notebook 08's zoo: what notebooks 02, 03, 04 and 06 measure on the
offline models, measured on each run's last checkpoint.

`measure_final(run, capture)` takes a run (`linrec.inputs.training.TrainedRun`) and the capture of its last checkpoint
on its measuring text, with sampled rows (`capture_checkpoints(..., final_rows=...)`), and returns its tables, each
labelled with the run's name in `model`:

- `ceiling`: R²_lin per block with its interval over held-out windows (claim 1; `linrec.analyses.recoverability.
  ceiling_table`);
- `probe`: the rank-`rank` bilinear probe's gain per block, and the closed-form quadratic's (claim 3;
  `linrec.analyses.probe.probe_table`, without the trained baselines of claim 7);
- `spectrum`: each block's regime (claim 4; `linrec.analyses.spectrum.spectrum_table`);
- `values`, `swap`: the screening predictors of ΔPPL on seeded train windows and the held-out ΔPPL of each block
  swapped alone for its map, with its paired interval (claims 6a, 6b; `linrec.analyses.swap.SwapStudy`);
- `noise`: the run's measurement noise of its level and shape (`linrec.analyses.factors.measurement_noise`).

`block_table` joins them into one row per model and block (the zoo's per-block results). Per-token routing is not run
here (its cost is that of notebook 06 again per model); the routing ρ stays the offline models'.

**Converged runs only.** A run whose held-out loss has not reached its plateau, or that did not learn at all
(`linrec.inputs.training.plateau`), is no trained model: `convergence_table` states the rule's numbers per run
(`zoo_runs`' `converged`, `final_heldout_loss`, `final_heldout_ppl`, …) and `linrec.claims.zoo.converged_runs`
names the runs every verdict of the zoo is drawn from (`linrec.studies.training.zoo`; `linrec.claims.zoo` refuses
tables that hold another). A run trained without held-out evaluations (`n_evals` 0) cannot be shown converged and
counts as not.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from linrec.analyses.factors import measurement_noise
from linrec.analyses.probe import probe_table
from linrec.analyses.recoverability import ceiling_table
from linrec.analyses.spectrum import spectrum_table
from linrec.analyses.swap import SwapSettings
from linrec.base.progress import bar as progress_bar
from linrec.inputs.models import load_model


def measure_final(run, capture, *, rank: int = 16, probe_rows: int | None = None,
                  swap: SwapSettings = SwapSettings(), seed: int = 0, device: str = "cpu",
                  progress: bool = True) -> dict[str, pd.DataFrame | dict]:  # fmt: skip
    """The tables of the module docstring for one run's last checkpoint, and `seconds` per stage (`swap`: the swap
    study's windows and batch size)."""

    label = run.config.name
    seconds, t0 = {}, time.perf_counter()
    out: dict = {"ceiling": ceiling_table(capture).assign(model=label)}
    out["noise"] = measurement_noise(capture, seed=seed)
    seconds["ceiling"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    out["probe"] = probe_table(capture, rank=rank, seed=seed, trained=False, max_train=probe_rows,
                               progress=progress).assign(model=label)  # fmt: skip
    seconds["probe"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    out["spectrum"] = spectrum_table(capture).assign(model=label)
    seconds["spectrum"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    loaded = load_model(str(run.final), device=device)
    loaded.name = label
    study = swap.study(capture, loaded, seed=seed, progress=progress)
    out["values"] = study.screening.predictors().assign(model=label)
    out["swap"] = study.heldout.table().assign(model=label)
    out["windows"] = study.heldout.window_losses().assign(model=label)  # every ΔPPL's per-window losses
    seconds["swap"] = time.perf_counter() - t0
    out["seconds"] = seconds
    return out


def measure_finals(runs: Mapping, finals: Mapping, progress: bool = True, **kw) -> dict[str, dict]:
    """{run name: `measure_final`} of every run; `finals`: {run name: its last checkpoint's capture}."""
    return {name: measure_final(runs[name], finals[name], progress=False, **kw)
            for name in progress_bar(list(finals), desc="pipeline", unit="model", disable=not progress)}  # fmt: skip


def stacked(measured: Mapping[str, dict], part: str) -> pd.DataFrame:
    """One of `measure_final`'s tables of every run, stacked in run order."""
    return pd.concat([m[part] for m in measured.values()], ignore_index=True)


BLOCK_COLUMNS = ["model", "layout", "text", "init_seed", "data_seed", "block", "r2_lin", "r2_lo", "r2_hi", "gain",
                 "gain_quad", "probe_stop", "regime", "delta_ppl", "delta_lo", "delta_hi", "ppl_base"]  # fmt: skip


def block_table(measured: Mapping[str, dict], configs: Sequence) -> pd.DataFrame:
    """One row per model and block: the run's layout, text, seeds; R²_lin with its interval (claim 1), the probe's
    gain (3), the regime (4), the held-out ΔPPL of swapping the block alone with its interval (6a, 6b)."""
    by_name = {c.name: c for c in configs}
    rows = []
    for name, m in measured.items():
        c = by_name[name]
        t = m["ceiling"][["model", "block", "r2_lin", "r2_lo", "r2_hi"]]
        t = t.merge(m["probe"][["block", "gain", "gain_quad", "probe_stop"]], on="block", how="left")
        t = t.merge(m["spectrum"][["block", "regime"]], on="block", how="left")
        swap = m["swap"][m["swap"]["first"] == "map"] if "first" in m["swap"] else m["swap"]
        t = t.merge(swap[["block", "delta_ppl", "delta_lo", "delta_hi", "ppl_base"]], on="block", how="left")
        rows.append(t.assign(layout=c.layout, text=c.text, init_seed=c.init_seed, data_seed=c.data_seed))
    return pd.concat(rows, ignore_index=True)[BLOCK_COLUMNS]


CONVERGENCE_COLUMNS = ["converged", "plateaued", "learned", "heldout_gain", "heldout_drop", "init_heldout_loss",
                       "final_heldout_loss", "final_heldout_ppl", "best_heldout_loss", "best_heldout_step"]  # fmt: skip


def convergence_table(trained: Mapping) -> pd.DataFrame:
    """One row per run (`trained`: {name: `linrec.inputs.training.TrainedRun`}): `run` and the plateau rule's
    columns (`CONVERGENCE_COLUMNS`, `linrec.inputs.training.Plateau.row`); a run without held-out evaluations is not
    converged, its numbers NaN."""
    rows = []
    for name, run in trained.items():
        rule = run.plateau()
        missing = {c: np.nan for c in CONVERGENCE_COLUMNS} | {"converged": False, "plateaued": False, "learned": False}
        rows.append({"run": name, **(rule.row() if rule is not None else missing)})
    return pd.DataFrame(rows, columns=["run", *CONVERGENCE_COLUMNS])


def noise_table(measured: Mapping[str, dict]) -> pd.DataFrame:
    """One row per run: its measurement noise of the level and the shape (`noise_level`, `noise_shape`), and the
    seconds of each stage of `measure_final`."""
    return pd.DataFrame([{"run": name, "noise_level": m["noise"]["level"], "noise_shape": m["noise"]["shape"],
                          **{f"seconds_{k}": v for k, v in m["seconds"].items()}}
                         for name, m in measured.items()])  # fmt: skip
