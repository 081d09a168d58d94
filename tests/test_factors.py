"""linrec.analyses.factors and linrec.claims.zoo: what sets a trained profile's level and shape (layout, text, seed,
residual), checked against a hand computation on planted profiles, and the zoo's rule at its thresholds; the pooled
across-block claims with a planted model effect."""

import itertools

import numpy as np
import pandas as pd
import pytest

from linrec.analyses.factors import components, distance_table, pair_kinds
from linrec.claims.rules import CLAIM2_MIN_EFFECT, NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED
from linrec.claims.zoo import INCONCLUSIVE, SAME, effect, part_word, zoo_2a, zoo_verdict

L = 8
LAYOUT = {"gpt2": np.linspace(0.3, 0.9, L), "pythia": np.linspace(0.9, 0.3, L), "llama": np.full(L, 0.6)}


def zoo_profiles(layout=1.0, text=0.0, seed=0.02, seeds=3, rng=0):
    """A zoo of planted final profiles: each layout's shape (scaled by `layout`), `text` added to every block on the
    second text (a level shift), independent N(0, seed²) draws per run and block. Returns (wide, factors)."""
    g = np.random.default_rng(rng)
    runs = [(lay, "wiki", s, 0) for lay in LAYOUT for s in range(seeds)] + [("gpt2", "wiki", 0, 1)]
    runs += [("gpt2", "web", s, 0) for s in range(2)]
    rows, prof = [], {}
    for lay, t, s, d in runs:
        name = f"{lay}-i{s}-d{d}" + ("" if t == "wiki" else "-web")
        base = 0.6 + layout * (LAYOUT[lay] - 0.6)
        prof[name] = base + (text if t == "web" else 0.0) + g.normal(0, seed, L)
        rows.append({"run": name, "layout": lay, "text": t, "init_seed": s, "data_seed": d})
    return pd.DataFrame(prof).T, pd.DataFrame(rows)


def _noise(factors, level=0.0, shape=0.0):
    return {r: {"level": level, "shape": shape} for r in factors["run"]}


def _by_hand(wide, factors, noise):
    """The decomposition written out with loops over every pair (module docstring of linrec.analyses.factors)."""
    p = {r: wide.loc[r].to_numpy(float) for r in factors["run"]}
    f = factors.set_index("run")
    d2 = {"level": lambda a, b: (a.mean() - b.mean()) ** 2,
          "shape": lambda a, b: np.mean(((a - a.mean()) - (b - b.mean())) ** 2)}  # fmt: skip
    out = {}
    for part in ("level", "shape"):
        seed, lay, text = [], [], []
        for a, b in itertools.combinations(factors["run"], 2):
            fa, fb = f.loc[a], f.loc[b]
            first = fa["data_seed"] == 0 and fb["data_seed"] == 0
            v = d2[part](p[a], p[b])
            if (
                fa["layout"] == fb["layout"]
                and fa["text"] == fb["text"]
                and fa["init_seed"] != fb["init_seed"]
                and first
            ):
                seed.append(v)
            elif fa["layout"] != fb["layout"] and fa["text"] == fb["text"] and first:
                lay.append(v)
            elif (
                fa["layout"] == fb["layout"]
                and fa["text"] != fb["text"]
                and fa["init_seed"] != fb["init_seed"]
                and first
            ):
                text.append(v)
        w, m = np.mean(seed), np.mean([noise[r][part] for r in factors["run"]])
        out[part] = {"layout": (np.mean(lay) - w) / 2, "text": (np.mean(text) - w) / 2, "seed": w / 2 - m,
                     "residual": m, "n": (len(lay), len(text), len(seed))}  # fmt: skip
    return out


def test_the_decomposition_is_the_hand_computation_and_finds_the_planted_layout():
    """On planted profiles where the layouts differ in shape and nothing else does, every component equals the loops
    of the docstring's definition (1e-12), the pairs are the ones counted by hand, the layout holds the shape (> 0.9
    of it, its interval above 0) and the text shows nothing; the jackknife interval of one number equals a
    delete-one-run jackknife written out here."""
    from scipy.stats import t as student

    wide, f = zoo_profiles()
    noise = _noise(f, 1e-5, 2e-5)
    got = components(wide, f, noise).set_index(["part", "factor"])
    hand = _by_hand(wide, f, noise)
    for part in ("level", "shape"):
        for k in ("layout", "text", "seed", "residual"):
            assert got.loc[(part, k), "component"] == pytest.approx(hand[part][k], abs=1e-12), (part, k)
        assert tuple(got.loc[(part, k), "n_pairs"] for k in ("layout", "text", "seed")) == hand[part]["n"]
    assert hand["shape"]["n"] == (27, 4, 10)
    assert got.loc[("shape", "layout"), "share"] > 0.9 and got.loc[("shape", "layout"), "component_lo"] > 0
    assert got.loc[("shape", "text"), "component_lo"] < 0 < got.loc[("shape", "text"), "component_hi"]
    # a share's interval stays in [0, 1] around its point (the zoo's shape share of layout read [0.19, 1.14])
    s = got["share"]
    assert ((got["share_lo"] >= 0) & (got["share_lo"] <= s) & (s <= got["share_hi"]) & (got["share_hi"] <= 1)).all()
    assert (got["share_lo"] == 0).any() or (got["share_hi"] == 1).any()  # the planted table reaches a bound
    reps = [_by_hand(wide.drop(index=r), f[f["run"] != r], noise)["shape"]["layout"] for r in f["run"]]
    n = len(reps)
    se = np.sqrt((n - 1) / n * ((np.array(reps) - np.mean(reps)) ** 2).sum())
    half = student.ppf(0.975, n - 1) * se
    assert got.loc[("shape", "layout"), "component_hi"] == pytest.approx(hand["shape"]["layout"] + half, rel=1e-9)
    v = zoo_verdict(got.reset_index())
    assert v["shape_factor"] == "layout" and v["claim2a"] == NOT_REPRODUCED and "layout sets the shape" in v["word"]


def test_a_planted_text_shift_sets_the_level_and_seeds_set_a_shape_no_layout_has():
    """Layouts alike (the shape scaled to 0), the second text 0.3 above on every block, seed draws of 0.1 per block:
    the text sets the level, the seed the shape (its effect ≥ 0.1), the layout's effect on the shape is bounded below
    0.1 (claim 2a reproduced); measurement noise planted at the seed's own size moves the seed's part to the
    residual, and the shape is then the same for every factor."""
    wide, f = zoo_profiles(layout=0.0, text=0.3, seed=0.1, seeds=4, rng=1)
    comp = components(wide, f, _noise(f))
    assert part_word(comp, "level").word == "text" and part_word(comp, "shape").word == "seed"
    t = comp.set_index(["part", "factor"])
    assert effect(t.loc[("shape", "layout"), "component_hi"]) < CLAIM2_MIN_EFFECT
    assert zoo_2a(comp) == REPRODUCED
    noisy = components(wide, f, _noise(f, level=0.0, shape=0.1**2 * (1 - 1 / L))).set_index(["part", "factor"])
    assert noisy.loc[("shape", "seed"), "component"] == pytest.approx(0.0, abs=2e-3)  # all of it is now measurement
    assert noisy.loc[("shape", "residual"), "share"] > 0.7


def _comp(effects: dict, lo: dict | None = None, hi: dict | None = None) -> pd.DataFrame:
    """A planted decomposition whose shape components give each factor the effect (distance it adds) in `effects`,
    the ends of its interval the effects in `lo` and `hi` (default ± 0.02; a negative number a component below 0);
    the level all seed."""

    def comp(e: float) -> float:
        return np.sign(e) * e * e / 2

    rows = []
    for f in ("layout", "text", "seed", "residual"):
        e = effects.get(f, 0.0)
        c, c_lo, c_hi = comp(e), comp((lo or {}).get(f, e - 0.02)), comp((hi or {}).get(f, e + 0.02))
        rows.append({"part": "shape", "factor": f, "share": c, "share_lo": c, "share_hi": c, "component": c,
                     "component_lo": c_lo, "component_hi": c_hi})  # fmt: skip
        rows.append({"part": "level", "factor": f, "share": float(f == "seed"), "share_lo": 0.0, "share_hi": 1.0,
                     "component": float(f == "seed"), "component_lo": 0.5 if f == "seed" else -0.1,
                     "component_hi": 1.0 if f == "seed" else 0.1})  # fmt: skip
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


def test_the_distance_table_takes_a_single_pairs_interval_from_its_window_comparison():
    """Each kind's mean distance is the mean over its pairs (by hand for the seed pairs); the one data-order pair has
    no jackknife and carries its compare() row's interval, |level| from the signed one."""
    wide, f = zoo_profiles()
    comp = pd.DataFrame([{"kind": "data order", "a": "gpt2-i0-d1", "b": "gpt2-i0-d0", "level_lo": -0.03,
                          "level_hi": 0.01, "shape_lo": 0.02, "shape_hi": 0.05}])  # fmt: skip
    t = distance_table(wide, f, comp).set_index("kind")
    assert list(t.index[:3]) == ["gpt2 vs pythia", "gpt2 vs llama", "pythia vs llama"]
    pairs = pair_kinds(f)
    seed = pairs[pairs["kind"] == "seed"]
    p = wide.loc[list(f["run"])].to_numpy()
    want = np.mean([np.abs((p[a] - p[a].mean()) - (p[b] - p[b].mean())).mean() for a, b in zip(seed["a"], seed["b"])])
    assert t.loc["seed", "shape"] == pytest.approx(want, abs=1e-12) and t.loc["seed", "interval"] == "runs"
    row = t.loc["data order"]
    assert row["interval"] == "windows" and (row["level_lo"], row["level_hi"]) == (0.0, 0.03)
    assert (row["shape_lo"], row["shape_hi"]) == (0.02, 0.05)
    assert distance_table(wide, f).loc[lambda d: d["kind"] == "data order", "interval"].item() == "none"


def test_the_pooled_claims_separate_a_planted_model_effect_from_the_within_model_relation():
    """Twelve models of eight blocks whose mean nonlinearity and mean probe gain rise together from model to model
    (a model effect, r ≈ 1 across models) while within each model the gain is unrelated to nonlinearity: pooled with
    the model effect (claim 3's pooled row) the correlation is near 0 and shown inside ±0.3 with enough blocks;
    ignoring the models it is strongly positive. The zoo's claims row carries the block count and the power."""
    from linrec.analyses.uncertainty import correlation_test
    from linrec.claims.probe import probe_summary
    from linrec.claims.zoo import pooled_claims

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
