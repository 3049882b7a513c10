// The SIFT scale space of the big octaves (docs/sift-reference.md section 1): each job
// makes several consecutive Gaussian levels of an octave from one load of one source
// level, and, fused, the difference of each with the level before.
//
// Level l of a job is its source blurred once with the chain's kernels from the source
// to level l convolved into one (src/cuda/sift/steps.rs): a separable blur after a
// separable blur is one separable blur whose taps are the two kernels convolved, and
// reflecting the borders at every level or once gives the same sums, so the level is
// the chain's to within rounding, and the levels of a job do not wait on each other.
// The host cuts an octave into two jobs, levels 0..n from the octave's base and n+1,
// n+2 from level n, so an octave is two dependent launches instead of n + 3, and the
// next octave (whose base is level n halved) runs beside the second. Octaves that fill
// the GPU many times over go level by level instead (kernels/sift/pyramid.cu), where the
// convolved kernels' extra taps would cost more than the launches they save.
//
// A block blurs a tile (64x32 for big octaves, down to 16x8 so that a small octave
// still spreads over every SM; the host picks the shape per octave): it loads the tile
// and the halo of the job's widest level into shared memory once (reflected borders);
// then, per level, the vertical pass blurs the th rows of the tw + 2 r columns that the
// horizontal pass reads, the horizontal pass makes the level's outputs, and each thread
// keeps its outputs' previous level in registers for the DoG. A level whose taps are -1
// is the source itself (an octave's base, which only feeds its first DoG).
// The CPU reference blurs level by level, rows first, and sums each output's taps centre
// first; here the order is columns first and taps left to right, one FMA per tap, so the
// planes are the CPU's to within rounding (tests/cuda_sift.rs compares them with a
// tolerance), and the same whatever the tile shape (`add_tap`).
//
// Level 0 of octave 0 reads the u8 frame (upsampled 2x, bilinear, when asked); the
// base of a later octave is every second pixel of level n of the octave before.
// Where the host overlaps a frame's launches (the `_overlapped` copy, sm_90 on), tiles
// wait for and publish rows of tiles (common/tile_flow.cuh).
#include "common/sift_octaves.cuh"
#include "common/blur_jobs.cuh"
#include "common/sift_params.cuh"
#include "common/blur_tiles.cuh"
#include "common/tile_flow.cuh"

// TILE_W x TILE_H, the largest tile (the shared arrays are sized for it), BLUR_THREADS,
// MAX_STEP_LEVELS and the two kernels' radii (STEP_RADIUS, BLUR_MAX_RADIUS) are -D
// defines from src/cuda/abi.rs.

// Horizontal items a thread makes per level, at most (the largest tile's).
#define ITEMS_PER_THREAD (TILE_W * TILE_H / RUN / BLUR_THREADS)

// Shared layout of the kernel for radii up to MAXR. Column p of a row holds the image's
// column x0 - MAXR + p, so output x's centre sits at column MAXR + x, and a quad of
// outputs starts a float4 (MAXR is a multiple of 4). Row ry of the input holds the
// image's row y0 - halo + ry. Rows are `blur_row_stride(MAXR)` floats apart.


// The horizontal items of a tile a thread makes: item i is RUN outputs x .. x + 3 of row y.
struct TileItems {
    int count;       // th * tw / RUN
    int quads_log2;  // log2(tw / RUN)
    __device__ __forceinline__ bool has(int i) const {
        return (int)threadIdx.x + i * BLUR_THREADS < count;
    }
    __device__ __forceinline__ int y(int i) const {
        return ((int)threadIdx.x + i * BLUR_THREADS) >> quads_log2;
    }
    __device__ __forceinline__ int x(int i) const {
        return (((int)threadIdx.x + i * BLUR_THREADS) & ((1 << quads_log2) - 1)) * RUN;
    }
};

// One level of radius r in two passes from the input tile; `emit(i, quad)` takes the
// thread's item i as soon as it is made.
template <int MAXR, int RT, bool EXACT, typename Emit>
__device__ __forceinline__ void blur_level(const TileItems& items, int tw, int th, int halo, int r,
                                           const float* __restrict__ taps, const float* input,
                                           float* cols, Emit& emit) {
    constexpr int S = blur_row_stride(MAXR);
    float w[RT + 1];
    load_weights<RT, EXACT>(w, taps, r);
    // The columns MAXR - r .. MAXR + tw + r that the horizontal pass reads.
    const int first_quad = (MAXR - r) >> 2, quads = ((MAXR + tw + r + 3) >> 2) - first_quad;
    // A tile narrower than TILE_W is an octave with fewer tiles than SMs, whose stage is
    // latency-bound: one row per vertical item spreads its pass over more threads. Wide
    // tiles keep RUN rows: fewer loads per output.
    if (tw < TILE_W)
        vertical_pass<MAXR, RT, EXACT, 1>(first_quad, quads, th, halo - r, r, w, input, cols);
    else
        vertical_pass<MAXR, RT, EXACT, RUN>(first_quad, quads, th, halo - r, r, w, input, cols);
    __syncthreads();
    // Output x's centre is column MAXR + x.
#pragma unroll
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
        if (!items.has(i)) continue;
        emit(i, horizontal_run<RT, MAXR, EXACT>(cols + items.y(i) * S + items.x(i), r, w));
    }
    __syncthreads();  // the next level's vertical pass rewrites `cols`
}

// `blur_level` compiled for the level's exact radius R (0..MAXR): no tap or load is
// predicated on the radius. One copy per radius; the branch is uniform per level.
template <int MAXR, int R, typename Emit>
__device__ __forceinline__ void blur_level_exact(const TileItems& items, int tw, int th, int halo,
                                                 int r, const float* __restrict__ taps,
                                                 const float* input, float* cols, Emit& emit) {
    if (r == R)
        blur_level<MAXR, R, true>(items, tw, th, halo, R, taps, input, cols, emit);
    else if constexpr (R > 0)
        blur_level_exact<MAXR, R - 1>(items, tw, th, halo, r, taps, input, cols, emit);
}

// Stores a quad of a plane at (gx, gy): one float4 where the whole quad is inside and
// 16-byte aligned, else the elements inside.
__device__ __forceinline__ void store_quad(float* plane, int width, int height, int gx, int gy,
                                           bool aligned, const float4& v) {
    if (gy >= height) return;
    float* at = plane + gy * width + gx;
    if (aligned && gx + RUN <= width) {
        *reinterpret_cast<float4*>(at) = v;
        return;
    }
#pragma unroll
    for (int q = 0; q < RUN; ++q)
        if (gx + q < width) at[q] = lane_of(v, q);
}

// One launch: every tile of the `n_jobs` jobs starting at `jobs`, grid-strided, for radii
// up to MAXR. Dynamic shared memory: the input tile with the halo of the launch's widest
// job (`max_halo`, at most MAXR here), then the vertical pass's rows, both at the row
// stride `blur_row_stride(MAXR)`. EXACT: a copy of the passes per radius
// (`blur_level_exact`), else one copy predicated on the radius (the radius-32 kernel:
// 33 copies of it would mostly add compile time). Tiles are found one at a time
// (`job_of_tile`): held across the level loop, `for_each_tile`'s walk made the
// radius-24 kernel spill five times as much (480 bytes of stack against 96, sm_90).
template <int MAXR, int LOAD_ROWS, bool EXACT>
__device__ __forceinline__ void levels_stage(const LevelsJob* __restrict__ jobs, int n_jobs,
                                             int total_tiles, int max_halo,
                                             const unsigned char* __restrict__ frame,
                                             float* pyramid, const float* __restrict__ taps,
                                             unsigned int* rows_done) {
    constexpr int S = blur_row_stride(MAXR);
    float* cols;
    float* shared = tile_arrays<MAXR>(max_halo, cols);
    int stored = -1;  // the counter of the block's stored tile not yet published
    for (int t = blockIdx.x; t < total_tiles; t += gridDim.x) {
        if (t + (int)gridDim.x >= total_tiles) allow_dependents(rows_done);
        int x0, y0, row;
        const LevelsJob& job = jobs[job_of_tile(jobs, n_jobs, t, x0, y0, row)];
        const int tw = job.tile_w, th = job.tile_h, halo = job.halo;
        wait_for_source(rows_done, job, y0, halo);
        load_tile<MAXR, LOAD_ROWS>(job, frame, pyramid, shared, MAXR, job.halo, x0, y0);
        __syncthreads();
        publish_tile(rows_done, stored);  // the block's tile before this one
        stored = tile_row_counter(rows_done, job, row);

        const TileItems items{th * (tw / RUN), __ffs(tw) - 3};
        // Planes whose rows start 16-byte aligned take float4 stores (uniform per job).
        const bool aligned_rows = (job.width & 3) == 0;
        // Each output's previous level, for its DoG.
        float4 previous[ITEMS_PER_THREAD];
#pragma unroll 1
        for (int k = 0; k < job.n_levels; ++k) {
            const int gauss_out = job.gauss_out[k], dog_out = k > 0 ? job.dog_out[k] : -1;
            const bool gauss_aligned = aligned_rows && (gauss_out & 3) == 0;
            const bool dog_aligned = aligned_rows && (dog_out & 3) == 0;
            auto emit = [&](int i, const float4& level) {
                const int gx = x0 + items.x(i), gy = y0 + items.y(i);
                if (gauss_out >= 0)
                    store_quad(pyramid + gauss_out, job.width, job.height, gx, gy, gauss_aligned,
                               level);
                if (dog_out >= 0) {
                    const float4 b = previous[i];
                    store_quad(pyramid + dog_out, job.width, job.height, gx, gy, dog_aligned,
                               make_float4(level.x - b.x, level.y - b.y, level.z - b.z,
                                           level.w - b.w));
                }
                previous[i] = level;
            };
            const int first_tap = job.taps[k];
            if (first_tap < 0) {
                // The source itself: the input at the outputs (row y + halo, column MAXR + x).
#pragma unroll
                for (int i = 0; i < ITEMS_PER_THREAD; ++i)
                    if (items.has(i))
                        emit(i, *reinterpret_cast<const float4*>(
                                    shared + (items.y(i) + halo) * S + MAXR + items.x(i)));
            } else {
                const int r = job.radius[k];
                const float* w = taps + first_tap + r;  // w[0..r]: the kernel is symmetric
                if constexpr (EXACT)
                    blur_level_exact<MAXR, MAXR>(items, tw, th, halo, r, w, shared, cols, emit);
                else
                    blur_level<MAXR, MAXR, false>(items, tw, th, halo, r, w, shared, cols, emit);
            }
        }
        __syncthreads();  // the next tile reuses the input tile
    }
    publish_tile(rows_done, stored);
    wait_for_launch_before(rows_done);
}

// One kernel per window size, so each keeps only the registers its radius needs;
// the host launches, per stage, the smallest that holds the stage's widest halo.
static_assert(STEP_RADIUS % 4 == 0 && BLUR_MAX_RADIUS % 4 == 0, "quads of outputs start a float4");
TILED_BLUR_KERNEL(sift_levels_r24, levels_stage, STEP_RADIUS, 4, 2, true, false)
TILED_BLUR_KERNEL(sift_levels_r32, levels_stage, BLUR_MAX_RADIUS, 1, 2, false, false)
#if TILE_FLOW
TILED_BLUR_KERNEL(sift_levels_r24_overlapped, levels_stage, STEP_RADIUS, 4, 2, true, true)
#endif
