"""What a reader of a notebook sees (issue 50, items 3 and 7): a cell that quotes another profile's results says
when they do not apply and shows none of them; block lists read back as block numbers, not 2.0 or nan."""

import pandas as pd

from linrec.app.params import measured_elsewhere
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
