// OpenCV's fastAtan2 (degrees in [0, 360]): a degree-7 odd polynomial for atan on
// [0, 1]. Same constants and operation order as src/cpu/sift/fastmath.rs, but the
// ratio is the hardware's approximate division (reciprocal and multiply, ~2 ulp) and
// multiply-adds contract: results move by an ulp or so, within the CPU parity tolerance
// of tests/cuda_sift.rs, for a tenth of the instructions of the IEEE division and its
// slow-path branch.
#pragma once

__device__ __forceinline__ float fast_atan2_degrees(float y, float x) {
    const float degrees = (float)(180.0 / 3.14159265358979323846);
    const float p1 = 0.99978784f * degrees;
    const float p3 = -0.3258084f * degrees;
    const float p5 = 0.15557865f * degrees;
    const float p7 = -0.044326555f * degrees;
    const float eps = (float)2.220446049250313e-16;  // f64::EPSILON as f32, as OpenCV
    // Both octants through one division and one polynomial, picked by selects: the
    // CPU's two branches, without a divergent warp running both.
    const float ax = fabsf(x), ay = fabsf(y);
    const bool x_major = ax >= ay;
    const float c = __fdividef(x_major ? ay : ax, (x_major ? ax : ay) + eps);
    const float c2 = c * c;
    float a = (((p7 * c2 + p5) * c2 + p3) * c2 + p1) * c;
    if (!x_major) a = 90.f - a;
    if (x < 0.f) a = 180.f - a;
    if (y < 0.f) a = 360.f - a;
    return a;
}
