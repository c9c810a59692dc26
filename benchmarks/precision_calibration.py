"""Calibration of the precision rule (gpu_runner/precision.py): errors against float64 of honest float32
computations in other orders, and of the same work with inputs rounded to bfloat16, float16 or TF32.

    python benchmarks/precision_calibration.py [--quick] [--json PATH]

For each case it prints err_ref (PyTorch's own float32 against float64), each variant's error against float64,
its ratio to err_ref, and err / bound(fp32): an honest variant must stay under 1 (with room), a rounded one
above it. The rounding is done as a kernel would: the float32 inputs (and weights) rounded, the arithmetic in
float32. TF32 is shown both truncated (the low 13 bits of the significand zeroed, what tensor cores read) and
rounded to nearest. CPU only; the GPU's own float32 kernels (cuBLAS, Triton) are what the GPU run adds.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from gpu_runner import precision  # noqa: E402

torch.manual_seed(0)


def rel(x: torch.Tensor, truth: torch.Tensor) -> float:
    x, truth = x.double(), truth.double()
    return float(torch.linalg.vector_norm(x - truth) / torch.linalg.vector_norm(truth))


def tf32_truncate(x: torch.Tensor) -> torch.Tensor:
    return (x.contiguous().view(torch.int32) & ~0x1FFF).view(torch.float32)


def tf32_round(x: torch.Tensor) -> torch.Tensor:
    bits = x.contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


ROUNDINGS = {
    "bf16 inputs": lambda x: x.bfloat16().float(),
    "fp16 inputs": lambda x: x.half().float(),
    "tf32 inputs (truncated)": tf32_truncate,
    "tf32 inputs (rounded)": tf32_round,
}


# ----- matmul variants: all float32 arithmetic -----
def mm_sequential(a: torch.Tensor, b: torch.Tensor, *, fma: bool, reverse: bool = False) -> torch.Tensor:
    """One accumulator per output element, k in order (or reversed): the classic tiled CUDA or C++ loop."""
    c = torch.zeros(a.shape[0], b.shape[1])
    ks = range(a.shape[1] - 1, -1, -1) if reverse else range(a.shape[1])
    for k in ks:
        if fma:  # the product exact, one rounding of the sum
            c = (c.double() + a[:, k, None].double() * b[None, k, :].double()).float()
        else:
            c = c + a[:, k, None] * b[None, k, :]
    return c


def mm_split_k(a: torch.Tensor, b: torch.Tensor, chunk: int) -> torch.Tensor:
    c = torch.zeros(a.shape[0], b.shape[1])
    for k0 in range(0, a.shape[1], chunk):
        c = c + a[:, k0:k0 + chunk] @ b[k0:k0 + chunk]
    return c


def mm_pairwise(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    parts = a.t()[:, :, None] * b[:, None, :]  # K x M x N products, each rounded once
    while parts.shape[0] > 1:
        if parts.shape[0] % 2:
            parts = torch.cat([parts, torch.zeros_like(parts[:1])])
        parts = parts[0::2] + parts[1::2]
    return parts[0]


def sum_sequential(x: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(np.add.accumulate(x.numpy(), axis=1, dtype=np.float32)[:, -1].copy())


def sum_blocked(x: torch.Tensor, block: int) -> torch.Tensor:
    """Each block summed sequentially (a thread's loop), then the block sums sequentially."""
    n = x.shape[1]
    parts = [sum_sequential(x[:, i:i + block].contiguous()) for i in range(0, n, block)]
    return sum_sequential(torch.stack(parts, 1).contiguous())


def sum_lanes(x: torch.Tensor, lanes: int) -> torch.Tensor:
    """SIMD or warp style: `lanes` sequential accumulators over a strided view, then a tree over the lanes."""
    n = x.shape[1]
    acc = sum_sequential(x.reshape(x.shape[0], n // lanes, lanes).transpose(1, 2).reshape(-1, n // lanes)
                         .contiguous()).reshape(x.shape[0], lanes)
    while acc.shape[1] > 1:
        acc = acc[:, 0::2] + acc[:, 1::2]
    return acc[:, 0]


def cumsum_sequential(x: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(np.add.accumulate(x.numpy(), axis=1, dtype=np.float32))


def cumsum_blocked(x: torch.Tensor) -> torch.Tensor:
    """A GPU-style scan: 32 blocks per row scanned on their own, then each block's offset added."""
    rows, cols = x.shape
    local = torch.from_numpy(np.add.accumulate(x.reshape(rows, 32, cols // 32).numpy(), axis=2, dtype=np.float32))
    offsets = torch.from_numpy(np.add.accumulate(local[:, :, -1].numpy(), axis=1, dtype=np.float32))
    offsets = torch.cat([torch.zeros(rows, 1), offsets[:, :-1]], 1)
    return (local + offsets[:, :, None]).reshape(rows, cols)


def softmax_manual(x: torch.Tensor) -> torch.Tensor:
    m = x.max(dim=1, keepdim=True).values
    e = torch.exp(x - m)
    s = sum_sequential(e.contiguous())[:, None]
    return e * (1.0 / s)


def layernorm_one_pass(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """E[x^2] - E[x]^2 in float32: a less careful honest formula than PyTorch's Welford."""
    n = x.shape[1]
    mean = sum_sequential(x.contiguous()) / n
    var = sum_sequential((x * x).contiguous()) / n - mean * mean
    return (x - mean[:, None]) * torch.rsqrt(var[:, None] + 1e-5) * w + b


def gelu_tanh_free(x: torch.Tensor) -> torch.Tensor:
    """0.5 x (1 + erf(x / sqrt 2)) in another association: x * 0.5 + x * 0.5 * erf(x * (1/sqrt 2))."""
    h = x * 0.5
    return h + h * torch.erf(x * 0.7071067811865476)


def cases(quick: bool):  # type: ignore[no-untyped-def]
    ks = [256, 1024, 4096] if quick else [256, 1024, 4096, 16384]
    for dist in ("randn", "rand"):
        for k in ks:
            m = 64 if k >= 4096 else 128
            gen = torch.randn if dist == "randn" else torch.rand
            a, b = gen(m, k), gen(k, m)
            if dist == "randn":
                a, b = a * k ** -0.25, b * k ** -0.25
            honest = {
                "sequential k": lambda a, b: mm_sequential(a, b, fma=False),
                "sequential k, FMA": lambda a, b: mm_sequential(a, b, fma=True),
                "sequential k reversed": lambda a, b: mm_sequential(a, b, fma=False, reverse=True),
                "split-K 256": lambda a, b: mm_split_k(a, b, 256),
                "split-K 32": lambda a, b: mm_split_k(a, b, 32),
            }
            if k <= 4096:
                honest["pairwise k"] = mm_pairwise
            yield (f"matmul {m}x{k}x{m} {dist}", (a, b), lambda a, b: a @ b, honest, True)
    for dist in ("rand", "randn"):
        for n in ([4096, 1 << 16] if quick else [4096, 1 << 16, 1 << 20]):
            rows = 8 if n >= 1 << 20 else 64
            x = torch.rand(rows, n) if dist == "rand" else torch.randn(rows, n)
            honest = {
                "sequential": lambda x: sum_sequential(x),
                "blocked 1024": lambda x: sum_blocked(x, 1024),
                "32 lanes + tree": lambda x: sum_lanes(x, 32),
                "numpy pairwise": lambda x: torch.from_numpy(x.numpy().sum(axis=1)),
            }
            yield (f"row sum {rows}x{n} {dist}", (x,), lambda x: x.sum(dim=1), honest, True)
    for cols in (2048, 8192):
        x = torch.rand(256, cols) * 2 - 1
        yield (f"cumsum rows 256x{cols}", (x,), lambda x: x.cumsum(dim=1),
               {"sequential": cumsum_sequential, "32 blocks, offsets added": cumsum_blocked}, True)
    x = torch.randn(256, 4096) * 3
    yield ("softmax rows 256x4096", (x,), lambda x: torch.softmax(x, dim=1),
           {"max, exp, sequential sum, reciprocal": softmax_manual}, True)
    x = torch.randn(256, 2048) * 2 + 1
    w, bias = 1 + 0.5 * torch.randn(2048), 0.5 * torch.randn(2048)
    yield ("layernorm rows 256x2048", (x, w, bias),
           lambda x, w, b: torch.nn.functional.layer_norm(x, (2048,), w, b),
           {"one-pass variance": layernorm_one_pass}, False)
    x = torch.randn(1024, 1024)
    yield ("gelu (erf) 1024x1024", (x,), lambda x: torch.nn.functional.gelu(x),
           {"another association": gelu_tanh_free}, True)
    x, s, bias = torch.randn(1024, 1024), 1.7, torch.randn(1024)
    yield ("relu * scale + bias 1024x1024", (x, bias), lambda x, b: torch.relu(x) * s + b,
           {"FMA": lambda x, b: (torch.relu(x).double() * s + b.double()).float()}, True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a minute on two cores)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    rows = []
    print(f"precision rule: bound = {precision.MULTIPLE:g} * err_ref + {precision.FLOOR:.2g} (fp32)")
    print(f"{'case':34} {'variant':38} {'err vs fp64':>11} {'x err_ref':>9} {'/ bound':>8}")
    for name, inputs, reference, honest, round_all in cases(args.quick):
        t0 = time.monotonic()
        truth = reference(*[t.double() for t in inputs])
        ref32 = reference(*inputs)
        err_ref = rel(ref32, truth)
        b = precision.bound("fp32", err_ref)
        print(f"{name:34} {'PyTorch float32 (err_ref)':38} {err_ref:11.3g} {'1':>9} {err_ref / b:8.3f}")
        variants = {f"honest: {k}": (fn, inputs) for k, fn in honest.items()}
        for rname, rnd in ROUNDINGS.items():
            # The rounded variant does the reference's own float32 arithmetic on rounded inputs.
            rounded = [rnd(t) if (round_all or j == 0) else t for j, t in enumerate(inputs)]
            variants[f"rounded: {rname}"] = (reference, rounded)
        for vname, (fn, args_) in variants.items():
            err = rel(fn(*args_), truth)
            ratio = err / err_ref if err_ref > 0 else math.inf
            print(f"{'':34} {vname:38} {err:11.3g} {ratio:9.3g} {err / b:8.3f}")
            rows.append({"case": name, "variant": vname, "err": err, "err_ref": err_ref, "bound": b,
                         "over_bound": err / b})
        print(f"{'':34} ({time.monotonic() - t0:.1f} s)")
    honest_worst = max(r["over_bound"] for r in rows if r["variant"].startswith("honest"))
    rounded = [r for r in rows if r["variant"].startswith("rounded")]
    print(f"\nworst honest variant: {honest_worst:.3f} of the bound")
    caught = sum(r["over_bound"] > 1 for r in rounded)
    print(f"rounded variants over the bound: {caught} of {len(rounded)}")
    for r in rounded:
        if r["over_bound"] <= 1:
            print(f"  passes: {r['case']}: {r['variant']} ({r['over_bound']:.3f} of the bound)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
