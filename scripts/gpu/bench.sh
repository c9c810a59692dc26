#!/usr/bin/env bash
# The evaluator's benchmarks on a GPU host (about 500 s), each step with its own deadline and a hard timeout
# above it, all sharing one cache directory (builds, baselines, the device lock):
#   b. benchmarks/evaluator_batch.py: 4 CUDA examples accepted on the H200 before (outputs of 32-64 MiB), 4
#      concurrent evaluations with pre-started processes; a cold pass fills the build and baseline caches, the
#      warm pass (the accepted ones up to 3 times each, new seeds, as many as its deadline allows) gives the GPU
#      busy fraction (NVML every 25 ms) and the device lock's holds
#   a. benchmarks/evaluator_reproducibility.py: matmul_square (about 4.7 ms a call) 5 times, warm (--gap 3),
#      eager re-timed every run (--fresh-baselines eager), after one warm-up evaluation
#   c. benchmarks/evaluator_overhead.py on matmul_square, warm (--gap 5) then cold, 3 runs each, the caches
#      filled by (a) (--skip-fill)
# Carry: .whl and .carry (scripts/gpu/carry.sh; see scripts/gpu/host_env.sh). Writes these files under $OUT:
# bench.log (machine, each step's rc and summary line), steps.log (the tail of each step's output) and one JSON
# per step. The JSONs are saved after every evaluation, so a step cut by its deadline keeps what it measured.
# Knobs (environment): BUDGET_S (500), EXAMPLES, CONCURRENCY (4), REPEAT (3), REPRO_SOLUTION, REPRO_N (5),
# OVERHEAD_N (3), B_S, A_S, CW_S, CC_S (each step's seconds), DEVICE (cuda; cpu with CPU examples rehearses this
# script on a machine without a GPU).
set -u
cd "$(dirname "$0")/../.."
. scripts/gpu/host_env.sh
LOGS=$(mktemp -d /tmp/gpu-bench-logs.XXXX)
BUDGET_S=${BUDGET_S:-500}
B_S=${B_S:-220}    # (b) batch: cold pass (builds, baselines), then the warm pass until its deadline
A_S=${A_S:-120}    # (a) reproducibility: a warm-up evaluation, then 5 (caches filled by (b))
CW_S=${CW_S:-70}   # (c) overhead, warm
CC_S=${CC_S:-120}  # (c) overhead, cold: whatever is left of the budget, 120 s at most
EXAMPLES=${EXAMPLES:-examples/gpu/cuda/matmul_square.py examples/gpu/cuda/matmul_bias_relu.py \
examples/gpu/cuda/attention_core.py examples/gpu/cuda/mlp_block.py}
REPRO_SOLUTION=${REPRO_SOLUTION:-examples/gpu/cuda/matmul_square.py}
DEVICE=${DEVICE:-cuda}

log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$OUT/bench.log"; }

# step NAME SECONDS COMMAND...: runs COMMAND with --deadline-s SECONDS-20 under a hard timeout of SECONDS, never
# past the run's budget; its output goes to $LOGS/NAME.log, its tail to steps.log, its SUMMARY line to bench.log.
step() {
  local name=$1 seconds=$2; shift 2
  local left=$((BUDGET_S - SECONDS - 5))
  [ "$seconds" -gt "$left" ] && seconds=$left
  if [ "$seconds" -lt 40 ]; then log "$name: skipped, ${left} s left of the budget"; return; fi
  log "$name: start (${seconds} s)"
  timeout -k 15 -s TERM "$seconds" "$@" --deadline-s $((seconds - 20)) > "$LOGS/$name.log" 2>&1
  local rc=$?
  log "$name: rc $rc"
  grep -h '^SUMMARY' "$LOGS/$name.log" | tee -a "$OUT/bench.log"
  { echo "===== $name (rc $rc)"; grep -v '^kernelhub: stage' "$LOGS/$name.log" | tail -n 150 | cut -c1-600; } \
    >> "$OUT/steps.log"
  # A step cut by its hard timeout may leave evaluation processes behind (sessions of their own, adopted by
  # init once their evaluator is gone): say so.
  local orphans; orphans=$(ps -eo ppid=,args= | awk '$1 == 1 && /gpu_runner/' | wc -l)
  [ "$orphans" != 0 ] && log "$name: $orphans orphaned evaluation processes after it"
}

# shellcheck disable=SC2086
step batch "$B_S" $PY benchmarks/evaluator_batch.py --device "$DEVICE" --concurrency "${CONCURRENCY:-4}" \
  --repeat "${REPEAT:-3}" --reserve-s 100 --solutions $EXAMPLES --out "$OUT/batch.json"
step reproducibility "$A_S" $PY benchmarks/evaluator_reproducibility.py --solution "$REPRO_SOLUTION" \
  --device "$DEVICE" -n "${REPRO_N:-5}" --fresh-baselines eager --gap 3 --out "$OUT/reproducibility.json"
step overhead_warm "$CW_S" $PY benchmarks/evaluator_overhead.py --solution "$REPRO_SOLUTION" --device "$DEVICE" \
  -n "${OVERHEAD_N:-3}" --warm --gap 5 --skip-fill --out "$OUT/overhead_warm.json"
step overhead_cold "$CC_S" $PY benchmarks/evaluator_overhead.py --solution "$REPRO_SOLUTION" --device "$DEVICE" \
  -n "${OVERHEAD_N:-3}" --skip-fill --out "$OUT/overhead_cold.json"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw,memory.used --format=csv >> "$OUT/bench.log" 2>&1
log "bench: done"
grep -h '^SUMMARY' "$OUT/bench.log"
