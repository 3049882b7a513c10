// FAST-9 on a tile staged in shared memory (docs/orb-reference.md section 2): the ring,
// OpenCV's pre-test, the corner decision and the score s(p), the largest t at which
// a pixel is a corner. A pixel is a corner at t exactly when s(p) >= t, so on GPUs
// that compute the score in few instructions the score is the decision
// (FAST_SCORE_DECIDES); elsewhere bright/dark masks and the reference's arc table
// decide, and only the corners are scored.
#pragma once

// Offset of ring pixel i (OpenCV's offsets16 order) in a tile of row pitch `pitch`;
// constant after unrolling, so the offsets fold into the loads.
template <int pitch>
__device__ __forceinline__ int ring_offset(int i) {
    constexpr int dx[16] = {0, 1, 2, 3, 3, 3, 2, 1, 0, -1, -2, -3, -3, -3, -2, -1};
    constexpr int dy[16] = {3, 3, 2, 1, 0, -1, -2, -3, -3, -3, -2, -1, 0, 1, 2, 3};
    return dy[i] * pitch + dx[i];
}

// s(p) over the 16 arcs A of 9 ring pixels: max(min_A(r - c), min_A(c - r)) - 1 =
// max(max_A min_A r - c, c - min_A max_A r) - 1, negative where the pixel is no corner
// at 0. Arcs of 3, then arcs of 9 as three arcs of 3, by three-input min/max.
#if __CUDA_ARCH__ == 900 || __CUDA_ARCH__ == 1000 || __CUDA_ARCH__ == 1030
// These GPUs have three-input min/max of u16x2 pairs as single DPX instructions
// (__vimin3_u16x2, __vimax3_u16x2). A ring pixel r becomes the pair (r, 255 - r), so
// one minimum gives an arc's darkest pixel in the low half and 255 - its brightest in
// the high half: both sides of the score in one instruction per step. A round of 32
// pre-test survivors takes 96 instructions on sm_90, where the masks and the table
// take 152 to decide (and the corners then need their score all the same).
#define FAST_SCORE_DECIDES 1

__device__ __forceinline__ unsigned int ring_pair(unsigned int r) { return r * 0xffff0001u + 0x00ff0000u; }

template <int pitch>
__device__ __forceinline__ int fast_score(const unsigned char* p) {
    unsigned int pairs[16], arcs3[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) pairs[i] = ring_pair(p[ring_offset<pitch>(i)]);
#pragma unroll
    for (int i = 0; i < 16; ++i) arcs3[i] = __vimin3_u16x2(pairs[i], pairs[(i + 1) & 15], pairs[(i + 2) & 15]);
    unsigned int best = 0;  // low: max over arcs of their minimum; high: 255 - min of their maximum
#pragma unroll
    for (int i = 0; i < 16; i += 2)
        best = __vimax3_u16x2(best, __vimin3_u16x2(arcs3[i], arcs3[(i + 3) & 15], arcs3[(i + 6) & 15]),
                              __vimin3_u16x2(arcs3[i + 1], arcs3[(i + 4) & 15], arcs3[(i + 7) & 15]));
    const int c = p[0];
    return max((int)(best & 0xffffu) - c, (int)(best >> 16) - (255 - c)) - 1;
}
#else
// Elsewhere (Jetson's sm_72, sm_87 and sm_110 among them) DPX is emulated: a 32-bit
// three-input min/max takes two instructions, a u16x2 one works half by half. There
// the score of every pre-test survivor would cost more than the masks' decision (246
// against 213 instructions a round of 32 on sm_87), so the masks decide.
#define FAST_SCORE_DECIDES 0

#define ARC_WORDS 2048  // 65,536 bits: ARC[m] = m has 9+ circularly contiguous set bits

__device__ __forceinline__ bool arc_lookup(const unsigned int* arc, unsigned int mask) {
    return (__popc(mask) >= 9) && ((arc[mask >> 5] >> (mask & 31u)) & 1u);
}

// The ring pixels of the pixel at `p`, packed four per word: byte k of word w = ring
// pixel 4k + w (the masks' input; in this order ring_mask gathers the mask bits in
// ring order with one shift and one logic op per word).
template <int pitch>
__device__ __forceinline__ void load_ring(const unsigned char* p, unsigned int* ring) {
#pragma unroll
    for (int w = 0; w < 4; ++w) {
        unsigned int word = 0;
#pragma unroll
        for (int k = 0; k < 4; ++k) word |= (unsigned int)p[ring_offset<pitch>(4 * k + w)] << (8 * k);
        ring[w] = word;
    }
}

#define BYTE_TOPS 0x80808080u
#define BYTE_LOW7 0x7f7f7f7fu
#define BYTE_ONES 0x01010101u

// Unsigned a > b in every byte, valid in each byte's top bit only (the other bits are
// garbage, ring_mask drops them); `b_low` is (b & 0x7f7f7f7f) + 0x01010101. Per byte,
// (a | 0x80) - ((b & 0x7f) + 1) stays within 0..254, so no borrow crosses bytes, and
// its top bit says whether a's low seven bits exceed b's; the top bits of a and b then
// decide by majority (a's set and b's clear: greater; equal: the low bits' answer).
// These GPUs have no byte-SIMD compare: __vcmpgtu4 is emulated in 6 instructions plus 4 to
// turn its 0x00 / 0xff bytes into bits; this takes 3.
__device__ __forceinline__ unsigned int bytes_greater(unsigned int a, unsigned int b, unsigned int b_low) {
    const unsigned int low = (a | BYTE_TOPS) - b_low;
    return (a & ~b) | (low & (a | ~b));  // majority(a, ~b, low): one LOP3
}

// The 16-bit mask (bit i = ring pixel i) of bytes_greater's top bits over the four
// ring words of load_ring: the top bit of byte k of word w moves to bit 8k + w, then
// the bytes' nibbles fold into 16 bits.
__device__ __forceinline__ unsigned int ring_mask(const unsigned int* greater) {
    unsigned int nibbles = 0;
#pragma unroll
    for (int w = 0; w < 4; ++w) nibbles |= (greater[w] >> (7 - w)) & (BYTE_ONES << w);
    const unsigned int pairs = nibbles | (nibbles >> 4);  // byte 0: pixels 0-7, byte 2: 8-15
    return __byte_perm(pairs, 0u, 0x4420);
}

// The corner decision at `threshold`: bright/dark 16-bit masks without branches, at
// least 9 set bits, then the arc table.
__device__ __forceinline__ bool is_corner(const unsigned int* ring, int c, const unsigned int* arc, int threshold) {
    // c + t and c - t saturate to 255 and 0, where "r > 255" and "r < 0" are false,
    // exactly as the i32 comparisons of the reference.
    const unsigned int above = (unsigned int)min(c + threshold, 255) * BYTE_ONES;
    const unsigned int below = (unsigned int)max(c - threshold, 0) * BYTE_ONES;
    const unsigned int above_low = (above & BYTE_LOW7) + BYTE_ONES;
    unsigned int brighter[4], darker[4];
#pragma unroll
    for (int w = 0; w < 4; ++w) {
        brighter[w] = bytes_greater(ring[w], above, above_low);
        darker[w] = bytes_greater(below, ring[w], (ring[w] & BYTE_LOW7) + BYTE_ONES);
    }
    return arc_lookup(arc, ring_mask(brighter)) || arc_lookup(arc, ring_mask(darker));
}

// Each side in its own 32-bit values.
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
#endif

// A necessary condition for a corner at `threshold` (OpenCV's first FAST test): an arc
// of 9 ring pixels holds pixel 0 or 8 and pixel 4 or 12, so all of one of those pairs
// cannot be on the wrong side. It reads 5 pixels instead of 17 and rejects 73 to 93 %
// of the pixels of the four bench images (graf1, leuvenA, basketball1, rubberwhale1)
// at 1080p, threshold 7.
template <int pitch>
__device__ __forceinline__ bool may_be_corner(const unsigned char* p, int threshold) {
    const int c = p[0];
    const int r0 = p[ring_offset<pitch>(0)], r4 = p[ring_offset<pitch>(4)];
    const int r8 = p[ring_offset<pitch>(8)], r12 = p[ring_offset<pitch>(12)];
    const bool bright = min(max(r0, r8), max(r4, r12)) > c + threshold;
    const bool dark = max(min(r0, r8), min(r4, r12)) < c - threshold;
    return bright || dark;
}
