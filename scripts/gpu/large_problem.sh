#!/usr/bin/env bash
# A KernelBench level-1 problem at its own size (6 GiB in, 6 GiB out) through the evaluator on a GPU host, and what
# moving such an output from the sandboxed child to the parent costs (issue 13). Each step under its own timeout,
# never past BUDGET_S (default 560):
#   1. benchmarks/output_transfer.py --gib 6: the file way the evaluator takes today against CUDA IPC, from a child
#      started by the evaluator's own sandbox
#   2. `gpu_runner evaluate` of PROBLEM (default level1/19_ReLU) with its honest solution from
#      benchmarks/kernelbench_solutions.py, alone, the audit's samples on; the stage lines of its stderr say where
#      it was if the step's timeout cuts it
#   3. the CUDA tests of the outputs lent through device memory (tests/evaluator/test_output_ipc.py)
# nvidia-smi (utilisation, memory) and `free` are sampled every 2 s beside it. TRANSFER=0 leaves step 1 out;
# EVALUATE_S is step 2's timeout (420).
# Carry: .whl, .carry (scripts/gpu/carry.sh; .carry/kernelbench/level1 from KernelBench, .carry/kb_solutions/level1
# from kernelbench_solutions.py). Writes under $OUT: large_problem.log (each step's rc and verdict, the stage
# lines, the samples' peaks) and large_problem.tar.gz (the JSONs, the samples, steps.log).
# DEVICE=cpu rehearses it with a small CPU fixture (PROBLEM_FILE, SOLUTION_FILE and GIB override either).
set -u
cd "$(dirname "$0")/../.."
. scripts/gpu/host_env.sh
BUDGET_S=${BUDGET_S:-560}
DEVICE=${DEVICE:-cuda}
PROBLEM=${PROBLEM:-19_ReLU}
RUN_LOG=large_problem.log
. scripts/gpu/steps.sh
if [ "$DEVICE" = cpu ]; then
  PROBLEM_FILE=${PROBLEM_FILE:-tests/evaluator/fixtures/relu_scale.py}
  SOLUTION_FILE=${SOLUTION_FILE:-tests/evaluator/fixtures/relu_scale_cpp.py}
  GIB=${GIB:-0.25}
else
  PROBLEM_FILE=${PROBLEM_FILE:-.carry/kernelbench/level1/$PROBLEM.py}
  SOLUTION_FILE=${SOLUTION_FILE:-.carry/kb_solutions/level1/$PROBLEM.py}
  GIB=${GIB:-6}
fi
export KERNELHUB_AUDIT_SAMPLES=1
log "problem $PROBLEM_FILE, solution $SOLUTION_FILE, device $DEVICE"

start_sampler

if [ "${TRANSFER:-1}" = 1 ]; then
  step transfer 120 transfer.txt $PY benchmarks/output_transfer.py --gib "$GIB" --repeat 2 --out "$OUT/transfer.json"
  tail -n 2 "$OUT/transfer.txt" | cut -c1-700 | tee -a "$OUT/$RUN_LOG"
fi

step evaluate "${EVALUATE_S:-420}" evaluate.json $PY -m gpu_runner evaluate --problem "$PROBLEM_FILE" --solution "$SOLUTION_FILE" \
  --device "$DEVICE" --seed 1 --json
verdict evaluate.json
grep '^kernelhub: stage' "$OUT/evaluate.stderr" | tail -n 20 | tee -a "$OUT/$RUN_LOG"
$PY - "$OUT/evaluate.json" <<'PYEOF' | tee -a "$OUT/$RUN_LOG"
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception:
    sys.exit()
c = r.get("checks", {})
print("wall_s", r.get("wall_s"), "stage_seconds", json.dumps(r.get("stage_seconds")))
print("timed_calls", c.get("timed_calls"), "checked", c.get("timed_calls_checked"), "fresh", json.dumps(c.get("fresh_inputs")))
print("memory_plan", json.dumps(c.get("memory_plan"))[:900])
print("op_seconds", json.dumps(r.get("op_seconds"))[:1500])
PYEOF
if [ "$DEVICE" = cuda ]; then
  step ipc_tests 200 ipc_tests.txt $PY -m pytest -q -x -m cuda tests/evaluator/test_output_ipc.py
  tail -n 3 "$OUT/ipc_tests.txt" | tee -a "$OUT/$RUN_LOG"
fi
sampler_peaks
log "done"
pack large_problem
