"""linrec.analyses.large_n: the large-n estimate recovers a planted R² that every measured size underestimates, and
its fit is exact on a line, per replicate; a capture against the curve's split (`other_split`) and the document
split's shift over seeds (`split_shift`, `split_summary`) against hand counts and scipy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from helpers import feed_curve as _feed
from linrec.analyses.large_n import curve_summary, large_n_fit, large_n_profile
from linrec.base.errors import LinrecError
from linrec.collect.curves import CurveAccumulator, CurveConfig


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


def test_curve_split_is_other_split_in_the_registered_columns_and_none_where_nothing_is_compared():
    """The stored `curve_split` table (notebook 02's and `linrec.outputs.refresh`'s, one function): `other_split`'s
    rows in the registry's columns, in their order; None where the curve or the capture is absent or empty, or they
    share no train size (no table then, in either caller). Planted: an empty table returned where nothing is shared,
    or `other_split`'s own column order, fails."""
    import pandas as pd

    from linrec.analyses.large_n import curve_split, other_split
    from linrec.base.registry import TABLES

    r2 = pd.DataFrame({"model": "m", "block": [0, 1], "n_train": 100, "r2_lin": [0.5, 0.6], "r2_lo": [0.4, 0.5],
                       "r2_hi": [0.6, 0.7]})  # fmt: skip
    curve = pd.DataFrame({"model": "m", "block": [0, 1], "n_train": 100, "r2": [0.45, 0.65]})
    got = curve_split(curve, r2)
    columns = list(TABLES["curve_split"].columns)
    assert list(got.columns) == columns and columns != list(other_split(curve, r2).columns)
    pd.testing.assert_frame_equal(got, other_split(curve, r2)[columns])
    assert (got.iloc[0]["n_blocks"], got.iloc[0]["n_lower"], got.iloc[0]["drop_block"]) == (2, 1, 0)
    elsewhere = curve.assign(n_train=200)  # the curve has no row at the capture's train size
    for c, r in [(None, r2), (curve, None), (curve.iloc[:0], r2), (curve, r2.iloc[:0]), (elsewhere, r2)]:
        assert curve_split(c, r) is None


def _split_rows(model: str, block: int, windows, documents) -> list[dict]:
    return [{"model": model, "split": split, "seed": s, "block": block, "r2_lin": v}
            for split, values in (("windows", windows), ("documents", documents))
            for s, v in enumerate(values)]  # fmt: skip


def test_split_shift_is_welchs_interval_and_the_summary_counts_by_hand():
    """`split_shift` against scipy's Welch test (its own interval for the difference of means), and `split_summary`
    against a hand count: block 0 shifts down clearly, block 1 a little (not excluding 0), block 2 up clearly."""
    from scipy import stats

    from linrec.analyses.large_n import split_shift, split_summary

    w0, d0 = [0.50, 0.52, 0.49, 0.51], [0.40, 0.43, 0.38, 0.41, 0.42]
    w1, d1 = [0.70, 0.72, 0.69], [0.70, 0.68, 0.71]  # down a little, the interval across 0
    w2, d2 = [0.30, 0.31, 0.29], [0.36, 0.37, 0.35]
    t = pd.DataFrame(_split_rows("m", 0, w0, d0) + _split_rows("m", 1, w1, d1) + _split_rows("m", 2, w2, d2))
    got = split_shift(t).set_index("block")
    for b, (w, d) in enumerate(((w0, d0), (w1, d1), (w2, d2))):
        ref = stats.ttest_ind(d, w, equal_var=False).confidence_interval(0.95)
        assert abs(got.loc[b, "shift"] - (np.mean(d) - np.mean(w))) < 1e-12
        assert abs(got.loc[b, "shift_lo"] - ref.low) < 1e-12 and abs(got.loc[b, "shift_hi"] - ref.high) < 1e-12
        assert abs(got.loc[b, "sd_documents"] - np.std(d, ddof=1)) < 1e-12
    s = split_summary(split_shift(t)).iloc[0]
    assert (s["n_blocks"], s["n_down"], s["n_up"], s["drop_block"]) == (3, 1, 1, 0)
    assert abs(s["drop_max"] - (np.mean(w0) - np.mean(d0))) < 1e-12
    with pytest.raises(LinrecError, match="needs ≥ 2 seeds of each split, got 3 and 1"):
        split_shift(pd.DataFrame(_split_rows("m", 0, w1, [0.7])))


def test_split_shifts_interval_covers_its_truth_at_six_seeds():
    """The Welch interval `split_shift` reads, over 2,000 planted blocks of six seeds each with unequal SDs (0.007 and
    0.013, what benchmarks/split.py measured) and a true shift of −0.03: coverage within the 0.93 floor (0.946)."""
    from linrec.analyses.large_n import split_shift

    rng = np.random.default_rng(0)
    rows = []
    for b in range(2000):
        rows += _split_rows("m", b, 0.5 + 0.007 * rng.standard_normal(6), 0.47 + 0.013 * rng.standard_normal(6))
    got = split_shift(pd.DataFrame(rows))
    cover = ((got["shift_lo"] <= -0.03) & (got["shift_hi"] >= -0.03)).mean()
    assert 0.93 <= cover <= 0.975, cover
