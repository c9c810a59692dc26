# Sourced by the scripts of scripts/gpu/ on a GPU host that has no network: installs what was carried there
# (scripts/gpu/carry.sh), sets the environment the evaluator needs and records the machine. Idempotent: a
# script run by another one (side_by_side.sh) finds it done.
#   .whl/   wheels the host's image lacks (the site's, kernelguard): installed into $WHEEL_DIR, put first on
#           PYTHONPATH (and its bin/ on PATH); without the folder the host's own packages serve
#   .carry/bwrap  the sandbox's bubblewrap, installed where the host has none
# Knobs: OUT (/tmp/out), PY (python3), WHEELS (.whl), WHEEL_DIR (/tmp/kh-wheels), KERNELHUB_CACHE_DIR
# (/tmp/khcache: builds, baselines and the host-wide device lock, shared by everything that runs on the host).
if [ -z "${KH_HOST_READY:-}" ]; then
  export PYTHONUNBUFFERED=1
  # NVLink multicast stays off, as in every run logged in docs/GPU_RUNS.md.
  export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
  export OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
  export PY=${PY:-python3}
  WHEELS=${WHEELS:-.whl}; WHEEL_DIR=${WHEEL_DIR:-/tmp/kh-wheels}
  if [ -d "$WHEELS" ]; then
    rm -rf "$WHEEL_DIR"
    if ! timeout 120 "$PY" -m pip install --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$WHEEL_DIR" "$WHEELS"/*.whl > "$OUT/install.log" 2>&1; then
      tail -20 "$OUT/install.log"
      echo "host_env: installing the wheels of $WHEELS failed (run scripts/gpu/carry.sh here and carry $WHEELS)" >&2
      exit 1
    fi
    export PYTHONPATH="$WHEEL_DIR:$PWD${PYTHONPATH:+:$PYTHONPATH}" PATH="$WHEEL_DIR/bin:$PATH"
  else
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
  fi
  if ! command -v bwrap > /dev/null && [ -x .carry/bwrap ]; then install -m 755 .carry/bwrap /usr/local/bin/bwrap; fi
  export KERNELHUB_CACHE_DIR=${KERNELHUB_CACHE_DIR:-/tmp/khcache}; mkdir -p "$KERNELHUB_CACHE_DIR"
  { date -u; git log -1 --format='commit %h %s' 2>/dev/null; hostname; nproc; free -g | head -2
    nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu \
      --format=csv 2>&1
    "$PY" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, torch.version.cuda,
"cuda devices", torch.cuda.device_count())' 2>&1
    "$PY" -c 'import triton, cupy; print("triton", triton.__version__, "cupy", cupy.__version__)' 2>&1 | tail -1
    # Which cores sit near the GPU: a child on the far NUMA node syncs with it more slowly (the clock audit
    # compares two processes' host time).
    lscpu 2>/dev/null | grep -iE '^(model name|numa|socket|thread|core)' ; nvidia-smi topo -m 2>&1 | head -8
  } >> "$OUT/machine.txt"
  export KH_HOST_READY=1
fi
