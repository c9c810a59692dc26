"""What the site and its runners say to each other: the job a runner receives, the result it sends back, and
the names both sides use (verdicts, stages, rules). Every other module imports these names from here.

Standard library only: the site (without torch) and the runners (without Django) both import it, and so does
`kernelhub_client`. The wire format is plain JSON and stays exactly as docs/ARCHITECTURE.md describes it;
`Job` and `Result` only check it and give it types.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

VERDICTS = ("accepted", "wrong_answer", "compile_error", "runtime_error", "timeout", "rejected")

# An evaluation's stages, in order. The site sets `queued` (dispatch) and `done` (a result stored); a runner
# reports the ones between, and re-posts the current one as its keep-alive.
STAGES = ("queued", "prescreen", "compiling", "checking", "timing", "done")
RUNNER_STAGES = STAGES[1:-1]

# The evaluator's --device of a pool (apps/devices: HardwarePool.device); `ane` is a Mac's Neural Engine.
DEVICES = ("cpu", "cuda", "ane")
# gpu_runner.formats.detect_language for kernels; `coreml` for the ANE track.
LANGUAGES = ("cpp", "cuda", "triton", "cupy", "coreml")

# The `rule` of a `rejected` result (docs/EVALUATOR.md, docs/ANTICHEAT.md).
# Decided by the trusted parent (gpu_runner/evaluate.py, timing.py, limits.py):
EVALUATOR_RULES = (
    "output_aliases_input", "output_not_plain_tensor", "output_changed_after_return", "input_changed",
    "memoization", "work_outside_timer", "faster_than_speed_of_light", "timing_inconsistent", "timing_forged",
    "timing_protocol", "anti_cheat",
)
# The static pre-screen (gpu_runner/anticheat.py), before any build:
PRESCREEN_RULES = (
    "syntax_error", "no_modelnew", "no_forward", "no_custom_kernel", "library_fallback", "forbidden_import",
    "forbidden_api", "forbidden_call", "introspection", "monkeypatch", "harness_access", "build_escape",
    "native_escape", "kernelguard_error",
)
# kernelguard's own patterns come as `kernelguard:<PATTERN>` (e.g. kernelguard:TIMER_MONKEYPATCH).
KERNELGUARD_RULE_PREFIX = "kernelguard:"
# The runtime guards in the solution's process (gpu_runner/guards.py):
GUARD_RULES = (
    "torch_fallback", "library_fallback", "forbidden_call", "background_thread", "tracer_installed",
    "harness_patched", "guard_tampered",
)
RULES = tuple(dict.fromkeys(EVALUATOR_RULES + PRESCREEN_RULES + GUARD_RULES))

# A GPU pool's build slots: with each job the site sends a build hint (the sources, no job token) to
# build_queue(the pool's queue), where a runner's CPU-only build worker builds the solution's extensions into
# the host's cache while its GPU workers evaluate earlier jobs (gpu_runner/prebuild.py). A hint that nobody takes
# in PREBUILD_EXPIRES_S is dropped: the evaluation then builds for itself, as without build slots.
PREBUILD_TASK = "gpu_runner.prebuild_job"
PREBUILD_KEYS = ("evaluation_id", "problem_source", "solution_source", "device")
PREBUILD_EXPIRES_S = 3600


def build_queue(queue: str) -> str:
    """The build slots' queue of the pool whose evaluation queue is `queue` (pool.h200 -> pool.h200.build)."""
    return f"{queue}.build"


class ContractError(ValueError):
    """A job or result that does not follow the contract; the message names the field and what it must be."""


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _need_int(where: str, key: str, value: Any, *, minimum: int) -> int:
    # bool is an int to Python, never to JSON's readers.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ContractError(f"{where}.{key} must be an integer, not {_type_name(value)} ({value!r:.40}).")
    if value < minimum:
        raise ContractError(f"{where}.{key} must be {minimum} or more, not {value}.")
    return value


def _need_str(where: str, key: str, value: Any, *, choices: tuple[str, ...] | None = None,
              empty: bool = False) -> str:
    if not isinstance(value, str):
        raise ContractError(f"{where}.{key} must be a string, not {_type_name(value)}.")
    if not empty and not value:
        raise ContractError(f"{where}.{key} must not be empty.")
    if choices is not None and value not in choices:
        raise ContractError(f"{where}.{key} must be one of {', '.join(choices)}, not {value!r:.40}.")
    return value


def _need_number(where: str, key: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ContractError(f"{where}.{key} must be a number or null, not {_type_name(value)}.")
    if not math.isfinite(value):
        raise ContractError(f"{where}.{key} must be finite or null, not {value}: JSON has no NaN or infinity.")
    return float(value)


def _need_object(where: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ContractError(f"{where} must be a JSON object, not {_type_name(value)}.")
    return value


@dataclass(frozen=True)
class Job:
    """The one kwarg `job` of the Celery task `gpu_runner.evaluate_job` (apps/submissions/services.py
    evaluation_dispatch builds it; ANE jobs add `ane`, apps/submissions/ane.py)."""

    evaluation_id: int
    job_token: str  # in the message only: the site keeps its hash, rotated at every dispatch
    attempt: int
    problem_slug: str
    problem_source: str
    solution_source: str
    language: str
    device: str
    seed: int  # the trials' seed, unpredictable to the solution
    ane: dict[str, Any] | None = None  # the prepared package and reference (ane_runner.jobs.ane_job_prepare)

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        if data["ane"] is None:
            del data["ane"]  # a GPU or CPU job has no such key
        return data

    @classmethod
    def from_json(cls, data: Any) -> Job:
        """The job checked field by field; raises ContractError naming the first field that is wrong.

        Keys this version does not know are ignored: a newer site may send more than an older runner reads.
        """
        data = _need_object("job", data)
        missing = [f.name for f in fields(cls) if f.name != "ane" and f.name not in data]
        if missing:
            raise ContractError(f"job lacks {', '.join(missing)}: it was not made by a KernelHub site of this "
                                "version (apps/submissions/services.py evaluation_dispatch).")
        ane = data.get("ane")
        if ane is not None:
            _need_object("job.ane", ane)
        return cls(
            evaluation_id=_need_int("job", "evaluation_id", data["evaluation_id"], minimum=1),
            job_token=_need_str("job", "job_token", data["job_token"]),
            attempt=_need_int("job", "attempt", data["attempt"], minimum=1),
            problem_slug=_need_str("job", "problem_slug", data["problem_slug"]),
            problem_source=_need_str("job", "problem_source", data["problem_source"]),
            solution_source=_need_str("job", "solution_source", data["solution_source"]),
            language=_need_str("job", "language", data["language"], choices=LANGUAGES),
            device=_need_str("job", "device", data["device"], choices=DEVICES),
            seed=_need_int("job", "seed", data["seed"], minimum=0),
            ane=ane,
        )


_TIMES = ("runtime_us", "eager_us", "compile_us", "speedup_vs_eager", "speedup_vs_compile")


@dataclass(frozen=True)
class Result:
    """The evaluator's JSON object (docs/EVALUATOR.md, "The result object"), as a runner posts it to
    POST /api/v1/jobs/<id>/result/. The fields every result has are typed; the rest (stats, baselines, device,
    versions, isolation, checks, ANE figures, ...) is kept as is in `details`."""

    verdict: str
    correct: bool | None = None
    runtime_us: float | None = None
    eager_us: float | None = None
    compile_us: float | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    message: str = ""
    rule: str | None = None  # the rule a `rejected` verdict broke (RULES, or kernelguard:<PATTERN>)
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = dict(self.details)
        data.update({f.name: getattr(self, f.name) for f in fields(self) if f.name != "details"})
        return data

    @classmethod
    def from_json(cls, data: Any) -> Result:
        """The result checked field by field; raises ContractError naming the first field that is wrong."""
        data = _need_object("result", data)
        if "verdict" not in data:
            raise ContractError(f"result lacks verdict (one of {', '.join(VERDICTS)}).")
        verdict = _need_str("result", "verdict", data["verdict"], choices=VERDICTS)
        correct = data.get("correct")
        if correct is not None and not isinstance(correct, bool):
            raise ContractError(f"result.correct must be true, false or null, not {_type_name(correct)}.")
        if verdict == "accepted" and correct is not True:
            raise ContractError(f"result.correct must be true for an accepted verdict, not {correct!r}.")
        times = {key: _need_number("result", key, data.get(key)) for key in _TIMES}
        message = data.get("message", "")
        _need_str("result", "message", message, empty=True)
        rule = data.get("rule")
        if rule is not None:
            _need_str("result", "rule", rule)
        typed = {f.name for f in fields(cls)} - {"details"}
        details = {k: v for k, v in data.items() if k not in typed}
        return cls(verdict=verdict, correct=correct, message=message, rule=rule, details=details, **times)
