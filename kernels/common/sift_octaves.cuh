// Scale-space geometry shared by the SIFT kernels. `SiftOctave` is mirrored in
// src/cuda/abi.rs: change both together (the ABI_ checks below tell a mismatch).
#pragma once

#include "common/abi.cuh"

struct SiftOctave {
    int width, height;
    int gauss;        // first float of Gaussian plane 0; plane l at gauss + l * width * height
    int dog;          // first float of DoG plane 0, laid out the same way
};
ABI_SIZE(SiftOctave, 16);
ABI_OFFSET(SiftOctave, width, 0);
ABI_OFFSET(SiftOctave, height, 4);
ABI_OFFSET(SiftOctave, gauss, 8);
ABI_OFFSET(SiftOctave, dog, 12);

// The pipeline's counters, zeroed each frame; the kernels take a pointer to the one
// they advance. sift_place copies the first four, in this order, into the summary.
struct SiftCounters {
    unsigned int candidates, extrema, keypoints, duplicates;
    unsigned int orientation_queue, describe_queue;  // work queues (common/block_queue.cuh)
    // sift_small_octaves: the block that starts first takes the chain (small_roles), and
    // counts the chain levels the other block may read (small_published).
    unsigned int small_roles, small_published;
};
ABI_SIZE(SiftCounters, 32);
ABI_OFFSET(SiftCounters, candidates, 0);
ABI_OFFSET(SiftCounters, extrema, 4);
ABI_OFFSET(SiftCounters, keypoints, 8);
ABI_OFFSET(SiftCounters, duplicates, 12);
ABI_OFFSET(SiftCounters, orientation_queue, 16);
ABI_OFFSET(SiftCounters, describe_queue, 20);
ABI_OFFSET(SiftCounters, small_roles, 24);
ABI_OFFSET(SiftCounters, small_published, 28);

// SIFT_MAX_OCTAVES, the octaves a table may hold, is a -D define (src/cuda/abi.rs).
// OpenCV's SIFT_IMG_BORDER: no candidate this close to an octave's border.
#define SIFT_IMG_BORDER 5

// OpenCV's BORDER_REFLECT_101, reflected as often as needed (kernels wider than the image),
// as src/cpu/sift/pyramid.rs `reflect_101`.
__device__ __forceinline__ int reflect101_repeated(int p, int n) {
    if (n == 1) return 0;
    while (p < 0 || p >= n) p = p < 0 ? -p : 2 * n - 2 - p;
    return p;
}

// Keypoint record packing of octave index (0 = first octave of the scale space) and layer.
__device__ __forceinline__ int pack_octave_layer(int octave, int layer) { return (octave << 8) | layer; }
__device__ __forceinline__ int packed_octave(int packed) { return packed >> 8; }
__device__ __forceinline__ int packed_layer(int packed) { return packed & 0xff; }

// The Gaussian plane of the layer `packed` names in its octave `oct`.
__device__ __forceinline__ const float* gaussian_layer(const float* pyramid, const SiftOctave& oct,
                                                       int packed) {
    return pyramid + oct.gauss + packed_layer(packed) * oct.width * oct.height;
}
