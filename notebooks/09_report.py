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
# # 09 · The reproduction report
#
# **In plain words:** read back every table the notebooks wrote, apply each claim's stated rule to its numbers, and
# write the report; nothing in it is typed by hand.
#
# Every notebook before this one wrote its tables to `results_dir`. This one reads them back —
# only them — and writes the report (`paper/report.md` and `.html` on the default run): the
# setup, each of the paper's seven claims beside our number and a verdict computed by a stated
# rule, the notebooks' own conclusions, every figure, the per-block table and the limitations.
# Nothing in it is typed by hand; change a result and the report changes with it
# (`tests/outputs/test_report.py` checks exactly that). Before writing, it measures how often the intervals the verdicts
# read cover the truth, by simulation at this run's own number of blocks and their dependence through depth
# (`linrec.analyses.coverage.coverage`, table `calibration`; its seconds in `timings/`): the report's methods section.
#
# **Running it yourself.** The parameters cell below names the profile, `params/default.yaml`, and the cell after it
# loads it (every parameter: `lib/linrec/studies/stages.py`), so Run All in Jupyter is the default run: it reads the
# tables the other notebooks wrote to `results/default/` and rewrites `paper/report.md` and the README's results
# block, as `make figures` does. To experiment without touching those or any tracked file, write
# `{report_path: scratch/report.md, readme: null}` into `notebooks/overrides.yaml` (git ignores it; `linrec figures`
# never reads it).

# %% tags=["parameters"]
profile_file = "params/default.yaml"  # the profile: a YAML file, or a name in params/ (linrec figures --params)
overrides = {}  # linrec figures injects its -p NAME VALUE, --device, --out here (Lab: notebooks/overrides.yaml)

# %%
from linrec.app.profile import load_profile

p = load_profile(profile_file, overrides, lab=True).notebook("09")  # the profile, whole (stages.Profile)
results_dir = p.results_dir

# %% [markdown]
# ## Measure the intervals, then write the report
# One call (`linrec.outputs.report.write_report`) does the notebook's work, in this order. First the methods table:
# every across-block correlation a verdict reads (claims 3, 6b and 7b, the routing claim) is simulated at this run's own
# number of blocks and their dependence through depth (each series an AR(1) through the blocks, its coefficient measured
# on the data), at ρ = 0, where a false "effect" is counted too; and every held-out window interval is simulated at this
# run's number of windows. The report can then say how often each interval covers the truth here, with these few blocks
# and windows, not in general (`linrec.analyses.calibration`, table `calibration`). Then the report itself
# (`build_report`), from the results tables alone, with the verdicts of the profiles the profile names beside its own
# (`beside`: full's, the zoo's and the paper-width zoo's on the default run), and, on the default run, the README's
# results block. With the report written, each rule's hash is recorded with its verdict (`rule_hashes`); a rule whose
# hash changed since the last record is logged with the verdict before and after (`rule_changes`,
# `paper/rules-changelog.md`; `linrec.outputs.rule_log`). `linrec report --params P` writes the same report, block and
# record from the same tables and setup (`report_params`), without measuring the coverage again.

# %%
from IPython.display import Markdown

from linrec.base.files import project_root
from linrec.outputs.claim_table import verdict_table
from linrec.outputs.report import write_report

report = write_report(p)  # calibration, the report (.md, .html), the rules' record and, with readme set, its block
print(report)

# %% [markdown]
# ## The verdicts at a glance
# Each verdict below is a rule applied to numbers (`linrec.claims.rules`: its thresholds named and tested at their
# edges), never a judgement typed in: the catalog (`linrec.outputs.catalog`) runs each claim's rule on the tables in
# `results_dir`, and `verdict_table` lists the claims with their verdicts. A verdict changes only when a table does.

# %% tags=["nbval-check-output"]
verdict_table(project_root() / results_dir)

# %% [markdown]
# ## The report's first screen
# The tally and the claim table, as `paper/report.md` opens (its sections, with each claim's rule, evidence
# and figure, follow in the file itself).

# %%
Markdown(report.first_screen())
