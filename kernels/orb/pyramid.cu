// The ORB image pyramid and its 7x7 smoothing, all levels in one persistent launch
// (docs/orb-reference.md sections 1 and 7).
//
// Level l is resized from level l-1, so levels depend on each other across the whole
// image: the grid waits at a grid-wide barrier between levels (the kernel is launched
// cooperatively with a grid the device holds at once), then smooths every level.
#include "common/levels.cuh"
#include "common/grid_barrier.cuh"

// Fixed-point bilinear tap: destination coordinate -> (source index, weight of the
// second source pixel out of 256). Built on the host (src/cpu/pyramid.rs).
struct ResizeTap {
    int src;
    int w1;
};

__device__ __forceinline__ unsigned int resize_pixel(
    const unsigned char* src, int src_width, ResizeTap tx, ResizeTap ty) {
    unsigned int wx1 = (unsigned int)tx.w1, wx0 = 256u - wx1;
    unsigned int wy1 = (unsigned int)ty.w1, wy0 = 256u - wy1;
    const unsigned char* row0 = src + ty.src * src_width;
    // A zero weight means the second tap lies past the border: it is never read.
    const unsigned char* row1 = wy1 ? row0 + src_width : row0;
    int x1 = wx1 ? tx.src + 1 : tx.src;
    // __ldcg: the previous level was written by other blocks in this launch, so read
    // it from L2 (coherent after the grid barrier), never from a possibly stale L1.
    unsigned int top = wx0 * __ldcg(row0 + tx.src) + wx1 * __ldcg(row0 + x1);
    unsigned int bottom = wx0 * __ldcg(row1 + tx.src) + wx1 * __ldcg(row1 + x1);
    return (wy0 * top + wy1 * bottom + (1u << 15)) >> 16;
}

// OpenCV's BORDER_REFLECT_101 for one coordinate, clamped for levels under 4 pixels.
__device__ __forceinline__ int reflect101(int i, int n) {
    if (i < 0) i = -i;
    if (i >= n) i = 2 * n - 2 - i;
    return min(max(i, 0), n - 1);
}

// Separable 7x7 Gaussian in fixed point: the taps sum to 256 per pass, so the two
// passes scale by 2^16. Integer sums are exact in any order.
__device__ __forceinline__ unsigned int smooth_pixel(
    const unsigned char* level, int width, int height, int x, int y, const int* taps) {
    unsigned int v = 0;
#pragma unroll
    for (int j = 0; j < 7; ++j) {
        const unsigned char* row = level + reflect101(y + j - 3, height) * width;
        unsigned int h = 0;
#pragma unroll
        for (int i = 0; i < 7; ++i) h += (unsigned int)taps[i] * row[reflect101(x + i - 3, width)];
        v += (unsigned int)taps[j] * h;
    }
    return (v + (1u << 15)) >> 16;
}

extern "C" __global__ void orb_pyramid(
    const unsigned char* __restrict__ frame,  // level 0, row-major, width = levels[0].width
    const OrbLevel* __restrict__ level_table,
    int n_levels,
    const ResizeTap* __restrict__ taps,
    const int* __restrict__ smooth_taps,      // 7 weights summing to 256
    unsigned char* pyramid,                   // every level, packed
    unsigned char* __restrict__ smoothed,     // same layout as `pyramid`
    unsigned int* barrier_state,
    int total_pixels) {
    __shared__ OrbLevel levels[ORB_MAX_LEVELS];
    __shared__ int weights[7];
    load_levels(levels, level_table, n_levels);
    if (threadIdx.x < 7) weights[threadIdx.x] = smooth_taps[threadIdx.x];
    __syncthreads();

    const int stride = gridDim.x * blockDim.x;
    const int first = blockIdx.x * blockDim.x + threadIdx.x;

    const int pixels0 = levels[0].width * levels[0].height;
    for (int i = first; i < pixels0; i += stride) pyramid[i] = frame[i];

    for (int l = 1; l < n_levels; ++l) {
        grid_barrier(barrier_state);
        const OrbLevel dst = levels[l];
        const OrbLevel src = levels[l - 1];
        const int n = dst.width * dst.height;
        for (int i = first; i < n; i += stride) {
            int y = i / dst.width, x = i - y * dst.width;
            pyramid[dst.offset + i] = (unsigned char)resize_pixel(
                pyramid + src.offset, src.width, taps[dst.taps_x + x], taps[dst.taps_y + y]);
        }
    }
    grid_barrier(barrier_state);

    for (int i = first; i < total_pixels; i += stride) {
        const OrbLevel lv = levels[level_of(levels, n_levels, i)];
        int local = i - lv.offset;
        int y = local / lv.width, x = local - y * lv.width;
        smoothed[i] = (unsigned char)smooth_pixel(pyramid + lv.offset, lv.width, lv.height, x, y, weights);
    }
}
