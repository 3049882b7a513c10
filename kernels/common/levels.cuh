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

// A tile of a level: work item `item` of the tiles in `rows` (tile rows), numbered
// level by level, row-major within a level. One lookup per block and tile, so no
// per-pixel level search or division.
struct LevelTile {
    int level, x0, y0;
};

// False when `item` lies past the last tile.
__device__ __forceinline__ bool band_tile(const OrbLevel* levels, const OrbRows& rows, int n_levels, int item,
                                          int tile_w, int tile_h, LevelTile& tile) {
    for (int l = 0; l < n_levels; ++l) {
        const int tiles_x = (levels[l].width + tile_w - 1) / tile_w;
        const int tiles = tiles_x * (rows.end[l] - rows.begin[l]);
        if (item < tiles) {
            // A level's tiles (sides up to 65,536 pixels) number under 2^21.
            const int row = small_quotient(item, tiles_x);
            tile.level = l;
            tile.y0 = (rows.begin[l] + row) * tile_h;
            tile.x0 = (item - row * tiles_x) * tile_w;
            return true;
        }
        item -= tiles;
    }
    return false;
}

// Work item `item` of the cells in `rows` (cell rows), numbered level by level: its
// level and its cell within the level. False when `item` lies past the last cell.
__device__ __forceinline__ bool band_cell(const OrbLevel* levels, const OrbRows& rows, int n_levels, int item,
                                          int& level, int& cell) {
    for (int l = 0; l < n_levels; ++l) {
        const int cells = levels[l].n_cols * (rows.end[l] - rows.begin[l]);
        if (item < cells) {
            level = l;
            cell = rows.begin[l] * levels[l].n_cols + item;
            return true;
        }
        item -= cells;
    }
    return false;
}
