"""linrec.analyses.healing: k blocks swapped for their maps, then a short fine-tune against the same fine-tune
unswapped."""

import numpy as np
import pytest
import torch

from linrec.analyses.healing import FineTune, Heal, fine_tune, heal_blocks, heal_study, swapped_copy
from linrec.analyses.perplexity import PerplexityEvaluator
from linrec.base.errors import LinrecError
from linrec.inputs.sites import find_ffn_sites


@pytest.fixture
def study(tiny_model, tmp_path):
    from helpers import swap_study_with_rows

    return swap_study_with_rows(tiny_model("llama", seed=4), tmp_path)


def test_a_fine_tune_of_an_affine_swapped_model_lowers_its_held_out_loss_and_the_control_is_the_same_fine_tune(study):
    """On the tiny model: swapping a block costs perplexity; the fine-tune of all weights, and of the map alone, then
    lowers held-out perplexity (guards a fine-tune that never reaches the map, e.g. its parameters left frozen:
    planted, "maps" then stays where it was, and a sign slip that climbs the loss: planted, both rise). The control of
    "all" is the k = 0 row, the unswapped model given the same fine-tune; the control of "maps" is the unswapped model
    whose same block's own FFN got the maps' fine-tune, rebuilt here by hand (planted: the base as the maps' control,
    as before, or every weight trained, both fail); and the zero-shot cost equals the swap study's own ΔPPL of the
    same block."""
    heal = Heal(ks=[1], steps=25, lr=3e-3, batch_size=8)
    t = heal_study(study, heal, progress=False)
    assert list(zip(t["mode"], t["k"], strict=True)) == [("all", 0), ("all", 1), ("maps", 0), ("maps", 1)]
    base = t["ppl_base"].iloc[0]
    for mode in ("all", "maps"):
        ctrl, one = (t[(t["mode"] == mode) & (t["k"] == k)].iloc[0] for k in (0, 1))
        assert one["ppl_after"] < one["ppl_before"], mode
        assert ctrl["delta_after"] == 0.0
        assert one["delta_after"] == pytest.approx(one["ppl_after"] - one["ppl_control"])
        assert one["delta_after_lo"] <= one["delta_after"] <= one["delta_after_hi"]
    all_ctrl, all_one = (t[(t["mode"] == "all") & (t["k"] == k)].iloc[0] for k in (0, 1))
    assert all_one["ppl_control"] == all_ctrl["ppl_after"] < base  # the control learns too
    assert t[(t["mode"] == "maps") & (t["k"] == 0)].iloc[0]["ppl_control"] == pytest.approx(base, rel=1e-12)
    block = int(t["blocks"].iloc[1])
    assert block == heal_blocks(study.screening, 1)[0]
    h = study.heldout
    by_hand = swapped_copy(study.loaded.model, {})
    own = list(find_ffn_sites(by_hand)[block].module.parameters())
    fine_tune(by_hand, study.windows.split("train"), own, heal.schedule("maps"), seed=0)
    nll = PerplexityEvaluator(by_hand, h.report_ids, h.batch_size, reuse_prefix=False).base_window_nll
    ppl = float(np.exp(nll.sum() / (len(nll) * h.evaluator.tokens_per_window)))
    maps_one = t[(t["mode"] == "maps") & (t["k"] == 1)].iloc[0]
    assert maps_one["ppl_control"] == pytest.approx(ppl, rel=1e-9) and ppl < base  # trained alike, it learns too
    swap = study.heldout.table([block]).iloc[0]
    assert t["delta_before"].iloc[1] == pytest.approx(swap["delta_ppl"], rel=1e-5, abs=1e-6)


def test_the_blocks_are_the_lowest_screening_cost_and_nested(study):
    """`heal_blocks(k)`: the k blocks with the lowest ΔPPL swapped alone on the screening windows, by hand."""
    alone = {b: study.screening.alone(b) for b in range(study.n_blocks)}
    by_hand = sorted(alone, key=lambda b: (alone[b], b))
    assert heal_blocks(study.screening, 1) == by_hand[:1] and heal_blocks(study.screening, 2) == by_hand[:2]
    with pytest.raises(LinrecError, match="at least one"):
        heal_blocks(study.screening, 0)


def test_the_maps_mode_trains_the_maps_alone_and_every_fine_tune_sees_the_same_batches(study):
    """Guards "maps" training every weight (planted: the attention weights would move) and batches drawn afresh on
    each call (planted: two fine-tunes of the same copy would differ): everything but the map is left bit for bit,
    the map moves, and two runs with the same arguments give the same losses and weights."""
    h, base = study.heldout, study.loaded.model
    ids = study.windows.split("train")
    runs = []
    for _ in range(2):
        m = swapped_copy(base, {1: h.module(1)})
        site = find_ffn_sites(m)[1]
        flags = [p.requires_grad for p in m.parameters()]
        losses = fine_tune(m, ids, list(site.module.parameters()), FineTune(steps=5, lr=1e-2, batch_size=4), seed=3)
        assert [p.requires_grad for p in m.parameters()] == flags  # put back as they were
        runs.append((m, losses))
    (m, losses), (m2, losses2) = runs
    assert losses == losses2
    before = swapped_copy(base, {1: h.module(1)}).state_dict()
    after = m.state_dict()
    moved = [k for k in after if not torch.equal(after[k], before[k])]
    assert moved and all(k.startswith(find_ffn_sites(m)[1].path) for k in moved), moved
    assert all(torch.equal(after[k], m2.state_dict()[k]) for k in after)
    with pytest.raises(LinrecError, match="nothing to fine-tune"):
        fine_tune(m, ids, [], FineTune(steps=1, lr=1e-3, batch_size=8))


def test_a_profiles_heal_mapping_becomes_its_settings_and_each_mode_its_fine_tune():
    """`Heal.of` reads a profile's `heal` mapping (an unknown key is one line naming the known ones: planted, a typo
    such as `stpes` would run the default 50 steps); mode "maps" trains at `lr_maps` where it is given, "all" at `lr`
    (planted swap of the two: the "all" schedule would read 1e-3)."""
    heal = Heal.of({"ks": [1, 2], "steps": 30, "batch_size": 4, "lr": 2e-5, "lr_maps": 1e-3, "modes": ["all", "maps"]})
    assert heal.schedule("all") == FineTune(steps=30, lr=2e-5, batch_size=4)
    assert heal.schedule("maps") == FineTune(steps=30, lr=1e-3, batch_size=4)
    assert Heal.of({"lr": 2e-5}).schedule("maps").lr == 2e-5  # no lr_maps: both modes at lr
    with pytest.raises(LinrecError, match=r"heal section: unknown healing setting\(s\) stpes; known: ks, modes, steps"):
        Heal.of({"stpes": 30})
    heal, runs = Heal.of_trained({"steps": 30, "runs": ["gelu-i0-d0"]})  # heal_trained: `runs` beside the settings
    assert heal == Heal.of({"steps": 30}) and runs == ["gelu-i0-d0"] and Heal.of_trained({})[1] is None
    with pytest.raises(LinrecError, match=r"heal_trained section: runs must be a list of run names, got 'gelu'"):
        Heal.of_trained({"runs": "gelu"})
