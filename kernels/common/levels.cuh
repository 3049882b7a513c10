// Pyramid level geometry shared by the ORB kernels. `OrbLevel` is mirrored in
// src/cuda/abi.rs: change both together (the ABI_ checks below tell a mismatch).
// ORB_MAX_LEVELS comes from the host as a -D define (src/cuda/abi.rs).
#pragma once

#include "common/abi.cuh"
#include "common/read_only.cuh"
#include "common/small_quotient.cuh"

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
    int corner_words;  // first word of the level's corner bitmap (corner_row_words per row)
};
ABI_SIZE(OrbLevel, 56);
ABI_OFFSET(OrbLevel, width, 0);
ABI_OFFSET(OrbLevel, height, 4);
ABI_OFFSET(OrbLevel, offset, 8);
ABI_OFFSET(OrbLevel, taps_x, 12);
ABI_OFFSET(OrbLevel, taps_y, 16);
ABI_OFFSET(OrbLevel, edge, 20);
ABI_OFFSET(OrbLevel, n_cols, 24);
ABI_OFFSET(OrbLevel, n_rows, 28);
ABI_OFFSET(OrbLevel, cell_w, 32);
ABI_OFFSET(OrbLevel, cell_h, 36);
ABI_OFFSET(OrbLevel, cell_offset, 40);
ABI_OFFSET(OrbLevel, cand_offset, 44);
ABI_OFFSET(OrbLevel, cand_capacity, 48);
ABI_OFFSET(OrbLevel, corner_words, 52);

// Words of a row of a level's corner bitmap: bit b of word w is pixel 32w + b.
__device__ __forceinline__ int corner_row_words(int width) { return (width + 31) / 32; }

// Copies the level table into shared memory; call from every thread, then __syncthreads().
__device__ __forceinline__ void load_levels(OrbLevel* dst, const OrbLevel* src, int n_levels) {
    for (int i = threadIdx.x; i < n_levels; i += blockDim.x) dst[i] = ldg_words(src + i);
}

// The rows of each level one launch covers, begin[l] .. end[l] - 1 (none when equal),
// in the kernel's own unit: pixel rows (orb_pyramid), tile rows (orb_fast_score) or
// cell rows (orb_cell_candidates). The host cuts a frame into bands of rows this way,
// each launch covering what the rows uploaded so far make computable
// (src/cuda/orb/bands.rs).
struct OrbRows {
    int begin[ORB_MAX_LEVELS];
    int end[ORB_MAX_LEVELS];
};
ABI_SIZE(OrbRows, 256);
ABI_OFFSET(OrbRows, begin, 0);
ABI_OFFSET(OrbRows, end, 128);

// Work items are numbered level by level over a band's rows. `first[l]` is level l's
// first item and `first[n_levels]` one past the last: built once per block, so that a
// work item finds its level by a few shared-memory compares. Recomputing every lower
// level's count for each item was 5 % of orb_fast_score's instructions on levels 1..
// of a 1080p frame (ncu, 8 SMs); the table took 1.5 % of them off in all.
// `items_of(l)` counts level l's items. Call from every thread, then __syncthreads().
template <class ItemsOf>
__device__ __forceinline__ void band_firsts(int* first, int n_levels, ItemsOf items_of) {
    if (threadIdx.x != 0 || threadIdx.y != 0) return;
    first[0] = 0;
    for (int l = 0; l < n_levels; ++l) first[l + 1] = first[l] + items_of(l);
}

// The level of `item` by band_firsts' table, or -1 past the last item.
__device__ __forceinline__ int band_level(const int* first, int n_levels, int item) {
    if (item >= first[n_levels]) return -1;
    int l = 0;
    while (item >= first[l + 1]) ++l;
    return l;
}

// Tiles across a level.
__device__ __forceinline__ int tiles_across(const OrbLevel& level, int tile_w) {
    return (level.width + tile_w - 1) / tile_w;
}

// band_firsts for tiles of `tile_w` pixels across, rows as tile rows.
__device__ __forceinline__ void band_tile_firsts(int* first, const OrbLevel* levels, const OrbRows& rows,
                                                 int n_levels, int tile_w) {
    band_firsts(first, n_levels,
                [&](int l) { return tiles_across(levels[l], tile_w) * (rows.end[l] - rows.begin[l]); });
}

// band_firsts for grid cells, rows as cell rows.
__device__ __forceinline__ void band_cell_firsts(int* first, const OrbLevel* levels, const OrbRows& rows,
                                                 int n_levels) {
    band_firsts(first, n_levels, [&](int l) { return levels[l].n_cols * (rows.end[l] - rows.begin[l]); });
}

// A tile of a level: work item `item` of the tiles in `rows` (tile rows), row-major
// within a level.
struct LevelTile {
    int level, x0, y0;
};

// False when `item` lies past the last tile.
__device__ __forceinline__ bool band_tile(const OrbLevel* levels, const OrbRows& rows, const int* first,
                                          int n_levels, int item, int tile_w, int tile_h, LevelTile& tile) {
    const int l = band_level(first, n_levels, item);
    if (l < 0) return false;
    const int tiles_x = tiles_across(levels[l], tile_w), i = item - first[l];
    // A level's tiles (sides up to 65,536 pixels) number under 2^21.
    const int row = small_quotient(i, tiles_x);
    tile.level = l;
    tile.y0 = (rows.begin[l] + row) * tile_h;
    tile.x0 = (i - row * tiles_x) * tile_w;
    return true;
}

// Work item `item` of the cells in `rows` (cell rows): its level and its cell within
// the level. False when `item` lies past the last cell.
__device__ __forceinline__ bool band_cell(const OrbLevel* levels, const OrbRows& rows, const int* first,
                                          int n_levels, int item, int& level, int& cell) {
    level = band_level(first, n_levels, item);
    if (level < 0) return false;
    cell = rows.begin[level] * levels[level].n_cols + item - first[level];
    return true;
}
