"""Reading an ML program (MIL) spec: op counts, a FLOP estimate, and the Neural Engine's rules.

Works on the protobuf alone (no model load, no coremltools graph passes), so an untrusted upload is only
ever parsed. The rules come from Apple's Core ML documentation and public reverse-engineering of the ANE
(for example hollance/neural-engine); they were not measured on a Mac by this project. Each rule names
what the Neural Engine cannot run, or runs only after Core ML falls back to the CPU or GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

# Ops the ANE does not execute (Core ML runs them on the CPU/GPU, splitting the graph).
UNSUPPORTED_OPS = frozenset({
    "gather", "gather_nd", "gather_along_axis",
    "scatter", "scatter_nd", "scatter_along_axis",
    "while_loop", "cond", "non_zero", "non_maximum_suppression",
    "random_bernoulli", "random_categorical", "random_normal", "random_uniform",
})
# Tensors are laid out with the last axis padded to 64 bytes; an unaligned axis wastes bandwidth and compute.
ALIGN_BYTES = 64
# Largest extent of one axis commonly reported for ANE tensors, and the largest rank it handles.
MAX_AXIS = 16384
MAX_RANK = 5
# Ops that only convert data, exempt from the fp16 rule like model inputs: fp32 I/O is cast at the edges.
CAST_OPS = frozenset({"cast"})

_DTYPE_BYTES = {"FLOAT16": 2, "BFLOAT16": 2, "FLOAT32": 4, "FLOAT64": 8}


@dataclass(frozen=True)
class Tensor:
    dtype: str  # MIL data type name: FLOAT16, FLOAT32, INT32, ...
    shape: tuple[int | None, ...] | None  # None: unknown rank; a None axis: unknown size


@dataclass
class Analysis:
    ops: dict[str, int] = field(default_factory=dict)
    flops: int = 0
    flops_dense: int = 0  # conv, conv_transpose, linear, matmul, einsum: the part that counts for TFLOPS
    consts: int = 0
    issues: list[dict[str, Any]] = field(default_factory=list)
    inputs: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[dict[str, Any]] = field(default_factory=list)
    opset: str = ""

    def issue(self, op: str | None, rule: str, detail: str) -> None:
        entry = {"op": op, "rule": rule, "detail": detail}
        if entry not in self.issues and len(self.issues) < 200:
            self.issues.append(entry)


def _tensor_of(value_type: Any) -> Tensor | None:
    from coremltools.proto import MIL_pb2

    if value_type.WhichOneof("type") != "tensorType":
        return None
    tt = value_type.tensorType
    dtype = MIL_pb2.DataType.Name(tt.dataType)
    if tt.rank < 0:
        return Tensor(dtype, None)
    dims: list[int | None] = []
    for d in tt.dimensions:
        dims.append(int(d.constant.size) if d.WhichOneof("dimension") == "constant" else None)
    return Tensor(dtype, tuple(dims))


def _immediate_ints(op: Any) -> list[int] | None:
    """The integer values of a const op written inline (strides, dilations, groups...)."""
    val = op.attributes.get("val") if op.attributes else None
    if val is None or val.WhichOneof("value") != "immediateValue":
        return None
    t = val.immediateValue.tensor
    kind = t.WhichOneof("value")
    if kind == "ints":
        return list(t.ints.values)
    if kind == "longInts":
        return list(t.longInts.values)
    return None


def _shape_str(shape: tuple[int | None, ...] | None) -> str:
    return "?" if shape is None else "(" + ", ".join("?" if d is None else str(d) for d in shape) + ")"


def _prod(xs: Any) -> int:
    return math.prod(int(x) for x in xs)


class _Walker:
    def __init__(self, analysis: Analysis) -> None:
        self.a = analysis
        self.tensors: dict[str, Tensor] = {}
        self.const_ints: dict[str, list[int] | None] = {}
        self.dependent: set[str] = set()  # names whose value depends on a model input
        self.bool_consts: dict[str, bool] = {}

    def arg_names(self, op: Any, key: str) -> list[str]:
        arg = op.inputs.get(key)
        return [b.name for b in arg.arguments if b.WhichOneof("binding") == "name"] if arg else []

    def arg_tensor(self, op: Any, key: str) -> Tensor | None:
        names = self.arg_names(op, key)
        return self.tensors.get(names[0]) if names else None

    def arg_ints(self, op: Any, key: str) -> list[int] | None:
        names = self.arg_names(op, key)
        return self.const_ints.get(names[0]) if names else None

    def block(self, block: Any) -> None:
        for op in block.operations:
            self.op(op)

    def op(self, op: Any) -> None:
        a = self.a
        kind = op.type
        outs = [(o.name, _tensor_of(o.type)) for o in op.outputs]
        for name, t in outs:
            if t is not None:
                self.tensors[name] = t
        if kind == "const":
            a.consts += 1
            for name, _ in outs:
                self.const_ints[name] = _immediate_ints(op)
            return
        a.ops[kind] = a.ops.get(kind, 0) + 1
        in_names = [n for arg in op.inputs.values() for b in arg.arguments
                    if b.WhichOneof("binding") == "name" for n in [b.name]]
        if any(n in self.dependent for n in in_names):
            self.dependent.update(name for name, _ in outs)
        for b in op.blocks:
            for bi in b.inputs:
                self.dependent.add(bi.name)
            self.block(b)

        if kind in UNSUPPORTED_OPS:
            a.issue(kind, "unsupported_op", f"`{kind}` does not run on the Neural Engine; Core ML moves it "
                    "and the graph around it to the CPU or GPU")
        if kind in ("conv", "conv_transpose"):
            dil = self.arg_ints(op, "dilations") or [1]
            if any(d != 1 for d in dil):
                a.issue(kind, "unsupported_op", f"dilated convolution (dilations={dil}) does not run on the "
                        "Neural Engine: use an undilated kernel with zeros, or reshape")
        for name, t in outs:
            self.check_tensor(kind, name, t)
        self.count_flops(op, kind, [t for _, t in outs])

    def check_tensor(self, kind: str, name: str, t: Tensor | None) -> None:
        a = self.a
        if t is None:
            return
        if t.shape is None or any(d is None for d in t.shape):
            a.issue(kind, "dynamic_shape", f"`{name}` has shape {_shape_str(t.shape)}: the Neural Engine needs "
                    "every shape fixed at compile time")
            return
        if t.dtype in ("FLOAT32", "FLOAT64") and kind not in CAST_OPS and kind != "input":
            a.issue(kind, "fp16_compute", f"`{name}` is computed in {t.dtype.lower()}: the Neural Engine computes "
                    "in fp16 only (convert with compute_precision=ct.precision.FLOAT16, or cast to fp16)")
        if len(t.shape) > MAX_RANK:
            a.issue(kind, "size_limit", f"`{name}` has rank {len(t.shape)}; the Neural Engine handles rank "
                    f"<= {MAX_RANK}")
        big = [d for d in t.shape if d is not None and d > MAX_AXIS]
        if big:
            a.issue(kind, "size_limit", f"`{name}` {_shape_str(t.shape)} has an axis over {MAX_AXIS}: split it")
        width = _DTYPE_BYTES.get(t.dtype)
        if width and t.shape and t.shape[-1] not in (None, 1) and (t.shape[-1] * width) % ALIGN_BYTES:
            a.issue(kind, "last_axis_alignment", f"`{name}` {_shape_str(t.shape)}: its last axis is "
                    f"{t.shape[-1] * width} bytes, not a multiple of {ALIGN_BYTES}; lay the data out as "
                    f"(B, C, 1, S) with S a multiple of {ALIGN_BYTES // width}")

    def count_flops(self, op: Any, kind: str, outs: list[Tensor | None]) -> None:
        a = self.a
        out = outs[0] if outs else None
        if out is None or out.shape is None or any(d is None for d in out.shape):
            return
        n_out = _prod(out.shape)
        dense = 0
        if kind == "conv":
            w = self.arg_tensor(op, "weight")
            if w and w.shape and None not in w.shape and len(w.shape) >= 2:
                # out (N, Cout, *spatial), weight (Cout, Cin/groups, *kernel)
                dense = 2 * n_out * _prod(w.shape[1:])
        elif kind == "conv_transpose":
            w, x = self.arg_tensor(op, "weight"), self.arg_tensor(op, "x")
            if w and x and w.shape and x.shape and None not in w.shape and None not in x.shape:
                # weight (Cin, Cout/groups, *kernel): every input element meets Cout/groups * kernel weights
                dense = 2 * _prod(x.shape) * _prod(w.shape[1:])
        elif kind == "linear":
            x = self.arg_tensor(op, "x")
            if x and x.shape and x.shape[-1] is not None:
                dense = 2 * n_out * int(x.shape[-1])
        elif kind == "matmul":
            x = self.arg_tensor(op, "x")
            if x and x.shape and None not in x.shape:
                k = x.shape[-2] if len(x.shape) >= 2 and self.const_bool(op, "transpose_x") else x.shape[-1]
                dense = 2 * n_out * int(k or 0)
        elif kind == "einsum":
            xs = [self.tensors.get(n) for n in self.arg_names(op, "values")]
            if xs and all(t and t.shape and None not in t.shape for t in xs):
                # contracted size = product of all operand sizes over the output's, for two operands
                total = _prod(d for t in xs if t and t.shape for d in t.shape)
                dense = 2 * max(total // max(n_out, 1), 1) * n_out if len(xs) == 2 else n_out
        if dense:
            a.flops_dense += dense
            a.flops += dense
        else:
            a.flops += n_out  # elementwise, activations, reductions: one per output element

    def const_bool(self, op: Any, key: str) -> bool:
        return self.bool_consts.get((self.arg_names(op, key) or [""])[0], False)


def _collect_bools(block: Any, into: dict[str, bool]) -> None:
    for op in block.operations:
        if op.type == "const" and "val" in op.attributes:
            v = op.attributes["val"]
            if v.WhichOneof("value") == "immediateValue" and v.immediateValue.tensor.WhichOneof("value") == "bools":
                vals = list(v.immediateValue.tensor.bools.values)
                if len(vals) == 1:
                    into[op.outputs[0].name] = bool(vals[0])
        for b in op.blocks:
            _collect_bools(b, into)


def analyze_spec(spec: Any) -> Analysis:
    """Walk the `main` function of an ML-program spec."""
    a = Analysis()
    if spec.WhichOneof("Type") != "mlProgram":
        a.issue(None, "format", f"the model is a {spec.WhichOneof('Type') or 'empty'} model, not an ML program: "
                "convert with convert_to='mlprogram'")
        return a
    functions = spec.mlProgram.functions
    if "main" not in functions:
        a.issue(None, "format", "the ML program has no `main` function")
        return a
    fn = functions["main"]
    a.opset = fn.opset
    if fn.opset not in fn.block_specializations:
        a.issue(None, "format", f"`main` has no block for its opset {fn.opset}")
        return a
    block = fn.block_specializations[fn.opset]
    w = _Walker(a)
    _collect_bools(block, w.bool_consts)
    for inp in fn.inputs:
        t = _tensor_of(inp.type)
        if t is not None:
            w.tensors[inp.name] = t
        w.dependent.add(inp.name)
        a.inputs.append({"name": inp.name, "dtype": t.dtype.lower() if t else "?",
                         "shape": list(t.shape) if t and t.shape is not None else None})
        w.check_tensor("input", inp.name, t)
    w.block(block)
    for name in block.outputs:
        t = w.tensors.get(name)
        a.outputs.append({"name": name, "dtype": t.dtype.lower() if t else "?",
                          "shape": list(t.shape) if t and t.shape is not None else None})
        if name not in w.dependent:
            a.issue(None, "constant_output", f"output `{name}` does not depend on any input: a model must "
                    "compute its outputs, not store them")
    for desc in spec.description.input:
        arr = desc.type.multiArrayType
        if desc.type.WhichOneof("Type") == "multiArrayType" and arr.WhichOneof("ShapeFlexibility"):
            a.issue("input", "dynamic_shape", f"input `{desc.name}` declares flexible shapes: give one fixed shape")
    return a
