"""A numpy evaluation of an ML program on Linux: an early, advisory check of a package's numerics.

This is not Core ML and not the Neural Engine: it evaluates the MIL graph op by op following the MIL op
definitions (coremltools' documentation), in fp32 with each fp16 op's result rounded to fp16, for the ops
listed in `_OPS`. It catches a package with wrong weights or a wrong graph before it takes a Mac's time.
Verdicts come from the Mac only; a graph with an op outside `_OPS` is simply not checked here.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np

# Largest total of elements over all op outputs the check will hold (an untrusted graph declares its sizes),
# and the most estimated FLOPs it will spend on one graph (the bundled problems need at most 2.5e9).
MAX_TOTAL_ELEMENTS = 1 << 26
MAX_FLOPS = 2 * 10**10
_BLOB_SENTINEL = 0xDEADBEEF
_BLOB_DTYPES = {1: np.float16, 2: np.float32, 3: np.uint8, 4: np.int8}
_MIL_DTYPES = {"FLOAT16": np.float16, "FLOAT32": np.float32, "INT32": np.int32, "INT8": np.int8,
               "UINT8": np.uint8, "BOOL": np.bool_}


class Unsupported(Exception):
    """The graph uses something this checker does not evaluate."""


def _blob(package_dir: Path, file_name: str, offset: int, shape: tuple[int, ...], cache: dict[str, bytes]) -> np.ndarray:
    if not file_name.startswith("@model_path/"):
        raise Unsupported(f"weight file {file_name!r} outside the package")
    data_dir = (package_dir / "Data" / "com.apple.CoreML").resolve()
    path = (data_dir / file_name.removeprefix("@model_path/")).resolve()
    if not path.is_relative_to(data_dir) or not path.is_file() or path.is_symlink():
        raise Unsupported(f"weight file {file_name!r} is missing")
    if file_name not in cache:
        cache[file_name] = path.read_bytes()
    data = cache[file_name]
    if offset < 0 or offset + 32 > len(data):
        raise Unsupported("a weight's offset lies outside its file")
    sentinel, dtype_code, size, data_offset = struct.unpack_from("<IIQQ", data, offset)
    if sentinel != _BLOB_SENTINEL or dtype_code not in _BLOB_DTYPES:
        raise Unsupported(f"weight blob of type {dtype_code} is not read by this checker")
    dtype = np.dtype(_BLOB_DTYPES[dtype_code])
    count = int(np.prod(shape)) if shape else 1
    if size != count * dtype.itemsize or data_offset + size > len(data):
        raise Unsupported("a weight blob's size does not match its declared shape")
    return np.frombuffer(data, dtype=dtype, count=count, offset=data_offset).reshape(shape)


def _immediate(value: Any, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    t = value.immediateValue.tensor
    kind = t.WhichOneof("value")
    if kind == "bytes":
        arr = np.frombuffer(t.bytes.values, dtype=dtype)
    elif kind in ("floats", "ints", "bools", "longInts", "doubles"):
        arr = np.array(list(getattr(t, kind).values), dtype=dtype)
    elif kind == "strings":
        vals = list(t.strings.values)
        return np.array(vals[0] if not shape and vals else vals, dtype=object)
    else:
        raise Unsupported(f"immediate value of kind {kind}")
    return arr.reshape(shape)


def _rounded(x: np.ndarray, dtype: Any) -> np.ndarray:
    return np.asarray(x).astype(dtype) if dtype is not None else np.asarray(x)


def _conv(a: dict[str, Any]) -> np.ndarray:
    import torch
    import torch.nn.functional as F

    x, w = np.asarray(a["x"], np.float32), np.asarray(a["weight"], np.float32)
    spatial = x.ndim - 2
    if spatial not in (1, 2):
        raise Unsupported(f"conv with {spatial} spatial axes")
    strides = [int(s) for s in a.get("strides", [1] * spatial)]
    dil = [int(d) for d in a.get("dilations", [1] * spatial)]
    pad_type = str(a.get("pad_type", "valid"))
    kernel = w.shape[2:]
    if pad_type == "valid":
        pads = [0] * (2 * spatial)
    elif pad_type == "custom":
        pads = [int(p) for p in a["pad"]]
    elif pad_type in ("same", "same_lower"):
        pads = []
        for i in range(spatial):
            size = x.shape[2 + i]
            out = -(-size // strides[i])
            total = max((out - 1) * strides[i] + dil[i] * (kernel[i] - 1) + 1 - size, 0)
            lo = total // 2 if pad_type == "same" else total - total // 2
            pads += [lo, total - lo]
    else:
        raise Unsupported(f"conv pad_type {pad_type}")
    # MIL pads are (begin, end) per spatial axis in order; F.pad wants the last axis first
    torch_pad = [p for i in reversed(range(spatial)) for p in (pads[2 * i], pads[2 * i + 1])]
    xt = F.pad(torch.from_numpy(x), torch_pad)
    fn = F.conv1d if spatial == 1 else F.conv2d
    b = a.get("bias")
    out = fn(xt, torch.from_numpy(w), None if b is None else torch.from_numpy(np.asarray(b, np.float32)),
             stride=strides, dilation=dil, groups=int(a.get("groups", 1)))
    return out.numpy()


def _gelu(x: np.ndarray, mode: str) -> np.ndarray:
    import torch

    t = torch.from_numpy(np.asarray(x, np.float32))
    if mode == "EXACT":
        return torch.nn.functional.gelu(t).numpy()
    if mode == "TANH_APPROXIMATION":
        return torch.nn.functional.gelu(t, approximate="tanh").numpy()
    if mode == "SIGMOID_APPROXIMATION":
        return (t * torch.sigmoid(1.702 * t)).numpy()
    raise Unsupported(f"gelu mode {mode}")


def _reduce(fn: Any) -> Any:
    def run(a: dict[str, Any]) -> np.ndarray:
        axes = a.get("axes")
        axis = None if axes is None else tuple(int(i) for i in np.atleast_1d(axes))
        return fn(np.asarray(a["x"], np.float32), axis=axis, keepdims=bool(a.get("keep_dims", False)))

    return run


def _softmax(a: dict[str, Any]) -> np.ndarray:
    x = np.asarray(a["x"], np.float32)
    axis = int(a.get("axis", -1))
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _layer_norm(a: dict[str, Any]) -> np.ndarray:
    x = np.asarray(a["x"], np.float32)
    axes = tuple(int(i) for i in np.atleast_1d(a["axes"]))
    eps = float(a.get("epsilon", 1e-5))
    mean = x.mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + eps)
    if a.get("gamma") is not None:
        y = y * np.asarray(a["gamma"], np.float32)
    if a.get("beta") is not None:
        y = y + np.asarray(a["beta"], np.float32)
    return y


def _batch_norm(a: dict[str, Any]) -> np.ndarray:
    x = np.asarray(a["x"], np.float32)
    shape = (1, -1) + (1,) * (x.ndim - 2)

    def per_channel(key: str, default: float) -> np.ndarray:
        v = a.get(key)
        return np.full(x.shape[1], default, np.float32) if v is None else np.asarray(v, np.float32)

    mean, var = per_channel("mean", 0.0), per_channel("variance", 1.0)
    gamma, beta = per_channel("gamma", 1.0), per_channel("beta", 0.0)
    eps = float(a.get("epsilon", 1e-5))
    return (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * gamma.reshape(shape) + beta.reshape(shape)


def _matmul(a: dict[str, Any]) -> np.ndarray:
    x, y = np.asarray(a["x"], np.float32), np.asarray(a["y"], np.float32)
    if bool(a.get("transpose_x", False)):
        x = np.swapaxes(x, -1, -2)
    if bool(a.get("transpose_y", False)):
        y = np.swapaxes(y, -1, -2)
    return np.matmul(x, y)


def _linear(a: dict[str, Any]) -> np.ndarray:
    out = np.asarray(a["x"], np.float32) @ np.asarray(a["weight"], np.float32).T
    return out + np.asarray(a["bias"], np.float32) if a.get("bias") is not None else out


def _concat(a: dict[str, Any]) -> np.ndarray:
    if bool(a.get("interleave", False)):
        raise Unsupported("concat with interleave")
    return np.concatenate(a["values"], axis=int(a["axis"]))


def _f(a: dict[str, Any], key: str = "x") -> np.ndarray:
    return np.asarray(a[key], np.float32)


_OPS: dict[str, Any] = {
    "add": lambda a: _f(a) + _f(a, "y"), "sub": lambda a: _f(a) - _f(a, "y"), "mul": lambda a: _f(a) * _f(a, "y"),
    "real_div": lambda a: _f(a) / _f(a, "y"), "maximum": lambda a: np.maximum(_f(a), _f(a, "y")),
    "minimum": lambda a: np.minimum(_f(a), _f(a, "y")), "pow": lambda a: np.power(_f(a), _f(a, "y")),
    "relu": lambda a: np.maximum(_f(a), 0), "tanh": lambda a: np.tanh(_f(a)),
    "sigmoid": lambda a: 1 / (1 + np.exp(-_f(a))), "silu": lambda a: _f(a) / (1 + np.exp(-_f(a))),
    "exp": lambda a: np.exp(_f(a)), "sqrt": lambda a: np.sqrt(_f(a)), "abs": lambda a: np.abs(_f(a)),
    "square": lambda a: _f(a) ** 2,
    "rsqrt": lambda a: 1 / np.sqrt(_f(a) + float(a.get("epsilon", 1e-12))),
    "inverse": lambda a: 1 / (_f(a) + float(a.get("epsilon", 1e-4))),
    "gelu": lambda a: _gelu(a["x"], str(a.get("mode", "EXACT"))),
    "identity": lambda a: np.asarray(a["x"]),
    "reduce_mean": _reduce(np.mean), "reduce_sum": _reduce(np.sum), "reduce_max": _reduce(np.max),
    "softmax": _softmax, "layer_norm": _layer_norm, "batch_norm": _batch_norm,
    "conv": _conv, "matmul": _matmul, "linear": _linear,
    "reshape": lambda a: np.reshape(a["x"], [int(s) for s in a["shape"]]),
    "transpose": lambda a: np.transpose(a["x"], [int(p) for p in a["perm"]]),
    "expand_dims": lambda a: np.expand_dims(a["x"], tuple(int(i) for i in np.atleast_1d(a["axes"]))),
    "squeeze": lambda a: np.squeeze(a["x"], None if a.get("axes") is None
                                    else tuple(int(i) for i in np.atleast_1d(a["axes"]))),
    "concat": lambda a: _concat(a),
}


_BINARY = frozenset({"add", "sub", "mul", "real_div", "maximum", "minimum", "pow"})


def _check_result_size(kind: str, args: dict[str, Any], declared: tuple[int, ...]) -> None:
    """Refuse before computing when an op would make more than its declared output (broadcasting, padding):
    the declared sizes are what the total-size bound was checked on."""
    if kind in _BINARY:
        out = np.broadcast_shapes(np.shape(args["x"]), np.shape(args["y"]))
    elif kind == "matmul":
        xs, ys = list(np.shape(args["x"])), list(np.shape(args["y"]))
        if len(xs) < 2 or len(ys) < 2:
            return
        if bool(args.get("transpose_x", False)):
            xs[-1], xs[-2] = xs[-2], xs[-1]
        if bool(args.get("transpose_y", False)):
            ys[-1], ys[-2] = ys[-2], ys[-1]
        out = (*np.broadcast_shapes(tuple(xs[:-2]), tuple(ys[:-2])), xs[-2], ys[-1])
    elif kind == "conv":
        x_shape, w_shape = np.shape(args["x"]), np.shape(args["weight"])
        if len(x_shape) != len(w_shape) or len(x_shape) < 3:
            raise Unsupported("conv with mismatched ranks")
        if args.get("pad_type") == "custom" and any(int(p) > max(w_shape[2:]) for p in args["pad"]):
            raise Unsupported("conv padding wider than its kernel is not evaluated by the numpy checker")
        # the output's channels and batch are fixed by the weight and the input; spatial axes never grow
        # beyond the input's (padding is at most the kernel), so checking those bounds the work
        if tuple(declared[:2]) != (x_shape[0], w_shape[0]) or any(
                d > x + 2 * k for d, x, k in zip(declared[2:], x_shape[2:], w_shape[2:], strict=False)):
            raise Unsupported(f"`conv` output {tuple(declared)} does not follow from its input {tuple(x_shape)} "
                              f"and weight {tuple(w_shape)}")
        return
    else:
        return
    if tuple(out) != tuple(declared):
        raise Unsupported(f"`{kind}` would give shape {tuple(out)}, the graph declares {tuple(declared)}")


def numpy_evaluate(package_dir: Path, spec: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Outputs of the main function for `inputs` (in the function's input order). Raises Unsupported."""
    from .mil import _tensor_of

    fn = spec.mlProgram.functions["main"]
    block = fn.block_specializations[fn.opset]
    env: dict[str, Any] = {}
    total = 0
    for op in block.operations:
        for o in op.outputs:
            t = _tensor_of(o.type)
            if t and t.shape:
                total += int(np.prod([d or 0 for d in t.shape]))
        if op.blocks:
            raise Unsupported(f"`{op.type}` with nested blocks")
        if op.type not in ("const", "cast", "split") and op.type not in _OPS:
            raise Unsupported(f"`{op.type}` is not evaluated by the numpy checker")
    if total > MAX_TOTAL_ELEMENTS:
        raise Unsupported("the graph is too large for the numpy checker")
    if len(fn.inputs) != len(inputs):
        raise Unsupported("input count differs from the problem's")
    for desc, x in zip(fn.inputs, inputs, strict=True):
        t = _tensor_of(desc.type)
        env[desc.name] = _rounded(x, _MIL_DTYPES.get(t.dtype) if t else None)
    blobs: dict[str, bytes] = {}
    for op in block.operations:
        t = _tensor_of(op.outputs[0].type) if op.outputs else None
        out_dtype = _MIL_DTYPES.get(t.dtype) if t else None
        shape = tuple(d or 0 for d in t.shape) if t and t.shape else ()
        if op.type == "const":
            val = op.attributes["val"]
            if val.WhichOneof("value") == "blobFileValue":
                env[op.outputs[0].name] = _blob(package_dir, val.blobFileValue.fileName,
                                                int(val.blobFileValue.offset), shape, blobs)
            else:
                env[op.outputs[0].name] = _immediate(val, np.dtype(out_dtype or object), shape)
            continue
        args: dict[str, Any] = {}
        for key, arg in op.inputs.items():
            vals = []
            for b in arg.arguments:
                if b.WhichOneof("binding") == "name":
                    vals.append(env[b.name])
                else:
                    vt = _tensor_of(b.value.type)
                    dt = _MIL_DTYPES.get(vt.dtype) if vt else None
                    vals.append(_immediate(b.value, np.dtype(dt or object), tuple(d or 0 for d in vt.shape)
                                           if vt and vt.shape else ()))
            args[key] = vals if key == "values" else vals[0]
        if op.type == "split":
            x, axis = np.asarray(args["x"]), int(args["axis"])
            sizes = args.get("split_sizes")
            cuts = (np.cumsum([int(n) for n in sizes])[:-1] if sizes is not None else int(args["num_splits"]))
            for o, part in zip(op.outputs, np.split(x, cuts, axis=axis), strict=True):
                env[o.name] = part
            continue
        _check_result_size(op.type, args, shape)
        if op.type == "cast":
            result = np.asarray(args["x"])
        else:
            result = _OPS[op.type](args)
        env[op.outputs[0].name] = _rounded(result, out_dtype)
        if t and t.shape is not None and env[op.outputs[0].name].shape != shape:
            raise Unsupported(f"`{op.type}` gave shape {env[op.outputs[0].name].shape}, the graph says {shape}")
    return [np.asarray(env[name], np.float32) for name in block.outputs]
