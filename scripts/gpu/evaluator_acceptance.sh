#!/usr/bin/env bash
# The evaluator's acceptance run on a one-GPU host, in one call (docs/GPU_RUNS.md logs each run):
#   1. the CUDA tests that must hold (the timed window, forged timers, the exploit corpus, CUDA Agent workdirs,
#      the honest CUDA/Triton/CuPy solutions), several at once: builds run side by side, timed phases one at a
#      time (the host-wide device lock);
#   2. timing fidelity (benchmarks/timing_fidelity.py: plain CUDA events beside the evaluator for eager, compile
#      and the solution, with the profiler's kernel time): built beside the tests, measured after them;
#   3. beside the tests, KernelBench level-1 elementwise problems at their own sizes
#      (benchmarks/evaluator_memory.py): their memory and wall time.
# Everything goes under $OUT as it comes. Carry: .whl and .carry (scripts/gpu/carry.sh; KernelBench's level1 and
# level2 files in .carry/kernelbench, the commit in .carry/commit). Knobs: BUDGET_S (580), FIDELITY_S (360),
# CASES (fidelity case names, comma-separated substrings), TESTS, TESTS_S (300), WORKERS (4), MEMORY_S (300), MEMORY_PROBLEMS, MEMORY_ARGS
# (e.g. --scale 0.02 to shrink them), DEVICE (cuda;
# cpu rehearses it).
set -u
. "$(dirname "$0")/host_env.sh"
BUDGET_S=${BUDGET_S:-580}
FIDELITY_S=${FIDELITY_S:-360}
DEVICE=${DEVICE:-cuda}
WORKERS=${WORKERS:-4}
KB=${KB:-.carry/kernelbench}
export KERNELHUB_TIMING_BUDGET_S=${KERNELHUB_TIMING_BUDGET_S:-4}
[ -f .carry/commit ] && echo "working tree of commit $(cat .carry/commit)" >> "$OUT/machine.txt"
left() { echo $((BUDGET_S - SECONDS - 10)); }
MARK=(-m cuda); [ "$DEVICE" = cpu ] && MARK=(-m "not cuda")

# 1. The CUDA tests, several at once, in the background; 2. fidelity: every case built and loaded beside
# them (--prepare), then measured one at a time once they are done (a quiet host: builds and compiles beside a
# timed phase lengthen short calls).
TESTS=${TESTS:-tests/evaluator/test_timing_window.py tests/exploits/test_forged_timing.py \
tests/exploits/test_corpus_cuda.py tests/workdirs/test_evaluate_workdir.py tests/evaluator/test_cuda.py}
XDIST=(); [ "$WORKERS" -gt 1 ] && XDIST=(-n "$WORKERS")
rm -f "$OUT/.tests_done"
( timeout -s INT "${TESTS_S:-300}" $PY -m pytest -p no:cacheprovider -p no:randomly -q -rA "${XDIST[@]}" \
    "${MARK[@]}" $TESTS > "$OUT/tests.log" 2>&1
  echo "pytest exit: $? at ${SECONDS} s" >> "$OUT/tests.log"; touch "$OUT/.tests_done" ) &
# 3. Meanwhile KernelBench elementwise problems at their own sizes (memory and wall time), one at a time.
( for problem in ${MEMORY_PROBLEMS:-level1/19_ReLU.py}; do
    name=$(basename "$problem" .py)
    timeout -k 10 -s TERM "${MEMORY_S:-300}" $PY benchmarks/evaluator_memory.py --device "$DEVICE" \
      --problem "$KB/$problem" --json-out "$OUT/memory_$name.json" ${MEMORY_ARGS:-} >> "$OUT/memory.log" 2>&1
    echo "$name exit $? at ${SECONDS} s" >> "$OUT/memory.log"
  done; touch "$OUT/.memory_done" ) &
( while [ ! -f "$OUT/.tests_done" ] || [ ! -f "$OUT/.memory_done" ]; do sleep 2; done; touch "$OUT/.quiet" ) &
timeout -k 10 -s TERM "$FIDELITY_S" $PY benchmarks/timing_fidelity.py --device "$DEVICE" --kernelbench "$KB" \
  --prepare 3 --wait-for "$OUT/.quiet" \
  --only "${CASES:-add_small,row_mean,relu_scale_bias,MinGPTNewGelu,softmax_rows,matmul_square}" \
  --deadline-s $((FIDELITY_S - 20)) --out "$OUT/fidelity.json" > "$OUT/fidelity.log" 2>&1
echo "fidelity exit $? at ${SECONDS} s" >> "$OUT/fidelity.log"
wait; rm -f "$OUT/.tests_done" "$OUT/.memory_done" "$OUT/.quiet"

# The runner's GPU busy fraction (gpu_runner/sysinfo.gpu_busy): busy for 10 s, then idle for 10 s (BUSY_CHECK=0 skips).
[ "${BUSY_CHECK:-1}" = 1 ] && [ "$DEVICE" = cuda ] &&
timeout 60 $PY -c "import time,torch; from gpu_runner import sysinfo as s; print('first', s.gpu_busy(0)); x=torch.randn(8192,8192,device='cuda'); t=time.time()
while time.time()-t<10: x@x
torch.cuda.synchronize(); print('busy 10 s', s.gpu_busy(0)); time.sleep(10); print('idle 10 s', s.gpu_busy(0))" >> "$OUT/machine.txt" 2>&1

$PY -c 'from gpu_runner import sysinfo; print("gpu snapshot:", sysinfo.gpu_snapshot())' >> "$OUT/machine.txt" 2>&1
grep -E "^\|" "$OUT/fidelity.log" | tail -30
grep -E "passed|failed|PASSED|FAILED|SKIPPED|ERROR" "$OUT/tests.log" | tail -40
tail -5 "$OUT/memory.log" 2>/dev/null
