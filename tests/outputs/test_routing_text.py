"""linrec.outputs.routing_text: the routing section and its findings, each number beside the anchor paper's."""

import pandas as pd

from helpers import planted
from linrec.base.tables import save_table


def test_routing_findings_state_each_number_beside_the_anchor_and_say_the_pick_is_optimistic():
    from linrec.outputs.findings import tell

    def routing_findings(t):
        return tell("routing", t)

    row = {"model": "m", "n_blocks_routed": 6, "best_block": 3, "best_routable_pct1": 0.75, "best_lo": 0.5,
           "best_hi": 1.0, "n_quarter": 4, "n_monotone": 5, "rho_r2_routable": 0.2, "rho_lo": -0.5, "rho_hi": 0.8,
           "outcome": "inconclusive", "rho_r2_swap": -0.1, "rho_r2_swap_lo": -0.6, "rho_r2_swap_hi": 0.4}  # fmt: skip
    (line,) = routing_findings(pd.DataFrame([row]))
    needles = ("block 3, routes 75%", "[0.50, 1.00]", "25–56 % in GPT-2", "optimistic", "+0.20 [-0.50, 0.80]",
               "inconclusive", "6b's ρ(R²_lin, whole-block ΔPPL) = -0.10", "every 0.05", "4 of 6 routed blocks",
               "5 of 6 curves")  # fmt: skip
    for needle in needles:
        assert needle in line, needle
    assert routing_findings(None) == [] and routing_findings(pd.DataFrame()) == []
    (two,) = routing_findings(pd.DataFrame([{**row, "n_blocks_routed": 2, "rho_r2_routable": float("nan")}]))
    assert "undefined on 2 routed blocks" in two and "nan" not in two  # two blocks give no correlation


def test_the_anchor_findings_name_which_r_is_the_anchors_and_quote_both_verdicts():
    from linrec.outputs.findings import tell

    row = {"model": "m", "need_pairs": 8, "need_context": 2, "need_token": 5, "need_r_median": 0.41, "need_r_min": 0.1,
           "need_r_max": 0.7, "lookup_r2_median": 0.12, "gate_r_median": 0.72, "need_verdict": "partly reproduced",
           "split_blocks": 4, "split_context": 3, "split_token": 0, "auc_full_median": 0.71,
           "auc_token_median": 0.55, "auc_context_median": 0.7, "split_verdict": "reproduced"}  # fmt: skip
    (line,) = tell("anchor", pd.DataFrame([row]))
    needles = ("the anchor's quantity", "median r = +0.41 (from +0.10 to +0.70) over 8", "2 shown near 0",
               "5 shown away from it", "median 0.12", "**partly reproduced**", "median r = +0.72",
               "not the anchor's quantity", "0.55, 0.70, 0.71", "3 of 4 blocks", "**reproduced**")  # fmt: skip
    for needle in needles:
        assert needle in line, needle
    heal = pd.DataFrame({"model": "m", "mode": "all", "k": [0, 1, 2], "blocks": ["", "3", "3 5"], "steps": 50,
                         "batch_size": 8, "ppl_control": 20.0, "delta_before": [0.0, 1.5, 4.0],
                         "delta_after": [0.0, 0.1, 0.9], "delta_after_lo": [0.0, -0.05, 0.5],
                         "delta_after_hi": [0.0, 0.15, 1.3], "outcome": ["", "healed", "costs"]})  # fmt: skip
    (line,) = tell("heal", heal, where=" (params/healing.yaml)")
    for needle in ("m (params/healing.yaml), healing (every weight", "50 steps of 8", "control perplexity 20.00",
                   "k = 1 (blocks 3): +1.50 before, +0.10 [-0.05, 0.15] after, healed",
                   "k = 2 (blocks 3 5): +4.00 before, +0.90 [0.50, 1.30] after, costs"):  # fmt: skip
        assert needle in line, needle
    maps = heal.assign(mode="maps", ppl_control=[20.0, 18.5, 19.25])  # each k its own control: its blocks' FFNs
    (line,) = tell("heal", maps)
    assert "the maps alone fine-tuned" in line and "same blocks' own FFNs fine-tuned alike" in line
    assert "control perplexity 18.50 / 19.25)" in line  # k = 1, 2 in order; the k = 0 row (the base) is no control


def _planted_routing(d):
    """A routing summary, identity and split-AUC table of one routed block (block 2 of model m) written under `d`;
    (identity, split)."""
    save_table(planted("routing_summary", model="m", n_blocks_routed=4, best_block=2, outcome="inconclusive"),
               "routing_summary", d)  # fmt: skip
    identity = planted("routing_identity", model="m", block=2, corpus_a="wiki", corpus_b="web", r_need=0.41,
                       r_need_lo=0.3, r_need_hi=0.52, r_need_lo90=0.32, r_need_hi90=0.5, r=0.8, r_lo=0.7,
                       r_hi=0.9)  # fmt: skip
    split = pd.concat([planted("routing_split_auc", model="m", block=2, target="quantile", part=p, auc=a)
                       for p, a in (("full", 0.71), ("token", 0.55), ("context", 0.7))])  # fmt: skip
    save_table(identity, "routing_identity", d)
    save_table(split, "routing_split_auc", d)
    return identity, split


def test_the_routing_section_quotes_the_anchor_tables_and_the_healing_profile(tmp_path):
    """The report's routing section on planted tables: the summary, the anchor's verdicts, the need and gate tables
    with their intervals, this profile's healing and params/healing.yaml's (results/healing/) beside it."""
    from linrec.claims.routing import anchor_table, heal_table
    from linrec.outputs.report import _table
    from linrec.outputs.results import Results
    from linrec.outputs.routing_text import routing_section

    d, other = tmp_path / "default", tmp_path / "healing"

    identity, split = _planted_routing(d)
    save_table(anchor_table(identity, split), "routing_anchor", d)
    heal = planted("routing_heal", model="tiny", mode="all", k=1, blocks="3", steps=10, batch_size=4,
                   delta_after=0.02, delta_after_lo=-0.01, delta_after_hi=0.05, ppl_control=20.0).drop(
        columns=["outcome", "healed_share"])  # fmt: skip
    save_table(heal_table(heal), "routing_heal", d)
    save_table(heal_table(heal.assign(model="smollm2-135m", delta_after_lo=0.3, delta_after_hi=0.9)), "routing_heal",
               other)  # fmt: skip
    (tmp_path / "figs").mkdir()
    (tmp_path / "figs" / "fig9_routing.png").write_bytes(b"png")
    section = routing_section(Results(d), _table, tmp_path / "figs", tmp_path / "paper" / "report.md")
    text = "\n".join(section)
    assert "](../figs/fig9_routing.png)" in text and "This profile routes no block" not in text  # its own tables
    for needle in ("## Beyond the paper", "block 2, routes 50%", "median r = +0.41", "**not reproduced**",
                   "not the anchor's quantity", "+0.41 [0.30, 0.52]", "+0.80 [0.70, 0.90]", "0.55 [0.50, 0.50]",
                   "tiny, healing (every weight", "healed", "smollm2-135m (params/healing.yaml)", "costs",
                   "The rule: per model, mode and k"):  # fmt: skip
        assert needle in text, needle
    assert routing_section(Results(other), _table, tmp_path, tmp_path / "r.md") == []  # none here nor in full/


def test_a_profile_that_routes_no_block_quotes_the_full_profiles_routing_and_says_so(tmp_path):
    """The default routes no block (`route_blocks: 0`, for its 20-minute budget): its report quotes results/full's
    routing tables, says where they are from, and shows Figure 9 from that folder."""
    from linrec.outputs.report import _table
    from linrec.outputs.results import Results
    from linrec.outputs.routing_text import routing_section

    default, full = tmp_path / "default", tmp_path / "full"
    save_table(planted("r2_lin", model="m", block=0, r2_lin=0.9), "r2_lin", default)
    save_table(planted("routing_summary", model="m", n_blocks_routed=4, best_block=2, outcome="inconclusive"),
               "routing_summary", full)  # fmt: skip
    (full / "figures").mkdir()
    (full / "figures" / "fig9_routing.png").write_bytes(b"png")
    text = "\n".join(routing_section(Results(default), _table, tmp_path / "figs", tmp_path / "paper" / "report.md"))
    assert "](../full/figures/fig9_routing.png)" in text and "block 2, routes 50%" in text
    assert "This profile routes no block" in text and "`params/full.yaml` (`results/full/`)" in text
    assert "With `params/full.yaml`" not in text  # full's findings once, not again as a second profile's
    assert "per-block tables" not in text  # full has none: nothing to point to
    # full's per-block tables (96 and 48 rows in its last run) are not printed again: its report is linked
    identity, split = _planted_routing(full)
    own = "\n".join(routing_section(Results(full), _table, full / "figures", full / "report.md"))
    assert '<a id="routing"></a>' in own and "AUC context" in own and "+0.41 [0.30, 0.52]" in own  # its own: shown
    (full / "report.md").write_text(own)
    text = "\n".join(routing_section(Results(default), _table, tmp_path / "figs", tmp_path / "paper" / "report.md"))
    assert "AUC context" not in text and "+0.41 [0.30, 0.52]" not in text and "The rule: per routed" not in text
    assert ("The per-block tables behind these lines (token identity, 1 block × corpus pair; the token / "
            "context / whole gates' held-out AUC, 1 block), each with its rule, are in "
            "[`results/full/report.md`](../full/report.md#routing).") in text  # fmt: skip
    assert "median r = +0.41" in text  # the anchor's findings, quoted


def test_the_anchors_and_healings_verdicts_are_todays_rules_on_their_tables(tmp_path):
    """No stale word: the anchor's verdicts and each healed swap's outcome are judged again from the tables they are
    drawn from, not read from the words notebook 06 stored (planted stale here). Guards the stored words printed."""
    from linrec.claims.routing import anchor_table, heal_table
    from linrec.outputs.report import _table
    from linrec.outputs.results import Results
    from linrec.outputs.routing_text import routing_section

    d = tmp_path / "default"
    identity, split = _planted_routing(d)
    today = anchor_table(identity, split)
    save_table(today.assign(need_verdict="a stale word"), "routing_anchor", d)
    heal = planted("routing_heal", model="tiny", mode="all", k=1, blocks="3", steps=10, batch_size=4,
                   delta_after=0.02, delta_after_lo=-0.01, delta_after_hi=0.05, ppl_control=20.0).drop(
        columns=["outcome", "healed_share"])  # fmt: skip
    assert heal_table(heal)["outcome"].iloc[0] == "healed"
    save_table(heal_table(heal).assign(outcome="stale outcome"), "routing_heal", d)
    text = "\n".join(routing_section(Results(d), _table, tmp_path, tmp_path / "r.md"))
    assert "stale" not in text
    assert f"**{today['need_verdict'].iloc[0]}**" in text and "after, healed" in text


def test_the_full_profiles_routing_written_by_an_older_linrec_is_named_not_quoted(tmp_path):
    """results/full's routing tables predated the 0.05 share grid (written 2026-11-25, before issue 49): the default's
    report left the routing section out without a word, and profiles.md said it quoted them. Now the default's
    report says which of full's routing tables are old and the command that refreshes them, quotes none of their
    numbers and shows no Figure 9 from there; full's own report names them among the tables left out."""
    from linrec.outputs.report import _table, render
    from linrec.outputs.results import Results
    from linrec.outputs.routing_text import routing_section

    default, full = tmp_path / "default", tmp_path / "full"
    save_table(planted("r2_lin", model="m", block=0, r2_lin=0.9), "r2_lin", default)
    old = planted("routing_summary", model="m", n_blocks_routed=4, best_block=2, outcome="inconclusive")
    save_table(old, "routing_summary", full)
    (full / "figures").mkdir()
    (full / "figures" / "fig9_routing.png").write_bytes(b"png")
    current = "\n".join(routing_section(Results(default), _table, tmp_path / "figs", tmp_path / "r.md"))
    assert "block 2, routes 50%" in current  # a current table is quoted
    old.drop(columns=["n_quarter"]).to_csv(full / "routing_summary.csv", index=False)  # as an older linrec wrote it
    text = "\n".join(routing_section(Results(default), _table, tmp_path / "figs", tmp_path / "r.md"))
    assert "`routing_summary.csv` lack columns this linrec writes" in text
    assert "`linrec figures --params params/full.yaml --only 06` refreshes it" in text
    assert "routes 50%" not in text and "fig9_routing" not in text
    assert routing_section(Results(full), _table, full / "figures", tmp_path / "r.md") == []  # its own: left out
    report = render(full, full / "figures", tmp_path / "r.md")
    assert (
        "Left out, because an older linrec wrote them (a claim that reads one says so): notebook 06's routing_summary"
        in report
    )
