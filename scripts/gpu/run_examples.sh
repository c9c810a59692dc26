#!/usr/bin/env bash
# The bundled example solutions, evaluated on a GPU host through the CLI (scripts/gpu/examples.py), one JSON
# line per result in $OUT/examples.jsonl as each lands, then a summary of each: verdict, times, where the wall
# time went (stage_seconds, the solution's op_seconds) and the clock audit.
# Knobs (environment):
#   EXAMPLES  solution files (default: every GPU example, examples/gpu/*/*.py; DEVICE=cpu: the CPU ones)
#   GPUS      e.g. 0,1: one evaluation per GPU at a time, each alone on its GPU (timings worth reading);
#             without it PARALLEL evaluations share the device (default 1)
#   AUDIT_SAMPLES=1  every audited call's raw figures in the result (KERNELHUB_AUDIT_SAMPLES), summarised:
#             how far the null calls ran over their requests
#   BUDGET_S  seconds for the whole run (default 540); DEVICE cuda (default) or cpu (a rehearsal without a GPU)
# Carry: .whl and .carry (scripts/gpu/carry.sh); see scripts/gpu/host_env.sh.
set -u
cd "$(dirname "$0")/../.."
. scripts/gpu/host_env.sh
BUDGET_S=${BUDGET_S:-540}
DEVICE=${DEVICE:-cuda}
if [ "$DEVICE" = cpu ]; then EXAMPLES=${EXAMPLES:-examples/cpu/cpp/*.py}; else EXAMPLES=${EXAMPLES:-examples/gpu/*/*.py}; fi
SPREAD=(--parallel "${PARALLEL:-1}"); [ -n "${GPUS:-}" ] && SPREAD=(--gpus "$GPUS")
[ "${AUDIT_SAMPLES:-}" = 1 ] && export KERNELHUB_AUDIT_SAMPLES=1
# shellcheck disable=SC2086
timeout -k 10 -s TERM "$((BUDGET_S - 10))" "$PY" scripts/gpu/examples.py "$OUT/examples.jsonl" $EXAMPLES \
  --device "$DEVICE" "${SPREAD[@]}" --deadline-s "$((BUDGET_S - 30))" > "$OUT/examples.log" 2>&1
echo "examples.py exit: $? after ${SECONDS} s" >> "$OUT/examples.log"
"$PY" - "$OUT/examples.jsonl" <<'PY' | tee "$OUT/examples-summary.txt"
import json, statistics, sys
try:
    rows = [json.loads(line) for line in open(sys.argv[1])]
except OSError:
    rows = []
print(f"{len(rows)} evaluations")
for row in rows:
    r = row.get("result") or {}
    checks = r.get("checks") or {}
    audit = checks.get("clock_audit") or {}
    print(row.get("solution"), "gpu", row.get("gpu"), "wall", row.get("wall_s"), r.get("verdict"), r.get("rule"),
          "runtime", r.get("runtime_us"), "eager", r.get("eager_us"), "compile", r.get("compile_us"),
          str(r.get("message") or row.get("error") or "")[:200])
    print("  stages", {k: round(v, 1) for k, v in (r.get("stage_seconds") or {}).items() if v >= 0.3})
    print("  solution ops", (r.get("op_seconds") or {}).get("solution"))
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
tail -3 "$OUT/examples.log"
