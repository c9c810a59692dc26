"""A request's log line is printed once (Django's own console handler for the "django" loggers, on under DEBUG,
printed every "Not Found" and request error a second time through the root's handler)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = """
import logging, django
django.setup()
logging.getLogger("django.request").warning("Not Found: /no-such-page/")
"""


@pytest.mark.parametrize("debug", ["true", "false"])
def test_it_prints_a_request_warning_once(debug, tmp_path):
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="kernelhub.settings", DEBUG=debug, PYTHONPATH=str(REPO),
               KERNELHUB_VAR_DIR=str(tmp_path))
    env.pop("DATABASE_URL", None)
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert (out.stdout + out.stderr).count("Not Found: /no-such-page/") == 1, out.stderr
