#!/usr/bin/env bash
# The whole zoo (params/zoo.yaml: 12 runs) trained and measured on a GPU without papermill, its results tables
# written to OUT (default results/zoo_gpu). Run from the repository root:
#   bash benchmarks/gpu_zoo.sh [OUT] [more benchmarks/gpu_zoo.py options, e.g. --precision bf16 --workers 8]
# Needs the corpora in $LINREC_CACHE (default ~/.cache/linrec; a machine with no network: copy corpora/ there).
set -euo pipefail
out="${1:-results/zoo_gpu}"
shift || true
export PYTHONPATH="$PWD/lib${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
mkdir -p "$out"
python3 benchmarks/gpu_zoo.py --out "$out" --device cuda "$@" 2>&1 | tee "$out/gpu_zoo.log"
