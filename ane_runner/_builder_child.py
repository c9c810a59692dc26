"""Harness run in a child process: confine itself, then run a solution's builder and save its package.

Started by ane_runner.validate through gpu_runner.sandbox.spawn as
`python -s -m ane_runner._builder_child WORKDIR CHANNEL_FD`. The channel carries one message, the isolation
in force, sent before the solution runs; the results go to files.
WORKDIR holds request.json, solution.py and weights.npz; the harness writes out/solution.mlpackage and
result.json there. It confines itself (gpu_runner's lockdown, then Landlock) before it reads the solution.
"""

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

_REPO = str(Path(__file__).resolve().parent.parent)
_isolation: dict = {}


def _fail(msg: str) -> None:
    Path("result.json").write_text(json.dumps({"ok": False, "error": msg[:4000]}))
    sys.exit(0)


def main() -> None:
    workdir = Path(sys.argv[1]).resolve()
    os.chdir(workdir)
    if os.environ.get("KERNELHUB_LOCKDOWN"):
        from gpu_runner.sandbox import lockdown

        _isolation["lockdown"] = lockdown(os.environ["KERNELHUB_LOCKDOWN"])
        os.chdir(workdir)  # the old cwd is the read-only mount underneath the new bind mount
    from ane_runner.landlock import SandboxUnavailable, confine_self, landlock_abi, read_only_roots

    try:
        confine_self(write_dir=workdir, read_dirs=read_only_roots())
        _isolation["landlock"] = f"abi {landlock_abi()}: reads of system and Python files only, writes to its dir"
    except SandboxUnavailable as exc:
        _isolation["landlock"] = f"not in force ({exc})"
    # what is in force goes to the parent now, over the channel, and the channel is closed: the solution
    # can write result.json, but it cannot rewrite this record
    import socket

    from gpu_runner.protocol import Channel

    channel = Channel(socket.socket(fileno=int(sys.argv[2])))
    channel.send({"isolation": _isolation})
    channel.close()
    # the solution imports none of our code: the repository is not on its path (and not readable)
    sys.path[:] = [p for p in sys.path if p not in (_REPO, str(workdir), "", ".")]
    for name in [m for m in sys.modules if m.split(".")[0] in ("ane_runner", "gpu_runner")]:
        del sys.modules[name]

    import numpy as np

    req = json.loads(Path("request.json").read_text())
    weights = dict(np.load("weights.npz", allow_pickle=False))
    shapes = [tuple(s) for s in req["input_shapes"]]
    source = Path("solution.py").read_text()

    import coremltools as ct
    from coremltools.converters.mil.mil import Program

    ns: dict = {"__name__": "solution"}
    try:
        exec(compile(source, "solution.py", "exec"), ns)
    except BaseException:
        _fail("the solution file fails to run:\n" + traceback.format_exc(limit=-3))

    kind = ""
    try:
        if callable(ns.get("build")):
            kind = "builder"
            built = ns["build"](weights, shapes)
        elif isinstance(ns.get("ModelNew"), type):
            kind = "modelnew"
            built = _convert_model_new(ns["ModelNew"], req["init_inputs"], weights, shapes, ct)
        else:
            _fail("the solution defines neither `build(weights, input_shapes)` nor `class ModelNew`")
    except SystemExit:
        raise
    except BaseException:
        _fail(f"the solution's {'build()' if kind == 'builder' else 'ModelNew'} raised:\n"
              + traceback.format_exc(limit=-3))

    try:
        if isinstance(built, Program):
            # coremltools 9's fuse_elementwise_to_batchnorm breaks on fp16 programs (fp32 mean, fp16 gamma)
            pipeline = ct.PassPipeline.DEFAULT
            pipeline.remove_passes({"common::fuse_elementwise_to_batchnorm"})
            built = ct.convert(built, convert_to="mlprogram", compute_precision=ct.precision.FLOAT16,
                               minimum_deployment_target=ct.target.macOS15, pass_pipeline=pipeline,
                               skip_model_load=True)
        if not isinstance(built, ct.models.MLModel):
            _fail(f"build() must return a coremltools MLModel or a MIL Program, not {type(built).__name__}")
        if built.get_spec().WhichOneof("Type") != "mlProgram":
            _fail("the model is not an ML program: convert with convert_to='mlprogram'")
        built.save(str(workdir / "out" / "solution.mlpackage"))
    except SystemExit:
        raise
    except BaseException:
        _fail("converting or saving the solution's model failed:\n" + traceback.format_exc(limit=-3))
    Path("result.json").write_text(json.dumps({"ok": True, "kind": kind}))


def _convert_model_new(cls: Any, init_inputs: list[Any], weights: dict[str, Any], shapes: list[tuple[int, ...]],
                       ct: Any) -> Any:
    """ModelNew (a solution's torch module) traced and converted by coremltools (`ct`, imported by the caller)."""
    import numpy as np
    import torch

    model = cls(*init_inputs).eval()
    model.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()}, strict=True)
    example = [torch.randn(*s) for s in shapes]
    traced = torch.jit.trace(model, example)
    return ct.convert(
        traced, inputs=[ct.TensorType(name=f"x{i}", shape=s, dtype=np.float16) for i, s in enumerate(shapes)],
        convert_to="mlprogram", compute_precision=ct.precision.FLOAT16,
        minimum_deployment_target=ct.target.macOS15, skip_model_load=True,
    )


if __name__ == "__main__":
    main()
