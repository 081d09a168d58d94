"""What a reader of a notebook sees (issue 50, items 3 and 7): a cell that quotes another profile's results says
when they do not apply and shows none of them; block lists read back as block numbers, not 2.0 or nan."""

import pandas as pd

from linrec.app.profile import measured_elsewhere
from linrec.base.files import project_root
from linrec.claims.tables import load_table, save_table

ROOT = project_root(__file__)
DEFAULT = dict(corpus="wiki", models=["smollm2-135m", "gemma3-270m"], seed=0, capture={})


def test_another_profiles_results_apply_only_to_what_it_measured():
    assert measured_elsewhere(ROOT, "full", **DEFAULT) is None  # rows kept differ (30,000): no number quoted does
    assert measured_elsewhere(ROOT, "curve", **DEFAULT) is None
    assert measured_elsewhere(ROOT, "full", **{**DEFAULT, "corpus": "code"}) == "corpus 'wiki', not this run's 'code'"
    models = measured_elsewhere(ROOT, "full", **{**DEFAULT, "models": ["smollm2-135m"]})
    assert models.startswith("models ['smollm2-135m', 'gemma3-270m']")
    assert measured_elsewhere(ROOT, "full", **{**DEFAULT, "seed": 1}) == "seed 0, not this run's 1"
    assert measured_elsewhere(ROOT, "curve", **{**DEFAULT, "capture": {"tokens": 2560}}) == (
        "capture tokens 20480, not this run's 2560"
    )
    assert measured_elsewhere(ROOT, "full", **{**DEFAULT, "capture": {"sample_rows": 0}}) is None


def test_the_notebooks_quote_another_profile_only_after_asking_whether_it_applies():
    """Every cell that reads results/full or results/curve checks `measured_elsewhere` first (notebook 04 printed
    the wiki replication under -p corpus code)."""
    for nb in sorted((ROOT / "notebooks").glob("0*.py")):
        text = nb.read_text()
        for profile in ("full", "curve"):
            quoted = text.count(f'root / "results" / "{profile}"')
            checked = text.count(f'measured_elsewhere(root, "{profile}"')
            assert checked >= min(quoted, 1), f"{nb.name} quotes results/{profile} without measured_elsewhere"


def test_block_lists_read_back_as_blocks_one_block_and_none_included(tmp_path):
    """`outlier_blocks_every_sample` with one block came back as 2.0 and with none as nan (notebook 04 printed
    "on every sample: 2.0" and "nan")."""
    rows = [
        {"model": "a", "samples": "0 1 2", "n_samples": 3, "n_broadly_linear": "3 4 3", "n_outlier_concentrated":
         "1 1 1", "outlier_blocks": "2 | 2 | 2", "outlier_blocks_every_sample": "2", "n_claim4_passes": 3,
         "replication": "holds on every sample"},
        {"model": "b", "samples": "0 1 2", "n_samples": 3, "n_broadly_linear": "8 8 5", "n_outlier_concentrated":
         "0 0 0", "outlier_blocks": "none | none | none", "outlier_blocks_every_sample": "", "n_claim4_passes": 3,
         "replication": "holds on every sample"},
    ]  # fmt: skip
    save_table(pd.DataFrame(rows), "spectrum_replicates_summary", tmp_path)
    back = load_table("spectrum_replicates_summary", tmp_path)
    assert list(back["outlier_blocks_every_sample"]) == ["2", ""]
    assert pd.api.types.is_integer_dtype(back["n_samples"])


def test_a_label_names_the_threshold_its_table_counts_with():
    """`n_high_r2` counts R²_lin ≥ 0.8 in spectrum_summary and ≥ 0.9 in swap_safety: one label named 0.9 for both.
    Every label with a threshold takes it from the rule's constant."""
    from linrec.analyses.spectrum import REGIME_HIGH_R2, REGIME_TOP1
    from linrec.claims.rules import CLAIM6_BUDGET, FIRST_TOKEN_OVERLAP, FIRST_TOKEN_SHARE, SWAP_HIGH_R2
    from linrec.claims.tables import labelled

    df = pd.DataFrame([{"n_high_r2": 3, "outlier_first_blocks": "", "first_share_blocks": "", "n_within_budget": 1,
                        "top1_broadly_linear_blocks": "", "n_high_r2_costly": 0}])  # fmt: skip
    spectrum, swap = labelled(df, "spectrum_summary").columns, labelled(df, "swap_safety").columns
    assert (
        spectrum[0] == f"blocks with R²_lin ≥ {REGIME_HIGH_R2:g}"
        and swap[0] == f"blocks with R²_lin ≥ {SWAP_HIGH_R2:g}"
    )
    assert spectrum[0] != swap[0]
    assert labelled(df).columns[0] == "n_high_r2"  # no table: no label that could name the wrong threshold
    shown = " | ".join(spectrum)
    for words in (f"≥ {FIRST_TOKEN_OVERLAP * 100:g} %", f"≥ {FIRST_TOKEN_SHARE * 100:g} %", f"≥ {REGIME_TOP1:g} yet",
                  f"ΔPPL ≤ +{CLAIM6_BUDGET:g}", f"ΔPPL > +{CLAIM6_BUDGET:g}"):  # fmt: skip
        assert words in shown, (words, shown)


def test_the_top1_row_counts_with_the_regimes_own_share(monkeypatch):
    """regime_summary's "top-1 share ≥ … yet broadly linear" used a literal 0.5 beside REGIME_TOP1: moved to 0.4,
    the row follows it."""
    import linrec.analyses.spectrum as spectrum
    from linrec.claims.regimes import regime_summary

    row = {"model": "m", "regime": "broadly linear", "first_var_share": 0.0, "n_massive": 0, "r2_lin": 0.9,
           "r2_ex_top8": 0.9, "eff_rank_out": 100.0, "d_out": 100, "r2_feature_median": 0.9,
           "eff_rank_explained": 50.0}  # fmt: skip
    table = pd.DataFrame([{**row, "block": 0, "top1_var_share": 0.45}, {**row, "block": 1, "top1_var_share": 0.55}])
    assert regime_summary(table, spectrum.REGIMES).loc[0, "top1_broadly_linear_blocks"] == "1"
    monkeypatch.setattr(spectrum, "REGIME_TOP1", 0.4)
    assert regime_summary(table, spectrum.REGIMES).loc[0, "top1_broadly_linear_blocks"] == "0 1"


def test_a_verdict_line_names_each_models_outcome_in_words():
    from linrec.claims.rules import NOT_TESTABLE, Verdict

    v = Verdict(3, NOT_TESTABLE, [{"model": "a", "passes": True}, {"model": "b", "passes": None},
                                  {"model": "c", "passes": False}, {"model": "all", "passes": None}])  # fmt: skip
    assert v.by_model(exclude="all") == "a: holds · b: not testable · c: fails"
    v7 = Verdict("7b", NOT_TESTABLE, [{"model": "a", "mechanism": "conditioning", "dose_outcome": "rise"}])
    assert v7.by_model("mechanism", "dose_outcome") == "a: conditioning, rise"


def test_the_readmes_hero_caption_promises_only_what_its_figure_draws():
    """fig2_swap.png draws the swap's ΔPPL alone (R²_lin per block is fig2_r2_lin.png): its caption said both."""
    import re

    readme = (ROOT / "README.md").read_text()
    alt = re.search(r"!\[([^\]]*)\]\(figures/fig2_swap\.png\)", readme)[1]
    assert "ΔPPL" in alt and "R²_lin" not in alt


def test_notebook_06_does_not_say_every_model_runs_without_a_bos_token():
    text = (ROOT / "notebooks" / "06_swap.py").read_text()
    assert "These models run without a BOS token" not in text and "Gemma-3's tokenizer prepends" in text


def test_the_regime_story_counts_every_block_once_and_names_what_claim_4_rests_on():
    table = load_table("spectrum", ROOT / "results" / "default")
    from linrec.claims.regimes import regime_story

    lines = regime_story(table)
    assert len(lines) == table["model"].nunique()
    for line, (model, t) in zip(lines, table.groupby("model", sort=False)):
        counts = t["regime"].value_counts()
        neither = len(t) - counts.get("broadly linear", 0) - counts.get("outlier-concentrated", 0)
        assert line.startswith(f"{model}: of {len(t)} blocks") and f"; {neither} (" in line
        for b in t.loc[t["regime"] == "outlier-concentrated", "block"]:
            assert f"block {b} (explained part's effective rank" in line
