// oFAST on every pyramid level in one launch (2D tiles in shared memory), then per
// grid cell its threshold, 3x3 non-maximum suppression and compaction of the
// survivors in one launch (docs/orb-reference.md sections 2-4).
#include "common/levels.cuh"
#include "common/warp_append.cuh"

#define ARC_WORDS 2048  // 65,536 bits: ARC[m] = m has 9+ circularly contiguous set bits

// One bit per byte lane of a __vcmp*4 result (0x00 or 0xff per byte): byte i -> bit i.
__device__ __forceinline__ unsigned int byte_mask_bits(unsigned int lanes) {
    return (((lanes & 0x80808080u) >> 7) * 0x10204080u) >> 28;
}

__device__ __forceinline__ bool arc_lookup(const unsigned int* arc, unsigned int mask) {
    return (__popc(mask) >= 9) && ((arc[mask >> 5] >> (mask & 31u)) & 1u);
}

// Offset of ring pixel i (OpenCV's offsets16 order) in a tile of row pitch `pitch`;
// constant after unrolling, so the offsets fold into the loads.
template <int pitch>
__device__ __forceinline__ int ring_offset(int i) {
    constexpr int dx[16] = {0, 1, 2, 3, 3, 3, 2, 1, 0, -1, -2, -3, -3, -3, -2, -1};
    constexpr int dy[16] = {3, 3, 2, 1, 0, -1, -2, -3, -3, -3, -2, -1, 0, 1, 2, 3};
    return dy[i] * pitch + dx[i];
}

// The ring pixels of the pixel at `p`, packed four per word: byte k of word w = ring
// pixel 4w + k (the masks' input).
template <int pitch>
__device__ __forceinline__ void load_ring(const unsigned char* p, unsigned int* ring) {
#pragma unroll
    for (int w = 0; w < 4; ++w) {
        unsigned int word = 0;
#pragma unroll
        for (int k = 0; k < 4; ++k) word |= (unsigned int)p[ring_offset<pitch>(4 * w + k)] << (8 * k);
        ring[w] = word;
    }
}

// Largest t at which the pixel at `p` is a corner: over the 16 arcs A of 9 ring
// pixels, max(min_A(r - c), min_A(c - r)) - 1 = max(max_A min_A r - c, c - min_A max_A r) - 1.
// One 32-bit value per ring pixel and three-input min/max (__vimin3_s32 and
// __vimax3_s32, single DPX instructions on sm_90): arcs of 3, then arcs of 9 as three
// arcs of 3. Packed-byte min/max (__vminu4) has no instruction of its own there.
template <int pitch>
__device__ __forceinline__ int fast_score(const unsigned char* p) {
    int r[16], low3[16], high3[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) r[i] = p[ring_offset<pitch>(i)];
#pragma unroll
    for (int i = 0; i < 16; ++i) {
        low3[i] = __vimin3_s32(r[i], r[(i + 1) & 15], r[(i + 2) & 15]);
        high3[i] = __vimax3_s32(r[i], r[(i + 1) & 15], r[(i + 2) & 15]);
    }
    int best_low = 0, best_high = 255;  // max over arcs of their minimum, min of their maximum
#pragma unroll
    for (int i = 0; i < 16; i += 2) {
        best_low = __vimax3_s32(best_low, __vimin3_s32(low3[i], low3[(i + 3) & 15], low3[(i + 6) & 15]),
                                __vimin3_s32(low3[i + 1], low3[(i + 4) & 15], low3[(i + 7) & 15]));
        best_high = __vimin3_s32(best_high, __vimax3_s32(high3[i], high3[(i + 3) & 15], high3[(i + 6) & 15]),
                                 __vimax3_s32(high3[i + 1], high3[(i + 4) & 15], high3[(i + 7) & 15]));
    }
    const int c = p[0];
    return max(best_low - c, c - best_high) - 1;
}

// The corner decision at `threshold`: bright/dark 16-bit masks, then the arc table.
__device__ __forceinline__ bool is_corner(const unsigned int* ring, int c, const unsigned int* arc, int threshold) {
    // c + t and c - t saturate to 255 and 0, where "r > 255" and "r < 0" are false,
    // exactly as the i32 comparisons of the reference.
    const unsigned int above = (unsigned int)min(c + threshold, 255) * 0x01010101u;
    const unsigned int below = (unsigned int)max(c - threshold, 0) * 0x01010101u;
    unsigned int bright = 0, dark = 0;
#pragma unroll
    for (int w = 0; w < 4; ++w) {
        bright |= byte_mask_bits(__vcmpgtu4(ring[w], above)) << (4 * w);
        dark |= byte_mask_bits(__vcmpltu4(ring[w], below)) << (4 * w);
    }
    return arc_lookup(arc, bright) || arc_lookup(arc, dark);
}

// Tiles of the score pass: 64 x 16 pixels, staged in shared memory with the ring's
// 3-pixel halo, so each pixel's 16 ring loads hit shared memory.
#define SCORE_TILE_W 64
#define SCORE_TILE_H 16
#define RING_RADIUS 3
#define SCORE_SPAN_W (SCORE_TILE_W + 2 * RING_RADIUS)
#define SCORE_SPAN_H (SCORE_TILE_H + 2 * RING_RADIUS)
#define SCORE_PITCH 72

// s(p) for every pixel of every level; 0 outside the ring-safe area and for pixels
// that are no corner at `threshold` (the lowest threshold any cell uses). Blocks take
// (level, tile) work items in turn (a persistent grid). The score costs more than the
// decision, so a tile first decides every pixel and lists its corners, then scores the
// list with every lane busy (scoring in place would keep a warp's other lanes idle).
extern "C" __global__ void orb_fast_score(
    const unsigned char* __restrict__ pyramid,
    const OrbLevel* __restrict__ level_table,
    int n_levels,
    const unsigned int* __restrict__ arc_bits,
    int threshold,
    unsigned char* __restrict__ scores) {
    __shared__ unsigned int arc[ARC_WORDS];
    __shared__ OrbLevel levels[ORB_MAX_LEVELS];
    __shared__ unsigned char pixels[SCORE_SPAN_H][SCORE_PITCH];
    __shared__ unsigned short corners[SCORE_TILE_W * SCORE_TILE_H];  // r * SCORE_TILE_W + c
    __shared__ unsigned int n_corners;
    for (int i = threadIdx.x; i < ARC_WORDS; i += blockDim.x) arc[i] = arc_bits[i];
    load_levels(levels, level_table, n_levels);
    if (threadIdx.x == 0) n_corners = 0u;
    __syncthreads();

    LevelTile tile;
    for (int item = blockIdx.x; level_tile(levels, 0, n_levels - 1, item, SCORE_TILE_W, SCORE_TILE_H, tile);
         item += gridDim.x) {
        const OrbLevel& lv = levels[tile.level];
        const unsigned char* level = pyramid + lv.offset;
        unsigned char* level_scores = scores + lv.offset;
        for (int k = threadIdx.x; k < SCORE_SPAN_H * SCORE_SPAN_W; k += blockDim.x) {
            const int r = k / SCORE_SPAN_W, c = k - r * SCORE_SPAN_W;
            const int y = tile.y0 + r - RING_RADIUS, x = tile.x0 + c - RING_RADIUS;
            // Outside the level only rings of pixels outside the ring-safe area reach.
            pixels[r][c] = x >= 0 && x < lv.width && y >= 0 && y < lv.height ? level[y * lv.width + x] : 0;
        }
        __syncthreads();
        for (int k = threadIdx.x; k < SCORE_TILE_W * SCORE_TILE_H; k += blockDim.x) {
            const int r = k / SCORE_TILE_W, c = k % SCORE_TILE_W;
            const int y = tile.y0 + r, x = tile.x0 + c;
            bool corner = false;
            if (x >= RING_RADIUS && x < lv.width - RING_RADIUS && y >= RING_RADIUS && y < lv.height - RING_RADIUS) {
                const unsigned char* p = &pixels[r + RING_RADIUS][c + RING_RADIUS];
                unsigned int ring[4];
                load_ring<SCORE_PITCH>(p, ring);
                corner = is_corner(ring, p[0], arc, threshold);
            }
            if (corner)
                corners[warp_append(&n_corners, 0)] = (unsigned short)k;
            else if (x < lv.width && y < lv.height)
                level_scores[y * lv.width + x] = 0;
        }
        __syncthreads();
        const int listed = (int)n_corners;
        for (int j = threadIdx.x; j < listed; j += blockDim.x) {
            const int k = corners[j];
            const int r = k / SCORE_TILE_W, c = k % SCORE_TILE_W;
            const unsigned char* p = &pixels[r + RING_RADIUS][c + RING_RADIUS];
            level_scores[(tile.y0 + r) * lv.width + tile.x0 + c] = (unsigned char)fast_score<SCORE_PITCH>(p);
        }
        __syncthreads();  // the next tile reuses `pixels` and the list
        if (threadIdx.x == 0) n_corners = 0u;
    }
}

// Strict 3x3 non-maximum suppression at threshold T: s(p) >= T and s(p) > s_T(q) for
// the 8 neighbours, where s_T(q) is s(q) when s(q) >= T and 0 otherwise.
__device__ __forceinline__ bool survives_nms(const unsigned char* s, int width, int threshold) {
    int centre = s[0];
    if (centre < threshold) return false;
    bool keep = true;
#pragma unroll
    for (int dy = -1; dy <= 1; ++dy)
#pragma unroll
        for (int dx = -1; dx <= 1; ++dx) {
            if (dx == 0 && dy == 0) continue;
            int q = s[dy * width + dx];
            keep &= (q < threshold) || (centre > q);
        }
    return keep;
}

// NMS survivors a block lists per cell: all of them in cells of up to 64 x 64 pixels
// (strict NMS keeps at most one pixel of each 2x2 block); larger cells rescan.
#define CELL_LIST 1024

// The candidates of each grid cell, one cell per block at a time (a persistent grid of
// 32 x 4 threads): the cell uses `fast_threshold` if any of its pixels survives NMS
// at it, else `min_fast_threshold`. One NMS pass per pixel: a pixel survives at T iff
// it is a local maximum with s >= T (docs/orb-reference.md section 3), so the block
// lists the survivors at `min_fast_threshold` in shared memory and keeps those with
// s >= the cell's threshold. They take contiguous slots of the level's list (one
// atomicAdd per cell), so `cell_starts` / `cell_counts` locate every cell's members
// without a scan. Each one is counted in its level's histogram of FAST scores (the
// pre-filter's input, orb_prefilter_cut). The FAST ranking key is written here; the
// Harris key is left to orb_record_keys (kernels/orb/select.cu), after the pre-filter.
extern "C" __global__ void orb_cell_candidates(
    const unsigned char* __restrict__ scores,
    const OrbLevel* __restrict__ level_table,
    int n_levels,
    int total_cells,
    int fast_threshold,
    int min_fast_threshold,
    int harris,
    unsigned int* level_counts,                // per level, start at 0
    unsigned int* __restrict__ cell_starts,    // first slot of each cell's members
    unsigned int* __restrict__ cell_counts,    // members of each cell
    unsigned int* __restrict__ cand_yx,        // y << 16 | x
    int* __restrict__ cand_cell,               // cell within the level
    long long* __restrict__ cand_key,
    unsigned char* __restrict__ cand_score,    // FAST score s
    unsigned int* level_hist) {                // per level 256 bins of s, start at 0
    __shared__ OrbLevel levels[ORB_MAX_LEVELS];
    __shared__ unsigned int listed_yx[CELL_LIST];
    __shared__ unsigned char listed_score[CELL_LIST];
    __shared__ unsigned int strong_count, weak_count, first_slot, appended;
    const int thread = threadIdx.y * blockDim.x + threadIdx.x;
    const int threads = blockDim.x * blockDim.y;
    load_levels(levels, level_table, n_levels);
    if (thread == 0) {
        strong_count = 0u;
        weak_count = 0u;
    }
    __syncthreads();
    for (int id = blockIdx.x; id < total_cells; id += gridDim.x) {
        const int l = cell_level(levels, n_levels, id);
        const OrbLevel& lv = levels[l];
        const int cell = id - lv.cell_offset;
        const int row = cell / lv.n_cols, col = cell - row * lv.n_cols;
        const int x0 = lv.edge + col * lv.cell_w, x1 = min(x0 + lv.cell_w, lv.width - lv.edge);
        const int y0 = lv.edge + row * lv.cell_h, y1 = min(y0 + lv.cell_h, lv.height - lv.edge);
        const unsigned char* level_scores = scores + lv.offset;
        unsigned int strong = 0;
        for (int y = y0 + (int)threadIdx.y; y < y1; y += blockDim.y)
            for (int x = x0 + (int)threadIdx.x; x < x1; x += blockDim.x) {
                const unsigned char* s = level_scores + y * lv.width + x;
                if (!survives_nms(s, lv.width, min_fast_threshold)) continue;
                strong += s[0] >= fast_threshold;
                const unsigned int k = warp_append(&weak_count, 0);
                if (k < CELL_LIST) {
                    listed_yx[k] = ((unsigned int)y << 16) | (unsigned int)x;
                    listed_score[k] = s[0];
                }
            }
        if (strong) atomicAdd(&strong_count, strong);
        __syncthreads();
        const int threshold = strong_count ? fast_threshold : min_fast_threshold;
        const unsigned int found = strong_count ? strong_count : weak_count;
        const unsigned int listed = weak_count;
        if (thread == 0) {
            const unsigned int first = found ? atomicAdd(level_counts + l, found) : 0u;
            const unsigned int capacity = (unsigned int)lv.cand_capacity;
            first_slot = first;
            appended = 0u;
            cell_starts[id] = (unsigned int)lv.cand_offset + first;
            // Never past the level's slots (cannot happen: capacity bounds strict NMS).
            cell_counts[id] = first < capacity ? min(found, capacity - first) : 0u;
        }
        __syncthreads();
        if (thread == 0) {  // every thread has read them; the next cell counts from 0
            strong_count = 0u;
            weak_count = 0u;
        }
        // Every survivor of the cell at its threshold, in any order (the ranking orders them).
        auto append = [&](int y, int x, int s) {
            const unsigned int slot = first_slot + warp_append(&appended, 0);
            if (slot >= (unsigned int)lv.cand_capacity) return;
            const int c = lv.cand_offset + (int)slot;
            cand_yx[c] = ((unsigned int)y << 16) | (unsigned int)x;
            cand_cell[c] = cell;
            cand_score[c] = (unsigned char)s;
            atomicAdd(level_hist + l * 256 + s, 1u);
            if (!harris) cand_key[c] = (long long)s;
        };
        if (listed <= CELL_LIST) {
            for (int k = thread; k < (int)listed; k += threads) {
                const int s = listed_score[k];
                if (s < threshold) continue;
                const unsigned int yx = listed_yx[k];
                append((int)(yx >> 16), (int)(yx & 0xffffu), s);
            }
        } else if (found) {
            for (int y = y0 + (int)threadIdx.y; y < y1; y += blockDim.y)
                for (int x = x0 + (int)threadIdx.x; x < x1; x += blockDim.x) {
                    const unsigned char* s = level_scores + y * lv.width + x;
                    if (survives_nms(s, lv.width, threshold)) append(y, x, s[0]);
                }
        }
        __syncthreads();  // the next cell reuses the list and `appended`
    }
}
