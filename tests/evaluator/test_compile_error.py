from gpu_runner.evaluate import evaluate
from tests.evaluator.helpers import PROBLEM

BROKEN = '''
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

ext = load_inline(
    name="kh_test_broken",
    cpp_sources="torch::Tensor scale(torch::Tensor x) { return x * ; }",
    functions=["scale"],
)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()

    def forward(self, x):
        return ext.scale(x)
'''


def test_it_gives_compile_error_with_the_compilers_message():
    result = evaluate(PROBLEM, BROKEN, device="cpu")
    assert result["verdict"] == "compile_error"
    assert "kh_test_broken" in result["message"]
    assert "error" in result["message"]
    assert "expected primary-expression" in result["message"]


def test_it_gives_compile_error_for_a_solution_without_modelnew():
    result = evaluate(PROBLEM, "import torch\n", device="cpu")
    assert result["verdict"] == "compile_error"
    assert "ModelNew" in result["message"]
