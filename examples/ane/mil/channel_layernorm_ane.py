"""LayerNorm over the channel axis in MIL, in fp16: reductions over axis 1 keep S as the last axis.

The centred square is averaged in fp16; with 768 channels of unit variance this stays well inside range.
coremltools 9's fuse_elementwise_to_batchnorm pass fails on an fp16 program (it makes a batch_norm with fp32
mean and fp16 gamma), so the builder converts the program itself without that one pass.
"""

import numpy as np
import coremltools as ct
from coremltools.converters.mil import Builder as mb
from coremltools.converters.mil.mil import types

EPS = 1e-5


def build(weights, input_shapes):
    (shape,) = input_shapes
    c = shape[1]
    gamma = weights["weight"].astype(np.float16).reshape(1, c, 1, 1)
    beta = weights["bias"].astype(np.float16).reshape(1, c, 1, 1)

    @mb.program(input_specs=[mb.TensorSpec(shape=shape, dtype=types.fp16)],
                opset_version=ct.target.macOS15)
    def prog(x):
        mean = mb.reduce_mean(x=x, axes=[1], keep_dims=True)
        centred = mb.sub(x=x, y=mean)
        var = mb.reduce_mean(x=mb.mul(x=centred, y=centred), axes=[1], keep_dims=True)
        inv = mb.rsqrt(x=var, epsilon=np.float16(EPS))
        y = mb.mul(x=centred, y=inv)
        return mb.add(x=mb.mul(x=y, y=gamma), y=beta)

    pipeline = ct.PassPipeline.DEFAULT
    pipeline.remove_passes({"common::fuse_elementwise_to_batchnorm"})
    return ct.convert(prog, convert_to="mlprogram", compute_precision=ct.precision.FLOAT16,
                      minimum_deployment_target=ct.target.macOS15, pass_pipeline=pipeline,
                      skip_model_load=True)
