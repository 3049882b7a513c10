// What the tiled SIFT blur kernels share (kernels/sift/pyramid.cu, a level from the
// level below, and kernels/sift/levels.cu, several levels from one source): reading a
// job's source (the u8 frame, upsampled or not, or a float plane, halved or not),
// loading a tile with its halo into shared memory, and the vertical and horizontal
// passes over it.
#pragma once

#include "common/blur_jobs.cuh"
#include "common/sift_octaves.cuh"
#include "common/sift_params.cuh"

// TILE_W is a -D define from src/cuda/abi.rs.

// Outputs of a horizontal item: consecutive outputs of a row, one float4.
#define RUN 4

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

// The upsampled value from source rows `top` and `bottom`, columns x0 and x1, at
// fractions fx across and fy down.
__device__ __forceinline__ float upsample_blend(const unsigned char* top, const unsigned char* bottom, int x0,
                                                int x1, float fx, float fy) {
    const float upper = (float)top[x0] * (1.f - fx) + (float)top[x1] * fx;
    const float lower = (float)bottom[x0] * (1.f - fx) + (float)bottom[x1] * fx;
    return upper * (1.f - fy) + lower * fy;
}

// The source of a job (a tiled level or a step: `source`, `src_offset`, `src_width`,
// `src_height`, `width`) at (x, y) of the level made.
template <typename Job>
__device__ __forceinline__ float source_value(
    const Job& job, const unsigned char* frame, const float* pyramid, int x, int y) {
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
        return upsample_blend(frame + y0 * job.src_width, frame + y1 * job.src_width, x0, x1, fx, fy);
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

// The load of a tile away from the borders from the u8 frame, when its rows start
// 4-byte aligned: a word (4 pixels) per item instead of a byte, the tile's columns
// `x_first .. x_first + span_x - 1` of rows `y_first ..`, each pixel stored as a float
// at its column of `input`.
__device__ __forceinline__ void load_frame_words(const unsigned char* frame, int width,
                                                 int x_first, int y_first, float* input,
                                                 int stride, int span_x, int span_y) {
    const unsigned* words = reinterpret_cast<const unsigned*>(frame);
    const int first_word = x_first >> 2, row_words = width >> 2;
    const int count = ((x_first + span_x + 3) >> 2) - first_word;
    for_each_item(count, span_y, [&](int w, int ry) {
        const unsigned v = __ldg(words + (y_first + ry) * row_words + first_word + w);
        const int column = 4 * (first_word + w) - x_first;  // of the word's first pixel
#pragma unroll
        for (int b = 0; b < 4; ++b) {
            const int c = column + b;
            if (c >= 0 && c < span_x) input[ry * stride + c] = (float)((v >> (8 * b)) & 0xffu);
        }
    });
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

// Shared row stride, in floats, of the kernel for radii up to MAXR: the widest tile, both
// halos and the shift, a multiple of 4 (float4 rows). Mirrors `blur_row_stride` in
// src/cuda/sift/plan.rs.
__host__ __device__ constexpr int blur_row_stride(int maxr) { return TILE_W + 2 * maxr + 4; }

__device__ __forceinline__ float lane_of(const float4& v, int e) {
    return e == 0 ? v.x : e == 1 ? v.y : e == 2 ? v.z : v.w;
}

// A float plane's tile as whole quads of columns: where the layout puts shared column p
// at image column x0 - C + p with x0 - C a multiple of 4, the quads of a plane whose rows
// start 16-byte aligned land on aligned shared quads: a quarter of the copies (and of
// their address arithmetic) of `copy_interior_async`. `source`: the plane at the tile's first
// quad, `pitch` floats a row. Returns once this thread's copies have landed; the caller's
// barrier publishes them to the block.
template <int S>
__device__ __forceinline__ void load_quads(const float* source, int pitch, float* input, int quads,
                                           int rows) {
#if __CUDA_ARCH__ >= 800
    const unsigned shared_input = (unsigned)__cvta_generic_to_shared(input);
    for_each_item(quads, rows, [&](int quad, int row) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(
                         shared_input + 16u * (unsigned)(row * (S / 4) + quad)),
                     "l"(source + row * pitch + 4 * quad)
                     : "memory");
    });
    asm volatile("cp.async.wait_all;\n" ::: "memory");
#else
    for_each_item(quads, rows, [&](int quad, int row) {
        reinterpret_cast<float4*>(input)[row * (S / 4) + quad] =
            __ldg(reinterpret_cast<const float4*>(source + row * pitch) + quad);
    });
#endif
}


// The 2x bilinear upsampling of the u8 frame (`source_value`'s SOURCE_FRAME_UPSAMPLED)
// over a span away from its first and last pixel and row, from (x_first, y_first) of
// the level made: there output X reads frame columns (X - 1) / 2 and the next with
// weights 1/4 and 3/4 in the order of X's parity, and no tap is clamped, so no
// coordinate needs `upsample_taps`' floor and border branches. Every product and sum
// of u8 values with these weights is exact in floats, so the values are the general
// path's (and the CPU's) bit for bit, whichever path a tile takes. A warp per row,
// a lane's columns loaded before any is stored.
template <int MAXR>
__device__ __noinline__ void load_upsampled_interior(const unsigned char* frame, int frame_width,
                                                        int x_first, int y_first, float* input,
                                                        int span_x, int span_y) {
    constexpr int S = blur_row_stride(MAXR);
    constexpr int COLS = (TILE_W + 2 * MAXR + 31) / 32;
    const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    for (int ry = threadIdx.x >> 5; ry < span_y; ry += warps) {
        const int y = y_first + ry;
        const float fy = (y & 1) ? 0.25f : 0.75f;
        const unsigned char* top = frame + ((y - 1) >> 1) * frame_width;
        const unsigned char* bottom = top + frame_width;
        float v[COLS];
#pragma unroll
        for (int c = 0; c < COLS; ++c) {
            const int rx = lane + 32 * c;
            if (rx < span_x) {
                const int x = x_first + rx, sx = (x - 1) >> 1;
                v[c] = upsample_blend(top, bottom, sx, sx + 1, (x & 1) ? 0.25f : 0.75f, fy);
            }
        }
#pragma unroll
        for (int c = 0; c < COLS; ++c) {
            const int rx = lane + 32 * c;
            if (rx < span_x) input[ry * S + rx] = v[c];
        }
    }
}

// Loads the job's source over its tile at (x0, y0) and a halo of `halo` into `shared`,
// rows `blur_row_stride(MAXR)` floats apart, the tile's first column at column `centre`:
// quads where the source is an aligned plane, a row per warp with several loads in
// flight inside the image (the upsampled frame with fixed weights), reflected element
// by element at its borders. `Job`: a `LevelsJob` or a `TiledLevel`.
template <int MAXR, int LOAD_ROWS, typename Job>
__device__ __forceinline__ void load_tile(const Job& job, const unsigned char* frame,
                                          const float* pyramid, float* shared, int centre,
                                          int halo, int x0, int y0) {
    constexpr int S = blur_row_stride(MAXR);
    const int h = halo, tw = job.tile_w, th = job.tile_h;
    const int span_x = tw + 2 * h, span_y = th + 2 * h;
    float* input = shared + centre - h;  // the halo's first column
    const bool inside =
        x0 >= h && y0 >= h && x0 + tw + h <= job.width && y0 + th + h <= job.height;
    const int quads = (tw + centre + h + 3) >> 2;
    const bool quad_tile = job.source == SOURCE_PLANE && ((job.src_offset | job.width) & 3) == 0 &&
                           x0 >= centre && x0 - centre + 4 * quads <= job.width && y0 >= h &&
                           y0 + th + h <= job.height;
    if (quad_tile) {
        load_quads<S>(pyramid + job.src_offset + (y0 - h) * job.width + x0 - centre, job.width,
                      shared, quads, span_y);
    } else if (inside && job.source != SOURCE_FRAME_UPSAMPLED) {
        // The source's row pitch and column step, in its elements.
        const bool halved = job.source == SOURCE_PLANE_HALVED;
        const int pitch = halved ? 2 * job.src_width : job.src_width, step = halved ? 2 : 1;
        const int first = (y0 - h) * pitch + (x0 - h) * step;
        if (job.source == SOURCE_FRAME && ((job.src_width | (int)(size_t)frame) & 3) == 0)
            load_frame_words(frame, job.src_width, x0 - h, y0 - h, input, S, span_x, span_y);
        else if (job.source == SOURCE_FRAME)
            load_interior<MAXR, LOAD_ROWS>(frame + first, pitch, step, input, S, span_x, span_y);
        else
#if __CUDA_ARCH__ >= 800
            copy_interior_async<MAXR>(pyramid + job.src_offset + first, pitch, step, input, S,
                                      span_x, span_y);
#else
            load_interior<MAXR, LOAD_ROWS>(pyramid + job.src_offset + first, pitch, step, input,
                                           S, span_x, span_y);
#endif
    } else if (job.source == SOURCE_FRAME_UPSAMPLED && x0 > h && y0 > h && x0 + tw + h < job.width &&
               y0 + th + h < job.height) {
        load_upsampled_interior<MAXR>(frame, job.src_width, x0 - h, y0 - h, input, span_x, span_y);
    } else {
        // Tiles at the borders, and the upsampled frame's border tiles: a warp per row,
        // each row's reflection computed once, and a lane's columns loaded before any is
        // stored.
        constexpr int COLS = (TILE_W + 2 * MAXR + 31) / 32;
        const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
        for (int ry = threadIdx.x >> 5; ry < span_y; ry += warps) {
            const int y = inside ? y0 + ry - h : reflect101_repeated(y0 + ry - h, job.height);
            float v[COLS];
#pragma unroll
            for (int c = 0; c < COLS; ++c) {
                const int rx = lane + 32 * c;
                if (rx < span_x) {
                    const int x =
                        inside ? x0 + rx - h : reflect101_repeated(x0 + rx - h, job.width);
                    v[c] = source_value(job, frame, pyramid, x, y);
                }
            }
#pragma unroll
            for (int c = 0; c < COLS; ++c) {
                const int rx = lane + 32 * c;
                if (rx < span_x) input[ry * S + rx] = v[c];
            }
        }
    }
}

// The vertical pass of a tile in shared memory (rows `blur_row_stride(MAXR)` floats
// apart) for a Gaussian of radius r (RT = r, or MAXR with predicated taps): item =
// (quad of columns, run of ROWS rows) over `quads` quads of columns from `first_quad`
// of the layout, `rows` output rows. `first_row`: the input row of output row 0's first
// tap, so output row y sums input rows y + first_row .. y + first_row + 2 r; input row t
// of an item's stream is row run ROWS + first_row + r - RT + t, tap k = t - q - RT for
// output row run ROWS + q.
template <int MAXR, int RT, bool EXACT, int ROWS>
__device__ __forceinline__ void vertical_pass(int first_quad, int quads, int rows, int first_row,
                                              int r, const float (&w)[RT + 1],
                                              const float* input, float* cols) {
    constexpr int S = blur_row_stride(MAXR);
    for_each_item(quads, rows / ROWS, [&](int quad_index, int run) {
        const int quad = first_quad + quad_index;
        const float* column = input + (run * ROWS + first_row + r - RT) * S + 4 * quad;
        float4 acc[ROWS];
        if (!EXACT)
            for (int q = 0; q < ROWS; ++q) acc[q] = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int t = 0; t < ROWS + 2 * RT; ++t) {
            if (!EXACT && (t < RT - r || t >= ROWS + RT + r)) continue;
            const float4 v = *reinterpret_cast<const float4*>(column + t * S);
#pragma unroll
            for (int q = 0; q < ROWS; ++q) {
                add_tap<RT, EXACT>(acc[q].x, t - q - RT, r, w, v.x);
                add_tap<RT, EXACT>(acc[q].y, t - q - RT, r, w, v.y);
                add_tap<RT, EXACT>(acc[q].z, t - q - RT, r, w, v.z);
                add_tap<RT, EXACT>(acc[q].w, t - q - RT, r, w, v.w);
            }
        }
#pragma unroll
        for (int q = 0; q < ROWS; ++q)
            *reinterpret_cast<float4*>(cols + (run * ROWS + q) * S + 4 * quad) = acc[q];
    });
}

// The weights of a Gaussian of radius r for a pass compiled for RT taps a side: the taps
// past r are 0 unless the pass is EXACT (RT = r).
template <int RT, bool EXACT>
__device__ __forceinline__ void load_weights(float (&w)[RT + 1], const float* __restrict__ taps,
                                             int r) {
#pragma unroll
    for (int k = 0; k <= RT; ++k) w[k] = EXACT || k <= r ? taps[k] : 0.f;
}

// The horizontal pass of one item (RUN outputs of a row): output q's tap k reads
// `row[C + q + k]`, C the centre of output 0 in the layout (a multiple of 4), streamed a
// quad at a time.
template <int RT, int C, bool EXACT>
__device__ __forceinline__ float4 horizontal_run(const float* row, int r,
                                                 const float (&w)[RT + 1]) {
    float o[RUN];
    if (!EXACT)
        for (int q = 0; q < RUN; ++q) o[q] = 0.f;
#pragma unroll
    for (int j = (C - RT) / 4; j <= (C + RT + RUN - 1) / 4; ++j) {
        if (!EXACT && (4 * j + 3 < C - r || 4 * j > C + r + RUN - 1)) continue;
        const float4 v = *reinterpret_cast<const float4*>(row + 4 * j);
#pragma unroll
        for (int e = 0; e < 4; ++e)
#pragma unroll
            for (int q = 0; q < RUN; ++q)
                add_tap<RT, EXACT>(o[q], 4 * j + e - q - C, r, w, lane_of(v, e));
    }
    return make_float4(o[0], o[1], o[2], o[3]);
}

// The dynamic shared memory of a tiled kernel for radii up to MAXR, rows
// `blur_row_stride(MAXR)` floats apart: the input tile with the halo of the launch's
// widest job (`max_halo`), then the vertical pass's rows (`cols`).
template <int MAXR>
__device__ __forceinline__ float* tile_arrays(int max_halo, float*& cols) {
    extern __shared__ float4 shared4[];  // float4: the passes' 16-byte accesses are aligned
    float* shared = reinterpret_cast<float*>(shared4);
    cols = shared + (TILE_H + 2 * min(max_halo, MAXR)) * blur_row_stride(MAXR);
    return shared;
}

// The job holding the launch's tile t: jobs are in tile order, each from its `tile_start`.
__device__ __forceinline__ int job_index_of_tile(const LevelsJob* __restrict__ jobs, int n_jobs,
                                                 int t) {
    int j = 0;
    while (j + 1 < n_jobs && t >= jobs[j + 1].tile_start) ++j;
    return j;
}

// The job of the launch's tile t, the tile's origin (x0, y0) in that job's level and its
// row of tiles: one tile at a time, for a kernel that cannot hold `for_each_tile`'s walk
// in registers.
__device__ __forceinline__ int job_of_tile(const LevelsJob* __restrict__ jobs, int n_jobs, int t,
                                           int& x0, int& y0, int& row) {
    const int j = job_index_of_tile(jobs, n_jobs, t);
    const LevelsJob& job = jobs[j];
    const int tile = t - job.tile_start;  // under 2^21: a level has fewer tiles than pixels
    row = small_quotient(tile, job.tiles_x);
    x0 = (tile - row * job.tiles_x) * job.tile_w;
    y0 = row * job.tile_h;
    return j;
}

// Calls tile(job, x0, y0, row, last) for each tile of the launch this block takes: tiles
// t = blockIdx.x, then every gridDim.x-th, of the jobs in tile order (each from its
// `tile_start`); (x0, y0) is the tile's origin in its job's level, `row` its row of tiles,
// `last` whether it is the block's last tile. A block steps through its tiles of one job,
// so it finds the job and divides by its tile grid once per job, not once per tile as
// `job_of_tile` does: on 8 SMs a block takes about 21 tiles of a 1080p level, and
// 1080p frames there took 0.7 % less time, 4K frames 1.5 % (H200).
template <typename Tile>
__device__ __forceinline__ void for_each_tile(const LevelsJob* __restrict__ jobs, int n_jobs,
                                              int total_tiles, Tile tile) {
    const int stride = (int)gridDim.x;
    for (int t = blockIdx.x; t < total_tiles;) {
        const int j = job_index_of_tile(jobs, n_jobs, t);
        const LevelsJob& job = jobs[j];
        const int end = j + 1 < n_jobs ? jobs[j + 1].tile_start : total_tiles;
        const int tiles_x = job.tiles_x, first = t - job.tile_start;  // under 2^21
        int row = small_quotient(first, tiles_x), column = first - row * tiles_x;
        const int row_step = small_quotient(stride, tiles_x), column_step = stride - row_step * tiles_x;
        for (; t < end; t += stride) {
            tile(job, column * job.tile_w, row * job.tile_h, row, t + stride >= total_tiles);
            row += row_step;
            column += column_step;
            if (column >= tiles_x) {
                column -= tiles_x;
                ++row;
            }
        }
    }
}

// A tiled blur kernel: STAGE, which blurs every tile of a launch's jobs grid-strided,
// compiled for radii up to MAXR, with MIN_BLOCKS blocks per SM (the registers it may use).
// OVERLAPPED: the copy whose launches overlap the launches before it
// (common/tile_flow.cuh, sm_90 and later); the other copy is given no counters, so none
// of that is compiled into it.
#define TILED_BLUR_KERNEL(NAME, STAGE, MAXR, MIN_BLOCKS, LOAD_ROWS, EXACT, OVERLAPPED)       \
    extern "C" __global__ void __launch_bounds__(BLUR_THREADS, MIN_BLOCKS)                   \
        NAME(const SiftTiledParams p) {                                                      \
        STAGE<MAXR, LOAD_ROWS, EXACT>(p.jobs, p.n_jobs, p.total_tiles, p.max_radius, p.frame, \
                                      p.pyramid, p.taps, OVERLAPPED ? p.rows_done : nullptr); \
    }
