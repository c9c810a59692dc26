#!/usr/bin/env bash
# A rehearsal of scripts/gpu/two_gpu_serve.sh on a machine without a GPU (the cpu pool, one worker, a cpp
# example), to show that the carried wheel set is complete: a fresh venv without site packages, whose only
# packages are
#   - those the GPU hosts' image already has (the list below), hard-linked from the development venv, and
#   - the wheels of scripts/gpu/carry.sh, fetched for this machine's Python into .whl-rehearse.
# Usage: bash scripts/gpu/rehearse_two_gpu_serve.sh   (results under var/rehearse-two-gpu-serve/)
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
[ -d .whl-rehearse ] || DEST=.whl-rehearse PLATFORM=native bash scripts/gpu/carry.sh "$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
WORK=$(mktemp -d /tmp/rehearse-two-gpu-serve.XXXXXX)
python3 -m venv --without-pip "$WORK/venv"
# The GPU hosts' image: these of its packages (those the site, the runner and the tests use).
HOST_PACKAGES="torch numpy psutil httpx httpcore h11 anyio idna certifi nvidia-ml-py pytest pluggy
  iniconfig packaging pyyaml uvloop click attrs typing-extensions jinja2 markupsafe pygments six python-dateutil
  msgpack setuptools filelock sympy mpmath networkx fsspec pytest-timeout pyarrow ninja pip"
# Into the venv's own site-packages, as on the host: the evaluator's sandboxed child sees the interpreter's
# packages but not the parent's PYTHONPATH (gpu_runner/sandbox.py).
HOST_SITE=$("$WORK/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$REPO/.venv/bin/python" - "$HOST_SITE" $HOST_PACKAGES <<'EOF'
import importlib.metadata as md, os, subprocess, sys
dest, names = sys.argv[1], sys.argv[2:]
for name in names:
    dist = md.distribution(name)  # a name the dev venv lacks stops the rehearsal here, loudly
    root = dist.locate_file("")
    tops = {str(f).split("/")[0] for f in dist.files or [] if not str(f).startswith("..")}
    for top in tops:
        if top == "__pycache__" or os.path.exists(os.path.join(dest, top)):
            continue
        # Hard links, not symbolic ones: the sandbox binds sys.path's folders, not where links point.
        subprocess.run(["cp", "-al", os.path.join(root, top), os.path.join(dest, top)], check=True)
EOF
OUT="$REPO/var/rehearse-two-gpu-serve"; rm -rf "$OUT"; mkdir -p "$OUT"
# A free port: this machine is shared.
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
env -u DATABASE_URL -u REDIS_URL -u PYTHONPATH OUT="$OUT" PY="$WORK/venv/bin/python" \
  WHEELS=.whl-rehearse WHEEL_DIR="$WORK/site" POOL=cpu PORT="$PORT" CAL_MARK= \
  KERNELHUB_CACHE_DIR="$WORK/cache" BUDGET_S=${BUDGET_S:-540} bash scripts/gpu/two_gpu_serve.sh
echo "rehearsal: results in $OUT, scratch in $WORK"
