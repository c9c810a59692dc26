#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>

#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

#include "../binding_registry.h"

extern "C" void axpby_launcher(float* z, const float* x, const float* y, float a, float b, int64_t n,
                               cudaStream_t stream);

torch::Tensor axpby_forward(torch::Tensor x, torch::Tensor y, double a, double b) {
    TORCH_CHECK(x.is_cuda() && y.is_cuda(), "x and y must be CUDA tensors");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && y.scalar_type() == torch::kFloat32, "float32 only");
    TORCH_CHECK(x.is_contiguous() && y.is_contiguous() && x.sizes() == y.sizes(), "contiguous, same shape");
    auto z = torch::empty_like(x);
    axpby_launcher(z.data_ptr<float>(), x.data_ptr<float>(), y.data_ptr<float>(), static_cast<float>(a),
                   static_cast<float>(b), x.numel(), c10::cuda::getCurrentCUDAStream().stream());
    return z;
}

void register_axpby(pybind11::module& m) {
    m.def("axpby_forward", &axpby_forward, "z = a * x + b * y", py::arg("x"), py::arg("y"), py::arg("a"),
          py::arg("b"));
}

REGISTER_BINDING(axpby, register_axpby);
