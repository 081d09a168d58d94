"""linrec.outputs.results: the display labels a table is shown with only rename, and a label that names a threshold
names the one its table counts with."""

import re

import pandas as pd

from helpers import claim1_row as _claim1_row
from linrec.base.registry import TABLES
from linrec.claims.rules import CLAIM6_BUDGET, FIRST_TOKEN_SHARE
from linrec.outputs.results import labelled


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
