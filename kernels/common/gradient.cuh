// A window sample as the orientation and descriptor stages take it
// (docs/sift-reference.md sections 4-5): a Gaussian level's central-difference gradient
// at one pixel, its magnitude times the window's Gaussian weight, and its direction in
// degrees (OpenCV's fastAtan2). The square root and the exponential are the hardware's
// approximate ones (a few ulp): parity with the CPU is a tolerance (tests/cuda_sift.rs),
// and the IEEE versions cost a dozen instructions and a branch per sample.
#pragma once

#include "common/fast_atan2.cuh"

struct WeightedGradient {
    float magnitude, degrees;
};

// `at` is the pixel's index in `image` (at least a row and a column inside it), `stride`
// the level's row stride in floats, and the weight is 2^`log2_weight`.
__device__ __forceinline__ WeightedGradient weighted_gradient(const float* __restrict__ image,
                                                              unsigned int at, int stride,
                                                              float log2_weight) {
    // One 64-bit address and two 64-bit steps: the register move keeps the compiler
    // from rebuilding each of the four addresses from 32-bit indices (four instructions
    // each).
    const float* p = image + at;
    asm("mov.b64 %0, %0;" : "+l"(p));
    const long long row = stride;
    const float dx = __ldg(p + 1) - __ldg(p - 1);
    const float dy = __ldg(p - row) - __ldg(p + row);
    float length, weight;
    asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(length) : "f"(dx * dx + dy * dy));
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(weight) : "f"(log2_weight));
    return {length * weight, fast_atan2_degrees(dy, dx)};
}
