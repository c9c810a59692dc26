# Two commands on a fresh machine: `make run` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
# On a machine without a GPU this takes the CPU build of torch from the local disk; a GPU host keeps its own.
TORCH_SPEC ?= torch==2.13.0

.PHONY: install run test test-fast lint typecheck system-packages clean help

help:
	@echo "make run    - set up and run the whole site on 127.0.0.1:$${PORT:-8000} (embedded SQLite + Redis)"
	@echo "make test   - set up and run every test"
	@echo "make lint   - ruff and mypy"

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	@if ! $(PY) -c 'import torch' 2>/dev/null; then $(PIP) install -q "$(TORCH_SPEC)"; fi
	$(PIP) install -q -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

run: install
	$(PY) manage.py run_local

system-packages:
	@bash scripts/ensure_system_packages.sh

test: install system-packages
	$(PY) -m pytest $(PYTEST_ARGS)

test-fast: install
	$(PY) -m pytest -m "not slow and not browser" $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy kernelhub apps gpu_runner ane_runner kernelhub_client
	$(VENV)/bin/lint-imports

clean:
	rm -rf var staticfiles .pytest_cache
