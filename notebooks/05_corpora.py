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
# **Comparing profiles** (`corpora_agreement`): for each model and each pair of corpora, the profile's shift from one
# corpus to the other in level and shape, each with its window interval, as claim 2a compares two profiles (claim 5
# reads it, the section "Verdict" says how); beside it the Pearson and Spearman correlation of the per-block
# profiles, the largest per-block difference, and how many blocks have disjoint intervals
# (`linrec.analyses.uncertainty.profile_agreement`).
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
from linrec.claims.rules import judge
from linrec.outputs.catalog import rule
from linrec.outputs.findings import findings
from linrec.outputs.plots_ceiling import fig5_corpora
from linrec.outputs.results import Results, labelled
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
# Claim 5 compares profiles, so it is judged as claim 2a judges two profiles: the project's one convention for shape
# and level (`linrec.claims.rules`). For each model and each pair of corpora a, b, with a_i and b_i block i's R²_lin
# on each:
#
# - **level**, a shift of the whole profile: mean_i (a_i − b_i), signed (a above b is positive);
# - **shape**, a change of its form: mean_i |(a_i − ā) − (b_i − b̄)|, the mean difference once each profile is
#   centred on its own mean;
#
# each with a 95 % interval from the window jackknife of the cell above, the same functions and the same jackknife
# as claim 2a's seeds experiment (`linrec.analyses.recoverability.corpus_pairs`, `PARTS`). 2a's two profiles share
# their windows; each corpus has its own, so one window of one corpus is left out at a time and the two corpora's
# variances add. The paper's words are that the profiles "overlay closely": curves overlay only if they have the
# same form *and* sit at the same height, so a pair **overlays** only if its level's interval lies inside ± 2a's
# minimum effect and its shape's below it, and is **apart** if either interval lies entirely beyond it. A model's
# profile is "a property of the model" if every pair overlays, "shaped by the corpus" if some pair is apart, and
# undecided otherwise (`linrec.claims.corpora.pair_word`, `model_word`). The same is done without the windows' first
# position (the `_ex_first` columns): that is an alternative analysis, so it can lower the model's word, never raise
# it. The cell below prints the rule with its margin.

# %% tags=["nbval-check-output"]
print("claim 5 rule:", rule(5).words)
v5 = judge(rule(5), result.tables())
print("verdict:", v5.verdict, "· without the windows' first position alone:", v5.without_first or "not measured")
labelled(result.corpora_agreement, "corpora_agreement").round(3)

# %% [markdown]
# Beside the pairs, two older readings stay as context (neither decides the claim). The R²_lin table of blocks ×
# corpora split like a two-way analysis of variance into *depth* (the blocks' main effect), *level* (the corpora's
# main effect) and *shape* (their interaction), each share of the total sum of squares with its window interval
# (`linrec.analyses.recoverability.corpus_shape_level`): a share says how much of the variance a corpus accounts
# for, not how far it moves a block, so it is not on claim 2a's scale. And the correlation reading
# (`linrec.claims.corpora.corpus_word`, the `verdict` column): every pair's Spearman ρ and the corpus effect's size
# against the depth effect's (**corpus/depth**: the mean over blocks of the standard deviation across corpora over
# the standard deviation across blocks of the corpus-averaged profile); two flat profiles correlate poorly even when
# they agree to the second decimal, and a pure shift leaves ρ untouched. The count of block–corpus pairs that differ
# is Benjamini–Hochberg corrected (5 % false-discovery rate over every block and pair of corpora).

# %% tags=["nbval-check-output"]
labelled(result.corpora_verdict).round(3)

# %% tags=["nbval-check-output"]
# one narrator (linrec.outputs.findings): claim 5 in the report's words, judged by the catalog's rule on the tables
# just written
print("\n".join(findings(Results(root / p.results_dir), "05")))

# %% [markdown]
# Reading the verdict: a pair whose interval straddles the margin is not evidence either way at this token budget;
# one that lies inside it shows the two corpora give the same profile to within what claim 2a calls no effect, and
# one beyond it shows a corpus moves the profile by at least as much as 2a requires of training. A corpus that keeps
# the form but lifts every block does not give profiles that "overlay": its level says so, pair by pair. The lines
# above say which pairs decide each model's word, and, where the word without position 0 differs, which blocks make
# that analysis less certain.
