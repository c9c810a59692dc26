"""Shared set-up for the ANE tests: the bundled problems and in-process package building (no builder child)."""

import tempfile
from pathlib import Path

import numpy as np

from ane_runner.package import package_zip

REPO = Path(__file__).resolve().parents[2]
POINTWISE = REPO / "problems/ane/level1/pointwise_conv_relu_ane.py"
LAYERNORM = REPO / "problems/ane/level1/channel_layernorm_ane.py"
FFN = REPO / "problems/ane/level2/ffn_gelu_ane.py"
ATTENTION = REPO / "problems/ane/level2/self_attention_ane.py"
EXAMPLES = REPO / "examples/ane"
SOLUTIONS = Path(__file__).resolve().parent / "solutions"

POINTWISE_SHAPE = (1, 512, 1, 512)


def convert_zip(prog, *, precision: str = "fp16") -> bytes:
    """A MIL program converted like a solution author would, saved and zipped as an upload."""
    import coremltools as ct

    mlmodel = ct.convert(
        prog, convert_to="mlprogram", minimum_deployment_target=ct.target.macOS15, skip_model_load=True,
        compute_precision=ct.precision.FLOAT16 if precision == "fp16" else ct.precision.FLOAT32,
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.mlpackage"
        mlmodel.save(str(path))
        return package_zip(path)


def pointwise_weights(dtype=np.float16):
    from ane_runner.problem import problem_load, reference_state_dict

    sd = reference_state_dict(problem_load(POINTWISE.read_text()))
    return sd["proj.weight"].astype(dtype), sd["proj.bias"].astype(dtype)


def rules(report) -> set[str]:
    return {i["rule"] for i in report["issues"]}
