"""The precision rule: a float32 problem is solved at float32-class precision, not in TF32 or bfloat16.

The trusted reference child runs the problem's Model a second time, with its parameters and floating inputs
in float64 (child.py op_trial), on the checked trials only. Against that ground truth the parent measures
two relative errors per floating output,

    err_sol = ||sol - ref64|| / ||ref64||      err_ref = ||ref32 - ref64|| / ||ref64||

and rejects when err_sol > bound = scale(level) * (MULTIPLE * err_ref + FLOOR). err_ref is the error of
PyTorch's own float32 kernels on this problem, so the bound grows with what the problem makes float32 lose
(long reductions, cancellation); FLOOR covers outputs where PyTorch's float32 is exact or nearly so
(elementwise ops: err_ref 0 or 1e-8), where a different but honest float32 formula (FMA, another
exp or erf) still differs by a few units in the last place. scale(level) is the unit roundoff of the
precision the problem allows over float32's (1 for "fp32", 2**13 for "tf32", 2**16 for "bf16").
The figures behind MULTIPLE and FLOOR: docs/EVALUATOR.md, "The precision rule"; the measurement that gave
them: benchmarks/precision_calibration.py.

Outputs of other dtypes are not held to this rule (their own tolerances judge them): float16 and bfloat16
outputs are already stored at the lower precision, and float64 outputs need a reference more precise still.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

# The precision a problem may ask for with KERNELHUB["precision"], as the unit roundoff of its significand:
# float32 keeps 24 bits, TF32 11, float16 11, bfloat16 8 (the leading bit included).
UNIT_ROUNDOFF: dict[str, float] = {
    "fp32": 2.0 ** -24,
    "tf32": 2.0 ** -11,
    "fp16": 2.0 ** -11,
    "bf16": 2.0 ** -8,
}
LEVELS = tuple(UNIT_ROUNDOFF)
DEFAULT_LEVEL = "fp32"
# Calibrated on honest float32 kernels and on bfloat16 and TF32 ones (benchmarks/precision_calibration.py,
# docs/EVALUATOR.md): the honest ones stay under a quarter of the bound, the rounded ones sit above it.
MULTIPLE = 16.0
FLOOR = 64 * UNIT_ROUNDOFF["fp32"]  # 3.8e-6: a few float32 ulps on every element, relative
# Above this many elements an output is compared on a sample of SAMPLE_SIZE of them: the trusted child saves
# only the float64 values at those positions, so that neither it nor the parent holds a float64 copy of a
# multi-gigabyte output. The positions come from a seed the parent draws from the system's random source.
SAMPLE_ABOVE = 1 << 25
SAMPLE_SIZE = 1 << 24
RULE = "precision"


class PrecisionSpecError(ValueError):
    """A KERNELHUB["precision"] value that names no known precision."""


def level_for(meta: dict[str, Any]) -> str:
    """The precision a problem's float32 outputs must keep: KERNELHUB["precision"], "fp32" by default."""
    level = meta.get("precision", DEFAULT_LEVEL)
    if not isinstance(level, str) or level not in UNIT_ROUNDOFF:
        raise PrecisionSpecError(
            f"KERNELHUB['precision'] is {level!r}; it must be one of {', '.join(repr(k) for k in LEVELS)} "
            "(the least precision a solution of a float32 problem may compute in; leave it out for full float32)")
    return level


def scale(level: str) -> float:
    return UNIT_ROUNDOFF[level] / UNIT_ROUNDOFF["fp32"]


def bound(level: str, err_ref: float) -> float:
    return scale(level) * (MULTIPLE * err_ref + FLOOR)


def sample_index(numel: int, seed: int) -> torch.Tensor | None:
    """The flat positions an output of numel elements is compared on; None: all of them. The same in the
    child (which saves the float64 values there) and the parent (which picks the same ones from the float32
    outputs): a CPU generator, seeded."""
    if numel <= SAMPLE_ABOVE:
        return None
    g = torch.Generator().manual_seed(int(seed))
    return torch.randint(0, numel, (SAMPLE_SIZE,), generator=g)


def sampled(t: torch.Tensor, index: torch.Tensor | None) -> torch.Tensor:
    flat = t.reshape(-1)
    return flat if index is None else flat[index.to(flat.device)]


@dataclass
class _Sums:
    """Sums of squares of one output over the trials (float64), over the elements finite in all three."""

    sol_sq: float = 0.0
    ref_sq: float = 0.0
    truth_sq: float = 0.0
    elements: int = 0
    sampled: bool = False
    seen: bool = False


def _add(acc: _Sums, sol: torch.Tensor, ref32: torch.Tensor, truth: torch.Tensor, chunk: int = 1 << 22) -> None:
    """Adds ||sol - truth||^2, ||ref32 - truth||^2 and ||truth||^2 (flat tensors of one length), a chunk at a
    time: float64 temporaries of one chunk only. Elements where any of the three is NaN or Inf are left out:
    the ordinary comparison has already required NaN and Inf to sit at the same places."""
    for start in range(0, truth.numel(), chunk):
        # On the CPU, whichever device each came from (outputs lent through device memory are on the GPU).
        sd = sol[start:start + chunk].to(device="cpu", dtype=torch.float64)
        rd = ref32[start:start + chunk].to(device="cpu", dtype=torch.float64)
        td = truth[start:start + chunk].to(device="cpu", dtype=torch.float64)
        finite = torch.isfinite(sd) & torch.isfinite(rd) & torch.isfinite(td)
        if not bool(finite.all()):
            sd, rd, td = sd[finite], rd[finite], td[finite]
        acc.sol_sq += float(torch.dot(sd - td, sd - td))
        acc.ref_sq += float(torch.dot(rd - td, rd - td))
        acc.truth_sq += float(torch.dot(td, td))
        acc.elements += int(td.numel())


@dataclass
class Outcome:
    ok: bool
    message: str
    figures: dict[str, Any]


class Check:
    """The rule over a problem's trials: add() each trial whose solution output passed the ordinary comparison,
    then outcome(). Errors are pooled over the trials per output (sums of squares), so that no single trial's
    luck decides."""

    def __init__(self, meta: dict[str, Any]) -> None:
        self.level = level_for(meta)
        self.sums: list[_Sums] = []

    def add(self, expected: list[Any], truth: list[Any] | None, got: list[Any], sample_seed: int) -> None:
        if truth is None:
            return
        if not self.sums:
            self.sums = [_Sums() for _ in expected]
        for j, (r, t, s) in enumerate(zip(expected, truth, got, strict=True)):
            if not isinstance(r, torch.Tensor) or not isinstance(t, torch.Tensor) or r.dtype != torch.float32 \
                    or t.dtype != torch.float64:
                continue
            index = sample_index(r.numel(), sample_seed + j)
            if t.numel() != (r.numel() if index is None else SAMPLE_SIZE):
                continue
            acc = self.sums[j]
            _add(acc, sampled(s, index), sampled(r, index), t.reshape(-1))
            acc.sampled |= index is not None
            acc.seen = True

    def outcome(self) -> Outcome | None:
        """None where no float32 output was checked (the rule does not apply)."""
        per_output: list[dict[str, Any]] = []
        for j, acc in enumerate(self.sums):
            if not acc.seen or acc.truth_sq == 0.0:
                # Zero in float64 (or nothing finite): the ordinary atol judges it; a relative rule has no scale.
                continue
            norm = math.sqrt(acc.truth_sq)
            err_sol, err_ref = math.sqrt(acc.sol_sq) / norm, math.sqrt(acc.ref_sq) / norm
            b = bound(self.level, err_ref)
            per_output.append({"output": j, "error_vs_fp64": err_sol, "reference_error_vs_fp64": err_ref,
                               "ratio": (err_sol / err_ref) if err_ref > 0 else None, "bound": b,
                               "of_bound": err_sol / b, "elements": acc.elements, "sampled": acc.sampled})
        if not per_output:
            return None
        worst = max(per_output, key=lambda f: f["of_bound"])
        figures: dict[str, Any] = {"rule": self.level, "multiple": MULTIPLE, "floor": FLOOR * scale(self.level),
                                   **{k: v for k, v in worst.items() if k != "output"}}
        if len(self.sums) > 1:
            figures["output"] = worst["output"]
        if len(per_output) > 1:
            figures["outputs"] = per_output
        if worst["error_vs_fp64"] <= worst["bound"]:
            return Outcome(True, "", figures)
        return Outcome(False, rejection_message(self.level, worst, len(self.sums)), figures)


def rejection_message(level: str, f: dict[str, Any], n_out: int) -> str:
    where = f"output {f['output']}: " if n_out > 1 else ""
    err_sol, err_ref = f["error_vs_fp64"], f["reference_error_vs_fp64"]
    times = f"{err_sol / err_ref:.0f}x the float32 reference's own" if err_ref > 0 else \
        "while the float32 reference's own is 0"
    what = {
        "fp32": "this problem is float32: compute in float32 (no TF32, float16 or bfloat16 inputs or arithmetic; "
                "in Triton, tl.dot(..., input_precision=\"ieee\")), and sum long reductions in blocks or pairwise "
                "(one float32 accumulator over millions of terms loses this much too)",
        "tf32": "this problem allows TF32 at the least: no float16 or bfloat16 inputs or arithmetic",
        "fp16": "this problem allows float16-class precision at the least: no bfloat16 inputs or arithmetic",
        "bf16": "that is beyond even bfloat16 arithmetic",
    }[level]
    return (f"{where}error against float64 is {times} ({err_sol:.2g} vs {err_ref:.2g}; the bound for "
            f"precision {level!r} is {f['bound']:.2g}): {what}")
