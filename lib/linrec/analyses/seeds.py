"""The seeds experiment, measured: R²_lin per block at every checkpoint of every trained run, and the distances
between profiles that decide whether the profile is learned, individual to a run, or set by the architecture (in
level or in shape).

Every checkpoint is captured on its run's measuring documents (`linrec.inputs.training`: never trained on; the same
text and
tokenizer for every run, so the same windows), moments only. A profile is the vector of held-out R²_lin over blocks.

**Distance** between two profiles a, b of the same blocks: the mean absolute difference per block,
D = mean_i |R²_a,i − R²_b,i|, and beside it the profile correlation (Pearson r over blocks). Its interval leaves
each held-out window out of both profiles in turn (both are measured on the same windows), so it is paired: a jackknife
with a t quantile (`linrec.stats.jackknife`), whose coverage is measured in `linrec.analyses.calibration`.

**Level and shape** (the convention of `linrec.claims.rules`): D mixes a shift of the whole profile with a change of
its form. Beside it, each with the same paired interval: the level L = mean_i (R²_a,i − R²_b,i) (signed: a above b is
positive) and the shape S = mean_i |(R²_a,i − mean R²_a) − (R²_b,i − mean R²_b)|, the distance once each profile is
centred on its own mean. |L| ≤ D ≤ |L| + S.

**Noise floor.** D is never 0 between two measurements, even of the same weights: each R²_lin carries the sampling
noise of its held-out windows. The floor of a checkpoint is the distance between its profile measured on two disjoint
halves of its held-out windows (random halvings, averaged): the distance that measurement alone produces. Two
profiles measured on all windows carry less noise than two half-window measurements, so the floor is on the generous
side for "differs beyond noise" and on the strict side for "agrees within noise". A comparison's floor is the larger
of its two checkpoints' floors. The level and the shape have floors of their own, measured the same way (|L| and S
between the two halves).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import pandas
import pandas as pd

from linrec.analyses.perplexity import perplexity
from linrec.analyses.recoverability import PARTS, ceiling_table  # PARTS: 2a's distance, level and shape
from linrec.analyses.swap import capture_windows
from linrec.base.errors import LinrecError
from linrec.base.progress import bar as progress_bar
from linrec.base.registry import TABLES
from linrec.collect.capture import get_capture
from linrec.collect.config import CaptureConfig, CaptureRun
from linrec.inputs.models import load_model
from linrec.stats.heldout import r2_of_counts
from linrec.stats.jackknife import jackknife


def _held(capture) -> list:
    held = getattr(capture, "heldout", None)
    if held is None or any(h is None for h in held):
        raise LinrecError("profile distances need a capture with held-out sums on every block; capture it again")
    return held


def profile(capture, counts: np.ndarray | None = None) -> np.ndarray:
    """R²_lin per block ([L]), or per block for each row of window multiplicities `counts` [B, W] ([B, L])."""
    held = _held(capture)
    if counts is None:
        return np.array([h.r2() for h in held])
    return np.stack([r2_of_counts(h, counts) for h in held], axis=1)


FLOORS = {"distance": "floor", "level": "level_floor", "shape": "shape_floor"}  # and the column of each one's floor


def _corr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a - a.mean(axis=-1, keepdims=True)
    b = b - b.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (a * b).sum(axis=-1) / np.sqrt((a * a).sum(axis=-1) * (b * b).sum(axis=-1))


def _n_windows(*captures) -> int:
    ns = {_held(c)[0].n_windows for c in captures}
    if len(ns) != 1:
        raise LinrecError(
            f"the profiles were measured on different numbers of held-out windows ({sorted(ns)}); a paired distance "
            "needs the same windows: capture every checkpoint on its run's measuring text with the same settings"
        )
    return ns.pop()


def noise_floors(capture, n_splits: int = 200, seed: int = 0) -> dict[str, float]:
    """The floor of each part of a comparison (`FLOORS`): the raw distance, |level| and shape between one
    checkpoint's profile on two disjoint random halves of its held-out windows, averaged over `n_splits` halvings
    (module docstring)."""
    w = _n_windows(capture)
    if w < 4:
        raise LinrecError(f"a noise floor needs at least 4 held-out windows, the capture has {w}; use more tokens")
    a, b = halves(capture, n_splits, np.random.default_rng([seed, 38]))
    return {FLOORS[k]: float(np.nanmean(np.abs(f(a, b)))) for k, f in PARTS.items()}


def halves(capture, n_splits: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One capture's profile on two disjoint random halves of its held-out windows, `n_splits` times: ([n_splits, L],
    [n_splits, L]), what measurement alone makes two profiles of the same weights differ by."""
    w = _n_windows(capture)
    half = np.zeros((n_splits, w))
    for k in range(n_splits):
        half[k, rng.permutation(w)[: w // 2]] = 1.0
    return profile(capture, half), profile(capture, 1.0 - half)


def compare(a, b, level: float = 0.95, floor: float | None = None, seed: int = 0) -> dict:
    """Distance, level, shape and profile correlation between captures `a` and `b` (same blocks, same held-out
    windows), each with its paired interval — each held-out window left out of both profiles in turn, a jackknife
    with a t quantile (`linrec.stats.jackknife`; coverage measured in `linrec.analyses.calibration`) — and the noise
    floors (each the larger of the two checkpoints' floors, `seed` drawing their halvings; the raw one `floor` as
    given, if given): `distance`, `distance_lo`, `distance_hi`, `level`, `level_lo`, `level_hi`, `level_floor`,
    `shape`, `shape_lo`, `shape_hi`, `shape_floor`, `corr`, `corr_lo`, `corr_hi`, `floor`, `beyond_noise` (the
    distance's lower bound above the floor) and `within_noise` (its upper bound at or below it)."""

    if a.n_blocks != b.n_blocks:
        raise LinrecError(f"the profiles have {a.n_blocks} and {b.n_blocks} blocks; compare runs of one architecture")

    def parts(counts: np.ndarray) -> np.ndarray:
        pa, pb = profile(a, counts), profile(b, counts)
        return np.stack([f(pa, pb) for f in PARTS.values()] + [_corr(pa, pb)], axis=1)

    j = jackknife(parts, _n_windows(a, b))
    lo, hi = j.interval(level)
    fa, fb = noise_floors(a, seed=seed), noise_floors(b, seed=seed)
    floors = {k: max(fa[k], fb[k]) for k in fa}
    if floor is not None:
        floors["floor"] = float(floor)
    out = {}
    for n, k in enumerate([*PARTS, "corr"]):
        out.update({k: float(j.point[n]), f"{k}_lo": float(lo[n]), f"{k}_hi": float(hi[n])})
    out.update(floors)
    out.update({"beyond_noise": bool(out["distance_lo"] > floors["floor"]),
                "within_noise": bool(out["distance_hi"] <= floors["floor"])})  # fmt: skip
    return out


def from_profiles(table: pandas.DataFrame, profiles: pandas.DataFrame) -> pandas.DataFrame:
    """`table` (comparisons or the distance curve as stored) with the points of the level and the shape computed from
    the stored profiles (`checkpoint_table` rows; run "x step 0" is run x at step 0) where it lacks them; an
    interval or floor it lacks stays NaN: those need the held-out windows (a rerun of notebook 08 writes them)."""
    out = table.copy()
    for k in ("level", "shape"):
        for c in (k, f"{k}_lo", f"{k}_hi", FLOORS[k]):
            out[c] = out[c] if c in out else np.nan
    wide = profiles.pivot_table(index=["run", "step"], columns="block", values="r2_lin")

    def prof(name: str, step: int) -> np.ndarray:
        run, _, at = str(name).partition(" step ")
        return wide.loc[(run, int(at) if at else int(step))].to_numpy()

    for i, r in out.iterrows():
        a, b = prof(r["a"], r["step"]), prof(r["b"], r["step"])
        for k in ("level", "shape"):
            if not np.isfinite(r[k]):
                out.loc[i, k] = float(PARTS[k](a, b))
    return out


# ---- the experiment ------------------------------------------------------------------------------------------------
def capture_checkpoints(
    run,
    config: CaptureConfig,
    capture_run: CaptureRun = CaptureRun(),
    progress: bool = True,
    final_rows: int = 0,
    last_only: bool = False,
) -> dict[int, object]:
    """{step: capture} of every checkpoint of `run` (`linrec.inputs.training.TrainedRun`) on its measuring text, with
    `config`'s settings (its model and corpus replaced by each checkpoint and the run's measuring text), run as
    `capture_run` says: moments only, but for the last checkpoint with `final_rows` sampled rows per block where that
    is > 0 (the probes need them; the moments, and so R²_lin, are the same either way). Cached like every capture.
    `last_only`: the last checkpoint's alone."""

    last = run.steps[-1]
    steps = [last] if last_only else run.steps
    return {
        step: get_capture(replace(config, model=str(run.checkpoint(step)), corpus=run.measure_corpus,
                                  sample_rows=final_rows if step == last else 0), capture_run, progress=False)
        for step in progress_bar(steps, desc=f"measure {run.config.name}", unit="checkpoint", disable=not progress)
    }  # fmt: skip


def checkpoint_table(run, captures: Mapping[int, object]) -> pandas.DataFrame:
    """One row per checkpoint and block: the run's settings, the step, the tokens seen by then, R²_lin with its
    window interval (`linrec.analyses.recoverability.ceiling_table`) and the checkpoint's held-out
    perplexity on the
    measuring windows' held-out split (`ppl_test`), and the training loss around that step (`train_loss`, mean of
    the 20 steps before it; NaN at step 0)."""

    c = run.config
    log = run.log
    rows = []
    for step, cap in captures.items():
        loaded = load_model(str(run.checkpoint(step)))
        ppl = perplexity(loaded.model, capture_windows(cap, loaded.tokenizer).split("test"))
        before = log[(log["step"] <= step) & (log["step"] > step - 20)]["loss"] if step else []
        t = ceiling_table(cap)[["block", "r2_lin", "r2_lo", "r2_hi", "n_test_windows"]]
        rows.append(
            t.assign(
                run=c.name,
                mlp=c.layout,  # the column's name from before layouts: the run's layout
                init_seed=c.init_seed,
                data_seed=c.data_seed,
                step=step,
                tokens_seen=step * c.batch_size * c.seq_len,
                ppl_test=ppl,
                train_loss=float(np.mean(before)) if len(before) else np.nan,
            )
        )
    cols = ["run", "mlp", "init_seed", "data_seed", "step", "tokens_seen", "block", "r2_lin", "r2_lo", "r2_hi",
            "ppl_test", "train_loss", "n_test_windows"]  # fmt: skip
    return pd.concat(rows, ignore_index=True)[cols]


def pairs(configs: Sequence) -> list[tuple[str, str, str]]:
    """The comparisons of the experiment as (kind, run a, run b) over `linrec.inputs.training.TrainConfig`s that
    differ in one thing: "seed" (the init seed), "data order" (the order the training windows are visited in),
    "text" (the training text itself) and "variant" (the layout: GELU against SwiGLU, or GPT-2, Pythia and llama
    against each other)."""
    out = []
    for i, a in enumerate(configs):
        for b in configs[i + 1 :]:
            same = {"seed": a.init_seed == b.init_seed, "data order": a.data_seed == b.data_seed,
                    "text": getattr(a, "text", "") == getattr(b, "text", ""),
                    "variant": a.layout == b.layout}  # fmt: skip
            differs = [k for k, v in same.items() if not v]
            if len(differs) == 1:
                out.append((differs[0], a.name, b.name))
    return out


def comparisons(configs: Sequence, captures: Mapping[str, Mapping[int, object]], seed: int = 0) -> pandas.DataFrame:
    """Every comparison of the experiment (`compare`), one row each: "trained vs init" (each run's last checkpoint
    against its own step 0), then the `pairs` at the last checkpoint. `captures`: {run name: {step: capture}}."""

    rows = []
    for c in configs:
        caps = captures[c.name]
        last = max(caps)
        rows.append({"kind": "trained vs init", "a": c.name, "b": f"{c.name} step 0", "step": last,
                     **compare(caps[last], caps[0], seed=seed)})  # fmt: skip
    for kind, a, b in pairs(configs):
        last = max(captures[a])
        if last != max(captures[b]):
            raise LinrecError(f"runs {a} and {b} end at different steps; compare runs of the same length")
        c = compare(captures[a][last], captures[b][last], seed=seed)
        rows.append({"kind": kind, "a": a, "b": b, "step": last, **c})
    return pd.DataFrame(rows)


def distance_over_training(
    configs: Sequence, captures: Mapping[str, Mapping[int, object]], kind: str = "seed", seed: int = 0
) -> pandas.DataFrame:
    """The distance of each `kind` pair (`pairs`) at every checkpoint step they share, with its interval and floor:
    when in training the runs' profiles part (or meet). No row, but the table's columns, where there is no such pair
    (a profile of one run, or one init seed)."""

    rows = []
    for k, a, b in pairs(configs):
        if k != kind:
            continue
        for step in sorted(set(captures[a]) & set(captures[b])):
            rows.append({"kind": k, "a": a, "b": b, "step": step,
                         **compare(captures[a][step], captures[b][step], seed=seed)})  # fmt: skip
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=list(TABLES["training_distance_curve"].columns))


ONSET_DISTANCE = 0.05  # "the shape has appeared": every later checkpoint within this mean |ΔR²_lin| of the last one


def approach_to_final(profiles: pandas.DataFrame, within: float = ONSET_DISTANCE) -> pandas.DataFrame:
    """Per run and checkpoint (`checkpoint_table` rows): the mean |R²_lin(step) − R²_lin(last step)| per block and
    the correlation over blocks with the last profile; `onset`: the first step from which this and every later
    checkpoint stay within `within` of the last profile (the same for every row of a run)."""

    rows = []
    for run, t in profiles.groupby("run", sort=False):
        wide = t.pivot(index="step", columns="block", values="r2_lin").sort_index()
        last = wide.iloc[-1].to_numpy()
        dist = np.abs(wide.to_numpy() - last).mean(axis=1)
        corr = _corr(wide.to_numpy(), last[None, :])
        late = np.minimum.accumulate((dist <= within)[::-1])[::-1]  # this and every later step within
        onset = int(wide.index[int(np.argmax(late))])
        rows += [{"run": run, "step": int(s), "distance_to_final": float(d), "corr_with_final": float(c),
                  "onset": onset} for s, d, c in zip(wide.index, dist, corr)]  # fmt: skip
    return pd.DataFrame(rows)
