"""The evaluator's result object, made readable for the submission page.

The page shows the verdict, times, speedups, statistics, device and versions on top; everything else the
evaluator reports goes into "How this was checked": human labels, units, durations instead of clock readings,
and never a path of the runner's host (redact_paths). A field the evaluator adds later still appears, under
a label made from its name, with its unit read from its suffix (_us, _s, _bytes, ...).
"""

from __future__ import annotations

import re
from typing import Any

from django.template.defaultfilters import filesizeformat

from apps.submissions.templatetags.kernelhub import us

# An absolute or home-relative path of two components or more ("~/.cache/kernelhub/work/x/solution.py",
# "/home/runner/..."): the runner's file system is nobody's business. A few names every Linux has stay.
_PATH = re.compile(r"(?<![\w.:/~-])(?:~|/)(?:[\w.@+-]*/)+[\w.@+-]*")
_KEPT_PATHS = {"/tmp", "/dev/shm", "/dev/null", "/proc", "/dev"}


def redact_paths(text: str) -> str:
    """`text` with each host path replaced by `…/<last component>` (kept: a file name and line still help)."""
    if not text or ("/" not in text):
        return text

    def replace(m: re.Match[str]) -> str:
        path = m.group(0)
        if path.rstrip("/") in _KEPT_PATHS or path.count("/") < 2 and not path.startswith("~"):
            return path
        last = path.rstrip("/").rsplit("/", 1)[-1]
        return f"…/{last}" if last and last != "~" else "…"

    return _PATH.sub(replace, text)


# --- labels and units ------------------------------------------------------------------------------------

LABELS = {
    # correctness
    "max_abs_err": "Largest absolute error", "max_rel_fro_err": "Relative error (Frobenius norm)",
    "timed_calls_checked": "Timed calls whose outputs were checked", "timing_input_sets": "Input sets for timing",
    "trials": "Correctness trials", "input_bytes": "Inputs per call", "output_bytes": "Outputs per call",
    "integrity": "Integrity findings", "prescreen": "Pre-screen findings", "fresh_inputs": "Fresh inputs",
    "memoization": "Memoization check", "first_call_median_us": "First call on a set (median)",
    "repeat_median_us": "Repeat calls on a set (median)", "suspicious": "Suspicious",
    "fresh_calls": "Calls on freshly generated inputs", "fresh_median_us": "Fresh inputs (median)",
    "reused_median_us": "Inputs changed in one element (median)", "fresh_lower_bound_us": "Fresh inputs (lower bound)",
    "wall_per_call_us": "Back-to-back calls, by the evaluator's clock", "speed_of_light": "Speed-of-light bound",
    "bandwidth_gbps": "Memory bandwidth assumed", "floor_us": "Fastest possible time", "least_bytes": "Bytes moved at least",
    "margin": "Margin allowed", "ok": "Passed", "clock_audit": "Clock audit",
    "timing_phases_us_reported": "Where the timed call's time went (the kernel's own report)",
    "builds": "Builds", "prestarted": "Processes started ahead", "stage_started_s": "Stages",
    "device_lock": "Device lock",
    "device_busy_us": "Device busy per profiled call",
    "event_time_over_device_busy": "Event time over the device's busy time (recorded, not a rule)",
    # device
    "name": "Name", "driver": "Driver", "compute_capability": "Compute capability", "sm_clock_mhz": "SM clock",
    "max_sm_clock_mhz": "Highest SM clock", "mem_clock_mhz": "Memory clock", "memory_total_bytes": "Memory",
    "power_w": "Power draw", "power_limit_w": "Power limit", "temperature_c": "Temperature",
    "utilization_pct": "Utilisation", "throttle_reasons": "Throttle reasons (NVML bit mask)", "at": "Read during",
    "kind": "Kind", "available": "Available", "uuid": "UUID",
    # isolation
    "env": "Environment", "fs": "File system", "namespaces": "Namespaces", "network": "Network",
    "pid_namespace": "Own process namespace", "process": "Process", "rlimits": "Resource limits",
    "address_space_bytes": "Address space", "address_space_at_start_bytes": "Address space at start", "cpu_s": "CPU time", "file_bytes": "Largest file", "tasks": "Tasks",
    "runtime_guards": "Runtime guards", "wall_clock_s": "Wall-clock limit", "observed": "Observed in the sandbox",
    "capabilities_dropped": "Capabilities dropped", "no_new_privs": "No new privileges",
    "own_mnt_namespace": "Own mount namespace", "own_net_namespace": "Own network namespace",
    "own_pid_namespace": "Own process namespace", "root_read_only": "Root read-only", "uid": "User id",
    "writable_mounts": "Writable mounts", "sandbox": "Sandbox",
    # top-level scalars
    "language": "Language", "seed": "Seed", "rule": "Rule broken", "wall_s": "Evaluation took",
    "problem_hash": "Problem (sha256)", "stage": "Stage",
}
STAGE_NAMES = {"prescreen": "Pre-screen", "compiling": "Compiling", "checking": "Checking correctness",
               "timing": "Timing", "baselines": "Timing the baselines", "queued": "Queued"}
_UNIT_SUFFIXES = (("_us", "us"), ("_ms", "ms"), ("_s", "s"), ("_bytes", "bytes"), ("_mhz", "MHz"), ("_w", "W"),
                  ("_c", "°C"), ("_pct", "%"), ("_gbps", "GB/s"))
# Keys that are readings of a wall clock (seconds since 1970): shown as durations from the first one, or not at all.
_CLOCK_KEYS = ("held_from", "held_until", "started_at", "finished_at", "at_s", "t0", "t1")
# What the page shows in its own sections (verdict, times, statistics, logs, device and versions).
SHOWN_ELSEWHERE = {
    "verdict", "correct", "runtime_us", "eager_us", "compile_us", "speedup_vs_eager", "speedup_vs_compile",
    "message", "compile_log", "log", "stats", "baselines", "times_us", "device", "versions", "solution_hash",
}


def label(key: str) -> str:
    if key in LABELS:
        return LABELS[key]
    words = key
    for suffix, _unit in _UNIT_SUFFIXES:
        if words.endswith(suffix):
            words = words[: -len(suffix)]
            break
    words = words.replace("_", " ").replace(".", " ").strip()
    return words[:1].upper() + words[1:] if words else key


def seconds(value: float) -> str:
    """A duration for people: 0.4 ms, 85 ms, 3.2 s, 2 min 05 s."""
    if value < 0.001:
        return f"{value * 1e6:.0f} µs"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 60:
        return f"{value:.1f} s"
    minutes, rest = divmod(round(value), 60)
    return f"{minutes} min {rest:02d} s"


def value_text(key: str, value: Any) -> str:
    """One value, in the unit its key names; strings with host paths redacted."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "–"
    if isinstance(value, int | float):
        for suffix, unit in _UNIT_SUFFIXES:
            if key.endswith(suffix):
                if unit == "us":
                    return us(value)
                if unit == "ms":
                    return seconds(value / 1000)
                if unit == "s":
                    return seconds(float(value))
                if unit == "bytes":
                    return str(filesizeformat(value))
                return f"{value:g} {unit}" if unit != "%" else f"{value:g}%"
        if isinstance(value, float):
            return f"{value:.4g}"
        return str(value)
    if isinstance(value, list | tuple):
        if not value:
            return "none"
        return "; ".join(value_text(key, v) if not isinstance(v, dict) else _inline(v) for v in value)
    if isinstance(value, dict):
        return _inline(value)
    return redact_paths(str(value))


def _inline(d: dict[str, Any]) -> str:
    return ", ".join(f"{label(k).lower()} {value_text(k, v)}" for k, v in d.items()
                     if not any(k.endswith(c) for c in _CLOCK_KEYS))


def rows_of(d: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """A dict as (label, text) rows: nested dicts indented by their parent's label, never dumped."""
    rows: list[tuple[str, str]] = []
    for key, value in d.items():
        if any(key.endswith(c) for c in _CLOCK_KEYS):
            continue
        name = f"{prefix}{label(key)}"
        if isinstance(value, dict) and value:
            rows.extend(rows_of(value, prefix=f"{name} · "))
        else:
            rows.append((name, value_text(key, value)))
    return rows


# --- the sections ------------------------------------------------------------------------------------------


def stage_durations(started: dict[str, Any], total_s: float | None) -> list[tuple[str, str]]:
    """`stage_started_s` (seconds since the evaluation began, per stage) as how long each stage took."""
    points = sorted((float(v), k) for k, v in started.items() if isinstance(v, int | float))
    rows = []
    for i, (t, name) in enumerate(points):
        end = points[i + 1][0] if i + 1 < len(points) else total_s
        took = seconds(end - t) if end is not None and end >= t else "until the end"
        rows.append((STAGE_NAMES.get(name, label(name)), f"{took} (from {seconds(t)} on)"))
    return rows


def device_lock_rows(holds: list[Any]) -> list[tuple[str, str]]:
    """Each hold of the host's device lock: how long it waited and held it (not the clock readings)."""
    rows = []
    for h in holds:
        if not isinstance(h, dict):
            continue
        held = None
        if isinstance(h.get("held_from"), int | float) and isinstance(h.get("held_until"), int | float):
            held = h["held_until"] - h["held_from"] if h["held_until"] >= h["held_from"] else None
        phase = str(h.get("phase", "?"))
        mode = "shared" if h.get("shared") else "exclusive"
        waited = h.get("waited_s")
        text = f"{mode}; waited {seconds(float(waited)) if isinstance(waited, int | float) else '–'}"
        if held is not None:
            text += f", held {seconds(held)}"
        rows.append((f"While {STAGE_NAMES.get(phase, phase)}", text))
    return rows


def build_rows(builds: list[Any]) -> list[tuple[str, str]]:
    rows = []
    for b in builds:
        if not isinstance(b, dict):
            continue
        took = b.get("seconds")
        how = "from the build cache" if b.get("cached") else (f"built in {seconds(float(took))}"
                                                                 if isinstance(took, int | float) else "built")
        rows.append((redact_paths(str(b.get("name", "extension"))), f"{how}{'' if b.get('ok', True) else ', failed'}"))
    return rows


PRECISION_LABELS = {
    "rule": "Precision required", "checked": "Precision checked against float64",
    "error_vs_fp64": "Error against float64", "reference_error_vs_fp64": "PyTorch float32's own error against float64",
    "bound": "Bound on the error against float64", "of_bound": "Share of that bound", "note": "Precision note",
}


def checked_sections(result: dict[str, Any]) -> list[dict[str, Any]]:
    """[{title, rows}] for "How this was checked", in the order a reader asks: was it right, was the clock
    honest, how was it built and run, what isolated it."""
    given = result.get("checks")
    checks = dict(given) if isinstance(given, dict) else {}
    sections: list[dict[str, Any]] = []

    def add(title: str, rows: list[tuple[str, str]], key: str) -> None:
        if rows:
            sections.append({"title": title, "rows": rows, "key": key})

    correctness = [(label(k), value_text(k, checks.pop(k))) for k in
                   ("max_abs_err", "max_rel_fro_err", "trials", "timed_calls_checked", "timing_input_sets",
                    "input_bytes", "output_bytes", "prescreen", "integrity") if k in checks]
    if isinstance(checks.get("precision"), dict):  # the precision rule's figures (docs/EVALUATOR.md)
        figures = checks.pop("precision")
        correctness.extend((name, value_text(k, figures[k])) for k, name in PRECISION_LABELS.items() if k in figures)
    add("Correctness", correctness, "correctness")

    timing: list[tuple[str, str]] = []
    for k in ("memoization", "fresh_inputs", "speed_of_light", "clock_audit", "timing_phases_us_reported"):
        v = checks.pop(k, None)
        if isinstance(v, dict):
            timing.extend(rows_of(v, prefix=f"{label(k)} · "))
        elif v is not None:
            timing.append((label(k), value_text(k, v)))
    if "wall_per_call_us" in checks:
        timing.append((label("wall_per_call_us"), value_text("wall_per_call_us", checks.pop("wall_per_call_us"))))
    add("Timing checks", timing, "timing")

    steps = stage_durations(checks.pop("stage_started_s", {}) or {}, result.get("wall_s"))
    steps += build_rows(checks.pop("builds", []) or [])
    steps += device_lock_rows(checks.pop("device_lock", []) or [])
    if isinstance(result.get("wall_s"), int | float):
        steps.append(("The whole evaluation", seconds(float(result["wall_s"]))))
    add("Stages, builds and the device lock", steps, "stages")

    if isinstance(result.get("isolation"), dict):
        add("Isolation of the submitted code", rows_of(result["isolation"]), "isolation")

    other = rows_of(checks)
    for key, value in result.items():
        if key in SHOWN_ELSEWHERE or key in ("checks", "isolation", "wall_s"):
            continue
        if isinstance(value, dict):
            other.extend(rows_of(value, prefix=f"{label(key)} · "))
        else:
            other.append((label(key), value_text(key, value)))
    add("Other figures", other, "other")
    return sections


DEVICE_KEYS = ("name", "compute_capability", "driver", "memory_total_bytes", "sm_clock_mhz", "max_sm_clock_mhz",
               "mem_clock_mhz", "temperature_c", "power_w", "power_limit_w", "utilization_pct", "throttle_reasons",
               "at")


def device_rows(result: dict[str, Any], system_info: dict[str, Any]) -> list[tuple[str, str]]:
    device = result.get("device") if isinstance(result.get("device"), dict) else system_info.get("device")
    if not isinstance(device, dict):
        return []
    rows = [(label(k), value_text(k, device[k])) for k in DEVICE_KEYS if k in device and k != "at"]
    # What the evaluator adds later shows too, after the known fields.
    rows += rows_of({k: v for k, v in device.items() if k not in DEVICE_KEYS and k not in ("available", "kind")})
    if "at" in device:
        rows.append(("Read during", STAGE_NAMES.get(str(device["at"]), str(device["at"]))))
    return rows


def version_rows(result: dict[str, Any], system_info: dict[str, Any]) -> list[tuple[str, str]]:
    versions = result.get("versions") if isinstance(result.get("versions"), dict) else system_info.get("versions")
    if not isinstance(versions, dict):
        return []
    names = {"cxx": "C++ compiler", "cuda": "CUDA", "cuda_runtime": "CUDA runtime", "cudnn": "cuDNN",
             "cupy": "CuPy", "evaluator": "Evaluator", "numpy": "NumPy", "python": "Python", "torch": "PyTorch",
             "triton": "Triton"}
    return [(names.get(k, label(k)), value_text(k, v)) for k, v in versions.items()]
