#!/usr/bin/env bash
# The capture on a GPU machine with no network that receives a copy of this checkout (issue 91): installs the carried
# wheels (.whl/*.whl: transformers, pandas and gguf at the project's pins) into /tmp/site, copies the corpora from
# .gpu/cache/corpora into a fresh LINREC_CACHE, trains the GPT-2-size layout of results/bench/gpu.csv on the device
# (d = 768, 12 blocks, vocabulary 4,096; STEPS steps), then runs what MODE names, writing under $OUT:
#   profile   benchmarks/gpu_profile.py at 204,800 tokens ($OUT/gpu_profile.json, $OUT/profile_table.txt)
#   bench     benchmarks/gpu.py at TOKENS (and BIG, e.g. 2201088) with the device/CPU agreement and the peer at PEER
#             tokens ($OUT/gpu.csv), then the profile (VARIANTS=1: each cut of issue 91 on and off first)
#   SMOL=FILE also: linrec measure of that .gguf (SmolLM2-135M, the report's model) with the default profile's capture
#             settings on the device and on the CPU ($OUT/smollm2_cuda.csv, $OUT/smollm2_cpu.csv, each one's seconds)
# Each step runs under its own time limit, so what was measured comes back. From the repository root, e.g.
#   MODE=profile STEPS=30 bash benchmarks/gpu_capture.sh
# A CPU check here (about a minute): NO_WHEELS=1 DEVICE=cpu D=64 LAYERS=2 HEADS=2 STEPS=5 TOKENS=8192 \
#   OUT=/tmp/gout bash benchmarks/gpu_capture.sh
set -u
t0=$(date +%s)
. benchmarks/gpu_env.sh
MODE="${MODE:-profile}"; DEVICE="${DEVICE:-cuda}"; D="${D:-768}"; LAYERS="${LAYERS:-12}"; HEADS="${HEADS:-12}"
STEPS="${STEPS:-150}"; TOKENS="${TOKENS:-204800}"
timeout -k 5 150 python3 -m linrec train --layout gpt2 --d-model "$D" --layers "$LAYERS" --heads "$HEADS" --vocab 4096 \
  --steps "$STEPS" --device "$DEVICE" > "$OUT/train.log" 2>&1
echo "train rc=$? $(( $(date +%s) - t0 )) s"
ck=$(grep -E '^step +[0-9]+:' "$OUT/train.log" | tail -1 | sed 's/^step *[0-9]*: *//')
[ -n "$ck" ] || { tail -20 "$OUT/train.log"; exit 4; }
if [ "$MODE" = bench ]; then
  timeout -k 5 "${BENCH_S:-240}" python3 benchmarks/gpu.py --model "$ck" --device "$DEVICE" --tokens $TOKENS ${BIG:-} \
    --peer-tokens ${PEER:-} --compare-tokens 20480 --csv "$OUT/gpu.csv" > "$OUT/gpu.log" 2>&1
  echo "bench rc=$? $(( $(date +%s) - t0 )) s"; tail -5 "$OUT/gpu.log"
fi
timeout -k 5 "${PROFILE_S:-200}" python3 benchmarks/gpu_profile.py --model "$ck" --device "$DEVICE" --tokens "$TOKENS" \
  ${VARIANTS:+--variants} --out "$OUT" > "$OUT/profile.log" 2>&1
echo "profile rc=$? $(( $(date +%s) - t0 )) s"; tail -4 "$OUT/profile.log"
if [ -n "${SMOL:-}" ]; then  # the report's own model (a .gguf path), the default profile's capture, here and on the CPU
  for dev in "$DEVICE" cpu; do
    s0=$(date +%s.%N)
    timeout -k 5 "${SMOL_S:-80}" python3 -m linrec measure --model "$SMOL" --corpus wiki --tokens 20480 --seq-len 128 \
      --seed 0 --device "$dev" --batch-size 32 --no-cache --out "$OUT/smollm2_$dev.csv" >> "$OUT/smollm2.log" 2>&1
    echo "smollm2 $dev rc=$? $(python3 -c "import time; print(round(time.time() - $s0, 1))") s"
  done
fi
echo "total $(( $(date +%s) - t0 )) s"
