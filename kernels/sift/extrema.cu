// Scale-space extrema of every octave in one launch (docs/sift-reference.md section 2):
// a thread per octave pixel tests DoG layers 1..n at that pixel. The 26-neighbour test
// is branch-free (min and max over the 3x3x3 block, then two comparisons; the sample's
// own layer is tested first, and most samples stop there); the
// survivors are compacted into structure-of-arrays candidate lists with
// warp-aggregated atomics, so the refinement kernel gets full warps.
#include "common/sift_octaves.cuh"
#include "common/warp_append.cuh"

__device__ __forceinline__ void block_min_max(
    const float* __restrict__ plane, int at, int width, float& lo, float& hi) {
#pragma unroll
    for (int dy = -1; dy <= 1; ++dy) {
#pragma unroll
        for (int dx = -1; dx <= 1; ++dx) {
            float v = __ldg(plane + at + dy * width + dx);
            lo = fminf(lo, v);
            hi = fmaxf(hi, v);
        }
    }
}

extern "C" __global__ void sift_extrema(
    const float* __restrict__ pyramid, const SiftOctave* __restrict__ octaves_in, int n_octaves,
    int n_layers, float threshold, int total_pixels, unsigned int* candidate_count, int capacity,
    int* __restrict__ cand_x, int* __restrict__ cand_y, int* __restrict__ cand_octave_layer) {
    __shared__ SiftOctave octaves[SIFT_MAX_OCTAVES];
    for (int i = threadIdx.x; i < n_octaves; i += blockDim.x) octaves[i] = octaves_in[i];
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total_pixels; i += gridDim.x * blockDim.x) {
        int o = octave_of_pixel(octaves, n_octaves, i);
        const SiftOctave oct = octaves[o];
        int p = i - oct.pixel_start;
        int y = p / oct.width, x = p - y * oct.width;
        if (x < SIFT_IMG_BORDER || x >= oct.width - SIFT_IMG_BORDER || y < SIFT_IMG_BORDER ||
            y >= oct.height - SIFT_IMG_BORDER)
            continue;
        int plane = oct.width * oct.height;
        const float* dog = pyramid + oct.dog;
        for (int layer = 1; layer <= n_layers; ++layer) {
            float v = __ldg(dog + layer * plane + p);
            if (!(fabsf(v) > threshold)) continue;
            // The centre compares with itself, harmlessly (the test is not strict).
            // Its own layer first: most samples fail there, before the two other loads.
            float lo = v, hi = v;
            block_min_max(dog + layer * plane, p, oct.width, lo, hi);
            if (!((v > 0.f && v >= hi) | (v < 0.f && v <= lo))) continue;
            block_min_max(dog + (layer - 1) * plane, p, oct.width, lo, hi);
            block_min_max(dog + (layer + 1) * plane, p, oct.width, lo, hi);
            bool extremum = (v > 0.f && v >= hi) | (v < 0.f && v <= lo);
            if (extremum) {
                unsigned int slot = warp_append(candidate_count, 0);
                if (slot < (unsigned int)capacity) {
                    cand_x[slot] = x;
                    cand_y[slot] = y;
                    cand_octave_layer[slot] = pack_octave_layer(o, layer);
                }
            }
        }
    }
}
