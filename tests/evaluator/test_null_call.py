"""The clock audit's null call (child.Harness.op_null_call, timing.py): the harness's work around a run of timed
calls, repeated by a trusted child with a forward that does nothing."""

from __future__ import annotations

import pytest


def test_a_null_call_refuses_to_regenerate_a_set():
    # The clock audit's null calls repeat a run's harness work on the reference's sets; a fresh change would leave
    # the reference's set k other than what the checks' replays expect, so the trusted child refuses it outright.
    from gpu_runner.child import Harness, HarnessError

    harness = Harness.__new__(Harness)  # the refusal comes before anything of the process is touched
    harness.role = "eager"
    with pytest.raises(HarnessError, match="does not regenerate"):
        harness.op_null_call({"sets": [0, 1], "changes": [None, ["fresh", 7]], "output_bytes": 4})
    with pytest.raises(HarnessError, match="not for the solution"):
        harness.role = "solution"
        harness.op_null_call({"set": 0, "change": None})


def test_the_audit_is_warmed_before_the_timing(tmp_path):
    # The first null call ran its flush under the solution's dispatch mode, which imported torch._dynamo inside the
    # timing stage (1.5 s here, 3.9-5.5 s on the H200 host). The reference's child now pays that while the
    # solution's child loads (op_warm_audit): the null calls that follow import nothing.
    import sys

    from gpu_runner.child import Harness, HarnessError

    problem = tmp_path / "problem.py"
    problem.write_text(
        "import torch\n"
        "class Model(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return torch.relu(x)\n"
        "def get_inputs():\n"
        "    return [torch.randn(64, 64)]\n"
        "def get_init_inputs():\n"
        "    return []\n")
    harness = Harness(None, "eager", {})
    harness.op_load({"device": "cpu", "seed": 0, "problem_file": str(problem), "policy": {}})
    harness.op_prepare_timing({"seeds": [1, 2]})
    warmed = harness.op_warm_audit({})
    assert warmed["guards"] is True and "torch._dynamo" in sys.modules
    modules = set(sys.modules)
    reply = harness.op_null_call({"sets": [0, 1], "changes": [None, None], "output_bytes": 64 * 64 * 4,
                                  "poison_bytes": 0, "policy": {}, "keep": False})
    assert len(reply["times_us"]) == 2
    assert set(sys.modules) - modules == set()
    harness.role = "solution"
    with pytest.raises(HarnessError, match="not for the solution"):
        harness.op_warm_audit({})
