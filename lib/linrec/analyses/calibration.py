"""How often the intervals the verdicts read cover the truth, measured by simulation (issue 45).

Every interval a verdict reads is a procedure applied to one data set; its nominal level (95 %) is a promise about
many data sets. This module keeps the promise checkable: it draws data sets from a model with a known answer and the
dependence the real data show, applies the same procedure the verdicts use, and counts.

- `correlation_coverage`: a correlation across ordered blocks (`linrec.analyses.uncertainty.correlation_test`,
  claims 3, 6b, 7b and routing). Each block series is AR(1) through depth with coefficient φ (neighbouring blocks
  share the residual stream), the pair correlated at ρ at equal depth; optionally several models pooled with a model
  effect. It returns the coverage of the 95 % and 90 % intervals and how often each outcome of the equivalence
  test comes out (at ρ = 0: "effect" is a false positive, "no effect" the power the report states).
- the window intervals (`r2_coverage`, `move_coverage`, `seeds_coverage`, `shares_coverage`, `delta_ppl_coverage`,
  `routable_coverage`; `window_table` runs them all): statistics of held-out windows — the held-out R² of a block's
  fitted map, a move between two blocks, the seeds experiment's level / shape / distance, claim 5's shares, ΔPPL,
  routing's routable share — on planted blocks with known population R² (`planted_heldout`: windows whose
  positions are correlated), through the project's own procedures; ΔPPL also at a run's own per-window losses
  resampled (`own_coverage`).
- `refit_coverage`: the same interval read as one for the block's R²_lin, the held-out R² a refit on other text of
  the same size would score (`PlantedBlock`: planted train rows at the run's rows per parameter, width and residual
  ICC; the truth `refit_truth`, by Monte Carlo). A narrow block's refits spread widely, and there it covers less than
  the floor; at a real block's width about as often as its own fitted map's R², the interval's name.
- `dependence`: a real per-block series' AR(1) coefficient (lag-1 autocorrelation, bias-corrected), to simulate at.

`linrec.analyses.coverage.coverage_table` puts one row per procedure and setting into the report's methods table;
the tests run small versions and fail below 0.93 for a nominal 0.95.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from types import SimpleNamespace

import numpy as np
import pandas as pd

from linrec.analyses.parallel import run_processes
from linrec.analyses.recoverability import corpus_shape_level, profile_replicates, two_way_shares
from linrec.analyses.routing import SHARES, routable_share
from linrec.analyses.seeds import PARTS, compare
from linrec.analyses.uncertainty import (
    EFFECT,
    NO_EFFECT,
    SWAP_LEVEL,
    autocorrelations,
    correlation_test,
    delta_ppl_batch,
)
from linrec.stats import N_BOOT
from linrec.stats.ceiling import AffineFit, fit_affine
from linrec.stats.heldout import HeldOut, bootstrap_r2, r2_interval
from linrec.stats.jackknife import from_replicates, skewness
from linrec.stats.moments import Moments

NOMINAL = 0.95
COVERAGE_FLOOR = 0.93  # what the tests require of a nominal 95 % interval (a simulation's own error included)


def ar1(n: int, phi: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """[size, n] stationary AR(1) series with unit variance and lag-1 correlation `phi`."""
    e = rng.standard_normal((size, n))
    x = np.empty((size, n))
    x[:, 0] = e[:, 0]
    s = np.sqrt(1 - phi**2)
    for t in range(1, n):
        x[:, t] = phi * x[:, t - 1] + s * e[:, t]
    return x


def dependence(x) -> float:
    """The AR(1) coefficient of an ordered series: its lag-1 autocorrelation (Kendall's bias correction), in
    [0, 0.95]; 0 for fewer than 4 points."""
    x = np.asarray(x, dtype=np.float64)
    x = x[np.isfinite(x)]
    if len(x) < 4 or np.ptp(x) == 0:
        return 0.0
    return float(np.clip(autocorrelations(x, 1)[0], 0.0, 0.95))


def correlation_coverage(
    n: int,
    phi: float = 0.0,
    rho: float = 0.0,
    kind: str = "spearman",
    models: int = 1,
    reps: int = 1000,
    seed: int = 0,
) -> dict:
    """The coverage of `correlation_test`'s intervals on `reps` simulated data sets of `models` × `n` blocks, each
    series AR(1) at `phi`, the pair correlated at `rho` (for "partial", the covariate is the distance to the nearer
    end, as in claim 6b, and does not enter the data: its partial correlation is ρ too up to rank effects, so only
    ρ = 0 is simulated). Returns coverage of the 95 % and 90 % intervals (of ρ; Spearman's population value for a
    Gaussian pair is (6/π)·asin(ρ/2)), and the share of each outcome."""
    if kind == "partial" and rho != 0:
        raise ValueError("the partial correlation is simulated at rho = 0 only")
    rng = np.random.default_rng([seed, n, int(phi * 1000), int(rho * 1000), models])
    truth = rho if kind == "pearson" else 6 / np.pi * np.arcsin(rho / 2)
    depth = np.minimum(np.arange(n), n - 1 - np.arange(n)).astype(float)
    groups = np.repeat(np.arange(models), n) if models > 1 else None
    cover95 = cover90 = 0
    outcomes = {EFFECT: 0, NO_EFFECT: 0, "inconclusive": 0}
    a = ar1(n, phi, reps * models, rng).reshape(reps, models * n)
    u = ar1(n, phi, reps * models, rng).reshape(reps, models * n)
    b = rho * a + np.sqrt(1 - rho**2) * u
    z = np.tile(depth, models)
    for k in range(reps):
        c = correlation_test(a[k], b[k], z if kind == "partial" else None, kind=kind, groups=groups)
        cover95 += c["lo"] <= truth <= c["hi"]
        cover90 += c["lo90"] <= truth <= c["hi90"]
        outcomes[c["outcome"]] += 1
    return {
        "procedure": f"{kind} correlation, Fisher z at Bartlett's effective n",
        "n_blocks": n,
        "models": models,
        "phi": phi,
        "rho": rho,
        "reps": reps,
        "coverage95": cover95 / reps,
        "coverage90": cover90 / reps,
        "p_effect": outcomes[EFFECT] / reps,
        "p_no_effect": outcomes[NO_EFFECT] / reps,
        "p_inconclusive": outcomes["inconclusive"] / reps,
    }


class _Planted:
    """A stand-in for a capture (`linrec.collect.capture.Capture`) with planted held-out sums: what the interval
    code reads (`heldout`, `heldout_rest`, `n_blocks`, `config.corpus`), so the simulations run the project's own
    procedures, not copies of them."""

    def __init__(self, held: list, corpus: str = "planted"):
        self.heldout, self.heldout_rest, self.n_blocks = held, None, len(held)
        self.config = SimpleNamespace(corpus=corpus)


def _window_inputs(n_windows: int, tokens: int, d: int, offset: float, rng: np.random.Generator) -> np.ndarray:
    """[n_windows, tokens, d] inputs: standard normal rows sharing a window offset of SD `offset` per feature."""
    shift = rng.standard_normal((n_windows, 1, d)) * offset
    return rng.standard_normal((n_windows, tokens, d)) + shift


def _noise(n_windows: int, tokens: int, icc: float, rng: np.random.Generator, m: int = 1) -> np.ndarray:
    """[m, n_windows, tokens, 1] (m = 1: [n_windows, tokens, 1]) unit noise, `icc` of it shared in a window."""
    e = rng.standard_normal((m, n_windows, tokens, 1))
    if icc > 0:
        e = np.sqrt(1 - icc) * e + np.sqrt(icc) * rng.standard_normal((m, n_windows, 1, 1))
    return e[0] if m == 1 else e


def _stream_key(resid_icc: float, tokens: int) -> list[int]:  # nothing at the defaults: the rows' streams before
    return ([round(resid_icc * 10_000)] if resid_icc else []) + ([tokens] if tokens != 64 else [])


def _icc_words(resid_icc: float, tokens: int = 64) -> str:
    return (f", residual ICC {resid_icc:.3f}" if resid_icc else "") + (f", {tokens} tokens a window" * (tokens != 64))


def planted_heldout(r2, n_windows: int, rng: np.random.Generator, tokens: int = 64, d: int = 6, offset: float = 0.5,
                    resid_icc: float = 0.0):  # fmt: skip
    """Held-out sums of planted blocks with known population R²_lin: `r2` [..., L] → the same nesting of lists of
    `HeldOut`. Every block (and every profile of the leading axes) sees the same windows: inputs x [W, tokens, d]
    whose rows share a window offset of standard deviation `offset` per feature (the positions of one window are
    correlated, so the window is the unit that must be resampled), y = x·w + noise with the noise chosen so that the
    population R² about the held-out mean is the planted value; `resid_icc` of the noise's variance is shared by a
    window's positions (`_noise`). The map is the population map (a fit on a large train split, up to its error)."""
    r2 = np.asarray(r2, dtype=float)
    x = _window_inputs(n_windows, tokens, d, offset, rng)
    flat = r2.reshape(-1)
    held = []
    for r in flat:
        w = rng.standard_normal((d, 1))
        signal = float((w**2).sum()) * (1 + offset**2)
        e = _noise(n_windows, tokens, resid_icc, rng) * np.sqrt(signal * (1 - r) / r)
        y = x @ w + e
        held.append(HeldOut(np.arange(n_windows), np.full(n_windows, tokens), (e**2).sum(1), y.sum(1),
                            (y**2).sum(1), np.zeros(1)))  # fmt: skip
    return np.array(held, dtype=object).reshape(r2.shape).tolist()


def _row(procedure: str, setting: str, reps: int, n_windows: int, cover: float, **extra) -> dict:
    return {"procedure": procedure, "setting": setting, "n_windows": n_windows, "reps": reps, "coverage95": cover,
            **extra}  # fmt: skip


def r2_coverage(n_windows: int = 32, r2: float = 0.6, reps: int = 300, n_boot: int = N_BOOT, seed: int = 0,
                resid_icc: float = 0.0, tokens: int = 64) -> dict:  # fmt: skip
    """Coverage of one block's R²_lin interval (`linrec.stats.heldout.r2_interval`, the jackknife the tables carry) of
    what it is for, the held-out R² of the fitted map (here the population map, planted), beside the percentile
    window bootstrap it replaced (`bootstrap_r2`), on `planted_heldout` blocks."""
    rng = np.random.default_rng([seed, n_windows, int(r2 * 1000), 1, *_stream_key(resid_icc, tokens)])
    jack = boot = 0
    for _ in range(reps):
        (h,) = planted_heldout([r2], n_windows, rng, tokens=tokens, resid_icc=resid_icc)
        lo, hi = r2_interval(h)
        jack += lo <= r2 <= hi
        lo, hi = bootstrap_r2(h, n_boot=n_boot, seed=int(rng.integers(1 << 30)))
        boot += lo <= r2 <= hi
    return _row(FITTED_MAP, f"R² {r2}{_icc_words(resid_icc, tokens)}", reps, n_windows, jack / reps,
                coverage95_before=boot / reps, before="percentile window bootstrap")  # fmt: skip


FITTED_MAP = "held-out R² of the fitted map (jackknife over windows)"  # what the R²_lin interval covers
REFIT = "the same interval as one for the block's R²_lin (a refit on other text)"  # what it is not built for
REFIT_DRAWS = 2_000  # refits in `refit_truth`'s Monte Carlo (its standard error ≈ 0.0001 at R² 0.6, d 64)
REFIT_WIDTH = 64  # the widest planted block `window_table` refits (a run's own width where narrower; cost grows as d²)
RATIO_DEFAULT = 28.0  # train rows per parameter where a run's is not known (the default capture's: 16,384 / 577)


@dataclass(frozen=True)
class R2Plant:
    """What `window_table`'s R²_lin rows take from the run: rows per parameter, width, largest residual ICC, seq_len."""

    ratio: float = RATIO_DEFAULT
    width: int = REFIT_WIDTH
    resid_icc: float = 0.0
    tokens: int = 64  # a window's positions (the run's seq_len)


@dataclass(frozen=True)
class PlantedBlock:
    """A planted block of `refit_coverage`: y = x·w + noise, x's rows N(0, I) plus a window offset of SD `offset` per
    feature (so x ~ N(0, (1 + offset²)·I) marginally), the noise's SD `sigma` set so that the population R² of w is
    the planted value."""

    w: np.ndarray  # [d, 1]
    sigma: float
    offset: float
    tokens: int
    resid_icc: float = 0.0

    @classmethod
    def draw(cls, r2: float, d: int, rng: np.random.Generator, offset: float = 0.5, tokens: int = 64,
             resid_icc: float = 0.0) -> PlantedBlock:  # fmt: skip
        w = rng.standard_normal((d, 1))
        signal = float((w**2).sum()) * (1 + offset**2)
        return cls(w, float(np.sqrt(signal * (1 - r2) / r2)), offset, tokens, resid_icc)

    def windows(self, n_windows: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(x, y) of `n_windows` windows of `tokens` correlated positions: [W, tokens, d], [W, tokens, 1]."""
        x = _window_inputs(n_windows, self.tokens, len(self.w), self.offset, rng)
        return x, x @ self.w + _noise(n_windows, self.tokens, self.resid_icc, rng, 1) * self.sigma

    def refit(self, n_train: int, rng: np.random.Generator) -> AffineFit:
        """The project's own affine least squares (`linrec.stats.ceiling.fit_affine`) on `n_train` fresh train rows:
        whole windows of correlated positions, the last one cut short."""
        x, y = self.windows(-(-n_train // self.tokens), rng)
        d = len(self.w)
        return fit_affine(Moments.of(x.reshape(-1, d)[:n_train], y.reshape(-1, 1)[:n_train]), condition=False)

    def r2_of(self, fit: AffineFit) -> float:
        """The population held-out R² of a map (W, b), in closed form: x has mean 0 and covariance (1 + offset²)·I,
        so its mean squared error is σ² + (1 + offset²)·|W − w|² + b², and the variance of y (1 + offset²)·|w|² + σ²."""
        k = 1 + self.offset**2
        mse = self.sigma**2 + k * float(((fit.W - self.w) ** 2).sum()) + float((fit.b**2).sum())
        return 1 - mse / (k * float((self.w**2).sum()) + self.sigma**2)


def refit_truth(r2: float, n_train: int, d: int = 6, offset: float = 0.5, tokens: int = 64, draws: int = REFIT_DRAWS,
                seed: int = 0, resid_icc: float = 0.0) -> tuple[float, float]:  # fmt: skip
    """(mean, its Monte Carlo standard error): the block's R²_lin as `refit_coverage` defines it, the expected
    held-out R² of a map refitted on `n_train` fresh rows, estimated over `draws` independent planted blocks and
    train sets (drawn as `PlantedBlock` draws them), each refit scored by its exact population R² (`PlantedBlock.r2_of`:
    the held-out R² on unlimited held-out text). The refits are least squares with an intercept, solved in batches by
    the normal equations on centred rows (on these well-conditioned rows the map `fit_affine` gives; written apart
    from it, so the coverage loop's fits are checked against an independent solver's truth). The excess error over
    the planted `r2` is (1 − r2)·E[(1 + offset²)|Ŵ − w|² + b̂²]/σ², the same for every w, so the mean is a constant
    of (r2, n_train, d, offset, tokens); at offset 0 (independent rows) it is 1 − (1 − r2)·(n + 1)(n − 2)/(n(n − d −
    2)), the expected prediction error of least squares with an intercept on Gaussian rows."""
    rng = np.random.default_rng([seed, n_train, d, int(r2 * 1000), int(offset * 1000), 10])
    k, n_win = 1 + offset**2, -(-n_train // tokens)
    chunk = max(1, 2_000_000 // (n_win * tokens * d))
    got = []
    for start in range(0, draws, chunk):
        m = min(chunk, draws - start)
        w = rng.standard_normal((m, d, 1))
        signal = k * (w**2).sum((1, 2))
        sigma = np.sqrt(signal * (1 - r2) / r2)
        x = rng.standard_normal((m, n_win, tokens, d)) + rng.standard_normal((m, n_win, 1, d)) * offset
        x = x.reshape(m, -1, d)[:, :n_train]
        e = _noise(n_win, tokens, resid_icc, rng, m).reshape(m, -1, 1)[:, :n_train]
        y = x @ w + e * sigma[:, None, None]
        xm, ym = x.mean(1, keepdims=True), y.mean(1, keepdims=True)
        xt = (x - xm).transpose(0, 2, 1)
        W = np.linalg.solve(xt @ (x - xm), xt @ (y - ym))
        b = (ym - xm @ W)[:, 0, 0]
        mse = sigma**2 + k * ((W - w) ** 2).sum((1, 2)) + b**2
        got.append(1 - mse / (signal + sigma**2))
    got = np.concatenate(got)
    return float(got.mean()), float(got.std(ddof=1) / np.sqrt(draws))


def refit_coverage(n_windows: int = 32, r2: float = 0.6, plant: R2Plant = R2Plant(), reps: int = 300,
                   draws: int = REFIT_DRAWS, seed: int = 0) -> dict:  # fmt: skip
    """Coverage of the R²_lin interval (`r2_interval`, as the tables carry it) of the block's R²_lin, the fit's
    variability included: each data set plants a block (`PlantedBlock` at `plant`'s width, window length and residual
    ICC), fits the affine map on round(ratio × (d + 1)) train rows, scores it on `n_windows` held-out windows and
    takes the interval of that held-out R²; the truth is the expected held-out R² of a refit on other text of the
    same size (`refit_truth`, a separate Monte Carlo over `draws` refits). `coverage95_map`: how often the same
    intervals cover the population R² of their own fitted map; `truth`, `truth_se`."""
    ratio, d, resid_icc, tokens = plant.ratio, plant.width, plant.resid_icc, plant.tokens
    n_train = round(ratio * (d + 1))
    if n_train <= d + 1:
        raise ValueError(f"ratio must give more train rows than d + 1 = {d + 1} parameters, got {ratio}")
    truth, truth_se = refit_truth(r2, n_train, d, tokens=tokens, draws=draws, seed=seed, resid_icc=resid_icc)
    rng = np.random.default_rng([seed, n_windows, int(r2 * 1000), n_train, d, 11, *_stream_key(resid_icc, tokens)])
    cover = cover_map = 0
    for _ in range(reps):
        block = PlantedBlock.draw(r2, d, rng, tokens=tokens, resid_icc=resid_icc)
        fit = block.refit(n_train, rng)
        x, y = block.windows(n_windows, rng)
        e = y - fit.predict(x)
        h = HeldOut(np.arange(n_windows), np.full(n_windows, block.tokens), (e**2).sum(1), y.sum(1), (y**2).sum(1),
                    np.zeros(1))  # fmt: skip
        lo, hi = r2_interval(h)
        cover += lo <= truth <= hi
        cover_map += lo <= block.r2_of(fit) <= hi
    return _row(REFIT, f"R² {r2}, refit on {n_train} rows ({n_train / (d + 1):.1f} per parameter, d {d}"
                f"{_icc_words(resid_icc, tokens)}), true {truth:.3f}", reps, n_windows, cover / reps,
                coverage95_map=cover_map / reps, truth=truth, truth_se=truth_se)  # fmt: skip


def move_coverage(n_windows: int = 32, r2: tuple = (0.75, 0.75), reps: int = 300, seed: int = 0) -> dict:
    """Coverage of the paired interval of a move between two blocks sharing windows (claim 1's moves,
    `linrec.analyses.profile.move_tests`' jackknife on `linrec.analyses.recoverability.profile_replicates`). At the
    default, no move (two blocks of equal R²_lin, different maps): what claim 1's test reads, its coverage of 0 is
    one minus its rate of false moves."""
    rng = np.random.default_rng([seed, n_windows, 2])
    truth = r2[1] - r2[0]
    cover = 0
    for _ in range(reps):
        point, loo = profile_replicates(_Planted(planted_heldout(list(r2), n_windows, rng)))
        lo, hi = from_replicates(point[1] - point[0], loo[:, 1] - loo[:, 0]).interval()
        cover += lo <= truth <= hi
    return _row("difference of two blocks' R²_lin (paired jackknife)", f"R² {r2[0]} → {r2[1]}", reps, n_windows,
                cover / reps)  # fmt: skip


def _profiles(n_blocks: int, rng: np.random.Generator, spread: float = 0.25, centre: float = 0.6) -> np.ndarray:
    return np.clip(centre + spread * (rng.random(n_blocks) - 0.5) * 2, 0.05, 0.97)


def seeds_coverage(n_windows: int = 32, n_blocks: int = 8, level_gap: float = 0.03, shape_sd: float = 0.04,
                   reps: int = 200, seed: int = 0) -> list[dict]:  # fmt: skip
    """Coverage of the seeds experiment's paired intervals (`linrec.analyses.seeds.compare`: level, shape, distance,
    each a jackknife over the shared windows) for two planted profiles of `n_blocks` blocks: b = a − `level_gap` plus
    a block-wise change of SD `shape_sd` (fixed across data sets, so the truth is fixed)."""
    rng = np.random.default_rng([seed, n_windows, n_blocks, 3])
    a = _profiles(n_blocks, rng)
    b = np.clip(a - level_gap + shape_sd * rng.standard_normal(n_blocks), 0.05, 0.97)
    truth = {k: float(f(a, b)) for k, f in PARTS.items()}
    cover = dict.fromkeys(truth, 0)
    for _ in range(reps):
        ha, hb = planted_heldout(np.stack([a, b]), n_windows, rng)
        c = compare(_Planted(ha), _Planted(hb))
        for k in truth:
            cover[k] += c[f"{k}_lo"] <= truth[k] <= c[f"{k}_hi"]
    return [_row(f"seeds: {k} between two profiles (paired jackknife)", f"{n_blocks} blocks, true {k} "
                 f"{truth[k]:.3f}", reps, n_windows, cover[k] / reps) for k in truth]  # fmt: skip


def shares_coverage(n_windows: int = 32, n_blocks: int = 12, level_gap: float = 0.08, shape_sd: float = 0.05,
                    reps: int = 200, seed: int = 0) -> list[dict]:  # fmt: skip
    """Coverage of claim 5's shares (`linrec.analyses.recoverability.corpus_shape_level`: depth, level and shape of a
    profile over three corpora, a jackknife over each corpus's own windows) on a planted block × corpus table: corpus
    c shifted by c × `level_gap`, a block-wise interaction of SD `shape_sd`."""

    rng = np.random.default_rng([seed, n_windows, n_blocks, 4])
    base = _profiles(n_blocks, rng, spread=0.3)
    table = np.clip(base[:, None] - level_gap * np.arange(3) + shape_sd * rng.standard_normal((n_blocks, 3)), 0.05,
                    0.97)  # fmt: skip
    truth = {k: float(v) for k, v in two_way_shares(table).items() if k != "level_range"}
    cover = dict.fromkeys(truth, 0)
    for _ in range(reps):
        caps = {f"c{c}": _Planted(planted_heldout(table[:, c], n_windows, rng)) for c in range(3)}
        out = corpus_shape_level(caps, rest=False)
        for k in truth:
            cover[k] += out[f"{k}_lo"] <= truth[k] <= out[f"{k}_hi"]
    return [_row(f"claim 5: {k} share over corpora (jackknife per corpus)", f"{n_blocks} blocks × 3 corpora, true "
                 f"{truth[k]:.3f}", reps, n_windows, cover[k] / reps) for k in truth]  # fmt: skip


COST_SHAPES = ("symmetric", "gamma", "lognormal", "costly")
LOGNORMAL_SIGMA = 1.0  # the lognormal costs' σ of log cost: skewness 6.2
COSTLY_RATE = 0.25  # the share of costly windows in "costly" (each carries 0.9 of the mean cost / rate)
DELTA_PPL = f"ΔPPL of a swap (paired skew-corrected jackknife, {SWAP_LEVEL:.0%})"
DELTA_PPL_BEFORE = "the same at 95 %"


def window_costs(shape: str, size, delta: float, rng: np.random.Generator, rate: float = COSTLY_RATE,
                 sigma: float = LOGNORMAL_SIGMA) -> np.ndarray:  # fmt: skip
    """Per-window costs of a swap in nats per token, mean `delta` under every shape: "symmetric" δ + δ·N(0, 1);
    "gamma" Gamma(1, δ) (exponential: SD δ, skewness 2); "lognormal" δ·exp(σZ − σ²/2) (SD δ·√(e^{σ²} − 1), skewness
    6.2 at σ = 1); "costly" 0.1·δ everywhere plus 0.9·δ / `rate` on a window with probability `rate` (one costly
    window in 1 / rate, the rest nearly free). A run's own costs are resampled by `own_coverage` instead."""
    if shape == "symmetric":
        return delta + delta * rng.standard_normal(size)
    if shape == "gamma":
        return rng.gamma(1.0, delta, size)
    if shape == "lognormal":
        return delta * np.exp(sigma * rng.standard_normal(size) - sigma**2 / 2)
    if shape == "costly":
        return 0.1 * delta + 0.9 * delta / rate * (rng.random(size) < rate)
    raise ValueError(f"shape must be one of {', '.join(COST_SHAPES)}, got {shape!r}")


def delta_ppl_truth(delta: float, mu: float = 3.0) -> float:
    """The population ΔPPL of `delta_ppl_coverage`: exp(μ + δ) − exp(μ) (every cost shape has mean δ per token)."""
    return float(np.exp(mu + delta) - np.exp(mu))


@dataclass(frozen=True)
class Costs:
    """How `delta_ppl_coverage` draws a swap's per-window costs: `window_costs`' shape and its settings (`rate` for
    "costly", `sigma` for "lognormal")."""

    shape: str = "symmetric"
    rate: float = COSTLY_RATE
    sigma: float = LOGNORMAL_SIGMA

    def draw(self, size, delta: float, rng: np.random.Generator) -> np.ndarray:
        return window_costs(self.shape, size, delta, rng, self.rate, self.sigma)

    def describe(self, delta: float) -> str:
        detail = {"lognormal": f", σ {self.sigma:g}", "costly": f", 1 window in {1 / self.rate:g}"}.get(self.shape, "")
        return f"{self.shape} costs{detail}, ΔNLL {delta:.3g}/token"


def _delta_row(setting: str, reps: int, n_windows: int, truth: float, base, other) -> dict:
    """A ΔPPL row of the methods table: the swap's interval (`SWAP_LEVEL`) and the 95 % one it replaced on the same
    data sets (`base`, `other` [reps, W], mean NLL per token), two-sided and by side."""
    out = {}
    for key, level in (("", SWAP_LEVEL), ("_before", 0.95)):
        _, lo, hi = delta_ppl_batch(base, other, level)
        out[key] = (float(np.mean((lo <= truth) & (truth <= hi))), float(np.mean(hi < truth)))
    return _row(DELTA_PPL, setting, reps, n_windows, out[""][0], coverage95_before=out["_before"][0],
                before=DELTA_PPL_BEFORE, upper_covers=1 - out[""][1], miss_below=out[""][1],
                miss_below_before=out["_before"][1])  # fmt: skip


def delta_ppl_coverage(n_windows: int = 32, tokens: int = 128, delta: float = 0.2, reps: int = 300,
                       costs: Costs | str = "symmetric", seed: int = 0) -> dict:  # fmt: skip
    """Coverage of the swap's interval of a change in perplexity (`linrec.analyses.uncertainty.delta_ppl_batch` at
    `SWAP_LEVEL`: Hall's skew-corrected window jackknife at 99 %) beside the same at 95 % (the tables' interval
    before), on planted per-window NLL sums: windows differ in difficulty (SD 0.3 nats per token), the swap costs each
    window `window_costs(shape)` per token (mean `delta`), token noise 2 nats (0.5 more on the swapped model); true
    mean NLL 3.0 and 3.0 + `delta` per token (`delta_ppl_truth`). `upper_covers`: the share of upper ends at or above
    the truth (what "within budget" leans on); `miss_below`: the share of intervals wholly below it (the side that
    flatters a swap). `costs`: a `Costs` or the name of a shape."""

    costs = Costs(costs) if isinstance(costs, str) else costs
    rng = np.random.default_rng([seed, n_windows, 5, COST_SHAPES.index(costs.shape)])
    mu, shape = 3.0, (reps, n_windows)
    hard = rng.standard_normal(shape) * 0.3
    cost = costs.draw(shape, delta, rng)
    base = tokens * (mu + hard) + rng.standard_normal(shape) * 2 * np.sqrt(tokens)
    other = base + tokens * cost + rng.standard_normal(shape) * 0.5 * np.sqrt(tokens)
    return _delta_row(costs.describe(delta), reps, n_windows, delta_ppl_truth(delta, mu), base / tokens,
                      other / tokens)  # fmt: skip


def own_coverage(label: str, loss_base, loss_swapped, reps: int = 300, seed: int = 0) -> dict:
    """The ΔPPL row at a run's own per-window losses (results table `swap_windows`: mean NLL per token of each
    window, base and swapped): `reps` data sets of as many windows drawn with replacement from its (base, swapped)
    pairs, the truth their own ΔPPL — the interval at the data's own skew, a costly window included or left out as
    chance has it (`linrec.analyses.uncertainty.own_skew_check` is the same check on one swap)."""
    b, o = np.asarray(loss_base, dtype=np.float64), np.asarray(loss_swapped, dtype=np.float64)
    w = len(b)
    idx = np.random.default_rng([seed, w, 6]).integers(0, w, (reps, w))
    cost = o - b
    setting = f"own windows resampled ({label}, G₁ {skewness(cost):.2f}), ΔNLL {cost.mean():.3g}/token"
    return _delta_row(setting, reps, w, float(np.exp(o.mean()) - np.exp(b.mean())), b[idx], o[idx])


def routable_coverage(n_windows: int = 12, tokens: int = 256, scale: float = 0.03, power: float = 2.0,
                      reps: int = 300, seed: int = 0) -> dict:  # fmt: skip
    """Coverage of the routable share's interval (`linrec.analyses.routing.routable_share`: the largest share of the
    0.05 grid whose run from 0 stays within +1 % of base perplexity, one-sided t tests over windows) on
    planted per-window NLL sums: windows differ in difficulty (SD 0.3 nats per token) and in how much routing costs
    them (SD 30 % of the cost), and routing a larger share adds fresh token noise to a nested set (a random walk over
    the grid). The cost per token at share s is `scale`·s^`power`; the true routable share is the largest grid share
    whose mean cost stays within log 1.01 (the +1 % budget), every smaller one too (the cost rises with s)."""

    rng = np.random.default_rng([seed, n_windows, int(scale * 1e4), 9])
    shares = np.asarray(SHARES, float)
    cost = scale * shares**power
    truth = float(shares[cost <= np.log1p(0.01)].max())
    mu, cover = 3.0, 0
    for _ in range(reps):
        base = tokens * (mu + rng.standard_normal(n_windows) * 0.3) + rng.standard_normal(n_windows) * np.sqrt(tokens)
        own = 1 + 0.3 * rng.standard_normal(n_windows)
        walk = np.cumsum(rng.standard_normal((n_windows, len(shares))) * np.sqrt(tokens * 0.05) * 0.5, axis=1)
        walk[:, 0] = 0.0  # share 0 is the unswapped model itself
        nlls = base[:, None] + tokens * cost[None, :] * own[:, None] + walk
        r = routable_share(shares, base, nlls.T, tokens)
        cover += r["routable_pct1_lo"] <= truth <= r["routable_pct1_hi"]
    return _row("routable share within +1 % (one-sided tests over windows)",
                f"cost {scale}·s^{power:g}, true share {truth:.2f}", reps, n_windows, cover / reps)  # fmt: skip


# the retired percentile bootstrap beside the jackknife in `window_table`'s R²_lin rows, at the committed tables'
# resamples: a simulated data set's interval is only counted as covering or not, so fewer than a reported N_BOOT
R2_BOOT_BEFORE = 500
R2_REPS = 4  # the R²_lin rows' data sets, × `reps`: near the floor, their own error must be small
REFIT_REPS = 10  # the refit rows' (5,000 beside the profiles' 500): at ≈ 0.934, 2,000 gave 0.927–0.945 over 5 seeds


def refit_draws(reps: int) -> int:
    """`refit_truth`'s refits beside `reps` data sets: as many, up to `REFIT_DRAWS` (2,000 beside the profiles' 2,000);
    its error stays below the coverage's (≈ 0.0004 at 200 refits, R² 0.6, d 64, 28 rows a parameter; ±0.018)."""
    return min(REFIT_DRAWS, max(int(reps), 1))


def window_table(n_windows: int = 32, seeds_windows: int = 102, reps: int = 300, seed: int = 0,
                 swap_windows: int | None = None, observed: list[tuple[str, np.ndarray, np.ndarray]] | None = None,
                 plant: R2Plant = R2Plant(), workers: int | None = None) -> pd.DataFrame:  # fmt: skip
    """Every window-interval procedure a verdict reads, at `n_windows` held-out windows (the run's capture; the seeds
    experiment's at `seeds_windows`, its runs' measuring windows; ΔPPL and the routable share at `swap_windows`, the
    swap study's held-out windows, `n_windows` when not given), `reps` simulated data sets each: the methods table's
    window rows, each with `what` (the claims that read it). ΔPPL under each of `COST_SHAPES`, one costly window in
    `swap_windows`, and at each of `observed` (label, per-window base and swapped losses: the swaps claim 6a reads
    and the run's most skewed one) resampled (`own_coverage`). The R²_lin interval twice, at the run's `plant`: as
    what it is, an interval for the held-out R² of the fitted map (`r2_coverage`), and as one for the block's R²_lin,
    a refit (`refit_coverage`). Each procedure draws from its own seeded generator, so they run side by side on
    `workers` processes (`linrec.analyses.parallel.run_processes`; default: the caller's thread count) and give the
    same table on any number."""
    w = max(int(n_windows), 4)
    sw = w if swap_windows is None else max(int(swap_windows), 4)
    icc, t, many = plant.resid_icc, plant.tokens, reps * R2_REPS
    jobs = [*(("claims 1, 5: held-out R² of the fitted map", partial(r2_coverage, w, r2, many, R2_BOOT_BEFORE, seed,
                                                                      icc, t)) for r2 in (0.6, 0.9)),
            *(("claims 1, 5: R²_lin of a block (fit included)", partial(
                refit_coverage, w, r2, plant, reps=reps * REFIT_REPS, draws=refit_draws(many), seed=seed))
              for r2 in (0.6, 0.9)),
            ("claim 1: a move between two blocks", partial(move_coverage, w, reps=reps, seed=seed)),
            ("claim 2a: seeds experiment", partial(seeds_coverage, max(int(seeds_windows), 4), reps=reps, seed=seed)),
            ("claim 5: corpora", partial(shares_coverage, w, reps=reps, seed=seed)),
            *(("claims 6a, 6b, routing: ΔPPL of a swap", partial(delta_ppl_coverage, sw, reps=reps, costs=c, seed=seed))
              for c in [*COST_SHAPES, Costs("costly", rate=1 / sw)]),
            *(("claims 6a, 6b: ΔPPL of a swap, own windows", partial(own_coverage, *o, reps=reps, seed=seed))
              for o in observed or []),
            *(("routing: the routable share", partial(routable_coverage, sw, scale=c, power=p, reps=reps, seed=seed))
              for c, p in ((0.03, 2.0), (0.0105, 1.0)))]  # fmt: skip
    done = run_processes([job for _, job in jobs], workers, desc="coverage of the window intervals", unit="procedure")
    return pd.DataFrame([{"what": what, **r} for (what, _), out in zip(jobs, done)
                         for r in (out if isinstance(out, list) else [out])])  # fmt: skip
