"""linrec.analyses.spectrum: effective rank, ex-top-k R² and the regime rule against planted structure and stored rows,
notebook 04's toy blocks, the two regimes by construction, and its summaries: the regimes counted per model and the
input side's correlations."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from helpers import moments_of
from helpers import spectrum_rows as _spectrum
from linrec.analyses.spectrum import block_spectrum, effective_rank, input_side, regime_summary
from linrec.stats.ceiling import r2_rows
from linrec.stats.moments import remove_rows


def test_effective_rank_of_identity_and_rank_one():
    assert abs(effective_rank(np.eye(37)) - 37) < 1e-9
    v = np.arange(1.0, 11.0)
    assert abs(effective_rank(np.outer(v, v)) - 1) < 1e-6
    assert 1 < effective_rank(np.diag([10.0, 1.0, 1.0])) < 3


def test_outlier_concentrated_block():
    """All output variance in one feature, exactly linear there; the other features are noise."""
    rng = np.random.default_rng(0)
    n, d = 6000, 24
    x = rng.standard_normal((n, d))
    y = 0.1 * rng.standard_normal((n, d))
    y[:, 0] = 100 * x @ rng.standard_normal(d)
    row = block_spectrum(moments_of(x[:4800], y[:4800]), moments_of(x[4800:], y[4800:]))
    assert row["r2_lin"] > 0.99
    assert abs(row["r2_feature_median"]) < 0.05
    assert row["eff_rank_out"] < 1.1
    assert row["top1_var_share"] > 0.99
    assert row["n_massive"] == 1 and row["top1_var_ratio"] > 1e5  # (100² · d) / 0.1² ≈ 2e7
    assert row["regime"] == "outlier-concentrated"


def test_broadly_linear_block_sits_on_the_diagonal():
    rng = np.random.default_rng(1)
    n, d = 6000, 24
    x = rng.standard_normal((n, d))
    y = x @ rng.standard_normal((d, d)) + 0.3 * rng.standard_normal((n, d))
    row = block_spectrum(moments_of(x[:4800], y[:4800]), moments_of(x[4800:], y[4800:]))
    assert abs(row["r2_lin"] - row["r2_feature_median"]) < 0.05
    assert row["eff_rank_out"] > 0.5 * d
    assert row["n_massive"] == 0
    assert row["regime"] == "broadly linear"


def test_nonlinear_block():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6000, 8))
    y = np.sin(3 * x) + x**2
    assert block_spectrum(moments_of(x[:4800], y[:4800]), moments_of(x[4800:], y[4800:]))["regime"] == "nonlinear"


def test_ex_top_k_matches_stored_rows():
    rng = np.random.default_rng(3)
    n, d = 5000, 16
    x = rng.standard_normal((n, d)) * np.logspace(0, 1, d)
    y = np.tanh(x @ rng.standard_normal((d, d)) / 5) * np.logspace(0, 2, d)
    tr, te = slice(0, 4000), slice(4000, None)
    row = block_spectrum(moments_of(x[tr], y[tr]), moments_of(x[te], y[te]))
    sst = ((y[te] - y[te].mean(0)) ** 2).sum(0)
    for k in (1, 8):
        rest = np.argsort(sst)[: d - k]  # drop the k highest-variance held-out features
        A = np.c_[x[tr], np.ones(4000)]
        coef = np.linalg.lstsq(A, y[tr][:, rest], rcond=None)[0]
        ref = r2_rows(y[te][:, rest], np.c_[x[te], np.ones(1000)] @ coef)
        assert abs(row[f"r2_ex_top{k}"] - ref) < 1e-9


def test_first_token_concentrated_block():
    """Windows of T rows whose first row is huge and exactly linear (an attention sink), the rest a
    nonlinear function: R²_lin is high, the first-position numbers say why, and they match lstsq on the rows."""
    rng = np.random.default_rng(4)
    T, n_win, d = 16, 400, 12
    x = rng.standard_normal((n_win, T, d))
    y = np.tanh(2 * x @ rng.standard_normal((d, d))) + 0.5 * x**2
    x[:, 0] *= 10
    y[:, 0] = 30 * x[:, 0] @ rng.standard_normal((d, d))  # ~1e5× the other rows' output variance
    split = {"train": slice(0, 320), "test": slice(320, None)}
    stats = {s: moments_of(x[w].reshape(-1, d), y[w].reshape(-1, d)) for s, w in split.items()}
    first = {s: moments_of(x[w, 0], y[w, 0]) for s, w in split.items()}
    rest = tuple(remove_rows(stats[s], first[s]) for s in ("train", "test"))
    row = block_spectrum(stats["train"], stats["test"], rest=rest)
    xr = {s: x[w, 1:].reshape(-1, d) for s, w in split.items()}
    yr = {s: y[w, 1:].reshape(-1, d) for s, w in split.items()}
    A = lambda s: np.c_[xr[s], np.ones(len(xr[s]))]  # noqa: E731
    ref = r2_rows(yr["test"], A("test") @ np.linalg.lstsq(A("train"), yr["train"], rcond=None)[0])
    yte = y[split["test"]].reshape(-1, d)
    share = 1 - ((yr["test"] - yr["test"].mean(0)) ** 2).sum() / ((yte - yte.mean(0)) ** 2).sum()
    assert abs(row["r2_ex_first"] - ref) < 1e-9 and ref < 0.6
    assert abs(row["first_var_share"] - share) < 1e-12 and share > 0.99
    assert row["r2_lin"] > 0.8 and row["regime"] == "first-token-concentrated"
    # without first-position statistics the rule cannot see it, and the columns say so
    plain = block_spectrum(stats["train"], stats["test"])
    assert np.isnan(plain["r2_ex_first"]) and plain["regime"] != "first-token-concentrated"


def test_low_rank_linear_block_is_unclassified_not_broadly_linear():
    """Every output feature is the same direction of x, fitted well: per-feature R² keeps up with the global one and
    no feature dominates, but the explained part has effective rank ≈ 1 — not "broadly" linear (issue 18)."""
    rng = np.random.default_rng(5)
    n, d_in, d_out = 6000, 16, 64
    x = rng.standard_normal((n, d_in))
    y = np.outer(x @ rng.standard_normal(d_in), rng.uniform(0.5, 1.5, d_out)) + 0.3 * rng.standard_normal((n, d_out))
    row = block_spectrum(moments_of(x[:4800], y[:4800]), moments_of(x[4800:], y[4800:]))
    assert row["r2_lin"] > 0.9 and row["r2_lin"] - row["r2_feature_median"] < 0.2 and row["top1_var_share"] < 0.5
    assert row["eff_rank_explained"] < 1.5
    assert row["regime"] == "unclassified"


def test_outlier_concentrated_needs_rank_about_one():
    """The paper's "rank ≈ 1": a concentrated block is outlier-concentrated only while the effective rank of its
    explained part is below OUTLIER_RANK (2: two equal directions); at 2 it is concentrated but unclassified."""
    from linrec.analyses.spectrum import OUTLIER_RANK, effective_rank, regime

    assert effective_rank(np.diag([1.0, 1.0])) == pytest.approx(OUTLIER_RANK)  # the threshold is two equal directions
    assert 1.6 < effective_rank(np.diag([1.0, 0.25])) < 1.7  # one direction dominating: below it
    args = (0.9, 0.4, 0.9, 1.5, 576, 0.9)  # concentrated: median 0.5 below R²_lin, top-1 share 0.9
    assert regime(*args, OUTLIER_RANK - 1e-9) == "outlier-concentrated"
    assert regime(*args, OUTLIER_RANK) == "unclassified"
    assert regime(*args) == "outlier-concentrated"  # rank not given: not checked


def test_regime_rank_threshold_for_broadly_linear():
    from linrec.analyses.spectrum import REGIME_RANK, regime

    d_out = 200
    at = REGIME_RANK * d_out  # 10: at the threshold the explained part counts as spread out
    assert regime(0.9, 0.85, 0.1, 100.0, d_out, 0.9, at) == "broadly linear"
    assert regime(0.9, 0.85, 0.1, 100.0, d_out, 0.9, at - 1e-9) == "unclassified"
    assert regime(0.9, 0.85, 0.1, 100.0, d_out, 0.9) == "broadly linear"  # rank not given: not checked
    assert regime(0.5, 0.45, 0.1, 100.0, d_out, 0.5, 1.0) == "nonlinear"  # R²_lin < 0.6 comes first


def test_the_toy_blocks_are_the_two_regimes_by_construction():
    """Notebook 04's toy pair, measured with the real blocks' numbers and rule: the spread map is broadly linear, the
    one loud linear feature over quiet quadratic ones is outlier-concentrated with a rank-1 explained part."""
    from linrec.analyses.spectrum import block_anatomy, block_spectrum, toy_blocks

    toys = toy_blocks(seed=0)
    spread, loud = (block_spectrum(*toys[k]) for k in ("broadly linear", "outlier-concentrated"))
    assert spread["regime"] == "broadly linear" and loud["regime"] == "outlier-concentrated"
    assert abs(spread["r2_lin"] - spread["r2_feature_median"]) < 0.05
    assert loud["r2_feature_median"] < 0.05 and abs(loud["r2_lin"] - 400 / (400 + 63 * 2)) < 0.05  # Var(x²−1) = 2
    assert loud["eff_rank_explained"] < 1.2 < 10 < spread["eff_rank_explained"]
    a = block_anatomy(*toys["outlier-concentrated"])
    assert a["var_share"][0] > 0.7 and a["r2_feature"][0] > 0.99 and abs(a["eig_explained"].sum() - 1) < 1e-12


# ---- notebook 04's summaries: the regimes counted, the input side -------------------------------------------------
REGIMES = ("broadly linear", "first-token-concentrated", "outlier-concentrated", "nonlinear", "unclassified")
EPS = 1e-9


def test_regime_summary_counts_and_lists():
    t = _spectrum(["broadly linear", "outlier-concentrated", "nonlinear", "broadly linear", "unclassified"])
    t["first_var_share"] = [0.0, 0.2, 0.3, 0.6, 0.9]  # block 1 sits exactly at the overlap threshold
    s = regime_summary(t, REGIMES).iloc[0]
    counts = (
        "n_broadly_linear",
        "n_outlier_concentrated",
        "n_nonlinear",
        "n_first_token_concentrated",
        "n_unclassified",
    )
    assert tuple(s[c] for c in counts) == (2, 1, 1, 0, 1)
    assert s["outlier_blocks"] == "1" and s["first_token_blocks"] == "" and s["massive_blocks"] == "0"
    assert s["unclassified_blocks"] == "4" and s["outlier_first_blocks"] == "1"
    assert s["first_share_blocks"] == "3 4" and s["top1_broadly_linear_blocks"] == "0 3"
    t.loc[1, "first_var_share"] = 0.19  # just below the overlap threshold
    assert regime_summary(t, REGIMES).iloc[0]["outlier_first_blocks"] == ""
    assert s["max_drop_ex_top8"] == pytest.approx(0.4) and s["eff_rank_out_frac_median"] == pytest.approx(0.1)
    # block 4 is concentrated (median 0.4 below R²_lin, top-1 share 0.6) but its explained part is not rank ≈ 1
    assert s["concentrated_not_rank1_blocks"] == "4"


def test_regime_summary_counts_blocks_at_high_r2_too():
    from linrec.analyses.spectrum import REGIME_HIGH_R2

    t = _spectrum(["broadly linear", "outlier-concentrated", "broadly linear", "nonlinear"])
    t["r2_lin"] = [REGIME_HIGH_R2, REGIME_HIGH_R2 - EPS, 0.95, 0.3]
    s = regime_summary(t, REGIMES).iloc[0]
    assert s["n_high_r2"] == 2 and s["n_broadly_linear_high_r2"] == 2 and s["n_outlier_concentrated_high_r2"] == 0
    assert s["n_outlier_concentrated"] == 1


def test_input_side_is_spearman_per_descriptor():
    t = _spectrum(["nonlinear"] * 5).assign(r2_lin=[0.1, 0.5, 0.2, 0.9, 0.4])
    got = input_side(t).set_index("descriptor")
    for col in ("cond_gram", "eff_rank_in", "dynamic_range_in"):
        assert got.loc[col, "spearman_rho"] == pytest.approx(stats.spearmanr(t["r2_lin"], t[col])[0])


def test_the_top1_row_counts_with_the_regimes_own_share(monkeypatch):
    """regime_summary's "top-1 share ≥ … yet broadly linear" used a literal 0.5 beside REGIME_TOP1: moved to 0.4,
    the row follows it."""
    import linrec.analyses.spectrum as spectrum

    row = {"model": "m", "regime": "broadly linear", "first_var_share": 0.0, "n_massive": 0, "r2_lin": 0.9,
           "r2_ex_top8": 0.9, "eff_rank_out": 100.0, "d_out": 100, "r2_feature_median": 0.9,
           "eff_rank_explained": 50.0}  # fmt: skip
    table = pd.DataFrame([{**row, "block": 0, "top1_var_share": 0.45}, {**row, "block": 1, "top1_var_share": 0.55}])
    assert regime_summary(table, spectrum.REGIMES).loc[0, "top1_broadly_linear_blocks"] == "1"
    monkeypatch.setattr(spectrum, "REGIME_TOP1", 0.4)
    assert regime_summary(table, spectrum.REGIMES).loc[0, "top1_broadly_linear_blocks"] == "0 1"
