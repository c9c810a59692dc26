"""The ANE job: what the site adds to the standard job payload for a `*-ane` pool (server side, Linux).

The Mac never runs a solution's Python: the site validates the solution (building it in the sandbox when it
is a Python builder), and ships the built package, the baseline package and the reference inputs and
outputs computed with torch. The Mac only compiles, places, runs and times.
"""

from __future__ import annotations

import base64
import secrets
from typing import Any

from .problem import DIGEST_INPUT_SEED, ProblemError, problem_load, reference_npz_bytes
from .validate import validate

# Input sets checked on the Mac besides the published one: drawn at dispatch, unknown when the package was built.
FRESH_INPUT_SETS = 2
PACKAGE_PREFIX = "base64:"


def solution_bytes(solution_source: str) -> bytes:
    """A submission's text as the validator takes it: `base64:<zip>` for an uploaded package, else Python."""
    if solution_source.startswith(PACKAGE_PREFIX):
        try:
            return base64.b64decode(solution_source[len(PACKAGE_PREFIX):], validate=True)
        except ValueError as exc:
            raise ValueError("the package upload is not valid base64: upload the zip file itself") from exc
    return solution_source.encode()


def ane_job_prepare(*, problem_source: str, solution_source: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(validation report, the job's `ane` entry or None when the solution is not eligible).

    Takes seconds to a few minutes (a builder runs; the baseline converts): call it from a site task.
    Raises ProblemError when the problem itself cannot serve (its reference does not convert).
    """
    # a base64 upload is a package whatever its bytes look like, so junk is refused as a package, never run
    name = "upload.zip" if solution_source.startswith(PACKAGE_PREFIX) else "solution.py"
    report, package, baseline = validate(problem_source, solution_bytes(solution_source), solution_name=name)
    if not report["eligible"] or package is None:
        return report, None
    if baseline is None:
        raise ProblemError(report["baseline"].get("error") or "the baseline did not convert")
    problem = problem_load(problem_source)
    seeds = [DIGEST_INPUT_SEED] + [secrets.randbits(31) for _ in range(FRESH_INPUT_SETS)]
    reference, digest = reference_npz_bytes(problem, input_seeds=seeds)
    ane = {
        "package_b64": base64.b64encode(package).decode(),
        "baseline_b64": base64.b64encode(baseline).decode(),
        "reference_b64": base64.b64encode(reference).decode(),
        "reference_digest": digest,  # of the published seed's outputs: the Mac checks it before trusting the file
        "input_sets": len(seeds),
        # Achieved TFLOPS count the problem's work (the baseline's graph), never the solution's own graph,
        # which could pad itself with useless work.
        "flops": report["baseline"]["flops"],
        "atol": report["reference"]["atol"],
        "rtol": report["reference"]["rtol"],
    }
    return report, ane


def ineligible_result(report: dict[str, Any]) -> dict[str, Any]:
    """The evaluator-shaped result the site stores for a solution that never reaches a Mac.

    `compile_error` when no model could be built or read, `rejected` when the model breaks the Neural
    Engine's rules or the problem's interface; the message lists every issue.
    """
    rules = {i["rule"] for i in report["issues"]}
    verdict = "compile_error" if rules & {"build", "package", "format"} else "rejected"
    lines = [f"[{i['rule']}] {i['op'] + ': ' if i['op'] else ''}{i['detail']}" for i in report["issues"]]
    return {
        "verdict": verdict, "correct": None, "runtime_us": None, "eager_us": None, "compile_us": None,
        "speedup_vs_eager": None, "speedup_vs_compile": None,
        "message": "Not run on the Neural Engine:\n" + "\n".join(lines), "validation": report,
    }
