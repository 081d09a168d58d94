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
# Every notebook before this one wrote its tables to `results_dir`. This one reads them back —
# only them — and writes the report (`paper/report.md` and `.html` on the default run): the
# setup, each of the paper's seven claims beside our number and a verdict computed by a stated
# rule, the notebooks' own conclusions, every figure, the per-block table and the limitations.
# Nothing in it is typed by hand; change a result and the report changes with it
# (`tests/outputs/test_report.py` checks exactly that). Before writing, it measures how often the intervals the verdicts
# read cover the truth, by simulation at this run's own number of blocks and their dependence through depth
# (`linrec.outputs.refresh.coverage`, table `calibration`, about 10 s): the report's methods section.
#
# **Running it yourself.** The parameters cell below names the profile, `params/default.yaml`, and the cell after it
# loads it (every parameter: `lib/linrec/app/profile.py`), so Run All in Jupyter is the default run: it reads the
# tables the other notebooks wrote to `results/default/` and rewrites `paper/report.md` and the README's results
# block, as `make figures` does. To experiment without touching those, set
# `overrides = {"report_path": "scratch/report.md", "readme": None}`.

# %% tags=["parameters"]
profile_file = "params/default.yaml"  # the profile: a YAML file, or a name in params/ (linrec figures --params)
overrides = {}  # values in place of the profile's (linrec figures -p NAME VALUE, --device, --out)

# %%
from linrec.app.profile import load_profile

p = load_profile(profile_file, overrides).notebook("09")  # every parameter: linrec.app.profile
models, encoder_models, corpus, corpora, capture = p.models, p.encoder_models, p.corpus, p.corpora, p.capture
seed, probe_rows, test_windows, screening_windows = p.seed, p.probe_rows, p.test_windows, p.screening_windows
control_rows, results_dir, figures_dir, report_path = p.control_rows, p.results_dir, p.figures_dir, p.report_path
readme = p.readme

# %%
import pandas as pd
from IPython.display import Markdown

from linrec.base.files import project_root
from linrec.claims.tables import save_table
from linrec.measure.config import capture_settings
from linrec.outputs.catalog import claims
from linrec.outputs.refresh import coverage
from linrec.outputs.report import build_report, update_readme

root = project_root()
settings = capture_settings(capture)  # the capture's settings, the same in every notebook
params = dict(
    models=models, encoder_models=encoder_models, corpus=corpus, corpora=corpora,
    seq_len=settings["seq_len"], tokens=settings["tokens"], seed=seed, sample_rows=settings["sample_rows"],
    probe_rows=probe_rows, test_windows=test_windows, screening_windows=screening_windows, control_rows=control_rows,
)  # fmt: skip
# how often the intervals the verdicts read cover the truth, simulated at this run's own blocks and dependence
save_table(coverage(root / results_dir, seed=seed), "calibration", root / results_dir)
out = build_report(root / results_dir, root / figures_dir, root / report_path, params)
# a path that reads the same on every machine: relative to the checkout, or the file's name where it lies elsewhere
shown = out.relative_to(root) if out.is_relative_to(root) else out.name
print(f"wrote {shown} and its .html beside it")
if readme and update_readme(root / readme, root / results_dir, report_path):
    print(f"updated the results block of {readme}")

# %% [markdown]
# ## The verdicts at a glance

# %%
# NBVAL_CHECK_OUTPUT
pd.DataFrame([{"claim": c.number, "what": c.title, "verdict": c.verdict} for c in claims(root / results_dir)])

# %% [markdown]
# ## The report's first screen
# The tally and the claim table, as `paper/report.md` opens (its sections, with each claim's rule, evidence
# and figure, follow in the file itself).

# %%
Markdown(out.read_text().split("## Setup")[0])
