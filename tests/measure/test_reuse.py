"""A capture request finds what it can in the cache and says what it will cost before it computes (issue 50,
item 3; `linrec.measure.reuse`): a cached capture keeping more rows serves a request for fewer with exactly the
rows a fresh capture would keep, and a capture that is not cached is announced, with an estimate, before it runs."""

import numpy as np
import pytest

from linrec.base.errors import LinrecError
from linrec.base.files import seal
from linrec.measure import capture as cap_mod
from linrec.measure import reuse
from linrec.measure.capture import get_capture
from linrec.measure.reuse import estimate_seconds, row_selection

# 64 windows of 32 tokens: 2,048 rows. Of a 2,000-row sample, numpy's seeded choice keeps the 60-row one inside it
# and not the 50-row one (checked below, independently of linrec: the test's premise).
N_ROWS, STORED, INSIDE, OUTSIDE = 2048, 2000, 60, 50


@pytest.fixture
def args(tiny_model_dir, tiny_corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("LINREC_CACHE", str(tmp_path / "cache"))
    return dict(model=tiny_model_dir, corpus=tiny_corpus(8000), seq_len=32, tokens=2048, progress=False)


def _choice(k):
    return np.sort(np.random.default_rng([0, 1]).choice(N_ROWS, size=k, replace=False))


def test_the_premise_numpys_seeded_choice_nests_for_some_sizes_only():
    big = _choice(STORED)
    assert np.isin(_choice(INSIDE), big).all() and not np.isin(_choice(OUTSIDE), big).all()
    assert np.array_equal(row_selection(N_ROWS, INSIDE, 0), _choice(INSIDE))


def _no_compute(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("computed a capture the cache serves")

    monkeypatch.setattr(cap_mod, "_compute", refuse)


def test_a_capture_keeping_more_rows_serves_a_request_for_fewer_with_a_fresh_captures_rows(args, monkeypatch):
    get_capture(**args, sample_rows=STORED)  # cached, 2,000 rows stored
    fresh = get_capture(**args, sample_rows=INSIDE, cache=False)  # what a capture of 60 rows keeps, computed
    with monkeypatch.context() as m:
        _no_compute(m)
        got = get_capture(**args, sample_rows=INSIDE)
        none = get_capture(**args, sample_rows=0)
    assert got.cached and got.config.sample_rows == INSIDE and got.meta["config"]["sample_rows"] == INSIDE
    assert np.array_equal(got.row_index(), fresh.row_index())
    for block in range(got.n_blocks):
        for split in (None, "train", "test"):
            for a, b in zip(got.rows(block, split), fresh.rows(block, split)):
                assert np.array_equal(np.asarray(a), np.asarray(b))
        assert np.array_equal(got.stats["test"][block].M, fresh.stats["test"][block].M)
    assert none.config.sample_rows == 0 and none.stats["train"][0].n == fresh.stats["train"][0].n
    with pytest.raises(LinrecError, match="kept no raw rows"):
        none.rows(0)  # as a capture of statistics only


def test_a_request_whose_rows_the_larger_capture_lacks_is_computed(args, monkeypatch):
    get_capture(**args, sample_rows=STORED)
    computed = []
    real = cap_mod._compute
    monkeypatch.setattr(cap_mod, "_compute", lambda *a, **k: computed.append(1) or real(*a, **k))
    c = get_capture(**args, sample_rows=OUTSIDE)
    assert computed == [1] and len(c.row_index()) == OUTSIDE


def test_a_capture_that_is_not_cached_says_so_with_an_estimate_before_it_runs(args, monkeypatch, capfd):
    """(capfd: under a runner's settings, LINREC_PROGRESS=0, the line goes to the process's own stderr.)"""
    monkeypatch.delenv("LINREC_PROGRESS", raising=False)
    monkeypatch.delenv("LINREC_NOTEBOOK", raising=False)
    said_before = []
    real = cap_mod.run_until_stop

    def forward(*a, **k):  # the pass's first batch: what was said before it
        said_before.append(capfd.readouterr().err)
        return real(*a, **k)

    monkeypatch.setattr(cap_mod, "run_until_stop", forward)
    c = get_capture(**args, sample_rows=100)
    assert not c.cached and len(said_before) > 1
    line = [ln for ln in said_before[0].splitlines() if ln.startswith("capturing ")]
    assert len(line) == 1 and "2,048 tokens, 100 rows kept" in line[0], said_before
    assert "about " in line[0] and "M parameters" in line[0]
    assert c.meta["params"] > 0  # recorded for the next estimate
    capfd.readouterr()
    assert get_capture(**args, sample_rows=100).cached
    assert "capturing" not in capfd.readouterr().err  # a cached capture costs nothing and says nothing


def _timed_entry(cache, name, **meta):
    d = cache / "captures" / name
    d.mkdir(parents=True)
    (d / "meta.json").write_text(seal(meta))


def test_the_estimate_is_this_machines_seconds_per_token_and_parameter(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("LINREC_CACHE", str(cache))
    assert estimate_seconds("m", 10**8, 10**4) == (
        reuse.REFERENCE_SECONDS * 10**12,
        "the default run's captures on 2 cores",
    )
    _timed_entry(cache, "a-1", seconds=20.0, tokens_used=1000, params=10**6)  # 2e-8 s per token-parameter
    _timed_entry(cache, "b-1", seconds=90.0, tokens_used=1000, params=10**6)  # 9e-8
    _timed_entry(
        cache, "m-1", seconds=40.0, tokens_used=1000, model_label="m"
    )  # no params recorded: model m's own size
    _timed_entry(cache, "x-1", seconds=40.0, tokens_used=1000, model_label="other")  # no size known: not counted
    seconds, basis = estimate_seconds("m", 2 * 10**6, 500)  # m's entry: 40 / (1000 · 2e6) = 2e-8
    assert seconds == pytest.approx(np.median([2e-8, 9e-8, 2e-8]) * 2e6 * 500) and "3 capture(s)" in basis
