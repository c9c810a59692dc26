"""Problems of the ANE track: reference weights, inputs and outputs computed with torch for fixed seeds.

A problem is a KernelBench file (`Model`, `get_inputs`, `get_init_inputs`) plus an optional `KERNELHUB`
dict literal. Problem files are the site's own (trusted); they are executed here, never solution files.
"""

from __future__ import annotations

import ast
import hashlib
import io
import types
from dataclasses import dataclass
from typing import Any

import numpy as np

# Published seed of the weights every solution must embed (the problem page offers them for download).
WEIGHTS_SEED = 0
# Seed of the inputs whose reference outputs are digested in the validation report.
DIGEST_INPUT_SEED = 1

# fp16 compute: about 3 decimal digits; sums over a few hundred terms drift by a few 1e-3.
DEFAULT_ATOL = 2e-2
DEFAULT_RTOL = 2e-2


class ProblemError(Exception):
    """The problem file cannot be used (a site-side mistake, not the solution's)."""


@dataclass(frozen=True)
class Problem:
    source: str
    module: types.ModuleType
    meta: dict[str, Any]

    @property
    def atol(self) -> float:
        return float(self.meta.get("atol", DEFAULT_ATOL))

    @property
    def rtol(self) -> float:
        return float(self.meta.get("rtol", DEFAULT_RTOL))


def problem_metadata(source: str) -> dict[str, Any]:
    """The KERNELHUB dict literal, read without executing the file."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ProblemError(f"problem file does not parse: {exc}") from exc
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "KERNELHUB" for t in node.targets
        ):
            try:
                value = ast.literal_eval(node.value)
            except ValueError as exc:
                raise ProblemError("KERNELHUB must be a dict literal (no names or calls in it)") from exc
            if not isinstance(value, dict):
                raise ProblemError("KERNELHUB must be a dict literal")
            return value
    return {}


def problem_load(source: str) -> Problem:
    meta = problem_metadata(source)
    module = types.ModuleType("kernelhub_ane_problem")
    try:
        exec(compile(source, "problem.py", "exec"), module.__dict__)
    except Exception as exc:
        raise ProblemError(f"problem file fails to run: {type(exc).__name__}: {exc}") from exc
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise ProblemError(f"problem file lacks `{name}` (KernelBench format)")
    return Problem(source=source, module=module, meta=meta)


def reference_model(problem: Problem, *, seed: int = WEIGHTS_SEED) -> Any:
    import torch

    torch.manual_seed(seed)
    model = problem.module.Model(*problem.module.get_init_inputs())
    return model.eval()


def reference_inputs(problem: Problem, *, seed: int) -> list[Any]:
    import torch

    torch.manual_seed(seed)
    inputs = list(problem.module.get_inputs())
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            raise ProblemError(f"get_inputs()[{i}] must be a floating-point tensor on the ANE track")
    return inputs


def reference_outputs(problem: Problem, inputs: list[Any], *, seed: int = WEIGHTS_SEED) -> list[np.ndarray]:
    """Outputs of the fp32 reference on the CPU, one thread, so that the digest is reproducible."""
    import torch

    model = reference_model(problem, seed=seed)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.no_grad():
            out = model(*[x.float() for x in inputs])
    finally:
        torch.set_num_threads(threads)
    outs = list(out) if isinstance(out, tuple | list) else [out]
    return [o.detach().to(torch.float32).contiguous().numpy() for o in outs]


def outputs_digest(outputs: list[np.ndarray]) -> str:
    """sha256 over each output's shape and little-endian fp32 bytes, in order."""
    h = hashlib.sha256()
    for i, o in enumerate(outputs):
        a = np.ascontiguousarray(o, dtype="<f4")
        h.update(f"{i}:{'x'.join(map(str, a.shape))}\n".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def reference_state_dict(problem: Problem, *, seed: int = WEIGHTS_SEED) -> dict[str, np.ndarray]:
    """The reference weights as fp32 numpy arrays, keyed like `Model.state_dict()`."""
    sd = reference_model(problem, seed=seed).state_dict()
    return {k: v.detach().to("cpu").float().contiguous().numpy() for k, v in sd.items()}


def weights_npz_bytes(problem: Problem, *, seed: int = WEIGHTS_SEED) -> bytes:
    """The download the problem page offers: `np.load(f, allow_pickle=False)` reads it without torch."""
    buf = io.BytesIO()
    np.savez(buf, **reference_state_dict(problem, seed=seed))  # type: ignore[arg-type]  # numpy stubs type **kwds as bool
    return buf.getvalue()


def reference_npz_bytes(problem: Problem, *, input_seeds: list[int]) -> tuple[bytes, str]:
    """Inputs and reference outputs for each seed, as the Mac receives them in a job.

    Keys: `s{k}_in{i}`, `s{k}_out{j}` for the k-th seed. Returns (npz bytes, digest of the first seed's
    outputs): the Mac checks that digest before trusting the file.
    """
    arrays: dict[str, np.ndarray] = {}
    first_digest = ""
    for k, seed in enumerate(input_seeds):
        inputs = reference_inputs(problem, seed=seed)
        outputs = reference_outputs(problem, inputs)
        if k == 0:
            first_digest = outputs_digest(outputs)
        for i, x in enumerate(inputs):
            arrays[f"s{k}_in{i}"] = x.float().contiguous().numpy()
        for j, o in enumerate(outputs):
            arrays[f"s{k}_out{j}"] = o
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    return buf.getvalue(), first_digest
