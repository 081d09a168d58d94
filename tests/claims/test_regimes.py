"""linrec.claims.regimes (claim 4): the verdict at its thresholds on the regime summary, with and without the first
position, its replication on every sample (`claim4_holds`), and the regime story it tells; the summary's own numbers
are tests/analyses/test_spectrum.py's."""

import pandas as pd
import pytest

from helpers import predictor_row as _flag_row
from helpers import predictors as _pred
from helpers import spectrum_rows as _spectrum
from linrec.analyses.spectrum import regime_replication, regime_summary
from linrec.base.files import project_root
from linrec.claims.corpora import verdict_5
from linrec.claims.regimes import claim4_holds, verdict_4
from linrec.claims.rules import (
    NOT_REPRODUCED,
    REPRODUCED,
)
from linrec.claims.swap import (
    verdict_6b,
)

EPS = 1e-9


# ---- claim 4: regimes ------------------------------------------------------------------------------------
REGIMES = ("broadly linear", "first-token-concentrated", "outlier-concentrated", "nonlinear", "unclassified")


@pytest.mark.parametrize(
    "regimes, word",
    [
        (["broadly linear", "outlier-concentrated"], REPRODUCED),
        (["broadly linear", "nonlinear"], NOT_REPRODUCED),
        (["outlier-concentrated", "first-token-concentrated"], NOT_REPRODUCED),
    ],
)
def test_claim4_needs_both_regimes(regimes, word):
    assert verdict_4(regime_summary(_spectrum(regimes), REGIMES)).verdict == word


def test_claim4_pools_models():
    t = pd.concat([_spectrum(["broadly linear"], "a"), _spectrum(["outlier-concentrated"], "b")])
    assert verdict_4(regime_summary(t, REGIMES)).verdict == REPRODUCED


def test_regime_replication_applies_claim4_on_every_sample():
    """Claim 4 on disjoint samples: the rule runs per sample over all models (the regimes of model a and b pool, as
    on the main sample); one sample without an outlier-concentrated block makes it sample-dependent."""
    two = lambda k, a, b: pd.concat([_spectrum(a, "a"), _spectrum(b, "b")]).assign(sample=k)  # noqa: E731
    same = pd.concat([two(k, ["broadly linear", "outlier-concentrated"], ["broadly linear"]) for k in (0, 1, 2)])
    got = regime_replication(same, REGIMES, claim4_holds).set_index("model")
    assert (got["replication"] == "holds on every sample").all() and (got["n_claim4_passes"] == 3).all()
    assert got.loc["a", "n_broadly_linear"] == "1 1 1" and got.loc["a", "outlier_blocks_every_sample"] == "1"
    assert got.loc["b", "n_outlier_concentrated"] == "0 0 0" and got.loc["a", "samples"] == "0 1 2"
    moved = pd.concat([same[same["sample"] < 2], two(2, ["broadly linear", "nonlinear"], ["outlier-concentrated"])])
    got = regime_replication(moved, REGIMES, claim4_holds).set_index("model")
    assert (got["replication"] == "holds on every sample").all()  # b carries the outlier regime on sample 2
    assert got.loc["a", "outlier_blocks_every_sample"] == "" and got.loc["a", "outlier_blocks"] == "1 | 1 | none"
    gone = pd.concat([same[same["sample"] < 2], two(2, ["broadly linear", "nonlinear"], ["nonlinear"])])
    got = regime_replication(gone, REGIMES, claim4_holds)
    assert (got["replication"] == "sample-dependent").all() and (got["n_claim4_passes"] == 2).all()
    none = pd.concat([two(k, ["broadly linear"], ["nonlinear"]) for k in (0, 1)])
    assert (regime_replication(none, REGIMES, claim4_holds)["replication"] == "fails on every sample").all()


def test_claim4_5_and_6b_without_the_first_position():
    s4 = regime_summary(_spectrum(["broadly linear", "outlier-concentrated"]).assign(
        regime_ex_first=["broadly linear", "unclassified"]), REGIMES)  # fmt: skip
    v4 = verdict_4(s4)
    assert v4.verdict == REPRODUCED and v4.without_first == NOT_REPRODUCED
    assert s4.iloc[0]["n_outlier_concentrated_ex_first"] == 0
    assert verdict_4(regime_summary(_spectrum(["broadly linear"]), REGIMES)).without_first == ""  # not measured
    pair = {"model": "a", "corpus_a": "wiki", "corpus_b": "web", "n_blocks": 4, "n_windows_a": 8, "n_windows_b": 8}
    for key, (lo, hi) in {"level": (0.01, 0.05), "shape": (0.01, 0.05), "level_ex_first": (0.01, 0.05),
                          "shape_ex_first": (0.2, 0.3)}.items():  # fmt: skip
        part, _, sfx = key.partition("_")
        sfx = f"_{sfx}" if sfx else ""
        pair |= {key: (lo + hi) / 2, f"{part}_lo{sfx}": lo, f"{part}_hi{sfx}": hi}
    v5 = verdict_5(pd.DataFrame([pair]))  # claim 5 (issue 87): position 0 removed can lower the verdict, never raise it
    assert v5.without_first == NOT_REPRODUCED and v5.verdict == NOT_REPRODUCED
    overlays = verdict_5(pd.DataFrame([pair | {"shape_ex_first": 0.02, "shape_lo_ex_first": 0.01,
                                                "shape_hi_ex_first": 0.03}]))  # fmt: skip
    assert overlays.verdict == overlays.without_first == REPRODUCED
    pred = pd.concat([_pred(), pd.DataFrame([_flag_row() | {"column": "r2_ex_first", "rho_lo90": -0.25,
                                                              "rho_hi90": 0.25}])])  # fmt: skip
    v6 = verdict_6b(pred)
    assert v6.verdict == REPRODUCED and v6.without_first == NOT_REPRODUCED
    assert v6.evidence[0]["outcome_ex_first"] == "not a useful flag"


ROOT = project_root(__file__)


def test_claim4_is_not_testable_where_no_block_could_be_outlier_concentrated():
    """Issue 87, item 6: no zoo block has a massive feature or a concentrated output, so '0 outlier-concentrated'
    cannot test the claim: not testable, with the precondition named, rather than not reproduced. One block with a
    massive feature, or one concentrated but not rank 1, restores the test (not reproduced: the regime is absent where
    it could be). A table written before the columns were (no `massive_blocks`) is judged as before. Planted: the
    precondition check dropped (the first case gives not reproduced)."""
    from linrec.claims.regimes import NO_CANDIDATE
    from linrec.claims.rules import NOT_TESTABLE

    t = _spectrum(["broadly linear", "nonlinear", "nonlinear"])
    t["n_massive"] = 0
    t["top1_var_share"], t["eff_rank_out"], t["r2_feature_median"] = 0.1, 50.0, 0.85  # spread, not concentrated
    s = regime_summary(t, REGIMES)
    assert (s["massive_blocks"].iloc[0], s["concentrated_not_rank1_blocks"].iloc[0]) == ("", "")
    v = verdict_4(s)
    assert v.verdict == NOT_TESTABLE and v.reason == NO_CANDIDATE and v.evidence
    assert verdict_4(s.assign(massive_blocks="2")).verdict == NOT_REPRODUCED
    assert verdict_4(s.assign(concentrated_not_rank1_blocks="1")).verdict == NOT_REPRODUCED
    assert verdict_4(s.drop(columns="massive_blocks")).verdict == NOT_REPRODUCED
