import io
import json

from kernelhub_client.cli import main


def run_cli(*argv: str) -> tuple[int, str, str]:
    """Runs `kernelhub ARGV...` in this process; returns (exit code, stdout, stderr)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=stdout, stderr=stderr)
    return code, stdout.getvalue(), stderr.getvalue()


def one_json_object(stdout: str) -> dict:
    """--json promises exactly one JSON object on stdout."""
    lines = stdout.strip().splitlines()
    assert len(lines) == 1, f"expected one line of JSON, got {stdout!r}"
    obj = json.loads(lines[0])
    assert isinstance(obj, dict)
    return obj
