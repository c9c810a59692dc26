"""Evaluator tests: no Django. One build cache and baseline cache per test session (a fresh directory), so
the shared C++ extension of the fixtures is built once and the baselines are timed once."""

import os
import tempfile

os.environ.setdefault("KERNELHUB_CACHE_DIR", tempfile.mkdtemp(prefix="kernelhub-evaluator-tests-"))
# Short timing loops: these tests check verdicts and contracts, not the precision of the numbers.
os.environ.setdefault("KERNELHUB_TIMING_BUDGET_S", "1")
