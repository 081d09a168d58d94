"""Profile agreement across corpora, against scipy and hand-computed cases."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from linrec.errors import LinrecError
from linrec.uncertainty import profile_agreement


def _profiles():
    rng = np.random.default_rng(7)
    rows = []
    base = np.linspace(0.2, 0.9, 8)
    for model, noise in (("m1", 0.02), ("m2", 0.2)):
        for c, corpus in enumerate(("wiki", "code", "web")):
            r2 = base + noise * rng.standard_normal(8) - 0.05 * c
            for block in range(8):
                if corpus == "web" and block == 7:
                    continue  # a block missing for one corpus: only common blocks are compared
                rows.append(
                    {
                        "model": model,
                        "corpus": corpus,
                        "block": block,
                        "r2_lin": r2[block],
                        "r2_lo": r2[block] - 0.03,
                        "r2_hi": r2[block] + 0.03,
                    }
                )
    return pd.DataFrame(rows)


def test_profile_agreement_against_scipy_and_numpy():
    table = _profiles()
    got = profile_agreement(table)
    assert len(got) == 2 * 3
    assert list(got.loc[got.model == "m1", ["corpus_a", "corpus_b"]].itertuples(index=False, name=None)) == [
        ("wiki", "code"),
        ("wiki", "web"),
        ("code", "web"),
    ]
    for r in got.itertuples():
        a = table[(table.model == r.model) & (table.corpus == r.corpus_a)].set_index("block")
        b = table[(table.model == r.model) & (table.corpus == r.corpus_b)].set_index("block")
        blocks = sorted(set(a.index) & set(b.index))
        va, vb = a.loc[blocks, "r2_lin"].to_numpy(), b.loc[blocks, "r2_lin"].to_numpy()
        assert r.n_blocks == len(blocks) == (7 if "web" in (r.corpus_a, r.corpus_b) else 8)
        assert r.pearson_r == pytest.approx(np.corrcoef(va, vb)[0, 1], abs=1e-12)
        t = r.pearson_r * np.sqrt((len(va) - 2) / (1 - r.pearson_r**2))  # the textbook t-test
        assert r.pearson_p == pytest.approx(2 * sps.t.sf(abs(t), len(va) - 2), rel=1e-9)
        ranks = np.corrcoef(sps.rankdata(va), sps.rankdata(vb))[0, 1]
        assert r.spearman_rho == pytest.approx(ranks, abs=1e-12)
        assert r.spearman_p == pytest.approx(sps.spearmanr(va, vb).pvalue, rel=1e-12)
        d = np.abs(va - vb)
        assert r.max_abs_diff == pytest.approx(d.max()) and r.max_diff_block == blocks[int(np.argmax(d))]
        disjoint = (a.loc[blocks, "r2_hi"].to_numpy() < b.loc[blocks, "r2_lo"].to_numpy()) | (
            b.loc[blocks, "r2_hi"].to_numpy() < a.loc[blocks, "r2_lo"].to_numpy()
        )
        assert r.n_ci_disjoint == disjoint.sum() and r.n_ci_compared == len(blocks)
    m1 = got[got.model == "m1"]
    assert (m1.pearson_r > 0.95).all() and (got[got.model == "m2"].pearson_r < m1.pearson_r.min()).all()


def test_profile_agreement_hand_computed_case():
    t = pd.DataFrame(
        {
            "model": ["m"] * 6,
            "corpus": ["a"] * 3 + ["b"] * 3,
            "block": [0, 1, 2] * 2,
            "r2_lin": [0.1, 0.5, 0.9, 0.2, 0.4, 0.3],
            "r2_lo": [0.05, 0.45, 0.85, 0.15, 0.35, 0.25],
            "r2_hi": [0.15, 0.55, 0.95, 0.25, 0.45, 0.35],
        }
    )
    (r,) = profile_agreement(t).itertuples()
    assert r.spearman_rho == pytest.approx(0.5) and r.pearson_r == pytest.approx(
        np.corrcoef([0.1, 0.5, 0.9], [0.2, 0.4, 0.3])[0, 1]
    )
    assert r.max_abs_diff == pytest.approx(0.6) and r.max_diff_block == 2
    assert r.n_ci_disjoint == 1 and r.n_ci_compared == 3  # blocks 0 and 1 touch (overlap); block 2 apart
    no_ci = profile_agreement(t.drop(columns=["r2_lo", "r2_hi"]))
    assert np.isnan(no_ci.loc[0, "n_ci_disjoint"])
    short = profile_agreement(t[t.block > 0])  # 2 blocks: correlations undefined, not an error
    assert (
        np.isnan(short.loc[0, "pearson_r"])
        and np.isnan(short.loc[0, "spearman_p"])
        and short.loc[0, "max_diff_block"] == 2
    )
    with pytest.raises(LinrecError, match="columns"):
        profile_agreement(t.drop(columns=["block"]))
