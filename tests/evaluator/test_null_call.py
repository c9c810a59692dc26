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
