// Patch 02 (engine/native/patches/02-vector-tanh.patch): the vectorised ggml_vec_tanh_f32 against
// glibc's tanhf, NaN and infinities included.  Built and run by test_llamacpp.py against the
// patched tree the worker was built from.
#include "vec.h"
#include <cstdio>
#include <cmath>
int main() {
    float x[40], y[40];
    for (int i = 0; i < 40; ++i) x[i] = (i - 20) * 0.37f;
    x[3] = NAN; x[4] = INFINITY; x[5] = -INFINITY; x[6] = 1e-6f; x[7] = -1e-30f; x[8] = 0.0f;
    ggml_vec_tanh_f32(40, y, x);
    double worst = 0;
    for (int i = 0; i < 40; ++i) {
        float r = tanhf(x[i]);
        if (std::isnan(r) != std::isnan(y[i])) { printf("NaN mismatch at %d: %g vs %g\n", i, y[i], r); return 1; }
        if (!std::isnan(r)) worst = fmax(worst, fabs((double) r - y[i]));
    }
    printf("nan in -> %g, inf -> %g, -inf -> %g, 1e-6 -> %g, worst abs error %.3g\n", y[3], y[4], y[5], y[6], worst);
    return worst < 1e-6 ? 0 : 1;
}
