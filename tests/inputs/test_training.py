"""linrec.inputs.training: small decoders trained from scratch, reproducible, cached, measured like any other model;
configurations that cannot train refused before any step, and an interrupted uncached run leaves no folder."""

import logging
import os
import shutil
import tempfile

import numpy as np
import pytest
import torch

from helpers import capture_with, on_threads, tiny_text, training_windows
from helpers import linrec_left_in as _ours
from helpers import main_captured as _main
from helpers import single_line as _single_line
from linrec.base.errors import LinrecError
from linrec.inputs.training import (
    TrainConfig,
    build_model,
    get_run,
    lr_at,
    profile_configs,
    train_model,
)
from linrec.inputs.training_text import split_documents


# ---- case 8: an interrupted `linrec train --no-cache` leaves no temporary folder ---------------------------------
@pytest.mark.parametrize("stop", [KeyboardInterrupt, SystemExit])
def test_an_interrupted_uncached_training_run_removes_its_folder(tmp_path, monkeypatch, stop):

    from linrec.inputs import training, training_text

    text = tmp_path / "text.txt"
    text.write_text(f"\n{training_text.EOS}\n".join(tiny_text(400, seed=s) for s in range(12)))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    real = training.train_model

    def interrupted(cfg, vocab, windows, on_checkpoint=None, progress=True, **kw):
        def save_then_stop(step, model):
            on_checkpoint(step, model)
            if step > 0:  # a checkpoint is on disk: the folder is not empty when the signal comes
                raise stop(128 + 15) if stop is SystemExit else stop()

        return real(cfg, vocab, windows, on_checkpoint=save_then_stop, progress=False, **kw)

    monkeypatch.setattr(training, "train_model", interrupted)
    args = ["train", "--text", text, "--d-model", 16, "--layers", 1, "--heads", 2, "--vocab", 300, "--seq-len", 16,
            "--batch-size", 4, "--steps", 3, "--no-cache"]  # fmt: skip
    code, _, _ = _main(*args)
    assert code == (130 if stop is KeyboardInterrupt else 143)
    assert list(scratch.glob("linrec-train-*")) == []  # (torch may keep a folder of its own there)
    monkeypatch.setattr(training, "train_model", real)
    code, out, err = _main(*args)  # a run that finishes keeps its folder: its checkpoints are what it prints
    assert code == 0, err
    (kept,) = scratch.glob("linrec-train-*")
    assert str(kept) in out and (kept / "step_000003" / "model.safetensors").is_file()


def test_train_configs_that_cannot_train_are_refused_before_any_step(tmp_path, own_cache, cli, monkeypatch):
    """A profile's TrainConfig takes the same rules; a model that cannot fit in memory is refused from its
    configuration, before any text is read or weight allocated (d_model 2,000,000 allocated 16 TB), and leaves
    no folder behind."""
    import linrec.inputs.training_text as texts
    from linrec.base.errors import LinrecError
    from linrec.inputs.training import TrainConfig

    for bad in ({"lr": float("nan")}, {"lr": float("inf")}, {"data_seed": -1}, {"init_seed": 2**64},
                {"weight_decay": float("nan")}):  # fmt: skip
        with pytest.raises(LinrecError, match=next(iter(bad))):
            TrainConfig(**bad).validate()
    monkeypatch.setattr(texts, "load_documents", lambda *a: pytest.fail("read the text of a model that cannot fit"))
    monkeypatch.setattr(texts, "corpus_identity", lambda spec: "planted")
    code, _, err = cli("train", "--d-model", "2000000", "--no-cache")
    _single_line(code, err, "d_model 2000000", "GiB", "lower d_model")
    with pytest.raises(LinrecError, match="lower d_model"):
        TrainConfig(d_model=4096, vocab=300).check_fits(available=2**30)
    TrainConfig(d_model=16, n_layers=2, n_heads=2, vocab=300).check_fits(available=2**30)
    assert _ours(own_cache[1]) == []  # no linrec-train-* folder


@pytest.mark.parametrize("cached", [True, False])
def test_a_full_disk_while_training_is_one_line_naming_where(tmp_path, own_cache, monkeypatch, cached):
    """Issue 60: safetensors wraps the OS error in its own exception ("Error while serializing: I/O error: No space
    left on device (os error 28)"), which `linrec train` called "a bug", exit 1. Now it is one line naming the run's
    folder (its cache entry, or with --no-cache its TMPDIR folder) and where else to write, exit 2, and nothing is
    left behind."""
    import transformers.modeling_utils
    from safetensors import SafetensorError

    from linrec.inputs import training_text

    cache, scratch = own_cache
    text = tmp_path / "text.txt"
    text.write_text(f"\n{training_text.EOS}\n".join(tiny_text(400, seed=s) for s in range(12)))

    def full(tensors, filename, metadata=None):
        with open(filename, "wb") as f:
            f.write(b"\x08")
        raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")

    monkeypatch.setattr(transformers.modeling_utils, "safe_save_file", full)
    args = ["train", "--text", text, "--d-model", 16, "--layers", 1, "--heads", 2, "--vocab", 300, "--seq-len", 16,
            "--batch-size", 4, "--steps", 3] + ([] if cached else ["--no-cache"])  # fmt: skip
    code, _, err = _main(*args)
    where = f"{cache / 'training'}/gelu-i0-d0-" if cached else f"{scratch}/linrec-train-{os.getpid()}-"
    _single_line(code, err, f"No space left on device: {where}", "$LINREC_CACHE" if cached else "TMPDIR")
    assert list((cache / "training").glob("*")) == [] and _ours(scratch) == []


TINY = dict(d_model=16, n_layers=2, n_heads=2, vocab=300, seq_len=16, batch_size=8, steps=60, lr=3e-2, warmup=3,
            n_checkpoints=4)  # fmt: skip


def test_the_loss_falls_on_a_planted_task_and_a_rerun_is_bit_identical(colour_text):
    """Sixty steps on the colour cycle cut the loss to under a tenth of its start (the task is learnable, the loop
    learns it); the same configuration trained twice gives the same losses and the same weights bit for bit, and
    another init seed does not."""
    cfg = TrainConfig(text=colour_text, **TINY)
    tok, windows = training_windows(cfg, colour_text)
    a, log_a = train_model(cfg, len(tok), windows, progress=False)
    b, log_b = train_model(cfg, len(tok), windows, progress=False)
    first, last = log_a[0]["loss"], np.mean([r["loss"] for r in log_a[-5:]])
    assert last < 0.1 * first, (first, last)
    assert [r["loss"] for r in log_a] == [r["loss"] for r in log_b]
    sa, sb = a.state_dict(), b.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    c, _ = train_model(TrainConfig(text=colour_text, **{**TINY, "init_seed": 1}), len(tok), windows, progress=False)
    assert not torch.equal(sa["model.embed_tokens.weight"], c.state_dict()["model.embed_tokens.weight"])


def test_variants_differ_in_their_mlp_alone_with_the_same_parameter_count():
    """GELU is llama with a plain MLP (Arcee); SwiGLU is llama. Same width, same MLP parameters (4d·2 = 8d², and
    3·d·8d/3 rounded), every other module of the same shape; the FFN site registry finds both."""
    from linrec.inputs.sites import find_ffn_sites

    g, s = (
        build_model(TrainConfig(layout="gelu", d_model=48), 300),
        build_model(TrainConfig(layout="swiglu", d_model=48), 300),
    )
    assert type(g).__name__ == "ArceeForCausalLM" and type(s).__name__ == "LlamaForCausalLM"
    mlp = lambda m: sum(p.numel() for n, p in m.named_parameters() if ".mlp." in n)  # noqa: E731
    assert mlp(g) == 8 * 48 * 48 * 4 and mlp(s) == 4 * 3 * 48 * 128  # 4 blocks; 8·48/3 = 128
    rest = lambda m: {n: p.shape for n, p in m.named_parameters() if ".mlp." not in n}  # noqa: E731
    assert rest(g) == rest(s)
    assert [x.path for x in find_ffn_sites(g)] == [f"model.layers.{i}.mlp" for i in range(4)]
    assert len(find_ffn_sites(s)) == 4


def test_a_run_on_the_cpu_is_the_same_on_1_and_2_threads(colour_text):
    """Issue 64, item 8: the GPT-2 layout's LayerNorm backward sums its weight gradient in one part per thread, so
    unguarded its losses moved by 5e-7 in 20 steps between 1 and 2 threads; under `one_thread` every loss and weight
    is equal bit for bit, and the caller's thread count is back afterwards. Planted (the guard taken off
    `train_model`): the losses differ and this fails."""
    cfg = TrainConfig(text=colour_text, **{**TINY, "steps": 20, "layout": "gpt2", "n_checkpoints": 2})
    tok, windows = training_windows(cfg, colour_text)

    def run():
        model, log = train_model(cfg, len(tok), windows, progress=False)
        return [r["loss"] for r in log], model.state_dict()

    (one, w1), (two, w2) = on_threads(1, run), on_threads(2, run)
    assert len(one) == 20 and one == two
    assert all(torch.equal(w1[k], w2[k]) for k in w1)
    assert on_threads(2, torch.get_num_threads) == 2


def test_a_run_is_cached_reloads_to_the_same_logits_and_r2_and_a_damaged_entry_is_retrained(colour_text, caplog):
    """get_run trains once and reads the entry after; the final checkpoint, loaded by its path like any model,
    gives the logits of the same model trained again in memory (1e-6) and the same R²_lin (1e-9); the measuring
    documents are none of the training documents; a changed file is found by the manifest and the run retrained."""
    from linrec.inputs.corpora import load_documents
    from linrec.inputs.hf import LoadedModel
    from linrec.inputs.models import load_model

    cfg = TrainConfig(text=colour_text, **TINY)
    run = get_run(cfg, progress=False)
    assert not run.cached and run.steps == cfg.checkpoint_steps() == [0, 1, 8, 60]
    again = get_run(cfg, progress=False)
    assert again.cached and again.path == run.path and again.meta["tokens_seen"] == 60 * 8 * 16
    measure, _ = load_documents(run.measure_corpus)
    train, held = split_documents(load_documents(colour_text)[0], cfg.measure_frac, cfg.split_seed)
    assert measure == held and not set(measure) & set(train)

    tok, windows = training_windows(cfg, colour_text)
    mem, _ = train_model(cfg, len(tok), windows, progress=False)
    disk = load_model(str(run.final))
    ids = windows[:4]
    with torch.no_grad():
        assert torch.allclose(disk.model(ids).logits, mem(ids).logits, atol=1e-6, rtol=0)
    kw = dict(seq_len=16, tokens=800, sample_rows=0, progress=False, cache=False)
    a = capture_with(str(run.final), run.measure_corpus, **kw)
    b = capture_with(
        str(run.final), run.measure_corpus, loaded=LoadedModel(mem, tok, "mem", disk.identity, "memory"), **kw
    )
    assert max(abs(a.score(i).r2 - b.score(i).r2) for i in range(2)) < 1e-9

    weights = run.final / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-8] + b"\0" * 8)
    with caplog.at_level(logging.WARNING, logger="linrec.inputs.training"):
        redone = get_run(cfg, progress=False)
    assert not redone.cached and "damaged" in caplog.text


def test_a_run_cached_before_layouts_is_read_not_retrained(colour_text, caplog):
    """Entries written before the `layout` field (their meta's config says "mlp", has no shared_texts) keep their
    cache key and must be read: the request check compared "mlp" with an absent field and retrained every cached
    run of params/training.yaml (45 min). Planted: the check against asdict(cfg) instead of cfg.request()."""
    from linrec.base.files import seal, unseal

    cfg = TrainConfig(text=colour_text, **TINY)
    run = get_run(cfg, progress=False)
    meta_path = run.path / "meta.json"
    meta = unseal(meta_path)
    config = meta["config"]
    config["mlp"] = config.pop("layout")
    config.pop("shared_texts")
    meta_path.write_text(seal(meta))  # sealed as the old linrec sealed it
    caplog.clear()  # the first get_run may have replaced another test's entry of this key (same text, other path)
    with caplog.at_level(logging.WARNING):
        again = get_run(cfg, progress=False)
    assert again.cached and "another request" not in caplog.text
    meta["config"]["mlp"] = "swiglu"  # a run of another layout under this name is still refused
    meta_path.write_text(seal(meta))
    with caplog.at_level(logging.WARNING):
        assert not get_run(cfg, progress=False).cached


def test_an_affine_block_swaps_for_free(tmp_path):
    """A GELU block whose activation is the identity is affine by construction: its R²_lin is 1 and swapping it for
    its closed-form map leaves the held-out perplexity unchanged (ΔPPL within float32 noise of 0)."""
    from helpers import tiny_text
    from linrec.analyses.swap import SwapStudy
    from linrec.inputs.hf import LoadedModel
    from linrec.inputs.training_text import train_tokenizer

    text = tiny_text(4000)
    tok = train_tokenizer([text[: len(text) // 2], text[len(text) // 2 :]], 300)
    model = build_model(TrainConfig(d_model=32, n_layers=2, n_heads=2, seq_len=32), len(tok)).eval()
    model.model.layers[1].mlp.act_fn = torch.nn.Identity()
    loaded = LoadedModel(model, tok, "affine-block", "affine-block", "memory")
    corpus = tmp_path / "text.txt"  # the test's own folder, which pytest removes
    corpus.write_text(text)
    cap = capture_with("affine-block", str(corpus), seq_len=32, tokens=2048, sample_rows=0, loaded=loaded,
                      cache=False, progress=False)  # fmt: skip
    assert cap.score(1).r2 > 1 - 1e-9 and cap.score(0).r2 < 0.999
    table = SwapStudy(cap, loaded, progress=False, screening_windows=2).heldout.table(blocks=[0, 1])
    d = table.set_index("block")["delta_ppl"]
    base = table["ppl_base"].iloc[0]
    assert abs(d[1]) < 1e-4 * base and abs(d[0]) > 100 * abs(d[1])


def test_schedule_checkpoints_configs_and_bad_input():
    cfg = TrainConfig(steps=800, warmup=40, lr=1e-3, n_checkpoints=8)
    steps = cfg.checkpoint_steps()
    assert steps[0] == 0 and steps[-1] == 800 and len(steps) == 8 and steps == sorted(set(steps))
    assert np.allclose(np.diff(np.log(steps[1:])), np.log(800) / 6, rtol=0.3)  # log-spaced
    assert lr_at(0, cfg) == pytest.approx(1e-3 / 40) and lr_at(39, cfg) == pytest.approx(1e-3)
    assert lr_at(799, cfg) == pytest.approx(1e-4, rel=1e-3)
    assert TrainConfig(layout="swiglu", d_model=128).ffn_width == 344 and TrainConfig(d_model=128).ffn_width == 512
    runs = profile_configs({"steps": 10}, ["gelu", "swiglu"], [0, 1], [0, 1])
    assert [c.name for c in runs] == ["gelu-i0-d0", "gelu-i1-d0", "swiglu-i0-d0", "swiglu-i1-d0", "gelu-i0-d1"]
    assert TrainConfig().key("cpu") != TrainConfig().key("cuda:NVIDIA H100")  # the key says what trained it
    for bad, match in ((dict(layout="relu"), "layout must be"), (dict(d_model=30, n_heads=4), "heads"),
                       (dict(measure_frac=1.0), "measure_frac")):  # fmt: skip
        with pytest.raises(LinrecError, match=match):
            TrainConfig(**bad).validate()
    with pytest.raises(LinrecError, match="at least 2"):
        split_documents(["one"], 0.1)


# ---- the held-out loss while training, and the plateau rule (issue 61) --------------------------------------------
def test_the_heldout_loss_is_the_checkpoints_own_and_leaves_training_as_it_was(colour_text, monkeypatch):
    """With n_evals, the held-out loss is evaluated at step 0, the evenly spaced steps and every checkpoint, on the
    run's own text's held-out documents (none of its training documents): at each checkpoint it equals the mean
    next-token loss of that checkpoint, loaded from disk, on those windows, computed here with torch's cross
    entropy in float64 (1e-5); the training losses and weights are bit-identical to a run without evaluations;
    the entry keeps them (heldout.csv) and a cached read gives the same plateau."""
    import torch.nn.functional as F

    from linrec.inputs.corpora import load_documents
    from linrec.inputs.models import load_model
    from linrec.inputs.plateau import heldout_windows
    from linrec.inputs.training_text import heldout_documents

    cfg = TrainConfig(text=colour_text, **{**TINY, "n_evals": 6})
    assert cfg.eval_steps() == [0, 1, 8, 10, 20, 30, 40, 50, 60]
    run = get_run(cfg, progress=False)
    assert run.heldout["step"].tolist() == cfg.eval_steps()
    held = heldout_documents(cfg)
    train, _ = split_documents(load_documents(colour_text)[0], cfg.measure_frac, cfg.split_seed)
    assert held and not set(held) & set(train)
    for step in run.steps:
        loaded = load_model(str(run.checkpoint(step)))
        ids = heldout_windows(held, loaded.tokenizer, cfg)
        with torch.no_grad():
            logits = loaded.model(input_ids=ids).logits.double()
        want = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1)).item()
        got = run.heldout.set_index("step").loc[step, "heldout_loss"]
        assert got == pytest.approx(want, abs=1e-5), (step, got, want)
    tok, windows = training_windows(cfg, colour_text)
    plain, log_plain = train_model(TrainConfig(text=colour_text, **TINY), len(tok), windows, progress=False)
    assert [r["loss"] for r in log_plain] == run.log["loss"].tolist()
    assert run.plateau().converged == run.meta["converged"]
    again = get_run(cfg, progress=False)
    assert again.cached and again.plateau() == run.plateau()


def test_a_run_planted_not_to_train_is_not_converged(colour_text, monkeypatch):
    """Learning rate 0 at every step (the schedule planted): the held-out loss never moves, so the run is flat over
    its last steps ("plateaued") but has not learned, and is not converged; a run of the same configuration that
    trains has learned."""
    from linrec.inputs import training

    cfg = TrainConfig(text=colour_text, **{**TINY, "n_evals": 6})
    trained = get_run(cfg, progress=False).plateau()
    assert trained.learned and trained.drop > 0.5
    monkeypatch.setattr(training, "lr_at", lambda step, cfg: 0.0)
    still = get_run(cfg, cache=False, progress=False)  # not cached: the entry of `cfg` is the run that trained
    shutil.rmtree(still.path)  # an uncached run keeps its folder for its caller; this test is done with it
    rule = still.plateau()
    assert rule.final_loss == rule.init_loss and rule.plateaued and not rule.learned and not rule.converged
    assert still.meta["converged"] is False


def test_the_new_settings_keep_the_cache_keys_of_runs_cached_before_them():
    """n_evals, eval_windows and precision came after runs were cached: at their defaults a configuration's key is
    the key it had before them (the old formula, recomputed here), so params/training.yaml's cached runs stay valid;
    set, each changes the key. bf16 is refused off a GPU, and more evaluations than steps are refused."""
    import hashlib
    import json
    from dataclasses import asdict

    import transformers

    from linrec.inputs.training import TRAINING_VERSION
    from linrec.inputs.training_text import text_identity

    cfg = TrainConfig(text="wiki")
    old = {k: v for k, v in asdict(cfg).items() if k not in ("n_evals", "eval_windows", "precision")}
    old.update(device="cpu", text=text_identity("wiki"), torch=torch.__version__,
               transformers=transformers.__version__, version=TRAINING_VERSION)  # fmt: skip
    old["mlp"] = old.pop("layout")
    del old["shared_texts"]
    assert cfg.key("cpu") == hashlib.sha256(json.dumps(old, sort_keys=True).encode()).hexdigest()[:20]
    keys = {TrainConfig(text="wiki", **kw).key("cpu") for kw in ({}, {"n_evals": 10}, {"eval_windows": 7},
                                                                 {"precision": "bf16", "device": "cuda"})}  # fmt: skip
    assert len(keys) == 4
    with pytest.raises(LinrecError, match="precision bf16"):
        TrainConfig(precision="bf16").validate()
    with pytest.raises(LinrecError, match="n_evals"):
        TrainConfig(steps=10, n_evals=11).validate()


def test_the_logs_steps_are_the_checkpoints_steps(colour_text):
    """The log's row at step s is the update that turned checkpoint s − 1 into checkpoint s: steps 1 … `steps`, the
    last the last checkpoint's; its loss is the loss of the weights saved at s − 1 on batch s − 1 (recomputed here
    from a checkpoint, 1e-6) and its learning rate `lr_at(s − 1)`. So the training loss `checkpoint_table` reads
    over log steps ≤ s is that of the updates before checkpoint s. Planted, each caught: `pending.append((step + 1,
    …))` → `(step, …)` in linrec.inputs.training.train_model (log one step behind the checkpoints); `lr_at(step - 1,
    cfg)` → `lr_at(step, cfg)` in its flush."""
    import copy

    from linrec.inputs.training import batches

    cfg = TrainConfig(text=colour_text, **{**TINY, "steps": 6, "n_checkpoints": 4})
    tok, windows = training_windows(cfg, colour_text)
    saved = {}
    _, log = train_model(cfg, len(tok), windows, on_checkpoint=lambda s, m: saved.setdefault(s, copy.deepcopy(m)),
                         progress=False)  # fmt: skip
    steps = [r["step"] for r in log]
    assert steps == list(range(1, cfg.steps + 1)) and max(saved) == steps[-1] == cfg.steps
    assert set(saved) == set(cfg.checkpoint_steps()) and {0, 1} <= set(saved)
    order = list(batches(len(windows), cfg))
    by_step = {r["step"]: r for r in log}
    for s, model in saved.items():
        if s + 1 not in by_step:
            continue
        model.train()
        with torch.no_grad():
            ids = windows[torch.as_tensor(order[s])]
            want = model(input_ids=ids, labels=ids).loss.item()
        assert by_step[s + 1]["loss"] == pytest.approx(want, abs=1e-6), s
    assert [r["lr"] for r in log] == [lr_at(s - 1, cfg) for s in steps]
