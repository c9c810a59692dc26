#!/usr/bin/env bash
# The next GPU call for issue #2, on a lent one-H200 host (about 550 s), in order of what matters most:
#   1. the forged-timing tests on CUDA, alone on a quiet GPU (the clock audit's rejection has not been seen on a
#      GPU: in session 3 it did not bind, its lower bounds were -38 to -77 ms);
#   2. the three Triton examples (never evaluated on a GPU) and one CUDA example whose audit did not bind in
#      session 3, each with KERNELHUB_AUDIT_SAMPLES=1: every audited call's raw figures, and the trusted null
#      call's own phases, land in examples.jsonl, to find out where the null calls' extra tens of ms go;
#   3. the CUDA tests not re-run since session 3's timing changes, while the budget lasts.
# Then scripts/h200_bench.sh in a call of its own. Carry: .whl (kernelguard) and .carry (bwrap), made by
# scripts/make_carry.sh. Writes at most 6 files under $OUT. Knobs: BUDGET_S (550), DEVICE (cuda; cpu with
# EXAMPLES of the CPU track rehearses the script without a GPU), EXAMPLES, TESTS, RERUN_TESTS.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
BUDGET_S=${BUDGET_S:-550}
DEVICE=${DEVICE:-cuda}
PY=${PY:-python3}
export KERNELHUB_CACHE_DIR=${KERNELHUB_CACHE_DIR:-/tmp/khcache}; mkdir -p "$KERNELHUB_CACHE_DIR"
if [ -d .whl ]; then
  $PY -m pip install -q --no-index --no-deps --target /tmp/kg .whl/kernelguard-*.whl > /dev/null 2>&1
fi
export PYTHONPATH=/tmp/kg:$PWD
if ! command -v bwrap > /dev/null && [ -f .carry/bwrap ]; then install -m 755 .carry/bwrap /usr/local/bin/bwrap; fi
{ date -u; git log -1 --format='commit %h %s' 2>/dev/null; nproc
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,utilization.gpu --format=csv 2>&1; } \
  > "$OUT/machine.txt"
left() { echo $((BUDGET_S - SECONDS - 10)); }
MARK=(-m cuda); [ "$DEVICE" = cpu ] && MARK=(-m "not cuda")

# 1. Forged times, alone.
TESTS=${TESTS:-tests/exploits/test_forged_timing.py}
timeout -s INT 150 $PY -m pytest -p no:cacheprovider -p no:randomly -q -rA --timeout 140 "${MARK[@]}" $TESTS \
  > "$OUT/forged.log" 2>&1
echo "pytest exit: $? at ${SECONDS} s" >> "$OUT/forged.log"

# 2. Examples, with the audit's samples.
if [ "$DEVICE" = cpu ]; then
  EXAMPLES=${EXAMPLES:-examples/cpu/cpp/cumsum_rows_cpu.py}
else
  EXAMPLES=${EXAMPLES:-examples/gpu/triton/softmax_rows.py examples/gpu/triton/gelu_erf.py \
examples/gpu/cuda/softmax_rows.py examples/gpu/triton/matmul_bias_relu.py}
fi
KERNELHUB_AUDIT_SAMPLES=1 timeout -k 10 -s TERM $(( $(left) > 60 ? $(left) - 150 : 30 )) \
  $PY scripts/gpu_examples.py "$OUT/examples.jsonl" $EXAMPLES --device "$DEVICE" --parallel 1 \
  --deadline-s $(( $(left) > 60 ? $(left) - 170 : 20 )) > "$OUT/examples.log" 2>&1

# 3. What has not run on a GPU since session 3's timing changes.
RERUN_TESTS=${RERUN_TESTS:-tests/exploits/test_guard_precision_and_streams.py \
tests/exploits/test_guard_library_fallback.py tests/exploits/test_guard_gpu_libraries.py tests/evaluator/test_warm_pool.py}
if [ "$(left)" -gt 60 ]; then
  timeout -s INT "$(left)" $PY -m pytest -p no:cacheprovider -p no:randomly -q -rA "${MARK[@]}" $RERUN_TESTS \
    > "$OUT/rerun.log" 2>&1
  echo "pytest exit: $? at ${SECONDS} s" >> "$OUT/rerun.log"
fi

# A summary, with what the samples say about where the null calls' time went.
$PY - "$OUT/examples.jsonl" > "$OUT/summary.txt" 2>&1 <<'PY'
import json, statistics, sys
try:
    rows = [json.loads(line) for line in open(sys.argv[1])]
except OSError:
    rows = []
for row in rows:
    r = row.get("result") or {}
    audit = (r.get("checks") or {}).get("clock_audit") or {}
    print(row.get("solution"), row.get("wall_s"), r.get("verdict"), r.get("rule"), r.get("runtime_us"),
          r.get("eager_us"), r.get("compile_us"), str(r.get("message") or row.get("error") or "")[:200])
    print("  audit", {k: v for k, v in audit.items() if k != "samples"})
    samples = audit.get("samples") or []
    if samples:
        own = sorted(s["request_wall_us"] - s["null_wall_us"] for s in samples)
        slow = [s for s in samples if s["null_wall_us"] > s["request_wall_us"] + 1000]
        print(f"  samples {len(samples)}: own (wall) min {own[0]:.0f} median {statistics.median(own):.0f} us; "
              f"{len(slow)} null calls over their request by 1 ms or more")
        for s in slow[:8]:
            print("   ", {k: (round(v) if isinstance(v, float) else v) for k, v in s.items() if k != "null_phases_us"},
                  {k: round(v) for k, v in (s.get("null_phases_us") or {}).items()})
PY
{ grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed|pytest exit" "$OUT/forged.log" "$OUT/rerun.log" 2>/dev/null \
    | cut -c1-300 | tail -40; } >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
echo "h200_next: done in ${SECONDS} s"
