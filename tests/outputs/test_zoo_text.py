"""linrec.outputs.zoo_text: the paper's own contrast (claim 2a's GPT-2 against Pythia-160m) set against seed noise in
each zoo (issue 87, item 7): the sentence at its margin, the pooled layout effect by hand, and the report's section
with its table and Figure 8c from planted zoo tables."""

import numpy as np
import pandas as pd
import pytest

from linrec.base.tables import load_table, save_table
from linrec.claims.rules import CLAIM2_MIN_EFFECT
from linrec.outputs import zoo_text
from linrec.outputs.report_figures import figure_lines
from linrec.outputs.zoo_text import contrast_section, contrast_sentence, pooled_layout

M = CLAIM2_MIN_EFFECT


def _distances(lo=0.02, hi=0.05, seed=0.01):
    row = lambda kind, v, lo, hi: {
        "kind": kind,
        "group": kind,
        "n_pairs": 4,
        "interval": "runs",
        "level": v,  # noqa: E731
        "level_lo": lo,
        "level_hi": hi,
        "shape": v,
        "shape_lo": lo,
        "shape_hi": hi,
    }
    return pd.DataFrame([row("gpt2 vs pythia", (lo + hi) / 2, lo, hi), row("gpt2 vs llama", 0.1, 0.08, 0.12),
                         row("seed", seed, seed / 2, seed * 1.5)])  # fmt: skip


@pytest.mark.parametrize(
    "lo, hi, side",
    [
        (0.02, np.nextafter(M, 0.0), "shown inside"),  # the interval's upper end just below 2a's minimum effect
        (0.02, M, "neither inside nor beyond"),  # at it: not shown inside
        (M, 0.2, "shown beyond"),  # the lower end at it: the distance 'sharply different' needs
        (np.nextafter(M, 0.0), 0.2, "neither inside nor beyond"),
    ],
)
def test_the_contrast_sentence_at_its_margin(lo, hi, side):
    """Planted: `<` as `<=` at the upper end, `>=` as `>` at the lower end (each flips a row)."""
    said = contrast_sentence("at the paper's width", _distances(lo, hi))
    assert f"the shape distance is {side} the {M:g} per block" in said
    assert said.startswith("at the paper's width: GPT-2 against Pythia differ in shape by ")
    assert f"({(lo + hi) / 2 / 0.01:.1f}× seed noise)" in said


def test_no_contrast_without_the_papers_pair_or_a_seed_pair():
    assert contrast_sentence("x", _distances().iloc[1:]) is None
    assert contrast_sentence("x", _distances().iloc[:2]) is None


def test_the_pooled_layout_effect_by_hand():
    """√(2 × component) per part, an interval's negative end read as 0."""
    comp = pd.DataFrame([{"part": part, "factor": f, "component": c, "component_lo": lo, "component_hi": hi}
                         for part, f, c, lo, hi in (("shape", "layout", 0.002, 0.0005, 0.004),
                                                    ("level", "layout", 0.005, -0.001, 0.01),
                                                    ("shape", "seed", 0.3, 0.2, 0.4))])  # fmt: skip
    row = pooled_layout(comp).iloc[0]
    assert row["kind"] == "layout (pooled)" and row["shape"] == pytest.approx(np.sqrt(0.004), abs=1e-15)
    assert (row["shape_lo"], row["shape_hi"]) == pytest.approx((np.sqrt(0.001), np.sqrt(0.008)), abs=1e-15)
    assert (row["level"], row["level_lo"], row["level_hi"]) == pytest.approx((0.1, 0.0, np.sqrt(0.02)), abs=1e-15)
    assert pooled_layout(None).empty


def test_the_report_section_and_its_figure_from_the_zoos_beside_the_profile(tmp_path, monkeypatch):
    """A project whose results/zoo_paper holds planted distances and components: the section names the paper's
    claim, lists every pair and the pooled layout row, states the sentence and shows Figure 8c, drawn into the
    figures folder; a project without a zoo gets no section."""
    from helpers import ROOT

    results = tmp_path / "results"
    (results / "default").mkdir(parents=True)
    zoo = results / "zoo_paper"
    save_table(_distances(), "zoo_distances", zoo)
    save_table(load_table("zoo_components", ROOT / "results" / "zoo_paper"), "zoo_components", zoo)
    out = tmp_path / "paper" / "report.md"
    lines = contrast_section(results / "default", tmp_path / "figures", out, figure_lines)
    text = "\n".join(lines)
    assert lines[0] == "## The paper's contrast: GPT-2 against Pythia"
    assert "| at the paper's width | gpt2 vs pythia | 0.035 [0.020, 0.050] |" in text
    assert "| at the paper's width | layout (pooled) |" in text and "in miniature" not in text
    assert "- at the paper's width (`results/zoo_paper`): GPT-2 against Pythia differ in shape by 0.035" in text
    assert (tmp_path / "figures" / "fig8c_contrast.png").stat().st_size > 10_000
    assert "![fig8c_contrast](../figures/fig8c_contrast.png)" in text
    empty = tmp_path / "other" / "results" / "default"
    empty.mkdir(parents=True)  # no zoo beside it: the checkout's zoos (a scratch run's report), else none
    assert "in miniature (`results/zoo`)" in "\n".join(contrast_section(empty, tmp_path / "f2", out, figure_lines))
    monkeypatch.setattr(zoo_text, "find_project_root", lambda start: tmp_path / "other")
    assert contrast_section(empty, tmp_path / "figures", out, figure_lines) == []
