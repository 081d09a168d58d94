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
# # 08 · Learned, watched as it is learned: one architecture trained from scratch, seed against seed
#
# **In plain words:** train small models from scratch, changing one thing at a time (the seed, the data order, the MLP
# type; in the zoo, the layout and the text), and watch each block's R²_lin form from step 0: how much of the profile
# does the design fix, and how much does training decide?
#
# > "Per-block linear recoverability is learned, not architectural." — the paper's title (arXiv 2606.19379); its
# > evidence (§ 4): GPT-2 and Pythia-160m, the same width and both GELU, have different profiles.
#
# Those two models also differ in training data, recipe, tokenizer and residual layout, and here neither can be
# loaded (the hub is unreachable). This notebook runs the controlled version, which no published model gives:
#
# - **the same architecture on the same text**, trained from scratch here (`linrec.inputs.training`): a llama-layout
#   decoder of 4 blocks, d = 128, in two MLP variants of equal parameter count, a GPT-2-style plain GELU MLP (Arcee,
#   llama with only the MLP changed) and llama's SwiGLU;
# - **only the seed differs**: two init seeds per variant on the same data order, and one run with the data order
#   changed;
# - **the profile is watched while it forms**: every checkpoint, step 0 (the random initialisation, the
#   architecture's own baseline on the same inputs) included, is measured exactly as notebooks 01–02 measure any
#   model, on documents held out from training.
#
# **How two profiles are compared** (`linrec.analyses.seeds`): the distance is the mean |ΔR²_lin| per block, with the
# profile
# correlation beside it, both with a paired interval that resamples the held-out windows. Measurement alone puts
# some distance between two profiles, so each distance is judged against a **noise floor**: the distance between
# one checkpoint's profile on two disjoint halves of its held-out windows. The rule
# (`linrec.claims.rules.SEEDS_RULE`,
# tested at its thresholds) calls a pair "differ" when the distance's lower bound clears the floor and the distance
# is at least 0.1 (claim 2a's minimum effect), "agree" when its upper bound is under 0.1, and otherwise inconclusive.
#
# **The zoo** (`params/zoo.yaml`): the same experiment on the paper's own contrast. The paper's models are GPT-2,
# Pythia-160m and llama-160m; here their three layouts are trained from scratch in miniature, from transformers' own
# classes (`linrec.inputs.layouts`): GPT-2 (learned positions, LayerNorm, attention then a GELU MLP), Pythia
# (partial rotary, attention and GELU MLP in parallel) and llama (RMSNorm, rotary, SwiGLU), at the same width, depth,
# heads, block parameters, tokenizer, text and steps; three init seeds each, a second data order, and a second
# training text (web, technical, stories and code together) for one layout. Every run's last checkpoint then goes
# through the whole pipeline (R²_lin with intervals, the rank-16 probe, the regimes, the swap), and the profiles'
# level and shape are split into what the layout, the text and the seed each set.
#
# **Budget.** Training takes most of the time (minutes per run of the seeds experiment and tens of minutes per zoo
# run on 2 CPU cores; each run's measured seconds are in its results folder's `timings/`), so the default profile
# does not run it: `params/training.yaml` and `params/zoo.yaml` do (`linrec figures --params params/zoo.yaml --only
# 08`), cache every run, and write `results/training/` and `results/zoo/`. Under any other profile this notebook shows
# those runs' results and names them.
#
# **Running it yourself** (notebook 01 and docs/running.md say more): under the default profile Run All trains nothing
# and shows the results of the runs `params/training.yaml` and `params/zoo.yaml` made. To experiment without touching
# tracked files, put parameters into `notebooks/overrides.yaml` (git ignores it); the cell after the parameters says
# what it set.

# %% tags=["parameters"]
profile_file = "params/default.yaml"  # the profile: a YAML file, or a name in params/ (linrec figures --params)
overrides = {}  # linrec figures injects its -p NAME VALUE, --device, --out here (Lab: notebooks/overrides.yaml)

# %%
from linrec.app.profile import load_profile

p = load_profile(profile_file, overrides, lab=True).notebook("08")  # the profile, whole (stages.Profile)
figures_dir = p.figures_dir

# %%
from linrec.analyses.seeds import approach_to_final
from linrec.base.files import project_root
from linrec.claims.rules import SEEDS_RULE, ZOO_RULE
from linrec.outputs.plots_training import fig8_training, fig8b_zoo
from linrec.outputs.results import labelled
from linrec.studies import training as study

root = project_root()

# %% [markdown]
# ## The study, run once
# `study.run(p)` (`lib/linrec/studies/training.py`) does the experiment in the order the sections below read it:
# it trains every run the profile's `training` section names (or reads it from the cache), captures every checkpoint
# on the held-out measuring text (`linrec.analyses.seeds.capture_checkpoints`), compares every pair of profiles that
# differ in one thing, and, under `params/zoo.yaml`, sends each run's last checkpoint through the whole pipeline. It
# writes every table to the profile's results folder, and what a later step reads is the table as written: the zoo's
# decomposition takes the final profiles and the comparisons from their files, as `linrec.outputs.refresh` does.
# Under a profile that trains nothing, it reads the last stored runs instead and writes nothing.

# %%
result = study.run(p)  # trains (or reads the cache), measures, compares; the tables, as written
print("trained and measured here" if result.ran else
      f"not run in this profile: the last run of params/training.yaml ({result.source})")  # fmt: skip

# %% [markdown]
# ## The runs
# Each run is cached under its full configuration (`$LINREC_CACHE/training/`); a rerun reads it. Tokens seen per
# parameter count every parameter (embeddings included) and the block parameters alone; `epochs` is how many times
# the training text was seen; `ppl_test_final` is the last checkpoint's perplexity on the held-out measuring windows.

# %% tags=["nbval-check-output"]
if result.training_runs is None:
    print("no results yet: run linrec figures --params params/training.yaml --only 08")
else:
    print(f"trained on: {', '.join(sorted(set(result.training_runs['made_on'])))}")
    print(result.sizes().round(2).to_string())

# %% [markdown]
# How far each run got: the training loss over its last 20 steps and the held-out perplexity of its last checkpoint
# on the measuring windows (never trained on).

# %%
runs_table = result.training_runs
runs_table.set_index("run")[["final_train_loss", "ppl_test_final"]] if runs_table is not None else None

# %% [markdown]
# ## Profile against profile
# Each run's last checkpoint against its own step 0, then every pair that differs in one thing: the init seed, the
# data order, or the MLP variant (at the same init seed and data order). Each row has its raw distance (mean
# |ΔR²_lin| per block), and, on the project's convention (`linrec.claims.rules`), its level (the mean ΔR²_lin: a shift
# of the whole profile) and its shape (the distance once each profile is centred on its own mean), each with its 95 %
# paired interval, its noise floor and the rule's word. The raw distance decides "learned"; the shape decides whether
# two profiles are "sharply different" (init seed against init seed, GELU against SwiGLU), the level is named beside.

# %%
table, verdict = result.training_comparisons, result.training_verdict
if table is not None:
    print("rule:", SEEDS_RULE)
    print("verdict:", verdict["word"].iloc[0], "· claim 2a from this experiment:", verdict["claim2a"].iloc[0])
    cols = ["distance", "distance_lo", "distance_hi", "floor", "outcome", "level", "level_lo", "level_hi",
            "level_outcome", "shape", "shape_lo", "shape_hi", "shape_outcome"]  # fmt: skip
table.set_index(["kind", "a", "b"])[cols] if table is not None else None

# %% [markdown]
# ## When does the profile's shape appear?
# Two views. The distance between the two init seeds of each variant at every checkpoint, against the floor: where
# the curve sits after training tells whether the seeds end alike; where it rises or falls tells when the runs part
# or meet. And each run's distance to its own last profile (`linrec.analyses.seeds.approach_to_final`): the **onset**
# is the first checkpoint from which every later one stays within 0.05 of the last profile (`ONSET_DISTANCE`); an
# onset at the last step means the profile was still moving when training stopped.

# %%
curve, profiles = result.training_distance_curve, result.training_profiles
if curve is not None:
    cols = ["distance", "distance_lo", "distance_hi", "floor", "level", "shape", "shape_lo", "shape_hi"]
    print(curve.set_index(["a", "b", "step"])[cols].round(3).to_string())
if profiles is not None:
    approach = approach_to_final(profiles)  # each checkpoint's distance to its run's last profile, and the onset
    print(approach.pivot(index="step", columns="run", values="distance_to_final").round(3).to_string())
    print(study.onsets(approach).to_string())

# %% [markdown]
# ## The whole pipeline on every trained model (the zoo)
# Under `params/zoo.yaml`, each run's last checkpoint is measured as notebooks 02–06 measure the offline models
# (`linrec.analyses.zoo`): R²_lin per block with its interval over held-out windows, the rank-16 bilinear probe's gain,
# the regime of each block, and the held-out ΔPPL of swapping each block alone for its map, with the screening
# predictors of that ΔPPL computed on train windows. One row per model and block; the time each stage took is kept
# per run beside its training time.

# %%
zoo_blocks, zoo_time = result.zoo_blocks, result.zoo_timings
if zoo_blocks is not None and result.zoo_runs is not None:
    params = result.zoo_runs.groupby("layout", sort=False)["block_params"].first()
    print(f"{zoo_blocks['model'].nunique()} models, {len(zoo_blocks)} blocks; parameters in the blocks:",
          ", ".join(f"{k} {v:,}" for k, v in params.items()))  # fmt: skip
if zoo_time is not None:  # timings/: how long this machine took, not a result
    print(f"seconds training / measuring (all runs): {zoo_time['seconds_train'].sum():.0f} / "
          f"{zoo_time.filter(like='seconds_').drop(columns='seconds_train').sum().sum():.0f}")  # fmt: skip
zoo_blocks.pivot_table(index="block", columns="model", values="r2_lin", sort=False).round(3) if zoo_blocks is not None \
    else None  # fmt: skip

# %% [markdown]
# ## Which runs trained to a plateau
# A run is a trained model here only where its held-out loss (on its own text's held-out documents, evaluated
# `n_evals` times while it trains) has stopped improving and has left its initialisation
# (`linrec.inputs.training.plateau`): **plateaued**, the held-out loss fell by less than 1 % of its value over the
# last 20 % of the steps (`PLATEAU_MAX_GAIN`, `PLATEAU_WINDOW`), and **learned**, the final held-out loss is at least
# 20 % below its step-0 value (`LEARNED_MIN_DROP`). `converged` is both. Every run is measured and shown above; the
# distances, the decomposition and every verdict below are drawn from the converged runs alone, and the verdict's
# word names any run left out.

# %%
conv_cols = ["converged", "plateaued", "learned", "heldout_gain", "heldout_drop", "init_heldout_loss",
             "final_heldout_loss", "final_heldout_ppl", "best_heldout_loss", "best_heldout_step"]  # fmt: skip
result.zoo_runs.set_index("run")[conv_cols].round(4) if result.zoo_runs is not None else None

# %% [markdown]
# ## Claim 2a as the paper states it: layout against seed against text
# "Same-width GELU models GPT-2 and Pythia-160m have sharply different profiles, so recoverability is learned, not
# architectural." Here the layouts differ and nothing else does, so the question can be asked directly: is the
# distance between two layouts' profiles larger than between two seeds of one layout, or two texts? First each kind of
# pair's mean distance, shape (mean |ΔR²_lin| of the centred profiles) and level (|Δ mean R²_lin|) apart, with 95 %
# intervals (delete-one-run jackknife; a kind with one pair carries its window interval). Then the variance
# decomposition (`linrec.analyses.factors.components`): the share of the squared distance between two runs that the
# layout, the text, the run's own draws (seed) and the measurement (residual) each hold, for the level and the shape;
# the rule (`linrec.claims.rules.ZOO_RULE`) names the factor that sets each: the largest shown, where the distance it
# adds between two runs (√(2 × component)) is at least 0.1, 2a's minimum effect; where the effect of every factor the
# zoo varies is bounded below 0.1 the part is the same for every layout, text and seed (a factor it holds fixed, as
# `params/zoo_paper.yaml` holds the text, has no component and is left out).

# %%
zoo_dist, zoo_comp, zoo_v = result.zoo_distances, result.zoo_components, result.zoo_verdict
if zoo_v is not None:
    print("rule:", ZOO_RULE)
    print("verdict:", zoo_v["word"].iloc[0], "· claim 2a from the zoo:", zoo_v["claim2a"].iloc[0])
    if zoo_dist is not None:  # None where fewer than two runs converged
        print(zoo_dist.set_index("kind").drop(columns="group").round(4).to_string())
zoo_comp.set_index(["part", "factor"]).round(4) if zoo_comp is not None else None

# %% [markdown]
# ## The across-block claims, pooled over every trained model
# Claims 3 (the probe's gain is uncorrelated with nonlinearity) and 6b (R²_lin flags the blocks that are safe to
# swap) are correlations across blocks; two offline models give too few blocks to decide them. Here every block of
# every trained model is pooled with a model effect (each model's blocks centred on their own,
# `linrec.analyses.uncertainty.correlation_test(..., groups=model)`), each claim judged by its own rule; `n_needed` is
# the number of blocks the equivalence test would need for 80 % power at this dependence. Claim 4 counts the regimes
# over all models.

# %%
result.zoo_claims.set_index("claim").round(3) if result.zoo_claims is not None else None

# %% [markdown]
# ## Swapping a block of a trained run for its map
# The zero-shot swap of notebook 06 on each run's last checkpoint: every block alone, held-out ΔPPL with its paired
# jackknife interval over the measuring windows' held-out split. The swap study makes its choices on
# `screening_windows` seeded windows of the train split, the profile's value (`linrec.analyses.swap.SwapSettings`;
# `params/training.yaml` sets 2, `params/zoo.yaml` 4, where the pipeline's screening predictors of claim 6b are
# computed on them); the held-out ΔPPL shown here is measured on windows no choice has seen.

# %%
swap = result.training_swap
swap.set_index(["run", "block"])[["r2_lin", "ppl_base", "delta_ppl", "delta_lo", "delta_hi"]] if swap is not None \
    else None  # fmt: skip

# %% [markdown]
# ## Figure 8
# Top: R²_lin of every block against the training step, one panel per run. Bottom left: the end-of-training
# profiles over their step-0 profiles. Bottom right: seed against seed while training, against the noise floor.

# %%
if profiles is not None:
    fig = fig8_training(profiles, curve, root / figures_dir / "fig8_training")
    fig
else:
    print("Figure 8 needs the seeds experiment: linrec figures --params params/training.yaml --only 08")

# %% [markdown]
# ## Figure 8b: the zoo
# Left: every trained run's final profile, coloured by layout. Middle: each kind of pair's mean shape and level
# distance. Right: the share of the level and of the shape that each factor holds.

# %%
if zoo_blocks is not None and zoo_dist is not None and zoo_comp is not None:
    fig_b = fig8b_zoo(zoo_blocks, zoo_dist, zoo_comp, root / figures_dir / "fig8b_zoo")
    fig_b
else:
    print("Figure 8b needs the zoo: linrec figures --params params/zoo.yaml --only 08")

# %% [markdown]
# ## What the numbers show
# The verdict above is the rule's; the table of comparisons is its evidence. Read the seed-against-seed row with
# the trained-against-init rows: a distance between seeds that is small beside the distance every run travelled
# from its initialisation means the profile is set by what is shared (architecture, training text, recipe), not by
# the draw; a distance of the same order means each run learns its own. Only the order of the text changes between
# runs (data order), never the text itself, so the rule never says the text sets the profile. The GELU–SwiGLU rows
# say what the MLP variant adds at equal width, split into level and shape: in the committed run of
# `params/training.yaml` their raw distance (0.219, 0.250) is all level (GELU sits 0.22–0.25 above SwiGLU on
# average), while their shape distance (0.024, 0.034) is of the order of seed against seed (0.022, 0.025).
# `labelled` at the end names every column of the verdict row.
#
# **The zoo** answers the paper's question directly: the three layouts at equal width, trained to their plateau.
# The next cell prints what its tables say (this profile's, or else the last run of `params/zoo.yaml` in
# `results/zoo/`, judged by today's rules: `linrec.outputs.zoo_text`), and the same for the zoo at the paper's width
# (`params/zoo_paper.yaml`, d = 768 and 12 blocks, trained on a GPU: `results/zoo_paper/README.md`): how far every run
# travelled from its initialisation against the distance between two init seeds (are the profiles learned?), GPT-2
# against Pythia, the paper's contrast, against seed against seed, which factor (layout, text, seed) sets the level
# and which the shape, and what those numbers make of claim 2a. The numbers are read from the tables when the cell
# runs, never typed here, so they cannot drift from the runs they describe.

# %%
from linrec.outputs.catalog import build, rule
from linrec.outputs.claim_table import judged_here
from linrec.outputs.results import Results
from linrec.outputs.zoo_text import zoo_2a, zoo_sentence

zoo_words = zoo_2a(Results(root / p.results_dir))
print(zoo_words[0] if zoo_words else "the zoo has not run: linrec figures --params params/zoo.yaml --only 08")
for claim in ("3", "4", "6b"):
    print(f"\nclaim {claim}:", zoo_sentence(Results(root / p.results_dir), rule(claim)) or "not run")
paper_width = root / "results" / "zoo_paper"
if paper_width.is_dir():  # the claims judged on its tables (a zoo's folder: 2a, 3, 4 and 6b)
    wide = Results(paper_width)
    print(
        "\nat the paper's width (results/zoo_paper):",
        {str(c.number): c.verdict for c in judged_here(wide, build(wide))},
    )

# %%
labelled(verdict).T if verdict is not None else None
