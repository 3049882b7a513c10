// Pyramid level geometry shared by the ORB kernels. Mirrors `OrbLevel` in
// src/cuda/orb/plan.rs (repr(C), thirteen i32): change both together.
#pragma once

struct OrbLevel {
    int width, height;
    int offset;        // first pixel of the level in the packed pyramid
    int taps_x;        // first (sx, w1) tap of the level's columns (levels >= 1)
    int taps_y;        // first (sy, w1) tap of the level's rows (levels >= 1)
    int edge;          // detection area: edge <= x < width - edge, same for y
    int n_cols, n_rows;
    int cell_w, cell_h;
    int cell_offset;   // first cell of the level in the per-cell arrays
    int cand_offset;   // first slot of the level in the candidate arrays
    int cand_capacity; // slots of the level: more than strict 3x3 NMS can keep
};

#define ORB_MAX_LEVELS 32

// Copies the level table into shared memory; call from every thread, then __syncthreads().
__device__ __forceinline__ void load_levels(OrbLevel* dst, const OrbLevel* src, int n_levels) {
    for (int i = threadIdx.x; i < n_levels; i += blockDim.x) dst[i] = src[i];
}

// The level that holds flat pixel index `i` of the packed pyramid.
__device__ __forceinline__ int level_of(const OrbLevel* levels, int n_levels, int i) {
    int l = 0;
    while (l + 1 < n_levels && i >= levels[l + 1].offset) ++l;
    return l;
}

// Flat iteration over every level's candidate slots; `slot_level` finds the level of
// slot `i` (slots of level l: cand_offset .. cand_offset + cand_capacity).
__device__ __forceinline__ int slot_level(const OrbLevel* levels, int n_levels, int i) {
    int l = 0;
    while (l + 1 < n_levels && i >= levels[l + 1].cand_offset) ++l;
    return l;
}
