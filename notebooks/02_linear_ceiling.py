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
# # 02 · The exact closed-form linear ceiling: R²_lin per block (Figure 2, left panel)
#
# **In plain words:** for each block, the best affine (straight-line) map from the FFN's input to its output, solved
# exactly; R²_lin is the share of the output's variance that map explains on text it was not fitted on (1: the block
# acts linearly on this text; 0 or below: the map explains nothing, or does worse than the mean).
#
# > "We treat each FFN as a position-wise input-to-output map and split it into the exact
# > least-squares linear approximation plus a residual. The held-out variance the closed-form
# > linear map explains defines a block's linear recoverability (R²_lin)." — the paper, abstract.
#
# For each block we solve, from the train statistics alone,
#
# $$(W, b) = \arg\min \sum_{\text{train}} \lVert y - W^\top x - b \rVert^2
# \;\Rightarrow\; C_{xx} W = C_{xy},\quad b = \mu_y - W^\top \mu_x ,$$
#
# and score it on the held-out split, again from statistics alone:
# R²_lin = 1 − Σ_j SSE_j / Σ_j SST_j, summed over output features (a variance-weighted R²).
# No optimiser runs, so nothing can under-converge: this is the *ceiling* any affine map reaches.
#
# **Conditioning.** LLM activations are badly scaled (a few features are orders of magnitude
# larger than the rest), so the Gram matrix C_xx has a huge condition number κ. The solver
# (`linrec.stats.ceiling.fit_affine`) first rescales every input feature to unit variance (Jacobi), then
# inverts by eigendecomposition in float64, dropping only directions below d·ε·λ_max. We report
# κ of the raw Gram matrix and of the rescaled one the solver actually sees.
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

p = load_profile(profile_file, overrides, lab=True).notebook("02")  # the profile, whole (stages.Profile)
models, corpus, capture, seed, profile, figures_dir = p.models, p.corpus, p.capture, p.seed, p.profile, p.figures_dir

# %%
from IPython.display import display

from linrec.app.profile import results
from linrec.base.files import project_root
from linrec.outputs.catalog import rule
from linrec.outputs.ceiling_text import curve_text, first_token_text, r2_lin_view, replication_text
from linrec.outputs.plots_ceiling import fig2_r2_lin, fig2c_learning_curves
from linrec.outputs.results import elsewhere, labelled
from linrec.studies import ceiling as study

root = project_root()

# %% [markdown]
# ## One block by hand, first
# Before the study fits every block, here is one fit spelled out (notebook 00 derives it from rows). The capture
# holds, for each block and split, the means of x and y and the centred sums C_xx = Σ(x − x̄)(x − x̄)ᵀ (the Gram matrix
# of the centred inputs), C_xy and C_yy. Solve the normal equations C_xx W = C_xy on the train split, set
# b = ȳ − Wᵀx̄, and score on the test split from its sums alone: SSE_j = C_yy,jj − 2 (WᵀC_xy)_jj + (WᵀC_xx W)_jj +
# n·(ȳ − Wᵀx̄ − b)_j² and SST_j = C_yy,jj. linrec's own solve (`Capture.score`) rescales the features first, which
# matters only in the worst-conditioned blocks; here the two agree to rounding.

# %%
import numpy as np

one = study.model_capture(p, models[0])  # notebook 01's capture, from the cache: the one the study fits below
train, test = one.stats["train"][0], one.stats["test"][0]  # block 0: means and centred sums per split
Cxx, Cxy, _ = train.blocks()
W = np.linalg.solve(Cxx, Cxy)  # the normal equations
b = train.mean_y - train.mean_x @ W
Txx, Txy, Tyy = test.blocks()
offset = test.mean_y - (test.mean_x @ W + b)
sse = np.diag(Tyy) - 2 * np.einsum("ij,ij->j", W, Txy) + np.einsum("ij,ij->j", Txx @ W, W) + test.n * offset**2
r2_hand, r2_ours = 1 - sse.sum() / np.trace(Tyy), one.score(0).r2
print(f"{one.model_label} block 0: held-out R²_lin by hand {r2_hand:.6f}, linrec {r2_ours:.6f}")

# %% [markdown]
# ## Fit every block of every model
# The captures come from the cache written by notebook 01 (same parameters); a missing one is
# computed here. The study (`linrec.studies.ceiling.run`) fits every block, runs the parts of the notebook this
# profile switches on (the learning curve, the move tests, the replication below) and writes their tables; the
# cells after this one show them.

# %%
result = study.run(p)
r2_lin_view(result.r2_lin)

# %% [markdown]
# What one row of that table is: the first model's block 0 solved from its train statistics alone
# (`Capture.fit`: the Jacobi-scaled eigendecomposition solve) and scored on its held-out statistics (`Capture.score`),
# with the condition number of the Gram matrix before and after the scaling. Every later notebook takes a block's map
# from the same call, so one block has one map everywhere.

# %%
c = result.captures[0]
fit, held_out = c.fit(0), c.score(0)
print(
    f"{c.model_label} block 0: W {fit.W.shape}, b {fit.b.shape} from {fit.n_train:,} train rows; κ(C_xx) "
    f"{fit.cond_gram:.1e}, scaled {fit.cond_scaled:.1e}, rank {fit.rank}; held-out R²_lin {held_out.r2:.3f}"
)

# %% [markdown]
# ## R²_lin against the number of train tokens
# The table above fits each map on the train split (`n_train` rows: 80 % of the windows) for d + 1
# parameters per output (577 for SmolLM2's d = 576, 641 for Gemma-3's 640), so its held-out R²_lin is
# biased low: a least-squares map also fits its train rows' noise, which for a linear model costs about
# (1 − R²)·p/(n − p − 1) held out.
# The window interval above holds the map fixed, so it does not show this. The learning curve
# measures it (`linrec.collect.curves`; ≈ 35 min a model on one CPU core, measured, so the default profile skips it and
# `params/curve.yaml` runs it: `linrec figures --params params/curve.yaml --only 02`, results in
# `results/curve/`): the same model and corpus at six train sizes from 5k to 200k tokens,
# for three split seeds (each seed draws its own 20k held-out tokens and its own nested train sets),
# all in one pass over the corpus. Each point is the mean of the seeds; its interval resamples seeds
# and held-out windows together, so it includes refit variance. A straight line in p/(n − p − 1)
# through the points with ≥ 5 rows per parameter gives the large-n estimate R²∞ (the intercept),
# with the same bootstrap for its interval and `fit_rmse` for how straight the points are.

# %%
if result.r2_curve is not None:
    fig = fig2c_learning_curves(result.r2_curve, root / figures_dir / "fig2c_learning_curves", result.ref_tokens)
    print(curve_text(result.r2_curve_overview))
    display(labelled(result.r2_curve_overview.set_index("model").T).round(4))
elif note := elsewhere(results(p, root).get("r2_curve_overview", own=False), curve_text):
    print(note)

# %% [markdown]
# Reading the table: `gain_largest_*` is R²_lin at the largest train size minus R²_lin at the
# default train size (16k tokens), per block; `gain_inf_*` the same for the large-n estimate;
# `train_gap_*` the in-sample minus held-out R² at each size (how much the map memorises);
# `rank_spearman_ref_inf` whether the blocks keep their order from 16k tokens to the large-n
# estimate. The per-block numbers are in `r2_curve.csv`. Where this profile does not run the curve,
# the cell above prints what the last run of `params/curve.yaml` found, from its results file (or, where an older
# linrec wrote that run, says so and how to refresh it; the report then leaves it out too). If the
# blocks keep their order (a rank correlation near 1), the profile's shape, which claim 1 is about,
# does not depend on the train size, even though every block's level rises with it.

# %% [markdown]
# ## Figure 2 (R²_lin panel)
# Solid: the global, variance-weighted R²_lin, with its 95 % interval for the held-out R² of the fitted map
# (`r2_lo`, `r2_hi`: each held-out window left out in turn, a jackknife with a t quantile, the fitted map held
# fixed; `linrec.stats.heldout`; its coverage, beside a percentile bootstrap's and for a refit's R²_lin, is measured
# by simulation in notebook 09's methods table). Dotted: the
# median over output features of the per-feature R² — when the two part ways, a few
# high-variance features carry the global number (notebook 04 takes this apart). Grey dashed:
# R²_lin with each window's first token left out of
# fit and score (`r2_ex_first`). Where it falls far below the solid line, the block's output
# variance sits on that one token (`first_var_share`), the attention sink of a model that runs
# without a BOS token, and the high R²_lin describes that token, not the block on running text.

# %%
if profile == "curve":
    tokens = result.shown["profile_tokens"].iloc[0]
    print(f"R²_lin and its interval from the learning curve at {tokens:.0f} train tokens")
fig = fig2_r2_lin(result.shown, root / figures_dir / "fig2_r2_lin")

# %% [markdown]
# ## What the numbers say
# The paper's first claim: per-block R²_lin is heterogeneous and non-monotone with depth, spanning
# > 0.99 to < 0.3 between adjacent blocks (GPT-2, Pythia-160m, llama-160m). The summary below is
# computed from the table above by `linrec.analyses.profile.profile_summary` (the rule that judges claim 1
# is `rule(1)` of `linrec.outputs.catalog`, stated below the table). A wiggle smaller than the window
# intervals is not a change of direction: the rule counts jumps and turns only between blocks
# whose 95 % intervals are disjoint (`max_jump_disjoint`, `direction_changes_disjoint`), and the
# table shows the raw counts beside them. The same rule runs on R²_lin without each window's first
# position (`r2_ex_first`), with its own window intervals (the capture keeps the held-out
# sums of the map fitted without that position), so the verdict says whether it needs position 0.
# Beside the rule, the paper's own extremes are checked as a yes/no: some block above 0.99 next to
# one below 0.3.
#
# Many blocks (SmolLM2's 30) give many chances for two intervals to miss each other by luck, so each move the
# rule counts is also tested: the difference between the two blocks, with each held-out window left
# out in turn for both (a paired jackknife t test, `linrec.analyses.profile.move_tests`, `r2_moves`), with
# a Benjamini–Hochberg false-discovery rate of 5 % over the moves of one profile. Only the moves that
# survive count (`max_jump_fdr`, `direction_changes_fdr`). The test needs the capture's held-out sums,
# so it runs on the capture's profile, not on the learning curve's. The table below counts, per model and
# positions (all, or without each window's first), the moves tested and those the rule counts (`counted`: they
# survive the false-discovery rate).

# %% tags=["nbval-check-output"]
print(result.move_counts().to_string())
print("claim 1 rule:", rule(1).words)
v1 = rule(1)(result.r2_lin_summary)
print(f"verdict on the {profile} profile:", v1.verdict, "· without the windows' first position:", v1.without_first)
for e in v1.evidence:
    print(f"{e['model']}: as extreme as the paper (> 0.99 next to < 0.3):", "yes" if e["as_extreme_as_paper"] else "no")
if result.r2_lin_summary_other is not None:  # the same rule on the other profile: does it depend on the train size?
    other = "capture" if profile == "curve" else "curve"
    print(f"verdict on the {other} profile:", rule(1)(result.r2_lin_summary_other).verdict)
labelled(result.summaries()).round(3)

# %% [markdown]
# ## The same profile on fresh text
# Every number above comes from one sample of text (the corpus's first 20k tokens). The held-out
# interval covers the windows of that sample, not another stretch of text. With
# `replicate_samples` set (`params/full.yaml`: samples 1 and 2; the default profile skips them to
# stay within its time budget), each model is captured again on disjoint stretches of the same
# corpus (`linrec.inputs.corpora.make_windows`' `sample`: different text, not only a different split), and
# each block's between-sample SD is set beside its window interval; claim 1's rule runs on every
# sample's profile (`linrec.analyses.profile.replication_summary`). Where this profile has no samples, the
# cell below prints what the last run of `params/full.yaml` found, from its results file.

# %% tags=["nbval-check-output"]
if result.r2_replicates_summary is not None:
    print(replication_text(result.r2_replicates_summary))
else:
    quoted = results(p, root).get("r2_replicates_summary", own=False)
    absent = "(params/{other}.yaml runs samples 1 and 2)"
    print(elsewhere(quoted, replication_text, "replication on fresh text", absent))

# %% [markdown]
# ## Held out by window or by document
# Every profile holds out a seeded fifth of the *windows* of its stretch of text (`split: windows`), so most
# held-out windows sit beside train windows of the same document: the map has seen the rest of that article.
# `split: documents` (`linrec measure --split documents`, or `capture: {split: documents}` in a profile) holds out a
# seeded fifth of the *documents* whole instead. `benchmarks/split.py` captured the default's text six times each
# way, with SmolLM2 and with Gemma-3 (`results/split/`); the cell below counts its per-block shifts (documents −
# windows, with a Welch interval over the seeds). The interval in Figure 2 is for the held-out R² of the fitted map
# on this run's own held-out windows, so it does not include this shift. `params/documents.yaml` runs every
# notebook the second way, and the report sets its verdicts beside the default's (`docs/limitations.md` says which
# move).

# %% tags=["nbval-check-output"]
import pandas as pd

from linrec.analyses.large_n import split_summary

split_file = root / "results" / "split" / "split_shift.csv"
if split_file.is_file():
    print(split_summary(pd.read_csv(split_file)).round(3).to_string(index=False))
else:
    print("no results/split/split_shift.csv here: PYTHONPATH=lib .venv/bin/python benchmarks/split.py writes it")

# %% [markdown]
# The paper's "> 0.99" blocks deserve a second look here: GPT-2 and many small llama-style
# models put a massive activation on the first token. For each model, the blocks whose R²_lin
# rests mostly on that token, and what is left without it:

# %% tags=["nbval-check-output"]
print(first_token_text(result.r2_lin))
