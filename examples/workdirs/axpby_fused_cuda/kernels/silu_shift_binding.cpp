#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>

#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

#include "../binding_registry.h"

extern "C" void silu_shift_launcher(float* out, const float* z, float shift, int64_t n, cudaStream_t stream);

torch::Tensor silu_shift_forward(torch::Tensor z, double shift) {
    TORCH_CHECK(z.is_cuda(), "z must be a CUDA tensor");
    TORCH_CHECK(z.scalar_type() == torch::kFloat32 && z.is_contiguous(), "z must be contiguous float32");
    auto out = torch::empty_like(z);
    silu_shift_launcher(out.data_ptr<float>(), z.data_ptr<float>(), static_cast<float>(shift), z.numel(),
                        c10::cuda::getCurrentCUDAStream().stream());
    return out;
}

void register_silu_shift(pybind11::module& m) {
    m.def("silu_shift_forward", &silu_shift_forward, "out = z * sigmoid(z) + shift", py::arg("z"),
          py::arg("shift"));
}

REGISTER_BINDING(silu_shift, register_silu_shift);
