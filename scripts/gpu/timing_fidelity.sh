#!/usr/bin/env bash
# On a one-GPU host, in one call: the timing window's fidelity (benchmarks/timing_fidelity.py: plain CUDA events
# beside the evaluator, eager, compile and solution, with the profiler's kernel time), then the defences that must
# still hold with the new window (the window and escaped-work tests, the forged-timer tests, the CUDA exploit
# corpus), as long as the budget lasts. Every figure goes under $OUT as it comes.
# Carry: .whl (kernelguard; scripts/make_carry.sh), .carry (bwrap; KernelBench's level1/level2 files copied to
# .carry/kernelbench from a KernelBench checkout). Knobs: BUDGET_S (560), FIDELITY_S (330), DEVICE (cuda; cpu
# rehearses the script here), TESTS.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
BUDGET_S=${BUDGET_S:-560}
FIDELITY_S=${FIDELITY_S:-330}
DEVICE=${DEVICE:-cuda}
PY=${PY:-python3}
export KERNELHUB_CACHE_DIR=${KERNELHUB_CACHE_DIR:-/tmp/khcache}; mkdir -p "$KERNELHUB_CACHE_DIR"
export KERNELHUB_TIMING_BUDGET_S=${KERNELHUB_TIMING_BUDGET_S:-5}
if [ -d .whl ] && ! $PY -c 'import kernelguard' 2>/dev/null; then
  $PY -m pip install -q --no-index --no-deps --target /tmp/kg .whl/kernelguard-*.whl > /dev/null 2>&1
  export PYTHONPATH=/tmp/kg:$PWD
else
  export PYTHONPATH=$PWD
fi
if ! command -v bwrap > /dev/null && [ -f .carry/bwrap ]; then install -m 755 .carry/bwrap /usr/local/bin/bwrap; fi
{ date -u; git log -1 --format='commit %h %s' 2>/dev/null; nproc; free -g | head -2
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.used,temperature.gpu,utilization.gpu --format=csv 2>&1
  $PY -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'; } > "$OUT/machine.txt" 2>&1
left() { echo $((BUDGET_S - SECONDS - 10)); }
MARK=(-m cuda); [ "$DEVICE" = cpu ] && MARK=(-m "not cuda")

# 1. Fidelity: the acceptance table.
KB=${KB:-.carry/kernelbench}
timeout -k 10 -s TERM "$FIDELITY_S" $PY benchmarks/timing_fidelity.py --device "$DEVICE" --kernelbench "$KB" \
  --parallel 3 --deadline-s $((FIDELITY_S - 30)) --out "$OUT/fidelity.json" > "$OUT/fidelity.log" 2>&1
echo "exit $? at ${SECONDS} s" >> "$OUT/fidelity.log"

# 2. The defences, with the new window.
TESTS=${TESTS:-tests/evaluator/test_timing_window.py tests/exploits/test_forged_timing.py \
tests/exploits/test_corpus_cuda.py}
if [ "$(left)" -gt 40 ]; then
  timeout -s INT "$(left)" $PY -m pytest -p no:cacheprovider -p no:randomly -q -rA "${MARK[@]}" $TESTS \
    > "$OUT/tests.log" 2>&1
  echo "pytest exit: $? at ${SECONDS} s" >> "$OUT/tests.log"
fi
tail -25 "$OUT/fidelity.log"; grep -E "passed|failed|PASSED|FAILED|SKIPPED|ERROR" "$OUT/tests.log" | tail -40
