#!/usr/bin/env bash
# Two runs at once on a host with two GPUs, each a command line of scripts/gpu/ (or any), each with its own
# GPU and its own folder of results ($OUT/a, $OUT/b); waits for both.
#   LANE_A, LANE_B   the two command lines, e.g.
#     LANE_A="bash scripts/gpu/cuda_tests.sh" LANE_B="bash scripts/gpu/run_examples.sh" bash scripts/gpu/side_by_side.sh
#   GPU_A (0), GPU_B (1)   CUDA_VISIBLE_DEVICES of each lane; empty: the lane sees every GPU (two_gpu_serve.sh)
#   SHARED_CACHE=1   both lanes use one KERNELHUB_CACHE_DIR, so the host-wide device lock (gpu_runner/gpulock.py)
#                    keeps their timed phases apart where they share a GPU; by default each lane has its own
#   BUDGET_S (540)   passed to both lanes
# The host's CPUs and memory are shared: timings of one lane are taken beside the other's work.
set -u
cd "$(dirname "$0")/../.."
. scripts/gpu/host_env.sh
: "${LANE_A:?set LANE_A and LANE_B to the two command lines}" "${LANE_B:?set LANE_B}"
export BUDGET_S=${BUDGET_S:-540}
lane() {  # lane NAME GPU COMMAND
  local name=$1 gpu=$2 command=$3 cache=$KERNELHUB_CACHE_DIR
  [ "${SHARED_CACHE:-}" = 1 ] || cache="$KERNELHUB_CACHE_DIR-$name"
  mkdir -p "$OUT/$name" "$cache"
  echo "$command" > "$OUT/$name/command.txt"
  if [ -n "$gpu" ]; then export CUDA_VISIBLE_DEVICES=$gpu; else unset CUDA_VISIBLE_DEVICES; fi
  OUT="$OUT/$name" KERNELHUB_CACHE_DIR="$cache" bash -c "$command" > "$OUT/$name/lane.log" 2>&1
  echo "lane $name exit: $? after ${SECONDS} s" >> "$OUT/$name/lane.log"
}
lane a "${GPU_A-0}" "$LANE_A" &
A=$!
lane b "${GPU_B-1}" "$LANE_B" &
B=$!
wait $A $B
for name in a b; do echo "===== lane $name: $(cat "$OUT/$name/command.txt")"; tail -40 "$OUT/$name/lane.log"; done
