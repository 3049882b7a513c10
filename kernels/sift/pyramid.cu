// The SIFT scale space (docs/sift-reference.md section 1): each launch makes one
// Gaussian level of one or more octaves and, fused, its difference of Gaussians.
//
// A block blurs a tile (64x32 for big octaves, down to 16x8 so that a small octave
// still spreads over every SM; the host picks the shape per octave): it loads the
// tile and its halo of the level below into shared memory (reflected borders), runs
// the horizontal pass over every row of the halo, then the vertical pass, and writes
// the new level and `new - old` with the old value still in shared memory, so the
// DoG never re-reads a Gaussian.
// The pass order and the summation order of the taps are the CPU reference's; the
// module contracts multiply-adds into FMAs (a rounding fewer per tap than the CPU), so
// the planes are the CPU's to within a few ulps.
//
// Level 0 of octave 0 reads the u8 frame (upsampled 2x, bilinear, when asked);
// level 1 of a later octave reads every second pixel of level n of the octave before,
// which is then never stored. Octaves overlap in time (octave o+1 starts once level n
// of o exists), so one launch may carry a job of each of two octaves.
#include "common/sift_octaves.cuh"

// The largest tile: the shared arrays are sized for it.
#define TILE_W 64
#define TILE_H 32
// Row stride of the horizontal pass's output: odd, so that its stores (consecutive
// lanes, consecutive rows) and the vertical pass's loads hit distinct banks, and fixed,
// so that the vertical window's addresses are constant offsets whatever the tile.
#define ROWS_STRIDE (TILE_W + 1)
#define BLUR_THREADS 256

// Where a job's input level comes from.
#define SOURCE_PLANE 0            // a float plane of the output's size
#define SOURCE_PLANE_HALVED 1     // every second pixel of a float plane twice as large
#define SOURCE_FRAME 2            // the u8 frame
#define SOURCE_FRAME_UPSAMPLED 3  // the u8 frame, upsampled 2x bilinearly

// Mirrors `BlurJob` in src/cuda/sift/plan.rs (repr(C), fourteen i32).
struct BlurJob {
    int source;
    int src_offset;              // first float of the source plane (plane sources)
    int src_width, src_height;   // the source plane or frame
    int width, height;           // the level made
    int gauss_out;               // first float of the output level, -1: not stored
    int dog_out;                 // first float of the DoG plane (output - input), -1: none
    int taps;                    // first tap of the kernel in the tap table
    int radius;
    int tiles_x;
    int tile_start;              // first tile of this job among the launch's tiles
    int tile_w, tile_h;          // at most TILE_W x TILE_H, multiples of RUN; tile_w a power of two
};

// One coordinate of OpenCV's INTER_LINEAR 2x upsampling (src/cpu/sift/pyramid.rs
// `upsample_2x`): destination d samples (d + 0.5) / 2 - 0.5, replicated border.
__device__ __forceinline__ void upsample_taps(int d, int n, int& i0, int& i1, float& frac) {
    float f = ((float)d + 0.5f) * 0.5f - 0.5f;
    float fl = floorf(f);
    int i = (int)fl;
    if (i < 0) {
        i0 = 0; i1 = 0; frac = 0.f;
    } else if (i >= n - 1) {
        i0 = n - 1; i1 = n - 1; frac = 0.f;
    } else {
        i0 = i; i1 = i + 1; frac = f - fl;
    }
}

__device__ __forceinline__ float source_value(
    const BlurJob& job, const unsigned char* frame, const float* pyramid, int x, int y) {
    switch (job.source) {
    case SOURCE_PLANE:
        return pyramid[job.src_offset + y * job.width + x];
    case SOURCE_PLANE_HALVED:
        return pyramid[job.src_offset + (2 * y) * job.src_width + 2 * x];
    case SOURCE_FRAME:
        return (float)frame[y * job.src_width + x];
    default: {
        int x0, x1, y0, y1;
        float fx, fy;
        upsample_taps(x, job.src_width, x0, x1, fx);
        upsample_taps(y, job.src_height, y0, y1, fy);
        const unsigned char* r0 = frame + y0 * job.src_width;
        const unsigned char* r1 = frame + y1 * job.src_width;
        float top = (float)r0[x0] * (1.f - fx) + (float)r0[x1] * fx;
        float bottom = (float)r1[x0] * (1.f - fx) + (float)r1[x1] * fx;
        return top * (1.f - fy) + bottom * fy;
    }
    }
}

// The load of a tile away from the borders (most of a big octave's tiles), a warp per
// row and its lanes along the row (coalesced): each thread issues the loads of
// LOAD_ROWS rows before its first store to shared memory, so up to LOAD_ROWS x
// (row span / 32) loads are in flight per thread instead of one (the big octaves'
// stages waited on load latency, not bandwidth). `source` is the tile's first
// element; a row is `pitch` elements below the one above it, a column `step` right.
template <int MAXR, int LOAD_ROWS, typename T>
__device__ __forceinline__ void load_interior(const T* source, int pitch, int step, float* input,
                                              int stride, int span_x, int span_y) {
    constexpr int COLS = (TILE_W + 2 * MAXR + 31) / 32;
    const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    for (int row0 = (threadIdx.x >> 5) * LOAD_ROWS; row0 < span_y; row0 += warps * LOAD_ROWS) {
        float v[LOAD_ROWS][COLS];
#pragma unroll
        for (int i = 0; i < LOAD_ROWS; ++i) {
#pragma unroll
            for (int c = 0; c < COLS; ++c) {
                const int ry = row0 + i, rx = lane + 32 * c;
                if (ry < span_y && rx < span_x) v[i][c] = (float)source[ry * pitch + rx * step];
            }
        }
#pragma unroll
        for (int i = 0; i < LOAD_ROWS; ++i) {
#pragma unroll
            for (int c = 0; c < COLS; ++c) {
                const int ry = row0 + i, rx = lane + 32 * c;
                if (ry < span_y && rx < span_x) input[ry * stride + rx] = v[i][c];
            }
        }
    }
}

#if __CUDA_ARCH__ >= 800
// The same load from a float plane as asynchronous copies straight into shared
// memory (cp.async, sm_80 and later): every element of the tile is in flight at once
// and none passes through a register, so the register-capped kernels do not spill
// for it. Returns once this thread's copies have landed; the caller's barrier
// publishes them to the block.
template <int MAXR>
__device__ __forceinline__ void copy_interior_async(const float* source, int pitch, int step,
                                                    float* input, int stride, int span_x,
                                                    int span_y) {
    constexpr int COLS = (TILE_W + 2 * MAXR + 31) / 32;
    const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    const unsigned shared_input = (unsigned)__cvta_generic_to_shared(input);
    for (int ry = threadIdx.x >> 5; ry < span_y; ry += warps) {
#pragma unroll
        for (int c = 0; c < COLS; ++c) {
            const int rx = lane + 32 * c;
            if (rx < span_x)
                asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(
                                 shared_input + 4u * (unsigned)(ry * stride + rx)),
                             "l"(source + ry * pitch + rx * step)
                             : "memory");
        }
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory");
}
#endif

// The two passes over one tile already in shared memory, for radii up to MAXR: each
// thread keeps a window of RUN + 2 R inputs in registers and sums RUN outputs from it
// (one shared load per input instead of 2 R per output). The window is placed so
// that output q's centre is at index q + MAXR whatever R, so every register index
// is known at compile time; taps past R are predicated off. `blur_tile_exact` calls
// it with r = MAXR known at compile time, where no tap or load is predicated. Each
// output still sums its taps in the CPU's order (centre, then k = 1..R).
#define RUN 4

template <int MAXR>
__device__ __forceinline__ void sum_run(const float* __restrict__ w, int r, const float (&win)[RUN + 2 * MAXR],
                                        float (&out)[RUN]) {
    const float w0 = w[0];
#pragma unroll
    for (int q = 0; q < RUN; ++q) out[q] = w0 * win[q + MAXR];
#pragma unroll
    for (int k = 1; k <= MAXR; ++k) {
        if (k <= r) {
            const float wk = w[k];
#pragma unroll
            for (int q = 0; q < RUN; ++q) out[q] += wk * (win[q + MAXR - k] + win[q + MAXR + k]);
        }
    }
}

template <int MAXR>
__device__ __forceinline__ void blur_tile(
    const BlurJob& job, int r, const float* __restrict__ w, const float* input, int stride,
    float* rows, float* pyramid, int x0, int y0) {
    const int tw = job.tile_w, th = job.tile_h, span_rows = th + 2 * r;
    // Horizontal: item = (run of RUN columns, row); consecutive lanes take
    // consecutive rows (odd stride: no bank conflicts). Each thread steps its (row, run)
    // by blockDim.x items with one division per tile, not one per item.
    const int seg_step = blockDim.x / span_rows, row_step = blockDim.x - seg_step * span_rows;
    int row = threadIdx.x % span_rows, seg = threadIdx.x / span_rows;
    for (; seg < tw / RUN; row += row_step, seg += seg_step) {
        if (row >= span_rows) {
            row -= span_rows;
            ++seg;
            if (seg >= tw / RUN) break;
        }
        const int base = row * stride + seg * RUN - (MAXR - r);
        float win[RUN + 2 * MAXR], out[RUN];
#pragma unroll
        for (int t = 0; t < RUN + 2 * MAXR; ++t)
            if (t >= MAXR - r && t < RUN + MAXR + r) win[t] = input[base + t];
        sum_run<MAXR>(w, r, win, out);
#pragma unroll
        for (int q = 0; q < RUN; ++q) rows[row * ROWS_STRIDE + seg * RUN + q] = out[q];
    }
    __syncthreads();
    // Vertical: item = (column, run of RUN rows); consecutive lanes take consecutive columns.
    // A tile inside the level whose Gaussian and DoG are both stored (uniform per tile).
    const bool both_stored = x0 + tw <= job.width && y0 + th <= job.height &&
                             job.gauss_out >= 0 && job.dog_out >= 0;
    for (int item = threadIdx.x; item < tw * (th / RUN); item += blockDim.x) {
        const int c = item & (tw - 1), block = item >> (__ffs(tw) - 1);  // tw: a power of two
        const int base = (block * RUN - (MAXR - r)) * ROWS_STRIDE + c;
        float win[RUN + 2 * MAXR], out[RUN];
#pragma unroll
        for (int t = 0; t < RUN + 2 * MAXR; ++t)
            if (t >= MAXR - r && t < RUN + MAXR + r) win[t] = rows[base + t * ROWS_STRIDE];
        sum_run<MAXR>(w, r, win, out);
        const int x = x0 + c;
        if (both_stored) {  // most tiles: no test per output
#pragma unroll
            for (int q = 0; q < RUN; ++q) {
                const int y = y0 + block * RUN + q, at = y * job.width + x;
                pyramid[job.gauss_out + at] = out[q];
                pyramid[job.dog_out + at] = out[q] - input[(block * RUN + q + r) * stride + c + r];
            }
            continue;
        }
#pragma unroll
        for (int q = 0; q < RUN; ++q) {
            const int y = y0 + block * RUN + q;
            if (x < job.width && y < job.height) {
                int at = y * job.width + x;
                if (job.gauss_out >= 0) pyramid[job.gauss_out + at] = out[q];
                if (job.dog_out >= 0)
                    pyramid[job.dog_out + at] = out[q] - input[(block * RUN + q + r) * stride + c + r];
            }
        }
    }
}

// The tile blurred by the copy of `blur_tile` made for its exact radius R (0..MAXR):
// the window holds RUN + 2 R inputs and no tap or load is predicated on the radius,
// where the MAXR copy spends issue slots on the predicates and on the predicated-off
// taps of every smaller radius (a radius-5 level in the radius-8 kernel, radius 10
// in the radius-16 one). One copy per radius; the branch is uniform per tile.
template <int R>
__device__ __forceinline__ void blur_tile_exact(
    const BlurJob& job, const float* __restrict__ w, const float* input, int stride,
    float* rows, float* pyramid, int x0, int y0) {
    if (job.radius == R)
        blur_tile<R>(job, R, w, input, stride, rows, pyramid, x0, y0);
    else if constexpr (R > 0)
        blur_tile_exact<R - 1>(job, w, input, stride, rows, pyramid, x0, y0);
}

// One blur stage: every tile of the `n_jobs` jobs starting at `jobs`, grid-strided,
// for radii up to MAXR. Dynamic shared memory: the input tile with its halo for the
// largest radius of the pipeline (`max_radius`), rows padded to an odd stride, and
// the horizontal pass. EXACT: a copy of the passes per radius (`blur_tile_exact`),
// else one copy predicated on the radius (the radius-32 kernel, which only unusual
// sigmas reach: 33 copies of it would mostly add compile time).
template <int MAXR, int LOAD_ROWS, bool EXACT>
__device__ __forceinline__ void blur_dog_stage(
    const BlurJob* __restrict__ jobs, int n_jobs, int total_tiles, int max_radius,
    const unsigned char* __restrict__ frame, float* pyramid, const float* __restrict__ taps) {
    extern __shared__ float shared[];
    float* input = shared;
    float* rows = shared + (TILE_H + 2 * max_radius) * ((TILE_W + 2 * max_radius) | 1);
    for (int t = blockIdx.x; t < total_tiles; t += gridDim.x) {
        int j = 0;
        while (j + 1 < n_jobs && t >= jobs[j + 1].tile_start) ++j;
        const BlurJob job = jobs[j];
        const int r = job.radius, tw = job.tile_w, th = job.tile_h;
        const int span_x = tw + 2 * r, span_y = th + 2 * r, stride = span_x | 1;
        const int tile = t - job.tile_start;
        const int x0 = (tile % job.tiles_x) * tw, y0 = (tile / job.tiles_x) * th;
        const bool inside = x0 >= r && y0 >= r && x0 + tw + r <= job.width &&
                            y0 + th + r <= job.height;
        if (inside && job.source != SOURCE_FRAME_UPSAMPLED) {
            // The source's row pitch and column step, in its elements.
            const bool halved = job.source == SOURCE_PLANE_HALVED;
            const int pitch = halved ? 2 * job.src_width : job.src_width, step = halved ? 2 : 1;
            const int first = (y0 - r) * pitch + (x0 - r) * step;
            if (job.source == SOURCE_FRAME)
                load_interior<MAXR, LOAD_ROWS>(frame + first, pitch, step, input, stride, span_x,
                                               span_y);
            else
#if __CUDA_ARCH__ >= 800
                copy_interior_async<MAXR>(pyramid + job.src_offset + first, pitch, step, input,
                                          stride, span_x, span_y);
#else
                load_interior<MAXR, LOAD_ROWS>(pyramid + job.src_offset + first, pitch, step,
                                               input, stride, span_x, span_y);
#endif
        } else {
            for (int k = threadIdx.x; k < span_x * span_y; k += blockDim.x) {
                int ry = k / span_x, rx = k - ry * span_x;
                int y = y0 + ry - r, x = x0 + rx - r;
                if (!inside) {
                    y = reflect101_repeated(y, job.height);
                    x = reflect101_repeated(x, job.width);
                }
                input[ry * stride + rx] = source_value(job, frame, pyramid, x, y);
            }
        }
        __syncthreads();
        const float* w = taps + job.taps + r;  // w[0..r]: the kernel is symmetric
        if constexpr (EXACT)
            blur_tile_exact<MAXR>(job, w, input, stride, rows, pyramid, x0, y0);
        else
            blur_tile<MAXR>(job, r, w, input, stride, rows, pyramid, x0, y0);
        __syncthreads();  // the next tile reuses the shared arrays
    }
}

// One kernel per window size, so each keeps only the registers its radius needs;
// the host launches, per stage, the smallest that holds the stage's largest radius.
// With a copy of the passes per radius neither needs to spill at the block counts below
// (the radius-16 kernel's predicated version took 122 registers).
#define BLUR_DOG_KERNEL(NAME, MAXR, MIN_BLOCKS, LOAD_ROWS, EXACT)                                \
    extern "C" __global__ void __launch_bounds__(BLUR_THREADS, MIN_BLOCKS) NAME(                  \
        const BlurJob* __restrict__ jobs, int n_jobs, int total_tiles, int max_radius,          \
        const unsigned char* __restrict__ frame, float* pyramid, const float* __restrict__ taps) { \
        blur_dog_stage<MAXR, LOAD_ROWS, EXACT>(jobs, n_jobs, total_tiles, max_radius, frame,     \
                                               pyramid, taps);                                  \
    }
// NVRTC 12.9: sm_90's code of the radius-8 kernel fits 40 registers (6 blocks/SM), and
// the radius-16 kernel 64 (4 blocks/SM) on every arch; sm_72/sm_87 code of the radius-8
// kernel spills at 6 blocks/SM, so there it keeps 4 (64 registers). More warps per SM:
// the big octaves' stages are latency-bound at 4 and 3 blocks/SM (perf/RESULTS.md).
#if __CUDA_ARCH__ >= 900
#define BLUR_R8_MIN_BLOCKS 6
#else
#define BLUR_R8_MIN_BLOCKS 4
#endif
BLUR_DOG_KERNEL(sift_blur_dog_r8, 8, BLUR_R8_MIN_BLOCKS, 2, true)
BLUR_DOG_KERNEL(sift_blur_dog_r16, 16, 4, 2, true)
BLUR_DOG_KERNEL(sift_blur_dog_r32, 32, 1, 2, false)
