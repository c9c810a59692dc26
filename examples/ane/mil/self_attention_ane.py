"""Self-attention in MIL, fp16 throughout, every tensor's last axis 64 or 256 values wide.

The 1/sqrt(d) scale is folded into the query projection (1/8: exact in fp16), the fused QKV convolution is
three convolutions on slices of the published weights, and keys stay (B, H, D, S) so that the score matmul
needs no transpose.
"""

import numpy as np
import coremltools as ct
from coremltools.converters.mil import Builder as mb
from coremltools.converters.mil.mil import types

HEADS = 8


def build(weights, input_shapes):
    (shape,) = input_shapes
    b, c, _, s = shape
    d = c // HEADS
    w_qkv, b_qkv = weights["qkv.weight"], weights["qkv.bias"]
    scale = 1.0 / np.sqrt(d)
    wq, bq = (w_qkv[:c] * scale).astype(np.float16), (b_qkv[:c] * scale).astype(np.float16)
    wk, bk = w_qkv[c:2 * c].astype(np.float16), b_qkv[c:2 * c].astype(np.float16)
    wv, bv = w_qkv[2 * c:].astype(np.float16), b_qkv[2 * c:].astype(np.float16)
    wo, bo = weights["out.weight"].astype(np.float16), weights["out.bias"].astype(np.float16)

    @mb.program(input_specs=[mb.TensorSpec(shape=shape, dtype=types.fp16)],
                opset_version=ct.target.macOS15)
    def prog(x):
        q = mb.conv(x=x, weight=wq, bias=bq)
        k = mb.conv(x=x, weight=wk, bias=bk)
        v = mb.conv(x=x, weight=wv, bias=bv)
        q = mb.transpose(x=mb.reshape(x=q, shape=[b, HEADS, d, s]), perm=[0, 1, 3, 2])  # (B, H, S, D)
        k = mb.reshape(x=k, shape=[b, HEADS, d, s])  # (B, H, D, S)
        v = mb.transpose(x=mb.reshape(x=v, shape=[b, HEADS, d, s]), perm=[0, 1, 3, 2])  # (B, H, S, D)
        attn = mb.softmax(x=mb.matmul(x=q, y=k), axis=-1)  # (B, H, S, S)
        o = mb.transpose(x=mb.matmul(x=attn, y=v), perm=[0, 1, 3, 2])  # (B, H, D, S)
        o = mb.reshape(x=o, shape=[b, c, 1, s])
        return mb.add(x=x, y=mb.conv(x=o, weight=wo, bias=bo))

    return prog
