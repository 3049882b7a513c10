// What the SIFT blur kernels share (kernels/sift/pyramid.cu and levels.cu, the big
// octaves' levels in tiles, and kernels/sift/small_octaves.cu, the small octaves in one
// block): the job tables, the walk of a block's threads over a 2-D grid of items, and
// the rounding of one tap.
#pragma once

#include "common/abi.cuh"
#include "common/small_quotient.cuh"

// Where a job's input level comes from: SOURCE_PLANE, SOURCE_PLANE_HALVED, SOURCE_FRAME
// or SOURCE_FRAME_UPSAMPLED, -D defines from src/cuda/abi.rs (which says what each is).
// MAX_STEP_LEVELS is a -D define from there too.

// Mirrored in src/cuda/abi.rs: change both together (the ABI_ checks below tell a mismatch).
// Up to MAX_STEP_LEVELS levels of a big octave from one load of one source, over the
// tiles of one launch: several (kernels/sift/levels.cu), or one from the level below
// (kernels/sift/pyramid.cu).
struct LevelsJob {
    int source;
    int src_offset;              // first float of the source plane (plane sources)
    int src_width, src_height;   // the source plane or frame
    int width, height;           // the levels made
    int halo;                    // the widest radius of its levels
    int n_levels;
    int tiles_x;
    int tile_start;              // first tile of this job among the launch's tiles
    int tile_w, tile_h;          // at most TILE_W x TILE_H
    int taps[MAX_STEP_LEVELS];   // first tap of level k's Gaussian; -1: the source itself
    int radius[MAX_STEP_LEVELS];
    int gauss_out[MAX_STEP_LEVELS];  // first float of level k, -1: not stored
    int dog_out[MAX_STEP_LEVELS];    // first float of level k - level k-1 (k >= 1), -1: none
    // Its rows of tiles' counters among the frame's (common/tile_flow.cuh), and those of
    // the job making its source (-1: the source is the frame), with that job's tiles.
    int rows_done;
    int src_rows_done;
    int src_tile_h, src_tiles_x;
};
ABI_SIZE(LevelsJob, 128);
ABI_OFFSET(LevelsJob, source, 0);
ABI_OFFSET(LevelsJob, src_offset, 4);
ABI_OFFSET(LevelsJob, src_width, 8);
ABI_OFFSET(LevelsJob, src_height, 12);
ABI_OFFSET(LevelsJob, width, 16);
ABI_OFFSET(LevelsJob, height, 20);
ABI_OFFSET(LevelsJob, halo, 24);
ABI_OFFSET(LevelsJob, n_levels, 28);
ABI_OFFSET(LevelsJob, tiles_x, 32);
ABI_OFFSET(LevelsJob, tile_start, 36);
ABI_OFFSET(LevelsJob, tile_w, 40);
ABI_OFFSET(LevelsJob, tile_h, 44);
ABI_OFFSET(LevelsJob, taps, 48);
ABI_OFFSET(LevelsJob, radius, 64);
ABI_OFFSET(LevelsJob, gauss_out, 80);
ABI_OFFSET(LevelsJob, dog_out, 96);
ABI_OFFSET(LevelsJob, rows_done, 112);
ABI_OFFSET(LevelsJob, src_rows_done, 116);
ABI_OFFSET(LevelsJob, src_tile_h, 120);
ABI_OFFSET(LevelsJob, src_tiles_x, 124);

// One level of a small octave blurred from the level below (kernels/sift/small_octaves.cu),
// made by the block that makes the octaves' chain (levels 1..n) or their tail (n+1, n+2).
struct BlurJob {
    int source;
    int src_offset;              // first float of the source plane (plane sources)
    int src_width, src_height;   // the source plane or frame
    int width, height;           // the level made
    int gauss_out;               // first float of the output level, -1: not stored
    int dog_out;                 // first float of the DoG plane (output - input), -1: none
    int taps;                    // first tap of the kernel in the tap table
    int radius;
    int publishes;               // chain block: 1 when the tail block reads this level
    int wait_for;                // tail block: chain levels published before its source
};
ABI_SIZE(BlurJob, 48);
ABI_OFFSET(BlurJob, source, 0);
ABI_OFFSET(BlurJob, src_offset, 4);
ABI_OFFSET(BlurJob, src_width, 8);
ABI_OFFSET(BlurJob, src_height, 12);
ABI_OFFSET(BlurJob, width, 16);
ABI_OFFSET(BlurJob, height, 20);
ABI_OFFSET(BlurJob, gauss_out, 24);
ABI_OFFSET(BlurJob, dog_out, 28);
ABI_OFFSET(BlurJob, taps, 32);
ABI_OFFSET(BlurJob, radius, 36);
ABI_OFFSET(BlurJob, publishes, 40);
ABI_OFFSET(BlurJob, wait_for, 44);

// Calls body(minor, major) for every item of a minor_count x major_count grid, the
// block's threads blockDim.x items apart, consecutive threads on consecutive minors,
// with two small quotients per call instead of a division per item.
template <typename Body>
__device__ __forceinline__ void for_each_item(int minor_count, int major_count, Body body) {
    const int major_step = small_quotient(blockDim.x, minor_count),
              minor_step = blockDim.x - major_step * minor_count;
    int major = small_quotient(threadIdx.x, minor_count), minor = threadIdx.x - major * minor_count;
    for (; major < major_count; minor += minor_step, major += major_step) {
        if (minor >= minor_count) {
            minor -= minor_count;
            if (++major >= major_count) break;
        }
        body(minor, major);
    }
}

// acc (the output whose tap k this input is) += w[|k|] * v; the first tap of an exact
// window (k = -RT) assigns, so no accumulator is zeroed. Explicit roundings: left to
// contraction, `w0 v0 + w1 v1` may fuse either product, and did differently in the
// vertical pass's two item shapes, so a pixel's value depended on its tile's shape
// (all SMs vs `--sm-limit 8`); every tile now rounds each tap the same way.
template <int RT, bool EXACT>
__device__ __forceinline__ void add_tap(float& acc, int k, int r, const float (&w)[RT + 1], float v) {
    const int a = k < 0 ? -k : k;
    if (a > RT) return;
    if (EXACT && k == -RT)
        acc = __fmul_rn(w[a], v);
    else if (EXACT || a <= r)
        acc = __fmaf_rn(w[a], v, acc);
}

