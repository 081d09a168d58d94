"""linrec.claims.routing: the routing summary and the anchor rules, each on both sides of each threshold and reaching
each of its outcomes on planted tables."""

import numpy as np
import pandas as pd
import pytest

from linrec.analyses.uncertainty import EQUIVALENCE_MARGIN
from linrec.claims.routing import (
    AUC_MARGIN,
    CONTEXT,
    COSTS,
    HEAL_BUDGET,
    HEALED,
    TOKEN,
    UNDECIDED,
    anchor_table,
    heal_outcome,
    heal_table,
    need_outcome,
    routing_summary,
    split_outcome,
)
from linrec.claims.rules import NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED

EPS = 1e-9


def test_routing_summary_picks_the_best_block_counts_and_correlates_over_the_routed_blocks():
    from scipy.stats import spearmanr

    blocks = list(range(8))
    share = [0.0, 0.25, 0.5, 0.5, 0.75, 0.2, 1.0, 1.0]
    routable = pd.DataFrame({"model": "m", "block": blocks, "routable_pct1": share,
                             "routable_pct1_lo": [s - 0.25 for s in share], "routable_pct1_hi": share,
                             "monotone": [True, True, False, True, True, True, False, True]})  # fmt: skip
    r2 = pd.DataFrame({"model": "m", "block": blocks, "r2_lin": [0.1, 0.3, 0.2, 0.6, 0.5, 0.4, 0.9, 0.8]})
    pred = pd.DataFrame([{"model": "m", "column": "r2_lin", "spearman_rho": -0.4, "rho_lo": -0.8, "rho_hi": 0.1}])
    identity = pd.DataFrame({"model": "m", "block": [0, 1, 2], "r": [0.7, 0.8, 0.9], "r_need": [0.0, 0.1, 0.5]})
    got = routing_summary(routable, r2, pred, identity).iloc[0]
    assert got["best_block"] == 6 and got["best_routable_pct1"] == 1.0  # ties go to the lower block
    assert got["n_quarter"] == 6 and got["n_monotone"] == 6  # 0.2 and 0.0 are below a quarter
    assert got["rho_r2_routable"] == pytest.approx(spearmanr(r2["r2_lin"], share)[0], abs=1e-12)
    assert got["rho_lo"] <= got["rho_r2_routable"] <= got["rho_hi"] and got["outcome"] in ("effect", "inconclusive")
    assert got["rho_r2_swap"] == -0.4
    assert got["identity_r_median"] == pytest.approx(0.8) and got["need_r_median"] == pytest.approx(0.1)
    flat = routing_summary(routable.assign(routable_pct1=0.5), r2).iloc[0]
    assert np.isnan(flat["rho_r2_routable"]) and flat["outcome"] == "inconclusive"  # every block alike: no ρ
    assert np.isnan(flat["identity_r_median"]) and np.isnan(flat["need_r_median"])


def test_the_need_rule_reaches_each_outcome_at_its_thresholds():
    m = EQUIVALENCE_MARGIN
    assert need_outcome(-0.2, 0.25, -m + EPS, m - EPS) == CONTEXT  # 90 % interval just inside ±0.3
    assert need_outcome(0.01, 0.5, 0.02, m + EPS) == TOKEN  # not inside, and the 95 % interval excludes 0
    assert need_outcome(-0.01, 0.5, 0.02, m + EPS) == UNDECIDED  # neither
    assert need_outcome(0.1, 0.25, 0.12, m - EPS) == CONTEXT  # shown nonzero but smaller than the margin
    assert need_outcome(np.nan, 0.1, 0.0, 0.1) == UNDECIDED


def _gate(full_minus_lo, full_minus_hi90):
    return {"full_minus_lo": full_minus_lo, "full_minus_hi90": full_minus_hi90}


def test_the_split_rule_reaches_each_outcome_at_its_thresholds():
    a = AUC_MARGIN
    matches, short, between = _gate(-0.05, a - EPS), _gate(a + EPS, 0.3), _gate(0.0, a + EPS)
    assert split_outcome(matches, short) == CONTEXT
    assert split_outcome(matches, matches) == TOKEN  # the token gate matches the whole too: identity suffices
    assert split_outcome(short, short) == TOKEN  # the context gate falls short
    assert split_outcome(matches, between) == UNDECIDED  # the token gate neither matches nor falls short
    assert split_outcome(between, short) == UNDECIDED
    assert split_outcome(_gate(-0.05, a), short) == UNDECIDED  # at the margin is not inside it
    assert split_outcome(_gate(np.nan, 0.0), short) == UNDECIDED


def test_the_heal_rule_reaches_each_outcome_at_its_thresholds():
    budget = HEAL_BUDGET * 20.0
    assert heal_outcome(-0.1, budget, 20.0) == HEALED
    assert heal_outcome(-0.1, budget + EPS, 20.0) == UNDECIDED
    assert heal_outcome(budget + EPS, 1.0, 20.0) == COSTS
    assert heal_outcome(budget, 1.0, 20.0) == UNDECIDED
    assert heal_outcome(np.nan, 1.0, 20.0) == UNDECIDED
    t = heal_table(pd.DataFrame({"model": "m", "mode": "all", "k": [0, 1, 2], "delta_before": [0.0, 2.0, -1.0],
                                 "delta_after": [0.0, 0.5, 0.3], "delta_after_lo": [0.0, -0.1, 0.25],
                                 "delta_after_hi": [0.0, 0.1, 0.4], "ppl_control": 20.0}))  # fmt: skip
    assert t["outcome"].tolist() == ["", HEALED, COSTS]
    assert np.isnan(t["healed_share"].iloc[0]) and t["healed_share"].iloc[1] == pytest.approx(0.75)
    assert np.isnan(t["healed_share"].iloc[2])  # no zero-shot cost to heal


def _identity(rows):
    return pd.DataFrame([{"model": m, "block": b, "r_need": r, "r_need_lo": lo, "r_need_hi": hi, "r_need_lo90": lo90,
                          "r_need_hi90": hi90, "lookup_r2": 0.0, "r": 0.8}
                         for m, b, r, lo, hi, lo90, hi90 in rows])  # fmt: skip


def _split(model, blocks):
    rows = []
    for b, (ctx, tok) in enumerate(blocks):
        for part, g in (("full", _gate(0.0, 0.0)), ("context", ctx), ("token", tok)):
            rows.append({"model": model, "block": b, "part": part, "auc": 0.7, **g})
    return pd.DataFrame(rows)


def test_the_anchor_verdicts_tally_the_decided_pairs_and_blocks_per_model():
    """Each verdict on a planted table: every decided pair 'context' (reproduced), some (partly), none (not
    reproduced), none decided (not testable); the same for the gates, per model."""
    near0, above, wide = (0.0, -0.1, 0.1, -0.08, 0.08), (0.6, 0.4, 0.8, 0.45, 0.75), (0.1, -0.4, 0.6, -0.3, 0.5)
    identity = _identity([("all", 0, *near0), ("all", 1, *near0), ("all", 2, *wide),
                          ("some", 0, *near0), ("some", 1, *above),
                          ("none", 0, *above), ("undecided", 0, *wide)])  # fmt: skip
    a = AUC_MARGIN
    m, s, b = _gate(-0.05, a / 2), _gate(a * 2, 0.3), _gate(0.0, a * 2)
    split = pd.concat([_split("all", [(m, s), (m, s)]), _split("some", [(m, s), (m, m)]),
                       _split("none", [(s, s)]), _split("undecided", [(b, b)])])  # fmt: skip
    t = anchor_table(identity, split).set_index("model")
    assert t["need_verdict"].to_dict() == {"all": REPRODUCED, "some": PARTLY, "none": NOT_REPRODUCED,
                                           "undecided": NOT_TESTABLE}  # fmt: skip
    assert t["split_verdict"].to_dict() == {"all": REPRODUCED, "some": PARTLY, "none": NOT_REPRODUCED,
                                            "undecided": NOT_TESTABLE}  # fmt: skip
    assert t.loc["all", "need_pairs"] == 3 and t.loc["all", "need_context"] == 2 and t.loc["some", "need_token"] == 1
    assert t.loc["all", "need_r_median"] == pytest.approx(0.0) and t.loc["all", "need_r_max"] == pytest.approx(0.1)
    assert t.loc["some", "split_blocks"] == 2 and t.loc["some", "split_token"] == 1
    only = anchor_table(None, split)
    assert (only["need_verdict"] == NOT_TESTABLE).all() and only["need_pairs"].eq(0).all()


def test_the_routing_summary_reports_the_median_identity_r():
    """Guards `median()` → `max()` (or any other statistic) of the token-identity r in `routing_summary`: the
    model's r over blocks and corpus pairs is 0.1, 0.3, 0.4, 0.95 (median 0.35 by hand); another model's r does not
    enter."""
    blocks = [0, 1, 2]
    routable = pd.DataFrame({"model": "m", "block": blocks, "routable_pct1": [0.2, 0.5, 0.4],
                             "routable_pct1_lo": 0.0, "routable_pct1_hi": 1.0})  # fmt: skip
    r2 = pd.DataFrame({"model": "m", "block": blocks, "r2_lin": [0.3, 0.9, 0.6]})
    identity = pd.DataFrame({"model": ["m", "m", "m", "m", "other"], "block": [0, 1, 0, 1, 0],
                             "corpus_b": ["web", "web", "code", "code", "web"],
                             "r": [0.95, 0.1, 0.4, 0.3, -1.0]})  # fmt: skip
    got = routing_summary(routable, r2, identity=identity).iloc[0]
    assert got["identity_r_median"] == pytest.approx((0.3 + 0.4) / 2)


def test_the_routing_rho_interval_is_fishers_at_the_effective_number_of_blocks_by_hand():
    """Twenty routed blocks whose R²_lin and routable share both drift smoothly with depth (neighbours alike, so the
    effective number of blocks is well under 20): ρ is Spearman's; its 95 % and 90 % intervals are Fisher's z ± z_q
    √(1.06 / (n_eff − 3)) at Bartlett's n_eff of the ranks (by hand, `helpers.hand_effective_n`), not at n − 3 as if
    the blocks were independent; equal to 1e-12. Planted: `"lo", "hi"` read from `lo_iid`/`hi_iid` in
    linrec.claims.routing.routing_summary fails; `dof = n_eff - 3 - extra` → `n - 3 - extra` in
    linrec.analyses.uncertainty.correlation_test fails."""
    from scipy.stats import norm, rankdata, spearmanr

    from helpers import hand_effective_n

    g = np.random.default_rng(2)
    n = 20
    depth = np.arange(n)
    r2 = 0.5 + 0.1 * np.sin(depth / 3) + 0.1 * g.standard_normal(n)
    share = np.clip(0.4 + 0.1 * np.sin(depth / 3 + 0.5) + 0.1 * g.standard_normal(n), 0, 1)
    routable = pd.DataFrame({"model": "m", "block": depth, "routable_pct1": share, "routable_pct1_lo": share - 0.1,
                             "routable_pct1_hi": share + 0.1})  # fmt: skip
    got = routing_summary(routable, pd.DataFrame({"model": "m", "block": depth, "r2_lin": r2})).iloc[0]
    rho = spearmanr(r2, share)[0]
    n_eff = hand_effective_n(rankdata(r2), rankdata(share))
    assert 5 < n_eff < n - 3  # dependent blocks (not at the floor of 5): as if independent would be narrower
    z = np.arctanh(rho)
    for q, lo, hi in ((0.975, "rho_lo", "rho_hi"), (0.95, "rho_lo90", "rho_hi90")):
        h = norm.ppf(q) * np.sqrt(1.06 / (n_eff - 3))
        assert (got[lo], got[hi]) == pytest.approx((np.tanh(z - h), np.tanh(z + h)), abs=1e-12, rel=0)
    assert got["rho_r2_routable"] == pytest.approx(rho, abs=1e-12) and got["n_eff"] == pytest.approx(n_eff, abs=1e-12)
