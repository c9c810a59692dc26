"""Unusual but legal KernelBench problems, and honest C++ solutions of them, for test_problem_shapes.py.

Every solution carries the same extension (SHAPES_EXT), so the build cache builds it once per test session.
"""

import textwrap

SHAPES_EXT = r'''
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
torch::Tensor relu_scale(torch::Tensor x, double s) {
    TORCH_CHECK(x.is_contiguous() && x.scalar_type() == torch::kFloat32, "x must be contiguous float32");
    auto y = torch::empty_like(x);
    const float* in = x.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = in[i] > 0.f ? in[i] * static_cast<float>(s) : 0.f;
    return y;
}

torch::Tensor sum_all(torch::Tensor x) {
    TORCH_CHECK(x.is_contiguous() && x.scalar_type() == torch::kFloat32, "x must be contiguous float32");
    auto y = torch::empty({}, x.options());
    double acc = 0.0;
    const float* in = x.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) acc += in[i];
    y.data_ptr<float>()[0] = static_cast<float>(acc);
    return y;
}

int64_t count_positive(torch::Tensor x) {
    const float* in = x.data_ptr<float>();
    int64_t n = 0;
    for (int64_t i = 0; i < x.numel(); ++i) n += in[i] > 0.f;
    return n;
}

double mean(torch::Tensor x) {
    const float* in = x.data_ptr<float>();
    double acc = 0.0;
    for (int64_t i = 0; i < x.numel(); ++i) acc += in[i];
    return acc / static_cast<double>(x.numel());
}

torch::Tensor positive_mask(torch::Tensor x) {
    auto y = torch::empty(x.sizes(), x.options().dtype(torch::kBool));
    const float* in = x.data_ptr<float>();
    bool* out = y.data_ptr<bool>();
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = in[i] > 0.f;
    return y;
}

torch::Tensor add_int(torch::Tensor x, int64_t k) {
    TORCH_CHECK(x.is_contiguous() && x.scalar_type() == torch::kInt64, "x must be contiguous int64");
    auto y = torch::empty_like(x);
    const int64_t* in = x.data_ptr<int64_t>();
    int64_t* out = y.data_ptr<int64_t>();
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = in[i] + k;
    return y;
}

torch::Tensor scale_f64(torch::Tensor x, double s) {
    TORCH_CHECK(x.is_contiguous() && x.scalar_type() == torch::kFloat64, "x must be contiguous float64");
    auto y = torch::empty_like(x);
    const double* in = x.data_ptr<double>();
    double* out = y.data_ptr<double>();
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = in[i] * s;
    return y;
}

torch::Tensor to_half(torch::Tensor x) {
    auto y = torch::empty(x.sizes(), x.options().dtype(torch::kHalf));
    const float* in = x.data_ptr<float>();
    at::Half* out = y.data_ptr<at::Half>();
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = static_cast<at::Half>(in[i]);
    return y;
}

// Batch normalisation of NCHW float32 with the batch's own statistics (training mode), biased variance.
torch::Tensor batch_norm_train(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) {
    TORCH_CHECK(x.is_contiguous() && x.dim() == 4 && x.scalar_type() == torch::kFloat32, "x: NCHW float32");
    const int64_t n = x.size(0), c = x.size(1), hw = x.size(2) * x.size(3);
    auto y = torch::empty_like(x);
    const float* in = x.data_ptr<float>();
    float* out = y.data_ptr<float>();
    const float* wp = w.data_ptr<float>();
    const float* bp = b.data_ptr<float>();
    for (int64_t ch = 0; ch < c; ++ch) {
        double s = 0.0, s2 = 0.0;
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < hw; ++j) {
                const double v = in[(i * c + ch) * hw + j];
                s += v;
                s2 += v * v;
            }
        const double count = static_cast<double>(n * hw);
        const double mu = s / count;
        const double var = s2 / count - mu * mu;
        const double inv = 1.0 / std::sqrt(var + eps);
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < hw; ++j) {
                const int64_t k = (i * c + ch) * hw + j;
                out[k] = static_cast<float>((in[k] - mu) * inv * wp[ch] + bp[ch]);
            }
    }
    return y;
}
"""

ext = load_inline(
    name="kh_test_problem_shapes",
    cpp_sources=CPP_SOURCE,
    functions=["relu_scale", "sum_all", "count_positive", "mean", "positive_mask", "add_int", "scale_f64",
               "to_half", "batch_norm_train"],
)
'''


def solution(init_args: str, forward_args: str, body: str, init_body: str = "") -> str:
    """A solution: the shared extension, then ModelNew with this constructor and forward."""
    init = "\n".join(["super().__init__()", textwrap.dedent(init_body).strip()]).strip()
    return (
        SHAPES_EXT
        + f"\n\nclass ModelNew(nn.Module):\n    def __init__(self{init_args}):\n"
        + textwrap.indent(init, "        ")
        + f"\n\n    def forward(self{forward_args}):\n"
        + textwrap.indent(textwrap.dedent(body).strip(), "        ")
        + "\n"
    )


# Non-tensor inputs (an int, a float, None), a requires_grad input, no constructor arguments, no parameters,
# and an output that nests a tuple, holds a 0-dim tensor, Python numbers, None, bool, int64, fp64 and fp16.
NESTED_PROBLEM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, ints, xd, k, s, nothing):
        assert nothing is None
        y = torch.relu(x) * s
        return y, (x.sum(), int((x > 0).sum()), float(x.mean()), None), x > 0, ints + k, xd * s, y.half()


def get_inputs():
    return [torch.randn(64, 48, requires_grad=True), torch.randint(-100, 100, (37,)),
            torch.randn(5, 7, dtype=torch.float64), 3, 0.5, None]


def get_init_inputs():
    return []
'''

NESTED_HONEST = solution("", ", x, ints, xd, k, s, nothing", """
    x = x.contiguous()
    y = ext.relu_scale(x, s)
    return (y, (ext.sum_all(x), ext.count_positive(x), ext.mean(x), None), ext.positive_mask(x),
            ext.add_int(ints.contiguous(), k), ext.scale_f64(xd.contiguous(), s), ext.to_half(y))
""")

# A Model in training mode, as constructed: KernelBench never calls eval(), so batch norm uses the batch's
# statistics. Its affine parameters are random, so a solution must take them from the reference.
BATCHNORM_TRAIN_PROBLEM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)
        with torch.no_grad():
            self.bn.weight.copy_(1 + 0.3 * torch.randn(channels))
            self.bn.bias.copy_(0.3 * torch.randn(channels))

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [2.0 + 3.0 * torch.randn(4, 8, 16, 16)]


def get_init_inputs():
    return [8]
'''

BATCHNORM_TRAIN_HONEST = solution(", channels", ", x", """
    return ext.batch_norm_train(x.contiguous(), self.bn.weight, self.bn.bias, self.bn.eps)
""", init_body="self.bn = nn.BatchNorm2d(channels)")

# A reference that changes its input in place and returns it.
IN_PLACE_PROBLEM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        torch.relu_(x)
        return x.mul_(self.scale)


def get_inputs():
    return [torch.randn(128, 256)]


def get_init_inputs():
    return [2.0]
'''

IN_PLACE_HONEST = solution(", scale", ", x", "return ext.relu_scale(x.contiguous(), self.scale)",
                           init_body="self.scale = scale")

# Dropout in training mode: every run of the reference differs, whatever a solution does.
RANDOM_PROBLEM = IN_PLACE_PROBLEM.replace("""        torch.relu_(x)
        return x.mul_(self.scale)""", """        return torch.nn.functional.dropout(torch.relu(x) * self.scale, p=0.5, training=self.training)""")

# log of a negative number: NaN everywhere, so NaN-for-NaN would pass a solution that writes nothing.
ALL_NAN_PROBLEM = IN_PLACE_PROBLEM.replace("""        torch.relu_(x)
        return x.mul_(self.scale)""", """        return torch.log(-x.abs() - self.scale)""")
