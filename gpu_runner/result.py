"""The result of one evaluation as the evaluator builds it (docs/EVALUATOR.md, "The result object").

EvaluationResult holds the figures the site reads (gpu_runner.contract.Result checks them again there) as typed
fields, and `checks`, the record of every check, as JSON the evaluator's phases add to. `to_json()` is the object
`gpu_runner evaluate --json` prints and a runner posts: the same keys, in the same order, as the dict it replaces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpu_runner import contract

BASELINES = ("eager", "compile")
# Verdicts after which the solution's trials are known to have passed or not (the others say nothing of it).
_NOT_CORRECT = ("wrong_answer", "compile_error", "runtime_error", "timeout")


@dataclass
class EvaluationResult:
    device_kind: str
    language: str
    problem_hash: str
    solution_hash: str
    seed: int
    verdict: str | None = None
    correct: bool = False
    message: str = ""
    rule: str | None = None
    runtime_us: float | None = None
    eager_us: float | None = None
    compile_us: float | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    kernel_time_us: float | None = None
    eager_kernel_time_us: float | None = None
    compile_kernel_time_us: float | None = None
    speedup_vs_eager_kernel_time: float | None = None
    speedup_vs_compile_kernel_time: float | None = None
    stats: dict[str, Any] | None = None  # timing.summarize of the solution's calls
    baselines: dict[str, dict[str, Any] | None] = field(default_factory=lambda: {m: None for m in BASELINES})
    device: dict[str, Any] = field(default_factory=dict)  # sysinfo.device_snapshot, and when it was read
    versions: dict[str, Any] = field(default_factory=dict)
    isolation: dict[str, Any] = field(default_factory=dict)
    checks: dict[str, Any] = field(default_factory=dict)
    wall_s: float | None = None
    stage_seconds: dict[str, float] = field(default_factory=dict)
    rules: str | None = None  # the rule set the solution is judged by (workdir.effective_rules)
    solution_format: str | None = None  # a CUDA Agent workdir's format; absent for a plain solution file
    op_seconds: dict[str, Any] | None = None  # per child and op: [requests, seconds]; set at cleanup

    def __post_init__(self) -> None:
        if not self.device:
            self.device = {"kind": self.device_kind}

    def set_timing(self, stats: dict[str, Any]) -> None:
        """The solution's timed calls: the reported runtime is their median."""
        self.stats = stats
        self.runtime_us = stats["median_us"]

    def set_baseline(self, mode: str, stats: dict[str, Any] | None, kernel_time_us: float | None) -> None:
        """A baseline's timing (eager or compile) and the speedups against it, where both sides have a figure."""
        if mode not in BASELINES:
            raise ValueError(f"no baseline {mode!r}: one of {BASELINES}")
        median = stats.get("median_us") if stats else None
        self.baselines[mode] = stats
        setattr(self, f"{mode}_us", median)
        if median and self.runtime_us:
            setattr(self, f"speedup_vs_{mode}", median / self.runtime_us)
        setattr(self, f"{mode}_kernel_time_us", kernel_time_us)
        if kernel_time_us and self.kernel_time_us:
            setattr(self, f"speedup_vs_{mode}_kernel_time", kernel_time_us / self.kernel_time_us)

    def accept(self) -> None:
        self.verdict, self.correct = "accepted", True

    def set_verdict(self, verdict: str, message: str, rule: str | None, *, trials_passed: bool) -> None:
        """The verdict an evaluation ended with before its end (session.Verdict): with any but `accepted`, no
        runtime or speedup is reported."""
        if verdict not in contract.VERDICTS:
            raise ValueError(f"unknown verdict {verdict!r}")
        self.verdict, self.message, self.rule = verdict, message, rule
        self.correct = verdict not in _NOT_CORRECT and trials_passed
        if verdict != "accepted":
            self.runtime_us = None
            self.speedup_vs_eager = self.speedup_vs_compile = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "verdict": self.verdict, "correct": self.correct, "runtime_us": self.runtime_us,
            "eager_us": self.eager_us, "compile_us": self.compile_us, "speedup_vs_eager": self.speedup_vs_eager,
            "speedup_vs_compile": self.speedup_vs_compile, "kernel_time_us": self.kernel_time_us,
            "eager_kernel_time_us": self.eager_kernel_time_us, "compile_kernel_time_us": self.compile_kernel_time_us,
            "speedup_vs_eager_kernel_time": self.speedup_vs_eager_kernel_time,
            "speedup_vs_compile_kernel_time": self.speedup_vs_compile_kernel_time, "message": self.message,
            "rule": self.rule, "stats": self.stats, "baselines": self.baselines, "device": self.device,
            "versions": self.versions, "isolation": self.isolation, "checks": self.checks,
            "language": self.language, "problem_hash": self.problem_hash, "solution_hash": self.solution_hash,
            "seed": self.seed, "wall_s": self.wall_s, "stage_seconds": self.stage_seconds,
        }
        if self.solution_format is not None:
            out["solution_format"] = self.solution_format
        if self.rules is not None:
            out["rules"] = self.rules
        if self.op_seconds is not None:
            out["op_seconds"] = self.op_seconds
        return out
