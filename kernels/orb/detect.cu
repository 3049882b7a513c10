// oFAST (common/fast_ring.cuh) and the descriptors' smoothing on every pyramid
// level in one launch (2D tiles in shared memory), then per grid cell its threshold,
// 3x3 non-maximum suppression and compaction of the survivors in one launch
// (docs/orb-reference.md sections 2-4, 7).
#include "common/fast_ring.cuh"
#include "common/levels.cuh"
#include "common/orb_params.cuh"
#include "common/pixel_words.cuh"
#include "common/warp_append.cuh"

// Tiles of the score pass: 64 x 32 pixels, staged in shared memory with the ring's
// 3-pixel halo, so each pixel's ring loads hit shared memory. Warp w owns rows
// 4w .. 4w + 3 of the tile. SCORE_TILE_W, SCORE_TILE_H, SCORE_THREADS and RING_RADIUS
// come from the host as -D defines (src/cuda/abi.rs), which sizes the launch and cuts
// the frame's bands (src/cuda/orb/bands.rs) by them.
#define SCORE_SPAN_W (SCORE_TILE_W + 2 * RING_RADIUS)
#define SCORE_SPAN_H (SCORE_TILE_H + 2 * RING_RADIUS)
#define SCORE_PITCH 72
static_assert(SCORE_PITCH >= SCORE_SPAN_W && SCORE_PITCH % 4 == 0, "a staged row in whole words");
#define SCORE_WARPS (SCORE_THREADS / 32)
#define WARP_ROWS (SCORE_TILE_H / SCORE_WARPS)
#define WARP_PIXELS (SCORE_TILE_W * WARP_ROWS)
// A staged row read as aligned words: SCORE_PITCH / 4 shared words, each from two
// neighbouring global words.
#define SPAN_WORDS (SCORE_PITCH / 4)
#define SPAN_READ (4 * (SPAN_WORDS + 1))

// OpenCV's BORDER_REFLECT_101 for one coordinate, clamped for levels under 4 pixels.
__device__ __forceinline__ int reflect101(int i, int n) {
    if (i < 0) i = -i;
    if (i >= n) i = 2 * n - 2 - i;
    return min(max(i, 0), n - 1);
}

// Copies the tile at (x0, y0) of a level and its 3-pixel halo into `pixels`. Where the
// level holds every byte that aligned words around the span reach, each warp reads a
// row as SPAN_WORDS + 1 aligned words and funnel-shifts neighbours together (a quarter
// of the loads of a byte copy); at the level's borders byte by byte, reflected
// (BORDER_REFLECT_101, the smoothing's border; FAST rings never reach past the level).
__device__ __forceinline__ void stage_tile(unsigned char (*pixels)[SCORE_PITCH], const unsigned char* level,
                                           int width, int height, int x0, int y0) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int left = x0 - RING_RADIUS, top = y0 - RING_RADIUS;
    if (left >= 0 && left + SPAN_READ <= width && top >= 0 && top + SCORE_SPAN_H <= height) {
        // One pointer step per row: 64-bit index arithmetic per row cost more than the
        // copy itself.
        const unsigned char* start = level + (top + warp) * width + left;
        for (int r = warp; r < SCORE_SPAN_H; r += SCORE_WARPS, start += SCORE_WARPS * width) {
            const unsigned int misalign = (unsigned int)reinterpret_cast<size_t>(start) & 3u;
            const unsigned int* words = (const unsigned int*)(start - misalign);
            const unsigned int word = lane <= SPAN_WORDS ? words[lane] : 0u;
            const unsigned int next = __shfl_down_sync(0xffffffffu, word, 1);
            if (lane < SPAN_WORDS)
                reinterpret_cast<unsigned int*>(pixels[r])[lane] = __funnelshift_r(word, next, 8u * misalign);
        }
        return;
    }
    for (int r = warp; r < SCORE_SPAN_H; r += SCORE_WARPS) {
        const unsigned char* row = level + reflect101(top + r, height) * width;
        for (int c = lane; c < SCORE_SPAN_W; c += 32) pixels[r][c] = row[reflect101(left + c, width)];
    }
}

// The separable 7x7 Gaussian (docs/orb-reference.md section 7) of the staged tile, in
// fixed point: the taps sum to 256, so a horizontal sum fits 16 bits and the two
// passes scale by 2^16; integer sums are exact, so this is the reference's value.
// The taps come packed as bytes (SmoothTaps, common/orb_params.cuh). Byte dot products
// do the arithmetic: __dp4a sums four pixel x tap products, __dp2a two 16-bit row sums
// x taps.

// Rows of horizontal sums stored in pairs: word c of pair p holds row 2p's sum at
// column c in its low half and row 2p + 1's in its high half, the operand layout of
// __dp2a in the vertical pass.
#define SPAN_PAIRS (SCORE_SPAN_H / 2)

// Horizontal pass over every staged row: a thread sums 4 neighbouring columns of a
// pair of rows from 3 aligned words per row (funnel shifts align each column's 7
// pixels into two words) and stores them with one 16-byte store.
__device__ __forceinline__ void smooth_rows(const unsigned char (*pixels)[SCORE_PITCH],
                                            uint4 (*row_pairs)[SCORE_TILE_W / 4], SmoothTaps taps) {
    for (unsigned int item = threadIdx.x; item < SPAN_PAIRS * (SCORE_TILE_W / 4); item += SCORE_THREADS) {
        const unsigned int pair = item / (SCORE_TILE_W / 4), group = item % (SCORE_TILE_W / 4);
        unsigned int sums[2][4];
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const unsigned int* words = reinterpret_cast<const unsigned int*>(pixels[2 * pair + half]) + group;
            const unsigned int w0 = words[0], w1 = words[1], w2 = words[2];
#pragma unroll
            for (int k = 0; k < 4; ++k)
                sums[half][k] = __dp4a(__funnelshift_r(w0, w1, 8 * k), taps.taps_0123,
                                       __dp4a(__funnelshift_r(w1, w2, 8 * k), taps.taps_456, 0u));
        }
        // Each sum is under 2^16: the pair's halves by byte permutation.
        row_pairs[pair][group] =
            make_uint4(__byte_perm(sums[0][0], sums[1][0], 0x5410), __byte_perm(sums[0][1], sums[1][1], 0x5410),
                       __byte_perm(sums[0][2], sums[1][2], 0x5410), __byte_perm(sums[0][3], sums[1][3], 0x5410));
    }
}

// Vertical pass: a thread makes 4 neighbouring columns of 2 rows (the 256 threads
// cover the 64 x 32 tile) from the 4 row pairs they span, one 16-byte load each. Each
// sum starts at 2^15, the rounding, so byte 2 of the sum (under 2^24) is the pixel,
// and a row's four pixels pack into one word by byte permutation: a word store where
// the row is aligned.
#define SMOOTH_GROUPS (SCORE_TILE_W / 4)
static_assert(SMOOTH_GROUPS * (SCORE_TILE_H / 2) == SCORE_THREADS, "a thread per 4 columns x 2 rows");

__device__ __forceinline__ unsigned int word_of(const uint4& v, int k) {
    return k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w;
}

// Byte 2 of each of four sums, as one word (column k in byte k).
__device__ __forceinline__ unsigned int pixel_bytes(const unsigned int* sums) {
    return __byte_perm(__byte_perm(sums[0], sums[1], 0x0062), __byte_perm(sums[2], sums[3], 0x0062), 0x5410);
}

__device__ __forceinline__ void smooth_columns(const uint4 (*row_pairs)[SCORE_TILE_W / 4], SmoothTaps taps,
                                               unsigned char* out, int width, int height, int x0, int y0) {
    const int group = threadIdx.x % SMOOTH_GROUPS, pair = threadIdx.x / SMOOTH_GROUPS;
    const int x = x0 + 4 * group, y = y0 + 2 * pair;
    if (x >= width || y >= height) return;
    uint4 pairs[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) pairs[i] = row_pairs[pair + i][group];
    unsigned int even[4], odd[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        // Row 2p: taps w0..w6 on rows 2p..2p + 6; row 2p + 1: on rows 2p + 1..2p + 7.
        const unsigned int p0 = word_of(pairs[0], k), p1 = word_of(pairs[1], k);
        const unsigned int p2 = word_of(pairs[2], k), p3 = word_of(pairs[3], k);
        even[k] = __dp2a_lo(p0, taps.taps_0123,
                            __dp2a_hi(p1, taps.taps_0123,
                                      __dp2a_lo(p2, taps.taps_456, __dp2a_hi(p3, taps.taps_456, 1u << 15))));
        odd[k] = __dp2a_lo(p0, taps.taps_x012,
                           __dp2a_hi(p1, taps.taps_x012,
                                     __dp2a_lo(p2, taps.taps_3456, __dp2a_hi(p3, taps.taps_3456, 1u << 15))));
    }
    unsigned char* row = out + y * width + x;
    store_pixels(row, width - x, pixel_bytes(even));
    if (y + 1 < height) store_pixels(row + width, width - x, pixel_bytes(odd));
}

// The pre-test of a warp's WARP_PIXELS pixels of the staged tile at (x0, y0): lane l
// takes columns l and l + 32 of the warp's rows; every lane takes the same steps, so
// the ballots see the whole warp. The survivors go to the warp's `list`
// (r * SCORE_TILE_W + c); every pixel inside the level gets score 0 here, which the
// score pass overwrites for the corners. Returns the number listed. `interior`: the
// tile lies within the ring-safe area, so no pixel needs a bounds check.
template <bool interior>
__device__ __forceinline__ int pre_test_warp_pixels(const unsigned char (*pixels)[SCORE_PITCH], int threshold,
                                                    unsigned char* level_scores, int width, int height, int x0,
                                                    int y0, unsigned short* list) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const unsigned int lanes_below = (1u << lane) - 1u;
    unsigned char* row_scores = level_scores + (y0 + warp * WARP_ROWS) * width + x0 + lane;
    int listed = 0;
#pragma unroll
    for (int i = 0; i < WARP_PIXELS / 32; ++i) {
        const int r = warp * WARP_ROWS + i / 2, c = lane + 32 * (i % 2);
        const int y = y0 + r, x = x0 + c;
        const bool ring_safe = interior || (x >= RING_RADIUS && x < width - RING_RADIUS && y >= RING_RADIUS &&
                                            y < height - RING_RADIUS);
        const bool candidate =
            ring_safe && may_be_corner<SCORE_PITCH>(&pixels[r + RING_RADIUS][c + RING_RADIUS], threshold);
        const unsigned int passed = __ballot_sync(0xffffffffu, candidate);
        if (candidate) list[listed + __popc(passed & lanes_below)] = (unsigned short)(r * SCORE_TILE_W + c);
        listed += __popc(passed);
        if (interior || (x < width && y < height)) row_scores[(i / 2) * width + 32 * (i % 2)] = 0;
    }
    return listed;
}

// Whether the corner at (r, c) of a tile is a strict local maximum of the tile's
// scores (0 for the pixels that are no corner): the 3x3 non-maximum suppression of
// orb_cell_candidates, exact for a pixel whose 8 neighbours lie in the tile.
__device__ __forceinline__ bool tile_peak(const unsigned char (*scores)[SCORE_TILE_W], int r, int c) {
    const int centre = scores[r][c];
    bool peak = true;
#pragma unroll
    for (int dy = -1; dy <= 1; ++dy)
#pragma unroll
        for (int dx = -1; dx <= 1; ++dx)
            if (dx != 0 || dy != 0) peak &= centre > scores[r + dy][c + dx];
    return peak;
}

// A pixel on a tile's outer rows or columns: some of its neighbours' scores come from
// other tiles.
__device__ __forceinline__ bool on_tile_border(int r, int c) {
    return r == 0 || r == SCORE_TILE_H - 1 || c == 0 || c == SCORE_TILE_W - 1;
}

// The corners among a warp's `listed` pre-test survivors, 32 at a time, moved down the
// list in place (an entry is written at or below its own index, after the whole warp
// has read its 32); their scores go to the level's map (`level_scores`, the tile at
// (x0, y0)) and to the tile's. Returns their number.
#if FAST_SCORE_DECIDES
__device__ __forceinline__ int keep_corners(const unsigned char (*pixels)[SCORE_PITCH], int threshold,
                                            unsigned short* list, int listed, unsigned char* level_scores,
                                            int width, int x0, int y0, unsigned char (*tile_scores)[SCORE_TILE_W]) {
    const int lane = threadIdx.x % 32;
    const unsigned int lanes_below = (1u << lane) - 1u;
    int corners = 0;
    for (int base = 0; base < listed; base += 32) {
        const int j = base + lane;
        const int k = list[min(j, listed - 1)];
        const int r = k / SCORE_TILE_W, c = k % SCORE_TILE_W;
        const int score = fast_score<SCORE_PITCH>(&pixels[r + RING_RADIUS][c + RING_RADIUS]);
        const bool corner = j < listed && score >= threshold;
        const unsigned int found = __ballot_sync(0xffffffffu, corner);
        __syncwarp();
        if (corner) {
            list[corners + __popc(found & lanes_below)] = (unsigned short)k;
            level_scores[(y0 + r) * width + x0 + c] = (unsigned char)score;
            tile_scores[r][c] = (unsigned char)score;
        }
        corners += __popc(found);
    }
    return corners;
}
#else
// The masks and the arc table (`arc`, staged in shared memory) decide, then the
// corners are scored.
__device__ __forceinline__ int keep_corners(const unsigned char (*pixels)[SCORE_PITCH], const unsigned int* arc,
                                            int threshold, unsigned short* list, int listed,
                                            unsigned char* level_scores, int width, int x0, int y0,
                                            unsigned char (*tile_scores)[SCORE_TILE_W]) {
    const int lane = threadIdx.x % 32;
    const unsigned int lanes_below = (1u << lane) - 1u;
    int corners = 0;
    for (int base = 0; base < listed; base += 32) {
        const int j = base + lane;
        const int k = j < listed ? list[j] : 0;
        const int r = k / SCORE_TILE_W, c = k % SCORE_TILE_W;
        bool corner = false;
        if (j < listed) {
            const unsigned char* pixel = &pixels[r + RING_RADIUS][c + RING_RADIUS];
            unsigned int ring[4];
            load_ring<SCORE_PITCH>(pixel, ring);
            corner = is_corner(ring, pixel[0], arc, threshold);
        }
        const unsigned int found = __ballot_sync(0xffffffffu, corner);
        __syncwarp();
        if (corner) list[corners + __popc(found & lanes_below)] = (unsigned short)k;
        corners += __popc(found);
    }
    __syncwarp();
    for (int j = lane; j < corners; j += 32) {
        const int k = list[j];
        const int r = k / SCORE_TILE_W, c = k % SCORE_TILE_W;
        const unsigned char score = (unsigned char)fast_score<SCORE_PITCH>(&pixels[r + RING_RADIUS][c + RING_RADIUS]);
        level_scores[(y0 + r) * width + x0 + c] = score;
        tile_scores[r][c] = score;
    }
    return corners;
}
#endif

// s(p) for every pixel of levels first_level .. n_levels - 1 (0 outside the ring-safe
// area and for pixels that are no corner at `threshold`, the lowest threshold any cell
// uses), its bit in `corner_bits` for every corner that may survive the 3x3
// non-maximum suppression (the cell scan's input: the corners that are local maxima of
// their tile's scores, and every corner on a tile's border, whose neighbours the cell
// scan compares), and the smoothed levels the descriptors sample, from the same
// staged tiles.
// Launched twice (src/cuda/orb/launch.rs): level 0, the frame, beside orb_pyramid,
// then the resized levels after it. Blocks take (level, tile) work items from a queue
// (a persistent grid). Each warp works on its own pixels, compacting the survivors of
// each step into the warp's shared-memory list (__ballot_sync): OpenCV's 5-pixel
// pre-test, then keep_corners.
// The only block barriers are after the staging and before the smoothing's vertical
// pass, so the warps of a block never wait for each other's short lists. At most 40
// registers: 6 blocks per SM instead of 4, full occupancy on Orin (sm_87, 1,536
// threads per SM). On 8 SMs the kernel is bound by instruction issue, so every step
// counts instructions per pixel: byte dot products for the smoothing, the score as the
// decision where DPX makes it cheap, no bounds checks on interior tiles.
extern "C" __global__ void __launch_bounds__(SCORE_THREADS, 6) orb_fast_score(const OrbFastScoreParams p) {
#if !FAST_SCORE_DECIDES
    __shared__ unsigned int arc[ARC_WORDS];
    for (int i = threadIdx.x; i < ARC_WORDS; i += blockDim.x) arc[i] = __ldg(&p.arc_bits[i]);
#endif
    __shared__ OrbLevel levels[ORB_MAX_LEVELS];
    __shared__ int first_tiles[ORB_MAX_LEVELS + 1];
    __shared__ __align__(4) unsigned char pixels[SCORE_SPAN_H][SCORE_PITCH];
    __shared__ uint4 row_pairs[SPAN_PAIRS][SCORE_TILE_W / 4];
    __shared__ unsigned short candidates[SCORE_WARPS][WARP_PIXELS];  // r * SCORE_TILE_W + c
    __shared__ unsigned int corner_words[SCORE_WARPS][WARP_ROWS * 2];  // the warp's rows' bitmap words
    __shared__ __align__(4) unsigned char tile_scores[SCORE_TILE_H][SCORE_TILE_W];  // the tile's s(p)
    load_levels(levels, p.level_table, p.n_levels);
    __syncthreads();
    band_tile_firsts(first_tiles, levels, p.rows, p.n_levels, SCORE_TILE_W);
    __syncthreads();
    const SmoothTaps taps = p.taps;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const unsigned int lanes_below = (1u << lane) - 1u;
    unsigned short* list = candidates[warp];

    // A block's first tile is its index, then it takes the next one from the launch's
    // queue (zeroed each frame), so that the blocks finish together: tiles differ in
    // cost (corners, level borders), and blocks that start late, behind the other
    // stream's kernels, take fewer. On 8 SMs of an H200 the levels 1.. of a 1080p frame
    // took 664 us instead of 767 alone (ncu). The slot of the next item alternates: a
    // slot is written again two tiles later, after every thread has passed the barrier
    // that follows its read.
    __shared__ int next_items[2];
    LevelTile tile;
    int item = blockIdx.x;
    for (int taken = 0;
         band_tile(levels, p.rows, first_tiles, p.n_levels, item, SCORE_TILE_W, SCORE_TILE_H, tile); ++taken) {
        if (threadIdx.x == 0) next_items[taken % 2] = (int)(gridDim.x + atomicAdd(p.tiles_taken, 1u));
        const int width = levels[tile.level].width, height = levels[tile.level].height;
        const int offset = levels[tile.level].offset;
        unsigned char* level_scores = p.scores + offset;
        if (lane < WARP_ROWS * 2) corner_words[warp][lane] = 0u;  // ordered by the pre-test's __syncwarp
        stage_tile(pixels, p.pyramid + offset, width, height, tile.x0, tile.y0);
        __syncthreads();
        smooth_rows(pixels, row_pairs, taps);
        // The warp's rows of the tile's scores start at 0; the previous tile's
        // suppression read them before the barrier above.
        for (int w = lane; w < WARP_PIXELS / 4; w += 32)
            reinterpret_cast<unsigned int*>(tile_scores[warp * WARP_ROWS])[w] = 0u;
        const bool interior = tile.x0 >= RING_RADIUS && tile.x0 + SCORE_TILE_W <= width - RING_RADIUS &&
                              tile.y0 >= RING_RADIUS && tile.y0 + SCORE_TILE_H <= height - RING_RADIUS;
        const int listed = interior ? pre_test_warp_pixels<true>(pixels, p.threshold, level_scores, width, height,
                                                                 tile.x0, tile.y0, list)
                                    : pre_test_warp_pixels<false>(pixels, p.threshold, level_scores, width, height,
                                                                  tile.x0, tile.y0, list);
        // The barrier orders the pre-test's zero scores before the corners' scores
        // that other lanes write to the same bytes.
        __syncwarp();
#if FAST_SCORE_DECIDES
        const int corners = keep_corners(pixels, p.threshold, list, listed, level_scores, width, tile.x0, tile.y0,
                                         tile_scores);
#else
        const int corners = keep_corners(pixels, arc, p.threshold, list, listed, level_scores, width, tile.x0,
                                         tile.y0, tile_scores);
#endif
        // Every row sum and score is written and every read of `pixels` done: the next
        // tile's staging waits at its own barrier for this tile's vertical pass.
        __syncthreads();
        item = next_items[taken % 2];
        // The warp's corners that may survive the suppression, into its rows of the
        // bitmap: the tile's 64-pixel rows are two whole words (x0 is a multiple of 64),
        // so no other warp writes them.
        for (int j = lane; j < corners; j += 32) {
            const int k = list[j];
            const int r = k / SCORE_TILE_W, c = k % SCORE_TILE_W;
            if (on_tile_border(r, c) || tile_peak(tile_scores, r, c))
                atomicOr(&corner_words[warp][(r - warp * WARP_ROWS) * 2 + c / 32], 1u << (c % 32));
        }
        __syncwarp();
        if (lane < WARP_ROWS * 2) {
            const int y = tile.y0 + warp * WARP_ROWS + lane / 2, x = tile.x0 + 32 * (lane % 2);
            if (y < height && x < width)
                p.corner_bits[levels[tile.level].corner_words + y * corner_row_words(width) + x / 32] =
                    corner_words[warp][lane];
        }
        smooth_columns(row_pairs, taps, p.smoothed + offset, width, height, tile.x0, tile.y0);
    }
}

// Strict 3x3 non-maximum suppression at threshold T: s(p) >= T and s(p) > s_T(q) for
// the 8 neighbours, where s_T(q) is s(q) when s(q) >= T and 0 otherwise.
__device__ __forceinline__ bool survives_nms(const unsigned char* s, int width, int threshold) {
    int centre = __ldg(s);
    if (centre < threshold) return false;
    bool keep = true;
#pragma unroll
    for (int dy = -1; dy <= 1; ++dy)
#pragma unroll
        for (int dx = -1; dx <= 1; ++dx) {
            if (dx == 0 && dy == 0) continue;
            int q = __ldg(&s[dy * width + dx]);
            keep &= (q < threshold) || (centre > q);
        }
    return keep;
}

// NMS survivors a warp lists per cell: all of them in cells of up to 44 x 44 pixels
// (strict NMS keeps at most one pixel of each 2x2 block). A cell with more survivors
// (a level's remainder widens its cells up to twice the grid's cell size less one)
// rescans its pixels.
#define CELL_LIST 484
// CELL_THREADS, the threads of a block (32 x CELL_WARPS), is a -D define (src/cuda/abi.rs).
#define CELL_WARPS (CELL_THREADS / 32)

// The candidates of each grid cell, one cell per warp at a time (a persistent grid of
// 32 x 4 threads): the cell uses `fast_threshold` if any of its pixels survives NMS
// at it, else `min_fast_threshold`. One NMS pass per pixel: a pixel survives at T iff
// it is a local maximum with s >= T (docs/orb-reference.md section 3), so the warp
// lists the survivors at `min_fast_threshold` in shared memory and keeps those with
// s >= the cell's threshold. They take contiguous slots of the level's list (one
// atomicAdd per cell), so `cell_starts` / `cell_counts` locate every cell's members
// without a scan. Each one is counted in its level's histogram of FAST scores (the
// pre-filter's input, orb_prefilter_cut). The FAST ranking key is written here; the
// Harris key is left to orb_record_keys (kernels/orb/select.cu), after the pre-filter.
// The survivors are looked for among the bits of the bitmap orb_fast_score writes only:
// every pixel with s >= min_fast_threshold is a corner at that threshold, and every
// corner that may survive has its bit, so the scan reads one word per 32 pixels
// instead of every score. orb_fast_score compared the neighbours of the corners inside
// a tile (from its scores in shared memory, a warp's corners 32 at a time) and set the
// bits of the local maxima only; the scan compares those on a tile's border. With so
// little left to compare, a cell is a warp's: its steps need no block barrier, and
// four cells of a block proceed independently. At most 40 registers on sm_90 (12
// blocks, 48 warps per SM): held to 32, it spilled each cell's geometry around the scan.
extern "C" __global__ void __launch_bounds__(CELL_THREADS, 12) orb_cell_candidates(const OrbCellCandidatesParams p) {
    __shared__ OrbLevel levels[ORB_MAX_LEVELS];
    __shared__ int first_cells[ORB_MAX_LEVELS + 1];
    __shared__ unsigned int listed_yx[CELL_WARPS][CELL_LIST];
    __shared__ unsigned char listed_score[CELL_WARPS][CELL_LIST];
    __shared__ unsigned int listed_counts[CELL_WARPS], strong_counts[CELL_WARPS], rescanned[CELL_WARPS];
    const int warp = threadIdx.y, lane = threadIdx.x;
    const unsigned int lanes_below = (1u << lane) - 1u;
    load_levels(levels, p.level_table, p.n_levels);
    if (lane == 0) {
        listed_counts[warp] = 0u;
        strong_counts[warp] = 0u;
    }
    __syncthreads();
    band_cell_firsts(first_cells, levels, p.rows, p.n_levels);
    __syncthreads();
    int l, cell;
    for (int item = blockIdx.x * CELL_WARPS + warp;
         band_cell(levels, p.rows, first_cells, p.n_levels, item, l, cell);
         item += gridDim.x * CELL_WARPS) {
        const OrbLevel& lv = levels[l];
        const int id = lv.cell_offset + cell;
        const int row = cell / lv.n_cols, col = cell - row * lv.n_cols;
        const int x0 = lv.edge + col * lv.cell_w, x1 = min(x0 + lv.cell_w, lv.width - lv.edge);
        const int y0 = lv.edge + row * lv.cell_h, y1 = min(y0 + lv.cell_h, lv.height - lv.edge);
        const unsigned char* level_scores = p.scores + lv.offset;
        unsigned int strong = 0;
        // A lane takes one bitmap word of one row of the cell at a time (x0 and x1
        // cut the first and last words) and tests the pixels of its set bits.
        const unsigned int* level_bits = p.corner_bits + lv.corner_words;
        const int first_word = x0 / 32, last_word = (x1 - 1) / 32, row_words = corner_row_words(lv.width);
        const int cell_words = last_word - first_word + 1;
        for (int w = lane; w < (y1 - y0) * cell_words; w += 32) {
            const int y = y0 + w / cell_words, word = first_word + w % cell_words;
            unsigned int bits = __ldg(&level_bits[y * row_words + word]);
            if (word == first_word) bits &= ~0u << (x0 % 32);
            if (word == last_word) bits &= ~0u >> (31 - (x1 - 1) % 32);
            for (; bits; bits &= bits - 1) {
                const int x = word * 32 + __ffs(bits) - 1;
                const unsigned char* s = level_scores + y * lv.width + x;
                // orb_fast_score compared the neighbours of a pixel inside its tile.
                if (on_tile_border(y % SCORE_TILE_H, x % SCORE_TILE_W) &&
                    !survives_nms(s, lv.width, p.min_fast_threshold))
                    continue;
                const int centre = __ldg(s);
                strong += centre >= p.fast_threshold;
                const unsigned int k = warp_append(&listed_counts[warp], 0);
                if (k < CELL_LIST) {
                    listed_yx[warp][k] = ((unsigned int)y << 16) | (unsigned int)x;
                    listed_score[warp][k] = (unsigned char)centre;
                }
            }
        }
        if (strong) atomicAdd(&strong_counts[warp], strong);
        __syncwarp();
        const unsigned int strong_count = strong_counts[warp], listed = listed_counts[warp];
        const int threshold = strong_count ? p.fast_threshold : p.min_fast_threshold;
        const unsigned int found = strong_count ? strong_count : listed;
        __syncwarp();
        unsigned int first = 0;
        if (lane == 0) {
            first = found ? atomicAdd(p.counters.level_counts + l, found) : 0u;
            const unsigned int capacity = (unsigned int)lv.cand_capacity;
            p.cell_starts[id] = (unsigned int)lv.cand_offset + first;
            // Never past the level's slots (cannot happen: capacity bounds strict NMS).
            p.cell_counts[id] = first < capacity ? min(found, capacity - first) : 0u;
            // Every lane has read the counts; the next cell counts from 0.
            listed_counts[warp] = 0u;
            strong_counts[warp] = 0u;
            rescanned[warp] = 0u;
        }
        first = __shfl_sync(0xffffffffu, first, 0);
        __syncwarp();
        // Every survivor of the cell at its threshold, in any order (the ranking orders them).
        auto append = [&](unsigned int slot, int y, int x, int s) {
            if (slot >= (unsigned int)lv.cand_capacity) return;
            const int c = lv.cand_offset + (int)slot;
            p.candidates.yx[c] = ((unsigned int)y << 16) | (unsigned int)x;
            p.candidates.cell[c] = cell;
            p.candidates.score[c] = (unsigned char)s;
            atomicAdd(p.counters.score_histograms + l * 256 + s, 1u);
            if (!p.harris) p.candidates.key[c] = (long long)s;
        };
        if (listed <= CELL_LIST) {
            unsigned int appended = 0;
            for (unsigned int base = 0; base < listed; base += 32) {
                const unsigned int k = base + lane;
                const int s = k < listed ? listed_score[warp][k] : 0;
                const bool kept = k < listed && s >= threshold;
                const unsigned int keeping = __ballot_sync(0xffffffffu, kept);
                if (kept) {
                    const unsigned int yx = listed_yx[warp][k];
                    append(first + appended + __popc(keeping & lanes_below), (int)(yx >> 16), (int)(yx & 0xffffu), s);
                }
                appended += __popc(keeping);
            }
        } else if (found) {
            for (int y = y0; y < y1; ++y)
                for (int x = x0 + lane; x < x1; x += 32) {
                    const unsigned char* s = level_scores + y * lv.width + x;
                    if (survives_nms(s, lv.width, threshold))
                        append(first + warp_append(&rescanned[warp], 0), y, x, __ldg(s));
                }
        }
        __syncwarp();  // the next cell reuses the list
    }
}
