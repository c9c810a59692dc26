"""A runner's settings: every KERNELHUB_* variable an operator may set on a runner host, in one table, read and
checked at once (`RunnerConfig.from_env()`), then passed down as one frozen value.

Each entry point reads it once: `evaluate()` for an evaluation (and hands it to the phases, the timing loop, the
builds, the memory plan and the device lock), the Celery worker module and `serve` for a worker, the child for
the little it reads itself. A bad value is refused when it is read, with the variable, the value and what to
write instead, before anything runs. docs/EVALUATOR.md ("Configuration") and docs/RUNNERS.md describe each.

The evaluator also sets a few variables for its own children (INTERNAL_VARS: the lockdown it asks for, the
evaluation's marker, the child's user id); those are its protocol with the child, not settings.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

# Set by the evaluator for its children; never by an operator.
INTERNAL_VARS = frozenset({"KERNELHUB_LOCKDOWN", "KERNELHUB_LOCKDOWN_HIDE", "KERNELHUB_LOCKDOWN_NO_GPU",
                           "KERNELHUB_EVAL_MARKER", "KERNELHUB_SANDBOX_UID"})
# How long a timing loop runs on each device when KERNELHUB_TIMING_BUDGET_S does not say (seconds).
TIMING_BUDGET_S = {"cuda": 10.0, "cpu": 3.0}
OUTPUT_IPC_MODES = ("0", "1", "capability")
# The least address space the solution's child gets on the CPU track when the plan sets its limit (GiB): what one
# held by default before the plan set it, enough for torch and a problem of some hundreds of MiB.
CHILD_MEMORY_FLOOR_GB = 8.0


class ConfigError(ValueError):
    """A setting's value cannot be used; the message names the variable and says what to write."""


def _bad(var: str, raw: str, expected: str) -> ConfigError:
    return ConfigError(f"{var}={raw!r}: {expected}")


def _number(*, positive: bool = False, least: float | None = None) -> Callable[[str, str], float]:
    def parse(var: str, raw: str) -> float:
        try:
            value = float(raw)
        except ValueError:
            raise _bad(var, raw, "a number is expected") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise _bad(var, raw, "a finite number is expected")
        if positive and not value > 0:
            raise _bad(var, raw, "a positive number is expected")
        if least is not None and value < least:
            raise _bad(var, raw, f"a number of at least {least:g} is expected")
        return value
    return parse


def _integer(*, least: int = 0, note: str = "") -> Callable[[str, str], int]:
    def parse(var: str, raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise _bad(var, raw, f"an integer of {least} or more is expected{note}") from None
        if value < least:
            raise _bad(var, raw, f"an integer of {least} or more is expected{note}")
        return value
    return parse


def _flag(var: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value not in ("true", "false", "1", "0", "yes", "no", ""):
        raise _bad(var, raw, "use true or false")
    return value in ("true", "1", "yes")


def _choice(*choices: str, why: str) -> Callable[[str, str], str]:
    def parse(var: str, raw: str) -> str:
        value = raw.strip().lower()
        if value not in choices:
            raise _bad(var, raw, why)
        return value
    return parse


def _text(var: str, raw: str) -> str:
    return raw


def _path(var: str, raw: str) -> Path:
    return Path(raw).expanduser()


@dataclass(frozen=True)
class Setting:
    var: str
    parse: Callable[[str, str], Any]
    default: Any  # the value where the variable is unset or empty
    help: str


# field name -> its variable; the order is the order of docs/EVALUATOR.md's table.
SETTINGS: dict[str, Setting] = {
    # ----- the evaluation -----
    "cache_dir": Setting("KERNELHUB_CACHE_DIR", _path, None,
                         "the host's cache: builds, baselines, footprints, bandwidth (default ~/.cache/kernelhub)"),
    "work_dir": Setting("KERNELHUB_WORK_DIR", _path, None,
                        "where the children's directories go (default /dev/shm when large, else the cache's work/)"),
    "trials": Setting("KERNELHUB_TRIALS", _integer(least=1), 5,
                      "correctness trials (at least correctness.MIN_TRIALS are run whatever it says)"),
    "step_timeout_s": Setting("KERNELHUB_STEP_TIMEOUT_S", _number(positive=True), 120.0,
                              "seconds a child may take for one request"),
    "load_timeout_s": Setting("KERNELHUB_LOAD_TIMEOUT_S", _number(positive=True), 300.0,
                              "seconds a child may take to import and construct (builds not counted)"),
    "child_wall_s": Setting("KERNELHUB_CHILD_WALL_S", _number(positive=True), 900.0,
                            "a child's whole life, in seconds"),
    "child_memory_gb": Setting("KERNELHUB_CHILD_MEMORY_GB", _number(positive=True), None,
                               "a CPU-track child's address-space limit, GiB, fixed (trusted children get 1.5x); "
                               "unset: the solution's is set at its load from the memory plan, at least 8 GiB, and "
                               "the trusted children's is the host's memory"),
    "output_ipc": Setting("KERNELHUB_OUTPUT_IPC", _choice(*OUTPUT_IPC_MODES, why=(
        "use 0 (outputs through files), 1 (a slot of device memory for the solution's outputs) or capability "
        "(slots for both children's)")), "capability",
        "how outputs come back on a GPU: capability (the default) device-memory slots for both children's, each "
        "reachable only through a descriptor passed to that child; 1 a slot for the solution's alone (legacy "
        "handle; the reference's through files); 0 files"),
    "timing_budget_s": Setting("KERNELHUB_TIMING_BUDGET_S", _number(positive=True), None,
                               "seconds of timed calls per side (default 10 on a GPU, 3 on a CPU)"),
    "max_reps": Setting("KERNELHUB_MAX_REPS", _integer(least=1), 2000, "the most timed calls per side"),
    "run_calls": Setting("KERNELHUB_RUN_CALLS", _integer(least=1), None,
                         "timed calls per request (default 8 on a GPU, 1 on a CPU; capped at 100)"),
    "audit_samples": Setting("KERNELHUB_AUDIT_SAMPLES", _flag, False,
                             "keep every clock-audit sample in the result (for benchmarks)"),
    "head_start_max_us": Setting("KERNELHUB_HEAD_START_MAX_US", _number(least=0.0), 150.0,
                                 "the most head start before each timed call on a GPU, us (off: 0)"),
    "window_drain": Setting("KERNELHUB_WINDOW_DRAIN", _flag, True,
                            "end each timed window on a GPU once every stream's work has ended (gpu_runner/drain.py)"),
    "cuda_device_max_connections": Setting("KERNELHUB_CUDA_DEVICE_MAX_CONNECTIONS", _integer(least=1), 1,
                                           "hardware queues per child's CUDA context"),
    "host_memory_gb": Setting("KERNELHUB_HOST_MEMORY_GB", _number(positive=True), None,
                              "the most host memory the memory plan counts as free, GiB"),
    "device_memory_gb": Setting("KERNELHUB_DEVICE_MEMORY_GB", _number(positive=True), None,
                                "the most GPU memory the memory plan counts as free, GiB"),
    "gpu_lock_timeout_s": Setting("KERNELHUB_GPU_LOCK_TIMEOUT_S", _number(positive=True), 1800.0,
                                  "seconds an evaluation waits for the host's device lock"),
    "build_timeout_s": Setting("KERNELHUB_BUILD_TIMEOUT_S", _number(positive=True), 900.0,
                               "seconds one extension build may take (and all of a solution's together)"),
    "build_slots": Setting("KERNELHUB_BUILD_SLOTS", _integer(least=0, note=(
        " (0: no build slots, each evaluation builds for itself)")), None,
        "builds made ahead at once on a GPU host (default half the cores)"),
    "prescreen_timeout_s": Setting("KERNELHUB_PRESCREEN_TIMEOUT_S", _number(positive=True), 30.0,
                                   "seconds the static pre-screen may take"),
    "prescreen_memory_mb": Setting("KERNELHUB_PRESCREEN_MEMORY_MB", _number(positive=True), 2048.0,
                                   "the static pre-screen's memory limit, MiB"),
    "no_namespaces": Setting("KERNELHUB_NO_NAMESPACES", _flag, False,
                             "start children without Linux namespaces (tests of the fallback)"),
    # ----- the worker -----
    "site_url": Setting("KERNELHUB_SITE_URL", _text, "", "the site's base URL"),
    "runner_token": Setting("KERNELHUB_RUNNER_TOKEN", _text, "", "the runner's secret"),
    "broker_url": Setting("KERNELHUB_BROKER_URL", _text, "", "the Celery broker (serve sets it from the site)"),
    "worker_label": Setting("KERNELHUB_WORKER_LABEL", _text, "", "set by serve: the worker's GPU, e.g. cuda:0"),
    "keepalive_s": Setting("KERNELHUB_KEEPALIVE_S", _integer(least=1), 30, "seconds between a job's keep-alives"),
    "soft_time_limit_s": Setting("KERNELHUB_SOFT_TIME_LIMIT_S", _integer(least=1), 1800,
                                 "a job's soft time limit (serve sets it from the site)"),
    "time_limit_s": Setting("KERNELHUB_TIME_LIMIT_S", _integer(least=1), None,
                            "a job's hard time limit (default 1.2x the soft one)"),
    "visibility_timeout_s": Setting("KERNELHUB_VISIBILITY_TIMEOUT_S", _integer(least=1), 3 * 3600,
                                    "seconds before the broker hands an unacknowledged job out again"),
    "gpu_jobs": Setting("KERNELHUB_GPU_JOBS", _integer(least=1), 1,
                        "jobs a GPU runner takes at once per GPU (docs/RUNNERS.md, \"Several jobs per GPU\")"),
    "pause_solution": Setting("KERNELHUB_PAUSE_SOLUTION", _choice("auto", "1", "0", why=(
        "use auto (on where a GPU's worker takes more than one job), 1 or 0")), "auto",
        "stop the solution's process between its requests, its device work finished first, and run its requests "
        "under the device lock (auto: where KERNELHUB_GPU_JOBS is above 1 on a GPU; docs/RUNNERS.md)"),
    "prestart": Setting("KERNELHUB_PRESTART", _flag, True, "pre-start the next evaluation's processes"),
    "calibrate_every_s": Setting("KERNELHUB_CALIBRATE_EVERY_S", _number(), 6 * 3600.0,
                                 "seconds between calibrations between jobs (0 or less: never)"),
    "ane_chip": Setting("KERNELHUB_ANE_CHIP", _text, "", "a Mac runner's chip name, where the OS hides it"),
}


@dataclass(frozen=True)
class RunnerConfig:
    cache_dir: Path | None = None
    work_dir: Path | None = None
    trials: int = 5
    step_timeout_s: float = 120.0
    load_timeout_s: float = 300.0
    child_wall_s: float = 900.0
    child_memory_gb: float | None = None
    output_ipc: str = "capability"
    timing_budget_s: float | None = None
    max_reps: int = 2000
    run_calls: int | None = None
    audit_samples: bool = False
    head_start_max_us: float = 150.0
    window_drain: bool = True
    cuda_device_max_connections: int = 1
    host_memory_gb: float | None = None
    device_memory_gb: float | None = None
    gpu_lock_timeout_s: float = 1800.0
    build_timeout_s: float = 900.0
    build_slots: int | None = None
    prescreen_timeout_s: float = 30.0
    prescreen_memory_mb: float = 2048.0
    no_namespaces: bool = False
    site_url: str = ""
    runner_token: str = ""
    broker_url: str = ""
    worker_label: str = ""
    keepalive_s: int = 30
    soft_time_limit_s: int = 1800
    time_limit_s: int | None = None
    visibility_timeout_s: int = 3 * 3600
    gpu_jobs: int = 1
    pause_solution: str = "auto"
    prestart: bool = True
    calibrate_every_s: float = 6 * 3600.0
    ane_chip: str = ""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> RunnerConfig:
        """Every setting from `env` (default os.environ); unset or empty means the default. Raises ConfigError
        for the first value that cannot be used."""
        env = os.environ if env is None else env
        values = {}
        for name, s in SETTINGS.items():
            raw = env.get(s.var, "")
            values[name] = s.parse(s.var, raw) if raw.strip() else s.default
        return cls(**values)

    def __repr__(self) -> str:  # the runner's secret never reaches a log
        shown = {f.name: getattr(self, f.name) for f in fields(self)}
        if shown["runner_token"]:
            shown["runner_token"] = "***"
        return "RunnerConfig(" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + ")"

    # ----- derived values -----
    def cache_path(self) -> Path:
        return self.cache_dir or Path.home() / ".cache" / "kernelhub"

    def timing_budget(self, device: str) -> float:
        return self.timing_budget_s if self.timing_budget_s is not None else TIMING_BUDGET_S[device]

    def child_memory_bytes(self) -> int:
        """KERNELHUB_CHILD_MEMORY_GB in bytes; unset, the floor of the limit the plan sets (CHILD_MEMORY_FLOOR_GB)."""
        gb = self.child_memory_gb if self.child_memory_gb is not None else CHILD_MEMORY_FLOOR_GB
        return int(gb * (1 << 30))

    def child_memory_from_plan(self) -> bool:
        """Whether the solution's address-space limit on the CPU track follows the memory plan (the setting unset)
        rather than a fixed KERNELHUB_CHILD_MEMORY_GB (session.limits, memory_plan.solution_address_space)."""
        return self.child_memory_gb is None

    def hard_time_limit_s(self) -> int:
        return self.time_limit_s if self.time_limit_s is not None else int(self.soft_time_limit_s * 1.2)

    def build_slot_count(self) -> int:
        """How many builds a GPU host makes ahead at once (gpu_runner/prebuild.py): KERNELHUB_BUILD_SLOTS, by
        default half its cores (a load_inline build compiles its C++ wrapper and its CUDA file side by side, one
        core each, most of its time on one), so that the other half is left to the evaluations' own processes;
        at least one."""
        return self.build_slots if self.build_slots is not None else max(1, (os.cpu_count() or 1) // 2)

    def pauses_solution(self, device: str) -> bool:
        """Whether an evaluation on `device` keeps its solution's process stopped outside its requests
        (KERNELHUB_PAUSE_SOLUTION): by default where a GPU's worker takes several jobs, so that nothing of one
        solution runs while another evaluation times on that GPU."""
        if self.pause_solution == "auto":
            return device == "cuda" and self.gpu_jobs > 1
        return self.pause_solution == "1"


def setting(name: str, env: Mapping[str, str] | None = None) -> Any:
    """One setting alone, parsed and checked as from_env does: for a module whose callers have no RunnerConfig
    to hand (a direct call of a library function, a test)."""
    s = SETTINGS[name]
    raw = (os.environ if env is None else env).get(s.var, "")
    return s.parse(s.var, raw) if raw.strip() else s.default


def _shown(value: Any) -> str:
    if value is None or value == "":
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def markdown_table() -> str:
    """The settings as docs/EVALUATOR.md shows them ("Configuration"); a test keeps the two the same."""
    rows = ["| Variable | Default | What it sets |", "|---|---|---|"]
    rows += [f"| `{s.var}` | {_shown(s.default)} | {s.help} |" for s in SETTINGS.values()]
    return "\n".join(rows)


if __name__ == "__main__":  # python -m gpu_runner.config: the table for the docs, or the settings in force
    import sys

    if sys.argv[1:] == ["--markdown"]:
        print(markdown_table())
    else:
        try:
            print(RunnerConfig.from_env())
        except ConfigError as e:
            print(f"error: {e}", file=sys.stderr)
            sys.exit(2)
