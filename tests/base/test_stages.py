"""linrec.base.stages: each loop with a progress bar, where a runner asks, writes its seconds, steps and model work."""

import pandas as pd
import pytest
import torch

from helpers import make_tiny_model
from linrec.base import stages
from linrec.base.progress import bar
from linrec.inputs.sites import find_ffn_sites


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    path = tmp_path / "stages.csv"
    monkeypatch.setenv(stages.ENV, str(path))
    monkeypatch.setenv("LINREC_NOTEBOOK", "03_x")
    monkeypatch.setenv("LINREC_PROGRESS", "0")  # bars off, as under the runner: a disabled tqdm counts no steps
    return path


def test_each_loop_is_a_row_with_its_depth_and_steps_and_nested_loops_are_inside_their_outer_one(recorded):
    for _ in bar(range(3), desc="outer", unit="block"):
        for _ in bar(range(2), desc="inner"):
            pass
    with bar(total=4, desc="by hand") as b:
        for _ in range(4):
            b.update()
    for _ in bar(range(5), desc="left early"):
        break
    rows = pd.read_csv(recorded)
    assert list(rows["stage"]) == ["inner"] * 3 + ["outer", "by hand", "left early"]
    assert list(rows["depth"]) == [1, 1, 1, 0, 0, 0]
    assert list(rows["steps"]) == [2, 2, 2, 3, 0, 1]  # by hand: a disabled bar's updates are not counted (no steps)
    assert set(rows["notebook"]) == {"03_x"} and list(rows["unit"])[3] == "block"
    outer, inners = rows.iloc[3], rows.iloc[:3]
    assert outer["wall_s"] >= inners["wall_s"].sum() - 1e-3


def test_model_work_is_counted_in_whole_model_tokens_including_blocks_rerun_alone(recorded):
    model = make_tiny_model("llama")
    sites = find_ffn_sites(model)
    ids = torch.randint(0, model.config.vocab_size, (3, 11), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        for _ in bar(range(2), desc="forwards"):
            model(ids)
        find_ffn_sites(model)  # found again: the blocks are counted once, not twice
        hidden = torch.randn(3, 11, model.config.hidden_size)
        for _ in bar(range(1), desc="one block"):
            block = sites[-1].block
            position = torch.arange(11)[None].expand(3, -1)
            block(hidden, position_embeddings=model.model.rotary_emb(hidden, position))
    rows = pd.read_csv(recorded).set_index("stage")
    assert rows.loc["forwards", "model_tokens"] == pytest.approx(2 * 33)
    assert rows.loc["one block", "model_tokens"] == pytest.approx(33 / len(sites))


def test_nothing_is_recorded_and_no_model_is_hooked_without_a_runner_asking(tmp_path, monkeypatch):
    monkeypatch.delenv(stages.ENV, raising=False)
    model = make_tiny_model("llama")
    sites = find_ffn_sites(model)
    assert all(not s.block._forward_pre_hooks for s in sites)
    for _ in bar(range(2), desc="loop"):
        pass
    assert not list(tmp_path.iterdir())


def test_a_block_answering_from_a_cached_prefix_counts_nothing_and_the_count_leaves_a_model_keyable(recorded):
    """A block whose `forward` is replaced by its cached output (linrec.analyses.perplexity's prefix) ran nothing;
    and the counting hook is passive, so the evaluation memo still keys the model (a hook that could change what a
    block returns still makes it unkeyable)."""
    from linrec.analyses import memo

    model = make_tiny_model("llama")
    sites = find_ffn_sites(model)
    memo.check_unhooked(model)  # the count alone: keyable
    hidden = torch.randn(2, 5, model.config.hidden_size)
    block = sites[0].block
    block.forward = lambda *a, **k: (hidden,)  # as the prefix cache answers
    for _ in bar(range(1), desc="cached"):
        block(hidden)
    assert pd.read_csv(recorded).set_index("stage").loc["cached", "model_tokens"] == 0
    block.register_forward_hook(lambda m, a, out: out)
    with pytest.raises(memo.Unkeyable):
        memo.check_unhooked(model)


def test_stages_on_worker_threads_sit_inside_the_main_threads_stage_and_write_whole_rows(recorded):
    """Jobs on threads (`linrec.analyses.parallel.run_jobs`) each open a stage while the main thread's is open: each
    is at depth 1 (inside the main one, not inside each other), and every row arrives whole."""
    import threading

    barrier = threading.Barrier(4)

    def job(k: int) -> None:
        with bar(total=1, desc=f"job {k}") as b:
            barrier.wait()  # all four open at once
            for _ in bar(range(2), desc=f"inner {k}"):
                pass
            b.update()

    with bar(total=1, desc="main") as b:
        threads = [threading.Thread(target=job, args=(k,)) for k in range(4)]
        [t.start() for t in threads], [t.join() for t in threads]
        b.update()
    rows = pd.read_csv(recorded).set_index("stage")
    assert rows.loc["main", "depth"] == 0
    assert all(rows.loc[f"job {k}", "depth"] == 1 and rows.loc[f"inner {k}", "depth"] == 2 for k in range(4))
    assert len(rows) == 9 and rows["wall_s"].notna().all()
