"""linrec.analyses.recoverability: two-way shares and corpus shape and level against planted splits, and profile
replicates that leave the same window out of every block."""

import numpy as np
import pytest

from linrec.stats.heldout import HeldOut


# ---- claim 5: a profile over corpora split into depth, level and shape ------------------------------------------
def test_two_way_shares_recover_a_planted_split():
    from linrec.analyses.recoverability import two_way_shares

    depth = np.array([-0.3, 0.1, 0.2, -0.1, 0.1])  # block effects (sum 0)
    level = np.array([-0.05, 0.0, 0.05])  # corpus effects (sum 0)
    inter = 0.02 * np.array([[1, -1, 0], [-1, 1, 0], [0, 0, 0], [1, 0, -1], [-1, 0, 1]])  # rows and columns sum to 0
    r2 = 0.6 + depth[:, None] + level[None, :] + inter
    s = two_way_shares(r2)
    total = 3 * (depth**2).sum() + 5 * (level**2).sum() + (inter**2).sum()
    assert s["depth"] == pytest.approx(3 * (depth**2).sum() / total)
    assert s["level"] == pytest.approx(5 * (level**2).sum() / total)
    assert s["shape"] == pytest.approx((inter**2).sum() / total)
    assert s["depth"] + s["level"] + s["shape"] == pytest.approx(1.0) and s["level_range"] == pytest.approx(0.1)
    shifted = two_way_shares(0.6 + depth[:, None] + level[None, :])  # a pure shift has no shape
    assert shifted["shape"] == pytest.approx(0.0, abs=1e-12) and shifted["level"] > 0


def _heldout_for(r2_target: float, rng, windows=40, rows=16, d=3) -> HeldOut:
    """Per-window sums of a map whose held-out R² is about `r2_target` (noise of variance 1 − R² on unit signal)."""
    sse, sy, syy = (np.zeros((windows, d)) for _ in range(3))
    for w in range(windows):
        signal = rng.standard_normal((rows, d)) * np.sqrt(r2_target)
        err = rng.standard_normal((rows, d)) * np.sqrt(1 - r2_target)
        y = signal + err
        sse[w], sy[w], syy[w] = (err**2).sum(0), y.sum(0), (y**2).sum(0)
    return HeldOut(np.arange(windows), np.full(windows, rows), sse, sy, syy, np.zeros(d))


def test_corpus_shape_level_separates_a_shift_from_a_change_of_form():
    """Three corpora over six blocks: a uniform shift (code +0.1 everywhere) is level, not shape; swapping two blocks'
    values on one corpus is shape. Intervals come from the windows and cover the planted split."""
    from types import SimpleNamespace

    from linrec.analyses.recoverability import corpus_shape_level

    base = np.array([0.3, 0.7, 0.5, 0.8, 0.4, 0.6])
    rng = np.random.default_rng(0)

    def caps(profiles):
        return {
            c: SimpleNamespace(n_blocks=len(p), heldout=[_heldout_for(v, rng, windows=60, rows=32) for v in p])
            for c, p in profiles.items()
        }

    shift = corpus_shape_level(caps({"wiki": base, "web": base, "code": base + 0.1}), level=0.95)
    assert shift["shape_hi"] < 0.05 and shift["level_lo"] > 0.05 and shift["corpus_highest"] == "code"
    assert shift["level_range"] == pytest.approx(0.1, abs=0.03) and shift["level_range_lo"] < shift["level_range_hi"]
    assert np.isnan(shift["level_share_ex_first"])  # the captures keep no sums without position 0
    both = caps({"wiki": base, "web": base, "code": base + 0.1})
    for c in both.values():
        c.heldout_rest = c.heldout  # without position 0: the same sums here, so the same split
    rest = corpus_shape_level(both, level=0.95)
    for k in ("shape_share", "level_share", "shape_lo", "level_lo", "shape_hi", "level_hi"):
        assert rest[f"{k}_ex_first"] == pytest.approx(rest[k]), k
    form = base.copy()
    form[[0, 3]] = form[[3, 0]]
    changed = corpus_shape_level(caps({"wiki": base, "web": base, "code": form}), level=0.95)
    assert changed["shape_lo"] > 0.2 and changed["n_pairs_fdr"] >= 4  # blocks 0 and 3 against both other corpora
    assert changed["n_pairs"] == 18


def _small_heldout(rng, windows: int, d: int = 2) -> HeldOut:
    """A few windows of arbitrary per-window sums (SSE below SST, so R² is a number between 0 and 1)."""
    n = rng.integers(3, 7, windows)
    y = [rng.standard_normal((k, d)) + 0.3 for k in n]
    sy, syy = np.stack([v.sum(0) for v in y]), np.stack([(v * v).sum(0) for v in y])
    sse = syy * rng.uniform(0.1, 0.6, (windows, d))
    return HeldOut(np.arange(windows), n, sse, sy, syy, np.zeros(d))


def _r2_by_hand(h: HeldOut, keep) -> float:
    """R² over the windows `keep`, with loops: 1 − ΣSSE / (Σ syy − |Σ sy|² / Σ n)."""
    n = sse = syy = 0.0
    sy = np.zeros(h.sy.shape[1])
    for w in keep:
        n, sse, syy, sy = n + h.n[w], sse + h.sse[w].sum(), syy + h.syy[w].sum(), sy + h.sy[w]
    return 1 - sse / (syy - (sy * sy).sum() / n)


def test_corpus_pairs_match_a_hand_computation_of_2as_level_and_shape():
    """Claim 5's pairs against an independent computation on three corpora of 4, 5 and 6 windows over 3 blocks: each
    block's R²_lin from the sums with loops, the level mean_i (a_i − b_i) and the shape mean_i |(a_i − ā) − (b_i −
    b̄)|, each window of each corpus left out in turn, the two corpora's jackknife variances added, Welch–Satterthwaite
    degrees of freedom and a t quantile. Without sums without position 0 those columns are NaN; with the same sums
    there, the same numbers."""
    from types import SimpleNamespace

    from scipy.stats import t as student_t

    from linrec.analyses.recoverability import corpus_pairs

    rng = np.random.default_rng(7)
    sizes = {"wiki": 4, "web": 5, "code": 6}
    held = {c: [_small_heldout(rng, w) for _ in range(3)] for c, w in sizes.items()}
    caps = {c: SimpleNamespace(n_blocks=3, heldout=hs) for c, hs in held.items()}
    rows = corpus_pairs(caps, level=0.95)
    assert [(r["corpus_a"], r["corpus_b"]) for r in rows] == [("wiki", "web"), ("wiki", "code"), ("web", "code")]

    def profile(c, drop=None):
        keep = [w for w in range(sizes[c]) if w != drop]
        return np.array([_r2_by_hand(h, keep) for h in held[c]])

    def level(a, b):
        return sum(x - y for x, y in zip(a, b)) / len(a)

    def shape(a, b):
        ma, mb = sum(a) / len(a), sum(b) / len(b)
        return sum(abs((x - ma) - (y - mb)) for x, y in zip(a, b)) / len(a)

    for r in rows:
        a, b = r["corpus_a"], r["corpus_b"]
        assert (r["n_windows_a"], r["n_windows_b"], r["n_blocks"]) == (sizes[a], sizes[b], 3)
        for name, f in (("level", level), ("shape", shape)):
            point = f(profile(a), profile(b))
            variances = []
            for c in (a, b):
                reps = [f(profile(a, k if c == a else None), profile(b, k if c == b else None))
                        for k in range(sizes[c])]  # fmt: skip
                mean = sum(reps) / len(reps)
                variances.append((sizes[c] - 1) / sizes[c] * sum((x - mean) ** 2 for x in reps))
            dof = sum(variances) ** 2 / sum(v**2 / (sizes[c] - 1) for v, c in zip(variances, (a, b)))
            half = student_t.ppf(0.975, dof) * np.sqrt(sum(variances))
            assert r[name] == pytest.approx(point, abs=1e-12), (a, b, name)
            assert (r[f"{name}_lo"], r[f"{name}_hi"]) == pytest.approx((point - half, point + half), abs=1e-12)
            assert np.isnan(r[f"{name}_ex_first"]) and np.isnan(r[f"{name}_lo_ex_first"])
    for c in caps.values():
        c.heldout_rest = c.heldout  # without position 0: here the same sums, so the same numbers
    for r, again in zip(rows, corpus_pairs(caps, level=0.95)):
        for k in ("level", "level_lo", "level_hi", "shape", "shape_lo", "shape_hi"):
            assert again[f"{k}_ex_first"] == pytest.approx(r[k], abs=1e-12)


def test_profile_replicates_leave_the_same_window_out_of_every_block():
    """Claim 1's paired test rests on this: two blocks with the same held-out sums differ by exactly 0 in every
    replicate (left out independently they would not), a block's replicates give its own `r2_interval`, and a block
    at 0.3 against one at 0.6 on 40 windows differs beyond doubt."""
    from types import SimpleNamespace

    from linrec.analyses.recoverability import profile_replicates
    from linrec.stats.heldout import r2_interval
    from linrec.stats.jackknife import from_replicates

    rng = np.random.default_rng(1)
    a, b = _heldout_for(0.6, rng), _heldout_for(0.3, rng)
    cap = SimpleNamespace(n_blocks=3, heldout=[a, a, b], config=SimpleNamespace(corpus="wiki"))
    point, loo = profile_replicates(cap)
    assert loo.shape == (a.n_windows, 3) and point == pytest.approx([a.r2(), a.r2(), b.r2()], abs=1e-12)
    assert (loo[:, 1] == loo[:, 0]).all() and np.ptp(loo[:, 0]) > 0
    for k in range(a.n_windows):  # row k: every window but k, by hand
        keep = np.arange(a.n_windows) != k
        sub = HeldOut(a.windows[keep], a.n[keep], a.sse[keep], a.sy[keep], a.syy[keep], a.shift)
        assert loo[k, 0] == pytest.approx(sub.r2(), abs=1e-12)
    assert from_replicates(point[0], loo[:, 0]).interval() == pytest.approx(r2_interval(a), abs=1e-12)
    assert from_replicates(point[2] - point[0], loo[:, 2] - loo[:, 0]).p() < 1e-6


def test_one_held_out_window_gives_no_interval_and_says_so(tmp_path, caplog):
    """A capture whose held-out split is a single window (5 windows of 32 tokens, 20 % held out): `ceiling_table`
    gives R²_lin with r2_lo, r2_hi NaN, not a zero-width interval that reads as certainty, and one warning naming
    the fix; with 2 held-out windows the interval has width. Planted: `r2_interval` returning (R², R²) for one window
    fails."""
    from helpers import capture_with, save_tiny_model, tiny_text
    from linrec.analyses.recoverability import ceiling_table

    model = save_tiny_model(tmp_path / "llama")
    corpus = tmp_path / "text.txt"
    corpus.write_text(tiny_text(4000, 0))
    one = capture_with(model, str(corpus), seq_len=32, tokens=160, sample_rows=0, cache=False, progress=False)
    with caplog.at_level("WARNING", logger="linrec.analyses.recoverability"):
        table = ceiling_table(one)
    assert (table["n_test_windows"] == 1).all() and table["r2_lin"].notna().all()
    assert table["r2_lo"].isna().all() and table["r2_hi"].isna().all()
    assert [r.getMessage() for r in caplog.records if "one held-out window" in r.getMessage()] == [
        f"{one.model_label} on {corpus}: one held-out window, so R²_lin has no interval over windows (r2_lo, r2_hi "
        "are NaN); give more tokens: the held-out 20 % of the windows must hold 2 or more"]  # fmt: skip
    caplog.clear()
    two = capture_with(model, str(corpus), seq_len=32, tokens=320, sample_rows=0, cache=False, progress=False)
    with caplog.at_level("WARNING", logger="linrec.analyses.recoverability"):
        table = ceiling_table(two)
    assert (table["n_test_windows"] == 2).all() and (table["r2_hi"] > table["r2_lo"]).all() and not caplog.records
