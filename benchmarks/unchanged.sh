#!/usr/bin/env bash
# Before/after check for a change that should move no number and no word (issue 86): rebuild every committed results
# folder's summaries with today's code (`linrec.outputs.refresh`), regenerate each folder's report, the README block and
# paper/report.md (`linrec report`), then list what moved. An empty list is the pass; run it from the repository root
# (or a git worktree of it: this checkout's lib/ comes first on PYTHONPATH). About 6 min on 2 cores. PY names the
# Python (default .venv/bin/python).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
export PYTHONPATH="$PWD/lib${PYTHONPATH:+:$PYTHONPATH}"
for d in default documents full curve zoo zoo_paper training quant split; do
  "$PY" -m linrec.outputs.refresh "results/$d" > /dev/null
done
for p in default documents full curve; do
  "$PY" -m linrec report --params "params/$p.yaml" > /dev/null
done
git status --short -- results paper README.md
