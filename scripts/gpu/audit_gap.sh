#!/usr/bin/env bash
# Where the clock audit's gap goes for an honest short solution: the 3 us add (benchmarks/fidelity/add_small*) was
# rejected timing_forged on the H200 on 2026-12-02 (evaluator 1.6.1), its requests 183-355 us a call beyond the
# trusted null call's. Evaluator 1.6.2 took some 75 us a call of the guard's cost off the solution's side on the
# development machine. On a GPU host, each step under its own timeout, never past BUDGET_S (default 560):
#   1. benchmarks/guard_cost.py: the per-call guard's host cost, before and after the process-wide guards
#   2. timing_fidelity.py --only add_small with the head start off (as 1.6.x shipped; one hardware queue), with
#      the audit's samples (each run's phases, the solution's beside the null call's)
#   3. the same with the driver's default of 8 hardware queues: the control the 12:05 run lacked
#   4. if time is left: timing_fidelity.py on CASES (default relu_scale_bias,row_mean: the issue's table) as shipped
#   5. (AFTEREFFECT=1) benchmarks/forward_host_cost.py --sequence record-aftereffect on the row mean: whether the
#      solution's forward costs the host more once the op record's profiler has run in its process
# ADD=0 leaves out steps 1-3 (the add's runs), for a call about the CASES and the after-effect alone.
# Carry: .whl and .carry (scripts/gpu/carry.sh). Writes under $OUT: audit_gap.log (each step's rc and verdict line)
# and audit_gap.tar.gz (the JSONs, steps.log with each step's stderr tail).
# Knobs: BUDGET_S, CASES, DEVICE (cuda; cpu rehearses the script with the bundled CPU case on a machine without GPU).
set -u
cd "$(dirname "$0")/../.."
. scripts/gpu/host_env.sh
BUDGET_S=${BUDGET_S:-560}
DEVICE=${DEVICE:-cuda}
CASES=${CASES:-relu_scale_bias,row_mean}
ADD_CASE=add_small
PROBLEM=benchmarks/fidelity/row_mean.py
SOLUTION=benchmarks/fidelity/row_mean_solution.py
if [ "$DEVICE" = cpu ]; then
  ADD_CASE="gelu_erf"; CASES="gelu_erf"
  PROBLEM=problems/cpu/level1/gelu_erf_cpu.py; SOLUTION=examples/cpu/cpp/gelu_erf_cpu.py
fi
RUN_LOG=audit_gap.log
. scripts/gpu/steps.sh
export KERNELHUB_AUDIT_SAMPLES=1 KERNELHUB_HEAD_START_MAX_US=0 KERNELHUB_WINDOW_DRAIN=0

if [ "${ADD:-1}" = 1 ]; then
step guard_cost 60 guard_cost.txt $PY benchmarks/guard_cost.py --device "$DEVICE" --out "$OUT/guard_cost.json"
step add_one_queue 200 add_one_queue.txt env KERNELHUB_CUDA_DEVICE_MAX_CONNECTIONS=1 \
  $PY benchmarks/timing_fidelity.py --device "$DEVICE" --only "$ADD_CASE" --deadline-s 170 --out "$OUT/add_one_queue.json"
rows add_one_queue add_one_queue.txt
step add_eight_queues 150 add_eight_queues.txt env KERNELHUB_CUDA_DEVICE_MAX_CONNECTIONS=8 \
  $PY benchmarks/timing_fidelity.py --device "$DEVICE" --only "$ADD_CASE" --deadline-s 120 --out "$OUT/add_eight_queues.json"
rows add_eight_queues add_eight_queues.txt
fi
step cases 300 cases.txt $PY benchmarks/timing_fidelity.py --device "$DEVICE" --only "$CASES" --prepare 2 \
  --deadline-s 270 --out "$OUT/cases.json"
rows cases cases.txt
if [ "${AFTEREFFECT:-0}" = 1 ]; then
  step aftereffect 120 aftereffect.txt $PY benchmarks/forward_host_cost.py --sequence record-aftereffect \
    --problem "$PROBLEM" --solution "$SOLUTION" --device "$DEVICE" --out "$OUT/aftereffect.json"
  tail -n 20 "$OUT/aftereffect.txt" | tee -a "$OUT/$RUN_LOG"
fi
log "done"
pack audit_gap
