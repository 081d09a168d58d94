"""How often the intervals the verdicts read cover the truth, measured by simulation (issue 45).

Every interval a verdict reads is a procedure applied to one data set; its nominal level (95 %) is a promise about
many data sets. This module keeps the promise checkable: it draws data sets from a model with a known answer and the
dependence the real data show, applies the same procedure the verdicts use, and counts.

- `correlation_coverage`: a correlation across ordered blocks (`linrec.analyses.uncertainty.correlation_test`,
  claims 3, 6b, 7b and routing). Each block series is AR(1) through depth with coefficient φ (neighbouring blocks
  share the residual stream), the pair correlated at ρ at equal depth; optionally several models pooled with a model
  effect. It returns the coverage of the 95 % and 90 % intervals and how often each outcome of the equivalence
  test comes out (at ρ = 0: "effect" is a false positive, "no effect" the power the report states).
- `window_coverage`: a statistic over held-out windows with the window bootstrap the project uses
  (`linrec.stats.heldout.bootstrap_r2`'s resampling, here for R²_lin of a planted linear map with known population
  R²).
- `dependence`: the AR(1) coefficient a real per-block series shows (the lag-1 autocorrelation, bias-corrected), so
  that the simulation runs at the data's own dependence.

`coverage_table` puts one row per procedure and setting into the report's methods table; the tests run small
versions and fail below 0.93 for a nominal 0.95.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from linrec.analyses.uncertainty import EFFECT, NO_EFFECT, autocorrelations, correlation_test

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


def window_coverage(
    n_windows: int = 40, tokens: int = 128, d: int = 8, r2: float = 0.6, reps: int = 300, n_boot: int = 500, seed=0
) -> dict:
    """Coverage of the held-out R² interval from the window bootstrap (`linrec.stats.heldout.bootstrap_r2`'s
    resampling of per-window sums) for a planted linear map y = xW + e with population R² `r2`, fitted exactly on a
    large train split: `n_windows` held-out windows of `tokens` rows each, the windows' rows correlated within a
    window (a shared window offset), so the bootstrap over windows is what respects the dependence."""
    from linrec.stats.heldout import HeldOut, bootstrap_r2

    rng = np.random.default_rng([seed, n_windows, tokens, d])
    w = rng.standard_normal((d, 1))
    signal = float((w**2).sum())
    noise = signal * (1 - r2) / r2
    offset = 0.5  # windows differ: their rows share an offset of this standard deviation per feature
    truth = 1 - noise / (signal * (1 + offset**2) + noise)  # the variance of y about its mean includes the offsets
    cover = cover_jack = 0
    for _ in range(reps):
        shift = rng.standard_normal((n_windows, 1, d)) * offset
        x = rng.standard_normal((n_windows, tokens, d)) + shift
        y = x @ w + rng.standard_normal((n_windows, tokens, 1)) * np.sqrt(noise)
        e = y - x @ w  # the population map: the fit on a large train split, up to its own small error
        h = HeldOut(np.arange(n_windows), np.full(n_windows, tokens), (e**2).sum(1), y.sum(1), (y**2).sum(1),
                    np.zeros(1))  # fmt: skip
        lo, hi = bootstrap_r2(h, n_boot=n_boot, seed=int(rng.integers(1 << 30)))
        jlo, jhi = jackknife_r2(h)
        cover += lo <= truth <= hi
        cover_jack += jlo <= truth <= jhi
    return {
        "procedure": "held-out R² (window bootstrap)",
        "n_blocks": np.nan,
        "models": 1,
        "phi": np.nan,
        "rho": r2,
        "reps": reps,
        "coverage95": cover / reps,
        "coverage90": np.nan,
        "p_effect": np.nan,
        "p_no_effect": np.nan,
        "p_inconclusive": np.nan,
        "coverage95_jackknife": cover_jack / reps,
    }


def jackknife_r2(h, level: float = 0.95) -> tuple[float, float]:
    """A candidate replacement for the window bootstrap, measured beside it: the held-out R² ± t_{W−1} × its
    leave-one-window-out jackknife standard error."""
    from scipy.stats import t

    from linrec.stats.heldout import r2_of_counts

    w = h.n_windows
    jack = r2_of_counts(h, np.ones((w, w)) - np.eye(w))
    se = float(np.sqrt((w - 1) / w * ((jack - jack.mean()) ** 2).sum()))
    half = float(t.ppf(1 - (1 - level) / 2, w - 1)) * se
    r2 = h.r2()
    return r2 - half, r2 + half


def coverage_table(settings: list[dict], reps: int = 1000, seed: int = 0) -> pd.DataFrame:
    """One row per setting: each a dict of `correlation_coverage`'s keywords (n, phi, rho, kind, models) and an
    optional `what` (the claim it stands for), simulated with `reps` data sets."""
    rows = []
    for s in settings:
        s = dict(s)
        what = s.pop("what", "")
        rows.append({"what": what, **correlation_coverage(reps=reps, seed=seed, **s)})
    return pd.DataFrame(rows)
