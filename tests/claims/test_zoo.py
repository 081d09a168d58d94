"""linrec.claims.zoo: the zoo's rule reaches every outcome at its thresholds, and its pooled claims separate a planted
model effect from the within-model relation."""

import numpy as np
import pandas as pd
import pytest

from linrec.base.errors import LinrecError
from linrec.claims.rules import CLAIM2_MIN_EFFECT, NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED
from linrec.claims.zoo import INCONCLUSIVE, SAME, converged_runs, part_word, zoo_2a, zoo_verdict


def pooled_claims(probe_summary, predictors, regimes, runs=None) -> pd.DataFrame:
    """The zoo's claims 3, 6b and 4 judged by their rows on the zoo's tables (`pooled_table`, as notebook 08 stores
    them)."""
    from linrec.claims.probe import RULE_3
    from linrec.claims.regimes import RULE_4
    from linrec.claims.swap import RULE_6B
    from linrec.claims.zoo import pooled_table

    return pooled_table(
        (RULE_3, RULE_6B, RULE_4),
        {
            "zoo_probe_summary": probe_summary,
            "zoo_runs": runs,
            "zoo_swap_predictors": predictors,
            "zoo_regimes": regimes,
        },
    )


def _comp(effects: dict, lo: dict | None = None, hi: dict | None = None, level: str = "seed",
          level_effect: float = np.sqrt(2)) -> pd.DataFrame:  # fmt: skip
    """A planted decomposition whose shape components give each factor the effect (distance it adds) in `effects`,
    the ends of its interval the effects in `lo` and `hi` (default ± 0.02; a negative number a component below 0);
    the level all `level`'s, an effect of `level_effect` (its interval's ends 0.5 and 1.4 times the component)."""

    def comp(e: float) -> float:
        return np.sign(e) * e * e / 2

    rows = []
    for f in ("layout", "text", "seed", "residual"):
        e = effects.get(f, 0.0)
        c, c_lo, c_hi = comp(e), comp((lo or {}).get(f, e - 0.02)), comp((hi or {}).get(f, e + 0.02))
        rows.append({"part": "shape", "factor": f, "share": c, "share_lo": c, "share_hi": c, "component": c,
                     "component_lo": c_lo, "component_hi": c_hi})  # fmt: skip
        lc = comp(level_effect) if f == level else 0.0
        rows.append({"part": "level", "factor": f, "share": float(f == level), "share_lo": 0.0, "share_hi": 1.0,
                     "component": lc, "component_lo": 0.5 * lc if f == level else -0.1 * comp(CLAIM2_MIN_EFFECT),
                     "component_hi": 1.4 * lc if f == level else 0.1 * comp(CLAIM2_MIN_EFFECT)})  # fmt: skip
    return pd.DataFrame(rows)


def _learned(*outcomes):
    """Trained-vs-init comparisons whose raw distance is `outcomes` ("differ": 0.3 [0.25, 0.35]; "agree": 0.01)."""
    size = {"differ": (0.3, 0.25, 0.35), "agree": (0.01, 0.005, 0.015)}
    return pd.DataFrame([{"kind": "trained vs init", "a": f"r{k}", "b": f"r{k} step 0", "distance": size[o][0],
                          "distance_lo": size[o][1], "distance_hi": size[o][2], "floor": 0.001, "level": 0.0,
                          "level_lo": -0.01, "level_hi": 0.01, "level_floor": 0.001, "shape": 0.0, "shape_lo": 0.0,
                          "shape_hi": 0.01, "shape_floor": 0.001} for k, o in enumerate(outcomes)])  # fmt: skip


def test_the_zoos_rule_reaches_every_outcome_at_its_thresholds():
    """Layout shown, largest and moving the shape by ≥ 0.1: not reproduced (just under 0.1: inconclusive); the seed
    setting it: reproduced with the layout's effect bounded below 0.1 (at 0.1: not testable), partly with the layout
    shown to move it by 0.1 too; every factor bounded below 0.1: the same for every factor, reproduced where every
    profile was learned, not reproduced where none was, not testable where some were; a component whose interval
    reaches 0 is not shown."""
    m = CLAIM2_MIN_EFFECT
    assert zoo_2a(_comp({"layout": m, "seed": 0.05})) == NOT_REPRODUCED
    under = _comp({"layout": m - 1e-6, "seed": 0.05})
    assert part_word(under, "shape").word == INCONCLUSIVE and zoo_2a(under) == NOT_TESTABLE
    assert zoo_2a(_comp({"layout": 0.05, "seed": 0.3}, hi={"layout": m - 1e-6})) == REPRODUCED
    assert zoo_2a(_comp({"layout": 0.05, "seed": 0.3}, hi={"layout": m})) == NOT_TESTABLE
    assert zoo_2a(_comp({"layout": 0.15, "seed": 0.3})) == PARTLY
    same = _comp({"layout": 0.03, "seed": 0.02}, hi={"layout": m - 1e-6, "text": 0.05, "seed": 0.05})
    assert part_word(same, "shape").word == SAME and part_word(same, "shape").largest == "layout"
    assert zoo_2a(same, _learned("differ", "differ")) == REPRODUCED
    assert zoo_2a(same, _learned("agree", "agree")) == NOT_REPRODUCED
    assert zoo_2a(same, _learned("differ", "agree")) == NOT_TESTABLE and zoo_2a(same) == NOT_TESTABLE
    at_zero = _comp({"layout": 0.3, "seed": 0.2}, lo={"layout": 0.0})
    assert part_word(at_zero, "shape").word == "seed"  # the layout's interval reaches 0: not shown
    assert zoo_verdict(None)["claim2a"] == NOT_TESTABLE
    v = zoo_verdict(_comp({"layout": 0.3, "seed": 0.05}))
    assert v["shape_factor"] == "layout" and v["word"].startswith("layout sets the shape (0.300 [0.280, 0.320])")
    assert "; seed sets the level" in v["word"]
    assert "learned in some runs only" in zoo_verdict(same, _learned("differ", "agree"))["word"]


def test_a_level_the_layout_sets_makes_a_reproduced_zoo_2a_partly():
    """The convention's level counts for claim 2a as for claim 5 (issue 64): the same shape for every factor, every
    profile learned, and the layout setting the level by ≥ 0.1 is partly; the layout's level effect just under 0.1
    (its interval's lower end above 0, the effect short of the margin) leaves it reproduced; a level the seed sets
    leaves it reproduced; a not-reproduced shape stays not reproduced whatever sets the level."""
    m = CLAIM2_MIN_EFFECT
    hi = {"layout": m - 1e-6, "text": 0.05, "seed": 0.05}
    learned = _learned("differ", "differ")
    for level, size, want in [("layout", m, PARTLY), ("layout", m - 1e-6, REPRODUCED), ("seed", m, REPRODUCED)]:
        planted = _comp({"layout": 0.03, "seed": 0.02}, hi=hi, level=level, level_effect=size)
        assert zoo_2a(planted, learned) == want, (level, size)
    assert zoo_verdict(_comp({"layout": 0.03, "seed": 0.02}, hi=hi, level="layout", level_effect=m),
                       learned)["claim2a"] == PARTLY  # fmt: skip
    assert zoo_2a(_comp({"layout": m, "seed": 0.05}, level="layout")) == NOT_REPRODUCED
    seed_sets = _comp({"layout": 0.05, "seed": 0.3}, hi={"layout": m - 1e-6}, level="layout", level_effect=m)
    assert zoo_2a(seed_sets) == PARTLY  # the seed sets the shape, the layout the level


def test_the_pooled_claims_separate_a_planted_model_effect_from_the_within_model_relation():
    """Twelve models of eight blocks whose mean nonlinearity and mean probe gain rise together from model to model
    (a model effect, r ≈ 1 across models) while within each model the gain is unrelated to nonlinearity: pooled with
    the model effect (claim 3's pooled row) the correlation is near 0 and shown inside ±0.3 with enough blocks;
    ignoring the models it is strongly positive. The zoo's claims row carries the block count and the power."""
    from linrec.analyses.probe_summary import probe_summary
    from linrec.analyses.uncertainty import correlation_test

    g = np.random.default_rng(3)
    rows = []
    for m in range(12):
        r2 = 0.9 - 0.05 * m + 0.05 * g.standard_normal(8)
        gain = 0.001 * m + 0.0005 * g.standard_normal(8)  # the model's level, nothing from its blocks' r2
        rows += [{"model": f"m{m}", "block": b, "r2_lin_rows": r2[b], "gain": gain[b], "gain_quad": gain[b] + 0.001,
                  "probe_stop": "validation", "seconds_probe": 0.1} for b in range(8)]  # fmt: skip
    probe = pd.DataFrame(rows)
    naive = correlation_test(1 - probe["r2_lin_rows"], probe["gain"], kind="pearson")
    assert naive["rho"] > 0.7 and naive["outcome"] == "effect"
    summary = probe_summary(probe)
    pool = summary[summary["model"] == "all"].iloc[0]
    assert abs(pool["pearson_r"]) < 0.3 and pool["n_blocks"] == 96
    claims = pooled_claims(summary, None, None).set_index("claim")
    assert claims.loc["3", "n_models"] == 12 and claims.loc["3", "n_blocks"] == 96
    assert claims.loc["3", "powered"] == (96 >= claims.loc["3", "n_needed"])
    assert claims.loc["3", "rho"] == pytest.approx(pool["pearson_r"])


def test_only_converged_runs_reach_a_verdict():
    """Issue 61: with the zoo's runs table, "learned" is judged on the converged runs' trained-vs-init comparisons
    alone (a run that did not move, not converged, no longer makes the profiles "learned in some runs only"), and
    the word names the runs left out; the pooled claims refuse tables that hold a run that did not converge, and with
    no converged run every zoo verdict is not testable."""
    from linrec.analyses.probe_summary import probe_summary

    same = _comp({"layout": 0.03, "seed": 0.02}, hi={"layout": CLAIM2_MIN_EFFECT - 1e-6, "text": 0.05, "seed": 0.05})
    comparisons = _learned("differ", "differ", "agree")  # r2 did not move: it did not train
    runs = pd.DataFrame({"run": ["r0", "r1", "r2"], "converged": [True, True, False]})
    assert zoo_2a(same, comparisons) == NOT_TESTABLE  # without the table: learned in some runs only
    v = zoo_verdict(same, comparisons, runs)
    assert v["claim2a"] == REPRODUCED and "every profile learned" in v["word"]
    assert v["word"].endswith("1 of 3 runs not converged and left out (r2)")
    none = zoo_verdict(None, comparisons, runs.assign(converged=False))
    assert none["claim2a"] == NOT_TESTABLE and none["word"].startswith("no run converged")

    g = np.random.default_rng(0)
    rows = [{"model": m, "block": b, "r2_lin_rows": 0.9 + 0.01 * g.standard_normal(), "gain": 0.01 * g.random(),
             "gain_quad": 0.02, "probe_stop": "validation", "seconds_probe": 0.1}
            for m in ("r0", "r1", "r2") for b in range(8)]  # fmt: skip
    probe = pd.DataFrame(rows)
    with pytest.raises(LinrecError, match="r2, which did not converge"):
        pooled_claims(probe_summary(probe), None, None, runs)
    kept = pooled_claims(probe_summary(probe[probe["model"] != "r2"]), None, None, runs).set_index("claim")
    assert kept.loc["3", "n_models"] == 2 and kept.loc["3", "n_blocks"] == 16
    nothing = pooled_claims(None, None, None, runs.assign(converged=False))
    assert (nothing["verdict"] == NOT_TESTABLE).all() and nothing["reason"].str.contains("no zoo run converged").all()


def _fisher(r: float, dof: float, level: float, c: float = 1.0) -> tuple[float, float]:
    """Fisher's z-interval of r at `dof` degrees of freedom, its z variance inflated by `c`, written out here."""
    from scipy.stats import norm

    h = norm.ppf(0.5 + level / 2) * np.sqrt(c / dof)
    return float(np.tanh(np.arctanh(r) - h)), float(np.tanh(np.arctanh(r) + h))


def test_the_pooled_claims_carry_the_90_percent_intervals_their_no_effect_reads_by_hand():
    """The zoo's claims 3 and 6b decide "no effect" / "not a useful flag" on the pooled row's 90 % Fisher interval
    (`correlation_outcome`, `flag_outcome`): checked by value against a hand computation on three planted models. Claim
    3: Pearson r of (1 − R²_lin, gain) centred per model, n_eff the sum of each model's Bartlett n_eff, 3 + (3 − 1)
    degrees of freedom spent (the model means); the claims row's `lo90`/`hi90` are that interval's, its `lo`/`hi`
    the 95 % one. Claim 6b: Spearman ρ(R²_lin, ΔPPL) of ranks centred per model, z variance × 1.06; the partial ρ
    given depth spends one more. Planted: the claims row's lo90/hi90 read from the 95 % columns fails; the pooled
    dof without the (groups − 1) fails."""
    from scipy.stats import rankdata

    from linrec.analyses.probe_summary import probe_summary
    from linrec.analyses.swap_summary import swap_predictors
    from linrec.analyses.uncertainty import effective_n
    from linrec.claims.swap import flag_outcome

    g = np.random.default_rng(11)
    models = ("a", "b", "c")
    probe = pd.DataFrame([{"model": m, "block": b, "r2_lin_rows": 0.5 + 0.4 * g.random(), "gain": 0.02 * g.random(),
                           "gain_quad": 0.03, "probe_stop": "validation", "seconds_probe": 0.1}
                          for m in models for b in range(10)])  # fmt: skip
    n = 12
    depth = [min(i, n - 1 - i) for i in range(n)]
    r2 = {m: 0.5 + 0.4 * g.random(n) for m in models}
    delta = {m: np.exp(-3 * r2[m]) + 0.05 * g.standard_normal(n) for m in models}
    values = pd.concat([pd.DataFrame({"model": m, "block": range(n), "depth_from_end": depth, "r2_lin": r2[m],
                                      "screening_delta_ppl": delta[m] + 0.01}) for m in models])  # fmt: skip
    swap = pd.concat([pd.DataFrame({"model": m, "block": range(n), "first": "map", "r2_lin": r2[m],
                                    "delta_ppl": delta[m], "delta_lo": delta[m] - 0.1, "delta_hi": delta[m] + 0.1,
                                    "ppl_base": 20.0}) for m in models])  # fmt: skip
    summary, pred = probe_summary(probe), swap_predictors(values, swap, n_boot=50)
    claims = pooled_claims(summary, pred, None).set_index("claim")

    # claim 3, by hand
    xs, ys, n_eff = [], [], 0.0
    for _, t in probe.groupby("model"):
        x, y = 1 - t["r2_lin_rows"].to_numpy(), t["gain"].to_numpy()
        n_eff += effective_n(x, y)
        xs.append(x - x.mean())
        ys.append(y - y.mean())
    x, y = np.concatenate(xs), np.concatenate(ys)
    r = (x * y).sum() / np.sqrt((x * x).sum() * (y * y).sum())
    dof = n_eff - 3 - 2
    c3 = claims.loc["3"]
    assert c3["rho"] == pytest.approx(r, abs=1e-12) and c3["n_eff"] == pytest.approx(n_eff, rel=1e-12)
    assert (c3["lo90"], c3["hi90"]) == pytest.approx(_fisher(r, dof, 0.90), rel=1e-10)
    assert (c3["lo"], c3["hi"]) == pytest.approx(_fisher(r, dof, 0.95), rel=1e-10)
    assert c3["lo"] < c3["lo90"] < c3["hi90"] < c3["hi"]

    # claim 6b, by hand: ranks centred per model; the partial ρ with a line in depth's ranks taken out of each
    def ranks(m):
        return rankdata(r2[m]), rankdata(delta[m]), rankdata(depth)

    def line_out(v, z):
        v, z = v - v.mean(), z - z.mean()
        return v - (v * z).sum() / (z * z).sum() * z

    parts = {"rho": ([], [], 0.0), "partial": ([], [], 0.0)}
    for m in models:
        ra, rb, rz = ranks(m)
        for key, (u, v) in (("rho", (ra, rb)), ("partial", (line_out(ra, rz), line_out(rb, rz)))):
            us, vs, ne = parts[key]
            parts[key] = (us + [u - u.mean()], vs + [v - v.mean()], ne + effective_n(u, v))
    want = {}
    for key, spent in (("rho", 3 + 2), ("partial", 3 + 1 + 2)):
        u, v = np.concatenate(parts[key][0]), np.concatenate(parts[key][1])
        rho = (u * v).sum() / np.sqrt((u * u).sum() * (v * v).sum())
        want[key] = (rho, _fisher(rho, parts[key][2] - spent, 0.90, 1.06), _fisher(rho, parts[key][2] - spent, 0.95,
                                                                                    1.06))  # fmt: skip
    pool = pred[(pred["model"] == "all") & (pred["column"] == "r2_lin")].iloc[0]
    assert pool["spearman_rho"] == pytest.approx(want["rho"][0], abs=1e-12)
    assert (pool["rho_lo90"], pool["rho_hi90"]) == pytest.approx(want["rho"][1], rel=1e-10)
    assert (pool["partial_lo90"], pool["partial_hi90"]) == pytest.approx(want["partial"][1], rel=1e-10)
    assert (pool["partial_lo"], pool["partial_hi"]) == pytest.approx(want["partial"][2], rel=1e-10)
    c6 = claims.loc["6b"]
    assert c6["rho"] == pytest.approx(want["rho"][0], abs=1e-12)
    assert (c6["lo90"], c6["hi90"]) == pytest.approx(want["rho"][1], rel=1e-10)
    assert (c6["lo"], c6["hi"]) == pytest.approx(want["rho"][2], rel=1e-10)
    assert c6["outcome"] == flag_outcome(pool)


def test_the_layout_beside_a_seed_that_sets_the_shape_at_its_thresholds():
    """Where the seed (or text) sets the shape, claim 2a is partly only with the layout shown to move it too: its
    component's interval above 0 and its effect at least 0.1. At 0.1 exactly: partly; just under: not testable (not
    bounded below 0.1 either: its interval reaches 0.12); its interval's lower end at 0 (not shown) with an effect of
    0.15: not testable; just above 0: partly. Planted: > for ≥ on the layout's effect fails; ≥ 0 for > 0 on its
    lower end fails."""
    m = CLAIM2_MIN_EFFECT
    for layout, lo, want in [(m, 0.05, PARTLY), (m - 1e-6, 0.05, NOT_TESTABLE), (0.15, 0.0, NOT_TESTABLE),
                             (0.15, 1e-4, PARTLY)]:  # fmt: skip
        planted = _comp({"layout": layout, "seed": 0.3}, lo={"layout": lo}, hi={"layout": 0.2})
        assert part_word(planted, "shape").word == "seed", (layout, lo)
        assert zoo_2a(planted) == want, (layout, lo)


def test_a_factor_the_zoo_holds_fixed_does_not_keep_a_part_from_being_the_same():
    """A zoo that varies no text (params/zoo_paper.yaml) has no text component: the shape is the same for every
    factor when the layout's and the seed's effects are bounded below 0.1, and not when the layout's upper end
    reaches 0.1; a decomposition with no factor varied at all is inconclusive, never vacuously the same."""
    m = CLAIM2_MIN_EFFECT
    planted = _comp({"layout": 0.03, "seed": 0.02}, hi={"layout": m - 1e-6, "seed": 0.05})
    fixed = planted["factor"] == "text"
    planted.loc[fixed, ["component", "component_lo", "component_hi", "share", "share_lo", "share_hi"]] = np.nan
    assert part_word(planted, "shape").word == SAME and part_word(planted, "shape").varied == ("layout", "seed")
    assert zoo_2a(planted, _learned("differ", "differ")) == REPRODUCED
    word = zoo_verdict(planted, _learned("differ", "differ"))["word"]
    assert "the shape is the same for every layout and seed within 0.1" in word and "text" not in word, word
    reaching = _comp({"layout": 0.03, "seed": 0.02}, hi={"layout": m, "seed": 0.05})
    reaching.loc[fixed, ["component", "component_lo", "component_hi"]] = np.nan
    assert part_word(reaching, "shape").word == INCONCLUSIVE
    none = planted.copy()
    none.loc[none["factor"] != "residual", ["component", "component_lo", "component_hi"]] = np.nan
    assert part_word(none, "shape").word == INCONCLUSIVE


def test_the_pooled_row_is_powered_at_exactly_the_blocks_it_needs():
    """`powered`: the pooled row's blocks ≥ the blocks the equivalence test needs. With `n_needed` planted at the
    block count exactly (and one ulp either side): powered at it and one ulp below, not one ulp above; the words
    (`linrec.outputs.zoo_text`) read this flag. Planted: `r["n_blocks"] >= r["n_needed"]` → `>` in
    linrec.claims.zoo.pooled_row fails (at → not powered)."""
    from helpers import edge_tables
    from linrec.analyses.probe_summary import probe_summary

    g = np.random.default_rng(5)
    probe = pd.DataFrame([{"model": f"m{m}", "block": b, "r2_lin_rows": 0.5 + 0.4 * g.random(),
                           "gain": 0.01 * g.random(), "gain_quad": 0.02, "probe_stop": "validation",
                           "seconds_probe": 0.1}
                          for m in range(2) for b in range(6)])  # fmt: skip
    summary = probe_summary(probe, n_boot=20)
    pool = summary["model"] == "all"
    n_blocks = float(summary.loc[pool, "n_blocks"].iloc[0])
    assert n_blocks == 12
    tables = edge_tables(lambda need: summary.assign(n_needed=np.where(pool, need, summary["n_needed"])), n_blocks)
    got = {k: bool(pooled_claims(t, None, None).set_index("claim").loc["3", "powered"]) for k, t in tables.items()}
    assert got == {"below": True, "at": True, "above": False}


def test_learned_needs_every_run_to_move_not_most():
    """`learned`: True only if every run's trained-vs-init distance differs, False only if every one agrees; two of
    three either way is undecided (None). Planted: `all(w == "differ" …)` → most, or `all(w == "agree" …)` → most, in
    linrec.claims.zoo.learned fails."""
    from linrec.claims.zoo import learned

    assert learned(_learned("differ", "differ", "differ")) is True
    assert learned(_learned("agree", "agree", "agree")) is False
    for outcomes in (("differ", "differ", "agree"), ("agree", "differ", "agree"), ("agree", "agree", "differ")):
        assert learned(_learned(*outcomes)) is None, outcomes


def test_converged_runs_reads_the_column_as_computed_and_as_read_back(tmp_path):
    """The runs whose `converged` is true, in order, whether the column holds booleans or the words a CSV holds
    ("False" is a non-empty string: truthy to bool(), not converged here)."""
    t = pd.DataFrame({"run": ["a", "b", "c"], "converged": [True, False, True]})
    assert converged_runs(t) == ["a", "c"]
    words = t.assign(converged=["True", "False", "True"])
    assert converged_runs(words) == ["a", "c"]
    t.to_csv(tmp_path / "runs.csv", index=False)
    assert converged_runs(pd.read_csv(tmp_path / "runs.csv")) == ["a", "c"]
    assert converged_runs(t.assign(converged=[False, False, False])) == []
