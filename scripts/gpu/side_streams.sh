#!/usr/bin/env bash
# Does work on a stream of the solution's own escape the window while the GPU flushes and spins for the host's
# head start, and does one hardware queue per context (CUDA_DEVICE_MAX_CONNECTIONS=1) close that? On a GPU host,
# each step under its own timeout, never past BUDGET_S (default 540):
#   1. benchmarks/side_stream_hiding.py with the driver's default connections, then with one: where a kernel
#      launched on a side stream (torch, torch at high priority, CuPy) begins and ends relative to the start event
#   2. the evaluator with the head start on (KERNELHUB_HEAD_START_MAX_US=300) and one connection: the honest
#      CUDA ReLU and the side-stream exploit on relu_small_cuda (a kernel of a few microseconds), then the exploit
#      and the honest kernel with the default connections (the gap, as the exploit corpus would see it); the
#      clock audit's samples kept (KERNELHUB_AUDIT_SAMPLES=1)
#   3. if time is left: timing_fidelity.py on add_small with the head start on and one connection
# Knobs: BUDGET_S; HEAD_START_US (300; 0: the evaluator's steps with the head start off, as 1.6.x shipped); SKIP_PROBE=1
# (step 1 left out). The evaluator's children get one connection unless KERNELHUB_CUDA_DEVICE_MAX_CONNECTIONS says
# otherwise (gpu_runner/sandbox.py); the "default" steps set it to the driver's default, 8.
# Carry: .whl and .carry (scripts/gpu/carry.sh). Writes under $OUT: side_streams.log (each step's rc and what it
# said) and side_streams.tar.gz (one JSON per step, steps.log with each step's stderr tail): few files, as a
# device call returns only a handful.
set -u
cd "$(dirname "$0")/../.."
. scripts/gpu/host_env.sh
BUDGET_S=${BUDGET_S:-540}
HEAD_START_US=${HEAD_START_US:-300}
PROBLEM=tests/exploits/problems/relu_small_cuda.py

RUN_LOG=side_streams.log
. scripts/gpu/steps.sh

EVALUATE=(-m gpu_runner evaluate --problem "$PROBLEM" --device cuda --seed 1 --json --solution)
SOLUTIONS=tests/exploits/solutions

if [ -z "${SKIP_PROBE:-}" ]; then
step probe_default 60 side_streams_default.txt \
  $PY benchmarks/side_stream_hiding.py --spin-us "$HEAD_START_US" --out "$OUT/side_streams_default.json"
step probe_one_connection 60 side_streams_one_connection.txt \
  env CUDA_DEVICE_MAX_CONNECTIONS=1 \
  $PY benchmarks/side_stream_hiding.py --spin-us "$HEAD_START_US" --out "$OUT/side_streams_one_connection.json"
fi

export KERNELHUB_HEAD_START_MAX_US=$HEAD_START_US KERNELHUB_AUDIT_SAMPLES=1
# evaluation NAME SECONDS CONNECTIONS SOLUTION: the evaluator's verdict on $PROBLEM, in NAME.json, then its line
evaluation() {
  step "$1" "$2" "$1.json" env KERNELHUB_CUDA_DEVICE_MAX_CONNECTIONS="$3" $PY "${EVALUATE[@]}" "$SOLUTIONS/$4.py"
  verdict "$1.json"
}
evaluation honest_one_connection 220 1 honest_relu_cuda
evaluation side_stream_one_connection 120 1 side_stream_cuda
evaluation side_stream_default 120 8 side_stream_cuda
evaluation honest_default 120 8 honest_relu_cuda

step fidelity_add_one_connection 200 fidelity_add_one_connection.txt \
  env KERNELHUB_CUDA_DEVICE_MAX_CONNECTIONS=1 $PY benchmarks/timing_fidelity.py --device cuda --only add_small --deadline-s 170 \
  --out "$OUT/fidelity_add_one_connection.json"
log "done"
pack side_streams
