"""linrec.analyses.factors: what sets a trained profile's level and shape (layout, text, seed, residual), checked
against a hand computation on planted profiles, and the distance table's intervals."""

import itertools

import numpy as np
import pandas as pd
import pytest

from linrec.analyses.factors import components, distance_table, pair_kinds
from linrec.claims.rules import CLAIM2_MIN_EFFECT, NOT_REPRODUCED, REPRODUCED
from linrec.claims.zoo import effect, part_word, zoo_2a, zoo_verdict

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


# ---- every threshold of the decomposition at equality and on both sides -------------------------------------------
def test_measurement_noise_needs_four_held_out_windows_and_the_table_two_runs():
    """`measurement_noise`: three windows refused in one line, four measured (planted `w < 3`: fails). The distance
    table and the decomposition: one run refused, two runs of a seed pair measured (planted `< 1`: fails)."""
    from linrec.analyses.calibration import _Planted, planted_heldout
    from linrec.analyses.factors import measurement_noise
    from linrec.base.errors import LinrecError

    def planted(w):
        return _Planted(planted_heldout([0.6, 0.8, 0.7], w, np.random.default_rng(0)))

    with pytest.raises(LinrecError, match="at least 4 held-out windows, the capture has 3; use more tokens"):
        measurement_noise(planted(3))
    got = measurement_noise(planted(4))
    assert got["level"] > 0 and got["shape"] > 0
    wide, f = zoo_profiles()
    two = f[f["run"].isin(["gpt2-i0-d0", "gpt2-i1-d0"])]
    with pytest.raises(LinrecError, match="1 run\\(s\\) to compare; the distances and the decomposition need two"):
        distance_table(wide, two.iloc[:1])
    t = distance_table(wide, two)
    assert t["kind"].tolist() == ["seed"] and t["n_pairs"].tolist() == [1]


def test_a_negative_component_counts_as_zero_in_the_shares():
    """A component estimated below 0 (the text's, where the texts do not differ: B_text < W by chance) keeps its
    signed value but has share 0, and the other shares are their part of the positive components' sum (by hand);
    every component 0 or below: every share NaN (no total to divide). Planted: the negative component left in the
    total fails."""
    wide, f = zoo_profiles(rng=4)
    t = components(wide, f, _noise(f)).set_index(["part", "factor"])
    neg = [k for k in ("layout", "text", "seed", "residual") if t.loc[("shape", k), "component"] < 0]
    assert neg == ["text"] and t.loc[("shape", "text"), "share"] == 0.0
    pos = {k: max(t.loc[("shape", k), "component"], 0.0) for k in ("layout", "text", "seed", "residual")}
    for k, v in pos.items():
        assert t.loc[("shape", k), "share"] == pytest.approx(v / sum(pos.values()), rel=1e-12), k
    flat = wide * 0.0 + 0.6  # every profile the same: every component 0
    z = components(flat, f, _noise(f))
    assert (z["component"].abs() < 1e-15).all() and z["share"].isna().all()


@pytest.mark.parametrize(
    "signed, want",
    [
        ((0.01, 0.03), (0.01, 0.03)),  # a signed level above 0: |level| in [0.01, 0.03]
        ((-0.03, -0.01), (0.01, 0.03)),  # below 0: mirrored
        ((-0.03, 0.0), (0.0, 0.03)),  # ending at 0
        ((0.0, 0.02), (0.0, 0.02)),  # starting at 0
        ((-0.01, 0.03), (0.0, 0.03)),  # spanning 0: |level| may be 0, up to the larger end
    ],
)
def test_the_single_pairs_level_interval_on_both_sides_of_zero(signed, want):
    """The one data-order pair's |level| interval from its signed window interval: mirrored below 0, from 0 where
    the signed interval reaches or spans 0. Planted: the signed ends kept as they are (no abs) fails below 0; the
    span's lower end left at min(|lo|, |hi|) fails the spanning case."""
    wide, f = zoo_profiles()
    comp = pd.DataFrame([{"kind": "data order", "a": "gpt2-i0-d0", "b": "gpt2-i0-d1", "level_lo": signed[0],
                          "level_hi": signed[1], "shape_lo": 0.02, "shape_hi": 0.05}])  # fmt: skip
    row = distance_table(wide, f, comp).set_index("kind").loc["data order"]
    assert (row["level_lo"], row["level_hi"]) == want


def test_the_measurement_noise_by_hand_on_two_disjoint_halves_of_the_windows():
    """σ²_noise of a run (`measurement_noise`): a quarter of the mean, over the seeded halvings (the windows permuted,
    the first ⌊W/2⌋ one half, the rest the other), of the squared level distance (Δ mean R²)² and of the squared
    shape distance mean (Δ centred R²)² between the block profiles scored on each half from the raw rows
    (`helpers.raw_rows_capture`); equal to the library's to 1e-12. Planted, each caught: `/ 4` → `/ 2` in
    linrec.analyses.factors.measurement_noise; `squared_distance` → `distance` there (not squared); the halvings'
    seed salt 47 → 38 (the seeds experiment's, so the two noises would share their halvings)."""
    from helpers import r2_of_rows, raw_rows_capture
    from linrec.analyses.factors import measurement_noise

    cap, rows = raw_rows_capture(n_windows=10, blocks=4, seed=6)
    n_splits, seed, w = 6, 2, 10
    rng = np.random.default_rng([seed, 47])
    level, shape = [], []
    for _ in range(n_splits):
        first = sorted(rng.permutation(w)[: w // 2].tolist())
        second = [k for k in range(w) if k not in first]
        a = np.array([r2_of_rows(per, first) for per in rows])
        b = np.array([r2_of_rows(per, second) for per in rows])
        level.append((a.mean() - b.mean()) ** 2)
        shape.append((((a - a.mean()) - (b - b.mean())) ** 2).mean())
    got = measurement_noise(cap, n_splits=n_splits, seed=seed)
    assert got == pytest.approx({"level": np.mean(level) / 4, "shape": np.mean(shape) / 4}, abs=1e-12, rel=0)
