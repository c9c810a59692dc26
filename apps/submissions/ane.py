"""The ANE track on the site: package uploads, what an ANE problem's page publishes, and the preparation of
ANE jobs before they reach a Mac.

A submission to a `<chip>-ane` pool is dispatched like any other (lifecycle.evaluation_dispatch), but to the
site's own queue first: `submissions.prepare_ane_job` validates and converts it with coremltools on Linux
(ane_runner.jobs.ane_job_prepare, seconds to minutes), then either stores a final verdict at once (an
ineligible graph never waits for a Mac) or sends the job, with its prepared `ane` entry, to the pool's queue.
"""

from __future__ import annotations

import base64
import binascii
import logging
from typing import Any

from django.conf import settings
from django.core.cache import cache

from apps.submissions import lifecycle
from apps.submissions.models import Evaluation, Problem, token_hash

logger = logging.getLogger(__name__)

# How an uploaded zipped .mlpackage travels inside a submission's text (ane_runner.jobs.PACKAGE_PREFIX).
PACKAGE_PREFIX = "base64:"
# A problem's weights and digest depend only on its source: cached under its hash.
REFERENCE_CACHE_S = 7 * 24 * 3600


class PackageError(ValueError):
    """An upload that is not a usable package text; the message says what to send instead."""


def is_package_source(source: str) -> bool:
    return source.startswith(PACKAGE_PREFIX)


def package_source(data: bytes) -> str:
    """The submission text of an uploaded zip (what the API's base64 form sends)."""
    return PACKAGE_PREFIX + base64.b64encode(data).decode("ascii")


def package_size(source: str) -> int:
    """Bytes of the zip inside a `base64:` source; PackageError when it is not base64."""
    encoded = source[len(PACKAGE_PREFIX):].strip()
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise PackageError("The package is not valid base64 after `base64:`: encode the zipped .mlpackage "
                           "itself (e.g. `base64 -w0 model.mlpackage.zip`), or upload the zip as a file.") from None
    if not data.startswith(b"PK"):
        raise PackageError("The package is not a zip file: zip the .mlpackage folder "
                           "(`zip -r model.mlpackage.zip model.mlpackage`) and send that.")
    return len(data)


def package_too_big_message(size: int) -> str:
    return (f"The package is {size:,} bytes zipped; the limit is {settings.MAX_PACKAGE_BYTES:,} "
            "(MAX_PACKAGE_BYTES). Keep only the weights the problem publishes, in fp16.")


# --- What an ANE problem's page publishes --------------------------------------------------------------

def problem_ane_reference(*, problem: Problem) -> dict[str, Any]:
    """{digest, weights_npz, weights_bytes}: the reference weights (seed ane_runner.problem.WEIGHTS_SEED) a
    package must embed, as an .npz, and the digest of the reference outputs for the published input seed.

    Computed with torch from the problem's current source (the site's own file) and cached by its hash.
    Raises ane_runner.problem.ProblemError when the file cannot serve on the ANE track.
    """
    key = f"ane:reference:{problem.content_hash}"
    try:
        cached = cache.get(key)
    except Exception as e:  # the cache is an optimisation: without Redis, compute
        logger.warning("Cache unavailable (%s); computing the ANE reference.", e)
        cached = None
    if cached is not None:
        return cached
    from ane_runner.problem import (
        DIGEST_INPUT_SEED,
        outputs_digest,
        problem_load,
        reference_inputs,
        reference_outputs,
        weights_npz_bytes,
    )

    loaded = problem_load(problem.source)
    weights = weights_npz_bytes(loaded)
    digest = outputs_digest(reference_outputs(loaded, reference_inputs(loaded, seed=DIGEST_INPUT_SEED)))
    value = {"digest": digest, "weights_npz": weights, "weights_bytes": len(weights),
             "atol": loaded.atol, "rtol": loaded.rtol}
    try:
        cache.set(key, value, REFERENCE_CACHE_S)
    except Exception as e:
        logger.warning("Cache unavailable (%s); the ANE reference is not cached.", e)
    return value


# --- Preparing a dispatched job ------------------------------------------------------------------------

def ane_job_forward(*, job: dict[str, Any]) -> str:
    """Validates and prepares a dispatched ANE job, then finishes it here or sends it on to its Mac pool.

    Returns "sent", "rejected" (a final verdict stored: compile_error or rejected), "failed" (the problem
    itself cannot serve) or "stale" (the job was re-dispatched or finished meanwhile: nothing done).
    """
    from ane_runner.jobs import ane_job_prepare, ineligible_result
    from ane_runner.problem import ProblemError

    digest = token_hash(str(job["job_token"]))
    evaluation_id = job["evaluation_id"]
    if not Evaluation.objects.filter(pk=evaluation_id, status=Evaluation.STATUS_QUEUED,
                                     job_token_hash=digest).exists():
        return "stale"

    def finish(outcome: str, result: dict[str, Any], failed: bool = False) -> str:
        written = lifecycle.evaluation_finish_on_site(evaluation_id=evaluation_id, job_token_hash=digest,
                                                      result=result, failed=failed)
        return outcome if written else "stale"

    try:
        report, ane = ane_job_prepare(problem_source=job["problem_source"], solution_source=job["solution_source"])
    except ProblemError as exc:
        message = (f"This problem cannot be served on the ANE track ({exc}). This is the site's fault, not "
                   "the solution's: the operators were told; submit again once the problem is fixed.")
        logger.error("ANE problem %s cannot serve evaluation %s: %s", job.get("problem_slug"), evaluation_id, exc)
        return finish("failed", {"message": message}, failed=True)
    except ValueError as exc:  # a `base64:` text that does not decode (submission_create refuses those)
        return finish("rejected", {"verdict": "compile_error", "correct": None, "runtime_us": None,
                                   "message": str(exc)})
    if ane is None:
        return finish("rejected", ineligible_result(report))
    # Still queued under the same token: the Mac's claim is what moves it to running.
    return "sent" if lifecycle.evaluation_forward(job={**job, "ane": ane}) else "stale"


def problem_ane_panel(*, problem: Problem, pools: list[Any]) -> dict[str, Any] | None:
    """What an ANE problem's page shows beside the reference: the digest and the weights' size, or why the
    problem cannot serve. None for a problem offered on no ANE pool."""
    from apps.devices.models import HardwarePool

    if not any(p.kind == HardwarePool.KIND_ANE for p in pools):
        return None
    from ane_runner.problem import DIGEST_INPUT_SEED, WEIGHTS_SEED, ProblemError

    panel: dict[str, Any] = {"weights_seed": WEIGHTS_SEED, "input_seed": DIGEST_INPUT_SEED}
    try:
        reference = problem_ane_reference(problem=problem)
    except ProblemError as e:
        return panel | {"error": str(e)}
    return panel | {key: reference[key] for key in ("digest", "weights_bytes", "atol", "rtol")}
