#!/usr/bin/env bash
# One ~9.5-minute call on a lent 2 x H200 host (session 2): two lanes at once, sharing one cache directory, so
# the host-wide device lock (gpu_runner/gpulock.py) keeps their timed phases apart.
#   lane 1: the serve demo (scripts/h200_x2.sh: real site, `gpu_runner serve` with one worker per GPU, examples
#           never evaluated on a GPU before, then the runner's CUDA calibration tests)
#   lane 2: the CUDA tests of the evaluator and the exploit corpus, on GPU 0, highest priority first
# Carry: .whl and .carry (scripts/make_carry.sh). Everything lands under $OUT.
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/lane2"
export KERNELHUB_CACHE_DIR=/tmp/khcache; mkdir -p "$KERNELHUB_CACHE_DIR"
BUDGET_S=${BUDGET_S:-560}
python3 -m pip install -q --no-index --no-deps --target /tmp/kg .whl/kernelguard-*.whl > /dev/null 2>&1
(
  export PYTHONPATH=/tmp/kg:$PWD CUDA_VISIBLE_DEVICES=0
  [ -x /usr/local/bin/bwrap ] || install -m 755 .carry/bwrap /usr/local/bin/bwrap
  XD=""; python3 -c 'import xdist' 2>/dev/null && XD="-n ${LANE2_WORKERS:-3}"
  T=$((BUDGET_S - 20))
  timeout -s INT 100 python3 -m pytest -p no:cacheprovider -p no:django -p no:randomly -q -rA --timeout 90 \
    tests/evaluator/test_sandbox_identity.py tests/evaluator/test_isolation.py tests/exploits/test_guard_record_probe.py \
    > "$OUT/lane2/identity-tests.log" 2>&1
  python3 -c "import torch; print('itt available:', torch.profiler.itt.is_available())" >> "$OUT/lane2/identity-tests.log" 2>&1
  echo "pytest exit: $?" >> "$OUT/lane2/identity-tests.log"
  T=$((BUDGET_S - 20 - SECONDS))
  timeout -s INT $T python3 -m pytest -p no:cacheprovider -p no:django -p no:randomly -q -rA $XD --timeout 400 -m cuda \
    tests/exploits/test_guard_gpu_libraries.py tests/exploits/test_guard_precision_and_streams.py \
    tests/evaluator/test_cuda.py tests/evaluator/test_device_lock.py tests/evaluator/test_warm_pool.py \
    tests/exploits/test_corpus_cuda.py tests/exploits/test_guard_library_fallback.py \
    --junitxml="$OUT/lane2/cuda-tests.xml" > "$OUT/lane2/cuda-tests.log" 2>&1
  echo "pytest exit: $?" >> "$OUT/lane2/cuda-tests.log"
) &
LANE2=$!
BUDGET_S=$BUDGET_S CAL_S=${CAL_S:-100} EXAMPLES="${EXAMPLES:-examples/gpu/triton/softmax_rows.py examples/gpu/cupy/gelu_erf.py examples/gpu/cuda/softmax_rows.py examples/gpu/cuda/conv2d_3x3.py examples/gpu/triton/gelu_erf.py examples/gpu/cupy/layernorm_residual.py}" \
  bash scripts/h200_x2.sh
wait $LANE2
tail -3 "$OUT/lane2/identity-tests.log"; grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed|pytest exit" "$OUT/lane2/cuda-tests.log" | cut -c1-230 | tail -40
