#!/usr/bin/env bash
# Session 3, third call on a lent 2 x H200 host (issue #2), after moving the parent's output comparisons to the
# GPU and the CuPy import-guard fix:
#   lane A (GPU 0): CUDA tests, 3 at a time (pytest-xdist): test_cuda.py, the forged-timing and CuPy-library
#                   exploits, the CUDA exploit corpus, the device lock
#   lane B (GPU 1): the GPU examples not yet evaluated on a GPU, one at a time; then the overhead benchmark,
#                   warm, on one of them (Triton softmax_rows: no nvcc build)
# Carry: .whl (kernelguard) and .carry (bwrap), made by scripts/make_carry.sh. At most 8 files under $OUT.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
BUDGET_S=${BUDGET_S:-500}
python3 -m pip install -q --no-index --no-deps --target /tmp/kg .whl/kernelguard-*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/kg:$PWD
[ -x /usr/local/bin/bwrap ] || install -m 755 .carry/bwrap /usr/local/bin/bwrap
date -u > "$OUT/machine.txt"; nvidia-smi --query-gpu=index,name,clocks.sm,temperature.gpu --format=csv >> "$OUT/machine.txt" 2>&1
(
  export CUDA_VISIBLE_DEVICES=0 KERNELHUB_CACHE_DIR=/tmp/khcache-a; mkdir -p $KERNELHUB_CACHE_DIR
  XD=""; python3 -c 'import xdist' 2>/dev/null && XD="-n 3"
  timeout -s INT $((BUDGET_S - 20)) python3 -m pytest -p no:cacheprovider -p no:django -p no:randomly -q -rA $XD \
    --timeout $((BUDGET_S - 40)) -m cuda \
    tests/evaluator/test_cuda.py tests/exploits/test_forged_timing.py tests/exploits/test_guard_cupy_library.py \
    tests/exploits/test_corpus_cuda.py tests/evaluator/test_device_lock.py \
    > "$OUT/cuda-tests.log" 2>&1
  echo "pytest exit: $? after ${SECONDS} s" >> "$OUT/cuda-tests.log"
) &
LANE_A=$!
export CUDA_VISIBLE_DEVICES=1 KERNELHUB_CACHE_DIR=/tmp/khcache-b
python3 scripts/gpu_examples.py "$OUT/examples.jsonl" \
  ${EXAMPLES:-examples/gpu/triton/softmax_rows.py examples/gpu/cupy/gelu_erf.py examples/gpu/triton/gelu_erf.py \
  examples/gpu/cupy/layernorm_residual.py examples/gpu/triton/matmul_bias_relu.py examples/gpu/cuda/softmax_rows.py} \
  --parallel 1 --deadline-s $((BUDGET_S - 150)) > "$OUT/examples.log" 2>&1
LEFT=$((BUDGET_S - SECONDS - 15))
if [ $LEFT -gt 60 ]; then
  timeout -k 10 -s TERM $LEFT python3 benchmarks/evaluator_overhead.py --solution examples/gpu/triton/softmax_rows.py \
    --device cuda -n 3 --warm --gap 3 --deadline-s $((LEFT - 10)) --out "$OUT/overhead_warm.json" > "$OUT/overhead.log" 2>&1
fi
wait $LANE_A
python3 - "$OUT/examples.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    row = json.loads(line); r = row.get("result") or {}
    print(row["solution"], row.get("wall_s"), r.get("verdict"), r.get("rule"), r.get("runtime_us"), r.get("eager_us"),
          r.get("compile_us"), str(r.get("message") or row.get("error") or "")[:200])
    print("  stages", {k: round(v, 1) for k, v in (r.get("stage_seconds") or {}).items() if v >= 0.3})
    print("  audit", (r.get("checks") or {}).get("clock_audit"))
PY
grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed|pytest exit" "$OUT/cuda-tests.log" | cut -c1-250 | tail -40
grep -E "^run|SUMMARY" "$OUT/overhead.log" 2>/dev/null | cut -c1-600 | tail -5
echo "session3c: done in ${SECONDS} s"
