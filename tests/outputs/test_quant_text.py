"""linrec.outputs.quant_text: the stored quantisation sensitivity beside claims 1 and 6a and in the limitations, for
every model the table measured (this profile's first), silent where it is absent or measured none of this profile's
models."""

from __future__ import annotations

import pandas as pd
import pytest

from helpers import claims_1_3_results
from linrec.analyses.quant import COLUMNS
from linrec.outputs.catalog import claims
from linrec.outputs.quant_text import quant_evidence, quant_limitation, quant_summary
from linrec.outputs.refresh import stand_alone
from linrec.outputs.results import Results

# per model: (per seed: percent, change, lo, hi), per block: (ΔR²_lin at seed 0, half-width), base perplexity
PLANTED = {
    "m": (((30.2, 6.04, 4.5, 7.6), (36.6, 7.32, 5.9, 8.8)), ((0.004, 0.02), (-0.03, 0.02), (0.008, 0.03)), 20.0),
    "g": (((61.0, 12.2, 9.1, 15.4), (58.4, 11.68, 8.8, 14.9)), ((0.05, 0.01), (0.002, 0.04), (-0.1, 0.03)), 20.0),
}


def _stored(folder, models=("m",), scale=1.0):
    rows = []
    for model in models:
        draws, blocks, base = PLANTED["g" if model == "other" else model]
        for seed, (pct, ppl, lo, hi) in enumerate(draws):
            for block, (change, hw) in enumerate(blocks):
                rows.append({c: 0.0 for c in COLUMNS} | {"model": model, "seed": seed, "scale": scale, "block": block,
                            "r2_lin_change": change * (1 + seed), "half_width_base": hw, "ppl_base": base,
                            "ppl_change": ppl, "ppl_change_lo": lo, "ppl_change_hi": hi,
                            "ppl_change_pct": pct})  # fmt: skip
    (folder / "quant").mkdir(exist_ok=True)
    pd.DataFrame(rows).to_csv(folder / "quant" / "quant_sensitivity.csv", index=False)
    stand_alone(folder / "quant")  # its summary, as benchmarks/quant.py and `linrec.outputs.refresh` write it


def test_the_numbers_go_beside_claims_1_and_6a_and_into_the_limitations(tmp_path):
    r = Results(claims_1_3_results(tmp_path))
    assert quant_evidence(r, 1) == [] and quant_limitation(r) == []  # nothing stored: silent
    _stored(tmp_path)
    s = quant_summary(r)["m"]
    assert s["change_median"] == pytest.approx(0.012) and s["change_max"] == pytest.approx(0.06)
    (one,) = quant_evidence(r, 1)
    assert "median 0.012 (max 0.060, block 1; up in 67 % of blocks × draws)" in one and "2 draws" in one
    assert "half-width of 0.020, and by more than its half-width in 33 % (2 of 6 blocks × draws)" in one
    (six,) = quant_evidence(r, "6a")
    assert "perplexity by 30–37 % (base 20.0; +6.0 [+4.5, +7.6] and +7.3 [+5.9, +8.8], paired 95 % intervals)" in six
    assert "the +1 budget is 14–17 % of that rise" in six  # 1 / 7.32 and 1 / 6.04
    assert quant_evidence(r, 3) == []
    (lim,) = quant_limitation(r)
    assert lim.startswith("- ")
    assert "m: R²_lin moves by a median 0.012 (max 0.060) against a median half-width of 0.020, beyond it in 2 " in lim
    assert "perplexity +30–37 % (+6.0 [+4.5, +7.6] and +7.3 [+5.9, +8.8])" in lim
    by_claim = {c.number: c for c in claims(r.dir)}
    assert one in by_claim[1].details and one not in by_claim[3].details


def test_both_models_are_quoted_this_profiles_first_each_with_its_own_numbers(tmp_path):
    r = Results(claims_1_3_results(tmp_path))  # a profile of model "m" alone
    _stored(tmp_path, models=("g", "m"))  # the table lists the other model first
    assert list(quant_summary(r)) == ["m", "g"]
    one_m, one_g = quant_evidence(r, 1)
    assert one_m.startswith("m, quantisation") and one_g.startswith("g, quantisation")
    assert "median 0.012 (max 0.060, block 1" in one_m and "(2 of 6 blocks × draws)" in one_m
    # g: |changes| 0.05 0.002 0.1 and 0.1 0.004 0.2: median 0.075, max 0.2 at block 2; beyond 0.01/0.04/0.03: 4 of 6
    assert "median 0.075 (max 0.200, block 2; up in 67 % of blocks × draws)" in one_g
    assert "half-width of 0.030, and by more than its half-width in 67 % (4 of 6 blocks × draws)" in one_g
    six_m, six_g = quant_evidence(r, "6a")
    assert "by 30–37 % (base 20.0; +6.0 [+4.5, +7.6] and +7.3 [+5.9, +8.8]" in six_m
    assert "by 58–61 % (base 20.0; +12.2 [+9.1, +15.4] and +11.7 [+8.8, +14.9]" in six_g
    assert "the +1 budget is 8–9 % of that rise" in six_g  # 1 / 12.2 and 1 / 11.68
    (lim,) = quant_limitation(r)
    m_at, g_at = lim.index("m: R²_lin moves"), lim.index("; g: R²_lin moves")
    assert m_at < g_at
    assert "g: R²_lin moves by a median 0.075 (max 0.200) against a median half-width of 0.030, beyond it in 4 " in lim
    assert "perplexity +58–61 % (+12.2 [+9.1, +15.4] and +11.7 [+8.8, +14.9])" in lim
    by_claim = {c.number: c for c in claims(r.dir)}
    assert one_g in by_claim[1].details and six_g not in by_claim[1].details


@pytest.mark.parametrize("how", ["other model", "zero step", "old columns", "not csv"])
def test_silent_where_nothing_of_this_profile_was_measured(tmp_path, how):
    r = Results(claims_1_3_results(tmp_path))
    _stored(tmp_path, models=("other",) if how == "other model" else ("m",), scale=0.0 if how == "zero step" else 1.0)
    path = tmp_path / "quant" / "quant_sensitivity.csv"
    if how == "old columns":
        pd.read_csv(path).drop(columns="half_width_base").to_csv(path, index=False)
    if how == "not csv":
        path.write_bytes(b'"\x00\xff')
    stand_alone(tmp_path / "quant")
    assert quant_evidence(r, 1) == [] and quant_evidence(r, "6a") == [] and quant_limitation(r) == []
