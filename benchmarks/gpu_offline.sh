#!/usr/bin/env bash
# benchmarks/gpu_zoo.py on a GPU machine with no network that receives a copy of this checkout (how results/zoo and
# results/zoo_paper were made on 2026-11-28, one call each): installs carried wheels (.whl/*.whl, e.g. transformers
# and pandas at the project's pins) into /tmp/site, copies the corpora from .gpu/cache/corpora into a fresh
# LINREC_CACHE, runs gpu_zoo.py with "$@" under a time limit (INNER_S seconds, default 540, so what it wrote comes
# back when it runs long), and packs its output folder into $OUT/zoo_paper.tgz beside the log ($OUT/gpu_zoo.log) and
# the versions seen ($OUT/versions.txt). Run from the repository root, e.g.
#   bash benchmarks/gpu_offline.sh --profile zoo_paper --workers 6
#   INNER_S=350 bash benchmarks/gpu_offline.sh --profile zoo --workers 12
# A CPU check here: NO_WHEELS=1 OUT=/tmp/gout bash benchmarks/gpu_offline.sh --profile zoo_paper --device cpu \
#   --precision float32 --train steps=20 --train d_model=32 --train n_layers=2 --train n_heads=2 --train vocab=512 \
#   --train n_evals=4 -p train_measure_tokens 4096 -p train_probe_rows 512                      (about 50 s)
set -u
t0=$(date +%s)
. benchmarks/gpu_env.sh
res=/tmp/zp/zoo_paper
timeout -k 15 "${INNER_S:-540}" python3 benchmarks/gpu_zoo.py --out "$res" "$@" > "$OUT/gpu_zoo.log" 2>&1
rc=$?
tail -60 "$OUT/gpu_zoo.log"
tar czf "$OUT/zoo_paper.tgz" -C /tmp/zp zoo_paper
echo "rc=$rc total $(( $(date +%s) - t0 )) s"
