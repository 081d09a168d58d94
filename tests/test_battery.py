"""One battery for every claim row of the catalog (issue 86; scikit-learn's `check_estimator` is the model): each
outcome of each row's rule reached on planted tables (`PLANTS`: the tables the row reads, written from the registry's
columns with values just inside each threshold) and on the committed results folders where one reaches it
(`WITNESSES`: a folder's tables, a threshold planted through the row, or header-only tables), each outcome worded by
the one narrator (`linrec.outputs.catalog.render`: the notebook's findings, the report's section, the README block's
row), and the rule's hash stable. A row added to the catalog without its plant fails the first test; a rule that can
no longer reach an outcome, or whose threshold is compared strictly where it should not be (or the reverse), fails
the planted battery; a template that drops a model's evidence fails both."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from linrec.analyses.uncertainty import POOLED
from linrec.base.registry import TABLES
from linrec.base.tables import is_block_list, result_columns, table_path
from linrec.claims.rules import NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED
from linrec.outputs.catalog import CATALOG, Claim, render
from linrec.outputs.claim_table import ClaimTable, claim_rows
from linrec.outputs.claim_text import CELL_LIMIT, sentence
from linrec.outputs.results import Results
from linrec.outputs.rule_log import rule_hash

RESULTS = Path(__file__).resolve().parents[1] / "results"
EMPTY = "(header-only)"  # every results table written with its columns and no row

# claim → outcome → (folder, threshold planted through the row or None, factor it is multiplied by): the witness that
# reaches it (2a partly on the zoo: its offline rule has no row there, the joined zoo decides). An outcome left out
# is one no committed folder reaches with one threshold moved (2a reproduced, 2b reproduced or not, 4 not
# reproduced, 6b reproduced or partly): `PLANTS` reaches every one.
WITNESSES: dict[str, dict[str, tuple[str, str | None, float]]] = {
    "1": {REPRODUCED: ("default", None, 1), PARTLY: ("full", None, 1), NOT_REPRODUCED: ("default", "CLAIM1_SPAN", 2),
          NOT_TESTABLE: (EMPTY, None, 1)},
    "2a": {PARTLY: ("zoo", None, 1), NOT_REPRODUCED: ("default", "CLAIM2_NOISE_FACTOR", 100),
           NOT_TESTABLE: (EMPTY, None, 1)},
    "2b": {PARTLY: ("full", None, 1), NOT_TESTABLE: ("default", None, 1)},
    "3": {REPRODUCED: ("default", "EQUIVALENCE_MARGIN", 2), NOT_REPRODUCED: ("zoo", None, 1),
          NOT_TESTABLE: ("default", None, 1)},
    "4": {REPRODUCED: ("default", None, 1), NOT_TESTABLE: ("zoo", None, 1)},
    "5": {REPRODUCED: ("default", "CLAIM5_MARGIN", 100), PARTLY: ("full", "CLAIM5_MARGIN", 2),
          NOT_REPRODUCED: ("documents", None, 1), NOT_TESTABLE: ("default", None, 1)},
    "6a": {REPRODUCED: ("default", None, 1), PARTLY: ("full", None, 1),
           NOT_REPRODUCED: ("documents", "CLAIM6_BUDGET", 0), NOT_TESTABLE: ("documents", None, 1)},
    "6b": {NOT_REPRODUCED: ("default", None, 1), NOT_TESTABLE: ("healing", "EQUIVALENCE_MARGIN", 0)},
    "7a": {REPRODUCED: ("default", None, 1), NOT_REPRODUCED: ("default", "CLAIM7_SHARE", 100),
           NOT_TESTABLE: (EMPTY, None, 1)},
    "7b": {PARTLY: ("default", None, 1), NOT_REPRODUCED: ("default", "CLAIM7B_FLAT", 100),
           NOT_TESTABLE: ("documents", None, 1)},
}  # fmt: skip


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Results]:
    empty = tmp_path_factory.mktemp("empty")
    for name in TABLES:
        path = table_path(name, empty)
        path.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(columns=list(result_columns(name))).to_csv(path, index=False)
    committed = ("default", "documents", "full", "zoo", "healing")
    return {EMPTY: Results(empty)} | {f: Results(RESULTS / f) for f in committed}


def _row(claim: Claim, name: str | None, factor: float) -> Claim:
    if name is None:
        return claim
    value = getattr(claim.thresholds, name)
    return claim.planted(**{name: type(value)(value * factor)})


def test_every_row_has_witnesses_for_not_testable_and_two_decided_outcomes():
    assert set(WITNESSES) == set(PLANTS) == {str(c.id) for c in CATALOG}, "a row of the catalog without its plant"
    for cid, outcomes in WITNESSES.items():
        assert NOT_TESTABLE in outcomes and len(set(outcomes) - {NOT_TESTABLE}) >= 1, cid
        names = next(c for c in CATALOG if str(c.id) == cid).rule.names()
        assert all(name is None or name in names for _, name, _ in outcomes.values()), cid


@pytest.mark.parametrize("claim", CATALOG, ids=lambda c: f"claim {c.id}")
def test_each_outcome_is_reached_and_worded_by_the_one_narrator(claim, folders):
    """Each witness reaches its outcome, and `render` words it alike for every narrator: the notebook's verdict line
    and evidence, the report's section (anchor, verdict, rule with its hash, evidence, what would change it, caveat)
    and the claim table's cell; a decided outcome has evidence that names what it was decided on."""
    for outcome, (folder, name, factor) in WITNESSES[str(claim.id)].items():
        row = _row(claim, name, factor)
        decision = row.decide(folders[folder], row.rule)
        said = render(row, decision)
        where = (claim.id, outcome, folder, name)
        assert said.verdict == outcome, where
        assert said.details and all(str(d).strip() for d in said.details) and said.headline.strip(), where
        for nb in claim.notebooks:  # each notebook prints the verdict, then the evidence it wrote, in these words
            lines = said.findings(nb)
            assert lines[0] == f"Claim {claim.id} ({claim.title}): {outcome}.", where
            assert set(lines[1:]) <= {f"  - {d}" for d in said.details}, where
        section = "\n".join(said.section(rule_hash(row.rule), lambda stem: [f"![{stem}]"]))
        assert f'<a id="claim-{claim.id}"></a>' in section and f"**Verdict: {outcome}.**" in section, where
        assert f"*Rule `{rule_hash(row.rule)}`.*" in section and "**What would change it.**" in section, where
        assert all(f"![{stem}]" in section for stem in claim.figures) and "**Caveats.**" in section, where
        if outcome != NOT_TESTABLE:
            assert said.headline.endswith(".") and len(said.headline) <= CELL_LIMIT, where
            assert said.details != [decision.v.reason], where  # its evidence, not why there is none


@pytest.mark.parametrize("claim", CATALOG, ids=lambda c: f"claim {c.id}")
def test_the_rules_hash_is_stable_and_follows_its_thresholds(claim):
    """The hash is the same when taken again and equals the one recorded with the committed default run (a rule's
    hash moves only where its meaning moves); a planted threshold moves it, and planting the value back restores it."""
    recorded = pd.read_csv(RESULTS / "default" / "rule_hashes.csv", dtype=str).set_index("claim")["rule_hash"]
    assert rule_hash(claim.rule) == rule_hash(claim.rule) == recorded[str(claim.id)]
    name = claim.rule.names()[0]
    value = getattr(claim.thresholds, name)
    moved = claim.planted(**{name: type(value)(value * 2 + 1)})
    assert rule_hash(moved.rule) != rule_hash(claim.rule)
    assert rule_hash(moved.planted(**{name: value}).rule) == rule_hash(claim.rule)


# ---- planted tables: every outcome of every row's rule, on tables written from the registry's columns ---------------
# Each plant gives, per outcome, the rows of the tables the row reads (`Claim.reads`; the columns the rule decides on,
# the rest filled by `plant`), with values on the threshold where the rule's comparison includes it and one step (`E`)
# beyond it where it does not, so a comparison turned strict (or loosened) moves an outcome. Models are "m0", "m1", …
# An outcome a plant leaves out is planted as header-only tables; the outcomes of each rule are `OUTCOMES`'.
E = 1e-3  # one step past a strict threshold
OUTCOMES = {  # each rule's outcomes where not all four (claims 4 and 7a have no "partly")
    "4": (REPRODUCED, NOT_REPRODUCED, NOT_TESTABLE),
    "7a": (REPRODUCED, NOT_REPRODUCED, NOT_TESTABLE),
}


def _models(name: str, *rows: dict) -> dict[str, list[dict]]:
    """Table `name` with one row per model, named m0, m1, … in order."""
    return {name: [{"model": f"m{i}", **r} for i, r in enumerate(rows)]}


def _joined(*parts: dict[str, list[dict]]) -> dict[str, list[dict]]:
    return {k: [r for p in parts for r in p.get(k, [])] for p in parts for k in p}


def _plant_1(t):
    ok = {
        "r2_min": 0.0,
        "r2_max": t.CLAIM1_SPAN,
        "max_jump_fdr": t.CLAIM1_JUMP,
        "direction_changes_fdr": t.CLAIM1_TURNS,
        "n_blocks": 8,
    }
    flat = {**ok, "r2_max": t.CLAIM1_SPAN - E}
    return {
        REPRODUCED: _models("r2_lin_summary", ok),
        PARTLY: _models("r2_lin_summary", ok, flat),
        NOT_REPRODUCED: _models("r2_lin_summary", flat, {**ok, "direction_changes_fdr": t.CLAIM1_TURNS - 1}),
    }


def _plant_2a(t):
    ok = {
        "effect": t.CLAIM2_MIN_EFFECT,
        "noise": t.CLAIM2_MIN_EFFECT / t.CLAIM2_NOISE_FACTOR - E,
        "reference": "twin",
        "twin_degenerate": False,
    }
    small, noisy = (
        {**ok, "effect": t.CLAIM2_MIN_EFFECT - E},
        {**ok, "noise": t.CLAIM2_MIN_EFFECT / t.CLAIM2_NOISE_FACTOR},
    )
    return {
        REPRODUCED: _models("controls_learned", ok),
        PARTLY: _models("controls_learned", ok, small),
        NOT_REPRODUCED: _models("controls_learned", small, noisy),
        NOT_TESTABLE: _models("controls_learned", {**ok, "noise": np.nan}),
    }


def _plant_2b(t):
    band = t.CLAIM2B_MIN_BAND

    def model(i: int, lo: float, hi: float) -> dict[str, list[dict]]:  # the band below the rule's, of the other sign
        return {
            "controls_decomposition": [{"model": f"m{i}", "share_weights": 0.5, "wmi_lo": lo, "wmi_hi": hi}],
            "controls_decomposition_bands": [
                {"model": f"m{i}", "band": band - 1, "wmi_lo": -hi, "wmi_hi": -lo},
                {"model": f"m{i}", "band": band, "wmi_lo": lo, "wmi_hi": hi},
            ],
        }

    weights, inputs, straddles = model(0, E, 0.2), model(1, -0.2, -E), model(2, 0.0, 0.2)
    return {REPRODUCED: weights, PARTLY: _joined(weights, inputs), NOT_REPRODUCED: inputs, NOT_TESTABLE: straddles}


def _plant_3(t):
    m = t.EQUIVALENCE_MARGIN
    pooled = {"model": POOLED, "n_blocks": 20, "ci_lo": -m, "ci_hi": m, "ci_lo90": -m + E, "ci_hi90": m - E}
    small = {"gain_median": t.CLAIM3_MAX_GAIN - E, "quad_excess_median": t.CLAIM3_MAX_GAIN - E}
    large = {**small, "gain_median": t.CLAIM3_MAX_GAIN}
    plant = lambda *rows, p=pooled: {"probe_summary": _models("probe_summary", *rows)["probe_summary"] + [p]}  # noqa: E731
    return {
        REPRODUCED: plant(small),
        PARTLY: plant(small, large),
        NOT_REPRODUCED: plant(large),
        NOT_TESTABLE: plant(small, p={**pooled, "ci_lo90": -m}),
    }


def _plant_4(t):  # its thresholds act where the summary is built: the plant sets the counts
    both = {"n_broadly_linear": 1, "n_outlier_concentrated": 1, "n_blocks": 4}
    return {
        REPRODUCED: _models("spectrum_summary", both),
        NOT_REPRODUCED: _models("spectrum_summary", {**both, "n_outlier_concentrated": 0, "massive_blocks": "2"}),
        NOT_TESTABLE: _models("spectrum_summary", {**both, "n_outlier_concentrated": 0}),
    }


def _plant_5(t):
    m = t.CLAIM5_MARGIN
    pair = {"corpus_a": "a", "corpus_b": "b", "level": 0.0, "shape": 0.0}
    overlay = {**pair, "level_lo": -m + E, "level_hi": m - E, "shape_lo": 0.0, "shape_hi": m - E}
    apart = {**overlay, "level_lo": m, "level_hi": m + 0.1}
    straddles = {**overlay, "level_lo": -m}
    return {
        REPRODUCED: _models("corpora_agreement", overlay),
        PARTLY: _models("corpora_agreement", overlay, apart),
        NOT_REPRODUCED: _models("corpora_agreement", apart),
        NOT_TESTABLE: _models("corpora_agreement", straddles),
    }


def _plant_6a(t):
    budget = t.CLAIM6_BUDGET

    def model(i: int, lo: float, hi: float, miss: float = t.CLAIM6_OWN_MISS) -> dict[str, list[dict]]:
        swap = {
            "model": f"m{i}",
            "block": 0,
            "first": "map",
            "delta_ppl": (lo + hi) / 2,
            "delta_lo": lo,
            "delta_hi": hi,
            "params_ffn": 8,
            "params_linear": 1,
            "ppl_base": 10.0,
        }
        skew = {"model": f"m{i}", "swap": "0", "own_miss_below": miss, "own_miss_above": miss, "own_cover": 0.95}
        return {
            "swap": [swap],
            "swap_predictor_values": [{"model": f"m{i}", "block": 0, "screening_delta_ppl": 0.5}],
            "swap_skew": [skew],
        }

    holds, fails = model(0, budget - 0.5, budget), model(1, budget + E, budget + 1)
    return {
        REPRODUCED: holds,
        PARTLY: _joined(holds, fails),
        NOT_REPRODUCED: fails,
        NOT_TESTABLE: _joined(model(2, budget - E, budget + 1), model(3, 0.0, budget, t.CLAIM6_OWN_MISS + E)),
    }


def _plant_6b(t):
    m = t.EQUIVALENCE_MARGIN
    flags = {
        "column": "r2_lin",
        "runs_swapped_model": False,
        "spearman_rho": -0.6,
        "rho_lo": -0.9,
        "rho_hi": -E,
        "rho_lo90": -m,
        "rho_hi90": -0.1,
        "partial_rho_depth": -0.6,
        "partial_lo": -0.9,
        "partial_hi": -E,
        "partial_lo90": -m,
        "partial_hi90": -0.1,
        "n_blocks": 20,
    }
    useless = {**flags, "partial_lo90": -m + E}
    unclear = {**flags, "rho_hi": 0.0}
    return {
        REPRODUCED: _models("swap_predictors", flags),
        PARTLY: _models("swap_predictors", flags, useless),
        NOT_REPRODUCED: _models("swap_predictors", useless),
        NOT_TESTABLE: _models("swap_predictors", unclear),
    }


def _plant_7a(t):
    short = {"n_short": 1, "n_blocks": round(1 / t.CLAIM7_SHARE), "share_short": t.CLAIM7_SHARE}
    return {
        REPRODUCED: _models("pitfall_summary", short),
        NOT_REPRODUCED: _models("pitfall_summary", {**short, "n_blocks": short["n_blocks"] + 1}),
    }


def _plant_7b(t):
    flat = t.CLAIM7B_FLAT  # a dose over one decade of κ: the rise is the slope
    rises = {
        "dose_levels": 4,
        "dose_kappa_min": 1.0,
        "dose_kappa_max": 10.0,
        "ceiling_excess": t.CEILING_SLACK,
        "dose_slope": 2 * flat,
        "dose_slope_lo": E,
        "dose_slope_hi": 3 * flat,
        "dose_slope_lo90": flat,
        "dose_slope_hi90": 3 * flat,
        "scaled_lo": E,
        "scaled_iqr_decades": 1.0,
        "short_iqr_lo": 3 * flat,
    }
    is_flat = {
        **rises,
        "dose_slope": 0.0,
        "dose_slope_lo": -flat,
        "dose_slope_hi": flat,
        "dose_slope_lo90": -flat + E,
        "dose_slope_hi90": flat - E,
    }
    beaten = {**rises, "ceiling_excess": t.CEILING_SLACK + E}
    return {
        REPRODUCED: _models("pitfall_summary", rises),
        PARTLY: _models("pitfall_summary", rises, is_flat),
        NOT_REPRODUCED: _models("pitfall_summary", is_flat),
        NOT_TESTABLE: _models("pitfall_summary", beaten),
    }


# claim → its plant (thresholds → outcome → table → rows); an outcome left out is planted as header-only tables
PLANTS = {
    "1": _plant_1,
    "2a": _plant_2a,
    "2b": _plant_2b,
    "3": _plant_3,
    "4": _plant_4,
    "5": _plant_5,
    "6a": _plant_6a,
    "6b": _plant_6b,
    "7a": _plant_7a,
    "7b": _plant_7b,
}


def plant(folder: Path, claim: Claim, rows: dict[str, list[dict]]) -> Results:
    """Every table `claim`'s rule reads, written into `folder/default` from the registry's columns: the `rows` given
    for it (the columns named; every other one 0, a count or a number the templates print, or no block for a list of
    blocks), header-only where none are given. The folder is named as a
    profile's and has no neighbour, so no other profile stands in for a table (`linrec.base.tables.STAND_INS`)."""
    assert set(rows) <= set(claim.reads), f"claim {claim.id} does not read {set(rows) - set(claim.reads)}"
    for name in claim.reads:
        columns = result_columns(name)
        given = rows.get(name, [])
        assert all(set(r) <= set(columns) for r in given), (name, [set(r) - set(columns) for r in given])
        path = table_path(name, folder / "default")
        path.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(
            [{c: r.get(c, "" if is_block_list(c) else 0) for c in columns} for r in given], columns=list(columns)
        ).to_csv(path, index=False)
    return Results(folder / "default")


def _outcomes(claim: Claim) -> tuple[str, ...]:
    return OUTCOMES.get(str(claim.id), (REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_TESTABLE))


@pytest.mark.parametrize(
    ("claim", "outcome"),
    [(c, o) for c in CATALOG for o in _outcomes(c)],
    ids=lambda x: f"claim {x.id}" if isinstance(x, Claim) else x,
)
def test_each_outcome_of_each_rule_is_reached_on_planted_tables_and_worded_alike(claim, outcome, tmp_path):
    """Each outcome the row's rule defines (`OUTCOMES`: claims 4 and 7a have no "partly") is reached on tables planted
    just inside its thresholds, judged through the row (`Claim.decide`) and worded through `render` alike for every
    narrator: the notebook's verdict line, the report's section and the README block's row (`claim_rows`)."""
    rows = PLANTS[str(claim.id)](claim.thresholds).get(outcome, {})
    decision = claim.decide(plant(tmp_path, claim, rows), claim.rule)
    said = render(claim, decision)
    assert said.verdict == decision.verdict == outcome, (claim.id, outcome, decision.v.reason)
    for nb in claim.notebooks:
        assert said.findings(nb)[0] == f"Claim {claim.id} ({claim.title}): {outcome}."
    section = said.section(rule_hash(claim.rule), lambda stem: [])
    assert f"**Verdict: {outcome}.** The paper: {claim.paper}." in section
    assert all(f"- {d}" in section for d in said.details) and said.details, (claim.id, outcome)
    (readme,) = [
        x
        for x in claim_rows(ClaimTable(decision.r, [said], {said.number: "one sample"}))
        if x.startswith(f"| [{claim.id}](#claim-{claim.id}) |")
    ]
    assert readme.endswith(f"| **{outcome}** |") and f"| {sentence(said.headline)} |" in readme
    if not decision.ev:  # nothing to word but why
        assert outcome == NOT_TESTABLE and said.details[0] == said.headline == decision.v.reason
    else:  # the evidence names each planted model
        named = {r["model"] for table in rows.values() for r in table} - {POOLED}
        assert all(m in said.ours for m in named) and said.details != [decision.v.reason], (claim.id, outcome)
