"""Evaluating one ANE job on a Mac, through a MacBackend. Runs on macOS only (prediction needs Core ML).

Steps: check the reference file, compile the package, MLComputePlan placement with CPU_AND_NE, check every
input set (the published one and fresh ones drawn at dispatch), time on the last set with CPU_AND_NE (its
first and last timed outputs checked too), time the Core ML default baseline with ALL and CPU_ONLY, and ANE
power from powermetrics only when sudo allows it.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import platform
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from gpu_runner import cleanup

from . import mil
from .macos import MacBackend, outputs_compare, placement_shares, tflops_per_watt, timing_stats
from .package import PackageError, package_spec, package_unzip
from .problem import outputs_digest

WARMUP_CALLS = 10
MIN_CALLS = 50
MIN_SECONDS = 1.0
BASELINE_UNITS = ("ALL", "CPU_ONLY")


class JobError(Exception):
    """The job itself is unusable (the site's or this runner's problem, not the solution's)."""


def _result(verdict: str, message: str, **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "verdict": verdict, "correct": {"accepted": True, "wrong_answer": False}.get(verdict),
        "runtime_us": None, "eager_us": None, "compile_us": None, "speedup_vs_eager": None,
        "speedup_vs_compile": None, "message": message,
    }
    base.update(extra)
    return base


def reference_sets(ane: dict[str, Any]) -> list[tuple[list[np.ndarray], list[np.ndarray]]]:
    """(inputs, outputs) per input set from the job's npz, after checking the published set's digest."""
    try:
        data = np.load(io.BytesIO(base64.b64decode(ane["reference_b64"])), allow_pickle=False)
    except (KeyError, ValueError, OSError) as exc:
        raise JobError(f"the job's reference file is unreadable: {exc}") from exc
    def arrays(prefix: str) -> list[np.ndarray]:
        count = sum(1 for n in data.files if n.startswith(prefix) and n[len(prefix):].isdigit())
        return [data[f"{prefix}{i}"] for i in range(count)]

    sets = [(arrays(f"s{k}_in"), arrays(f"s{k}_out")) for k in range(int(ane["input_sets"]))]
    if not sets or outputs_digest(sets[0][1]) != ane["reference_digest"]:
        raise JobError("the job's reference outputs do not match their digest: the job was damaged in transit")
    return sets


def _feeds(spec_inputs: list[dict[str, Any]], arrays: list[np.ndarray]) -> dict[str, np.ndarray]:
    feeds = {}
    for desc, arr in zip(spec_inputs, arrays, strict=True):
        dtype = np.float16 if desc["dtype"] == "float16" else np.float32
        feeds[desc["name"]] = np.ascontiguousarray(arr, dtype=dtype)
    return feeds


def _ordered(outputs: dict[str, np.ndarray], spec_outputs: list[dict[str, Any]]) -> list[np.ndarray]:
    return [np.asarray(outputs[o["name"]]) for o in spec_outputs]


def evaluate_on_mac(ane: dict[str, Any], *, backend: MacBackend, chip: str,
                    on_stage: Callable[[str], None] = lambda stage: None) -> dict[str, Any]:
    sets = reference_sets(ane)
    atol, rtol = float(ane["atol"]), float(ane["rtol"])
    with tempfile.TemporaryDirectory(prefix="ane-job-") as tmp_name:
        tmp = Path(tmp_name)
        on_stage("compiling")
        try:
            pkg = package_unzip(base64.b64decode(ane["package_b64"]), tmp / "solution")
            spec = mil.analyze_spec(package_spec(pkg))
            compiled = backend.compile(pkg, tmp)
        except PackageError as exc:
            return _result("compile_error", str(exc))
        except Exception as exc:  # noqa: BLE001 - Core ML's refusal of the package is the solution's verdict
            return _result("compile_error", f"Core ML could not compile the package: {exc}")
        try:
            placement = placement_shares(backend.plan(compiled, "CPU_AND_NE"))
        except Exception as exc:  # noqa: BLE001 - a plan Core ML cannot give is reported, not fatal
            placement = {"error": f"MLComputePlan failed: {exc}"}

        on_stage("checking")
        try:
            for k, (ins, want) in enumerate(sets):
                got = _ordered(backend.predict(compiled, "CPU_AND_NE", _feeds(spec.inputs, ins)), spec.outputs)
                problem = outputs_compare(got, want, atol=atol, rtol=rtol)
                if problem:
                    return _result("wrong_answer", f"input set {k}: {problem}", placement=placement)
        except Exception as exc:  # noqa: BLE001
            return _result("runtime_error", f"prediction failed: {exc}", placement=placement)

        on_stage("timing")
        ins, want = sets[-1]
        feeds = _feeds(spec.inputs, ins)
        sampler = backend.power_sampler()
        try:
            if sampler is not None:
                with sampler:
                    run = backend.run_timed(compiled, "CPU_AND_NE", feeds, warmup=WARMUP_CALLS,
                                            min_calls=MIN_CALLS, min_seconds=MIN_SECONDS)
                watts = sampler.ane_watts()
            else:
                run = backend.run_timed(compiled, "CPU_AND_NE", feeds, warmup=WARMUP_CALLS,
                                        min_calls=MIN_CALLS, min_seconds=MIN_SECONDS)
                watts = None
        except Exception as exc:  # noqa: BLE001
            return _result("runtime_error", f"prediction failed while timing: {exc}", placement=placement)
        for label, outs in (("first", run.outputs_first), ("last", run.outputs_last)):
            problem = outputs_compare(_ordered(outs, spec.outputs), want, atol=atol, rtol=rtol)
            if problem:
                return _result("wrong_answer", f"the {label} timed call: {problem}", placement=placement)
        stats = timing_stats(run.seconds)
        baseline = _time_baseline(ane, backend, tmp, feeds_from=ins, chip=chip)

    flops = int(ane["flops"])
    median = stats["median_us"]
    tflops = flops / (median * 1e-6) / 1e12
    return _result(
        "accepted", "",
        runtime_us=median, p90_us=stats["p90_us"], calls=int(stats["calls"]),
        coreml_us=baseline["ALL"], coreml_cpu_us=baseline["CPU_ONLY"],
        speedup_vs_coreml=baseline["ALL"] / median, speedup_vs_coreml_cpu=baseline["CPU_ONLY"] / median,
        flops=flops, tflops=tflops, placement=placement,
        ane_power_w=watts, tflops_per_watt=tflops_per_watt(flops, median, watts),
        system={"chip": chip, "macos": platform.mac_ver()[0], "machine": platform.machine()},
    )


def baseline_cache_key(baseline_zip: bytes, *, chip: str, macos: str, coremltools: str) -> str:
    """Baseline timings depend on the package, the chip and the Core ML stack, nothing else."""
    h = hashlib.sha256(baseline_zip)
    h.update(f"|{chip}|{macos}|{coremltools}".encode())
    return h.hexdigest()


def baseline_cache_load(path: Path) -> dict[str, float] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not all(isinstance(data.get(u), float) and data[u] > 0 for u in BASELINE_UNITS):
        return None
    return {u: data[u] for u in BASELINE_UNITS}


def baseline_cache_store(path: Path, timings: dict[str, float]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({u: float(timings[u]) for u in BASELINE_UNITS}))
    tmp.replace(path)  # atomic: a reader never sees half a file


def _cache_dir() -> Path:
    return cleanup.cache_dir() / "ane_baselines"


def _time_baseline(ane: dict[str, Any], backend: MacBackend, tmp: Path, *, feeds_from: list[np.ndarray],
                   chip: str) -> dict[str, float]:
    """Median time of the Core ML default conversion with ALL (Core ML's default) and CPU_ONLY, cached."""
    import coremltools

    zipped = base64.b64decode(ane["baseline_b64"])
    key = baseline_cache_key(zipped, chip=chip, macos=platform.mac_ver()[0], coremltools=coremltools.__version__)
    cached = baseline_cache_load(_cache_dir() / f"{key}.json")
    if cached is not None:
        return cached
    pkg = package_unzip(zipped, tmp / "baseline")
    spec = mil.analyze_spec(package_spec(pkg))
    compiled = backend.compile(pkg, tmp / "baseline")
    feeds = _feeds(spec.inputs, feeds_from)
    out = {}
    for units in BASELINE_UNITS:
        run = backend.run_timed(compiled, units, feeds, warmup=WARMUP_CALLS, min_calls=MIN_CALLS,
                                min_seconds=MIN_SECONDS)
        out[units] = timing_stats(run.seconds)["median_us"]
    baseline_cache_store(_cache_dir() / f"{key}.json", out)
    return out
