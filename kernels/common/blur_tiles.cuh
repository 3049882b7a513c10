// What the tiled SIFT blur kernels share (kernels/sift/pyramid.cu, a level from the
// level below, and kernels/sift/levels.cu, several levels from one source): reading a
// job's source (the u8 frame, upsampled or not, or a float plane, halved or not),
// loading a tile with its halo into shared memory, and the vertical pass over it.
#pragma once

#include "common/blur_jobs.cuh"

// TILE_W is a -D define from src/cuda/abi.rs.

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
