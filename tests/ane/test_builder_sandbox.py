"""A Python builder runs confined: no secrets from the environment or the host's files, no writes outside
its own directory, no network, and a wall-clock limit."""

import json
import secrets

import pytest

from ane_runner.landlock import landlock_abi
from ane_runner.validate import validate
from gpu_runner import sandbox
from tests.ane.helpers import POINTWISE, REPO, SOLUTIONS


def _seen(report) -> dict:
    assert report["eligible"] is False
    detail = report["error"]
    assert "SEEN " in detail, detail
    return json.loads(detail.rsplit("SEEN ", 1)[1].strip().splitlines()[0])


def test_it_keeps_the_hosts_secrets_and_files_from_a_builder(monkeypatch, tmp_path):
    token = secrets.token_hex(8)
    monkeypatch.setenv("KERNELHUB_TEST_SECRET", token)
    # a secret beside the builder's own directory (outside /tmp, so only Landlock stops the read) and in /tmp
    beside = sandbox.work_base() / f"secret-{token}.txt"
    beside.write_text(token)
    in_tmp = tmp_path / "secret.txt"
    in_tmp.write_text(token)
    outside_writes = {"write_repo": REPO / f"pwned-{token}", "write_beside": sandbox.work_base() / f"pwned-{token}",
                      "write_tmp": tmp_path / "pwned"}
    targets = {"read": {"read_beside": str(beside), "read_tmp": str(in_tmp)},
               "write": {k: str(v) for k, v in outside_writes.items()}}
    source = (SOLUTIONS / "snooping_builder.py").read_text().replace(
        'TARGETS = {"read": {}, "write": {}}', f"TARGETS = {targets!r}")
    try:
        report, package, _ = validate(POINTWISE.read_text(), source.encode(), baseline=False)
    finally:
        beside.unlink()
    seen = _seen(report)
    assert package is None
    assert seen["env_secret"] is None
    assert not [k for k in seen["env_keys"] if "TOKEN" in k or "SECRET" in k or k.endswith("_URL")]
    assert seen["read_beside"].startswith("denied"), seen
    assert seen["read_tmp"].startswith("denied"), seen
    for key, path in outside_writes.items():
        assert seen[key].startswith("denied"), (key, seen[key])
        assert not path.exists()
    assert seen["tcp"].startswith("denied"), seen


@pytest.mark.skipif(landlock_abi() < 1, reason="Landlock is not available on this kernel")
def test_it_records_the_isolation_in_force():
    source = (SOLUTIONS / "snooping_builder.py").read_bytes()
    report, _, _ = validate(POINTWISE.read_text(), source, baseline=False)
    isolation = report["conversion"]["sandbox"]
    assert isolation["landlock"].startswith(f"abi {landlock_abi()}")
    assert isolation["wall_clock_s"] > 0
    assert "KERNELHUB_TEST_SECRET" not in isolation["env"]


def test_it_stops_a_builder_that_never_returns():
    report, package, _ = validate(POINTWISE.read_text(), (SOLUTIONS / "endless_builder.py").read_bytes(),
                                  baseline=False, timeout_s=20)
    assert report["eligible"] is False and package is None
    assert report["issues"] == [{"op": None, "rule": "build", "detail": report["error"]}]
    assert "ran over 20 s and was stopped" in report["error"]
    assert report["conversion"]["build_s"] < 60


@pytest.mark.skipif(landlock_abi() < 1, reason="Landlock is not available on this kernel")
def test_it_keeps_the_isolation_record_out_of_the_builders_reach():
    report, _, _ = validate(POINTWISE.read_text(), (SOLUTIONS / "forging_builder.py").read_bytes(), baseline=False)
    isolation = report["conversion"]["sandbox"]
    assert isolation["landlock"].startswith(f"abi {landlock_abi()}")
    assert "forged" not in json.dumps(isolation)
    assert report["error"] == "forged"  # its own error message is its to write
