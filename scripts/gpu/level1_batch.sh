#!/usr/bin/env bash
# KernelBench level-1 problems at their own sizes through the real path on a GPU host (the site, its queue, `python
# -m gpu_runner serve` with its build slots), issue 13. Each step under its own timeout, never past BUDGET_S (560):
#   1. (TESTS=1) the CUDA tests of the build slots: a child with no GPU cannot reach it, a CUDA extension built
#      ahead is found built (tests/evaluator/test_prebuild.py), serve's workers (tests/site/test_serve_workers.py)
#   2. benchmarks/kernelbench_batch.py --passes PASSES (1) on the solutions of PROBLEMS (file names of
#      KernelBench's level LEVEL, 1 by default or 2, without .py, from .carry/kb_solutions/levelLEVEL), with (HARNESS=1,
#      level 1 only) KernelBench's own evaluation of
#      the same solution files after our passes (benchmarks/kernelbench_reference_harness.py, KernelBench's code
#      from .carry/kernelbench_src), so that both figures come from the same host in the same run
# nvidia-smi (utilisation, memory) and `free` are sampled every 2 s beside it.
# Carry: .whl, .carry (scripts/gpu/carry.sh; .carry/kernelbench/level1 and level2 from KernelBench, .carry/kb_solutions
# from benchmarks/kernelbench_solutions.py, .carry/kernelbench_src for HARNESS=1). Writes under $OUT: level1_batch.log
# (steps, the batch's table, the build slots' lines of serve's log, the samples' peaks) and level1_batch.tar.gz
# (the batch's JSON and logs, the samples, steps.log). Knobs: BATCH_S (the batch step's timeout), HARNESS_S.
# DEVICE=cpu rehearses it with the CPU problems and examples (no build slots there: a CPU pool has none).
set -u
cd "$(dirname "$0")/../.."
. scripts/gpu/host_env.sh
BUDGET_S=${BUDGET_S:-560}
DEVICE=${DEVICE:-cuda}
PROBLEMS=${PROBLEMS:-22_Tanh 23_Softmax 24_LogSoftmax}
LEVEL=${LEVEL:-1}
RUN_LOG=level1_batch.log
. scripts/gpu/steps.sh
log "level $LEVEL problems: $PROBLEMS; device $DEVICE; build slots ${KERNELHUB_BUILD_SLOTS:-default}"

start_sampler

if [ "${TESTS:-1}" = 1 ] && [ "$DEVICE" = cuda ]; then
  step prebuild_tests 200 prebuild_tests.txt $PY -m pytest -q -x -m cuda -p no:cacheprovider \
    tests/evaluator/test_prebuild.py tests/site/test_serve_workers.py
  tail -n 3 "$OUT/prebuild_tests.txt" | tee -a "$OUT/$RUN_LOG"
fi

SOLUTIONS=$(mktemp -d /tmp/kb-solutions.XXXX)
mkdir -p "$SOLUTIONS/level$LEVEL" "$OUT/batch_logs"
if [ "$DEVICE" = cuda ]; then
  for name in $PROBLEMS; do
    cp ".carry/kb_solutions/level$LEVEL/$name.py" "$SOLUTIONS/level$LEVEL/" || log "no solution for $name"
  done
  where=(--kernelbench .carry/kernelbench --level "$LEVEL" --pool h200)
else
  cp examples/cpu/cpp/gelu_erf_cpu.py examples/cpu/cpp/cumsum_rows_cpu.py "$SOLUTIONS/level$LEVEL/"
  where=(--problems problems/cpu --pool cpu)
fi
harness=()
reserve=0
if [ "${HARNESS:-0}" = 1 ]; then
  reserve=$((${HARNESS_S:-240} + 40))
  harness=(--kernelbench-harness "$PY benchmarks/kernelbench_reference_harness.py --kernelbench-src
.carry/kernelbench_src --problems .carry/kernelbench/level1 --solutions $SOLUTIONS/level1
--out $OUT/kernelbench_harness.json --device cuda --gpu-arch Hopper --deadline-s ${HARNESS_S:-240}" --harness-timeout $((${HARNESS_S:-240} + 40)))
fi
left=$((BUDGET_S - SECONDS - 10))
step batch "${BATCH_S:-$left}" batch.txt $PY benchmarks/kernelbench_batch.py "${where[@]}" --solutions "$SOLUTIONS" \
  --passes "${PASSES:-1}" --timeout $((${BATCH_S:-$left} - 15 - reserve)) --out "$OUT/batch.json" \
  --logs "$OUT/batch_logs" "${harness[@]}"
grep -v '^\[' "$OUT/batch.txt" | tail -n 25 | tee -a "$OUT/$RUN_LOG"
grep -h "Build ahead\|build slots" "$OUT"/batch_logs/*.log 2>/dev/null | sed 's/^.*gpu_runner.worker //' \
  | cut -c1-300 | tail -n 30 | tee -a "$OUT/$RUN_LOG"
sampler_peaks
rm -rf "$SOLUTIONS"
log "done"
pack level1_batch
