"""linrec.inputs.surgery: a swap is exact and undone on exceptions, swaps nest, the position-aware swap keeps the FFN
at position 0, and a save reloads to identical logits, composes with a later swap and refuses a target it did not
write."""

import json
import shutil

import numpy as np
import pytest
import torch

from helpers import save_affine_swap as _save
from helpers import (
    swap_study,
)
from linrec.analyses.perplexity import PerplexityEvaluator
from linrec.base.errors import LinrecError
from linrec.inputs.models import load_model
from linrec.inputs.sites import find_ffn_sites
from linrec.inputs.surgery import (
    SWAPS_FILE,
    AffineFFN,
    count_params,
    load_swapped,
    save_swapped,
    swapped,
)
from linrec.stats.ceiling import fit_affine


# ---- case 10: the words name the real culprit ---------------------------------------------------------------------
def test_an_edited_record_is_named_as_the_reason_a_save_target_is_refused(tmp_path):
    from linrec.inputs.surgery import check_save_target

    save = _save(tmp_path / "save")
    (save / "chat_template.jinja").write_text("{{ messages }}")  # a file a tokenizer can write, listed in the record
    record = json.loads((save / SWAPS_FILE).read_text())
    record["info"]["note"] = "mine"
    (save / SWAPS_FILE).write_text(json.dumps(record))
    with pytest.raises(LinrecError) as err:
        check_save_target(save)
    msg = str(err.value)
    assert SWAPS_FILE in msg and "chat_template.jinja" not in msg and "edited" in msg
    assert "choose a new or empty directory" in msg


def test_a_swap_inside_a_swap_puts_the_outer_one_back_with_sites_found_before_both(tiny_model_dir):
    """`swapped` with the sites found at load restores what each path held on entry (the outer swap), not the FFN
    the site was found with."""
    loaded = load_model(tiny_model_dir)
    ffn, outer, inner = loaded.sites[0].module, AffineFFN(32, 32), AffineFFN(32, 32)
    with swapped(loaded.model, {0: outer}, loaded.sites):
        with swapped(loaded.model, {0: inner}, loaded.sites):
            assert loaded.model.get_submodule(loaded.sites[0].path) is inner
        assert loaded.model.get_submodule(loaded.sites[0].path) is outer
    assert loaded.model.get_submodule(loaded.sites[0].path) is ffn and loaded.sites[0].module is ffn


def test_swap_restores_the_original_on_exceptions(tiny_model):
    model = tiny_model("qwen2")
    before = [s.module for s in find_ffn_sites(model)]
    with pytest.raises(KeyError):
        with swapped(model, {0: AffineFFN(32, 32), 1: AffineFFN(32, 32)}):
            assert isinstance(model.model.layers[1].mlp, AffineFFN)
            raise KeyError("boom")
    assert [s.module for s in find_ffn_sites(model)] == before
    with pytest.raises(LinrecError, match=r"last block is 1 \(no 5\)"):
        with swapped(model, {5: AffineFFN(32, 32)}):
            pass


@pytest.mark.parametrize("kind", ["llama", "gpt2", "gemma3_text"])
def test_position_aware_swap_is_the_ffn_at_position_0_and_the_map_elsewhere(tiny_model, kind, tmp_path):
    model = tiny_model(kind)
    st = swap_study(model, tokens=640, seq_len=16, batch_size=4)
    block = 1
    ids = st.windows.split("test")
    seen = {}
    site = st.heldout.sites[block]
    h = site.module.register_forward_hook(lambda mod, args, out: seen.update(x=args[0].clone(), y=out.clone()))
    with torch.no_grad():
        model(input_ids=ids)
    h.remove()
    for first in ("ffn", "mean"):
        m = st.heldout.module(block, first=first)
        got: dict = {}
        hook = m.register_forward_hook(lambda mod, args, out, got=got: got.update(x=args[0].clone(), y=out.clone()))
        with swapped(model, {block: m}), torch.no_grad():
            model(input_ids=ids)
        hook.remove()
        assert torch.equal(got["x"], seen["x"])  # blocks before the swap are untouched
        want_rest = torch.nn.functional.linear(seen["x"], m.affine.weight, m.affine.bias)
        assert torch.equal(got["y"][:, 1:], want_rest[:, 1:])  # the positions-≥-1 map elsewhere …
        if first == "ffn":  # … and the FFN's own output at position 0
            assert torch.allclose(got["y"][:, 0], seen["y"][:, 0], rtol=1e-6, atol=1e-6)
            assert m.n_params == st.heldout.params_ffn(block) + m.affine.n_params
        else:
            mean = torch.from_numpy(st.capture.first["train"][block].mean_y).float()
            assert torch.equal(got["y"][:, 0], mean.expand_as(got["y"][:, 0]))
            assert m.n_params == m.affine.n_params + m.affine.d_out
    ref = fit_affine(st.capture.without_first(block)[0])  # the map is the one fitted on positions ≥ 1
    assert np.abs(st.heldout.fit(block, "ffn").W - ref.W).max() <= 1e-12 * np.abs(ref.W).max()
    t = st.heldout.table([block], first=["map", "ffn", "mean"])
    assert list(t["first"]) == ["map", "ffn", "mean"]
    assert np.isnan(t.loc[0, "vs_map"]) and np.allclose(
        t.loc[1:, "vs_map"], t.loc[1:, "ppl_swapped"] - t.loc[0, "ppl_swapped"]
    )
    with pytest.raises(LinrecError, match="evaluation only"):
        save_swapped(model, None, {block: st.heldout.module(block, first="mean")}, tmp_path / "x")


@pytest.mark.parametrize("kind", ["llama", "gpt2"])  # gpt2 ties its LM head to the embeddings
def test_save_and_reload_give_identical_logits(tiny_model, tmp_path, kind):
    model = tiny_model(kind)
    st = swap_study(model)
    out = st.heldout.save(tmp_path / "swapped", [0, 1], ranks={0: 5})
    meta = json.loads((out / "linrec_swaps.json").read_text())
    assert [(s["block"], s["rank"]) for s in meta["swaps"]] == [(0, 5), (1, None)]
    from safetensors import safe_open

    with safe_open(str(out / "model.safetensors"), "pt") as f:
        keys = set(f.keys())
    ffn = {s.path for s in st.heldout.sites}
    stale = [
        k
        for k in keys
        if any(k.startswith(p + ".") for p in ffn) and k.rsplit(".", 1)[1] not in ("weight", "bias", "down", "up")
    ]
    assert not stale
    assert f"{st.heldout.sites[0].path}.down" in keys and f"{st.heldout.sites[1].path}.weight" in keys
    base_dir = tmp_path / "base"
    model.save_pretrained(base_dir)
    assert (out / "model.safetensors").stat().st_size < (base_dir / "model.safetensors").stat().st_size
    back = load_swapped(out)
    mods = {0: st.heldout.module(0, 5), 1: st.heldout.module(1)}
    ids = st.windows.split("test")
    with swapped(model, mods), torch.no_grad():
        want = model(input_ids=ids).logits
    with torch.no_grad():
        got = back.model(input_ids=ids).logits
    assert (got - want).abs().max() <= 1e-6
    lean = load_swapped(out, tokenizer=False)  # the same model, its saved tokenizer left unread
    assert lean.tokenizer is None and (back.tokenizer is not None) == (out / "tokenizer_config.json").exists()
    with torch.no_grad():
        assert torch.equal(lean.model(input_ids=ids).logits, got)
    reloaded = PerplexityEvaluator(back.model, ids).base_ppl
    in_memory = st.heldout.joint([0, 1], ranks={0: 5})["ppl"]
    assert abs(reloaded - in_memory) <= 1e-9 * in_memory
    assert back.tokenizer is not None and back.tokenizer("w1 w2").input_ids == st.loaded.tokenizer("w1 w2").input_ids
    assert find_ffn_sites(model)[0].module is st.heldout.sites[0].module  # saving left the in-memory model as it was
    via_load_model = load_model(str(out))  # what `linrec measure --model DIR` does: hands off to load_swapped
    assert via_load_model.source == "swapped"
    with torch.no_grad():
        assert (via_load_model.model(input_ids=ids).logits - want).abs().max() <= 1e-6


def test_reswapping_a_saved_model_composes_the_swaps(tiny_model, tmp_path):
    """A save read back, swapped again and saved (into a copy of itself, and into a new folder) records every map
    it holds and reloads to the logits of the model it was written from (issue 51: the record listed only the new
    block while the weights held both, and the save no longer loaded)."""
    model = tiny_model("llama")
    ffn_params = count_params(find_ffn_sites(model)[1].module)
    first = swap_study(model).heldout.save(tmp_path / "first", [1])
    again = tmp_path / "again"
    shutil.copytree(first, again)
    back = load_swapped(again)
    st = swap_study(back.model)
    ids = st.windows.split("test")
    new0, new1 = st.heldout.module(0), st.heldout.module(1)
    for blocks, swaps in (([0], {0: new0}), ([0, 1], {0: new0, 1: new1})):
        for target in (again, tmp_path / f"new-{len(blocks)}"):
            st.heldout.save(target, blocks)
            meta = json.loads((target / "linrec_swaps.json").read_text())
            assert [s["block"] for s in meta["swaps"]] == [0, 1]
            assert meta["swaps"][1]["params_ffn"] == ffn_params  # the FFN block 1's map replaced, not the map
            with swapped(back.model, swaps), torch.no_grad():
                want = back.model(input_ids=ids).logits
            with torch.no_grad():
                got = load_swapped(target).model(input_ids=ids).logits
            assert torch.equal(got, want)


def test_load_swapped_refuses_a_plain_directory(tmp_path, tiny_model):
    tiny_model("llama").save_pretrained(tmp_path / "m")
    with pytest.raises(LinrecError, match="linrec swap --save"):
        load_swapped(tmp_path / "m")
