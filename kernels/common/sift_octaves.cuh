// Scale-space geometry shared by the SIFT kernels. Mirrors `SiftOctave` in
// src/cuda/sift/plan.rs (repr(C), four i32): change both together.
#pragma once

struct SiftOctave {
    int width, height;
    int gauss;        // first float of Gaussian plane 0; plane l at gauss + l * width * height
    int dog;          // first float of DoG plane 0, laid out the same way
};

#define SIFT_MAX_OCTAVES 32
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
