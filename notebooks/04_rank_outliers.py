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
# # 04 · Two regimes behind a high R²_lin: rank and outliers (Figure 4)
#
# **In plain words:** a high R²_lin can mean the block is linear in every output direction, or that it gets one very
# loud direction right and little else; the median R² over output features and the effective rank tell the two apart.
#
# > "A high [R²_lin] hides two structurally opposite regimes": points near the diagonal "are broadly
# > linear (high rank)", points far below it at high R²_lin "are low-rank, outlier-concentrated
# > (rank ≈ 1)" — the paper, arXiv 2606.19379, Fig. 4 caption (claim 4, ../paper/claims.md).
#
# R²_lin = 1 − Σ_j SSE_j / Σ_j SST_j weights every output feature by its variance. If one feature
# holds 95 % of the variance and the map gets that one right, R²_lin ≥ 0.95 whatever happens to all
# the others. The claim is that real blocks come in both kinds: some are linear everywhere, some
# owe their R²_lin to one loud direction. This notebook builds both kinds by hand first, then finds
# them (or not) among the blocks of the models.

# %% [markdown]
# ## What tells the two regimes apart
# Every number comes from the statistics the capture already holds (no second pass over the model):
#
# * **per-feature R²**, R²_j = 1 − SSE_j / SST_j, summarised by its median over features: every
#   feature counts once, however small;
# * **effective rank** (Roy & Vetterli, 2007): exp of the entropy of a covariance's normalised
#   eigenvalues — d for an isotropic covariance of width d, 1 when a single direction holds
#   everything. Of the output covariance C_yy (`eff_rank_out`), and of the map's *explained part*
#   WᵀC_xxW, the covariance of its predictions (`eff_rank_explained`): the paper's "rank ≈ 1" is the
#   second, since it is the map that must be low-rank, not the output;
# * **ex-top-k R²**: R²_lin recomputed without the k highest-variance output features (k = 1, 8).
#   Least squares is separate per output, so dropping outputs leaves the rest of W unchanged.
#
# Variance can also concentrate in a *position* rather than a feature: the first token of every
# window is where attention parks (the attention sink), and in some blocks its FFN output is orders
# of magnitude larger than any other token's. R²_lin then measures how well one token in `seq_len`
# is fitted. Two more numbers, from the first-position statistics the capture keeps beside the totals:
# **first_var_share**, the share of held-out output variance that goes away when each window's first
# position is dropped, and **r2_ex_first**, R²_lin with the first positions left out of fit and score.
#
# **Massive activations** (Sun et al., 2024): output features whose variance is ≥ 100× the median
# feature's; `n_massive` counts them per block.

# %% [markdown]
# ## The rule
# (`linrec.analyses.spectrum.regime`, applied to every block; the cell that prints the verdict
# prints the rule from `linrec.outputs.catalog.rule` too)
#
# * **nonlinear**: R²_lin < 0.6;
# * **first-token-concentrated**: R²_lin ≥ 0.6 and r2_ex_first at least 0.2 below it (our addition:
#   a third regime the paper does not name);
# * **outlier-concentrated**: R²_lin ≥ 0.6, median per-feature R² at least 0.2 below R²_lin, the
#   top-1 output feature holds ≥ 50 % of the variance *or* the output effective rank is below 5 % of
#   the width, and the effective rank of the map's explained part is below 2 — the paper's "rank ≈ 1".
#   An effective rank of 2 is two equal directions, so below 2 one direction dominates (eigenvalues
#   1 and 0.25 give 1.65);
# * **broadly linear**: every other block with R²_lin ≥ 0.6 whose explained part is spread out: its
#   effective rank is at least 5 % of the output width (the fraction the rule already uses to call the
#   *output* concentrated, so "broadly" means "not concentrated" in the same measure; no new threshold);
# * **unclassified**: R²_lin ≥ 0.6 and none of the above — a block concentrated in a few features
#   whose explained part has rank ≥ 2, or one whose features keep up but whose map works through a
#   handful of directions. Neither is the paper's regime, so neither is forced into one.
#
# A block needs *both* a gap between the two R² and a concentrated output to count as
# outlier-concentrated: concentration alone is harmless when the small features are fitted well too.
# The summary also counts each regime among the blocks with R²_lin ≥ 0.8, a stricter reading of the
# paper's "high R²_lin" than the rule's 0.6.
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

p = load_profile(profile_file, overrides, lab=True).notebook("04")  # the profile, whole (stages.Profile)
models, corpus, capture, seed = p.models, p.corpus, p.capture, p.seed
results_dir, figures_dir = p.results_dir, p.figures_dir

# %%

from linrec.analyses.spectrum import toy_blocks, toy_table
from linrec.app.profile import results
from linrec.base.files import project_root
from linrec.outputs.catalog import rule
from linrec.outputs.findings import tell
from linrec.outputs.plots_regimes import fig4_rank_outliers, fig4b_block_anatomy
from linrec.outputs.results import elsewhere, labelled
from linrec.studies import regimes as study

root = project_root()

# %% [markdown]
# ## Two blocks built to be the two regimes
# Before any model: 4,000 rows of 64 standard-normal inputs and two hand-made "blocks"
# (`linrec.analyses.spectrum.toy_blocks`). In the first, every output is a random linear mix of the
# inputs plus a little noise: each feature is fitted about as well as the total, and the explained
# part spreads over many directions. In the second, one loud output (variance 400) is exactly linear
# in the inputs and the 63 quiet ones are x_j² − 1, which no linear map can fit: R²_lin is the loud
# feature's share of the variance, the median feature is not fitted at all, and the explained part
# has rank 1. The same numbers and the same rule as for the real blocks below (the first-position
# rule does not apply: toy rows have no windows). `toy_table` runs `linrec.analyses.spectrum.block_spectrum` on each
# toy's train and test statistics, exactly as `spectrum_table` does on each block of a model below.

# %% tags=["nbval-check-output"]
toys = toy_blocks(seed=seed)
toy = toy_table(toys)
toy[["block", "r2_lin", "r2_feature_median", "r2_ex_top1", "top1_var_share", "eff_rank_out", "eff_rank_explained",
     "regime"]].round(3)  # fmt: skip

# %% [markdown]
# ## One block by hand, first
# Before the study runs every block, the numbers the rule reads, computed for one block of the first model from its
# statistics in a few lines of numpy: the middle block, chosen by its place in the model, not by its result. The map
# is notebook 02's (`Capture.fit`). Each output feature j gets its own held-out R², 1 − SSE_j / SST_j (SSE_j from the
# test split's sums exactly as notebook 02 scored the whole block, SST_j = C_yy,jj); R²_lin is the same ratio summed
# over the features, so a few features with most of the variance can carry it while the median feature is fitted
# badly. The effective rank of a covariance (Roy & Vetterli) is exp of the entropy of its normalised eigenvalues:
# d for d equal directions, 1 for one. Of the output covariance it says how many directions the output uses; of the
# map's explained part WᵀC_xxW, how many directions the map's output uses. The cell checks each number against
# linrec's (`linrec.analyses.spectrum.block_spectrum`, the function the study calls on every block) to 1e-8.

# %% tags=["nbval-check-output"]
import numpy as np

from linrec.analyses.spectrum import block_spectrum
from linrec.studies.ceiling import model_capture

one = model_capture(p, models[0])  # notebook 02's capture of the block's statistics, from the cache
b = one.n_blocks // 2
train, test, fit = one.stats["train"][b], one.stats["test"][b], one.fit(b)
W = fit.W
Cxx, _, Cyy = train.blocks()
Txx, Txy, Tyy = test.blocks()
offset = test.mean_y - (test.mean_x @ W + fit.b)
sse = np.diag(Tyy) - 2 * np.einsum("ij,ij->j", W, Txy) + np.einsum("ij,ij->j", Txx @ W, W) + test.n * offset**2
sst = np.diag(Tyy)
r2_feature = np.where(sst > 0, 1 - sse / np.where(sst > 0, sst, 1), np.nan)  # one held-out R² per output feature


def eff_rank(C):
    """exp(entropy of the normalised eigenvalues of C)."""
    lam = np.clip(np.linalg.eigvalsh(C), 0, None)
    q = lam[lam > 0] / lam.sum()
    return float(np.exp(-(q * np.log(q)).sum()))


hand = {"r2_lin": 1 - sse.sum() / sst.sum(), "r2_feature_median": float(np.nanmedian(r2_feature)),
        "eff_rank_out": eff_rank(Cyy), "eff_rank_explained": eff_rank(W.T @ Cxx @ W)}  # fmt: skip
ours = block_spectrum(train, test, block=b, fit=fit)
for name, value in hand.items():
    assert abs(value - ours[name]) <= 1e-8 * max(1.0, abs(value)), f"{name}: by hand {value}, linrec {ours[name]}"
print(f"{one.model_label} block {b} of {one.n_blocks}: R²_lin {hand['r2_lin']:.4f}, median feature R² "
      f"{hand['r2_feature_median']:.4f}; effective rank of the output {hand['eff_rank_out']:.1f} of {train.d_out}, "
      f"of the map's explained part {hand['eff_rank_explained']:.1f} (each as linrec has it, to 1e-8)")  # fmt: skip

# %% [markdown]
# ## The per-block table
# `study.run(p)` (`lib/linrec/studies/regimes.py`) reads each model's capture and runs
# `linrec.analyses.spectrum.spectrum_table` on it: for every block, the map of notebook 02 (the same fit, so the
# same R²_lin) and every number of the list above from the train and held-out statistics, then the rule, once with
# the windows' first positions and once without (`regime_ex_first`). It reads statistics only (`sample_rows` 0):
# this notebook needs no raw rows, so any cached capture of this text serves it, notebook 01's or, for another
# corpus, notebook 05's (`linrec.collect.reuse`). The same call counts the regimes per model, measures the input side
# and, where the profile asks, repeats it all on fresh text (the sections below), and writes every table of this
# notebook to the results folder.

# %%
result = study.run(p)  # writes spectrum, spectrum_summary, spectrum_inputs (and the replicates, where run)
result.overview()

# %% [markdown]
# ## Figure 4
# (a) Each point is a block. On the diagonal, the median feature is fitted as well as the
# variance-weighted total: the linearity is spread over the output. Far below it, a few
# high-variance features carry R²_lin. The marker's size is the explained part's effective rank,
# the number the rule's "rank ≈ 1" reads, so claim 4's outlier-concentrated blocks are the smallest
# markers: each is ringed and named. (b) The same blocks scored without their top-1 (circles) and
# top-8 (squares) output features: a broadly linear block barely moves, an outlier-concentrated one
# drops.

# %%
fig = fig4_rank_outliers(result.spectrum, root / figures_dir / "fig4_rank_outliers")

# %% [markdown]
# ## Regimes and massive activations, per model
# Each model's blocks counted by regime (`linrec.analyses.spectrum.regime_summary`), over all blocks and over those with
# R²_lin ≥ 0.8, with the blocks each count rests on; claim 4's rule reads this table.

# %% tags=["nbval-check-output"]
summary = result.spectrum_summary
print("claim 4 rule:", rule(4).words)
v4 = rule(4)(summary)
print("verdict:", v4.verdict, "· the same rule without the windows' first position:", v4.without_first)
labelled(summary, "spectrum_summary").T

# %% [markdown]
# ## The regimes on fresh text
# With `replicate_samples` set (`params/full.yaml`: samples 1 and 2, the captures notebook 02 makes of disjoint
# stretches of the corpus; moments only, which is all the regimes need), every block's regime is found again on each
# sample and claim 4's rule runs on each (`linrec.analyses.spectrum.regime_replication`; `study.run` did it above, in
# `linrec.studies.regimes.replicates`). Where this profile has no samples, the cell prints what the last run of
# `params/full.yaml` found, from its results file, once `linrec.app.profile.results` has checked that that
# run measured the same models, corpus, seed and capture settings (else it says which differs).

# %% tags=["nbval-check-output"]
if result.spectrum_replicates_summary is not None:  # this run's replication
    replication = tell("replication", result.spectrum_replicates_summary)
else:  # the last run of params/full.yaml, where it measured what this run measures
    quoted = results(p, root).get("spectrum_replicates_summary", own=False)
    story, absent = lambda t: "\n".join(tell("replication", t)), "(params/{other}.yaml runs samples 1 and 2)"
    replication = elsewhere(quoted, story, "claim 4 on fresh text", absent, found="").splitlines()
for line in replication:
    print(line)

# %% [markdown]
# ## What claim 4 rests on
# The verdict needs one block of each regime over all models; here is how many there are, which blocks the
# outlier-concentrated side rests on, and how many blocks are in neither regime (often most of them, as the cell
# counts: the paper's dichotomy describes the high-R²_lin blocks, and many blocks are below 0.6 or concentrated
# without being rank ≈ 1).

# %% tags=["nbval-check-output"]
for line in tell("regimes", result.spectrum):  # notebook 04's words beside claim 4 (linrec.outputs.findings)
    print(line)

# %% [markdown]
# The blocks the outlier-concentrated side rests on, beside the two toy blocks and the most linear
# broadly linear block of each model: each output feature's held-out R² against its share of the
# variance (top), and the spectra of C_yy and of the explained part (bottom). A real outlier-
# concentrated block looks like the second toy block: one feature far right, fitted; the rest at the
# left, fitted poorly; one bar in the explained part's spectrum.

# %%
anatomies = result.anatomies(toys)  # linrec.analyses.spectrum.block_anatomy of each toy and each block named
fig = fig4b_block_anatomy(anatomies, root / figures_dir / "fig4b_block_anatomy")

# %% [markdown]
# Regimes can overlap: an outlier-concentrated block may also hold much of its variance on the
# first position without crossing the first-token rule (r2_ex_first stays within 0.2 of R²_lin).
# The row "outlier-concentrated with first position ≥ 20 %" of the summary lists those blocks; the
# table below shows their first-token share beside the feature measures. A block can also hold most
# of its output variance in one feature and still be broadly linear: the row "top-1 share ≥ 0.5 yet
# broadly linear" lists such blocks. There the small features are fitted nearly as well as the big
# one (median per-feature R² close to R²_lin, ex-top-k R² close to R²_lin), so the global number is
# not an artefact of the outlier. The block-by-block view:

# %%
result.overlaps().round(3)

# %% [markdown]
# A first-token-concentrated block can look broadly linear by every per-feature measure: when the
# sink token's output is large in *every* feature, each feature's variance is mostly that token's,
# and the per-feature median rises with the global R². Only dropping the position shows it.
# Notebook 06 asks which of these numbers predicts what swapping the block costs.
#
# **The sink and the BOS token.** Does the sink belong to the first *position* or to a missing BOS
# token? SmolLM2 runs without one, Gemma-3's tokenizer prepends one (`capture.csv`'s `bos` column).
# `linrec spectrum --model smollm2-135m --bos yes` prepends the tokenizer's BOS token to every window
# (`--bos no` strips it from a model that has one) and prints this table again: compare its
# `first_var_share` and `regime` columns with the ones above. When we ran it, the blocks that hold
# most of their variance on position 0 held it there with the BOS token too: the first-token regime
# is a property of position 0 whichever token sits there, which is why the robustness column of the
# report (every claim judged without position 0) is the check that matters.

# %% [markdown]
# ## Does the input side explain R²_lin?
# If R²_lin were set by how the inputs are distributed rather than by the map, it would track
# the input statistics: the condition number of the input Gram matrix on both splits, the
# effective rank of the inputs and their dynamic range (largest over median feature standard
# deviation) — the input side the paper's public referee report asked for (its second major
# comment, on §3; ../paper/claims.md, M2). Spearman's ρ across the blocks of each model between
# R²_lin and each input descriptor (with its p-value); notebook 07 tests the question directly with
# controls.


# %%
result.spectrum_inputs.round(3)  # linrec.analyses.spectrum.input_side
