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
# # 01 · Capture: run a frozen model once, keep every FFN block's statistics
#
# **In plain words:** we run the model over some text once and, for every FFN block, keep running sums of what goes
# into it and what comes out: enough to fit and score any affine map later without running the model again.
#
# > "A frozen language model is run once over a corpus" — the paper, Figure 1 caption.
#
# Every transformer block ends its second half with a feed-forward network (FFN, the "MLP").
# We treat each FFN as a **position-wise map** from its input **x** (the normalised hidden
# state that enters the MLP) to its output **y** (what the MLP adds back to the residual
# stream). Every token position of every window is one row (x, y).
#
# We never store all rows. For an affine least-squares fit and its held-out R², the rows
# matter only through additive statistics — n, the means and the centred cross-products
# Σ(x−μ)(x−μ)ᵀ, Σ(x−μ)(y−μ)ᵀ, Σ(y−μ)(y−μ)ᵀ — kept in float64 per block and per split, merged
# batch by batch (Chan's update). Memory is O(d²) per block whatever the token count. A bounded,
# seeded sample of raw rows is kept on disk for the probes of later notebooks.
#
# **Running it yourself.** The parameters cell below names the profile, `params/default.yaml`, and the cell after it
# loads it (every parameter, its default and what it does: `lib/linrec/studies/stages.py`), so Run All in Jupyter is the
# default run: it reads the captures `make figures` cached instead of recomputing them (on a fresh clone it makes
# them here, each said first in its cell with what it costs, its progress bar below it; the tiny profile,
# `profile_file = "params/smoke.yaml"`, runs in minutes), and writes its tables
# to `results/default/` and its figures to `figures/`, where `make figures` writes them. To experiment without
# touching those or any tracked file, write the values into `notebooks/overrides.yaml` (git ignores it), e.g.
# `{results_dir: scratch, figures_dir: scratch/figures, corpus: code}`: any parameter, as `linrec figures -p` sets it.
# The cell after the parameters says what it set; `linrec figures` never reads it.

# %% tags=["parameters"]
profile_file = "params/default.yaml"  # the profile: a YAML file, or a name in params/ (linrec figures --params)
overrides = {}  # linrec figures injects its -p NAME VALUE, --device, --out here (Lab: notebooks/overrides.yaml)

# %%
from linrec.app.profile import load_profile

p = load_profile(profile_file, overrides, lab=True).notebook("01")  # the profile, whole (stages.Profile)
models, device, figures_dir = p.models, p.device, p.figures_dir

# %% [markdown]
# ## Figure 1: the measurement
# Drawn in code (`linrec.outputs.plots_ceiling.fig1_method`), so it regenerates with the rest.

# %%
from linrec.base.files import project_root
from linrec.inputs.models import load_model
from linrec.inputs.sites import find_ffn_sites
from linrec.outputs.plots_ceiling import fig1_method
from linrec.outputs.results import labelled
from linrec.studies import capture as study

fig = fig1_method(project_root() / figures_dir / "fig1_method")

# %% [markdown]
# ## Where is the FFN?
# One row of `linrec.inputs.sites.FFN_SITES` per architecture says where a block's MLP lives. Here are
# the sites of the first model; the hooks read the MLP module's input and output.

# %%
first = load_model(models[0], device=device)
sites = find_ffn_sites(first.model)
print(f"{first.name}: {first.model_type}, {len(sites)} blocks; {'; '.join(first.notes)}")
study.site_table(sites).head(4)

# %% [markdown]
# ## One forward pass per model
# The pass stops right after the deepest FFN (no final norm, no LM head). The result is cached
# on disk, keyed by everything that determines it; the next notebook reads it back without
# touching the model.

# %%
result = study.run(p, loaded=first)  # every model of the profile (the first one already loaded); writes capture
labelled(result.capture)  # its seconds and cache flag: timings/capture.csv

# %% [markdown]
# Each block now has, per split, the float64 statistics of roughly `0.8 × tokens` train rows and
# `0.2 × tokens` held-out rows. The split is by window, at random (seeded), so both splits span
# the whole text and no held-out position shares a window with a training one.
#
# Here is what one block keeps: the train split of the first model's block 0. Its size depends on the block's widths
# (d_in + d_out), not on how many tokens ran through it, and it is all that notebook 02 needs to solve the
# affine map (C_xx W = C_xy) and score it on the held-out split's statistics of the same shape.

# %%
train = result.captures[0].stats["train"][0]  # a linrec.stats.moments.Moments
print(
    f"block 0, train split: n = {train.n:,} rows; μ_x {train.mean_x.shape}, C_xx {train.Cxx.shape}, "
    f"C_xy {train.Cxy.shape}, C_yy {train.Cyy.shape}, all {train.Cxx.dtype}"
)

# %% [markdown]
# ## How alike are the positions of one window?
# The intervals of the notebooks after this one resample whole held-out windows, never single positions: the
# positions of one window share their text, so they are not independent rows. The stored row sample measures by how
# much. For each block, the **intraclass correlation** within a window is the share of a row's variance that its
# window shares with the window's other rows (0 for independent rows; a one-way ANOVA,
# `linrec.stats.heldout.window_icc`). `study.run` wrote it for the inputs x and for what the block's affine map leaves
# over, the residual y − Wᵀx − b on the held-out rows (table `window_icc`). The report's methods table plants the
# largest residual value in the simulations that measure how often the R²_lin interval covers (notebook 09).

# %%
icc = result.window_icc
if icc is None:
    print("this profile's captures kept no row sample (sample_rows: 0): nothing to measure here")
else:
    print(icc.groupby("model")[["resid_icc", "input_icc"]].describe().loc[:, (slice(None), ["min", "50%", "max"])]
          .round(3).to_string())  # fmt: skip
