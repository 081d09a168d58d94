"""linrec.outputs.results: the display labels a table is shown with only rename, and a label that names a threshold
names the one its table counts with; the one read of a table (`Results.get`) names where it came from (this run, a
declared fallback) and what it passed over as stale, and `elsewhere` words another profile's table only where that
run applies and is current."""

import re

import pandas as pd

from helpers import ROOT, planted
from helpers import claim1_row as _claim1_row
from linrec.base import tables
from linrec.base.registry import TABLES
from linrec.base.tables import save_table
from linrec.claims.rules import CLAIM6_BUDGET, FIRST_TOKEN_SHARE
from linrec.outputs.ceiling_text import curve_text, replication_text
from linrec.outputs.results import Results, elsewhere, labelled


def test_every_registered_column_is_snake_case_and_labels_only_rename():
    for name, spec in TABLES.items():
        for c in spec.columns:
            assert re.fullmatch(r"[a-z][a-z0-9_]*", c), (name, c)
    df = pd.DataFrame([_claim1_row()])
    shown = labelled(df)
    assert "max R²_lin" in shown.columns and shown.shape == df.shape
    pd.testing.assert_frame_equal(shown.set_axis(df.columns, axis=1), df)  # values untouched (NaN included)


def test_a_label_names_the_threshold_its_table_counts_with():
    """`n_high_r2` counts R²_lin ≥ 0.8 in spectrum_summary and ≥ 0.9 in swap_safety: one label named 0.9 for both.
    Every label with a threshold takes it from the rule's constant."""
    from linrec.analyses.spectrum import REGIME_HIGH_R2, REGIME_TOP1
    from linrec.claims.rules import FIRST_TOKEN_OVERLAP, SWAP_HIGH_R2
    from linrec.outputs.results import labelled

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


def test_a_pair_of_corpora_shift_reads_level_signed_and_shape_unsigned_with_n_a_for_a_missing_end():
    """Claim 5's words for one pair (moved from linrec.claims.corpora to the outputs layer, issue 86): the level
    signed, the shape not, three decimals, "n/a" for an end not measured; `suffix` reads the columns without
    position 0. Planted: the level's sign dropped, or the suffix ignored, fails."""
    from linrec.outputs.results import shift_words

    q = {"corpus_a": "wiki", "corpus_b": "web", "level": 0.0391, "level_lo": 0.016, "level_hi": 0.0634,
         "shape": 0.013, "shape_lo": None, "shape_hi": 0.022, "level_ex_first": -0.2, "level_lo_ex_first": -0.3,
         "level_hi_ex_first": -0.1, "shape_ex_first": 0.5, "shape_lo_ex_first": 0.4,
         "shape_hi_ex_first": 0.6}  # fmt: skip
    assert shift_words(q) == "wiki − web: level +0.039 [0.016, 0.063], shape 0.013 [n/a, 0.022]"
    assert shift_words(q, "_ex_first") == "wiki − web: level -0.200 [-0.300, -0.100], shape 0.500 [0.400, 0.600]"


# ---- the one read: a table with where it came from (`Results.get`) ----------------------------------------------
def _replicates(folder, sd: float) -> None:
    """A one-row `r2_replicates_summary` (a fallback: params/full.yaml's) in `folder`, its SD `sd`."""
    save_table(planted("r2_replicates_summary", model="m", samples="0 1", replication="holds", sd_median=sd),
               "r2_replicates_summary", folder)  # fmt: skip


def _older(folder, name: str) -> None:
    """Table `name` in `folder` as an older linrec wrote it: one registered column missing."""
    folder.mkdir(parents=True, exist_ok=True)
    planted(name).iloc[:, :-1].to_csv(folder / f"{name}.csv", index=False)


def test_get_names_this_runs_table_a_fallbacks_and_a_stale_one(tmp_path, monkeypatch):
    """A planted folder set: this run's (results/default), two declared fallbacks (`paper`, then `full`) of which
    `paper`'s run an older linrec wrote. `get` reads this run's table where it holds one (source: this folder, its
    own); else the first current fallback's (source: that folder and profile), naming the stale run it passed over;
    this run's own table an older linrec wrote is left out and listed (`stale`); every fallback stale: no table, and
    the source says why in words. `table` reads this run's alone. Planted: the fallback preferred over this run's
    table, or a stale run read as current, fails."""
    monkeypatch.setitem(tables.STAND_INS, "r2_replicates_summary", ("paper", "full"))
    here, paper, full = (tmp_path / "results" / p for p in ("default", "paper", "full"))
    save_table(planted("capture"), "capture", here)  # a results folder: it holds a table
    _replicates(full, 0.2)
    _replicates(paper, 0.3)
    _older(paper, "r2_lin")  # notebook 02's run in results/paper: an older linrec's
    r = Results(here)

    table, source = r.get("r2_replicates_summary")  # not in this run: the first current fallback's
    assert (source.folder, source.profile, table["sd_median"].iloc[0]) == (full, "full", 0.2)
    assert not source.own and source.stale == {"paper": ("r2_lin",)} and source.why_stale is None
    assert r.table("r2_replicates_summary") is None  # this run's alone

    _replicates(here, 0.1)
    table, source = r.get("r2_replicates_summary")  # this run's, before any fallback
    assert (source.folder, source.profile, table["sd_median"].iloc[0]) == (here, None, 0.1) and source.own
    assert r.table("r2_replicates_summary")["sd_median"].iloc[0] == 0.1

    _older(here, "r2_replicates_summary")  # this run's table, an older linrec's: left out, listed, the fallback read
    table, source = r.get("r2_replicates_summary")
    assert source.left_out and r.stale == {"r2_replicates_summary": "02"} and source.profile == "full"

    _older(full, "r2_lin")  # every fallback's run stale: nothing read, and why said
    r = Results(here)
    table, source = r.get("r2_replicates_summary", own=False)
    assert table is None and source.folder is None and source.other == "paper"
    assert source.why_stale.startswith("its last run, in `results/paper/`, was written by an older linrec")
    assert "`linrec figures --params params/paper.yaml --only 02` refreshes it" in source.why_stale


def _overview(model: str, gain: float) -> dict:
    row = dict.fromkeys(TABLES["r2_curve_overview"].columns, 0.5)
    return row | {"model": model, "n_blocks": 4, "ref_tokens": 16384, "largest_tokens": 204800,
                  "gain_largest_median": gain, "rank_spearman_ref_inf": 0.9}  # fmt: skip


def _replication(model: str, sd: float) -> dict:
    return {"model": model, "n_samples": 3, "samples": "0 1 2", "sd_median": sd, "sd_max": 0.05, "sd_max_block": 7,
            "ci_half_width_median": 0.02, "n_claim1_passes": 3, "replication": "holds on every sample"}  # fmt: skip


def _quoted(root, name: str, differs: str | None = None):
    """Table `name` as notebook 02 quotes it in a run whose results are in root/results/default (as
    `linrec.app.profile.results` reads it, `differs` standing for how the fallback's settings differ)."""
    save_table(planted("capture"), "capture", root / "results" / "default")
    return Results(root / "results" / "default", applies=lambda other: differs).get(name, own=False)


def test_the_curve_profiles_run_is_quoted_only_where_it_applies_and_is_current(tmp_path):
    assert elsewhere(_quoted(tmp_path, "r2_curve_overview"), curve_text) is None  # no run of params/curve.yaml
    curve = tmp_path / "results" / "curve"
    save_table(pd.DataFrame([_overview("a", 0.026), _overview("b", 0.031)]), "r2_curve_overview", curve)
    quoted = elsewhere(_quoted(tmp_path, "r2_curve_overview"), curve_text).splitlines()
    assert quoted[0].endswith("(results/curve/r2_curve_overview.csv) found:") and len(quoted) == 3
    assert quoted[1].startswith("a: from 16384 to 204800 train tokens R²_lin rises by 0.026")
    assert quoted[2].startswith("b: ") and "rises by 0.031" in quoted[2]
    differs = "corpus 'wiki', not this run's 'code'"
    assert elsewhere(_quoted(tmp_path, "r2_curve_overview", differs), curve_text) == (
        f"Not run in this profile; params/curve.yaml, which runs it, measured {differs}"
    )  # a run that measured another thing is not quoted, however current
    r2 = pd.DataFrame({c: [0.5] for c in TABLES["r2_lin"].columns if c != "r2_ex_first_lo"})
    r2.to_csv(curve / "r2_lin.csv", index=False)  # an older linrec's table: a registered column missing
    stale = elsewhere(_quoted(tmp_path, "r2_curve_overview"), curve_text)
    assert "older linrec and nothing of it is shown here: `r2_lin.csv` lack columns" in stale
    assert "0.026" not in stale  # none of its numbers
    assert stale.endswith("`linrec figures --params params/curve.yaml --only 02` refreshes it.")


def test_replication_is_quoted_from_the_full_profile_or_named(tmp_path):
    what, absent = "replication on fresh text", "(params/{other}.yaml runs samples 1 and 2)"
    quote = lambda *a: elsewhere(_quoted(tmp_path, *a), replication_text, what, absent)  # noqa: E731
    assert quote("r2_replicates_summary") == f"{what}: not run in this profile (params/full.yaml runs samples 1 and 2)"
    save_table(pd.DataFrame([_replication("a", 0.012)]), "r2_replicates_summary", tmp_path / "results" / "full")
    assert quote("r2_replicates_summary").splitlines() == [
        "Not run in this profile. The last run of params/full.yaml (results/full/r2_replicates_summary.csv) found:",
        "a: over samples 0 1 2, a block's R²_lin moves by a median SD of 0.012 (at most 0.050, block 7) against a "
        "window-interval half-width of 0.020; claim 1 holds on every sample (3 of 3).",
    ]
    assert quote("r2_replicates_summary", "seed 0, not this run's 1").endswith("measured seed 0, not this run's 1")
    story = elsewhere(_quoted(tmp_path, "spectrum_replicates_summary"), lambda t: "a story", "claim 4 on fresh text",
                      absent, found="")  # fmt: skip
    assert story == "claim 4 on fresh text: not run in this profile (params/full.yaml runs samples 1 and 2)"
    pd.DataFrame([_replication("a", 0.012)]).to_csv(tmp_path / "results" / "full" / "r2_lin.csv", index=False)
    old = quote("r2_replicates_summary")  # an older linrec's run of 02
    assert old.startswith("replication on fresh text: not run in this profile; params/full.yaml runs it, but its "
                          "last run, in `results/full/`, was written by an older linrec and nothing of it is shown "
                          "here: `r2_lin.csv` lack columns")  # fmt: skip
    assert "0.012" not in old


def test_the_notebooks_read_another_profile_only_through_the_one_read():
    """A call that words another profile's table (`elsewhere`) is given what `linrec.app.profile.results(p, root)
    .get` read (the one read that asks whether the other profile measured what this run measures; tests/test_teaching.py
    keeps the notebooks from reading another profile's folder any other way)."""
    for nb in sorted((ROOT / "notebooks").glob("0*.py")):
        code = nb.read_text()
        for call in re.findall(r"\belsewhere\(([^\n]*)", code):
            quoted = re.match(r"\w+", call).group()  # the read itself, or the name it was bound to
            assert call.startswith("results(p, root).get(") or f"{quoted} = results(p, root).get(" in code, (
                nb.name, call)  # fmt: skip
