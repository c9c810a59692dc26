#!/usr/bin/env bash
# Session 3, first call on a lent 2 x H200 host (issue #2): the 10 GPU examples never evaluated on a GPU, one
# evaluation per GPU at a time (scripts/gpu_examples.py --gpus 0,1), after re-timing eager on the 4 convolution
# problems whose batch was raised in session 2 (scripts/gpu_problem_times.py --only ...).
# Carry: .whl (kernelguard) and .carry (bwrap), made by scripts/make_carry.sh. Results under $OUT.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export KERNELHUB_CACHE_DIR=/tmp/khcache; mkdir -p "$KERNELHUB_CACHE_DIR"
BUDGET_S=${BUDGET_S:-550}
python3 -m pip install -q --no-index --no-deps --target /tmp/kg .whl/kernelguard-*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/kg:$PWD
[ -x /usr/local/bin/bwrap ] || install -m 755 .carry/bwrap /usr/local/bin/bwrap
{ date -u; nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv; } > "$OUT/machine.txt" 2>&1
[ -n "${SKIP_CONV:-}" ] || CUDA_VISIBLE_DEVICES=0 timeout 90 python3 scripts/gpu_problem_times.py "$OUT/conv_times.json" \
  --only conv2d_3x3 conv_bn_relu conv_relu_maxpool resnet_basic_block > "$OUT/conv_times.log" 2>&1
tail -8 "$OUT/conv_times.log"
python3 scripts/gpu_examples.py "$OUT/examples.jsonl" \
  ${EXAMPLES:-examples/gpu/cuda/matmul_fp16.py examples/gpu/cuda/maxpool2d_3x3.py examples/gpu/cuda/rmsnorm_silu_gate.py \
  examples/gpu/cuda/scale_mask_softmax.py examples/gpu/cuda/softmax_rows.py examples/gpu/cupy/gelu_erf.py \
  examples/gpu/cupy/layernorm_residual.py examples/gpu/triton/gelu_erf.py examples/gpu/triton/matmul_bias_relu.py \
  examples/gpu/triton/softmax_rows.py} \
  --gpus 0,1 --deadline-s $((BUDGET_S - SECONDS - 10)) > "$OUT/examples.log" 2>&1
cat "$OUT/examples.log" | cut -c1-250
python3 - "$OUT/examples.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    row = json.loads(line); r = row.get("result") or {}
    print(row["solution"], row.get("gpu"), row.get("wall_s"), r.get("verdict"), r.get("runtime_us"), r.get("eager_us"),
          r.get("compile_us"), {k: round(v, 1) for k, v in (r.get("stage_seconds") or {}).items()})
PY
echo "session3a: done in ${SECONDS} s"
