"""What sets a trained profile: the layout, the training text or the run's own draws (claim 2a as the paper states it).

The runs of notebook 08's zoo (`linrec.inputs.training.profile_configs`) differ in one thing at a time: the layout
(GPT-2, Pythia, llama), the training text, the init seed, the data order. Each run's profile is its last checkpoint's
held-out R²_lin per block, all measured on the same windows (`shared_texts`). Two parts, the convention of
`linrec.claims.rules`: the **level** of a profile is its mean over blocks, its **shape** the profile centred on that
mean.

**Distances** (`distance_table`): for each kind of pair, the mean over its pairs of the shape distance (mean over blocks
of |Δ centred R²_lin|, `linrec.analyses.seeds`' S) and of the level distance (|Δ mean R²_lin|). The kinds:

- a pair of layouts (e.g. "gpt2 vs pythia"): the two layouts, the same text, any init seeds (two layouts share no
  weights, so the seeds are independent draws either way), the first data order;
- "seed": the same layout and text, different init seeds, the first data order;
- "data order": the same layout, text and init seed, different data orders;
- "text": the same layout, different texts *and* init seeds (so, like a seed pair, the two runs share no draw).

**Variance decomposition** (`components`, method of moments on squared distances). Model: a run's profile is its
layout's effect + its text's effect + its own draws (init seed, data order) + measurement noise (its held-out
windows). With d²(a, b) the squared distance (level: (Δ mean)²; shape: mean over blocks of (Δ centred R²_lin)²),
the mean d² of each kind of pair estimates

- seed pairs: W = 2·(σ²_seed + σ²_noise);
- layout pairs: W + the mean squared difference between the two layouts' effects;
- text pairs: W + the squared difference between the texts' effects;

and σ²_noise, each run's measurement noise, is measured on the run itself (`measurement_noise`: the squared distance
between its profiles on two random halves of its held-out windows is 4 σ²_noise on average, each half holding twice
the noise of the whole). The components, in units of half a squared distance: layout = (B_layout − W) / 2, text =
(B_text − W) / 2, seed = W / 2 − mean σ²_noise, residual = mean σ²_noise. Twice their sum is the expected d² between
two runs that differ in layout, text, draws and windows; a component's **share** is its part of that sum (negative
estimates count as 0 in the shares). The data-order runs are seed pairs' kin (a run's draws) and are shown in the
distance table only.

**Intervals.** The layouts and texts are fixed (these three layouts, these two texts); what varies is each run's
draws and windows. Every number is a mean over pairs of runs (a U-statistic), so its interval is a delete-one-run
jackknife (Arvesen 1969): point ± t_{n−1} · SE over the n runs. A kind with a single pair (one data-order run) has no
jackknife; its interval is its pair's window interval from `linrec.analyses.seeds.compare`, passed in
`comparisons`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.stats import t as student

from linrec.analyses.seeds import halves
from linrec.base.errors import LinrecError
from linrec.inputs.layouts import block_params

FACTOR_NAMES = ("layout", "text", "seed", "residual")  # the decomposition's components, in order
PARTS = ("level", "shape")


def run_factors(configs: Sequence) -> pd.DataFrame:
    """One row per run (`linrec.inputs.training.TrainConfig`s): its name, layout, text, init seed and data order."""
    return pd.DataFrame([{"run": c.name, "layout": c.layout, "text": c.text, "init_seed": c.init_seed,
                          "data_seed": c.data_seed} for c in configs])  # fmt: skip


def block_parameters(configs: Sequence) -> dict[str, int]:
    """{run: parameters in its blocks} (`linrec.inputs.layouts.block_params`, counted on the built model)."""

    by_layout: dict = {}
    return {c.name: by_layout.setdefault((c.layout, c.d_model, c.n_layers, c.d_ff), block_params(c)) for c in configs}


def final_profiles(profiles: pd.DataFrame) -> pd.DataFrame:
    """[run × block] R²_lin at each run's last checkpoint (`linrec.analyses.seeds.checkpoint_table` rows), runs in
    order of first appearance."""
    last = profiles.groupby("run", sort=False)["step"].transform("max")
    t = profiles[profiles["step"] == last]
    wide = t.pivot(index="run", columns="block", values="r2_lin")
    return wide.loc[list(dict.fromkeys(t["run"]))]


def _centred(p: np.ndarray) -> np.ndarray:
    return p - p.mean(axis=-1, keepdims=True)


def squared_distance(a: np.ndarray, b: np.ndarray, part: str) -> np.ndarray:
    """d² between profiles a and b (over the last axis): (Δ mean)² for the level, mean (Δ centred)² for the shape."""
    if part == "level":
        return (a.mean(axis=-1) - b.mean(axis=-1)) ** 2
    return ((_centred(a) - _centred(b)) ** 2).mean(axis=-1)


def distance(a: np.ndarray, b: np.ndarray, part: str) -> np.ndarray:
    """The distances of `linrec.analyses.seeds`: |Δ mean| for the level, mean |Δ centred| for the shape."""
    if part == "level":
        return np.abs(a.mean(axis=-1) - b.mean(axis=-1))
    return np.abs(_centred(a) - _centred(b)).mean(axis=-1)


def measurement_noise(capture, n_splits: int = 200, seed: int = 0) -> dict[str, float]:
    """σ²_noise of one run's level and shape (module docstring): a quarter of the mean squared distance between its
    profiles on two disjoint random halves of its held-out windows, over `n_splits` halvings."""

    held = getattr(capture, "heldout", None)
    if held is None or any(h is None for h in held):
        raise LinrecError("measurement noise needs a capture with held-out sums on every block; capture it again")
    w = held[0].n_windows
    if w < 4:
        raise LinrecError(f"measurement noise needs at least 4 held-out windows, the capture has {w}; use more tokens")
    a, b = halves(capture, n_splits, np.random.default_rng([seed, 47]))
    return {part: float(np.nanmean(squared_distance(a, b, part)) / 4) for part in PARTS}


def pair_kinds(factors: pd.DataFrame) -> pd.DataFrame:
    """Every pair of runs that one kind of the module docstring compares: columns a, b (row positions in
    `factors`), kind ("<layout> vs <layout>" in the order the layouts first appear, "seed", "data order", "text") and
    group ("layout" for the layout pairs, else the kind)."""
    f = factors.reset_index(drop=True)
    first_data = f["data_seed"].iloc[0]
    order = {lay: k for k, lay in enumerate(dict.fromkeys(f["layout"]))}
    rows = []
    for i in range(len(f)):
        for j in range(i + 1, len(f)):
            a, b = f.iloc[i], f.iloc[j]
            same = {k: a[k] == b[k] for k in ("layout", "text", "init_seed", "data_seed")}
            first = a["data_seed"] == first_data and b["data_seed"] == first_data
            kind = None
            if not same["layout"] and same["text"] and first:
                x, y = sorted((a["layout"], b["layout"]), key=order.get)
                kind, group = f"{x} vs {y}", "layout"
            elif same["layout"] and same["text"] and not same["init_seed"] and first:
                kind = group = "seed"
            elif same["layout"] and same["text"] and same["init_seed"] and not same["data_seed"]:
                kind = group = "data order"
            elif same["layout"] and not same["text"] and not same["init_seed"] and first:
                kind = group = "text"
            if kind is not None:
                rows.append({"a": i, "b": j, "kind": kind, "group": group})
    return pd.DataFrame(rows, columns=["a", "b", "kind", "group"])


def _check(wide: pd.DataFrame, factors: pd.DataFrame) -> np.ndarray:
    if len(factors) < 2:
        raise LinrecError(f"{len(factors)} run(s) to compare; the distances and the decomposition need two or more")
    missing = [r for r in factors["run"] if r not in wide.index]
    if missing:
        raise LinrecError(f"no final profile for run(s) {', '.join(missing)}; measure every run of the profile")
    p = wide.loc[list(factors["run"])].to_numpy(dtype=np.float64)
    if not np.isfinite(p).all():
        raise LinrecError("a final profile has a missing block; every run must be measured on every block")
    return p


def _component_values(p: np.ndarray, pairs: pd.DataFrame, noise: np.ndarray, keep: np.ndarray) -> dict:
    """{(part, name): value} of the decomposition on the runs where `keep` is True (the jackknife drops one)."""
    use = pairs[keep[pairs["a"].to_numpy()] & keep[pairs["b"].to_numpy()]]
    out = {}
    for part in PARTS:
        d2 = squared_distance(p[use["a"].to_numpy()], p[use["b"].to_numpy()], part)
        mean = {g: float(d2[(use["group"] == g).to_numpy()].mean()) if (use["group"] == g).any() else np.nan
                for g in ("seed", "layout", "text")}  # fmt: skip
        m = float(noise[keep, PARTS.index(part)].mean())
        comp = {"layout": (mean["layout"] - mean["seed"]) / 2, "text": (mean["text"] - mean["seed"]) / 2,
                "seed": mean["seed"] / 2 - m, "residual": m}  # fmt: skip
        pos = {k: max(v, 0.0) for k, v in comp.items() if np.isfinite(v)}
        total = sum(pos.values())
        for k, v in comp.items():
            out[(part, k, "component")] = v
            out[(part, k, "share")] = pos[k] / total if k in pos and total > 0 else np.nan
    return out


def _jackknife(fn, n: int) -> tuple[dict, dict]:
    """(point, standard error) of every number `fn(keep)` gives, the standard error by the delete-one jackknife over
    the n runs (NaN where a replicate is undefined)."""
    keep = np.ones(n, dtype=bool)
    point = fn(keep)
    reps = []
    for r in range(n):
        keep = np.ones(n, dtype=bool)
        keep[r] = False
        reps.append(fn(keep))
    se = {}
    for k in point:
        v = np.array([rep[k] for rep in reps], dtype=np.float64)
        se[k] = float(np.sqrt((n - 1) / n * ((v - v.mean()) ** 2).sum())) if np.isfinite(v).all() else np.nan
    return point, se


def components(wide: pd.DataFrame, factors: pd.DataFrame, noise: Mapping[str, Mapping[str, float]] | pd.DataFrame,
               level: float = 0.95) -> pd.DataFrame:  # fmt: skip
    """The variance decomposition of the module docstring: one row per part (level, shape) and component (layout,
    text, seed, residual) with `component` (half a squared distance) and its `share`, each with its delete-one-run
    jackknife interval (`_lo`, `_hi`; a share's clipped to [0, 1], where its point lies, which can only raise its
    coverage; a component is an unbiased difference and can be below 0), `n_runs` and `n_pairs` (the pairs behind
    it). `wide`: `final_profiles`;
    `factors`: `run_factors`; `noise`: {run: `measurement_noise`} or a table with columns run, noise_level,
    noise_shape."""

    p = _check(wide, factors)
    if isinstance(noise, pd.DataFrame):
        noise = {r["run"]: {"level": r["noise_level"], "shape": r["noise_shape"]} for r in noise.to_dict("records")}
    nz = np.array([[noise[r][part] for part in PARTS] for r in factors["run"]], dtype=np.float64)
    pairs = pair_kinds(factors)
    n = len(factors)
    if not (pairs["group"] == "seed").any():
        raise LinrecError("the decomposition needs runs of one layout and text with two init seeds or more")
    point, se = _jackknife(lambda keep: _component_values(p, pairs, nz, keep), n)
    q = float(student.ppf(0.5 + level / 2, n - 1))
    count = {"layout": "layout", "text": "text", "seed": "seed"}
    rows = []
    for part in PARTS:
        for name in FACTOR_NAMES:
            row = {"part": part, "factor": name, "n_runs": n,
                   "n_pairs": int((pairs["group"] == count[name]).sum()) if name in count else n}  # fmt: skip
            for what in ("component", "share"):
                v, s = point[(part, name, what)], se[(part, name, what)]
                lo, hi = v - q * s, v + q * s
                if what == "share":  # a share lies in [0, 1], as its point estimate does
                    lo, hi = max(lo, 0.0), min(hi, 1.0)
                row.update({what: v, f"{what}_lo": lo, f"{what}_hi": hi})
            rows.append(row)
    return pd.DataFrame(rows)


def distance_table(wide: pd.DataFrame, factors: pd.DataFrame, comparisons: pd.DataFrame | None = None,
                   level: float = 0.95) -> pd.DataFrame:  # fmt: skip
    """Per kind of pair (`pair_kinds`; layout pairs first): `n_pairs`, the mean shape and level distances
    (`distance`: mean |Δ centred R²_lin|, |Δ mean R²_lin|) with their intervals, `interval` saying which: "runs"
    (delete-one-run jackknife) or, for a kind of one pair, "windows" (that pair's row of `comparisons`,
    `linrec.analyses.seeds.comparisons`, whose level interval is of the signed level and is shown as |level|'s
    interval) or "none" (no comparisons given)."""

    p = _check(wide, factors)
    pairs = pair_kinds(factors)
    n = len(factors)
    q = float(student.ppf(0.5 + level / 2, n - 1))
    kinds = list(dict.fromkeys(pairs.sort_values("group", key=lambda g: g != "layout", kind="stable")["kind"]))

    def values(keep: np.ndarray) -> dict:
        use = pairs[keep[pairs["a"].to_numpy()] & keep[pairs["b"].to_numpy()]]
        out = {}
        for kind in kinds:
            u = use[use["kind"] == kind]
            for part in PARTS:
                d = distance(p[u["a"].to_numpy()], p[u["b"].to_numpy()], part)
                out[(kind, part)] = float(d.mean()) if len(d) else np.nan
        return out

    point, se = _jackknife(values, n)
    rows = []
    for kind in kinds:
        u = pairs[pairs["kind"] == kind]
        row = {"kind": kind, "group": u["group"].iloc[0], "n_pairs": len(u), "interval": "runs"}
        for part in PARTS:
            v, s = point[(kind, part)], se[(kind, part)]
            row.update({part: v, f"{part}_lo": v - q * s, f"{part}_hi": v + q * s})
        if len(u) == 1:
            row.update(_window_interval(factors, u.iloc[0], comparisons))
        rows.append(row)
    return pd.DataFrame(rows)


def _window_interval(factors: pd.DataFrame, pair: pd.Series, comparisons: pd.DataFrame | None) -> dict:
    """The interval of a kind with one pair: its row of `comparisons` (either order of the runs)."""
    a, b = factors["run"].iloc[int(pair["a"])], factors["run"].iloc[int(pair["b"])]
    out = {"interval": "none", "shape_lo": np.nan, "shape_hi": np.nan, "level_lo": np.nan, "level_hi": np.nan}
    if comparisons is None:
        return out
    c = comparisons[((comparisons["a"] == a) & (comparisons["b"] == b)) | ((comparisons["a"] == b) &
                                                                          (comparisons["b"] == a))]  # fmt: skip
    if c.empty:
        return out
    r = c.iloc[0]
    lo, hi = sorted((abs(float(r["level_lo"])), abs(float(r["level_hi"]))))
    if float(r["level_lo"]) <= 0 <= float(r["level_hi"]):  # the signed interval spans 0: |level| may be 0
        lo = 0.0
    return {"interval": "windows", "shape_lo": float(r["shape_lo"]), "shape_hi": float(r["shape_hi"]),
            "level_lo": lo, "level_hi": hi}  # fmt: skip
