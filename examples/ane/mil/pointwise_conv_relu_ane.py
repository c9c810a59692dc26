"""Pointwise convolution + ReLU written directly in MIL: fp16 input, one conv, one relu, no casts."""

import numpy as np
import coremltools as ct
from coremltools.converters.mil import Builder as mb
from coremltools.converters.mil.mil import types


def build(weights, input_shapes):
    (shape,) = input_shapes
    w = weights["proj.weight"].astype(np.float16)  # (C_out, C_in, 1, 1): already a 1x1 conv kernel
    b = weights["proj.bias"].astype(np.float16)

    @mb.program(input_specs=[mb.TensorSpec(shape=shape, dtype=types.fp16)],
                opset_version=ct.target.macOS15)
    def prog(x):
        y = mb.conv(x=x, weight=w, bias=b, pad_type="valid")
        return mb.relu(x=y)

    return prog
