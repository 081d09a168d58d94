"""linrec.analyses.seeds: profile distances with paired window-bootstrap intervals, and the noise floor they are
judged by."""

import numpy as np
import pandas as pd
import pytest

from helpers import capture_with, make_tiny_model, r2_of_rows, raw_rows_capture, tiny_tokenizer
from helpers import run_profiles as _profiles
from linrec.analyses.recoverability import ceiling_table
from linrec.analyses.seeds import compare, from_profiles, noise_floors, pairs, profile
from linrec.base.errors import LinrecError
from linrec.inputs.hf import LoadedModel
from linrec.inputs.training import TrainConfig


def _capture(seed, corpus, tokens=4096):
    loaded = LoadedModel(make_tiny_model("llama", seed), tiny_tokenizer(), f"m{seed}", f"tiny-{seed}", "memory")
    return capture_with(f"m{seed}", corpus, seq_len=32, tokens=tokens, sample_rows=0, loaded=loaded, cache=False,
                       progress=False)  # fmt: skip


@pytest.fixture
def caps(tiny_corpus):
    corpus = tiny_corpus(20000)
    return _capture(0, corpus), _capture(1, corpus), _capture(0, corpus, tokens=16384)


def test_a_profile_against_itself_and_against_another(caps):
    """profile() is the ceiling table's R²_lin; a profile against itself is at distance 0 in every jackknife replicate
    (correlation 1, within any floor); between two models the distance is the mean |ΔR²_lin| of their ceiling tables,
    symmetric (the signed level mirrored), with an interval around it, and the larger of the two floors."""
    a, b, _ = caps
    assert np.allclose(profile(a), ceiling_table(a)["r2_lin"], atol=1e-12)
    same = compare(a, a)
    assert same["distance"] == same["distance_lo"] == same["distance_hi"] == 0.0
    assert same["corr"] == pytest.approx(1.0) and same["within_noise"] and not same["beyond_noise"]
    ab, ba = compare(a, b), compare(b, a)
    want = np.abs(ceiling_table(a)["r2_lin"] - ceiling_table(b)["r2_lin"]).mean()
    assert ab["distance"] == pytest.approx(want, abs=1e-12)
    signed = {"level": -ab["level"], "level_lo": -ab["level_hi"], "level_hi": -ab["level_lo"]}  # b − a: mirrored
    assert ba == pytest.approx({**ab, **signed})
    assert ab["distance_lo"] <= ab["distance"] + 0.02 and ab["distance_hi"] >= ab["distance"] - 0.02
    assert ab["floor"] == pytest.approx(max(noise_floors(a)["floor"], noise_floors(b)["floor"]))


def test_the_noise_floor_shrinks_with_more_held_out_windows(caps):
    """The floor is what measurement alone produces: positive, and smaller (about half) with four times the windows."""
    a, _, big = caps
    small, large = noise_floors(a)["floor"], noise_floors(big)["floor"]
    assert small > 0 and large < 0.75 * small
    assert noise_floors(a, seed=1)["floor"] == pytest.approx(small, rel=0.3)  # another set of halvings: about the same


def test_pairs_and_a_distance_on_different_windows_is_refused(caps):
    a, _, big = caps
    with pytest.raises(LinrecError, match="same windows"):
        compare(a, big)
    runs = [TrainConfig(layout=m, init_seed=i, data_seed=d) for m, i, d in
            (("gelu", 0, 0), ("gelu", 1, 0), ("swiglu", 0, 0), ("swiglu", 1, 0), ("gelu", 0, 1))]  # fmt: skip
    got = pairs(runs)
    assert ("seed", "gelu-i0-d0", "gelu-i1-d0") in got and ("seed", "swiglu-i0-d0", "swiglu-i1-d0") in got
    assert ("data order", "gelu-i0-d0", "gelu-i0-d1") in got
    assert ("variant", "gelu-i0-d0", "swiglu-i0-d0") in got and ("variant", "gelu-i1-d0", "swiglu-i1-d0") in got
    assert len(got) == 5  # nothing that differs in two things at once


def test_the_onset_is_the_first_step_that_stays_near_the_last_profile():
    """A run whose profile reaches its final shape at step 10, leaves it at 30 and returns at 100: the onset is 100,
    not 10 (every later checkpoint must stay within 0.05)."""
    import pandas as pd

    from linrec.analyses.seeds import approach_to_final

    final = np.array([0.9, 0.5, 0.7])
    steps = {0: final - 0.3, 10: final + 0.01, 30: final - 0.2, 100: final + 0.02, 300: final}
    t = pd.DataFrame([{"run": "r", "step": s, "block": b, "r2_lin": v[b]} for s, v in steps.items() for b in range(3)])
    got = approach_to_final(t).set_index("step")
    assert (got["onset"] == 100).all() and got.loc[300, "distance_to_final"] == 0.0
    assert got.loc[0, "distance_to_final"] == pytest.approx(0.3) and got.loc[10, "distance_to_final"] == pytest.approx(
        0.01
    )


def test_pairs_name_the_one_thing_two_runs_differ_in():
    from linrec.inputs.training import TrainConfig

    """A run on another text is named by it, so a text pair names two runs (it named one run twice before)."""
    runs = [TrainConfig(layout="gelu"), TrainConfig(layout="gelu", text="other.txt"),
            TrainConfig(layout="gelu", init_seed=1, text="other.txt")]  # fmt: skip
    assert pairs(runs) == [("text", "gelu-i0-d0", "gelu-i0-d0-other"), ("seed", "gelu-i0-d0-other", "gelu-i1-d0-other")]


# ---- the centred distance, by hand ---------------------------------------------------------------------------------
A = np.array([0.90, 0.70, 0.50, 0.80])
B = np.array([0.60, 0.45, 0.20, 0.55])  # A shifted down by 0.25, blocks 1 and 2 moved by ∓0.05 and +0.05


def test_level_and_shape_by_hand():
    """Differences 0.30, 0.25, 0.30, 0.25: raw 0.275, level 0.275, and centred ±0.025 each: shape 0.025."""
    from linrec.analyses.seeds import PARTS

    assert PARTS["distance"](A, B) == pytest.approx(0.275)
    assert PARTS["level"](A, B) == pytest.approx(0.275) and PARTS["level"](B, A) == pytest.approx(-0.275)
    assert PARTS["shape"](A, B) == pytest.approx(0.025) and PARTS["shape"](B, A) == pytest.approx(0.025)
    assert PARTS["shape"](A, A + 0.4) == pytest.approx(0.0)  # a pure shift has no shape
    left, right = np.stack([A, A, B]), np.stack([B, A + 0.1, A])
    assert PARTS["shape"](left, right) == pytest.approx([0.025, 0.0, 0.025])  # per resample row
    assert PARTS["level"](left, right) == pytest.approx([0.275, -0.1, -0.275])


def test_from_profiles_fills_the_points_and_keeps_what_was_measured():
    prof = _profiles({"g": {0: B, 600: A}, "s": {0: B, 600: B}})
    stored = pd.DataFrame([{"kind": "trained vs init", "a": "g", "b": "g step 0", "step": 600, "distance": 0.275},
                           {"kind": "variant", "a": "g", "b": "s", "step": 600, "distance": 0.275}])  # fmt: skip
    got = from_profiles(stored, prof)
    assert got["level"].tolist() == pytest.approx([0.275, 0.275]) and got["shape"].tolist() == pytest.approx(
        [0.025] * 2
    )
    assert got[["level_lo", "shape_hi", "level_floor", "shape_floor"]].isna().all().all()
    measured = got.assign(level=0.3, level_lo=0.2, level_hi=0.4, shape=0.01)
    again = from_profiles(measured, prof)
    assert (again["level"] == 0.3).all() and (again["level_lo"] == 0.2).all() and (again["shape"] == 0.01).all()


def test_compare_splits_level_and_shape_on_the_same_resamples(tiny_corpus):
    """On two tiny captures: the level and the shape are those of the two ceiling profiles by hand, their intervals
    come from the same paired jackknife as the raw distance, and a profile against itself is 0 with 0 floors' width."""
    from helpers import capture_with, make_tiny_model, tiny_tokenizer
    from linrec.analyses.recoverability import ceiling_table
    from linrec.analyses.seeds import compare, noise_floors
    from linrec.inputs.hf import LoadedModel

    corpus = tiny_corpus(20000)

    def cap(seed):
        loaded = LoadedModel(make_tiny_model("llama", seed), tiny_tokenizer(), f"m{seed}", f"tiny-{seed}", "memory")
        return capture_with(f"m{seed}", corpus, seq_len=32, tokens=4096, sample_rows=0, loaded=loaded, cache=False,
                           progress=False)  # fmt: skip

    a, b = cap(0), cap(1)
    pa, pb = ceiling_table(a)["r2_lin"].to_numpy(), ceiling_table(b)["r2_lin"].to_numpy()
    got = compare(a, b)
    d = pa - pb
    assert got["level"] == pytest.approx(d.mean(), abs=1e-12)
    assert got["shape"] == pytest.approx(np.abs(d - d.mean()).mean(), abs=1e-12)
    assert got["level_lo"] <= got["level_hi"] and got["shape_lo"] <= got["shape_hi"]
    assert abs(got["level"]) <= got["distance"] <= abs(got["level"]) + got["shape"] + 1e-12
    fa, fb = noise_floors(a), noise_floors(b)
    assert got["shape_floor"] == pytest.approx(max(fa["shape_floor"], fb["shape_floor"]))
    assert got["level_floor"] == pytest.approx(max(fa["level_floor"], fb["level_floor"])) and got["level_floor"] > 0
    same = compare(a, a)
    assert same["level"] == same["level_lo"] == same["shape_hi"] == 0.0


# ---- every threshold of the seeds code at equality and on both sides -----------------------------------------------
def _planted(n_windows: int, r2=(0.6, 0.8, 0.7), seed: int = 0):
    """A stand-in capture with planted held-out sums (`linrec.analyses.calibration`'s, through which the coverage
    simulations run the project's procedures) on `n_windows` windows."""
    from linrec.analyses.calibration import _Planted, planted_heldout

    return _Planted(planted_heldout(list(r2), n_windows, np.random.default_rng(seed)))


def test_beyond_and_within_noise_at_the_floor_and_on_both_sides():
    """`beyond_noise`: the distance's lower bound strictly above the floor (at it: not beyond); `within_noise`: its
    upper bound at or below the floor (at it: within). The floor is set to each bound exactly and one float either
    side. Planted: ≥ for > in beyond_noise fails; < for ≤ in within_noise fails."""
    from linrec.analyses.calibration import _Planted, planted_heldout

    ha, hb = planted_heldout(np.array([[0.6, 0.8, 0.7, 0.5], [0.4, 0.7, 0.75, 0.3]]), 16, np.random.default_rng(2))
    a, b = _Planted(ha), _Planted(hb)
    c = compare(a, b)
    lo, hi = c["distance_lo"], c["distance_hi"]
    assert 0 < lo < hi
    below, above = np.nextafter(lo, -np.inf), np.nextafter(lo, np.inf)
    assert compare(a, b, floor=below)["beyond_noise"] and not compare(a, b, floor=lo)["beyond_noise"]
    assert not compare(a, b, floor=above)["beyond_noise"]
    assert compare(a, b, floor=hi)["within_noise"] and compare(a, b, floor=np.nextafter(hi, np.inf))["within_noise"]
    assert not compare(a, b, floor=np.nextafter(hi, -np.inf))["within_noise"]
    assert compare(a, b, floor=lo)["distance_lo"] == lo  # the floor moves no bound


def test_a_noise_floor_needs_four_held_out_windows():
    """Three windows: refused in one line naming the fix; four: measured (and two halves of two windows each).
    Planted: `w < 3` fails."""
    with pytest.raises(LinrecError, match="at least 4 held-out windows, the capture has 3; use more tokens"):
        noise_floors(_planted(3))
    got = noise_floors(_planted(4))
    assert set(got) == {"floor", "level_floor", "shape_floor"} and all(np.isfinite(v) and v > 0 for v in got.values())


def test_the_onset_at_exactly_the_distance_it_allows():
    """A checkpoint whose mean |ΔR²_lin| to the last profile equals `within` exactly is within (≤), so the onset is
    that step; one float less and it is not, and the onset moves to the next step. At the default (ONSET_DISTANCE
    0.05) a step 0.05 away in exact binary terms counts too. Planted: < for ≤ fails."""
    from linrec.analyses.seeds import ONSET_DISTANCE, approach_to_final

    assert ONSET_DISTANCE == 0.05
    final = np.array([0.5, 0.75])
    steps = {0: final - 0.3, 10: final + np.array([0.1, 0.0]), 100: final + 0.01, 300: final}
    t = pd.DataFrame([{"run": "r", "step": s, "block": b, "r2_lin": v[b]} for s, v in steps.items() for b in range(2)])
    d = float(approach_to_final(t).set_index("step").loc[10, "distance_to_final"])
    assert d == pytest.approx(0.05, abs=1e-15)
    assert (approach_to_final(t, within=d)["onset"] == 10).all()
    assert (approach_to_final(t, within=np.nextafter(d, -np.inf))["onset"] == 100).all()
    assert (approach_to_final(t)["onset"] == (10 if d <= ONSET_DISTANCE else 100)).all()


# ---- issue 92: the noise floor by hand, from raw rows ---------------------------------------------------------------
def test_the_noise_floor_by_hand_on_two_disjoint_halves_of_the_windows():
    """Each floor is the mean, over the seeded halvings (the windows permuted, the first ⌊W/2⌋ one half and every
    other window the other, W = 9: 4 against 5), of |D|, |L| and S between the block profiles scored on each half from
    the raw rows; equal to the library's to 1e-12. Planted, each caught: the second half all windows
    (`profile(capture, 1.0 - half)` → `profile(capture, np.ones_like(half))`); `[: w // 2]` → `[: w // 2 + 1]`
    (overlapping halves' sizes); |mean level| for mean |level| (`np.nanmean(np.abs(f(a, b)))` → `np.abs(np.nanmean(f(a,
    b)))`)."""
    cap, rows = raw_rows_capture()
    n_splits, seed, w = 7, 3, 9
    rng = np.random.default_rng([seed, 38])
    dist, level, shape = [], [], []
    for _ in range(n_splits):
        first = set(rng.permutation(w)[: w // 2].tolist())
        second = [k for k in range(w) if k not in first]
        assert len(first) == 4 and len(second) == 5
        a = np.array([r2_of_rows(per, sorted(first)) for per in rows])
        b = np.array([r2_of_rows(per, second) for per in rows])
        d = a - b
        dist.append(np.abs(d).mean())
        level.append(abs(d.mean()))
        shape.append(np.abs(d - d.mean()).mean())
    got = noise_floors(cap, n_splits=n_splits, seed=seed)
    want = {"floor": np.mean(dist), "level_floor": np.mean(level), "shape_floor": np.mean(shape)}
    assert got == pytest.approx(want, abs=1e-12, rel=0)
    assert profile(cap) == pytest.approx([r2_of_rows(per, range(w)) for per in rows], abs=1e-12, rel=0)


def test_the_checkpoint_tables_training_loss_is_the_20_updates_up_to_the_checkpoint(monkeypatch):
    """`checkpoint_table`'s `train_loss` at checkpoint s is the mean of the log's rows at steps s − 19 … s (the log's
    step s is the update that made checkpoint s: tests/inputs/test_training.py), NaN at step 0. With the log's loss
    planted equal to its step: 40.5 at step 50 (31 … 50) and 90.5 at 100. The model, its perplexity and the ceiling
    are stubbed: only the reading of the log is under test. Planted, each caught: `log["step"] <= step` → `<` in
    linrec.analyses.seeds.checkpoint_table (31 … 49: 40.0); `log["step"] > step - 20` → `>=` (30 … 50: 40.0)."""
    from types import SimpleNamespace

    import linrec.analyses.seeds as seeds

    monkeypatch.setattr(seeds, "load_model", lambda spec: SimpleNamespace(model=None, tokenizer=None))
    monkeypatch.setattr(seeds, "capture_windows", lambda cap, tok: SimpleNamespace(split=lambda s: None))
    monkeypatch.setattr(seeds, "perplexity", lambda model, windows: 10.0)
    ceiling = pd.DataFrame({"block": [0, 1], "r2_lin": 0.5, "r2_lo": 0.4, "r2_hi": 0.6, "n_test_windows": 8})
    monkeypatch.setattr(seeds, "ceiling_table", lambda cap: ceiling)
    config = SimpleNamespace(name="r", layout="gelu", init_seed=0, data_seed=0, batch_size=4, seq_len=8)
    log = pd.DataFrame({"step": np.arange(1, 101), "loss": np.arange(1, 101, dtype=float)})
    run = SimpleNamespace(config=config, log=log, checkpoint=lambda s: f"checkpoint-{s}")
    got = seeds.checkpoint_table(run, {0: None, 50: None, 100: None}).groupby("step")["train_loss"].first()
    assert np.isnan(got[0]) and got[50] == 40.5 and got[100] == 90.5
