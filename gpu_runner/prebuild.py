"""Build slots: a GPU host builds the solutions' extensions on its CPU cores while its GPUs evaluate.

A fresh nvcc build of a KernelBench solution takes about a minute of CPU; the GPU has nothing to do meanwhile.
So with every job for a CUDA pool the site also sends a build hint (the problem's and the solution's sources, no
job token) to the pool's build queue (`contract.build_queue`: pool.h200 -> pool.h200.build). `python -m gpu_runner
serve` runs one Celery worker there with several processes (KERNELHUB_BUILD_SLOTS, default half the host's
cores) and no GPU. Each takes a hint and runs `build_ahead`: the evaluation's own admission (format, the
static pre-screen), then the solution's sandboxed child imports the solution with no GPU to reach (its
CUDA_VISIBLE_DEVICES empty and the GPU's device nodes bound to /dev/null in its mount namespace), and its
load_inline/load requests are built by the trusted parent into the host's build cache (gpu_runner/builds.py),
exactly as an evaluation builds them: same keys, same sandboxed builder.

The evaluation later finds its builds in the cache (its `checks.builds` say `cached`), or, where it comes to a
build the slot is still making, waits on that build's lock instead of building it twice. Nothing here is trusted
for a verdict: a failed or skipped build ahead costs only time, since the evaluation builds whatever is missing,
and a failed build is cached with its compiler message like any other. Builds that need the GPU to happen at
all (Triton's JIT, CuPy's RawKernel) are made by the evaluation, as before.
"""

from __future__ import annotations

import time
from typing import Any

from gpu_runner import config, formats
from gpu_runner.evaluate import EvaluatorError, Verdict, _Run, _skeleton


def build_ahead(problem_source: str, solution_source: str, *, device: str = "cuda",
                settings: config.RunnerConfig | None = None) -> dict[str, Any]:
    """Build what the solution builds, into this host's cache, without a GPU. Returns a record for the log:
    `outcome` built (every build it asked for is in the cache, made now or before), verdict (the solution
    would fail on the way: its verdict and message, which the evaluation will give again), or error."""
    started = time.monotonic()
    record: dict[str, Any] = {"outcome": "built", "builds": [], "seconds": 0.0}
    try:
        meta = formats.problem_metadata(problem_source)
    except ValueError as e:
        return {**record, "outcome": "error", "message": f"problem: {e}"}
    result = _skeleton(problem_source, solution_source, device, 0)
    run = _Run(problem_source, solution_source, meta, device, 0, None, result, settings)
    try:
        info = run.build_ahead()
        record["constructed"] = bool(info.get("constructed"))
    except Verdict as v:
        record.update(outcome="verdict", verdict=v.verdict, message=v.message[:500])
    except EvaluatorError as e:
        record.update(outcome="error", message=str(e)[:500])
    finally:
        run.cleanup()
    record["builds"] = run.build_log
    record["isolation_gpu"] = result.isolation.get("gpu", "")
    record["seconds"] = round(time.monotonic() - started, 3)
    return record

