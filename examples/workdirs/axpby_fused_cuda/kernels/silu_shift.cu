// out[i] = z[i] * sigmoid(z[i]) + shift, one pass over z.
#include <cstdint>
#include <cuda_runtime.h>

__global__ void silu_shift_kernel(float* __restrict__ out, const float* __restrict__ z, float shift, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const float v = z[i];
        out[i] = v / (1.0f + __expf(-v)) + shift;
    }
}

extern "C" void silu_shift_launcher(float* out, const float* z, float shift, int64_t n, cudaStream_t stream) {
    const int threads = 256;
    const int64_t want = (n + threads - 1) / threads;
    const int blocks = (int)(want < 65535 ? (want > 0 ? want : 1) : 65535);
    silu_shift_kernel<<<blocks, threads, 0, stream>>>(out, z, shift, n);
}
