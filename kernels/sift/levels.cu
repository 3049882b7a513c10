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
#include "common/sift_octaves.cuh"
#include "common/blur_jobs.cuh"
#include "common/sift_params.cuh"
#include "common/blur_tiles.cuh"

// TILE_W x TILE_H, the largest tile (the shared arrays are sized for it), BLUR_THREADS,
// MAX_STEP_LEVELS and the two kernels' radii (STEP_RADIUS, BLUR_MAX_RADIUS) are -D
// defines from src/cuda/abi.rs.

// Outputs a thread makes per level, at most (the largest tile's horizontal items).
#define RUN 4
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
#pragma unroll
    for (int k = 0; k <= RT; ++k) w[k] = EXACT || k <= r ? taps[k] : 0.f;
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
    // Output x + q's tap k reads column MAXR + x + q + k, streamed a quad at a time.
#pragma unroll
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
        if (!items.has(i)) continue;
        const float* row = cols + items.y(i) * S + items.x(i);
        float o[RUN];
        if (!EXACT)
            for (int q = 0; q < RUN; ++q) o[q] = 0.f;
#pragma unroll
        for (int j = (MAXR - RT) / 4; j <= (MAXR + RT + RUN - 1) / 4; ++j) {
            if (!EXACT && (4 * j + 3 < MAXR - r || 4 * j > MAXR + r + RUN - 1)) continue;
            const float4 v = *reinterpret_cast<const float4*>(row + 4 * j);
#pragma unroll
            for (int e = 0; e < 4; ++e)
#pragma unroll
                for (int q = 0; q < RUN; ++q)
                    add_tap<RT, EXACT>(o[q], 4 * j + e - q - MAXR, r, w, lane_of(v, e));
        }
        emit(i, make_float4(o[0], o[1], o[2], o[3]));
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

// Loads the job's source over the tile at (x0, y0) and its halo into `shared` (the
// layout's column 0): quads where the source is an aligned plane, a row per warp with
// several loads in flight inside the image, reflected element by element at its borders.
template <int MAXR, int LOAD_ROWS>
__device__ __forceinline__ void load_tile(const LevelsJob& job, const unsigned char* frame,
                                          const float* pyramid, float* shared, int x0, int y0) {
    constexpr int S = blur_row_stride(MAXR);
    const int h = job.halo, tw = job.tile_w, th = job.tile_h;
    const int span_x = tw + 2 * h, span_y = th + 2 * h;
    float* input = shared + MAXR - h;  // the halo's first column
    const bool inside =
        x0 >= h && y0 >= h && x0 + tw + h <= job.width && y0 + th + h <= job.height;
    const int quads = (tw + MAXR + h + 3) >> 2;
    const bool quad_tile = job.source == SOURCE_PLANE && ((job.src_offset | job.width) & 3) == 0 &&
                           x0 >= MAXR && x0 - MAXR + 4 * quads <= job.width && y0 >= h &&
                           y0 + th + h <= job.height;
    if (quad_tile) {
        load_quads<S>(pyramid + job.src_offset + (y0 - h) * job.width + x0 - MAXR, job.width,
                      shared, quads, span_y);
    } else if (inside && job.source != SOURCE_FRAME_UPSAMPLED) {
        // The source's row pitch and column step, in its elements.
        const bool halved = job.source == SOURCE_PLANE_HALVED;
        const int pitch = halved ? 2 * job.src_width : job.src_width, step = halved ? 2 : 1;
        const int first = (y0 - h) * pitch + (x0 - h) * step;
        if (job.source == SOURCE_FRAME)
            load_interior<MAXR, LOAD_ROWS>(frame + first, pitch, step, input, S, span_x, span_y);
        else
#if __CUDA_ARCH__ >= 800
            copy_interior_async<MAXR>(pyramid + job.src_offset + first, pitch, step, input, S,
                                      span_x, span_y);
#else
            load_interior<MAXR, LOAD_ROWS>(pyramid + job.src_offset + first, pitch, step, input,
                                           S, span_x, span_y);
#endif
    } else {
        for (int k = threadIdx.x; k < span_x * span_y; k += blockDim.x) {
            int ry = k / span_x, rx = k - ry * span_x;
            int y = y0 + ry - h, x = x0 + rx - h;
            if (!inside) {
                y = reflect101_repeated(y, job.height);
                x = reflect101_repeated(x, job.width);
            }
            input[ry * S + rx] = source_value(job, frame, pyramid, x, y);
        }
    }
}

// One launch: every tile of the `n_jobs` jobs starting at `jobs`, grid-strided, for radii
// up to MAXR. Dynamic shared memory: the input tile with the halo of the launch's widest
// job (`max_halo`, at most MAXR here), then the vertical pass's rows, both at the row
// stride `blur_row_stride(MAXR)`. EXACT: a copy of the passes per radius
// (`blur_level_exact`), else one copy predicated on the radius (the radius-32 kernel:
// 33 copies of it would mostly add compile time).
template <int MAXR, int LOAD_ROWS, bool EXACT>
__device__ __forceinline__ void levels_stage(const LevelsJob* __restrict__ jobs, int n_jobs,
                                             int total_tiles, int max_halo,
                                             const unsigned char* __restrict__ frame,
                                             float* pyramid, const float* __restrict__ taps) {
    constexpr int S = blur_row_stride(MAXR);
    extern __shared__ float4 shared4[];  // float4: the passes' 16-byte accesses are aligned
    float* shared = reinterpret_cast<float*>(shared4);
    float* cols = shared + (TILE_H + 2 * min(max_halo, MAXR)) * S;
    for (int t = blockIdx.x; t < total_tiles; t += gridDim.x) {
        int j = 0;
        while (j + 1 < n_jobs && t >= jobs[j + 1].tile_start) ++j;
        const LevelsJob& job = jobs[j];
        const int tw = job.tile_w, th = job.tile_h, halo = job.halo;
        const int tile = t - job.tile_start;
        const int x0 = (tile % job.tiles_x) * tw, y0 = (tile / job.tiles_x) * th;
        load_tile<MAXR, LOAD_ROWS>(job, frame, pyramid, shared, x0, y0);
        __syncthreads();

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
}

// One kernel per window size, so each keeps only the registers its radius needs;
// the host launches, per stage, the smallest that holds the stage's widest halo.
#define LEVELS_KERNEL(NAME, MAXR, MIN_BLOCKS, LOAD_ROWS, EXACT)                          \
    extern "C" __global__ void __launch_bounds__(BLUR_THREADS, MIN_BLOCKS)                \
        NAME(const SiftTiledParams p) {                                                   \
        levels_stage<MAXR, LOAD_ROWS, EXACT>(p.jobs, p.n_jobs, p.total_tiles, p.max_radius, \
                                             p.frame, p.pyramid, p.taps);                 \
    }
static_assert(STEP_RADIUS % 4 == 0 && BLUR_MAX_RADIUS % 4 == 0, "quads of outputs start a float4");
LEVELS_KERNEL(sift_levels_r24, STEP_RADIUS, 4, 2, true)
LEVELS_KERNEL(sift_levels_r32, BLUR_MAX_RADIUS, 1, 2, false)
