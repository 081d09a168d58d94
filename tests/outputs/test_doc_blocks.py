"""The docs' measured numbers are written from their tables (`linrec.outputs.doc_blocks`): a changed table value
changes the doc's sentence, and every committed block is what its tables write (none typed by hand)."""

import importlib
import inspect
import pkgutil
import shutil
import sys

import numpy as np
import pandas as pd
import pytest

import linrec.analyses
from helpers import ROOT
from linrec.outputs.doc_blocks import BLOCKS, blocks_in, end, fill, start, write_doc_blocks
from linrec.outputs.refresh import STAND_ALONE, stand_alone


def _checkout(tmp_path):
    """The docs, every table the blocks read and the inputs of the stored summaries, copied under `tmp_path` as a
    checkout."""
    inputs = {f"results/{folder}/{raw}" for folder in ("quant", "split") for raw in STAND_ALONE
              if (ROOT / "results" / folder / raw).is_file()}  # fmt: skip
    for rel in {b.doc for b in BLOCKS} | {t for b in BLOCKS for t in b.tables} | inputs:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    return tmp_path


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.name)
def test_every_committed_block_is_written_from_its_tables(block):
    """Type a number inside a block by hand (or drop its markers and type the sentence) and this fails: regenerating
    would rewrite it."""
    text = (ROOT / block.doc).read_text()
    assert start(block.name) in text and end(block.name) in text, f"{block.doc} lost block {block.name}'s markers"
    tables = [pd.read_csv(ROOT / t) for t in block.tables]
    assert fill(text, block.name, block.words(*tables)) == text, f"{block.doc}'s block {block.name} was edited by hand"


def test_a_changed_table_value_changes_the_docs_sentence(tmp_path):
    root = _checkout(tmp_path)
    quant = pd.read_csv(root / "results/quant/quant_sensitivity.csv")
    smol = (quant["model"] == "smollm2-135m") & (quant["scale"] == 1)
    quant.loc[smol, "r2_lin_change"] *= 3  # the planted value
    quant.to_csv(root / "results/quant/quant_sensitivity.csv", index=False)
    shift = pd.read_csv(root / "results/split/split_shift.csv")
    row = shift.index[(shift["model"] == "gemma3-270m") & (shift["block"] == 3)][0]
    shift.loc[row, ["shift", "shift_lo", "shift_hi"]] = [-0.5, -0.6, -0.4]
    shift.to_csv(root / "results/split/split_shift.csv", index=False)
    before = (root / "docs/limitations.md").read_text()
    assert write_doc_blocks(root) == []  # the docs read the stored summaries, not the planted tables
    for folder in ("quant", "split"):  # what benchmarks/quant.py and split.py do after measuring
        stand_alone(root / "results" / folder)

    assert write_doc_blocks(root) == [root / "docs/limitations.md"]  # numerics.md reads neither table
    after = (root / "docs/limitations.md").read_text()
    median = np.median(np.abs(quant.loc[smol, "r2_lin_change"]))  # the reference, from the planted table
    assert f"SmolLM2's R²_lin moves by a median {median:.3f}" in after
    assert f"SmolLM2's R²_lin moves by a median {median:.3f}" not in before
    assert "Gemma-3's R²_lin is lower held out by document" in after and "largest −0.500 at block 3" in after
    assert "largest −0.500" not in before
    assert blocks_in(after) == blocks_in(before)  # the markers kept, the text outside them untouched
    outside = lambda t: [t.split(start(n))[0] for n in blocks_in(t)][:1]  # noqa: E731
    assert outside(after) == outside(before)
    assert write_doc_blocks(root) == []  # a second run finds nothing to change and writes nothing


def test_a_block_whose_table_is_absent_is_left_as_it_stands(tmp_path):
    root = _checkout(tmp_path)
    write_doc_blocks(root)  # as its tables write it
    (root / "results/split/split_shift.csv").unlink()
    before = (root / "docs/limitations.md").read_text()
    write_doc_blocks(root)
    assert (root / "docs/limitations.md").read_text() == before


def test_fill_replaces_only_between_the_markers():
    text = f"a {start('x')}old{end('x')} b {start('y')}keep{end('y')}"
    assert fill(text, "x", "new") == f"a {start('x')}new{end('x')} b {start('y')}keep{end('y')}"
    assert fill("no markers", "x", "new") == "no markers"
    assert blocks_in(text) == ["x", "y"]


def test_a_changed_gpu_measurement_changes_the_scaling_page(tmp_path):
    root = _checkout(tmp_path)
    gpu = pd.read_csv(root / "results/bench/gpu.csv")
    small = gpu["tokens"].idxmin()
    gpu.loc[small, "ratio_exact"] = 2.345  # the planted value
    gpu.to_csv(root / "results/bench/gpu.csv", index=False)
    assert write_doc_blocks(root) == [root / "docs/scaling.md"]
    after = (root / "docs/scaling.md").read_text()
    assert "the exact capture takes 2.35× the plain forward pass" in after
    assert "2.35×" not in (ROOT / "docs/scaling.md").read_text()


def test_rendering_the_docs_calls_no_analysis(tmp_path, monkeypatch):
    """Issue 86: the docs' blocks only read tables. Every function of linrec.analyses raises while they are written;
    a block that computed its numbers through one (as the quantisation and split blocks once did) fails here."""

    def refuse(*args, **kwargs):
        raise AssertionError("an analysis ran while the docs were rendered")

    analyses = set()
    for info in pkgutil.iter_modules(linrec.analyses.__path__, "linrec.analyses."):
        module = importlib.import_module(info.name)
        analyses |= {fn for _, fn in inspect.getmembers(module, inspect.isfunction) if fn.__module__ == info.name}
    assert len(analyses) > 100  # the whole layer, not a few names
    for module in [m for n, m in sys.modules.items() if n.startswith("linrec") and m is not None]:
        for name, value in list(vars(module).items()):  # the functions, and every name another module bound to one
            if inspect.isfunction(value) and value in analyses:
                monkeypatch.setattr(module, name, refuse)
    root = _checkout(tmp_path)
    for b in BLOCKS:  # every block's text wiped, so each is written again
        doc = root / b.doc
        doc.write_text(fill(doc.read_text(), b.name, "(to be written)"))
    write_doc_blocks(root)
    for b in BLOCKS:
        assert (root / b.doc).read_text() == (ROOT / b.doc).read_text(), f"{b.doc} not written back as committed"
