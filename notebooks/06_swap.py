# ---
# jupyter:
#   jupytext:
#     formats: py:percent,ipynb
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 06 · Swap the FFN for its linear map: what does it cost? (Figure 2, ΔPPL panel)
#
# > "recoverable blocks admit large single-layer replacements (GPT-2's early FFN at 8x fewer
# > parameters for +0.77 perplexity), while low-recoverability blocks flag where this is unsafe"
# > — the paper, arXiv 2606.19379, abstract; per-block zero-shot ΔPPL in its Fig. 2 (claim 6,
# > ../paper/claims.md).
#
# A high R²_lin says the map explains most of the FFN's output *variance*. Whether the model
# notices the remaining error is a different question: the unexplained part may sit in directions
# the next blocks and the LM head read closely. So we measure it directly.
#
# **Zero-shot swap.** Block i's FFN is replaced by y = Wᵀx + b with the closed-form (W, b) of
# notebook 02, fitted on the train windows, in float64 and run in the model's dtype; no training.
# **Perplexity** is the standard token-level one: exp of the mean next-token negative
# log-likelihood over every predicted token of the *held-out* windows (the same seeded split the
# statistics came from, never used for the fit). ΔPPL = PPL(block i swapped) − PPL(base). The
# base model runs once; a swap at block i re-runs only blocks i… and the head, from the cached
# residual stream (`linrec.swap.PerplexityEvaluator`; exact, tested against plain forwards).
#
# **Parameters.** The affine map has d² + d parameters; a gated FFN (SwiGLU, both offline models)
# has 3·d·d_ff, a GPT-2 FFN 2·d·d_ff + d_ff + d. A rank-r map from reduced-rank regression
# (the rank-r minimiser of the train error, not a truncation of W) has r·2d + d.
#
# **Does R²_lin predict ΔPPL?** We rank blocks by several candidate predictors and compare with
# the measured ΔPPL (Spearman ρ): R²_lin, the per-feature median R², the ex-top-k R² of
# notebook 04, the raw output-space error, and a cheap direct one: ΔPPL on a few *train* windows
# with the block's map refitted without them (screening).

# %% tags=["parameters"]
models = [
    "smollm2-135m",
    "gemma3-270m",
]  # offline defaults; the paper: gpt2, EleutherAI/pythia-160m, JackFram/llama-160m
corpus = "wiki"
seq_len = 128
tokens = 20_480  # must match notebook 01 to reuse its capture
seed = 0
sample_rows = 30_000  # part of the capture's cache key; not used here
batch_size = 8
device = "cpu"
screening_windows = 8  # train windows for screening: the ΔPPL predictor and greedy selection
ranks = [8, 32, 128, 256]  # reduced ranks for the ΔPPL-vs-parameters curve
budget_ppl = 1.0  # greedy multi-block swap: stop adding blocks beyond this ΔPPL
save_dir = None  # where the compressed model is written (None: $LINREC_CACHE/swapped/<model>)
results_dir = "results/default"
figures_dir = "figures"

# %%
import gc

import pandas as pd

from linrec.capture import get_capture
from linrec.figures import project_root
from linrec.files import cache_root
from linrec.models import load_model
from linrec.perplexity import PerplexityEvaluator
from linrec.plots import fig2_r2_lin, fig6_swap
from linrec.recoverability import ceiling_table
from linrec.spectrum import spectrum_table
from linrec.surgery import count_params, load_swapped
from linrec.swap import SwapStudy
from linrec.tables import labelled, save_table
from linrec.verdicts import CLAIM6_BUDGET, RULES, SWAP_HIGH_R2, claim6, swap_params, swap_predictors, swap_safety

root = project_root()
(root / results_dir).mkdir(parents=True, exist_ok=True)
kw = dict(
    corpus=corpus,
    seq_len=seq_len,
    tokens=tokens,
    seed=seed,
    sample_rows=sample_rows,
    batch_size=batch_size,
    device=device,
)

# %% [markdown]
# ## Every block, swapped alone
# One model at a time (the study keeps the model's residual stream for the held-out windows).
# Per model we also draw the ΔPPL-vs-parameters curve for one block (the one with the lowest
# ΔPPL among the blocks with R²_lin ≥ the median), run the greedy multi-block swap, and save
# and reload the result.

# %%
swap_tables, curves, greedy_rows, steps, reloads, ceilings, spectra = [], [], [], [], [], [], []
for m in models:
    capture = get_capture(m, **kw)
    loaded = load_model(m, device=device)
    study = SwapStudy(capture, loaded, batch_size=batch_size)
    t = study.table(screening_windows=screening_windows, seed=seed)
    swap_tables.append(t)
    ceilings.append(ceiling_table(capture, seed=seed))
    spectra.append(spectrum_table(capture))

    high = t[t["r2_lin"] >= t["r2_lin"].median()]
    curve_block = int(high.loc[high["delta_ppl"].idxmin(), "block"])
    curves.append(study.rank_curve(curve_block, [r for r in ranks if r < capture.stats["train"][curve_block].d_out]))

    # greedy, twice: blocks tried in descending R²_lin (the paper's ordering), then in ascending
    # screening ΔPPL (the predictor compared below); each accepted by ΔPPL on the screening windows (maps
    # refitted without them), the final set reported on the held-out windows
    orders = {
        "R²_lin": None,
        "screening ΔPPL": {int(b): -float(d) for b, d in zip(t["block"], t["screening_delta_ppl"])},
    }
    results = {}
    for order, scores in orders.items():
        g = results[order] = study.greedy(
            budget_ppl, scores=scores, select_on="screening", screening_windows=screening_windows, seed=seed
        )
        steps.append(g.steps.assign(model=m, order=order))
        greedy_rows.append(
            {
                "model": m,
                "order": order,
                "budget_ppl": budget_ppl,
                "blocks_swapped": " ".join(map(str, sorted(g.swapped))),
                "n_swapped": len(g.swapped),
                "screening_ppl_base": g.ppl_base,
                "screening_ppl_final": g.ppl_final,
                "test_ppl_base": g.holdout_ppl_base,
                "test_ppl_final": g.holdout_ppl_final,
                "test_delta_ppl": g.holdout_ppl_final - g.holdout_ppl_base,
                "params_removed": g.params_removed,
                "params_added": g.params_added,
                "params_model": count_params(loaded.model),
            }
        )
    g = max(results.values(), key=lambda r: len(r.swapped))
    chosen = sorted(g.swapped) or [int(t.loc[t["delta_ppl"].idxmin(), "block"])]
    joint = study.joint(chosen)

    # save the compressed model (the larger greedy choice; if both kept nothing, the cheapest single block),
    # and reload it
    out = study.save((save_dir and f"{save_dir}/{m}") or cache_root() / "swapped" / m.replace("/", "--"), chosen)
    reloaded = load_swapped(out, device=device)
    ids = study.windows.ids[study.windows.test]
    ppl_reloaded = PerplexityEvaluator(reloaded.model, ids, batch_size, reuse_prefix=False).base_ppl
    reloads.append(
        {
            "model": m,
            "blocks": " ".join(map(str, chosen)),
            "ppl_in_memory": joint["ppl"],
            "ppl_reloaded": ppl_reloaded,
            "abs_diff": abs(ppl_reloaded - joint["ppl"]),
            "directory": str(out),
        }
    )
    del study, loaded, reloaded
    gc.collect()

table = pd.concat(swap_tables, ignore_index=True)
save_table(table, "swap", root / results_dir)
cols = [
    "model",
    "block",
    "r2_lin",
    "ppl_base",
    "ppl_swapped",
    "delta_ppl",
    "screening_delta_ppl",
    "params_ffn",
    "params_linear",
    "param_ratio",
]
table[cols].style.format(
    {
        "r2_lin": "{:.3f}",
        "ppl_base": "{:.2f}",
        "ppl_swapped": "{:.2f}",
        "delta_ppl": "{:+.3f}",
        "screening_delta_ppl": "{:+.3f}",
        "param_ratio": "{:.3f}",
    }
).hide(axis="index")

# %% [markdown]
# ## Figure 2, complete: R²_lin (with bootstrap intervals) above, ΔPPL of each swap below

# %%
r2 = pd.concat(ceilings, ignore_index=True)
fig = fig2_r2_lin(r2, root / figures_dir / "fig2_swap", swap=table)

# %% [markdown]
# ## Parameters: the affine map against the FFN
# The paper's 8× is GPT-2's 2·768·3072 + 3072 + 768 against 768² + 768. The ratio below is
# params_ffn / params_linear for each model's blocks.

# %%
params = swap_params(table)
save_table(params, "swap_params", root / results_dir)
labelled(params)

# %% [markdown]
# ## Does R²_lin predict ΔPPL?
# Spearman ρ between each predictor and the measured ΔPPL, across the blocks of each model. A
# good "safe to swap" score has a strongly *negative* ρ for the R² scores (high R², low ΔPPL) and a
# strongly *positive* ρ for the error-type scores; `rho_useful_direction` puts them on one scale
# (ρ with the sign flipped for the R² scores: higher is a better predictor, negative means the
# score points the wrong way).

# %%
spec = pd.concat(spectra, ignore_index=True)
joined = table.merge(
    spec[["model", "block", "r2_feature_median", "r2_ex_top1", "r2_ex_top8", "r2_ex_first"]], on=["model", "block"]
)
predictors = {  # column → (name, sign of ρ that means "predicts safe to swap")
    "r2_lin": ("R²_lin", -1),
    "r2_feature_median": ("per-feature median R²", -1),
    "r2_ex_top8": ("R²_lin without the top-8 output features", -1),
    "r2_ex_first": ("R²_lin without each window's first token", -1),
    "mse_out": ("output-space MSE of the map", +1),
    "screening_delta_ppl": (f"ΔPPL on {screening_windows} screening windows (leave-out fit)", +1),
}
pred = swap_predictors(joined, {col: sign for col, (_, sign) in predictors.items()})
save_table(pred, "swap_predictors", root / results_dir)
pred.assign(predictor=pred["column"].map(lambda c: predictors[c][0])).round(3)

# %% [markdown]
# **Is a high R²_lin safe to swap?** Among blocks with R²_lin ≥ 0.9, how many cost more than
# +1 perplexity when swapped alone?


# %%
safe = swap_safety(table)
save_table(safe, "swap_safety", root / results_dir)
print("claim 6 rule:", RULES[6])
print("verdict:", claim6(table, params, pred).verdict)
labelled(safe).T

# %% [markdown]
# ## Figure 6: ΔPPL against R²_lin, and against parameters for reduced-rank maps

# %%
curve = pd.concat(curves, ignore_index=True)
save_table(curve, "swap_rank_curve", root / results_dir)
fig = fig6_swap(table, curve, root / figures_dir / "fig6_swap")
curve.round(4)

# %% [markdown]
# ## Greedy multi-block swap within a perplexity budget
# Blocks are tried in an order, and a block is kept if the set swapped so far stays within
# +`budget_ppl` on the screening windows (maps refitted without them). The kept set is then scored on
# the held-out windows, which played no part in choosing it or fitting it. Two orders: descending
# R²_lin (what the paper's "high R²_lin is a compression signal" implies) and ascending ΔPPL on the
# screening windows (the predictor compared above). The saved model below takes the larger set.

# %%
greedy = pd.DataFrame(greedy_rows)
save_table(greedy, "swap_greedy", root / results_dir)
save_table(pd.concat(steps, ignore_index=True), "swap_greedy_steps", root / results_dir)
greedy.T

# %% [markdown]
# ## Save and reload
# The compressed model is written as a Hugging Face directory (config, tokenizer, safetensors)
# plus `linrec_swaps.json`, which `linrec.swap.load_swapped` reads to install the affine modules
# before loading the weights strictly. Its perplexity on the held-out windows must equal the
# in-memory one.

# %%
reload = pd.DataFrame(reloads)
save_table(reload, "swap_reload", root / results_dir)
assert (reload["abs_diff"] <= 1e-6 * reload["ppl_in_memory"]).all(), reload
reload

# %% [markdown]
# ## What the numbers say

# %%
lines = []
for r in safe.to_dict("records"):
    m = r["model"]
    p = pred[pred["model"] == m].set_index("column")
    best = p["rho_useful_direction"].idxmax()
    rho = p.loc["r2_lin", "spearman_rho"]
    direction = (
        "higher R²_lin goes with smaller ΔPPL, as the paper implies"
        if rho < 0
        else "higher R²_lin goes with *larger* ΔPPL, the opposite of safe-to-swap"
    )
    lines.append(
        f"{m}: base perplexity {r['ppl_base']:.2f}; swapping one block alone costs a median ΔPPL of "
        f"{r['delta_ppl_median']:+.2f}; {r['n_high_r2']} blocks have R²_lin ≥ {SWAP_HIGH_R2} and "
        f"{r['n_high_r2_costly']} of them cost more than +{CLAIM6_BUDGET:g}. "
        f"Spearman ρ(R²_lin, ΔPPL) = {rho:+.2f} (p = {p.loc['r2_lin', 'p']:.2g}): {direction}; "
        f"with each window's first token left out of R²_lin, ρ = {p.loc['r2_ex_first', 'spearman_rho']:+.2f} "
        f"(p = {p.loc['r2_ex_first', 'p']:.2g}); "
        f"the best predictor is {predictors[best][0]} (ρ = {p.loc[best, 'spearman_rho']:+.2f})."
    )
for r in greedy.to_dict("records"):
    lines.append(
        f"{r['model']}: the greedy swap in order of {r['order']}, within +{r['budget_ppl']:g}, "
        f"kept blocks [{r['blocks_swapped']}] (held-out ppl {r['test_ppl_base']:.2f} → {r['test_ppl_final']:.2f}), "
        f"removing {r['params_removed']:,} FFN parameters for {r['params_added']:,} affine ones "
        f"({(r['params_removed'] - r['params_added']) / r['params_model']:.1%} of the model)."
    )
for r in params.to_dict("records"):
    lines.append(
        f"{r['model']}: an FFN has {int(r['params_ffn']):,} parameters, its affine map {int(r['params_linear']):,} "
        f"({r['ffn_over_linear']:.1f}× fewer)."
    )
print("\n".join(lines))
save_table(pd.DataFrame({"finding": lines}), "swap_verdict", root / results_dir)
