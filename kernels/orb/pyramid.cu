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
    int x0, int y0, const int* taps) {
    for (int k = threadIdx.x; k < SMOOTH_SPAN * SMOOTH_SPAN; k += blockDim.x) {
        int r = k / SMOOTH_SPAN, c = k - r * SMOOTH_SPAN;
        int y = reflect101(y0 + r - SMOOTH_HALO, height), x = reflect101(x0 + c - SMOOTH_HALO, width);
        // __ldcg: other blocks wrote the pyramid in this launch (see resize_pixel).
        t.pixels[r][c] = __ldcg(level + y * width + x);
    }
    __syncthreads();
    for (int k = threadIdx.x; k < SMOOTH_SPAN * SMOOTH_TILE; k += blockDim.x) {
        int r = k / SMOOTH_TILE, c = k - r * SMOOTH_TILE;
        unsigned int h = 0;
#pragma unroll
        for (int i = 0; i < 7; ++i) h += (unsigned int)taps[i] * t.pixels[r][c + i];
        t.rows[r][c] = h;
    }
    __syncthreads();
    for (int k = threadIdx.x; k < SMOOTH_TILE * SMOOTH_TILE; k += blockDim.x) {
        int r = k / SMOOTH_TILE, c = k - r * SMOOTH_TILE;
        if (y0 + r < height && x0 + c < width) {
            unsigned int v = 0;
#pragma unroll
            for (int j = 0; j < 7; ++j) v += (unsigned int)taps[j] * t.rows[r + j][c];
            out[(y0 + r) * width + x0 + c] = (unsigned char)((v + (1u << 15)) >> 16);
        }
    }
    __syncthreads();  // the next tile reuses the shared arrays
}

extern "C" __global__ void orb_pyramid(
    const unsigned char* __restrict__ frame,  // level 0, row-major, width = levels[0].width
    const OrbLevel* __restrict__ level_table,
    int n_levels,
    const ResizeTap* __restrict__ taps,
    const int* __restrict__ smooth_taps,      // 7 weights summing to 256
    unsigned char* pyramid,                   // every level, packed
    unsigned char* __restrict__ smoothed,     // same layout as `pyramid`
    unsigned int* barrier_state) {
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

    // Tiles of every level, numbered level by level, shared out over the blocks.
    __shared__ SmoothTiles tiles;
    int level_first_tile = 0, l = 0;
    for (int tile = blockIdx.x;; tile += gridDim.x) {
        int tiles_x = 0, tiles_y = 0;
        for (; l < n_levels; ++l) {
            tiles_x = (levels[l].width + SMOOTH_TILE - 1) / SMOOTH_TILE;
            tiles_y = (levels[l].height + SMOOTH_TILE - 1) / SMOOTH_TILE;
            if (tile < level_first_tile + tiles_x * tiles_y) break;
            level_first_tile += tiles_x * tiles_y;
        }
        if (l == n_levels) break;
        const OrbLevel lv = levels[l];
        const int local = tile - level_first_tile;
        const int ty = local / tiles_x, tx = local - ty * tiles_x;
        smooth_tile(tiles, pyramid + lv.offset, smoothed + lv.offset, lv.width, lv.height,
                    tx * SMOOTH_TILE, ty * SMOOTH_TILE, weights);
    }
}
