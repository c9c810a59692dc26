"""CUDA Agent's rules on a workdir's sources: cuBLAS only where the problem is a GEMM, cuDNN only where it is a
convolution, no other library; KernelHub's own rules allow no vendor library at all. The native rules of the
single-file track apply to every C++/CUDA file, except that a workdir's files may include each other."""

from gpu_runner import workdir
from tests.workdirs.helpers import PROBLEM_FILE, WORKDIR_CUDA

ELEMENTWISE = PROBLEM_FILE.read_text()
GEMM = ELEMENTWISE.replace("z = self.alpha * x + self.beta * y", "z = torch.matmul(x, y)")
CONV = ELEMENTWISE.replace("z = self.alpha * x + self.beta * y", "z = nn.functional.conv1d(x, y)")

CUBLAS = '#include <cublas_v2.h>\nvoid gemm(cublasHandle_t h) { cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, 0, 0, 1, 0, 1, 0, 0, 1); }\n'
CUDNN = '#include <cudnn.h>\nvoid conv(cudnnHandle_t h) { cudnnConvolutionForward(h, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0); }\n'
CUFFT = '#include <cufft.h>\nvoid f() { cufftHandle p; cufftPlan1d(&p, 8, CUFFT_C2C, 1); }\n'
THRUST = '#include <thrust/sort.h>\nvoid f(float* a, int n) { (void)a; (void)n; }\n'


def with_file(name: str, text: str) -> workdir.Workdir:
    wd = workdir.read_directory(WORKDIR_CUDA)
    wd.files[name] = text
    return wd


def rules_broken(wd: workdir.Workdir, problem: str, rules: str) -> list[str]:
    return [f"{f['rule']}: {f['detail']}" for f in workdir.prescreen(wd, problem, rules)]


def test_the_example_workdir_passes_both_rule_sets():
    wd = workdir.read_directory(WORKDIR_CUDA)
    assert rules_broken(wd, ELEMENTWISE, "cuda_agent") == []
    assert rules_broken(wd, ELEMENTWISE, "kernelhub") == []


def test_cublas_is_allowed_for_a_gemm_only():
    wd = with_file("kernels/gemm.cpp", CUBLAS)
    assert rules_broken(wd, GEMM, "cuda_agent") == []
    broken = rules_broken(wd, ELEMENTWISE, "cuda_agent")
    assert broken and "cuBLAS" in broken[0] and "only for a GEMM" in broken[0]
    assert any("vendor library" in b for b in rules_broken(wd, GEMM, "kernelhub"))


def test_cudnn_is_allowed_for_a_convolution_only():
    wd = with_file("kernels/conv.cpp", CUDNN)
    assert rules_broken(wd, CONV, "cuda_agent") == []
    assert any("only for a convolution" in b for b in rules_broken(wd, GEMM, "cuda_agent"))
    assert any("vendor library" in b for b in rules_broken(wd, CONV, "kernelhub"))


def test_no_other_library_whatever_the_problem():
    for text in (CUFFT, THRUST):
        broken = rules_broken(with_file("kernels/other.cu", text), GEMM, "cuda_agent")
        assert any(b.startswith("library_not_allowed") and "kernels/other.cu" in b for b in broken), broken


def test_workdir_files_may_include_each_other_but_not_files_outside():
    ok = with_file("kernels/extra_binding.cpp", '#include "../binding_registry.h"\n')
    assert rules_broken(ok, ELEMENTWISE, "cuda_agent") == []
    escape = with_file("kernels/extra_binding.cpp", '#include "../../../etc/passwd"\n')
    assert any("parent path" in b for b in rules_broken(escape, ELEMENTWISE, "cuda_agent"))


def test_the_single_file_rules_still_apply_to_model_new_and_the_kernels():
    fallback = with_file("model_new.py", workdir.read_directory(WORKDIR_CUDA).files["model_new.py"].replace(
        "return cuda_extension.silu_shift_forward(z, self.shift)",
        "import subprocess\n        return cuda_extension.silu_shift_forward(z, self.shift)"))
    assert any("subprocess" in b for b in rules_broken(fallback, ELEMENTWISE, "cuda_agent"))
    torch_op = with_file("kernels/cheat_binding.cpp", "torch::Tensor f(torch::Tensor x) { return torch::sigmoid(x); }\n")
    assert any("torch compute op" in b for b in rules_broken(torch_op, ELEMENTWISE, "cuda_agent"))


def test_a_problem_set_selects_the_rule_set_over_the_submission():
    chosen = ELEMENTWISE + '\nKERNELHUB = {"rules": "kernelhub"}\n'
    assert workdir.effective_rules("cuda_agent", chosen) == "kernelhub"
    assert workdir.effective_rules("cuda_agent", ELEMENTWISE) == "cuda_agent"
    assert workdir.effective_rules(None, ELEMENTWISE) == "kernelhub"
