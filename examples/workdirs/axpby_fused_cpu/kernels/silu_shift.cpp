// out[i] = z[i] * sigmoid(z[i]) + shift, one pass over z.
#include <cmath>
#include <cstdint>

extern "C" void silu_shift_launcher(float* out, const float* z, float shift, int64_t n) {
    #pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        const float v = z[i];
        out[i] = v / (1.0f + std::exp(-v)) + shift;
    }
}
