"""The installed command behaves as the in-process one: exit code and one JSON object on stdout."""

import subprocess
import sys

import pytest

from tests.client.helpers import one_json_object

pytestmark = pytest.mark.slow  # starts the live ASGI server


def test_it_runs_as_a_command(site, tmp_path):
    env = {"KERNELHUB_URL": site["url"], "KERNELHUB_TOKEN": site["token"], "PATH": "/usr/bin:/bin",
           "XDG_CONFIG_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "kernelhub_client", "problems", "--json"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert one_json_object(done.stdout)["problems"][0]["slug"] == "gelu-erf-cpu"
    done = subprocess.run([sys.executable, "-m", "kernelhub_client", "status", "424242", "--json"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 5 and one_json_object(done.stdout)["error"]["status"] == 404
