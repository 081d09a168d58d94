"""Notebook 07's study (claims 2a and 2b, the controls the paper lacks): is a block's R²_lin profile learned, and is
it carried by the block's own weights or by the inputs it sees?

`run(p)` captures every model of `p.models` and `p.encoder_models` on `p.corpus` and runs four controls on the same
code path as R²_lin (`linrec.analyses.controls`, `linrec.analyses.decomposition`):

1. random-init twins (`p.init_seeds`): `controls_random_init` (every profile, trained and untrained) and its summary
   (`linrec.analyses.controls.random_init_summary`);
2. each trained FFN on Gaussian inputs with its inputs' moments and on the next block's inputs
   (`input_controls`, on `p.control_rows` rows): `controls_inputs` and `controls_inputs_summary`;
3. cross feeding (`cross_feed_pairs`, only where `p.cross_feeding`): `controls_cross_feed` and its summary, else
   neither is written;
4. with each block's norm gain folded into its FFN, the null ensembles and the cross matrix (`inputs_or_weights`, on
   `p.decomposition_rows` rows): `controls_weight_nulls`, `controls_cross_matrix`, `controls_null_blocks`,
   `controls_decomposition` (`decomposition` with its intervals), `controls_decomposition_bands` (the weights −
   inputs share at every band the matrix holds, `linrec.analyses.decomposition.band_table`, with each band's own window
   bootstrap, `band_windows`) and `controls_learned`, the tables claims 2a and 2b are judged on (`RULE_2A`,
   `RULE_2B`);

The findings in words are `linrec.outputs.findings`' (claims 2a and 2b as the catalog words them, the rest beside
them), from these tables. Every (FFN, rows) pair is scored once, whichever control asks for it first (`MapScores`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

from linrec.analyses.controls import (
    MapScores,
    cross_feed_pairs,
    input_control_summary,
    input_controls,
    learned_summary,
    random_init_summary,
    twin_pairs,
)
from linrec.analyses.decomposition import (
    InputsOrWeights,
    NullDraws,
    band_table,
    band_windows,
    decomposition,
    decomposition_intervals,
    inputs_or_weights,
    null_blocks,
)
from linrec.analyses.recoverability import ceiling_table
from linrec.base.registry import TABLES
from linrec.collect.capture import get_capture
from linrec.collect.config import CaptureConfig, CaptureRun
from linrec.inputs.models import load_model, random_init_spec
from linrec.studies.base import Result, Settings, Summary, Tables
from linrec.studies.stages import Profile


@dataclass
class ControlsResult(Result):
    controls_random_init: pd.DataFrame
    controls_random_init_summary: pd.DataFrame
    controls_inputs: pd.DataFrame
    controls_inputs_summary: pd.DataFrame
    controls_cross_feed: pd.DataFrame | None  # None: cross feeding not run (`cross_feeding` false)
    controls_cross_feed_summary: pd.DataFrame | None
    controls_weight_nulls: pd.DataFrame
    controls_cross_matrix: pd.DataFrame
    controls_null_blocks: pd.DataFrame
    controls_decomposition: pd.DataFrame
    controls_decomposition_bands: pd.DataFrame
    controls_learned: pd.DataFrame


@dataclass
class Captures:
    """What every control reads: the models (`p.models`, then the encoders), each trained model's capture, each
    random-init twin's ({(model, init seed): capture}), and how a trained model is captured (the first model's
    request: its settings serve every other spec, `linrec.analyses.controls.cross_feed_pairs`)."""

    models: list[str]
    trained: dict
    inits: dict
    config: CaptureConfig
    run: CaptureRun


def captures(p: Profile) -> Captures:
    """Every model's capture on `p.corpus` (rows kept: the profile's `sample_rows`), and its random-init twins'.

    Only the first init seed's twin keeps raw rows (cross feeding needs them): `p.control_rows` of them where the
    profile sets a row budget (cross feeding reads no more), else as many as the trained capture."""
    models = [*p.models, *(m for m in p.encoder_models if m not in p.models)]
    run = p.capture_run()
    trained = {m: get_capture(p.capture_config(m), run) for m in models}
    seeds, sample_rows = p.init_seeds, p.capture_config(models[0]).sample_rows
    rows = {s: (p.control_rows or sample_rows) if s == seeds[0] else 0 for s in seeds}
    inits = {(m, s): get_capture(twin_config(p, m, rows[s], s), run) for m in models for s in seeds}
    return Captures(models, trained, inits, p.capture_config(models[0]), run)


def twin_config(p: Profile, model: str, sample_rows: int, seed: int = 0) -> CaptureConfig:
    """How `model`'s random-init twin of init seed `seed` is captured: the model's own request on at most
    `p.twin_tokens` tokens (a twin's profile is a reference, not the measurement: on SmolLM2 its two captures were
    290 of notebook 07's 710 s on one core), keeping `sample_rows` raw rows."""
    cfg = p.capture_config(random_init_spec(model, seed))
    tokens = cfg.tokens if p.twin_tokens is None else min(cfg.tokens, p.twin_tokens)
    return replace(cfg, tokens=tokens, sample_rows=sample_rows)


def random_init_profiles(caps: Captures) -> pd.DataFrame:
    """R²_lin per block of every trained model (`weights` "trained") and of each of its random-init twins
    ("random init, seed S"): `controls_random_init`."""
    trained = [ceiling_table(c).assign(model=m, weights="trained") for m, c in caps.trained.items()]
    inits = [ceiling_table(c).assign(model=m, weights=f"random init, seed {s}") for (m, s), c in caps.inits.items()]
    return pd.concat(trained + inits, ignore_index=True)


def cross_feeding(p: Profile, caps: Captures, loaded: dict, scores: MapScores):
    """Section 3: each pair (A, B) of `p.cross_pairs` (None: every model with its first random-init twin, both ways),
    A's inputs through B's FFN, raw and re-coloured (`cross_feed_pairs`): (table, summary)."""
    captured = {**caps.trained, **{random_init_spec(m, s): c for (m, s), c in caps.inits.items()}}
    pairs = twin_pairs(caps.models, p.init_seeds[0]) if p.cross_pairs is None else [tuple(x) for x in p.cross_pairs]
    return cross_feed_pairs(pairs, captured, loaded, caps.config, caps.run, n_rows=p.control_rows, seed=p.seed,
                            scores=scores)  # fmt: skip


def decomposition_table(measured: dict[str, InputsOrWeights], blocks: pd.DataFrame, n_boot: int,
                        seed: int) -> pd.DataFrame:  # fmt: skip
    """`controls_decomposition` as measured: per model, how many blocks stand out from both null ensembles and the
    cross matrix's two-factor shares with their window-bootstrap intervals (`decomposition`); `summarise` adds the
    intervals with the blocks' variability and the band's effect (`decomposition_intervals`)."""
    counts = blocks.groupby("model", sort=False)["stands_out"].agg(n_blocks="size", n_standout="sum")
    rows = [
        {"model": m, **counts.loc[m].to_dict(), **decomposition(r, n_boot=n_boot, seed=seed)}
        for m, r in measured.items()
    ]
    return pd.DataFrame(rows)


def summarise(tables: Tables, p: Settings) -> Tables:
    """Claims 2a and 2b's tables from the controls' measurements: the blocks against the null ensembles
    (`controls_null_blocks`), the decomposition with its intervals (`controls_decomposition`) and at every band
    (`controls_decomposition_bands`: each band's window se from the bands table as measured, where one is given, else
    the widest band's), claim 2a's summary
    (`controls_learned`, where not written yet)."""
    nulls, matrix, dec = (tables.get(n) for n in ("controls_weight_nulls", "controls_cross_matrix",
                                                  "controls_decomposition"))  # fmt: skip
    if nulls is None or matrix is None or dec is None:
        return {}
    blocks = null_blocks(nulls)
    dec = dec[[c for c in dec.columns if c in TABLES["controls_decomposition"].columns]]  # a former linrec's: dropped
    out = {
        "controls_null_blocks": blocks,
        "controls_decomposition": decomposition_intervals(dec, matrix, blocks),
        "controls_decomposition_bands": band_table(dec, matrix, tables.get("controls_decomposition_bands")),
    }
    init, learned = tables.get("controls_random_init_summary"), tables.get("controls_learned")
    if init is not None and learned is None:
        learned = out["controls_learned"] = learned_summary(init, blocks)
    return out


CONTROLS = Summary("the controls' summaries", ("controls_weight_nulls", "controls_cross_matrix",
                   "controls_decomposition", "controls_random_init_summary", "controls_learned",
                   "controls_inputs_summary", "controls_cross_feed_summary", "controls_decomposition_bands"),
                   summarise, as_written=("controls_decomposition", "controls_decomposition_bands"),
                   where_present=("controls_learned",))  # fmt: skip


def run(p: Profile) -> ControlsResult:
    """Every control on every model (the module docstring): its tables, written under `p.results_dir`."""
    caps = captures(p)
    profiles = random_init_profiles(caps)
    init_summary = random_init_summary(profiles, p.init_seeds)
    loaded = {m: load_model(m, device=p.device) for m in caps.models}
    scores = MapScores()  # each (FFN, rows) pair is scored once, whichever control asks for it first
    inputs = pd.concat(
        [input_controls(caps.trained[m], loaded[m], n_rows=p.control_rows, seed=p.seed, scores=scores)
         for m in caps.models],
        ignore_index=True,
    )  # fmt: skip
    input_table = input_control_summary(inputs)
    cross, cross_summary = cross_feeding(p, caps, loaded, scores) if p.cross_feeding else (None, None)
    draws = NullDraws(p.null_draws, p.null_draws)
    kw = dict(band=p.cross_band, n_rows=p.decomposition_rows, seed=p.seed, scores=scores)
    measured = {m: inputs_or_weights(caps.trained[m], loaded[m], draws, **kw) for m in caps.models}
    nulls = pd.concat([r.nulls for r in measured.values()], ignore_index=True)
    matrix = pd.concat([r.matrix for r in measured.values()], ignore_index=True)
    measured_tables = {"controls_weight_nulls": nulls, "controls_cross_matrix": matrix,
                       "controls_decomposition": decomposition_table(measured, null_blocks(nulls), p.n_boot, p.seed),
                       "controls_random_init_summary": init_summary, "controls_inputs_summary": input_table,
                       "controls_cross_feed_summary": cross_summary,
                       "controls_decomposition_bands": pd.concat([band_windows(r, p.n_boot, p.seed)
                                                                  for r in measured.values()])}  # fmt: skip
    s = summarise({k: t for k, t in measured_tables.items() if t is not None}, p)
    return ControlsResult(
        controls_random_init=profiles,
        controls_random_init_summary=init_summary,
        controls_inputs=inputs,
        controls_inputs_summary=input_table,
        controls_cross_feed=cross,
        controls_cross_feed_summary=cross_summary,
        controls_weight_nulls=nulls,
        controls_cross_matrix=matrix,
        controls_null_blocks=s["controls_null_blocks"],
        controls_decomposition=s["controls_decomposition"],
        controls_decomposition_bands=s["controls_decomposition_bands"],
        controls_learned=s["controls_learned"],
    ).write(p.results_dir)
