# ---
# jupyter:
#   jupytext:
#     notebook_metadata_filter: -jupytext.text_representation
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 06 · Swap the FFN for its linear map: what does it cost? (Figure 2, ΔPPL panel)
#
# **In plain words:** replace one block's FFN by its linear map and see how much worse the model predicts held-out
# text (perplexity); then ask whether R²_lin tells in advance which blocks are safe to replace.
#
# > "recoverable blocks admit large single-layer replacements (GPT-2's early FFN at 8x fewer
# > parameters for +0.77 perplexity), while low-recoverability blocks flag where this is unsafe"
# > — the paper, arXiv 2606.19379, abstract; per-block zero-shot ΔPPL in its Fig. 2 (claim 6,
# > ../paper/claims.md).
#
# That sentence makes two claims, and we test them separately: **6a**, some block can be
# swapped for its affine map for at most +1 perplexity; **6b**, R²_lin tells which blocks those
# are. A high R²_lin says the map explains most of the FFN's output *variance*; whether the model
# notices the rest is a different question, so we measure it.
#
# **Zero-shot swap.** Block i's FFN is replaced by y = Wᵀx + b with the closed-form (W, b) of
# notebook 02, fitted on the train windows in float64 and run in the model's dtype; no training.
# **Perplexity** is exp of the mean next-token negative log-likelihood over every predicted token
# of the *held-out* windows (never used for a fit or a choice): all 32 of them in the default and full profiles
# (`test_windows` draws fewer by seed alone: each swap costs one pass over them, and fewer windows give wider intervals
# that miss more often when one window carries much of a swap's cost). ΔPPL = PPL(swapped) − PPL(base),
# with a 99 % **paired skew-corrected jackknife interval** for the swap's held-out population ΔPPL: each window is
# left out in turn, the same window for the base and the swapped model, and the spread of the ΔPPLs left gives a t
# interval whose ends Hall's transformation moves by their skewness (`linrec.analyses.uncertainty.
# delta_ppl_interval`): when a few windows cost much more than the rest, the symmetric t missed below the truth,
# the side that flatters a swap. At 99 % and 32 windows it covers a planted change in 0.98–1.00 of simulated data
# sets under symmetric, Gamma, lognormal and one-costly-window-in-4 costs, where at 95 % it covers 0.93–0.99 (the
# report's methods table); claim 6a also checks it at the chosen block's own windows resampled (`swap_skew`).
# Every ΔPPL's per-window losses are written (`swap_windows`) with their skew per swap (`swap_skew`). The base
# model runs once; a swap at block i re-runs only blocks i… and the head from the cached residual
# stream (`linrec.analyses.perplexity.PerplexityEvaluator`; exact, tested against plain forwards).
#
# **Choices never see the held-out windows.** Which block gets a reduced-rank curve, the order in
# which the greedy multi-block swap tries blocks, and whether it keeps one are decided on
# *screening windows*: a few seeded train windows, with every map refitted without them
# (`linrec.analyses.swap.SwapStudy`). The held-out windows only report. tests/analyses/test_screening.py perturbs them
# and checks that every choice stays the same.
#
# **The first position.** Each window's first position is where attention parks (the "attention
# sink"), with a BOS token there or not: SmolLM2 runs without one and Gemma-3's tokenizer prepends
# one (`capture.csv`'s `bos` column, notebook 01); notebook 04 lists the blocks that hold most of
# their output variance on position 0 (`first_share_blocks`). Two position-aware variants separate that cost:
# the map fitted and applied on positions ≥ 1, with position 0 kept as the FFN's own output
# (`ffn`) or set to its train mean (`mean`) (`linrec.inputs.surgery.FirstPositionSwap`).
#
# **Parameters.** The affine map has d² + d parameters; a gated FFN (SwiGLU/GeGLU, both offline
# models) 3·d·d_ff, a GPT-2 FFN 2·d·d_ff + d_ff + d. A rank-r map from reduced-rank regression
# (the rank-r minimiser of the train error, not a truncation of W) has r·2d + d.
#
# **Running it yourself** (notebook 01 and docs/running.md say more): Run All runs the default profile
# (`params/default.yaml`) and writes `results/default/` and `figures/` as `make figures` does. It reads the captures
# `make figures` cached; on a fresh clone it computes them (`params/smoke.yaml`, the tiny profile, takes minutes). To
# experiment without touching tracked files, put parameters into `notebooks/overrides.yaml` (git ignores it), e.g.
# `{results_dir: scratch, figures_dir: scratch/figures, corpus: code}`; the cell after the parameters says what it
# set.

# %% tags=["parameters"]
profile_file = "params/default.yaml"  # the profile: a YAML file, or a name in params/ (linrec figures --params)
overrides = {}  # linrec figures injects its -p NAME VALUE, --device, --out here (Lab: notebooks/overrides.yaml)

# %%
from linrec.app.profile import load_profile

p = load_profile(profile_file, overrides, lab=True).notebook("06")  # the profile, whole (stages.Profile)
heal_trained, figures_dir = p.heal_trained, p.figures_dir

# %%
from IPython.display import display

from linrec.base.files import project_root
from linrec.claims.routing import ANCHOR_RULES
from linrec.outputs.catalog import rule
from linrec.outputs.findings import ROUTING, beside, findings
from linrec.outputs.plots_swap import fig2_swap, fig6_swap, fig9_routing
from linrec.outputs.results import Results, labelled
from linrec.studies import swap as study

root = project_root()
training = load_profile("training").notebook("08") if heal_trained else None  # the runs heal_trained heals

# %% [markdown]
# ## One block by hand, first
# Before the study swaps every block, one swap spelled out: the middle block of the first model (chosen by its place,
# not its result) has its FFN's output replaced by its closed-form map Wᵀx + b (notebook 02's `Capture.fit`; a forward
# hook here, `linrec.inputs.surgery.AffineFFN` in the study), and the model reads four of the held-out windows the
# study reports on, once as it is and once swapped. Each window's loss is its mean next-token NLL per token (the
# logits at position t score token t + 1), and perplexity is exp of the mean loss, so ΔPPL comes from the per-window
# losses alone; the study stores them (`swap_windows`) and its interval leaves one window out at a time from both
# models together (`docs/numerics.md`). The cell checks the losses and ΔPPL against linrec's evaluator on the same
# windows (`linrec.analyses.perplexity.PerplexityEvaluator`, what the study runs on every block) to 1e-4, the forward
# pass's float32 precision.

# %% tags=["nbval-check-output"]
import numpy as np
import torch

from linrec.analyses.perplexity import PerplexityEvaluator
from linrec.analyses.swap import capture_windows, report_ids
from linrec.inputs.models import load_model
from linrec.inputs.surgery import AffineFFN
from linrec.studies.ceiling import model_capture

one = model_capture(p, p.models[0])  # notebook 02's capture: the block's map and the windows
loaded = load_model(p.models[0], device=p.device)
ids = report_ids(capture_windows(one, loaded.tokenizer), p.test_windows, p.seed)[:4]  # 4 of the held-out windows
b = one.n_blocks // 2
fit = one.fit(b)
W, c = torch.from_numpy(fit.W).float(), torch.from_numpy(fit.b).float()


@torch.no_grad()
def window_losses(ids):
    """Mean next-token NLL per token of each window [n_windows]: the logits at position t score token t + 1."""
    logp = torch.log_softmax(loaded.model(ids).logits[:, :-1].double(), dim=-1)
    return -logp.gather(-1, ids[:, 1:, None]).squeeze(-1).mean(1).numpy()


base = window_losses(ids)
site = loaded.sites[b]  # the block's FFN: its output replaced by Wᵀx + b of its input
hook = site.ffn_out.register_forward_hook(lambda module, args, out: args[0] @ W + c)
try:
    swapped = window_losses(ids)
finally:
    hook.remove()
delta = np.exp(swapped.mean()) - np.exp(base.mean())  # ΔPPL: the windows are of equal length, so a plain mean

evaluator = PerplexityEvaluator(loaded.model, ids, batch_size=p.batch_size, sites=loaded.sites)  # linrec's
nll = evaluator.window_nll({b: AffineFFN.from_fit(fit)})  # Σ NLL per window, the swap as the study makes it
ours = evaluator.base_window_nll / evaluator.tokens_per_window
assert np.allclose(ours, base, rtol=0, atol=1e-4), (ours, base)
assert np.allclose(nll / evaluator.tokens_per_window, swapped, rtol=0, atol=1e-4), (nll, swapped)
assert abs(evaluator.delta_of(nll).delta - delta) <= 1.4e-4 * max(1, abs(delta)), (evaluator.delta_of(nll), delta)
print(
    f"{one.model_label} block {b} swapped for its map, on {len(ids)} held-out windows: loss per token "
    f"{', '.join(f'{x:.3f}' for x in base)} → {', '.join(f'{x:.3f}' for x in swapped)}; perplexity "
    f"{np.exp(base.mean()):.2f} → {np.exp(swapped.mean()):.2f}, ΔPPL {delta:+.3f} (as linrec has them, to 1e-4)"
)
loaded = evaluator = None  # the study loads the model again, one at a time

# %% [markdown]
# ## Every block, swapped alone; the choices, on screening windows
# One model at a time (`linrec.analyses.swap_run.run_model`, which holds one model in memory at a time). Per model:
# the predictors and each block's ΔPPL alone on the screening windows; the held-out ΔPPL of every
# block (plain map) and of the position variants on the blocks whose *train* first-position share
# is at least `variant_min_first_share`; the ΔPPL-vs-parameters curve of one block (chosen on the
# screening windows); the greedy swap in two orders; and the saved model, reloaded. The per-token routing and the
# healing of the sections below run in the same pass, while the model is loaded.
#
# `linrec.studies.swap.run` does this for every model of the profile, stacks the models' tables, applies claim 6a's
# and 6b's rules (`linrec.claims.swap`) and writes every table of this notebook to the profile's `results_dir`
# (their columns: `linrec.base.registry`); the cells below show what it returned. `training` is notebook 08's
# profile, read only where `heal_trained` asks to heal its runs.

# %%
result = study.run(p, training)  # every model: swapped, routed, healed (run_model); writes every table below
cols = ["model", "block", "first", "r2_lin", "ppl_swapped", "delta_ppl", "delta_lo", "delta_hi", "param_ratio"]
result.swap[cols].style.format(
    {c: "{:+.3f}" for c in ("delta_ppl", "delta_lo", "delta_hi")} | {"r2_lin": "{:.3f}", "ppl_swapped": "{:.2f}",
                                                                     "param_ratio": "{:.3f}"}
).hide(axis="index").set_uuid("swap")  # fmt: skip

# %% [markdown]
# ## Claim 6a: can some block be swapped for ≤ +1 perplexity?
# The block is the one with the lowest ΔPPL alone on the *screening* windows; its held-out
# interval decides. Choosing the best block by its held-out ΔPPL and then reporting that ΔPPL
# would be the winner's curse.

# %%
print("claim 6a rule:", rule("6a").words)
print("verdict:", result.v6a.verdict, result.v6a.reason)
result.evidence("6a").round(3).T

# %% [markdown]
# ## Figure 2, second row: held-out ΔPPL of each block swapped alone
# The R²_lin of the same blocks is notebook 02's figure. The outlined bar is the block claim 6a picked on the
# screening windows; the dashed line is the +1 perplexity budget.

# %%
fig = fig2_swap(result.swap, root / figures_dir / "fig2_swap", chosen=result.chosen())

# %% [markdown]
# ## Claim 6b: does R²_lin flag the safe blocks?
# Each candidate predictor is computed on the screening windows' rows with the leave-out map,
# without running the swapped model: R²_lin, R²_lin without each window's first position, the
# raw output error, the error relative to the residual stream leaving the block, and (Gemma-3,
# whose FFN output passes a norm before the residual add) that error after the norm. Depth
# (distance to the nearest end of the stack) is the baseline to beat: swapping a block near
# either end is costlier. Per predictor: Spearman ρ with held-out ΔPPL across blocks, the partial
# ρ with depth taken out, and ρ within the middle half of the blocks. Neighbouring blocks share the
# residual stream, so the intervals are Fisher's at the effective number of blocks (`n_eff`,
# `linrec.analyses.uncertainty.correlation_test`); the interval as if blocks were independent is kept
# beside it (`rho_lo_iid`, `rho_hi_iid`), and the row `all` pools the models' blocks with a model effect. `useful` = ρ
# signed so that > 0 points the right way. The screening ΔPPL runs the swapped model (the target on other windows) and
# is shown for comparison only.
#
# Three outcomes, not two: a useful flag is ρ ≤ −0.3 (higher R²_lin, smaller ΔPPL). R²_lin is *not a useful flag* when ρ
# or the partial ρ has that effect excluded: its one-sided 95 % lower bound (the 90 % interval's lower end) lies above
# −0.3, which a correlation near 0 or on the wrong side reaches with far fewer blocks than showing |ρ| < 0.3 both ways;
# it *flags* the safe blocks when both are shown below 0 (and neither is excluded); otherwise the data are
# *inconclusive*, which is "not testable at this power", never a pass. Screening five predictors (six for Gemma-3) and
# naming the best one afterwards is a multiple comparison: a predictor is named only if its bootstrap p-value survives
# Holm's correction over the screen (`linrec.claims.swap.best_predictors`).

# %%
print("claim 6b rule:", rule("6b").words)
print("verdict:", result.v6b.verdict, result.v6b.reason)
result.swap_predictors.drop(columns=["n_blocks", "n_middle"]).round(2)

# %% [markdown]
# ## The first position: how much of a block's cost sits there?
# For the blocks where the first position holds at least half of the held-out output variance
# (notebook 04's first-token blocks): held-out ΔPPL of the plain map, of the map on positions ≥ 1
# with the FFN's own output at position 0 (`ffn`), and with its train mean there (`mean`).
# `share_of_cost_at_first` = (ΔPPL_map − ΔPPL_ffn) / ΔPPL_map. Table `swap` has every variant
# row, with `vs_map`: PPL(variant) − PPL(map) and its paired interval.

# %%
None if result.swap_first is None else result.swap_first.round(3)  # None: this profile runs no position variant

# %% [markdown]
# ## Figure 6: ΔPPL against R²_lin, against parameters for reduced-rank maps, and at position 0
# (a) every block, ΔPPL against its R²_lin: claim 6b's question as a picture. (b) The reduced-rank curve of one block
# per model, chosen on the screening windows: among the blocks whose screening R²_lin is at least the median, the one
# with the lowest screening ΔPPL (`Screening.curve_block`). It need not be claim 6a's block, which is chosen by
# screening ΔPPL alone. (c) The first-token blocks of the table above, with the three swaps side by side.

# %%
fig = fig6_swap(result.swap, result.swap_rank_curve, root / figures_dir / "fig6_swap")
result.swap_rank_curve.round(4)

# %% [markdown]
# ## Greedy multi-block swap within a perplexity budget
# Blocks are tried in an order, and a block is kept if the set swapped so far stays within
# +`budget_ppl` on the screening windows (maps refitted without them); a block whose own
# screening ΔPPL is over the budget is not tried. Two orders: descending R²_lin on the screening
# windows (what "high R²_lin is a compression signal" implies) and ascending screening ΔPPL. The
# kept set is then measured once on the held-out windows, with its interval; the gap to the
# screening ΔPPL shows how far the selection's own estimate was optimistic.

# %%
result.swap_greedy.T

# %% [markdown]
# ## Beyond whole-block swaps: each token to the FFN or to its map
# A whole-block swap puts every token through the map. A more recent paper (arXiv 2603.03459, "Half the Nonlinearity
# Is Wasted", Balogh 2026; the *anchor* below) routes token by token instead: a gate with d + 1 parameters, a logistic
# classifier on the MLP's input, sends a token to a precomputed linear map or to the full MLP. It reports three
# things, and we measure each with the exact closed-form map (`linrec.analyses.routing`, `token_context`, `healing`):
#
# 1. **25–56 % of GPT-2's tokens routed linear for under 1 % perplexity.** The gate is trained on the capture's
#    stored *train* rows to predict "the map's error on this token is small" (two targets compared there: the
#    token's squared error at most the train median, "quantile", or at most 10 % of its ‖y‖², "relative"; the one
#    whose gates route the lower train error is used, `routing_gates`). The threshold for a share p is the score
#    above which a share p of the train rows lie, so a larger share routes every token a smaller one does, and more
#    (tests/analyses/test_routing.py). Shares on a grid of `route_step` (0.05): held-out ΔPPL of each with its paired
#    jackknife interval, and each block's **routable share**, the largest share of a run from 0 within +1 % of base
#    perplexity, with an interval from one-sided t tests over windows, share by share: its lower end is the largest
#    share whose run from 0 is *shown* within the budget, its upper end the largest not shown beyond it (coverage
#    measured on planted curves in the report's methods table). The curve stops at the first share shown beyond
#    the budget (no later share can change the routable share or its interval: exact, and it saves passes).
#    Each curve's monotonicity is counted: falls of ΔPPL from one share to the next, and those beyond noise.
#    `route_blocks` blocks per model, spread over the screening R²_lin, are routed; `params/full.yaml` routes every
#    block. **Compute saved** per token: a routed token skips the FFN and pays the map (d_in·d_out); every token pays
#    the gate (d_in).
# 2. **"Nonlinearity need cannot be predicted from token identity."** The anchor's quantity is the *need* itself: per
#    token type, the mean of the map's error over its occurrences on one corpus (a fresh stretch of wiki that no fit
#    or gate saw) against the same on another (web, code), Pearson and Spearman r over the types seen ≥ 5 times in
#    both, with a bootstrap over types (`r_need`), and how much of the other corpus's per-token need a lookup of the
#    first corpus's type means explains (`lookup_r2`). Beside it, the share of each type's occurrences *the gate*
#    routes (`r`, what this notebook reported before): the gate reads the input, which carries the token's identity,
#    so that r can be high while the need itself follows the context; it is not the anchor's quantity. Then token
#    against context: each input is split into the mean input of its token type (train rows, each row's own window
#    left out) and the rest; gates on each part and on the whole, on the same train rows, are compared by held-out
#    AUC (window jackknife intervals) and by held-out ΔPPL when each routes `route_split_shares` of the tokens.
# 3. **Whole MLPs replaced by linear maps cost nothing after a short fine-tune.** The k blocks with the lowest
#    screening ΔPPL are swapped (k = 1, 2, 4), then the model is fine-tuned on train windows (every weight, or the
#    maps alone) and compared on the held-out windows with the same fine-tune of the unswapped model (the anchor's
#    control): every weight of it for "all"; for "maps", the same k blocks' own FFNs, trained alike, so that what any
#    training of those blocks on this text gives is not credited to the map. Ten fine-tunes per model do not fit this
#    notebook's time in the default profile (each is a fine-tune of the whole model; `results/healing/timings` holds
#    what they took): params/healing.yaml runs them,
#    on SmolLM2 (`heal`) and on the small models notebook 08 trains (`heal_trained`, params/training.yaml's cached
#    runs), and the report quotes its table. With both left `{}` the section below is skipped.

# %%
routes = result.routing  # the routing and healing tables (linrec.studies.routing); None where not run
if routes.routing_curve is not None:
    display(routes.by_share().round(2))
    display(routes.routing_routable.round(3))

# %% [markdown]
# ### Does the token decide, or the context?
# The rules (`linrec.claims.routing.ANCHOR_RULES`) are printed with their verdicts. Table `routing_identity` has every
# block and corpus pair, `routing_split_auc` and `routing_split_ppl` every gate.

# %%
if routes.routing_curve is not None:
    print("need rule:", ANCHOR_RULES["need"])
    print("split rule:", ANCHOR_RULES["split"])
    display(routes.routing_summary.round(3).T)
    display(routes.routing_anchor.round(3).T)
    display(routes.auc_by_part().round(3))

# %% [markdown]
# ### Healing: k blocks swapped, then a short fine-tune
# Per model, mode ("all": every weight trained; "maps": the maps alone) and k: held-out ΔPPL before the fine-tune
# (against the base), after it (against the control: the unswapped model given the same fine-tune, every weight for
# "all", its k = 0 row; the same blocks' own FFNs for "maps", one per k), and after it against the base, each with its
# paired interval (`linrec.analyses.healing`).

# %%
for note in routes.notes:  # e.g. heal_trained set, but notebook 08 has not trained params/training.yaml's runs
    print(note)
if routes.routing_heal is not None:
    print("heal rule:", ANCHOR_RULES["heal"])
    display(routes.routing_heal[["model", "mode", "k", "blocks", "delta_before", "delta_after", "delta_after_lo",
                                 "delta_after_hi", "delta_after_base", "outcome"]].round(3))  # fmt: skip

# %% [markdown]
# ## Figure 9: routing, token against context, healing
# Top: each routed block's held-out ΔPPL against the share routed (0.05 grid; the dashed line is +1 % of base
# perplexity) and its routable share against R²_lin. Bottom: the anchor's per-type need r against the gate-share r
# reported before; the three gates' held-out AUC; healed ΔPPL against the fine-tuned control.

# %%
if routes.routing_curve is not None:
    fig = fig9_routing(routes.routing_curve, routes.routing_routable, result.r2, root / figures_dir / "fig9_routing",
                       identity=routes.routing_identity, split_auc=routes.routing_split_auc,
                       heal=routes.routing_heal)  # fmt: skip

# %% [markdown]
# ## Save and reload
# The compressed model is written as a Hugging Face directory (config, tokenizer, safetensors)
# plus `linrec_swaps.json`, which `linrec.inputs.surgery.load_swapped` reads to install the affine
# modules before loading the weights strictly. Its perplexity on the screening windows must
# equal the in-memory one.

# %%
assert (result.swap_reload["abs_diff"] <= 1e-6 * result.swap_reload["ppl_in_memory"]).all(), result.swap_reload
result.swap_reload

# %% [markdown]
# ## Where the time went
# Evaluations per step (an evaluation is one pass over that step's windows; a swap re-runs only
# the blocks from the swapped one on, and the head). Their seconds are in
# `<results_dir>/timings/swap_timings.csv`, with every other timing of the run, so that this
# saved notebook is the same on every run that finds the same numbers.

# %%
labelled(result.swap_timings)

# %% [markdown]
# ## What the numbers say

# %% tags=["nbval-check-output"]
# one narrator (linrec.outputs.findings): claims 6a and 6b in the report's words, judged by the catalog's rules on the
# tables just written, then the position-0 variants and greedy swaps
print("\n".join(findings(Results(root / p.results_dir), "06")))

# %%
# per-token routing, the anchor paper's token-identity claim and healing, where this run routed or healed: the words of
# the report's routing section (linrec.outputs.findings, its rows for notebook 06's routing tables)
print("\n".join(beside(Results(root / p.results_dir), "06", ROUTING)))
