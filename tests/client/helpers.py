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


# The labels of the progress line, in the order an evaluation goes through them.
PROGRESS_ORDER = ["queued", "starting on a runner", "pre-screening the source", "compiling", "checking correctness",
                  "timing", "done"]


def progress_labels(stderr: str) -> list[str]:
    """The labels of the plain progress lines (`#12 gelu-erf-cpu on cpu: timing  00:41`) on stderr."""
    return [line.split(": ", 1)[1].rsplit("  ", 1)[0] for line in stderr.splitlines() if line.startswith("#")]


def assert_progress_in_order(labels: list[str]) -> None:
    """A line per change, never back to an earlier stage, ending with done (a short stage may pass unseen
    between two polls, so which middle stages show depends on the machine)."""
    assert labels and labels[-1] == "done", labels
    assert all(label in PROGRESS_ORDER for label in labels), labels
    positions = [PROGRESS_ORDER.index(label) for label in labels]
    assert positions == sorted(set(positions)), f"out of order or repeated: {labels}"
