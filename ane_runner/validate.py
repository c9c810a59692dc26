"""`validate`: build or unpack a solution, check it against the ANE's rules and the problem, convert the
baseline. Runs on Linux (coremltools converts there; it cannot predict there)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from gpu_runner import sandbox
from gpu_runner.protocol import ChannelClosed, ChannelTimeout, ProtocolError

from . import mil
from .macos import outputs_compare
from .numpy_check import MAX_FLOPS, Unsupported, numpy_evaluate
from .package import (
    MAX_PACKAGE_BYTES,
    PackageError,
    package_find,
    package_spec,
    package_unzip,
    package_weights_bytes,
    package_zip,
)
from .problem import (
    DIGEST_INPUT_SEED,
    WEIGHTS_SEED,
    Problem,
    outputs_digest,
    problem_load,
    reference_inputs,
    reference_model,
    reference_outputs,
    weights_npz_bytes,
)

BUILD_TIMEOUT_S = 300
# torch and coremltools map about 2 GiB of address space on import; a builder gets room for its weights.
BUILD_MEMORY_BYTES = 12 << 30


def solution_kind(data: bytes, name: str = "") -> str:
    """`package` for a zipped .mlpackage, `python` for a builder file."""
    if data[:4] == b"PK\x03\x04" or name.endswith(".zip"):
        return "package"
    return "python"


def validate(problem_source: str, solution: bytes, *, solution_name: str = "", baseline: bool = True,
             timeout_s: float = BUILD_TIMEOUT_S) -> tuple[dict[str, Any], bytes | None, bytes | None]:
    """Return (report, zipped solution package or None, zipped baseline package or None).

    The report is exactly what `python -m ane_runner validate --json` prints. Never raises for anything
    the solution does: its failures become issues (rule `build` or `package`) and `eligible: false`.
    """
    problem = problem_load(problem_source)
    inputs = reference_inputs(problem, seed=DIGEST_INPUT_SEED)
    outputs = reference_outputs(problem, inputs)
    report: dict[str, Any] = {
        "eligible": False, "ops": {}, "flops": 0, "flops_dense": 0, "issues": [],
        "reference": {
            "digest": outputs_digest(outputs), "weights_seed": WEIGHTS_SEED, "input_seed": DIGEST_INPUT_SEED,
            "inputs": [list(x.shape) for x in inputs], "outputs": [list(o.shape) for o in outputs],
            "atol": problem.atol, "rtol": problem.rtol,
        },
        "conversion": {"coremltools": _coremltools_version()},
        "error": None,
    }
    package_bytes: bytes | None = None
    with tempfile.TemporaryDirectory(prefix="ane-validate-") as tmp:
        pkg_dir = _solution_package(problem, solution, solution_name, Path(tmp), report, timeout_s)
        if pkg_dir is not None:
            try:
                spec = package_spec(pkg_dir)
            except PackageError as exc:
                report["error"] = str(exc)
                report["issues"].append({"op": None, "rule": "package", "detail": str(exc)})
            else:
                a = mil.analyze_spec(spec)
                _fill(report, a, spec, pkg_dir)
                _check_interface(report, a, [list(x.shape) for x in inputs], [list(o.shape) for o in outputs])
                report["numpy_check"] = numpy_check(pkg_dir, spec, report, inputs, outputs, problem)
                package_bytes = package_zip(pkg_dir)
    baseline_bytes = None
    if baseline:
        try:
            report["baseline"], baseline_bytes = baseline_convert(problem, inputs)
        except Exception as exc:  # noqa: BLE001 - the problem's fault, reported beside the solution's verdict
            report["baseline"] = {"error": f"the reference Model does not convert with ct.convert's defaults: "
                                           f"{type(exc).__name__}: {str(exc)[:500]}"}
    report["eligible"] = report["error"] is None and not report["issues"]
    return report, package_bytes, baseline_bytes


def _coremltools_version() -> str:
    import coremltools

    return str(coremltools.__version__)


def _solution_package(problem: Problem, solution: bytes, name: str, tmp: Path, report: dict[str, Any],
                      timeout_s: float) -> Path | None:
    conv = report["conversion"]
    if solution_kind(solution, name) == "package":
        conv["source"] = "package"
        try:
            return package_unzip(solution, tmp / "upload")
        except PackageError as exc:
            report["error"] = str(exc)
            report["issues"].append({"op": None, "rule": "package", "detail": str(exc)})
            return None
    try:
        source = solution.decode("utf-8")
    except UnicodeDecodeError:
        refusal = "the solution is neither a zip (.mlpackage) nor UTF-8 Python source"
        report["error"] = refusal
        report["issues"].append({"op": None, "rule": "package", "detail": refusal})
        return None
    work = sandbox.new_workdir("ane-build-")
    msg: str | None = None
    try:
        (work / "out").mkdir()
        (work / "solution.py").write_text(source)
        (work / "weights.npz").write_bytes(weights_npz_bytes(problem))
        init = list(problem.module.get_init_inputs())
        (work / "request.json").write_text(json.dumps({
            "input_shapes": report["reference"]["inputs"],
            "init_inputs": [x if isinstance(x, int | float | bool | str) else repr(x) for x in init],
        }))
        msg, result, isolation = _run_builder(work, timeout_s, conv)
        conv["sandbox"] = isolation
        if msg is None:
            conv["source"] = "builder" if result.get("kind") == "builder" else "modelnew"
            try:
                found = package_find(work / "out")
            except PackageError as exc:
                msg = str(exc)
            else:
                size = sum(os.lstat(os.path.join(d, f)).st_size for d, _, fs in os.walk(found) for f in fs)
                if size > MAX_PACKAGE_BYTES:
                    msg = f"the built package is {size} bytes; the limit is {MAX_PACKAGE_BYTES}"
                else:
                    shutil.copytree(found, tmp / "solution.mlpackage", symlinks=True)
                    return tmp / "solution.mlpackage"
    finally:
        shutil.rmtree(work, ignore_errors=True)
    conv.setdefault("source", "python")
    report["error"] = msg
    report["issues"].append({"op": None, "rule": "build", "detail": msg})
    return None


def _run_builder(work: Path, timeout_s: float, conv: dict[str, Any]) -> tuple[str | None, dict[str, Any], dict[str, Any]]:
    """Run the harness in gpu_runner's sandbox; (error message or None, its result.json, isolation record)."""
    limits = sandbox.Limits(wall_s=timeout_s, cpu_s=int(timeout_s) + 5, memory_bytes=BUILD_MEMORY_BYTES,
                            file_bytes=2 << 30)
    t0 = time.monotonic()
    child = sandbox.spawn(["-m", "ane_runner._builder_child", str(work)], workdir=work, limits=limits)
    isolation = dict(child.isolation)
    try:
        # the harness reports its confinement before any solution code runs; none came: it is not in force
        message = child.channel.recv(deadline=t0 + timeout_s)
        reported = message.get("isolation") if isinstance(message, dict) else None
        if isinstance(reported, dict):
            isolation.update({k: v for k, v in reported.items() if k in ("lockdown", "landlock")})
    except (ChannelClosed, ChannelTimeout, ProtocolError):
        isolation["landlock"] = "unknown: the harness reported nothing before the solution ran"
    try:
        child.proc.wait(timeout=max(0.0, t0 + timeout_s - time.monotonic()))
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        log = child.log_tail()
        exit_text = child.exit_description()
        sandbox.kill(child, remove_dir=False)
    conv["build_s"] = round(time.monotonic() - t0, 2)
    result: Any = {}
    try:
        path = work / "result.json"
        if path.is_file() and not path.is_symlink():
            result = json.loads(path.read_bytes()[:100_000] or b"{}")
    except (OSError, ValueError):
        result = {}
    if not isinstance(result, dict):
        result = {}
    if timed_out:
        return f"the builder ran over {timeout_s:.0f} s and was stopped: build the model faster", result, isolation
    if not result.get("ok"):
        err = result.get("error")
        tail = "\n".join(log.strip().splitlines()[-15:])
        return (str(err) if err else f"the builder {exit_text} without a model:\n{tail}"), result, isolation
    return None, result, isolation


def numpy_check(pkg_dir: Path, spec: Any, report: dict[str, Any], inputs: list[Any], outputs: list[Any],
                problem: Problem) -> dict[str, Any]:
    """Advisory: the graph evaluated with numpy (not Core ML) against the reference. Never decides eligibility."""
    if any(i["rule"] == "interface" for i in report["issues"]):
        return {"ran": False, "detail": "skipped: the interface differs from the problem's"}
    if report.get("flops", 0) > MAX_FLOPS:
        return {"ran": False, "detail": f"skipped: {report['flops']:.3g} estimated FLOPs is over the checker's "
                                        f"{MAX_FLOPS:.3g}"}
    try:
        got = numpy_evaluate(pkg_dir, spec, [x.float().numpy() for x in inputs])
    except Unsupported as exc:
        return {"ran": False, "detail": str(exc)}
    except Exception as exc:  # noqa: BLE001 - an odd graph must not break validation
        return {"ran": False, "detail": f"the numpy checker failed: {type(exc).__name__}: {exc}"}
    mismatch = outputs_compare(got, outputs, atol=problem.atol, rtol=problem.rtol)
    err = max((float(np.max(np.abs(g - w))) for g, w in zip(got, outputs, strict=True)), default=0.0)
    return {"ran": True, "matches": mismatch is None, "detail": mismatch, "max_abs_err": err}


def _fill(report: dict[str, Any], a: mil.Analysis, spec: Any, pkg_dir: Path) -> None:
    report["ops"] = dict(sorted(a.ops.items()))
    report["flops"] = a.flops
    report["flops_dense"] = a.flops_dense
    report["issues"].extend(a.issues)
    report["conversion"].update({
        "specification_version": int(spec.specificationVersion), "opset": a.opset,
        "inputs": a.inputs, "outputs": a.outputs, "consts": a.consts,
        "package_bytes": sum(p.stat().st_size for p in pkg_dir.rglob("*") if p.is_file()),
        "weights_bytes": package_weights_bytes(pkg_dir),
    })


def _check_interface(report: dict[str, Any], a: mil.Analysis, in_shapes: list[list[int]],
                     out_shapes: list[list[int]]) -> None:
    issues = report["issues"]
    got_in = [i["shape"] for i in a.inputs]
    got_out = [o["shape"] for o in a.outputs]
    if got_in != in_shapes:
        issues.append({"op": None, "rule": "interface", "detail": f"the model's inputs have shapes {got_in}; the "
                       f"problem's get_inputs() gives {in_shapes} (same order)"})
    if got_out != out_shapes:
        issues.append({"op": None, "rule": "interface", "detail": f"the model's outputs have shapes {got_out}; the "
                       f"reference returns {out_shapes} (same order)"})


def baseline_convert(problem: Problem, inputs: list[Any]) -> tuple[dict[str, Any], bytes]:
    """The reference Model through `ct.convert` with its defaults: what Core ML gives you.

    ML program, fp16 compute (the default precision for ML programs), fp32 inputs and outputs, default
    deployment target. The Mac times the same package with compute_units ALL (the default) and CPU_ONLY.
    """
    import coremltools as ct
    import torch

    model = reference_model(problem)
    t0 = time.monotonic()
    with torch.no_grad():
        traced = torch.jit.trace(model, [x.float() for x in inputs])
    mlmodel = ct.convert(traced, inputs=[ct.TensorType(name=f"x{i}", shape=tuple(x.shape))
                                         for i, x in enumerate(inputs)],
                         convert_to="mlprogram", skip_model_load=True)
    seconds = round(time.monotonic() - t0, 2)
    with tempfile.TemporaryDirectory(prefix="ane-baseline-") as tmp:
        pkg = Path(tmp) / "baseline.mlpackage"
        mlmodel.save(str(pkg))
        spec = package_spec(pkg)
        a = mil.analyze_spec(spec)
        outputs = reference_outputs(problem, inputs)
        checked = numpy_check(pkg, spec, {"issues": [], "flops": a.flops}, inputs, outputs, problem)
        info: dict[str, Any] = {
            "ops": dict(sorted(a.ops.items())), "flops": a.flops, "flops_dense": a.flops_dense,
            "issues": a.issues, "compute_units": ["ALL", "CPU_ONLY"], "numpy_check": checked,
            "conversion": {"source": "ct.convert defaults", "compute_precision": "fp16",
                           "specification_version": int(spec.specificationVersion), "opset": a.opset,
                           "inputs": a.inputs, "outputs": a.outputs, "convert_s": seconds},
        }
        return info, package_zip(pkg)
