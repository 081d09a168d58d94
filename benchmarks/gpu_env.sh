# Sourced by benchmarks/gpu_offline.sh and benchmarks/gpu_capture.sh on a GPU machine with no network that receives a
# copy of this checkout: $OUT made; the carried wheels (.whl/*.whl, the project's pins of what that machine lacks) into
# /tmp/site unless NO_WHEELS is set; lib/ on PYTHONPATH; a fresh LINREC_CACHE (LINREC_CACHE_GPU, default /tmp/lcache)
# holding the carried corpora (.gpu/cache/corpora); the versions seen in $OUT/versions.txt.
OUT="${OUT:-/tmp/gpu_out}"; mkdir -p "$OUT"
if [ -d .whl ] && [ -z "${NO_WHEELS:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD/lib${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false LINREC_PROGRESS=0
export LINREC_CACHE="${LINREC_CACHE_GPU:-/tmp/lcache}"
mkdir -p "$LINREC_CACHE" && cp -r .gpu/cache/corpora "$LINREC_CACHE/"
{ python3 -c "import torch, transformers, pandas, numpy; print('torch', torch.__version__, 'transformers', transformers.__version__, 'pandas', pandas.__version__, 'numpy', numpy.__version__, 'cuda', torch.cuda.is_available())"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null; nproc; } | tee "$OUT/versions.txt"
