# Sourced by the scripts of scripts/gpu/ that run a list of steps under one budget (side_streams.sh, head_start.sh,
# audit_gap.sh), after host_env.sh. Needs OUT, PY, BUDGET_S and RUN_LOG (the run's log file name under $OUT).
#   log TEXT                               a timestamped line to $OUT/$RUN_LOG and the terminal
#   step NAME SECONDS OUTFILE COMMAND...   COMMAND's stdout to $OUT/OUTFILE under a timeout of SECONDS (never past
#                                          the budget), its stderr's tail to $OUT/steps.log
#   verdict FILE                           what an evaluator's JSON under $OUT says, in one line
#   rows NAME OUTFILE                      a timing_fidelity.py step's table rows ($OUT/OUTFILE) and its cases'
#                                          verdicts (its stderr) to the run's log
#   pack NAME                              everything under $OUT but the run's log and machine.txt into NAME.tar.gz
#                                          (a GPU call returns only a handful of files)
#   start_sampler, sampler_peaks           nvidia-smi (utilisation, memory) and `free` every 2 s into
#                                          $OUT/samples.txt (time,gpu busy %,gpu memory MiB,host used MiB) beside the
#                                          steps; then stop it and put the peaks in the run's log

log() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$OUT/$RUN_LOG"; }

step() {
  local name=$1 seconds=$2 outfile=$3; shift 3
  local left=$((BUDGET_S - SECONDS - 5))
  [ "$seconds" -gt "$left" ] && seconds=$left
  if [ "$seconds" -lt 20 ]; then log "$name: skipped, ${left} s left of the budget"; return; fi
  log "$name: start (${seconds} s)"
  timeout -k 10 -s TERM "$seconds" "$@" > "$OUT/$outfile" 2> "$OUT/$name.stderr"
  local rc=$?
  log "$name: rc $rc"
  { echo "===== $name (rc $rc)"; grep -v '^kernelhub: stage' "$OUT/$name.stderr" | tail -n 40 | cut -c1-600; } \
    >> "$OUT/steps.log"
}

verdict() {
  $PY - "$OUT/$1" <<'PYEOF' | tee -a "$OUT/$RUN_LOG"
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"{sys.argv[1]}: no verdict ({e})"); sys.exit()
kt = (r.get('checks') or {}).get('kernel_time') or {}
print(f"{sys.argv[1].rsplit('/', 1)[-1]}: {r.get('verdict')} / {r.get('rule')}: runtime {r.get('runtime_us')} us, "
      f"eager {r.get('eager_us')}, compile {r.get('compile_us')}, kernel {r.get('kernel_time_us')}, "
      f"busy {kt.get('device_busy_us')} (event / busy {kt.get('event_time_over_device_busy')}, / busy and window "
      f"{kt.get('event_time_over_busy_and_window')}), "
      f"message {str(r.get('message') or r.get('error'))[:300]!r}")
PYEOF
}

rows() {
  { grep -h "^| " "$OUT/$2" 2>/dev/null; grep -h "verdict\|prepared" "$OUT/$1.stderr" 2>/dev/null | tail -8; } \
    | tee -a "$OUT/$RUN_LOG"
}

pack() {
  (cd "$OUT" && tar czf "$1.tar.gz" --exclude "$RUN_LOG" --exclude "$1.tar.gz" --exclude machine.txt \
    --exclude install.log --remove-files ./*)
}

start_sampler() {
  (while true; do
    gpu=$(nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits 2>/dev/null | head -1)
    echo "$(date -u +%H:%M:%S),${gpu:-,},$(free -m | awk '/^Mem:/ {print $3}')" | tr -d ' ' >> "$OUT/samples.txt"
    sleep 2
  done) & SAMPLER=$!
  trap 'kill $SAMPLER 2>/dev/null' EXIT
}

sampler_peaks() {
  kill "$SAMPLER" 2>/dev/null
  awk -F, '{if ($2 + 0 > u) u = $2 + 0; if ($3 + 0 > m) m = $3 + 0; if ($4 + 0 > h) h = $4 + 0; n++; s += $2}
    END {print "peaks: gpu busy " u " % (mean " (n ? s / n : 0) " %), gpu memory " m " MiB, host used " h " MiB, " n " samples"}' \
    "$OUT/samples.txt" | tee -a "$OUT/$RUN_LOG"
}
