"""linrec.outputs.quant_text: the stored quantisation sensitivity beside claims 1 and 6a and in the limitations, silent
where it is absent or measured another model."""

from __future__ import annotations

import pandas as pd
import pytest

from helpers import claims_1_3_results
from linrec.analyses.quant import COLUMNS
from linrec.outputs.catalog import claims
from linrec.outputs.quant_text import quant_evidence, quant_limitation, quant_summary
from linrec.outputs.results import Results


def _stored(folder, model="m", scale=1.0):
    rows = []
    for seed, pct in ((0, 30.2), (1, 36.6)):
        for block, (change, hw) in enumerate(((0.004, 0.02), (-0.03, 0.02), (0.008, 0.03))):
            rows.append({c: 0.0 for c in COLUMNS} | {"model": model, "seed": seed, "scale": scale, "block": block,
                        "r2_lin_change": change * (1 + seed), "half_width_base": hw, "ppl_base": 20.0,
                        "ppl_change_pct": pct})  # fmt: skip
    (folder / "quant").mkdir(exist_ok=True)
    pd.DataFrame(rows).to_csv(folder / "quant" / "quant_sensitivity.csv", index=False)


def test_the_numbers_go_beside_claims_1_and_6a_and_into_the_limitations(tmp_path):
    r = Results(claims_1_3_results(tmp_path))
    assert quant_evidence(r, 1) == [] and quant_limitation(r) == []  # nothing stored: silent
    _stored(tmp_path)
    s = quant_summary(r)["m"]
    assert s["change_median"] == pytest.approx(0.012) and s["change_max"] == pytest.approx(0.06)
    (one,) = quant_evidence(r, 1)
    assert "median 0.012 (max 0.060, block 1; up in 67 % of blocks × draws)" in one and "2 draws" in one
    assert "half-width of 0.020, and by more than its half-width in 33 %" in one  # 0.03 and 0.06 beyond 0.02
    (six,) = quant_evidence(r, "6a")
    assert "perplexity by 30–37 % (base 20.0)" in six
    assert quant_evidence(r, 3) == []
    (lim,) = quant_limitation(r)
    assert lim.startswith("- ") and "m: R²_lin moves by a median 0.012 (max 0.060)" in lim and "+30–37 %" in lim
    by_claim = {c.number: c for c in claims(r.dir)}
    assert one in by_claim[1].details and one not in by_claim[3].details


@pytest.mark.parametrize("how", ["other model", "zero step", "old columns", "not csv"])
def test_silent_where_nothing_of_this_profile_was_measured(tmp_path, how):
    r = Results(claims_1_3_results(tmp_path))
    _stored(tmp_path, model="other" if how == "other model" else "m", scale=0.0 if how == "zero step" else 1.0)
    path = tmp_path / "quant" / "quant_sensitivity.csv"
    if how == "old columns":
        pd.read_csv(path).drop(columns="half_width_base").to_csv(path, index=False)
    if how == "not csv":
        path.write_bytes(b'"\x00\xff')
    assert quant_evidence(r, 1) == [] and quant_evidence(r, "6a") == [] and quant_limitation(r) == []
