"""The numbered notebooks execute under papermill with the tiny parameter set and write their figures."""

import re

import pandas as pd
import yaml

from linrec.report import FIGURES, build_report
from linrec.run import notebooks, project_root, run_notebooks
from linrec.spectrum import REGIMES


def test_notebooks_run_with_smoke_parameters(tmp_path):
    root = project_root(__file__)
    params = yaml.safe_load((root / "params" / "smoke.yaml").read_text())
    report = tmp_path / "paper" / "report.md"
    params.update(results_dir=str(tmp_path / "results"), figures_dir=str(tmp_path / "figures"), report_path=str(report))
    pfile = tmp_path / "smoke.yaml"
    pfile.write_text(yaml.safe_dump(params))
    executed = run_notebooks(pfile, root=root)
    assert [p.stem for p in executed] == [nb.stem for nb in notebooks(root)]
    for p in executed:
        assert p.exists() and p.stat().st_size > 0
    assert (tmp_path / "figures" / "fig2_r2_lin.png").stat().st_size > 10_000
    assert (tmp_path / "figures" / "fig2_r2_lin.pdf").exists()
    table = pd.read_csv(tmp_path / "results" / "r2_lin.csv")
    assert set(table["model"]) == set(params["models"])
    assert len(table) == 30 and table["r2_lin"].between(-1, 1).all()
    for fig in ("fig3_bilinear_gain", "fig3b_trained_pitfall", "fig4_rank_outliers"):
        assert (tmp_path / "figures" / f"{fig}.png").stat().st_size > 10_000
    probe = pd.read_csv(tmp_path / "results" / "probe.csv")
    assert len(probe) == 30
    assert ((probe["r2_lin"] - table["r2_lin"]).abs() < 1e-12).all()  # notebook 03 starts from notebook 02's ceiling
    spectrum = pd.read_csv(tmp_path / "results" / "spectrum.csv")
    assert len(spectrum) == 30 and set(spectrum["regime"]) <= set(REGIMES)
    assert ((spectrum["r2_lin"] - table["r2_lin"]).abs() < 1e-12).all()  # notebook 04 scores the same maps
    # notebook 05: every corpus, bootstrap intervals around each R²_lin, one agreement row per corpus pair
    corpora = pd.read_csv(tmp_path / "results" / "corpora.csv")
    assert set(corpora["corpus"]) == set(params["corpora"]) and len(corpora) == 30 * len(params["corpora"])
    assert (corpora["r2_lo"] <= corpora["r2_lin"]).all() and (corpora["r2_lin"] <= corpora["r2_hi"]).all()
    assert len(pd.read_csv(tmp_path / "results" / "corpora_agreement.csv")) == 3
    # notebook 06: ΔPPL for every block, and the saved model reloads to the same perplexity
    swap = pd.read_csv(tmp_path / "results" / "swap.csv")
    assert len(swap) == 30 and (swap["ppl_base"] > 1).all() and swap["delta_ppl"].notna().all()
    assert (pd.read_csv(tmp_path / "results" / "swap_reload.csv")["abs_diff"] <= 1e-6).all()
    # notebook 07 and 08: the controls, and a report whose every figure exists
    assert len(pd.read_csv(tmp_path / "results" / "controls_inputs.csv")) == 30
    text = report.read_text()
    linked = re.findall(r"!\[(\w+)\]\(([^)]+)\)", text)
    assert [stem for stem, _ in linked] == [stem for stem, _, _ in FIGURES] and "missing" not in text
    for _, rel in linked:
        assert (report.parent / rel).stat().st_size > 10_000
    # every number comes from the results files: change one, rebuild, and the report follows
    summary = pd.read_csv(tmp_path / "results" / "r2_lin_summary.csv")
    old = f"{summary.loc[0, 'max R²_lin']:.3f}"
    assert old in text
    summary.loc[0, "max R²_lin"] = 0.123456
    summary.to_csv(tmp_path / "results" / "r2_lin_summary.csv", index=False)
    rebuilt = build_report(tmp_path / "results", tmp_path / "figures", report, params).read_text()
    assert "to 0.123" in rebuilt and f"to {old}" not in rebuilt
