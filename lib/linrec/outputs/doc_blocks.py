"""The measured numbers of the docs, written from their tables (issue 86, item 5): no measurement is typed into
`docs/*.md` by hand. Each number a doc quotes from a committed table sits between two markers,
`<!-- numbers:NAME:start -->` and `<!-- numbers:NAME:end -->`, and `write_doc_blocks` rewrites the text between them
from the table, so a rerun that moves a table moves the doc's sentence with it and the two cannot drift apart.
`docs/scaling.md` has two more (the GPU benchmark's `results/bench/gpu.csv` and the memory plan of an 8B model,
computed by `linrec.collect.plan.memory_plan`). `linrec report` calls it for a profile's own results folder
(`linrec.outputs.report.publish`), as it rewrites the README's results block;
`benchmarks/performance.py` writes `docs/performance.md`'s block the same way.

A block is a `Block` row: the doc it sits in, the tables it reads (relative to the checkout) and the function that
words them. A block whose table is absent (a checkout without `results/split/`, a test's temporary folder) is left as
it stands. Writing a block computes nothing an analysis would (issue 86): where a doc quotes a summary, it reads the
summary stored beside its table (written by `linrec.outputs.refresh`: `stand_alone` and `curve_split`).
`tests/test_docs.py` fails on a measurement typed outside such a block.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from linrec.base.files import atomic_file
from linrec.claims.rules import CLAIM6_BUDGET, joined
from linrec.outputs.results import span

NAMES = {"smollm2-135m": "SmolLM2", "gemma3-270m": "Gemma-3"}


def _name(model: str) -> str:
    return NAMES.get(model, model)


def _ordered(t: pd.DataFrame) -> pd.DataFrame:
    """`t` with the models of `NAMES` first, in that order (the default's model before the full profile's)."""
    rank = {m: i for i, m in enumerate(NAMES)}
    return t.sort_values("model", key=lambda c: c.map(lambda m: rank.get(m, len(rank))), kind="stable")


def _signed(x: float, nd: int = 3) -> str:
    """`x` with its sign, a minus as the docs write it: "−0.026", "+0.002"."""
    return f"{x:+.{nd}f}".replace("-", "−")


def _exp(x: float) -> str:
    """`x` to one digit with its exponent as the docs write it: "7e-8"."""
    mantissa, exponent = f"{x:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def start(name: str) -> str:
    return f"<!-- numbers:{name}:start -->"


def end(name: str) -> str:
    return f"<!-- numbers:{name}:end -->"


@dataclass(frozen=True)
class Block:
    """One generated passage: `name` (its markers), the `doc` it sits in, the `tables` it reads (paths relative to the
    checkout) and `words(tables)`, the text between the markers from those tables (read in that order)."""

    name: str
    doc: str
    tables: tuple[str, ...]
    words: Callable[..., str]


def _read(root: Path, tables: tuple[str, ...]) -> list[pd.DataFrame] | None:
    paths = [root / t for t in tables]
    return [pd.read_csv(p) for p in paths] if all(p.is_file() for p in paths) else None


# --- docs/limitations.md ------------------------------------------------------------------------------------------


def quant_words(summary: pd.DataFrame) -> str:
    """Per model of `results/quant/quant_summary.csv` (`linrec.analyses.quant.summary` of quant_sensitivity.csv,
    stored by `linrec.outputs.refresh.stand_alone`, at the release's own step): what one more rounding error moves,
    against the window intervals and claim 6a's budget."""
    parts = []
    for model, draws in summary.groupby("model", sort=False):
        e = draws.iloc[0]
        after = " / ".join(f"{e['ppl_base'] + d:.1f}" for d in draws["ppl_change"])
        changes = joined(f"{d.ppl_change:+.1f} [{d.ppl_change_lo:+.1f}, {d.ppl_change_hi:+.1f}]"
                         for d in draws.itertuples())  # fmt: skip
        rises = [d for d in draws["ppl_change"] if d > 0]
        share = f"{100 * CLAIM6_BUDGET / max(rises):.0f}–{100 * CLAIM6_BUDGET / min(rises):.0f} %" if rises else "n/a"
        parts.append(
            f"{_name(model)}'s R²_lin moves by a median {e['change_median']:.3f} (max {e['change_max']:.3f}, block "
            f"{e['max_block']}; upwards in {e['up'] * 100:.0f} % of blocks × draws) against a median window-interval "
            f"half-width of {e['half_width_median']:.3f}, by more than its half-width in {e['n_beyond']} of "
            f"{e['n_rows']} blocks × draws, and its held-out perplexity rises {e['ppl_pct_min']:.0f}–"
            f"{e['ppl_pct_max']:.0f} % ({e['ppl_base']:.1f} → {after}; {changes}, paired 95 % intervals): claim 6a's "
            f"+{CLAIM6_BUDGET:g} budget is {share} of one such rise"
        )
    return "; ".join(parts) + "."


def split_words(summary: pd.DataFrame, shift: pd.DataFrame) -> str:
    """Per model of `results/split/split_summary.csv` (`split_summary` of split_shift.csv, stored): how R²_lin moves
    held out by document, and the largest drop's two means (`split_shift.csv`)."""
    parts = []
    for _, s in _ordered(summary).iterrows():
        worst = shift[(shift["model"] == s["model"]) & (shift["block"] == s["drop_block"])].iloc[0]
        parts.append(
            f"{_name(s['model'])}'s R²_lin is lower held out by document in {s['n_down']} of its {s['n_blocks']} "
            f"blocks with the 95 % interval of the shift below 0, and higher in {s['n_up']}: median shift "
            f"{_signed(s['shift_median'])}, largest {_signed(-s['drop_max'])} at block {s['drop_block']} "
            f"({worst['r2_windows']:.3f} → {worst['r2_documents']:.3f})"
        )
    return "; ".join(parts) + "."


def spread_words(summary: pd.DataFrame, r2: pd.DataFrame) -> str:
    """Per model: the SD over split seeds of each split (medians over blocks, `split_summary.csv`) against the median
    shift, and a capture's median window-interval half-width (`results/split/split_r2.csv`, split by window)."""
    parts = [
        f"{_name(s['model'])}'s R²_lin has SD {s['sd_windows']:.3f} by window and {s['sd_documents']:.3f} by document "
        f"(medians over blocks) against a median shift of {_signed(s['shift_median'])}"
        for _, s in _ordered(summary).iterrows()
    ]
    w = _ordered(r2[r2["split"] == "windows"])
    half = ((w["r2_hi"] - w["r2_lo"]) / 2).groupby(w["model"], sort=False).median()
    widths = joined(f"{v:.3f} in {_name(m)}" for m, v in half.items())
    return f"Over seeds {'; '.join(parts)}. A capture's window interval (median half-width {widths})"


def curve_words(curve: pd.DataFrame, shift: pd.DataFrame, r2_default: pd.DataFrame, default: pd.DataFrame,
                full: pd.DataFrame) -> str:  # fmt: skip
    """Where the learning curve's R²_lin (`results/curve/r2_curve.csv`, at the captures' train rows) sits: between the
    two splits' seed means, and against the default's (its models) and the full profile's (the other models) `r2_lin`
    (each folder's `curve_split.csv`, `linrec.outputs.refresh.curve_split`)."""
    beyond = full[~full["model"].isin(default["model"])]  # the full profile's models the default lacks
    others = pd.concat([default.assign(profile="default"), beyond.assign(profile="full")], ignore_index=True)
    parts = []
    for model, t in _ordered(shift).groupby("model", sort=False):
        n = int(r2_default["n_train"].iloc[0])
        c = curve[(curve["model"] == model) & (curve["n_train"] == n)][["block", "r2"]]
        m = t.merge(c, on="block")
        if m.empty:
            continue
        lo, hi = m[["r2_windows", "r2_documents"]].min(axis=1), m[["r2_windows", "r2_documents"]].max(axis=1)
        between = int(((m["r2"] > lo) & (m["r2"] < hi)).sum())
        below, above = (m["r2_windows"] - m["r2"]).median(), (m["r2"] - m["r2_documents"]).median()
        parts.append(f"{between} of {_name(model)}'s {len(m)} blocks (median {below:.3f} below the window split, "
                     f"{above:.3f} above the document split)")  # fmt: skip
    source = {"default": "the default's", "full": "the full profile's"}
    compared = [
        f"in {o['n_lower']} of {_name(o['model'])}'s {o['n_blocks']} blocks against {source[o['profile']]} `r2_lin` "
        f"(median {-o['diff_median']:.3f}, most {o['drop_max']:.3f} at block {o['drop_block']}; {o['n_outside']} "
        "outside that capture's interval)"
        for _, o in others.iterrows()
    ]
    return f"It lies between the two splits in {joined(parts)}. It scores lower {'; '.join(compared)}."


def verdicts_words(default: pd.DataFrame, documents: pd.DataFrame) -> str:
    """Which of the default's verdicts (`rule_hashes.csv`, as `linrec.outputs.rule_log` records them) the documents
    profile keeps, and which it moves."""
    m = default[["claim", "verdict"]].merge(documents[["claim", "verdict"]], on="claim", suffixes=("", "_doc"))
    moved = m[m["verdict"] != m["verdict_doc"]]
    kept = len(m) - len(moved)
    rows = moved[["claim", "verdict", "verdict_doc"]].itertuples(index=False)
    moves = "; ".join(f"claim {c}, {a} → {b}" for c, a, b in rows)
    return f"{kept} of its {len(m)} verdicts are the default's; {len(moved)} move ({moves or 'none'})."


def shape_words(shift: pd.DataFrame, r2: pd.DataFrame, default: pd.DataFrame, documents: pd.DataFrame,
                verdicts: pd.DataFrame, verdicts_doc: pd.DataFrame) -> str:  # fmt: skip
    """Claim 1 on both splits, the Spearman correlation of the two splits' mean profiles (over all seeds and the
    first), and the largest resolved jump (`r2_lin_summary`'s `max_jump_disjoint`) of each split's profile."""
    v = lambda t: t.set_index("claim")["verdict"].get("1", "n/a")  # noqa: E731
    model = default["model"].iloc[0]
    s = shift[shift["model"] == model]
    first = r2[(r2["model"] == model) & (r2["seed"] == r2["seed"].min())].pivot(index="block", columns="split",
                                                                                 values="r2_lin")  # fmt: skip
    rho = stats.spearmanr(s["r2_windows"], s["r2_documents"]).statistic
    rho0 = stats.spearmanr(first["windows"], first["documents"]).statistic
    return (
        f"Claim 1 is {v(verdicts)} by window and {v(verdicts_doc)} by document. The two splits' mean profiles of "
        f"{_name(model)} have Spearman {rho:.3f} over {s['n_windows_seeds'].iloc[0]} seeds ({rho0:.3f} for the first "
        f"alone), and the largest resolved jump is {default['max_jump_disjoint'].iloc[0]:.2f} by window and "
        f"{documents['max_jump_disjoint'].iloc[0]:.2f} by document."
    )


def standardised_sd(r2: pd.DataFrame, level: float = 0.95) -> dict[str, float]:
    """Per model of `r2_replicates.csv`: the SD of the standardised differences of a block's R²_lin between two
    samples (the difference over the root sum of both squared jackknife standard errors, each its window interval's
    half-width over the t quantile at `n_test_windows` − 1 degrees of freedom); about 1 if the intervals are exact."""
    se = (r2["r2_hi"] - r2["r2_lo"]) / 2 / stats.t.ppf(0.5 + level / 2, r2["n_test_windows"] - 1)
    r2 = r2.assign(se=se)
    out = {}
    for model, t in r2.groupby("model", sort=False):
        p = t.pivot(index="block", columns="sample", values=["r2_lin", "se"])
        samples = list(p["r2_lin"].columns)
        z = [(p["r2_lin"][a] - p["r2_lin"][b]) / np.hypot(p["se"][a], p["se"][b])
             for i, a in enumerate(samples) for b in samples[i + 1 :]]  # fmt: skip
        out[model] = float(pd.concat(z).std(ddof=1))
    return out


def replicates_words(r2: pd.DataFrame) -> str:
    sds = standardised_sd(r2)
    return "have SD " + joined(f"{v:.2f} in {_name(m)}" for m, v in sds.items())


def nulls_words(nulls: pd.DataFrame) -> str:
    """The spread of claim 2b's null draws (`controls_null_blocks.csv`): the median SD over blocks of each ensemble
    and how many blocks stand more than 5 SDs from both."""
    sd = float(np.median(np.r_[nulls["init_sd"], nulls["shuffled_sd"]]))
    far = int(((nulls["z_init"].abs() > 5) & (nulls["z_shuffled"].abs() > 5)).sum())
    return f"The draws are tight (median SD {sd:.4f}): {far} of the {len(nulls)} blocks' |z| is above 5 against both."


def refit_words(cal: pd.DataFrame) -> str:
    """The coverage of planted refits at the default's most window-correlated block (`calibration.csv`)."""
    c = cal[cal["what"].str.contains("fit included", regex=False)]["coverage95"]
    return f"cover {span(c)} of planted refits"


# --- docs/numerics.md ---------------------------------------------------------------------------------------------


def _rows(cal: pd.DataFrame, what: str) -> pd.DataFrame:
    return cal[cal["what"].str.contains(what, regex=False)]


def fitted_words(cal: pd.DataFrame) -> str:
    """The window interval's coverage of the fitted map's held-out R² in the default's methods table, and the
    percentile window bootstrap's beside it."""
    r = _rows(cal, "held-out R² of the fitted map")
    windows = int(r["n_windows"].iloc[0])
    return (f"{span(r['coverage95'])} at the default's {windows} held-out windows of the most window-correlated block "
            f"(below), where the percentile window bootstrap the tables carried before covered "
            f"{span(r['coverage95_before'])}")  # fmt: skip


def _setting(cal: pd.DataFrame, pattern: str) -> str:
    found = _rows(cal, "fit included")["setting"].str.extract(pattern)[0].dropna()
    return found.iloc[0] if len(found) else "n/a"


def icc_words(icc: pd.DataFrame, cal: pd.DataFrame) -> str:
    """The residuals' and inputs' within-window share (`window_icc.csv`) and the share the planted blocks take."""
    parts = []
    for model, t in icc.groupby("model", sort=False):
        top = int(t.loc[t["resid_icc"].idxmax(), "block"])
        parts.append(f"{_name(model)}'s residuals share {span(t['resid_icc'])} of their variance within a window "
                     f"(median {t['resid_icc'].median():.3f}; block {top} the most), its inputs "
                     f"{span(t['input_icc'])}")  # fmt: skip
    planted = _setting(cal, r"residual ICC ([0-9.]+)")
    return f"{'; '.join(parts)}. The planted blocks take the run's largest residual value, rounded up ({planted})"


def refit_table_words(default: pd.DataFrame, full: pd.DataFrame) -> str:
    """The refit and fitted-map coverages at R² 0.6 / 0.9 of the default's and the full profile's methods tables."""

    def pair(cal: pd.DataFrame, what: str) -> str:
        r = _rows(cal, what)
        return " / ".join(f"{v:.3f}" for v in r["coverage95"])

    per = _setting(default, r"\(([0-9.]+) per parameter")
    width = _setting(default, r"d ([0-9]+)")
    return (f"At {width} features and {per} rows per parameter (R² 0.6 / 0.9) the interval covers the refit's R² "
            f"{pair(default, 'fit included')} and its own map's {pair(default, 'fitted map')} (the default's methods "
            f"table; the full profile's {pair(full, 'fit included')} and {pair(full, 'fitted map')})")  # fmt: skip


def delta_words(default: pd.DataFrame, full: pd.DataFrame) -> str:
    """The 99 % ΔPPL interval's coverage on planted costs in both methods tables, the one-costly-window case apart."""
    both = pd.concat([default, full])
    r = both[both["what"] == "claims 6a, 6b, routing: ΔPPL of a swap"]
    rare = r["setting"].str.contains(r"1 window in (?!4\b)", regex=True)
    windows = int(r["n_windows"].iloc[0])
    common, costly = span(r[~rare]["coverage95"]), span(r[rare]["coverage95"])
    return (f"At {windows} windows (the default's and the full profile's methods tables): {common}, and one costly "
            f"window in {windows} {costly}")  # fmt: skip


def own_skew_words(cal: pd.DataFrame, default: pd.DataFrame, full: pd.DataFrame) -> str:
    """The own-skew check (`swap_skew.csv`'s `own_*` columns) of the default's claim-6a block (named in its methods
    table, `calibration.csv`) and most skewed swap, and the range over the full profile's swaps."""
    found = re.search(r"block (\d+), claim 6a", " ".join(_rows(cal, "own windows")["setting"]))
    hit = default[default["swap"].astype(str) == found.group(1)] if found else default.iloc[:0]
    chosen = hit.iloc[0] if len(hit) else None
    worst = default.loc[default["cost_skew"].idxmax()]
    top = full.loc[full["cost_skew"].idxmax()]
    head = (f"its block {chosen['swap']}'s upper end misses {chosen['own_miss_below'] * 100:.2f} % of the "
            f"resamples (two-sided {chosen['own_cover']:.3f}), and " if chosen is not None else "")  # fmt: skip
    return (
        f"In the default run ({len(default)} swaps, {int(default['n_windows'].iloc[0])} held-out windows each) "
        f"{head}the "
        f"most skewed swap (block {worst['swap']}, G₁ {worst['cost_skew']:.2f}, its costliest window "
        f"{worst['max_window_share'] * 100:.0f} % of the cost) covers {worst['own_cover']:.3f}. In `results/full/` "
        f"({len(full)} swaps, {int(full['n_windows'].iloc[0])} windows each) the per-window cost's G₁ reaches "
        f"{top['cost_skew']:.2f} ({_name(top['model'])} block {top['swap']}, one window carrying "
        f"{top['max_window_share'] * 100:.0f} % of the cost); the own-skew check covers {span(full['own_cover'])}"
    )


def correlation_words(default: pd.DataFrame, full: pd.DataFrame) -> str:
    """The coverage of the correlation intervals over blocks in both methods tables."""
    pick = lambda c: c[c["procedure"].str.contains("correlation", regex=False)]["coverage95"]  # noqa: E731
    return f"{span(pick(default))} in the default, {span(pick(full))} in the full profile"


# --- docs/scaling.md -----------------------------------------------------------------------------------------------


def gpu_words(gpu: pd.DataFrame) -> str:
    """The capture on one accelerator (`results/bench/gpu.csv`, `benchmarks/gpu.py`): at its smallest size, the exact
    capture and the ceiling table against the plain forward, and the device-CPU agreement; at its largest, the capture
    against the forward, its peak memory and what the rows-kept peer met."""
    small, big = gpu.loc[gpu["tokens"].idxmin()], gpu.loc[gpu["tokens"].idxmax()]
    peer = "keeping the rows on the device ran out of its memory" if big["peer_status"] != "ok" else (
        f"keeping the rows on the device took {big['peer_s']:.1f} s")  # fmt: skip
    return (
        f"on one {small['card']}, a model of {small['params_m']:.0f} M parameters and {small['blocks']} blocks at "
        f"{small['tokens']:,} tokens, the exact capture takes {small['ratio_exact']:.2f}× the plain forward pass, the "
        f"ceiling table of all {small['blocks']} blocks {small['ceiling_s']:.2f} s, and a capture on the device and "
        f"one on the CPU of the same windows ({small['cmp_tokens']:,} tokens) agree to "
        f"{_exp(small['device_vs_cpu_max_abs_dr2'])} in R²_lin; "
        + (
            f"it took {big['exact_peak_gib']:.1f} GiB of device memory, where {peer}"
            if big["tokens"] == small["tokens"]
            else f"at {big['tokens']:,} tokens the capture took {big['ratio_exact']:.2f}× the forward with "
            f"{big['exact_peak_gib']:.1f} GiB of device memory, where {peer}"
        )
    )


PLAN_EXAMPLE = {"blocks": 32, "width": 4096, "windows": 160, "test": 32, "sample_rows": 30_000, "per_pass": 8}


def plan_words(example: dict = PLAN_EXAMPLE) -> str:
    """The memory plan (`linrec.collect.plan.memory_plan`, computed, no table) of an 8B llama-style model: per block and
    in all, and with `--blocks-per-pass`."""
    from linrec.collect.plan import memory_plan  # torch, only where this block is written

    e, gib = example, 2**30
    dims = [(e["width"], e["width"])] * e["blocks"]
    plan = memory_plan(dims, e["test"], sample_rows=e["sample_rows"], n_windows=e["windows"])
    one = plan.iloc[0]
    return (
        f"{one['device_total'] / gib:.2f} GiB per block on the device ({one['stats'] / gib:.2f} GiB of moments, "
        f"{one['heldout'] / gib:.2f} GiB of held-out sums and the fitted map, twice), "
        f"{plan['device_total'].sum() / gib:.1f} GiB for all {e['blocks']}, "
        f"{plan['first_host'].sum() / gib:.2f} GiB of first-position rows in host memory and "
        f"{plan['rows_disk'].sum() / gib:.1f} GiB of row sample on disk. With "
        f"`--blocks-per-pass {e['per_pass']}` one pass holds {e['per_pass']} blocks "
        f"({plan['device_total'].iloc[: e['per_pass']].sum() / gib:.1f} GiB) on the GPU"
    )


LIM, NUM = "docs/limitations.md", "docs/numerics.md"
SPLIT, R2SPLIT = "results/split/split_shift.csv", "results/split/split_r2.csv"
SPLIT_SUMMARY = "results/split/split_summary.csv"  # the stored summaries: linrec.outputs.refresh.stand_alone
DCAL, FCAL = "results/default/calibration.csv", "results/full/calibration.csv"
HASHES = ("results/default/rule_hashes.csv", "results/documents/rule_hashes.csv")

BLOCKS = (
    Block("quant", LIM, ("results/quant/quant_summary.csv",), quant_words),
    Block("refits", LIM, (DCAL,), refit_words),
    Block("split", LIM, (SPLIT_SUMMARY, SPLIT), split_words),
    Block("spread", LIM, (SPLIT_SUMMARY, R2SPLIT), spread_words),
    Block(
        "curve",
        LIM,
        (
            "results/curve/r2_curve.csv",
            SPLIT,
            "results/default/r2_lin.csv",
            "results/default/curve_split.csv",
            "results/full/curve_split.csv",
        ),
        curve_words,
    ),  # fmt: skip
    Block("verdicts", LIM, HASHES, verdicts_words),
    Block(
        "shape",
        LIM,
        (SPLIT, R2SPLIT, "results/default/r2_lin_summary.csv", "results/documents/r2_lin_summary.csv", *HASHES),
        shape_words,
    ),  # fmt: skip
    Block("replicates", LIM, ("results/full/r2_replicates.csv",), replicates_words),
    Block("nulls", LIM, ("results/default/controls_null_blocks.csv",), nulls_words),
    Block("fitted", NUM, (DCAL,), fitted_words),
    Block("icc", NUM, ("results/default/window_icc.csv", DCAL), icc_words),
    Block("refit_table", NUM, (DCAL, FCAL), refit_table_words),
    Block("delta", NUM, (DCAL, FCAL), delta_words),
    Block("own_skew", NUM, (DCAL, "results/default/swap_skew.csv", "results/full/swap_skew.csv"), own_skew_words),
    Block("correlation", NUM, (DCAL, FCAL), correlation_words),
    Block("gpu", "docs/scaling.md", ("results/bench/gpu.csv",), gpu_words),
    Block("plan", "docs/scaling.md", (), plan_words),
)


def fill(text: str, name: str, body: str) -> str:
    """`text` with the passage between block `name`'s markers replaced by `body`; unchanged where a marker is
    missing."""
    a, b = start(name), end(name)
    if a not in text or b not in text:
        return text
    head, rest = text.split(a, 1)
    return head + a + body + b + rest.split(b, 1)[1]


def blocks_in(text: str) -> list[str]:
    """The names of the generated blocks `text` holds, in order."""
    return re.findall(r"<!-- numbers:([\w-]+):start -->", text)


def write_doc_blocks(root: str | Path, blocks: tuple[Block, ...] = BLOCKS) -> list[Path]:
    """Rewrite every block of `blocks` in its doc under the checkout `root` from its tables; the docs changed (a doc
    is written only when its text changes; a block whose doc or table is absent is left as it stands)."""
    root = Path(root)
    changed = []
    for doc in dict.fromkeys(b.doc for b in blocks):
        path = root / doc
        if not path.is_file():
            continue
        text = old = path.read_text()
        for b in (b for b in blocks if b.doc == doc):
            tables = _read(root, b.tables)
            if tables is not None:
                text = fill(text, b.name, b.words(*tables))
        if text != old:
            with atomic_file(path) as tmp:
                tmp.write_text(text)
            changed.append(path)
    return changed
