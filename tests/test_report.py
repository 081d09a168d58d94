"""The report builder reads results files, applies its stated rules, and changes when a result changes."""

import re
from pathlib import Path

import pandas as pd
import pytest

from linrec.errors import LinrecError
from linrec.report import FIGURES, build_report, claims, render


def _results(tmp_path: Path, max_r2: float = 0.99, jump: float = 0.7, gain: float = 0.01, ci: str = "[-0.30, 0.25]") -> Path:
    d = tmp_path / "results"
    d.mkdir(exist_ok=True)
    pd.DataFrame([{"model": "m", "blocks": 12, "min R²_lin": 0.2, "max R²_lin": max_r2, "largest jump between adjacent blocks": jump,
                   "direction changes with depth": 5, "median κ(Gram)": 1e6}]).to_csv(d / "r2_lin_summary.csv", index=False)
    pd.DataFrame([{"blocks": 12, "median gain": gain, "max gain": 0.05, "min gain": 0.0, "Pearson r": 0.02, "p": 0.9, "95% CI": ci}]).to_csv(d / "probe_summary.csv", index=False)
    pd.DataFrame({"model": ["m"] * 3, "block": [0, 1, 2], "r2_lin": [0.2, max_r2, 0.5], "r2_lo": [0.1, 0.9, 0.4], "r2_hi": [0.3, 1.0, 0.6],
                  "r2_feature_median": [0.1, 0.8, 0.4], "cond_gram": [1e3, 1e6, 1e9]}).to_csv(d / "r2_lin.csv", index=False)
    return d


def test_claims_follow_their_rules(tmp_path):
    c = {x.number: x for x in claims(_results(tmp_path))}
    assert c[1].verdict == "reproduced" and "0.200 to 0.990" in c[1].ours
    assert c[3].verdict == "reproduced"
    assert all(c[n].verdict == "not run" for n in (2, 4, 5, 6, 7))  # their tables were never written
    c = {x.number: x for x in claims(_results(tmp_path, jump=0.1, gain=0.2))}
    assert c[1].verdict == "not reproduced" and c[3].verdict == "not reproduced"
    c = {x.number: x for x in claims(_results(tmp_path, ci="[0.10, 0.60]"))}
    assert c[3].verdict == "not reproduced"  # a CI that excludes 0: the gain does track nonlinearity


def test_a_changed_result_changes_the_report(tmp_path):
    d = _results(tmp_path)
    out = tmp_path / "paper" / "report.md"
    before = build_report(d, tmp_path / "figs", out).read_text()
    _results(tmp_path, max_r2=0.876)
    after = build_report(d, tmp_path / "figs", out).read_text()
    assert "0.990" in before and "0.990" not in after and "0.876" in after
    assert out.with_suffix(".html").read_text().count("<table>") >= 2


def test_figures_are_linked_relative_to_the_report_or_named_missing(tmp_path):
    d, figs = _results(tmp_path), tmp_path / "figs"
    figs.mkdir()
    (figs / "fig1_method.png").write_bytes(b"png")
    text = render(d, figs, tmp_path / "paper" / "report.md")
    assert "](../figs/fig1_method.png)" in text
    for stem, nb, _ in FIGURES[1:]:
        assert f"missing: run notebook {nb}" in text
    assert len(re.findall(r"^\| [1-7] \|", text, flags=re.M)) == 7  # every claim has a row


def test_missing_results_directory_names_the_fix(tmp_path):
    with pytest.raises(LinrecError, match="linrec figures"):
        render(tmp_path / "nothing", tmp_path, tmp_path / "r.md")


def test_readme_block_is_replaced_between_markers_only(tmp_path):
    from linrec.report import README_END, README_START, update_readme

    d = _results(tmp_path)
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{README_START}\nold numbers\n{README_END}\noutro\n")
    assert update_readme(readme, d)
    text = readme.read_text()
    assert text.startswith("intro\n") and text.endswith("\noutro\n") and "old numbers" not in text
    assert "0.200 to 0.990" in text and text.count(README_START) == 1
    plain = tmp_path / "plain.md"
    plain.write_text("no markers")
    assert not update_readme(plain, d) and plain.read_text() == "no markers"
