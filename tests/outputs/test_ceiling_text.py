"""Notebook 02's words, `linrec.outputs.ceiling_text`: what another profile's last run found (as the one read,
`linrec.base.tables.read`, quotes it) is said only when that run applies and is current; the replication and
first-token sentences state the table's numbers; the ceiling table's view shows its columns at their precision."""

import re

import numpy as np
import pandas as pd

from linrec.analyses.profile import FIRST_TOKEN_SHARE
from linrec.base.files import project_root
from linrec.base.registry import TABLES
from linrec.base.tables import read, save_table
from linrec.outputs import ceiling_text as text

ROOT = project_root(__file__)


def _overview(model: str, gain: float) -> dict:
    row = dict.fromkeys(TABLES["r2_curve_overview"].columns, 0.5)
    return row | {"model": model, "n_blocks": 4, "ref_tokens": 16384, "largest_tokens": 204800,
                  "gain_largest_median": gain, "rank_spearman_ref_inf": 0.9}  # fmt: skip


def _replication(model: str, sd: float) -> dict:
    return {"model": model, "n_samples": 3, "samples": "0 1 2", "sd_median": sd, "sd_max": 0.05, "sd_max_block": 7,
            "ci_half_width_median": 0.02, "n_claim1_passes": 3, "replication": "holds on every sample"}  # fmt: skip


def _quoted(root, name: str, differs: str | None = None):
    """Table `name` as notebook 02 quotes it in a run whose results are in root/results/default (as
    `linrec.app.profile.quoted` reads it, `differs` standing for how the stand-in's settings differ)."""
    return read(name, root / "results" / "default", own=False, applies=lambda other: differs)


def test_the_curve_profiles_run_is_quoted_only_where_it_applies_and_is_current(tmp_path):
    assert text.curve_elsewhere(_quoted(tmp_path, "r2_curve_overview")) is None  # no run of params/curve.yaml
    curve = tmp_path / "results" / "curve"
    save_table(pd.DataFrame([_overview("a", 0.026), _overview("b", 0.031)]), "r2_curve_overview", curve)
    quoted = text.curve_elsewhere(_quoted(tmp_path, "r2_curve_overview")).splitlines()
    assert quoted[0].endswith("(results/curve/r2_curve_overview.csv) found:") and len(quoted) == 3
    assert quoted[1].startswith("a: from 16384 to 204800 train tokens R²_lin rises by 0.026")
    assert quoted[2].startswith("b: ") and "rises by 0.031" in quoted[2]
    differs = "corpus 'wiki', not this run's 'code'"
    assert text.curve_elsewhere(_quoted(tmp_path, "r2_curve_overview", differs)) == (
        f"Not run in this profile; params/curve.yaml, which runs it, measured {differs}"
    )  # a run that measured another thing is not quoted, however current
    r2 = pd.DataFrame({c: [0.5] for c in TABLES["r2_lin"].columns if c != "r2_ex_first_lo"})
    r2.to_csv(curve / "r2_lin.csv", index=False)  # an older linrec's table: a registered column missing
    stale = text.curve_elsewhere(_quoted(tmp_path, "r2_curve_overview"))
    assert "older linrec and nothing of it is shown here: `r2_lin.csv` lack columns" in stale
    assert "0.026" not in stale  # none of its numbers
    assert "`linrec figures --params params/curve.yaml --only 02` refreshes it" in stale


def test_replication_is_quoted_from_the_full_profile_or_named(tmp_path):
    assert text.replication_elsewhere(_quoted(tmp_path, "r2_replicates_summary")) == (
        "replication on fresh text: not run in this profile (params/full.yaml runs samples 1 and 2)"
    )
    save_table(pd.DataFrame([_replication("a", 0.012)]), "r2_replicates_summary", tmp_path / "results" / "full")
    quoted = text.replication_elsewhere(_quoted(tmp_path, "r2_replicates_summary")).splitlines()
    assert quoted == [
        "Not run in this profile. The last run of params/full.yaml (results/full/r2_replicates_summary.csv) found:",
        "a: over samples 0 1 2, a block's R²_lin moves by a median SD of 0.012 (at most 0.050, block 7) against a "
        "window-interval half-width of 0.020; claim 1 holds on every sample (3 of 3).",
    ]
    assert text.replication_elsewhere(_quoted(tmp_path, "r2_replicates_summary", "seed 0, not this run's 1")).endswith(
        "measured seed 0, not this run's 1"
    )
    story = text.replication_elsewhere(_quoted(tmp_path, "spectrum_replicates_summary"), "claim 4 on fresh text",
                                       lambda t: ["a story"])  # fmt: skip
    assert story == "claim 4 on fresh text: not run in this profile (params/full.yaml runs samples 1 and 2)"
    pd.DataFrame([_replication("a", 0.012)]).to_csv(tmp_path / "results" / "full" / "r2_lin.csv", index=False)
    old = text.replication_elsewhere(_quoted(tmp_path, "r2_replicates_summary"))  # an older linrec's run of 02
    assert old.startswith("replication on fresh text: not run in this profile; params/full.yaml runs it, but its "
                          "last run, in `results/full/`, was written by an older linrec and nothing of it is shown "
                          "here: `r2_lin.csv` lack columns")  # fmt: skip
    assert "0.012" not in old


def test_replication_text_is_one_sentence_per_model():
    lines = text.replication_text(pd.DataFrame([_replication("a", 0.0123), _replication("b", 0.2)])).splitlines()
    assert [ln.split(":")[0] for ln in lines] == ["a", "b"]
    assert "median SD of 0.012 " in lines[0] and "median SD of 0.200 " in lines[1]


def test_first_token_blocks_are_those_at_or_above_the_rules_share():
    t = pd.DataFrame(
        {
            "model": ["m", "m", "m", "n"],
            "block": [0, 1, 2, 0],
            "r2_lin": [0.99, 0.95, 0.5, 0.7],
            "first_var_share": [FIRST_TOKEN_SHARE, np.nextafter(FIRST_TOKEN_SHARE, 0), 0.97, 0.1],
            "r2_ex_first": [0.41, 0.9, 0.45, 0.7],
        }
    )
    assert text.first_token_text(t).splitlines() == [
        "m block 0: R²_lin 0.990, of which the first token holds 50% of the output variance; without it R²_lin is "
        "0.410.",
        "m block 2: R²_lin 0.500, of which the first token holds 97% of the output variance; without it R²_lin is "
        "0.450.",
        "n: no block holds half its output variance on the first token; R²_lin describes running text.",
    ]


def test_the_ceiling_view_shows_its_columns_at_their_precision():
    t = pd.DataFrame({c: [0.123456] for c in TABLES["r2_lin"].columns}).assign(
        model="m", block=3, cond_gram=2.4e4, n_train=16384
    )
    shown = text.r2_lin_view(t).to_string()
    header = shown.splitlines()[0].split()
    assert header == text.R2_COLUMNS
    assert shown.splitlines()[1].split() == ["m", "3", *["0.123"] * 6, "2.4e+04", "1.2e-01", "16384", "0.123456"]


def test_the_notebooks_ask_whether_another_profile_applies_before_quoting_it():
    """A call that quotes results/curve or results/full passes what `linrec.app.profile.quoted` read (the one read
    that asks whether the other profile measured what this run measures; tests/test_teaching.py keeps the notebooks
    from reading another profile's folder any other way)."""
    for nb in sorted((ROOT / "notebooks").glob("0*.py")):
        for call in re.findall(r"(?:curve|replication)_elsewhere\(([^\n]*)", nb.read_text()):
            assert call.startswith("quoted("), f"{nb.name}: {call}"
