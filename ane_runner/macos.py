"""The macOS side, behind one interface: compile, place, run, power. Only this file touches Core ML's runtime.

Nothing in `CoreMLBackend` has run on a Mac within this project (no Mac was available): it is written to
coremltools 9's documented API and must be proven on a runner Mac before its numbers are published. The
pure functions below it (placement shares, powermetrics parsing, timing statistics, output comparison)
are what the tests cover on Linux.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np


@dataclass(frozen=True)
class PlacedOp:
    """One op of a compute plan: where Core ML prefers to run it, and its share of the estimated cost."""

    op_type: str
    device: str | None  # "ane", "gpu", "cpu"; None when Core ML could not tell
    cost: float | None  # MLComputePlanCost.weight, a fraction of the model's total; None when unknown


@dataclass(frozen=True)
class TimedRun:
    outputs_first: dict[str, np.ndarray]  # outputs of the first and last timed calls, checked by the caller
    outputs_last: dict[str, np.ndarray]
    seconds: list[float]  # one per timed call


class MacBackend(Protocol):
    def compile(self, package_dir: Path, dest_dir: Path) -> Path:
        """Compile a .mlpackage into a .mlmodelc directory; raise on a package Core ML refuses."""

    def plan(self, compiled: Path, compute_units: str) -> list[PlacedOp]:
        """MLComputePlan placement of every op of the main function (const ops excluded)."""

    def predict(self, compiled: Path, compute_units: str, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """One prediction (checked runs)."""

    def run_timed(self, compiled: Path, compute_units: str, inputs: dict[str, np.ndarray], *, warmup: int,
                  min_calls: int, min_seconds: float) -> TimedRun:
        """Warm up, then call predict until both minima are met, timing each call."""

    def power_sampler(self) -> PowerSampler | None:
        """A powermetrics sampler when this runner may run it through sudo without a password, else None."""


# ---- pure logic, tested on Linux ------------------------------------------------------------------------

def placement_shares(ops: list[PlacedOp]) -> dict[str, Any]:
    """Share of ops and of estimated cost on the Neural Engine, and op counts per device."""
    counted = [o for o in ops if o.op_type != "const"]
    per_device: dict[str, int] = {}
    for o in counted:
        per_device[o.device or "unknown"] = per_device.get(o.device or "unknown", 0) + 1
    n = len(counted)
    costs = [o.cost for o in counted if o.cost is not None]
    total_cost = sum(costs)
    ane_cost = sum(o.cost for o in counted if o.cost is not None and o.device == "ane")
    return {
        "ops": n,
        "ops_by_device": dict(sorted(per_device.items())),
        "ane_op_share": (per_device.get("ane", 0) / n) if n else None,
        # cost weights are fractions of the whole model; renormalise over the ops that reported one
        "ane_cost_share": (ane_cost / total_cost) if total_cost > 0 else None,
    }


_POWER_LINE = re.compile(r"^\s*(ANE|CPU|GPU) Power:\s*([0-9.]+)\s*mW\s*$", re.MULTILINE)


def parse_powermetrics(text: str) -> dict[str, list[float]]:
    """Per-sample power in milliwatts from `powermetrics --samplers cpu_power` text output."""
    samples: dict[str, list[float]] = {"ANE": [], "CPU": [], "GPU": []}
    for unit, mw in _POWER_LINE.findall(text):
        samples[unit].append(float(mw))
    return samples


def timing_stats(seconds: list[float]) -> dict[str, float]:
    """Median and p90 (nearest rank) in microseconds."""
    if not seconds:
        raise ValueError("no timed calls")
    xs = sorted(seconds)
    n = len(xs)
    median = xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
    p90 = xs[min(n - 1, max(0, -(-9 * n // 10) - 1))]
    return {"median_us": median * 1e6, "p90_us": p90 * 1e6, "min_us": xs[0] * 1e6, "calls": float(n)}


def outputs_compare(got: list[np.ndarray], want: list[np.ndarray], *, atol: float, rtol: float) -> str | None:
    """None when every output matches within tolerance, else a message saying where it does not."""
    if len(got) != len(want):
        return f"the model returned {len(got)} outputs; the reference has {len(want)}"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        g = np.asarray(g, dtype=np.float32)
        if g.shape != w.shape:
            return f"output {i} has shape {list(g.shape)}; the reference's is {list(w.shape)}"
        if not np.all(np.isfinite(g)):
            return f"output {i} has NaN or infinite values"
        err = np.abs(g - w)
        bad = err > atol + rtol * np.abs(w)
        if bad.any():
            return (f"output {i}: {int(bad.sum())} of {bad.size} values outside atol={atol}, rtol={rtol} "
                    f"(max abs error {float(err.max()):.4g})")
    return None


def tflops_per_watt(flops: int, median_us: float, ane_watts: float | None) -> float | None:
    if not ane_watts or ane_watts <= 0 or median_us <= 0:
        return None
    return flops / (median_us * 1e-6) / 1e12 / ane_watts


# ---- Core ML runtime (macOS only; never run by this project) --------------------------------------------

class PowerSampler:
    """powermetrics in the background during a timed loop; mean ANE power over its samples."""

    def __init__(self, interval_ms: int = 100) -> None:
        self.interval_ms = interval_ms
        self.proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> PowerSampler:
        self.proc = subprocess.Popen(
            ["sudo", "-n", "/usr/bin/powermetrics", "--samplers", "cpu_power", "-i", str(self.interval_ms)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        time.sleep(2 * self.interval_ms / 1000)  # let its first sample start before the loop does
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()

    def ane_watts(self) -> float | None:
        if self.proc is None:
            return None
        try:
            out, _ = self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
        ane = parse_powermetrics(out)["ANE"]
        return (sum(ane) / len(ane) / 1000.0) if ane else None


class CoreMLBackend:
    """coremltools 9 on macOS 15 or later."""

    def __init__(self) -> None:
        if sys.platform != "darwin":
            raise RuntimeError("the Core ML backend runs on macOS only: prediction does not exist on Linux")
        import coremltools as ct

        self.ct: Any = ct
        self._models: dict[tuple[str, str], Any] = {}

    def _units(self, name: str) -> Any:
        return getattr(self.ct.ComputeUnit, name)

    def _model(self, compiled: Path, compute_units: str) -> Any:
        key = (str(compiled), compute_units)
        if key not in self._models:
            self._models[key] = self.ct.models.CompiledMLModel(str(compiled), compute_units=self._units(compute_units))
        return self._models[key]

    def compile(self, package_dir: Path, dest_dir: Path) -> Path:
        from coremltools.models.utils import compile_model

        return Path(compile_model(str(package_dir), str(dest_dir / "model.mlmodelc")))

    def plan(self, compiled: Path, compute_units: str) -> list[PlacedOp]:
        from coremltools.models.compute_device import (
            MLCPUComputeDevice,
            MLGPUComputeDevice,
            MLNeuralEngineComputeDevice,
        )
        from coremltools.models.compute_plan import MLComputePlan

        plan = MLComputePlan.load_from_path(path=str(compiled), compute_units=self._units(compute_units))
        program = plan.model_structure.program
        if program is None:
            raise RuntimeError("the compiled model is not an ML program")
        placed = []
        for op in program.functions["main"].block.operations:
            usage = plan.get_compute_device_usage_for_mlprogram_operation(op)
            cost = plan.get_estimated_cost_for_mlprogram_operation(op)
            dev = usage.preferred_compute_device if usage else None
            device = ("ane" if isinstance(dev, MLNeuralEngineComputeDevice) else
                      "gpu" if isinstance(dev, MLGPUComputeDevice) else
                      "cpu" if isinstance(dev, MLCPUComputeDevice) else None)
            placed.append(PlacedOp(op.operator_name, device, cost.weight if cost else None))
        return placed

    def predict(self, compiled: Path, compute_units: str, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(self._model(compiled, compute_units).predict(inputs))

    def run_timed(self, compiled: Path, compute_units: str, inputs: dict[str, np.ndarray], *, warmup: int,
                  min_calls: int, min_seconds: float) -> TimedRun:
        model = self._model(compiled, compute_units)
        for _ in range(warmup):
            model.predict(inputs)
        seconds: list[float] = []
        first: dict[str, np.ndarray] = {}
        last: dict[str, np.ndarray] = {}
        start = time.perf_counter()
        while len(seconds) < min_calls or time.perf_counter() - start < min_seconds:
            t0 = time.perf_counter()
            out = model.predict(inputs)
            seconds.append(time.perf_counter() - t0)
            if not first:
                first = dict(out)
            last = out
        return TimedRun(first, dict(last), seconds)

    def power_sampler(self) -> PowerSampler | None:
        if not shutil.which("sudo") or not Path("/usr/bin/powermetrics").exists():
            return None
        probe = subprocess.run(["sudo", "-n", "/usr/bin/powermetrics", "--samplers", "cpu_power", "-n", "1",
                                "-i", "100"], capture_output=True, text=True, timeout=30)
        if probe.returncode != 0 or not parse_powermetrics(probe.stdout)["ANE"]:
            return None
        return PowerSampler()
