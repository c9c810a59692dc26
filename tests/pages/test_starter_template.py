"""The starter template is real code: it builds with load_inline and ModelNew runs with the problem's inputs."""

import pytest
import torch

from apps.submissions.starters import starter_source

REFERENCE = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a):
        return torch.relu(a)

def get_inputs():
    return [torch.randn(4096)]

def get_init_inputs():
    return []
'''


def test_it_copies_the_signatures_of_model():
    src = starter_source(reference_source=REFERENCE.replace("def forward(self, a)", "def forward(self, a, b, *, k=1)")
                         .replace("def __init__(self)", "def __init__(self, dim, eps=1e-5)"), language="cpp")
    assert "def __init__(self, dim, eps):" in src
    assert "def forward(self, a, b, k):" in src
    assert "torch::Tensor forward(torch::Tensor a, torch::Tensor b, torch::Tensor k)" in src


def test_it_falls_back_to_one_input_when_the_reference_does_not_parse():
    src = starter_source(reference_source="this is not python (", language="cuda")
    assert "def forward(self, x):" in src and "__global__" in src


def test_it_refuses_a_language_it_has_no_template_for():
    with pytest.raises(ValueError, match="use 'cpp' or 'cuda'"):
        starter_source(reference_source=REFERENCE, language="triton")


@pytest.mark.slow
def test_it_builds_and_runs_the_cpp_starter(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    namespace: dict = {}
    exec(compile(starter_source(reference_source=REFERENCE, language="cpp"), "starter.py", "exec"), namespace)
    x = torch.randn(4096)
    out = namespace["ModelNew"]()(x)
    # The skeleton copies its first input: the user replaces the loop with the computation.
    assert torch.equal(out, x)
    assert out.data_ptr() != x.data_ptr()
