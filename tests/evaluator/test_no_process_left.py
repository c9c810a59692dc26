import time

from gpu_runner.evaluate import evaluate
from tests.evaluator.helpers import PROBLEM, processes_with, with_forward


def test_it_leaves_no_detached_or_forked_process_behind():
    # A double fork with setsid from native code, on the first call: a daemon meant to outlive the evaluation.
    solution = with_forward("""
        if not getattr(self, "spawned", False):
            self.spawned = True
            ext.spawn_detached("987651")
        return ext.relu_scale(x.contiguous(), self.scale)
    """)
    result = evaluate(PROBLEM, solution, device="cpu")
    assert result["verdict"] in ("accepted", "rejected"), result["message"]
    time.sleep(0.5)
    assert processes_with("sleep 987651") == []
