"""linrec.analyses.memo: an evaluation kept in the cache is read back only for exactly what it evaluated, a killed
study resumes and finds what an unbroken one finds, and what cannot be fingerprinted is run, never kept."""

import functools
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch

from helpers import ROOT, make_tiny_model, on_threads, swap_study, swap_study_with_rows
from linrec.analyses import memo
from linrec.analyses.perplexity import PerplexityEvaluator
from linrec.analyses.routing import RoutedFFN, fit_gate, route_study
from linrec.app.cli import main
from linrec.base import cache
from linrec.base.cache import entries, folder
from linrec.base.tables import is_timing

SHARES = (0.0, 0.25, 0.5, 0.75, 1.0)


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LINREC_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _fresh(st) -> PerplexityEvaluator:
    """Another evaluator of the study's model on its held-out windows, as a later run makes it, keeping."""
    h = st.heldout
    return PerplexityEvaluator(h.model, h.report_ids, h.batch_size, sites=h.sites).keep("tiny")


def _plain(st, swaps) -> np.ndarray:
    """The reference: the same evaluation, not kept."""
    h = st.heldout
    return PerplexityEvaluator(h.model, h.report_ids, h.batch_size, sites=h.sites).window_nll(swaps)


def _gate(st, block: int):
    x, _ = st.capture.rows(block, "train")
    return fit_gate(x, (x[:, 0] > np.median(x[:, 0])).astype(float))


def test_a_kept_evaluation_is_read_back_bit_for_bit_instead_of_run(own_cache, capsys):
    st = swap_study(make_tiny_model("llama"), tokens=640, seq_len=16, batch_size=3)
    first = _fresh(st)
    made = first.window_nll({1: st.heldout.module(1)})
    again = _fresh(st)
    read = again.window_nll({1: st.heldout.module(1)})
    assert (first.n_evaluations, first.n_kept, again.n_evaluations, again.n_kept) == (1, 0, 0, 1)
    assert read.tobytes() == made.tobytes() == _plain(st, {1: st.heldout.module(1)}).tobytes()
    # read whole at once, so held by no lease: a study reads thousands, and a process holds at most MAX_LEASES
    assert not [path for path in cache._HELD if "/evaluations/" in path]
    (entry,) = entries(("evaluation",))  # `linrec cache` lists it (one line a model), and prune may remove it
    assert entry.made_by == f"evaluation of tiny on {len(st.heldout.report_ids)} windows, swapped: 1: AffineFFN"
    _fresh(st).window_nll({0: st.heldout.module(0)})
    assert main(["cache"]) == 0
    listed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("kept")]
    assert len(listed) == 1 and "2 evaluations of tiny (linrec.analyses.memo)" in listed[0]


def _variants(st, tmp_path):
    """(what changed, swaps) pairs, each differing from `base` in one thing an evaluation reads."""
    h = st.heldout
    nudged = h.module(1)
    nudged.bias.data[0] += 1e-3
    gate = _gate(st, 1)
    other_gate = _gate(st, 1)
    other_gate.w = other_gate.w.copy()
    other_gate.w[0] += 0.5
    routed = lambda g, share: RoutedFFN(h.sites[1].module, h.module(1), g, g.threshold(share))  # noqa: E731
    return {
        "base": {1: h.module(1)},
        "another block": {0: h.module(0)},
        "one weight nudged": {1: nudged},
        "a reduced rank": {1: h.module(1, rank=2)},
        "routed at 0.5": {1: routed(gate, 0.5)},
        "routed at 0.25 (the threshold)": {1: routed(gate, 0.25)},
        "routed by another gate": {1: routed(other_gate, 0.5)},
    }


def test_each_thing_an_evaluation_reads_changes_its_key(own_cache, tmp_path):
    """Every variant evaluated in turn with keeping on equals its own plain evaluation; were any of them found under
    another's key (a threshold or a weight left out of the fingerprint), it would give that one's numbers."""
    st = swap_study_with_rows(make_tiny_model("llama", seed=3), tmp_path)
    kept = {name: _fresh(st).window_nll(swaps) for name, swaps in _variants(st, tmp_path).items()}
    plain = {name: _plain(st, swaps) for name, swaps in _variants(st, tmp_path).items()}
    assert len({v.tobytes() for v in plain.values()}) == len(plain)  # every variant evaluates differently
    for name in kept:
        assert kept[name].tobytes() == plain[name].tobytes(), name
    assert len(list(folder("evaluation").iterdir())) == len(plain)


def test_other_windows_or_another_model_are_other_evaluations(own_cache):
    st = swap_study(make_tiny_model("llama"), tokens=640, seq_len=16, batch_size=3)
    h = st.heldout
    _fresh(st).window_nll({1: h.module(1)})
    fewer = PerplexityEvaluator(h.model, h.report_ids[:-1], h.batch_size, sites=h.sites).keep("tiny")
    assert fewer.window_nll({1: h.module(1)}).tobytes() == _plain(st, {1: h.module(1)})[:-1].tobytes()
    assert fewer.n_evaluations == 1
    other = make_tiny_model("llama", seed=1)  # the same architecture, other weights; the same swap module
    ev = PerplexityEvaluator(other, h.report_ids, h.batch_size).keep("tiny")
    got = ev.window_nll({1: h.module(1)})
    assert ev.n_evaluations == 1
    plain = PerplexityEvaluator(other, h.report_ids, h.batch_size).window_nll({1: h.module(1)})
    assert got.tobytes() == plain.tobytes()


def test_a_routed_blocks_token_counts_come_back_with_its_kept_evaluation(own_cache, tmp_path):
    st = swap_study_with_rows(make_tiny_model("llama", seed=3), tmp_path)
    h, gate = st.heldout, _gate(st, 1)
    ran = RoutedFFN(h.sites[1].module, h.module(1), gate, gate.threshold(0.5))
    _fresh(st).window_nll({1: ran})
    read = RoutedFFN(h.sites[1].module, h.module(1), gate, gate.threshold(0.5))
    ev = _fresh(st)
    ev.window_nll({1: read})
    assert ev.n_kept == 1 and 0 < ran.routed < ran.seen
    assert (read.routed, read.seen, read.share) == (ran.routed, ran.seen, ran.share)


def test_a_killed_routing_study_resumes_and_finds_what_an_unbroken_run_finds(own_cache, tmp_path, monkeypatch):
    model = make_tiny_model("llama", seed=3)
    for run in "abc":
        (tmp_path / run).mkdir()
    unbroken = route_study(swap_study_with_rows(model, tmp_path / "a"), shares=SHARES, progress=False, chosen=[1])
    real, ran = PerplexityEvaluator._run, []

    def killed_after_two(self, swaps, **kw):
        if swaps:
            ran.append(1)
            if len(ran) > 2:
                raise KeyboardInterrupt
        return real(self, swaps, **kw)

    monkeypatch.setattr(PerplexityEvaluator, "_run", killed_after_two)
    with pytest.raises(KeyboardInterrupt):
        route_study(swap_study_with_rows(model, tmp_path / "b").keep(), shares=SHARES, progress=False, chosen=[1])
    monkeypatch.setattr(PerplexityEvaluator, "_run", real)
    st = swap_study_with_rows(model, tmp_path / "c").keep()
    resumed = route_study(st, shares=SHARES, progress=False, chosen=[1])
    assert st.heldout.evaluator.n_kept == 2 and st.heldout.evaluator.n_evaluations > 0
    for name in ("curve", "routable"):
        a, b = getattr(unbroken, name), getattr(resumed, name)
        pd.testing.assert_frame_equal(a[[c for c in a if not is_timing(c)]], b[[c for c in b if not is_timing(c)]])


def test_an_evaluation_gives_the_same_bits_on_one_thread_as_on_two_so_the_key_leaves_the_count_out(own_cache):
    """A run resumed beside other work gets fewer threads: what the first run kept must still be what it would
    compute (the key does not hold the thread count)."""
    st = swap_study(make_tiny_model("gemma3_text"), tokens=640, seq_len=16, batch_size=3)
    swaps = {1: st.heldout.module(1)}
    one, two = (on_threads(n, lambda: (_plain(st, swaps), memo.evaluator_key(st.heldout.model, st.heldout.report_ids,
                {}))) for n in (1, 2))  # fmt: skip
    assert one[0].tobytes() == two[0].tobytes() and one[1] == two[1]


def test_a_damaged_entry_is_run_again(own_cache):
    st = swap_study(make_tiny_model("llama"), tokens=640, seq_len=16, batch_size=3)
    _fresh(st).window_nll({1: st.heldout.module(1)})
    (entry,) = folder("evaluation").iterdir()
    saved = entry / "window_nll.npy"
    data = bytearray(saved.read_bytes())
    data[-1] ^= 0xFF
    saved.write_bytes(bytes(data))
    ev = _fresh(st)
    assert ev.window_nll({1: st.heldout.module(1)}).tobytes() == _plain(st, {1: st.heldout.module(1)}).tobytes()
    assert (ev.n_evaluations, ev.n_kept) == (1, 0)


class _Scaled(torch.nn.Module):
    def __init__(self, inner, act):
        super().__init__()
        self.inner, self.act = inner, act

    def forward(self, x):
        return self.act(self.inner(x))


def test_what_cannot_be_fingerprinted_is_run_every_time_and_never_kept(own_cache):
    st = swap_study(make_tiny_model("llama"), tokens=640, seq_len=16, batch_size=3)
    scale = 0.5
    odd = {1: _Scaled(st.heldout.module(1), lambda y: y * scale)}  # its state is in the closure: unreadable
    for _ in range(2):
        ev = _fresh(st)
        ev.window_nll(odd)
        assert (ev.n_evaluations, ev.n_kept) == (1, 0)
    assert not folder("evaluation").exists() or not any(folder("evaluation").iterdir())
    made = _fresh(st).window_nll({1: st.heldout.module(1)})  # kept, no hook on the model
    later = _fresh(st)  # its key is taken now, before the hook
    handle = st.heldout.model.model.norm.register_forward_hook(lambda m, a, out: out * 2)
    try:
        got = later.window_nll({1: st.heldout.module(1)})  # a hook added after the model's key: run, not read
        plain = _plain(st, {1: st.heldout.module(1)})
    finally:
        handle.remove()
    assert (later.n_evaluations, later.n_kept) == (1, 0)
    assert got.tobytes() == plain.tobytes() != made.tobytes()
    hooked = st.heldout.module(1)
    hooked.register_forward_hook(lambda m, a, out: out * 2)
    with pytest.raises(memo.Unkeyable, match="hooks"):
        memo.swaps_key({1: hooked})
    with pytest.raises(memo.Unkeyable, match="cannot fingerprint"):
        memo.fingerprint(object())


def test_fingerprints_tell_numbers_apart_exactly():
    base = memo.fingerprint(1.0, np.zeros(3), {"a": [1, 2]})
    assert memo.fingerprint(1.0, np.zeros(3), {"a": [1, 2]}) == base
    for other in [(1.0 + 2**-52, np.zeros(3), {"a": [1, 2]}), (1.0, np.zeros(3, np.float32), {"a": [1, 2]}),
                  (1.0, np.zeros(4), {"a": [1, 2]}), (1.0, np.ones(3), {"a": [1, 2]}),
                  (1.0, np.zeros((3, 1)), {"a": [1, 2]}), (1.0, torch.zeros(3, dtype=torch.float64), {"a": [1, 2]}),
                  (1.0, np.zeros(3), {"a": [1, 3]}), (1.0, np.zeros(3), {"b": [1, 2]}),
                  (1, np.zeros(3), {"a": [1, 2]})]:  # fmt: skip
        assert memo.fingerprint(*other) != base
    assert memo.fingerprint(torch.zeros(2, 3)) != memo.fingerprint(torch.zeros(3, 2))  # the same bytes, transposed
    with pytest.raises(memo.Unkeyable, match="object"):
        memo.fingerprint(np.array([object()]))
    gelu = functools.partial(torch.nn.functional.gelu, approximate="tanh")
    assert memo.fingerprint(gelu) != memo.fingerprint(functools.partial(torch.nn.functional.gelu))
    assert memo.fingerprint(math.inf) != memo.fingerprint(-math.inf)


def test_a_models_key_is_the_same_in_another_process():
    """A resumed run is another process (another session): the key must not depend on the process."""
    code = (
        "import sys, torch; sys.path.insert(0, 'tests'); from helpers import make_tiny_model; "
        "from linrec.analyses import memo; "
        "print(memo.evaluator_key(make_tiny_model('gemma3_text'), torch.arange(40).reshape(4, 10), {'batch_size': 2}))"
    )
    there = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    here = memo.evaluator_key(make_tiny_model("gemma3_text"), torch.arange(40).reshape(4, 10), {"batch_size": 2})
    assert there.stdout.strip() == here
