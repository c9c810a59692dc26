"""benchmarks/kernelbench_memory_plan.py: a problem's inputs, output, parameters and peak worked out on fake tensors
(no memory), and the plan an evaluation on a GPU would make from them, for problems written here in KernelBench's
layout."""

import sys
from pathlib import Path

from gpu_runner import memory_plan

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks import kernelbench_memory_plan as kmp  # noqa: E402

GiB = 1 << 30

# 4 GiB in; relu makes 4 GiB, and the product another 4 GiB while relu's is alive: a peak of 12 GiB.
ELEMENTWISE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2.0

def get_inputs():
    return [torch.rand(1024, 1024 * 1024)]

def get_init_inputs():
    return []
"""

# A 1 GiB weight (each child holds its own copy of the parameters) on a small input.
LINEAR = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n, bias=False)

    def forward(self, x):
        return self.fc(x)

def get_inputs():
    return [torch.rand(8, 16384)]

def get_init_inputs():
    return [16384]
"""


def test_it_estimates_a_large_problem_without_allocating_it_and_plans_as_an_evaluation_would(tmp_path):
    (tmp_path / "level1").mkdir()
    path = tmp_path / "level1" / "1_Relu_scale.py"
    path.write_text(ELEMENTWISE)
    sizes = kmp.estimate(path)  # 4 GiB inputs: on fake tensors, this machine allocates none of it
    assert sizes == {"input_bytes": 4 * GiB, "output_bytes": 4 * GiB, "param_bytes": 0, "peak_bytes": 12 * GiB}
    plan = kmp.plan_for(sizes, device_free=139 * GiB, host_free=120 * GiB)
    # Large outputs: one timing set, two kept outputs, the expected outputs computed on demand.
    assert plan["fits"] and plan["n_sets"] == 1 and plan["keep_outputs"] == 2 and plan["expected"] == "on_demand"
    assert plan["device_bytes"] > 3 * 12 * GiB and plan["tensor_ratio_to_peak"] > 3
    small = kmp.plan_for(sizes, device_free=40 * GiB, host_free=120 * GiB)
    assert not small["fits"] and small["device_bytes"] > memory_plan.USABLE_SHARE * 40 * GiB


def test_it_counts_the_parameters_in_each_child(tmp_path):
    path = tmp_path / "2_Linear.py"
    path.write_text(LINEAR)
    sizes = kmp.estimate(path)
    assert sizes["param_bytes"] == GiB and sizes["input_bytes"] == 8 * 16384 * 4
    assert sizes["output_bytes"] == 8 * 16384 * 4 and sizes["peak_bytes"] < 16 << 20
    plan = kmp.plan_for(sizes, device_free=139 * GiB, host_free=120 * GiB)
    without = kmp.plan_for({**sizes, "param_bytes": 0}, device_free=139 * GiB, host_free=120 * GiB)
    assert plan["device_bytes"] == without["device_bytes"] + 2 * GiB  # the reference's copy and the solution's
    assert plan["tensor_ratio_to_peak"] == without["tensor_ratio_to_peak"]
    # Where the parameters leave no room, the plan refuses: 2 GiB of them in 5 GiB free.
    assert not kmp.plan_for(sizes, device_free=5 * GiB, host_free=120 * GiB)["fits"]
    assert kmp.plan_for({**sizes, "param_bytes": 0}, device_free=5 * GiB, host_free=120 * GiB)["fits"]


def test_the_command_prints_a_row_per_problem_and_a_summary(tmp_path, capsys):
    (tmp_path / "level1").mkdir()
    (tmp_path / "level1" / "1_Relu_scale.py").write_text(ELEMENTWISE)
    (tmp_path / "level1" / "2_Broken.py").write_text("import no_such_module_here\n")
    out_json = tmp_path / "rows.json"
    assert kmp.main(["--kernelbench", str(tmp_path), "--levels", "1", "--json", str(out_json)]) == 0
    printed = capsys.readouterr().out
    assert "L1 1_Relu_scale" in printed and " fits" in printed
    assert "L1 2_Broken" in printed and "not estimated: ModuleNotFoundError" in printed
    assert "2 problems; 1 estimated" in printed and "not estimated: 1" in printed
    assert out_json.exists()
