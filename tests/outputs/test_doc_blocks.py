"""The docs' measured numbers are written from their tables (`linrec.outputs.doc_blocks`): a changed table value
changes the doc's sentence, and every committed block is what its tables write (none typed by hand)."""

import shutil

import numpy as np
import pandas as pd
import pytest

from helpers import ROOT
from linrec.outputs.doc_blocks import BLOCKS, blocks_in, end, fill, start, write_doc_blocks


def _checkout(tmp_path):
    """The docs and every table the blocks read, copied under `tmp_path` as a checkout."""
    for rel in {b.doc for b in BLOCKS} | {t for b in BLOCKS for t in b.tables}:
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
