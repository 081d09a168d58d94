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
# # 05 · A property of the model or of the corpus? (Figure 5)
#
# **In plain words:** the same measurement on three kinds of text (encyclopaedia, web pages, source code): if each
# block's R²_lin stays put, it belongs to the model; if it moves with the text, to the text.
#
# > "The three profiles overlay closely per model, so the recoverability profile is a property of
# > the model, not the corpus" — the paper, arXiv 2606.19379, Fig. 5 caption (claim 5,
# > ../paper/claims.md).
#
# If R²_lin were a property of the text rather than of the trained blocks, the per-block profile
# would move when the corpus changes. Here the same closed-form ceiling is measured on three
# domains, each with its own seeded 80/20 split of windows: encyclopaedic prose (`wiki`), web
# text (`web`) and source code (`code`); with the hub, WikiText-2-raw replaces `wiki`.
#
# **How sure is each number?** An R²_lin is a ratio of sums over held-out positions. Positions in
# one window are correlated, so the honest resampling unit is the window: the capture keeps, for
# every held-out window, that window's error and variance sums per output feature
# (`linrec.stats.heldout`), and each window is left out in turn (a jackknife) to give every block a
# 95 % interval, R²_lin ∓ t × its jackknife standard error. The fitted map is held fixed: the interval
# is one for the held-out R² of the fitted map, *this* map's held-out score. Its coverage of that, and of
# a refit's R²_lin, is measured by simulation (notebook 09's methods table, `linrec.analyses.calibration`).
#
# **Comparing profiles** (`linrec.analyses.uncertainty.profile_agreement`): for each model and each pair of
# corpora, the Pearson and Spearman correlation of the per-block profiles, the largest per-block
# difference, and how many blocks have disjoint intervals (a difference larger than
# the noise).
#
# The model is loaded once for all corpora (`linrec.collect.capture.get_captures`) and every capture is
# cached; only the notebook-01 corpus keeps raw rows, the others keep statistics only.
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

p = load_profile(profile_file, overrides, lab=True).notebook("05")  # the profile, whole (stages.Profile)
models, corpus, corpora, capture, seed, batch_size = p.models, p.corpus, p.corpora, p.capture, p.seed, p.batch_size
device, results_dir, figures_dir = p.device, p.results_dir, p.figures_dir

# %%
from linrec.base.files import project_root
from linrec.outputs.plots_ceiling import fig5_corpora
from linrec.outputs.results import labelled
from linrec.studies import corpora as study

root = project_root()

# %% [markdown]
# ## One block by hand, first
# Before the sweep, one block's R²_lin on two corpora, with the interval every table carries, from the capture's
# per-window sums (`Capture.heldout`: for each held-out window w and output feature j, the rows n_w, Σ e_j², Σ y_j and
# Σ y_j² around the train mean; `linrec.stats.heldout` says why these suffice). R² over any set of windows is
# 1 − ΣSSE / (Σ syy − |Σ sy|² / Σ n), so leaving one window out is a subtraction. The interval is the
# leave-one-window-out jackknife: the W estimates without one window each give a standard error
# √((W − 1)/W · Σ (R²₋w − mean)²), and the estimate ∓ t(W − 1) of it is the 95 % interval, the same for every block,
# every corpus and every model (`docs/numerics.md` says what it covers). The middle block of the first model, on the
# profile's first two corpora; the cell checks the numbers against linrec's (`Capture.score`,
# `linrec.stats.heldout.r2_interval`, what the sweep's table holds) to 1e-10.

# %% tags=["nbval-check-output"]
import numpy as np
from scipy.stats import t as student_t

from linrec.stats.heldout import r2_interval
from linrec.studies.ceiling import model_capture


def r2(h, keep):
    """R² over the held-out windows `keep` marks (1 kept, 0 left out), from the per-window sums alone."""
    n, sse, sy, syy = keep @ h.n, keep @ h.sse.sum(1), keep @ h.sy, keep @ h.syy.sum(1)
    return 1 - sse / (syy - (sy * sy).sum(-1) / n)


for c in corpora[:2]:
    cap = model_capture(p, models[0], c)  # its statistics on corpus c (notebook 02's request)
    b = cap.n_blocks // 2
    h, w = cap.heldout[b], cap.heldout[b].n_windows
    point = r2(h, np.ones(w))
    loo = np.array([r2(h, 1 - np.eye(w)[k]) for k in range(w)])  # every window left out in turn
    se = np.sqrt((w - 1) / w * ((loo - loo.mean()) ** 2).sum())  # the jackknife's standard error
    lo, hi = point - student_t.ppf(0.975, w - 1) * se, point + student_t.ppf(0.975, w - 1) * se
    ours = (cap.score(b).r2, *r2_interval(h))  # linrec's, as the study's table has them
    assert np.allclose((point, lo, hi), ours, rtol=0, atol=1e-10), ((point, lo, hi), ours)
    print(f"{cap.model_label} block {b} on {c}: R²_lin {point:.4f}, 95 % interval [{lo:.4f}, {hi:.4f}] over {w} "
          "held-out windows (as linrec has them, to 1e-10)")  # fmt: skip

# %% [markdown]
# ## The sweep: every block, every model, every corpus

# %%
result = study.run(p)  # every model on every corpus; writes corpora, corpora_agreement, corpora_verdict
result.wide().round(3)

# %% [markdown]
# ## Figure 5
# One panel per model; line style = corpus; the shaded band is each block's 95 % window
# interval. Where bands overlap, the corpora cannot be told apart at this token budget.

# %%
fig = fig5_corpora(result.corpora, root / figures_dir / "fig5_corpora")

# %% [markdown]
# ## How alike are the profiles?

# %%
result.corpora_agreement.round(3)

# %% [markdown]
# ## Verdict
# Correlations alone can mislead: two flat profiles correlate poorly even when they agree to the
# second decimal. So the verdict also weighs the *size* of the corpus effect against the size of
# the depth effect: **corpus/depth** = the mean over blocks of the standard deviation across
# corpora, divided by the standard deviation across blocks of the corpus-averaged profile.
#
# | verdict | rule (per model; `linrec.claims.corpora.corpus_word`, tested at each threshold) |
# |---|---|
# | a property of the model | every pair has Spearman ρ ≥ 0.7 and corpus/depth < 0.5 |
# | shaped by the corpus | some pair has Spearman ρ < 0.4, or corpus/depth ≥ 1 |
# | mixed | otherwise |
#
# That ratio mixes two different things a corpus can do to a profile: shift all of it up or down
# (its **level**), or change its form (its **shape**). A model whose depth profile is flat fails the
# ratio on a pure shift. So claim 5 follows the project's one convention for shape and level
# (`linrec.claims.rules`): both are measured, each with its interval. The R²_lin table of blocks × corpora
# is split like a two-way analysis of variance into *depth* (the blocks' main effect), *level* (the
# corpora's main effect) and *shape* (their interaction); each share of the total sum of squares gets
# a 95 % interval from resampling each corpus's held-out windows (`linrec.analyses.recoverability.
# corpus_shape_level`). The paper's words are that the profiles "overlay closely": curves overlay only
# if they have the same form *and* sit at the same height. Claim 5's rule (`linrec.claims.corpora.overlay_word`):
# "a property of the model" if the intervals of the shape share and of the level share both lie below
# 0.1, "shaped by the corpus" if either lies at or above 0.1, undecided otherwise.
# The count of block–corpus pairs that differ is Benjamini–Hochberg corrected (5 % false-discovery
# rate over every block and pair of corpora), not a count of disjoint intervals.


# %% tags=["nbval-check-output"]
labelled(result.corpora_verdict).round(3)

# %% tags=["nbval-check-output"]
for r in result.corpora_verdict.to_dict("records"):
    print(
        f"{r['model']}: across {', '.join(corpora)} the per-block profile is {r['verdict']} "
        f"(min Spearman ρ {r['spearman_min']:.2f}, corpus/depth {r['corpus_depth_ratio']:.2f}; "
        f"largest difference {r['max_abs_diff']:.3f} at block {r['max_diff_block']}, "
        f"{r['max_diff_corpus_a']} vs {r['max_diff_corpus_b']}; "
        f"{r['n_ci_disjoint']} of {r['n_ci_compared']} block comparisons differ beyond the window intervals)."
    )
    print(
        f"{r['model']}: of R²_lin's variance over blocks × corpora, depth holds {r['depth_share']:.3f} "
        f"[{r['depth_lo']:.3f}, {r['depth_hi']:.3f}], level {r['level_share']:.3f} [{r['level_lo']:.3f}, "
        f"{r['level_hi']:.3f}] and shape {r['shape_share']:.3f} [{r['shape_lo']:.3f}, {r['shape_hi']:.3f}]: on "
        f"shape and level, {r['overlay_verdict']}. The level moves by up to {r['level_range']:.3f} "
        f"[{r['level_range_lo']:.3f}, {r['level_range_hi']:.3f}] ({r['corpus_highest']} highest, "
        f"{r['corpus_lowest']} lowest); "
        f"{r['n_pairs_fdr']} of {r['n_pairs']} block–corpus pairs differ at a 5 % false-discovery rate."
    )

# %% [markdown]
# Reading the verdict: a block–corpus pair that differs at the 5 % false-discovery rate is a real
# difference between domains at this token budget, however small. The shape share says whether a
# corpus changes the profile's form across depth; the level share whether it lifts or lowers every
# block together. A corpus that keeps the form but lifts every block by 0.15 does not give profiles
# that "overlay": it is shaped by the corpus in level, and the verdict says so.
