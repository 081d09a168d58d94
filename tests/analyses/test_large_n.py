"""linrec.analyses.large_n: the large-n estimate recovers a planted R² that every measured size underestimates, and
its fit is exact on a line, per replicate."""

from __future__ import annotations

import numpy as np

from helpers import feed_curve as _feed
from linrec.analyses.large_n import curve_summary, large_n_fit, large_n_profile
from linrec.measure.curves import CurveAccumulator, CurveConfig


def test_large_n_estimate_recovers_a_planted_r2_that_every_measured_size_underestimates():
    """A linear map plus noise with population R² 0.5: held-out R² at n rows sits below 0.5 by about
    0.5·p/(n − p − 1); the line in p/n must put R²∞ back at 0.5, and its interval must cover it."""
    rng = np.random.default_rng(0)
    T, d_in, d_out, target = 16, 48, 4, 0.5
    sizes = (320, 640, 1280, 2560)  # 6.5 … 52 rows per parameter (p = 49)
    cfg = CurveConfig("m", seq_len=T, train_tokens=sizes, test_tokens=T * 2000, seeds=(0, 1, 2))
    W_ = sizes[-1] // T + 2000
    L = rng.normal(size=(d_in, d_in)) / np.sqrt(d_in) + np.eye(d_in)
    X = rng.normal(size=(W_, T, d_in)) @ L.T + 3.0
    M = rng.normal(size=(d_in, d_out))
    signal = np.trace(M.T @ (L @ L.T) @ M)  # total variance of X·M
    sigma = np.sqrt(signal * (1 - target) / target / d_out)  # noise so that signal / (signal + noise) = target
    Y = [X @ M + 1.0 + sigma * rng.normal(size=(W_, T, d_out))]
    acc = CurveAccumulator([(d_in, d_out)], cfg, W_)
    _feed(acc, X, Y, batch=50)
    curve = acc.result({"dims": [[d_in, d_out]]})
    summary = curve_summary(curve, n_boot=400)
    inf = summary[np.isinf(summary["train_tokens"])].iloc[0]
    measured = summary[np.isfinite(summary["train_tokens"])]
    assert abs(inf["r2"] - target) < 0.004, inf
    assert inf["r2_lo"] <= target <= inf["r2_hi"]
    assert (measured["r2"] < target - 0.005).all()  # even 2560 rows is visibly biased low …
    assert abs(inf["r2"] - target) < (target - measured["r2"].iloc[-1]) / 2  # the estimate beats the largest size
    assert measured["r2"].is_monotonic_increasing  # … and less so with more rows
    assert abs(inf["slope"] - (1 - target)) < 0.15  # OLS theory: slope 1 − R²∞ for a well-specified linear map
    assert (measured["r2_lo"] < measured["r2"]).all() and (measured["r2"] < measured["r2_hi"]).all()
    prof = large_n_profile(summary)
    assert prof["train_tokens"].iloc[0] == sizes[-1] and prof["r2_lin"].iloc[0] == measured["r2"].iloc[-1]
    assert large_n_profile(summary, np.inf)["r2_lin"].iloc[0] == inf["r2"]


def test_large_n_fit_is_exact_on_a_line_and_per_replicate():
    x = np.array([0.2, 0.1, 0.05, 0.01])
    r0, a, rmse = large_n_fit(x, 0.8 - 0.3 * x)
    assert abs(r0 - 0.8) < 1e-12 and abs(a - 0.3) < 1e-12 and rmse < 1e-12
    reps = np.stack([0.8 - 0.3 * x, 0.7 - 0.1 * x])
    r0s, as_, _ = large_n_fit(x, reps)
    np.testing.assert_allclose(r0s, [0.8, 0.7], atol=1e-12)
    np.testing.assert_allclose(as_, [0.3, 0.1], atol=1e-12)


def test_other_split_counts_lower_and_excluded_blocks_at_the_captures_own_train_rows():
    """`other_split` against a hand count: a capture of 4 blocks (train rows 100, intervals ± 0.02) and a curve at 100
    and 200 train rows; only the 100-row values are read. Block 0 inside and above, 1 inside and below, 2 below and
    outside (drop 0.05), 3 above and outside; a second model without a curve row at its size gives no row. Planted:
    reading the curve's largest size, counting `r2_curve <= r2_lo` as outside at the edge, or the drop's sign
    flipped, fails."""
    import pandas as pd

    from linrec.analyses.large_n import other_split

    r2 = pd.DataFrame({"model": ["m"] * 4 + ["g"], "block": [0, 1, 2, 3, 0], "n_train": [100] * 4 + [300],
                       "r2_lin": [0.5, 0.6, 0.7, 0.8, 0.5]})  # fmt: skip
    r2 = r2.assign(r2_lo=r2["r2_lin"] - 0.02, r2_hi=r2["r2_lin"] + 0.02).iloc[[2, 0, 3, 1, 4]]  # rows out of order
    curve = pd.DataFrame({"model": ["m"] * 8 + ["g"], "block": [0, 1, 2, 3] * 2 + [0],
                          "n_train": [100] * 4 + [200] * 4 + [200],
                          "r2": [0.51, 0.59, 0.65, 0.83, 0.9, 0.9, 0.9, 0.9, 0.1]})  # fmt: skip
    got = other_split(curve, r2)
    assert got["model"].tolist() == ["m"]
    row = got.iloc[0]
    assert (row["n_blocks"], row["n_lower"], row["n_outside"], row["drop_block"]) == (4, 2, 2, 2)
    np.testing.assert_allclose([row["drop_max"], row["diff_median"], row["diff_mean"]],
                               [0.05, 0.0, (0.01 - 0.01 - 0.05 + 0.03) / 4], atol=1e-12)  # fmt: skip
    edge = r2.assign(r2_lo=np.where(r2["block"] == 2, 0.65, r2["r2_lo"]))  # block 2's curve value on its end: inside
    assert other_split(curve, edge).iloc[0]["n_outside"] == 1
