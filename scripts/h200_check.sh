#!/usr/bin/env bash
# One call on the lent H200 (see docs/GPU_RUNS.md): the GPU tests of the evaluator, the exploit corpus and the
# bundled examples. Everything it writes goes under $OUT. Carry: .whl (kernelguard) and .carry (bwrap).
# Usage there: bash scripts/h200_check.sh [pytest -k expression]
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
[ -x .carry/bwrap ] && install -m 755 .carry/bwrap /usr/local/bin/bwrap
export KERNELHUB_CACHE_DIR=/tmp/khcache
{ nvidia-smi; python3 -c 'import torch,triton,cupy; print(torch.__version__, torch.version.cuda, triton.__version__, cupy.__version__)'; date -u; } > "$OUT/machine.txt" 2>&1
K=${1:-}
timeout ${PYTEST_BUDGET_S:-520} python3 -m pytest -p no:cacheprovider -p no:django -m cuda -n ${WORKERS:-6} \
  --timeout 500 -q -rA ${K:+-k "$K"} tests/evaluator tests/exploits tests/problems \
  --junitxml="$OUT/cuda-tests.xml" > "$OUT/cuda-tests.log" 2>&1
echo "pytest exit: $?" >> "$OUT/cuda-tests.log"
tail -60 "$OUT/cuda-tests.log"
