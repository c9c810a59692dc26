#!/usr/bin/env bash
# The tests marked `cuda` (CI has no GPU), on a GPU host, within a time budget; everything lands under $OUT.
# Usage: bash scripts/gpu/cuda_tests.sh [pytest -k expression]
# Knobs (environment):
#   TESTS     test files or folders (default: tests/evaluator tests/exploits tests/problems)
#   NAME      the log's name: $OUT/$NAME.log and $OUT/$NAME.xml (default cuda-tests)
#   WORKERS   pytest-xdist workers sharing the GPU (default 1; 3 or more at once have run out of host memory
#             on the ~1-2 GB problems: docs/GPU_RUNS.md)
#   BUDGET_S  the whole run's seconds (default 520); TEST_TIMEOUT_S one test's (default BUDGET_S - 20)
#   DEVICE    cuda; `cpu` runs the same files' other tests instead (-m "not cuda"), to rehearse without a GPU
# Carry: .whl and .carry (scripts/gpu/carry.sh); see scripts/gpu/host_env.sh.
set -u
cd "$(dirname "$0")/../.."
. scripts/gpu/host_env.sh
TESTS=${TESTS:-tests/evaluator tests/exploits tests/problems}
NAME=${NAME:-cuda-tests}
BUDGET_S=${BUDGET_S:-520}
MARK=cuda; [ "${DEVICE:-cuda}" = cpu ] && MARK="not cuda"
XDIST=(); [ "${WORKERS:-1}" -gt 1 ] && "$PY" -c 'import xdist' 2> /dev/null && XDIST=(-n "$WORKERS")
K=${1:-}
# shellcheck disable=SC2086
timeout -s INT "$BUDGET_S" "$PY" -m pytest -p no:cacheprovider -p no:django -p no:randomly -q -rA -m "$MARK" \
  "${XDIST[@]}" --timeout "${TEST_TIMEOUT_S:-$((BUDGET_S - 20))}" ${K:+-k "$K"} $TESTS \
  --junitxml="$OUT/$NAME.xml" > "$OUT/$NAME.log" 2>&1
echo "pytest exit: $? after ${SECONDS} s" >> "$OUT/$NAME.log"
grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed|pytest exit" "$OUT/$NAME.log" | cut -c1-250 | tail -60
