"""Comparing a solution's outputs with the expected ones, computed elsewhere by the trusted reference.

Two checks, both must pass: elementwise |got - expected| <= atol + rtol * |expected| (NaN and Inf must sit
at the same places), and a magnitude-aware one, ||got - expected|| / ||expected|| <= the relative bound, so
that zeros (or any small garbage) never pass on outputs whose values are all below atol. Integer and bool
outputs must be equal; complex ones are held to the same bounds on |got - expected|, by their real precision.
`reference_problems` says what makes a reference's outputs unusable for judging anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

# (atol, rtol, relative Frobenius bound) by output dtype. TF32 is off on both sides, so fp32 is true fp32.
_TOLERANCES: dict[torch.dtype, tuple[float, float, float]] = {
    torch.float64: (1e-6, 1e-6, 1e-6),
    torch.float32: (1e-3, 1e-3, 1e-3),
    torch.float16: (1e-2, 1e-2, 1e-2),
    torch.bfloat16: (2e-2, 2e-2, 2e-2),
}
# A complex output is judged by the precision of its parts.
_COMPLEX_PARTS: dict[torch.dtype, torch.dtype] = {
    torch.complex128: torch.float64,
    torch.complex64: torch.float32,
    torch.complex32: torch.float16,
}
MIN_TRIALS = 5


def _exact(dtype: torch.dtype) -> bool:
    return not dtype.is_floating_point and not dtype.is_complex


def tolerances(dtype: torch.dtype, meta: dict[str, Any]) -> tuple[float, float, float]:
    atol, rtol, rel = _TOLERANCES.get(_COMPLEX_PARTS.get(dtype, dtype), (0.0, 0.0, 0.0))
    if "atol" in meta:
        atol = float(meta["atol"])
    if "rtol" in meta:
        rtol = float(meta["rtol"])
    # The magnitude check follows a problem's looser rtol, never a tighter one than the elementwise check.
    return atol, rtol, max(rel, rtol)


@dataclass
class Comparison:
    ok: bool
    message: str = ""
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    rel_fro_err: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def _work_device(device: str) -> torch.device | None:
    """Where the parent does its arithmetic on outputs: the GPU the evaluation runs on, where it has one (on
    the H200 host, CPU comparisons of outputs of gigabytes took 7-27 s each, beside other work on the cores);
    None for the CPU."""
    if device != "cuda":
        return None
    try:
        return torch.device("cuda") if torch.cuda.is_available() else None
    except Exception:  # noqa: BLE001 - no usable CUDA in this process: the CPU does it
        return None


def _on(t: torch.Tensor, dev: torch.device | None) -> torch.Tensor:
    return t if dev is None or t.device == dev else t.to(dev)


def reference_problems(expected: list[torch.Tensor], meta: dict[str, Any], device: str = "cpu") -> list[str]:
    """What is wrong with a problem whose reference produced these outputs; empty when they can judge a solution."""
    dev = _work_device(device)
    try:
        return _reference_problems([_on(t, dev) for t in expected], meta)
    except Exception:  # noqa: BLE001 - no memory or no context on the GPU now: the CPU does it
        return _reference_problems(expected, meta)
    finally:
        if dev is not None:
            torch.cuda.empty_cache()


def _reference_problems(expected: list[torch.Tensor], meta: dict[str, Any]) -> list[str]:
    problems = []
    for i, ref in enumerate(expected):
        where = f"output {i}" if len(expected) > 1 else "the output"
        if _exact(ref.dtype):
            continue
        if _COMPLEX_PARTS.get(ref.dtype, ref.dtype) not in _TOLERANCES and not ("atol" in meta and "rtol" in meta):
            problems.append(f"{where} is {ref.dtype}, which has no default tolerance: set both atol and rtol in the "
                            "problem's KERNELHUB dict")
        elif ref.numel() and not _any_finite(ref):
            # NaN must meet NaN, so a solution that writes nothing (memory poisoned with NaN) would pass.
            problems.append(f"{where} is NaN or Inf in every element, so it cannot tell a right answer from a wrong "
                            "one: make get_inputs produce values inside the computation's domain")
    return problems


def _any_finite(ref: torch.Tensor) -> bool:
    """Whether any element is finite, a chunk at a time: a float64 copy of a 2 GiB output was 4 GiB more in the
    parent (issue 13)."""
    flat = ref.reshape(-1)
    chunk = CHUNK if ref.device.type == "cpu" else CHUNK_GPU
    return any(bool(torch.isfinite(_widened(flat[i:i + chunk])).any()) for i in range(0, flat.numel(), chunk))


def compare(expected: list[torch.Tensor], got: list[torch.Tensor], meta: dict[str, Any],
            device: str = "cpu") -> Comparison:
    """expected vs got (CPU tensors, as read from the children's files); with device "cuda" the arithmetic runs on
    this process's GPU where it has one, and on the CPU when the GPU fails it for any reason (memory, a context,
    a library handle: another process may hold the memory)."""
    dev = _work_device(device)
    if dev is None:
        return _compare(expected, got, meta, None)
    try:
        return _compare(expected, got, meta, dev)
    except Exception:  # noqa: BLE001 - no memory, context or library handle on the GPU now: the CPU does it
        return _compare(expected, got, meta, None)
    finally:
        torch.cuda.empty_cache()


def _compare(expected: list[torch.Tensor], got: list[torch.Tensor], meta: dict[str, Any],
             dev: torch.device | None) -> Comparison:
    if len(expected) != len(got):
        return Comparison(False, f"the model returned {len(got)} tensor(s), the reference {len(expected)}")
    result = Comparison(True)
    for i, (ref, out) in enumerate(zip(expected, got, strict=True)):
        where = f"output {i}: " if len(expected) > 1 else ""
        if type(out) is not torch.Tensor:
            return Comparison(False, f"{where}not a torch.Tensor")
        if tuple(out.shape) != tuple(ref.shape):
            return Comparison(False, f"{where}shape {tuple(out.shape)}, expected {tuple(ref.shape)}")
        if out.dtype != ref.dtype:
            return Comparison(False, f"{where}dtype {out.dtype}, expected {ref.dtype}")
        ref, out = _on(ref, dev), _on(out, dev)
        if _exact(ref.dtype):
            diff = out != ref
            if bool(diff.any()):
                idx = _unravel(int(diff.reshape(-1).nonzero()[0]), ref.shape)
                return Comparison(False, f"{where}{int(diff.sum())} of {ref.numel()} elements differ; first at "
                                         f"index {idx}: expected {ref[idx].item()}, got {out[idx].item()}")
            continue
        atol, rtol, rel_bound = tolerances(ref.dtype, meta)
        fast = _passing_in_chunks(ref, out, atol, rtol, rel_bound)
        if fast is not None:
            result.max_abs_err = max(result.max_abs_err, fast[0])
            result.max_rel_err = max(result.max_rel_err, fast[1])
            result.rel_fro_err = max(result.rel_fro_err, fast[2])
            continue
        # Something fails (or is NaN/Inf): the whole tensor at once, for the worst element and the message.
        r = _widened(ref)
        o = _widened(out)
        ref_nan, out_nan = torch.isnan(r), torch.isnan(o)
        ref_inf, out_inf = torch.isinf(r), torch.isinf(o)
        bad_special = (ref_nan != out_nan) | (ref_inf != out_inf) | (ref_inf & out_inf & (r != o))
        finite = ~(ref_nan | ref_inf) & ~(out_nan | out_inf)
        err = torch.where(finite, (o - r).abs(), torch.zeros_like(r.real))
        allowed = atol + rtol * r.abs().nan_to_num(0.0, 0.0, 0.0)
        excess = torch.where(bad_special, torch.full_like(err, float("inf")), err - allowed)
        n_bad = int((excess > 0).sum())
        max_abs = float(err.max()) if err.numel() else 0.0
        rel_err = err / r.abs().clamp_min(atol if atol > 0 else 1e-30)
        max_rel = float(rel_err.max()) if err.numel() else 0.0
        ref_norm = float(torch.linalg.vector_norm(torch.where(finite, r, torch.zeros_like(r))))
        diff_norm = float(torch.linalg.vector_norm(err))
        rel_fro = diff_norm / ref_norm if ref_norm > 0 else (0.0 if diff_norm <= atol else float("inf"))
        result.max_abs_err = max(result.max_abs_err, max_abs)
        result.max_rel_err = max(result.max_rel_err, max_rel)
        result.rel_fro_err = max(result.rel_fro_err, rel_fro)
        if n_bad:
            flat = int(excess.reshape(-1).argmax())
            idx = _unravel(flat, ref.shape)
            kind = "NaN/Inf where the reference has none (or the reverse)" if bool(bad_special.reshape(-1)[flat]) \
                else f"|diff| {_fmt(float(err.reshape(-1)[flat]))} > atol {atol:g} + rtol {rtol:g} * |expected|"
            return Comparison(
                False,
                f"{where}{n_bad} of {ref.numel()} elements mismatch; worst at index {idx}: expected "
                f"{_value(ref, flat)}, got {_value(out, flat)} ({kind})",
                max_abs, max_rel, rel_fro,
            )
        if rel_fro > rel_bound:
            flat = int(err.reshape(-1).argmax())
            idx = _unravel(flat, ref.shape)
            return Comparison(
                False,
                f"{where}relative error ||got - expected|| / ||expected|| = {_fmt(rel_fro)} is over {rel_bound:g} "
                f"(values this small pass elementwise, but not as a whole); worst at index {idx}: expected "
                f"{_value(ref, flat)}, got {_value(out, flat)}",
                max_abs, max_rel, rel_fro,
            )
    return result


# Elements per chunk of the fast path: the float64 temporaries of one chunk stay in the CPU's caches' reach
# instead of several full-size copies of a multi-gigabyte output.
CHUNK = 1 << 20
CHUNK_GPU = 1 << 26  # on a GPU, large chunks: each one costs a few synchronising reads back to the host


def _passing_in_chunks(ref: torch.Tensor, out: torch.Tensor, atol: float, rtol: float,
                       rel_bound: float) -> tuple[float, float, float] | None:
    """(max_abs, max_rel, rel_fro) when every element is finite on both sides and both checks pass; else None.

    A passing output (the usual case, and the one checked again and again during timing) costs one pass over
    its memory, a chunk at a time: float32 arithmetic for outputs of 32 bits or fewer (float64 for float64),
    and NaN or Inf anywhere fails the `<=` test, so that case goes to the full check.
    """
    if ref.dtype.is_complex or ref.numel() == 0:
        return None
    work = torch.float64 if ref.dtype == torch.float64 else torch.float32
    r_all, o_all = ref.reshape(-1), out.reshape(-1)
    chunk = CHUNK if ref.device.type == "cpu" else CHUNK_GPU
    max_abs = max_rel = 0.0
    ref_sq = err_sq = 0.0
    floor = atol if atol > 0 else 1e-30
    for start in range(0, r_all.numel(), chunk):
        r = r_all[start:start + chunk].to(work, copy=True)
        o = o_all[start:start + chunk].to(work, copy=True)
        err = o.sub_(r).abs_()
        r_abs = r.abs_()
        if not bool((err <= r_abs * rtol + atol).all()):
            return None
        max_abs = max(max_abs, float(err.max()))
        ref_sq += float(torch.dot(r_abs, r_abs).double())
        err_sq += float(torch.dot(err, err).double())
        max_rel = max(max_rel, float(err.div_(r_abs.clamp_min_(floor)).max()))
    ref_norm, diff_norm = ref_sq ** 0.5, err_sq ** 0.5
    rel_fro = diff_norm / ref_norm if ref_norm > 0 else (0.0 if diff_norm <= atol else float("inf"))
    if rel_fro > rel_bound:
        return None
    return max_abs, max_rel, rel_fro


def _widened(t: torch.Tensor) -> torch.Tensor:
    # float64 (complex128) for the arithmetic of every check: some dtypes (float8) implement none of it.
    return t.to(torch.complex128 if t.dtype.is_complex else torch.float64)


def _value(t: torch.Tensor, flat: int) -> str:
    v = t.reshape(-1)[flat].item()
    if isinstance(v, complex):
        return f"{_fmt(v.real)}{'+' if v.imag >= 0 else '-'}{_fmt(abs(v.imag))}j"
    return _fmt(float(v))


def _unravel(flat: int, shape: torch.Size) -> tuple[int, ...]:
    idx = []
    for dim in reversed(tuple(shape)):
        idx.append(flat % dim if dim else 0)
        flat //= dim if dim else 1
    return tuple(reversed(idx))
