// z[i] = a * x[i] + b * y[i], on the CPU (the CPU track's version of kernels/axpby.cu).
#include <cstdint>

extern "C" void axpby_launcher(float* z, const float* x, const float* y, float a, float b, int64_t n) {
    #pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) z[i] = a * x[i] + b * y[i];
}
