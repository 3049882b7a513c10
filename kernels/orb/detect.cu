// oFAST on every pyramid level in one launch, per-cell thresholds, 3x3 non-maximum
// suppression and compaction of the survivors (docs/orb-reference.md sections 2-4).
#include "common/levels.cuh"
#include "common/warp_append.cuh"

// Ring offsets (dx, dy) in OpenCV's offsets16 order.
__constant__ signed char RING_DX[16] = {0, 1, 2, 3, 3, 3, 2, 1, 0, -1, -2, -3, -3, -3, -2, -1};
__constant__ signed char RING_DY[16] = {3, 3, 2, 1, 0, -1, -2, -3, -3, -3, -2, -1, 0, 1, 2, 3};

#define ARC_WORDS 2048  // 65,536 bits: ARC[m] = m has 9+ circularly contiguous set bits

// One bit per byte lane of a __vcmp*4 result (0x00 or 0xff per byte): byte i -> bit i.
__device__ __forceinline__ unsigned int byte_mask_bits(unsigned int lanes) {
    return (((lanes & 0x80808080u) >> 7) * 0x10204080u) >> 28;
}

__device__ __forceinline__ bool arc_lookup(const unsigned int* arc, unsigned int mask) {
    return (__popc(mask) >= 9) && ((arc[mask >> 5] >> (mask & 31u)) & 1u);
}

// The 16 ring bytes rotated by one or two pixels: pixel r of the result is pixel
// r + n of `ring` (byte k of word w = ring pixel 4w + k).
__device__ __forceinline__ void rotate_ring(const unsigned int* ring, unsigned int* out, unsigned int selector) {
#pragma unroll
    for (int w = 0; w < 4; ++w) out[w] = __byte_perm(ring[w], ring[(w + 1) & 3], selector);
}
#define ROTATE_1 0x4321u
#define ROTATE_2 0x5432u

// Per ring pixel r, the minimum (`take_min`) or maximum of the arc of 9 ring pixels
// starting at r, four pixels per word: pairs, fours, eights, then the ninth.
template <bool take_min>
__device__ __forceinline__ void arc_extremes(const unsigned int* ring, unsigned int* arc9) {
    auto pick = [](unsigned int a, unsigned int b) { return take_min ? __vminu4(a, b) : __vmaxu4(a, b); };
    unsigned int shifted[4], two[4], four[4];
    rotate_ring(ring, shifted, ROTATE_1);
#pragma unroll
    for (int w = 0; w < 4; ++w) two[w] = pick(ring[w], shifted[w]);
    rotate_ring(two, shifted, ROTATE_2);
#pragma unroll
    for (int w = 0; w < 4; ++w) four[w] = pick(two[w], shifted[w]);
#pragma unroll
    for (int w = 0; w < 4; ++w) arc9[w] = pick(pick(four[w], four[(w + 1) & 3]), ring[(w + 2) & 3]);
}

// The largest (`take_max`) or smallest of the 16 bytes.
template <bool take_max>
__device__ __forceinline__ int byte_extreme(const unsigned int* v) {
    auto pick = [](unsigned int a, unsigned int b) { return take_max ? __vmaxu4(a, b) : __vminu4(a, b); };
    unsigned int x = pick(pick(v[0], v[1]), pick(v[2], v[3]));
    x = pick(x, __byte_perm(x, 0u, 0x1032u));
    x = pick(x, __byte_perm(x, 0u, 0x2301u));
    return (int)(x & 0xffu);
}

// Largest t at which the pixel is a corner: over the 16 arcs A of 9 ring pixels,
// max(min_A(r - c), min_A(c - r)) - 1 = max(max_A min_A r - c, c - min_A max_A r) - 1,
// with the arc minima and maxima taken on packed bytes (__vminu4 / __vmaxu4).
__device__ __forceinline__ int fast_score(const unsigned int* ring, int c) {
    unsigned int arc_min[4], arc_max[4];
    arc_extremes<true>(ring, arc_min);
    arc_extremes<false>(ring, arc_max);
    return max(byte_extreme<true>(arc_min) - c, c - byte_extreme<false>(arc_max)) - 1;
}

// s(p) for every pixel of every level; 0 outside the ring-safe area and for pixels
// that are no corner at `threshold` (the lowest threshold any cell uses).
extern "C" __global__ void orb_fast_score(
    const unsigned char* __restrict__ pyramid,
    const OrbLevel* __restrict__ level_table,
    int n_levels,
    const unsigned int* __restrict__ arc_bits,
    int threshold,
    unsigned char* __restrict__ scores,
    int total_pixels) {
    __shared__ unsigned int arc[ARC_WORDS];
    __shared__ OrbLevel levels[ORB_MAX_LEVELS];
    for (int i = threadIdx.x; i < ARC_WORDS; i += blockDim.x) arc[i] = arc_bits[i];
    load_levels(levels, level_table, n_levels);
    __syncthreads();

    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total_pixels; i += gridDim.x * blockDim.x) {
        const OrbLevel lv = levels[level_of(levels, n_levels, i)];
        int local = i - lv.offset;
        int y = local / lv.width, x = local - y * lv.width;
        int score = 0;
        if (x >= 3 && x < lv.width - 3 && y >= 3 && y < lv.height - 3) {
            const unsigned char* p = pyramid + i;
            int c = p[0];
            // Ring pixels packed four per word, byte k of word w = ring pixel 4w + k.
            unsigned int ring[4];
#pragma unroll
            for (int w = 0; w < 4; ++w) {
                unsigned int word = 0;
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    int r = 4 * w + k;
                    word |= (unsigned int)p[RING_DY[r] * lv.width + RING_DX[r]] << (8 * k);
                }
                ring[w] = word;
            }
            // c + t and c - t saturate to 255 and 0, where "r > 255" and "r < 0" are
            // false, exactly as the i32 comparisons of the reference.
            unsigned int above = (unsigned int)min(c + threshold, 255) * 0x01010101u;
            unsigned int below = (unsigned int)max(c - threshold, 0) * 0x01010101u;
            unsigned int bright = 0, dark = 0;
#pragma unroll
            for (int w = 0; w < 4; ++w) {
                bright |= byte_mask_bits(__vcmpgtu4(ring[w], above)) << (4 * w);
                dark |= byte_mask_bits(__vcmpltu4(ring[w], below)) << (4 * w);
            }
            if (arc_lookup(arc, bright) || arc_lookup(arc, dark)) score = fast_score(ring, c);
        }
        scores[i] = (unsigned char)score;
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

// Position of flat pixel `i` when it lies in its level's detection area.
struct AreaPixel {
    int level, x, y, cell;
    bool inside;
};

__device__ __forceinline__ AreaPixel area_pixel(const OrbLevel* levels, int n_levels, int i) {
    AreaPixel a;
    a.level = level_of(levels, n_levels, i);
    const OrbLevel& lv = levels[a.level];
    int local = i - lv.offset;
    a.y = local / lv.width;
    a.x = local - a.y * lv.width;
    a.inside = a.x >= lv.edge && a.x < lv.width - lv.edge && a.y >= lv.edge && a.y < lv.height - lv.edge;
    a.cell = a.inside ? ((a.y - lv.edge) / lv.cell_h) * lv.n_cols + (a.x - lv.edge) / lv.cell_w : 0;
    return a;
}

// Grid distribution: marks the cells where some pixel survives NMS at `fast_threshold`
// (those cells use it; the others retry at `min_fast_threshold`). `cell_flags` starts at 0.
extern "C" __global__ void orb_cell_flags(
    const unsigned char* __restrict__ scores,
    const OrbLevel* __restrict__ level_table,
    int n_levels,
    int fast_threshold,
    unsigned int* cell_flags,
    int total_pixels) {
    __shared__ OrbLevel levels[ORB_MAX_LEVELS];
    load_levels(levels, level_table, n_levels);
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total_pixels; i += gridDim.x * blockDim.x) {
        AreaPixel a = area_pixel(levels, n_levels, i);
        if (a.inside && survives_nms(scores + i, levels[a.level].width, fast_threshold))
            cell_flags[levels[a.level].cell_offset + a.cell] = 1u;  // same value from every writer
    }
}

// Harris ranking key: R = 25 (a b - c^2) - (a + b)^2 over the 7x7 window, exact in i64.
__device__ long long harris_key(const unsigned char* p, int w) {
    int a = 0, b = 0, c = 0;
#pragma unroll
    for (int dy = -3; dy <= 3; ++dy) {
#pragma unroll
        for (int dx = -3; dx <= 3; ++dx) {
            const unsigned char* q = p + dy * w + dx;
            int ix = 2 * (q[1] - q[-1]) + (q[-w + 1] - q[-w - 1]) + (q[w + 1] - q[w - 1]);
            int iy = 2 * (q[w] - q[-w]) + (q[w - 1] - q[-w - 1]) + (q[w + 1] - q[-w + 1]);
            a += ix * ix;
            b += iy * iy;
            c += ix * iy;
        }
    }
    long long la = a, lb = b, lc = c;
    return 25 * (la * lb - lc * lc) - (la + lb) * (la + lb);
}

// Appends every NMS survivor (at its cell's threshold) to its level's candidate list
// with warp-aggregated atomics, counts it in its cell and in its level's histogram of
// FAST scores (the pre-filter's input, orb_prefilter_cut). The FAST ranking key is
// written here; the Harris key is left to orb_candidate_keys, after the pre-filter,
// where every lane of a warp has a candidate (here few lanes survive NMS).
extern "C" __global__ void orb_candidates(
    const unsigned char* __restrict__ scores,
    const OrbLevel* __restrict__ level_table,
    int n_levels,
    const unsigned int* __restrict__ cell_flags,  // null: every cell uses fast_threshold
    int fast_threshold,
    int min_fast_threshold,
    int harris,
    unsigned int* level_counts,         // per level, start at 0
    unsigned int* cell_counts,          // per cell, start at 0
    unsigned int* __restrict__ cand_yx,     // y << 16 | x
    int* __restrict__ cand_cell,            // cell within the level
    unsigned int* __restrict__ cand_in_cell, // arrival order within the cell
    long long* __restrict__ cand_key,
    unsigned char* __restrict__ cand_score,  // FAST score s
    unsigned int* level_hist,           // per level 256 bins of s, start at 0
    int total_pixels) {
    __shared__ OrbLevel levels[ORB_MAX_LEVELS];
    load_levels(levels, level_table, n_levels);
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total_pixels; i += gridDim.x * blockDim.x) {
        AreaPixel a = area_pixel(levels, n_levels, i);
        if (!a.inside) continue;
        const OrbLevel& lv = levels[a.level];
        int threshold = fast_threshold;
        if (cell_flags && !cell_flags[lv.cell_offset + a.cell]) threshold = min_fast_threshold;
        if (!survives_nms(scores + i, lv.width, threshold)) continue;
        unsigned int slot = warp_append(level_counts + a.level, a.level);
        if (slot >= (unsigned int)lv.cand_capacity) continue;  // cannot happen: capacity bounds NMS
        int c = lv.cand_offset + (int)slot;
        cand_yx[c] = ((unsigned int)a.y << 16) | (unsigned int)a.x;
        cand_cell[c] = a.cell;
        cand_in_cell[c] = atomicAdd(cell_counts + lv.cell_offset + a.cell, 1u);
        const unsigned char s = scores[i];
        cand_score[c] = s;
        atomicAdd(level_hist + a.level * 256 + s, 1u);
        if (!harris) cand_key[c] = (long long)s;
    }
}

// The Harris ranking key of every candidate that the FAST pre-filter kept
// (orb_prefilter_keep), one thread per candidate slot.
extern "C" __global__ void orb_candidate_keys(
    const unsigned char* __restrict__ pyramid,
    const OrbLevel* __restrict__ level_table,
    int n_levels,
    const unsigned int* __restrict__ level_counts,
    const unsigned int* __restrict__ cand_yx,
    const unsigned char* __restrict__ cand_kept,
    long long* __restrict__ cand_key,
    int total_slots) {
    __shared__ OrbLevel levels[ORB_MAX_LEVELS];
    load_levels(levels, level_table, n_levels);
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total_slots; i += gridDim.x * blockDim.x) {
        int l = slot_level(levels, n_levels, i);
        const OrbLevel& lv = levels[l];
        if (i - lv.cand_offset >= (int)min(level_counts[l], (unsigned int)lv.cand_capacity) || !cand_kept[i]) continue;
        const unsigned int yx = cand_yx[i];
        const int x = yx & 0xffff, y = yx >> 16;
        cand_key[i] = harris_key(pyramid + lv.offset + y * lv.width + x, lv.width);
    }
}
