#!/usr/bin/env bash
# The head start and the drain (gpu_runner/child.py, HEAD_START_VAR; gpu_runner/drain.py), on since evaluator 1.7.1:
# is an honest short solution's window its kernel's time, is it accepted by the clock audit, and does side-stream
# work stay inside the window? On a GPU host, each step under its own timeout, never past BUDGET_S (default 560),
# with the head start's cap at HEAD_START_US (default 150, as shipped) and the children's one connection:
#   1. timing_fidelity.py on CASES (default add_small,relu_scale_bias,row_mean), built at once, with the audit's
#      samples: plain events beside the evaluator for eager, compile and solution
#   2. the evaluator on relu_small_cuda: the honest CUDA ReLU, then the side-stream exploit (its kernel on a
#      stream of its own, which ran during the spin with the driver's default connections on 2026-12-02 11:58).
#      Their builds are made while step 1 prepares its cases (WARM_RELU=1, the default: both evaluated once in the
#      background, those verdicts kept as warm_*.json and not counted), and step 1 measures only after them.
# KernelBench's own problems among CASES ("KB level1/88", "KB level1/5_") need its files in .carry/kernelbench/level1
# (cp -r ../shared/data/kernelbench/KernelBench/level1 .carry/kernelbench/; KB names another folder).
# Carry: .whl and .carry (scripts/gpu/carry.sh). Writes under $OUT: head_start.log (each step's rc, table rows and
# verdicts) and head_start.tar.gz (the JSONs, steps.log). DEVICE=cpu rehearses step 1 with the bundled CPU case.
# FIDELITY_S (320) is step 1's deadline.
set -u
cd "$(dirname "$0")/../.."
. scripts/gpu/host_env.sh
BUDGET_S=${BUDGET_S:-560}
DEVICE=${DEVICE:-cuda}
CASES=${CASES:-add_small,relu_scale_bias,row_mean}
if [ "$DEVICE" = cpu ]; then CASES="gelu_erf"; fi
RUN_LOG=head_start.log
. scripts/gpu/steps.sh
export KERNELHUB_AUDIT_SAMPLES=1 KERNELHUB_HEAD_START_MAX_US=${HEAD_START_US:-150}
log "head start up to $KERNELHUB_HEAD_START_MAX_US us a call; cases $CASES"

KB=${KB:-.carry/kernelbench}
kb=(); [ -d "$KB/level1" ] && kb=(--kernelbench "$KB")
NCASES=$(echo "$CASES" | tr ',' '\n' | wc -l)
FIDELITY_S=${FIDELITY_S:-320}
EVALUATE=(-m gpu_runner evaluate --problem tests/exploits/problems/relu_small_cuda.py --device cuda --seed 1 --json
          --solution)
wait_for=()
if [ "$DEVICE" = cuda ] && [ "${WARM_RELU:-1}" = 1 ]; then
  rm -f "$OUT/warm.done"
  ( for s in honest_relu side_stream; do
      timeout 240 $PY "${EVALUATE[@]}" "tests/exploits/solutions/${s}_cuda.py" > "$OUT/warm_$s.json" \
        2> "$OUT/warm_$s.stderr" &
    done
    wait; log "warm-up of the relu builds done"; touch "$OUT/warm.done" ) &
  wait_for=(--wait-for "$OUT/warm.done")
fi
step fidelity $((FIDELITY_S + 20)) fidelity.txt $PY benchmarks/timing_fidelity.py --device "$DEVICE" --only "$CASES" \
  --prepare "$NCASES" --deadline-s "$FIDELITY_S" --out "$OUT/fidelity.json" "${wait_for[@]}" "${kb[@]}"
rows fidelity fidelity.txt

if [ "$DEVICE" = cuda ]; then
  for s in honest_relu side_stream; do [ -s "$OUT/warm_$s.json" ] && verdict "warm_$s.json"; done
  step honest_relu 120 honest_relu.json $PY "${EVALUATE[@]}" tests/exploits/solutions/honest_relu_cuda.py
  verdict honest_relu.json
  step side_stream 100 side_stream.json $PY "${EVALUATE[@]}" tests/exploits/solutions/side_stream_cuda.py
  verdict side_stream.json
fi
log "done"
pack head_start
