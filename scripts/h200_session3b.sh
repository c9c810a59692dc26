#!/usr/bin/env bash
# Session 3, second call on a lent 2 x H200 host (issue #2), after the clock audit and the faster fingerprints:
#   lane A (GPU 0): the CUDA tests (evaluator, exploits incl. forged timings and CuPy library calls, device lock,
#                   warm pool, problem shapes), then the overhead benchmark, warm, on matmul_square
#   lane B (GPU 1): the GPU examples not yet evaluated on a GPU, one at a time (op_seconds in each result)
# Carry: .whl (kernelguard) and .carry (bwrap), made by scripts/make_carry.sh. At most 8 files under $OUT.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
BUDGET_S=${BUDGET_S:-555}
python3 -m pip install -q --no-index --no-deps --target /tmp/kg .whl/kernelguard-*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/kg:$PWD
[ -x /usr/local/bin/bwrap ] || install -m 755 .carry/bwrap /usr/local/bin/bwrap
{ date -u; nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  python3 -c 'import cupy, triton, torch; print("cupy", cupy.__version__, "triton", triton.__version__, "torch", torch.__version__)'; } > "$OUT/machine.txt" 2>&1
(
  export CUDA_VISIBLE_DEVICES=0 KERNELHUB_CACHE_DIR=/tmp/khcache-a; mkdir -p $KERNELHUB_CACHE_DIR
  T=${TESTS_S:-360}
  timeout -s INT $T python3 -m pytest -p no:cacheprovider -p no:django -p no:randomly -q -rA --timeout 300 -m cuda \
    tests/evaluator/test_cuda.py tests/exploits/test_forged_timing.py tests/exploits/test_guard_cupy_library.py \
    tests/exploits/test_corpus_cuda.py tests/evaluator/test_device_lock.py tests/exploits/test_guard_gpu_libraries.py \
    tests/exploits/test_guard_precision_and_streams.py tests/exploits/test_guard_library_fallback.py \
    tests/evaluator/test_warm_pool.py tests/evaluator/test_problem_shapes_cuda.py \
    > "$OUT/cuda-tests.log" 2>&1
  echo "pytest exit: $? after ${SECONDS} s" >> "$OUT/cuda-tests.log"
  LEFT=$((BUDGET_S - SECONDS - 10))
  if [ $LEFT -gt 60 ]; then
    timeout -k 10 -s TERM $LEFT python3 benchmarks/evaluator_overhead.py --solution examples/gpu/cuda/matmul_square.py \
      --device cuda -n 3 --warm --gap 5 --deadline-s $((LEFT - 10)) --out "$OUT/overhead_warm.json" > "$OUT/overhead.log" 2>&1
  fi
) &
LANE_A=$!
CUDA_VISIBLE_DEVICES=1 KERNELHUB_CACHE_DIR=/tmp/khcache-b python3 scripts/gpu_examples.py "$OUT/examples.jsonl" \
  ${EXAMPLES:-examples/gpu/triton/softmax_rows.py examples/gpu/cupy/gelu_erf.py examples/gpu/cuda/softmax_rows.py \
  examples/gpu/triton/gelu_erf.py examples/gpu/cupy/layernorm_residual.py examples/gpu/triton/matmul_bias_relu.py \
  examples/gpu/cuda/rmsnorm_silu_gate.py examples/gpu/cuda/scale_mask_softmax.py} \
  --parallel 1 --deadline-s $((BUDGET_S - 15)) > "$OUT/examples.log" 2>&1
wait $LANE_A
python3 - "$OUT/examples.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    row = json.loads(line); r = row.get("result") or {}
    print(row["solution"], row.get("wall_s"), r.get("verdict"), r.get("rule"), r.get("runtime_us"), r.get("eager_us"),
          str(r.get("message") or row.get("error") or "")[:200])
    print("  stages", {k: round(v, 1) for k, v in (r.get("stage_seconds") or {}).items() if v >= 0.5})
    print("  solution ops", (r.get("op_seconds") or {}).get("solution"))
    print("  audit", (r.get("checks") or {}).get("clock_audit"), (r.get("checks") or {}).get("timing_phases_us_reported"))
PY
grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed|pytest exit" "$OUT/cuda-tests.log" | cut -c1-250 | tail -70
grep -E "^run|SUMMARY" "$OUT/overhead.log" 2>/dev/null | cut -c1-400 | tail -5
echo "session3b: done in ${SECONDS} s"
