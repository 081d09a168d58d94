"""One narrator (issue 86): a notebook's findings are the catalog's words for the claims it decides, and the study's
own words for what it measured beside them."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from linrec.analyses.controls import GAUSSIAN_DROP
from linrec.base.tables import load_table
from linrec.outputs.catalog import build, of_study
from linrec.outputs.findings import ROUTING, TOLD, beside, controls_beside, findings, notebooks, swap_beside, tell
from linrec.outputs.results import Results

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "results" / "default"


def test_a_notebook_prints_each_claim_it_decides_in_the_reports_words():
    """Notebook 06's findings on the committed default run: claims 6a and 6b as the catalog words them (the verdict
    and every line of evidence the report's section shows), then the swap's first-position and greedy sentences;
    a claim of another notebook is not among them."""
    r = Results(DEFAULT)
    claims = {str(c.number): c for c in build(r)}
    lines = findings(r, "06")
    for cid in ("6a", "6b"):
        c = claims[cid]
        assert f"Claim {cid} ({c.title}): {c.verdict}." in lines
        assert all(f"  - {d}" in lines for d in c.details) and c.details
    assert not any(x.startswith("Claim 5 ") or x.startswith("Claim 2a ") for x in lines)
    assert lines[-len(swap_beside(r)) :] == swap_beside(r) and swap_beside(r)
    assert {str(row.id) for row in of_study("07")} == {"2a", "2b"}
    seven = findings(r, "07", claims=list(claims.values()))
    assert seven[0] == f"Claim 2a ({claims['2a'].title}): {claims['2a'].verdict}."
    assert seven[-len(controls_beside(r)) :] == controls_beside(r)


def test_a_claim_is_printed_with_its_evidence_indented_under_its_verdict():
    from linrec.outputs.claim_text import Said

    c = Said("6a", "partly reproduced", details=["m: holds", "n: fails"], title="Some block swaps")
    assert c.findings() == ["Claim 6a (Some block swaps): partly reproduced.", "  - m: holds", "  - n: fails"]
    # a line drawn from another notebook of this run is the report's alone: printed or not, it depended on run order;
    # which run a line is from is its source (`Line.quoted`), not its words (planted: a line whose words say "this
    # profile" but whose table came from results/zoo, and the other way round)
    from linrec.base.tables import Quoted, Source
    from linrec.outputs.results import Line

    table = pd.DataFrame({"run": ["r0"]})
    own, other = Quoted(table, Source("zoo_runs", "here")), Quoted(table, Source("zoo_runs", "zoo", profile="zoo"))
    c.details += [Line("Trained zoo (notebook 08, zoo profile): …", own), Line("Trained zoo (notebook 08, this "
                  "profile): …", other), Line("not found: …", Quoted(None, Source("zoo_runs")))]  # fmt: skip
    assert c.findings("06")[3:] == ["  - Trained zoo (notebook 08, this profile): …", "  - not found: …"]
    assert c.findings("08")[3:] == [f"  - {d}" for d in c.details[2:]]


def _own(tables: dict) -> SimpleNamespace:
    """Planted tables as a results folder's own (`Results.table`)."""
    return SimpleNamespace(table=tables.get)


def test_the_swaps_first_position_and_greedy_swaps_in_words():
    first = pd.DataFrame([{"model": "m", "block": 11, "first_var_share": 0.62, "delta_ppl_map": 244.0,
                           "delta_ppl_ffn": 51.0, "delta_lo_ffn": 40.0, "delta_hi_ffn": 60.0, "delta_ppl_mean": 51.1,
                           "share_of_cost_at_first": 0.79}])  # fmt: skip
    greedy = pd.DataFrame([{"model": "m", "order": "r2_lin", "budget_ppl": 1.0, "blocks_swapped": "3 5",
                            "screening_delta_ppl": 0.9, "test_delta_ppl": 1.2, "test_delta_lo": 0.4,
                            "test_delta_hi": 2.0, "params_removed": 5_000_000, "params_added": 600_000,
                            "params_model": 100_000_000}])  # fmt: skip
    lines = swap_beside(_own({"swap_first": first, "swap_greedy": greedy}))
    assert len(lines) == 2
    assert "62% of its held-out output variance" in lines[0] and "79% of the cost" in lines[0]
    assert "+51.00 [+40.00, +60.00] with the FFN kept at position 0" in lines[0]
    assert "kept blocks [3 5]" in lines[1] and "(4.4% of the model)" in lines[1] and "within +1 on" in lines[1]
    assert swap_beside(_own({})) == [] and swap_beside(_own({"swap_first": first.iloc[:0], "swap_greedy": None})) == []
    no_ffn = first.drop(columns="delta_ppl_ffn")  # a run without the position variants: nothing to say about it
    assert swap_beside(_own({"swap_first": no_ffn})) == []


def test_the_controls_beside_the_claims_in_words_and_what_was_not_run_left_out():
    init = pd.DataFrame([{"model": "m", "trained_r2_min": 0.3, "trained_r2_max": 0.9, "init_r2_min": 0.95,
                          "init_r2_max": 0.99, "mean_abs_trained_init": 0.28, "mean_abs_init_seeds": np.nan,
                          "init_r2_train_median": 0.99, "init_r2_test_median": 0.2,
                          "trained_gap_median": 0.06}])  # fmt: skip
    inputs = pd.DataFrame([{"model": "m", "r2_gaussian_median": 0.41, "r2_own_median": 0.52, "n_gaussian_drop": 3}])
    cross = pd.DataFrame([{"inputs_from": "a", "ffn_of": "b", "r2_raw": 0.5, "r2_recoloured": 0.1,
                           "r2_ffn_own_inputs": -0.7}])  # fmt: skip
    lines = controls_beside(_own({"controls_random_init_summary": init, "controls_inputs_summary": inputs}))
    assert len(lines) == 2  # no cross feeding ran: no sentence for it
    assert "mean |trained − init| = 0.280;" in lines[0] and "between two init seeds" not in lines[0]
    assert f"3 blocks lose more than {GAUSSIAN_DROP}." in lines[1]
    seeds = controls_beside(_own({"controls_random_init_summary": init.assign(mean_abs_init_seeds=0.01)}))
    assert seeds == [seeds[0]] and "against 0.010 between two init seeds" in seeds[0]
    crossed = controls_beside(_own({"controls_cross_feed_summary": cross}))
    assert crossed == ["inputs of a → FFN of b: median R² 0.500 raw, 0.100 re-coloured, -0.700 on its own inputs."]


def test_only_the_studies_that_measure_beside_their_claims_have_words_here():
    assert notebooks() == ("06", "07") and {row.notebook for row in TOLD.values()} == {"04", "06", "07"}
    r = Results(DEFAULT)
    assert findings(r, "05") == [line for c in build(r) if str(c.number) == "5" for line in c.findings()]


def test_notebook_04s_regime_row_counts_every_block_once_and_names_what_claim_4_rests_on():
    table = load_table("spectrum", DEFAULT)
    lines = tell("regimes", table)
    assert len(lines) == table["model"].nunique()
    for line, (model, t) in zip(lines, table.groupby("model", sort=False)):
        counts = t["regime"].value_counts()
        neither = len(t) - counts.get("broadly linear", 0) - counts.get("outlier-concentrated", 0)
        assert line.startswith(f"{model}: of {len(t)} blocks") and f"; {neither} (" in line
        for b in t.loc[t["regime"] == "outlier-concentrated", "block"]:
            assert f"block {b} (explained part's effective rank" in line


def test_notebook_04s_replication_row_says_each_models_counts_blocks_and_word():
    planted = pd.DataFrame(
        {
            "model": ["a", "b"],
            "samples": ["0 1", "0 1"],
            "n_samples": [2, 2],
            "n_broadly_linear": ["3 4", "1 1"],
            "n_outlier_concentrated": ["1 1", "0 2"],
            "outlier_blocks": ["7 | 7", "none | 2 5"],
            "outlier_blocks_every_sample": ["7", ""],
            "n_claim4_passes": [1, 1],
            "replication": ["sample-dependent", "sample-dependent"],
        }
    )
    assert tell("replication", planted) == [
        "a: over samples 0 1, broadly linear 3 4, outlier-concentrated 1 1 (blocks 7 | 7; on every sample: 7); "
        "claim 4 sample-dependent.",
        "b: over samples 0 1, broadly linear 1 1, outlier-concentrated 0 2 (blocks none | 2 5; on every sample: "
        "none); claim 4 sample-dependent.",
    ]


def test_notebook_06_and_the_reports_routing_section_print_the_same_routing_words():
    """Notebook 06's routing rows (`beside(r, "06", ROUTING)`: routing, the anchor's token identity, healing) on the
    committed full run, the one that routes every block, are the report's routing section's bullets, word for word:
    one template each, rendered by `tell` for both. Planted: a routing template's sentence changed in the report's
    copy alone (the routing section then no longer holds the notebook's line)."""
    from linrec.outputs.routing_text import routing_section

    r = Results(ROOT / "results" / "full")
    lines = beside(r, "06", ROUTING)
    section = routing_section(r, lambda df, floatfmt: "", r.dir / "figures", r.dir / "report.md")
    assert lines and all(f"- {line}" in section for line in lines)
    assert {"routing", "anchor"} <= {name for name in TOLD if tell(name, r)}
