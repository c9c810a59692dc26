#!/usr/bin/env bash
# One ~9-minute call on the lent H200: GPU tests, the examples, the evaluator's reproducibility and overhead.
# Writes under $OUT; carry .whl (kernelguard) and .carry (bwrap). Steps run one after another (no sharing of
# the GPU while timing), each with its own time budget.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
[ -x .carry/bwrap ] && install -m 755 .carry/bwrap /usr/local/bin/bwrap
export KERNELHUB_CACHE_DIR=/tmp/khcache
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv; date -u; } > "$OUT/machine.txt" 2>&1
timeout -s INT ${T_TESTS:-150} python3 -m pytest -p no:cacheprovider -p no:django -m cuda -v --tb=short --timeout 140 \
  tests/evaluator/test_cuda.py tests/exploits/test_corpus_cuda.py > "$OUT/cuda-tests.log" 2>&1
echo "pytest rc $?" >> "$OUT/cuda-tests.log"; grep -E "PASSED|FAILED|ERROR|passed|failed" "$OUT/cuda-tests.log" | tail -14
python3 scripts/gpu_examples.py "$OUT/examples.jsonl" --parallel 2 --deadline-s ${T_EXAMPLES:-230} > "$OUT/examples.log" 2>&1
cat "$OUT/examples.log" | cut -c1-200
P=problems/gpu/level1/matmul_square.py; S=examples/gpu/cuda/matmul_square.py
timeout ${T_REPRO:-110} python3 benchmarks/evaluator_reproducibility.py --problem $P --solution $S -n 5 \
  --out "$OUT/reproducibility.json" > "$OUT/reproducibility.log" 2>&1; tail -4 "$OUT/reproducibility.log"
timeout ${T_OVERHEAD:-50} python3 benchmarks/evaluator_overhead.py --problem $P --solution $S -n 2 \
  --out "$OUT/overhead.json" > "$OUT/overhead.log" 2>&1; tail -3 "$OUT/overhead.log"
