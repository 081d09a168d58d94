"""Notebook 02's words, `linrec.outputs.ceiling_text`: the replication and first-token sentences state the table's
numbers; the ceiling table's view shows its columns at their precision (what another profile's run found, in these
words: tests/outputs/test_results.py)."""

import numpy as np
import pandas as pd

from linrec.analyses.profile import FIRST_TOKEN_SHARE
from linrec.base.registry import TABLES
from linrec.outputs import ceiling_text as text


def _replication(model: str, sd: float) -> dict:
    return {"model": model, "n_samples": 3, "samples": "0 1 2", "sd_median": sd, "sd_max": 0.05, "sd_max_block": 7,
            "ci_half_width_median": 0.02, "n_claim1_passes": 3, "replication": "holds on every sample"}  # fmt: skip


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
