// The ORB image pyramid and its 7x7 smoothing, all levels in one persistent launch
// (docs/orb-reference.md sections 1 and 7).
//
// Level 0 is the frame, copied into the pyramid before this kernel. Level l is resized
// from level l-1, so levels depend on each other across the whole image: the kernel is
// launched cooperatively with a grid the device holds at once and waits at a grid-wide
// barrier after each level. Phase l resizes level l+1 from the stored level l and
// smooths level l, so no phase only smooths and no pixel is computed twice (a variant
// that resized two levels per phase, recomputing the first one's pixels, saved four
// barriers but cost more loads than they did: perf/RESULTS.md, helper orbcuda).
#include "common/levels.cuh"
#include "common/grid_barrier.cuh"

// Fixed-point bilinear tap: destination coordinate -> (source index, weight of the
// second source pixel out of 256). Built on the host (src/cpu/pyramid.rs).
struct ResizeTap {
    int src;
    int w1;
};

__device__ __forceinline__ unsigned int blend(unsigned int p00, unsigned int p01, unsigned int p10,
                                              unsigned int p11, ResizeTap tx, ResizeTap ty) {
    const unsigned int wx1 = (unsigned int)tx.w1, wx0 = 256u - wx1;
    const unsigned int wy1 = (unsigned int)ty.w1, wy0 = 256u - wy1;
    const unsigned int top = wx0 * p00 + wx1 * p01;
    const unsigned int bottom = wx0 * p10 + wx1 * p11;
    return (wy0 * top + wy1 * bottom + (1u << 15)) >> 16;
}

// A zero weight means the second tap lies past the border: it is never read.
__device__ __forceinline__ int second_tap(ResizeTap t) { return t.w1 ? t.src + 1 : t.src; }

// A pixel of a level stored before this phase. Plain loads, cached in L1 (neighbouring
// outputs share source pixels): other blocks wrote it before the grid barrier, whose
// __threadfence also invalidates this SM's L1 (CCTL.IVALL), and no block reads a level
// before the barrier that follows its writing.
__device__ __forceinline__ unsigned int stored_pixel(const unsigned char* src, int src_width, int x, int y) {
    return src[y * src_width + x];
}

// Pixel (x, y) of level `lv`, resized from the level below it, stored at `src`.
__device__ __forceinline__ unsigned int resized_pixel(const unsigned char* src, int src_width,
                                                     const ResizeTap* taps, const OrbLevel& lv, int x, int y) {
    const ResizeTap tx = taps[lv.taps_x + x], ty = taps[lv.taps_y + y];
    const int x1 = second_tap(tx), y1 = second_tap(ty);
    return blend(stored_pixel(src, src_width, tx.src, ty.src), stored_pixel(src, src_width, x1, ty.src),
                 stored_pixel(src, src_width, tx.src, y1), stored_pixel(src, src_width, x1, y1), tx, ty);
}

// OpenCV's BORDER_REFLECT_101 for one coordinate, clamped for levels under 4 pixels.
__device__ __forceinline__ int reflect101(int i, int n) {
    if (i < 0) i = -i;
    if (i >= n) i = 2 * n - 2 - i;
    return min(max(i, 0), n - 1);
}

// Separable 7x7 Gaussian in fixed point over shared-memory tiles: the taps sum to
// 256 per pass, so the two passes scale by 2^16. Integer sums are exact, so this is
// the reference's value whatever the order.
#define SMOOTH_TILE 32
#define SMOOTH_HALO 3
#define SMOOTH_SPAN (SMOOTH_TILE + 2 * SMOOTH_HALO)

struct SmoothTiles {
    unsigned char pixels[SMOOTH_SPAN][SMOOTH_SPAN + 1];  // the tile and its halo (reflected)
    unsigned int rows[SMOOTH_SPAN][SMOOTH_TILE];         // horizontal pass
};

__device__ __forceinline__ void smooth_tile(
    SmoothTiles& t, const unsigned char* level, unsigned char* out, int width, int height,
    int x0, int y0, const int* weights) {
    for (int k = threadIdx.x; k < SMOOTH_SPAN * SMOOTH_SPAN; k += blockDim.x) {
        int r = k / SMOOTH_SPAN, c = k - r * SMOOTH_SPAN;
        int y = reflect101(y0 + r - SMOOTH_HALO, height), x = reflect101(x0 + c - SMOOTH_HALO, width);
        t.pixels[r][c] = (unsigned char)stored_pixel(level, width, x, y);
    }
    __syncthreads();
    for (int k = threadIdx.x; k < SMOOTH_SPAN * SMOOTH_TILE; k += blockDim.x) {
        int r = k / SMOOTH_TILE, c = k - r * SMOOTH_TILE;
        unsigned int h = 0;
#pragma unroll
        for (int i = 0; i < 7; ++i) h += (unsigned int)weights[i] * t.pixels[r][c + i];
        t.rows[r][c] = h;
    }
    __syncthreads();
    for (int k = threadIdx.x; k < SMOOTH_TILE * SMOOTH_TILE; k += blockDim.x) {
        int r = k / SMOOTH_TILE, c = k - r * SMOOTH_TILE;
        if (y0 + r < height && x0 + c < width) {
            unsigned int v = 0;
#pragma unroll
            for (int j = 0; j < 7; ++j) v += (unsigned int)weights[j] * t.rows[r + j][c];
            out[(y0 + r) * width + x0 + c] = (unsigned char)((v + (1u << 15)) >> 16);
        }
    }
    __syncthreads();  // the next tile reuses the shared arrays
}

extern "C" __global__ void orb_pyramid(
    const OrbLevel* __restrict__ level_table,
    int n_levels,
    const ResizeTap* __restrict__ taps,
    const int* __restrict__ smooth_taps,      // 7 weights summing to 256
    unsigned char* pyramid,                   // every level, packed; level 0 holds the frame
    unsigned char* __restrict__ smoothed,     // same layout as `pyramid`
    unsigned int* barrier_state) {
    __shared__ OrbLevel levels[ORB_MAX_LEVELS];
    __shared__ int weights[7];
    __shared__ SmoothTiles tiles;
    load_levels(levels, level_table, n_levels);
    if (threadIdx.x < 7) weights[threadIdx.x] = smooth_taps[threadIdx.x];
    __syncthreads();

    const int stride = gridDim.x * blockDim.x;
    const int first_thread = blockIdx.x * blockDim.x + threadIdx.x;
    for (int l = 0; l < n_levels; ++l) {
        const OrbLevel& stored = levels[l];
        const unsigned char* source = pyramid + stored.offset;
        if (l + 1 < n_levels) {
            const OrbLevel& next = levels[l + 1];
            const int n = next.width * next.height;
            for (int i = first_thread; i < n; i += stride) {
                const int y = i / next.width, x = i - y * next.width;
                pyramid[next.offset + i] = (unsigned char)resized_pixel(source, stored.width, taps, next, x, y);
            }
        }
        // Tiles from the last block down: when the next level has fewer pixels than
        // the grid has threads, the first blocks resize and the last ones smooth.
        LevelTile tile;
        for (int item = gridDim.x - 1 - blockIdx.x; level_tile(levels, l, l, item, SMOOTH_TILE, SMOOTH_TILE, tile);
             item += gridDim.x)
            smooth_tile(tiles, source, smoothed + stored.offset, stored.width, stored.height, tile.x0, tile.y0,
                        weights);
        if (l + 1 < n_levels) grid_barrier(barrier_state);
    }
}
