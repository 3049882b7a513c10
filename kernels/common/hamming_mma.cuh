// The k = 2 search of up to 32 queries against a train set on the tensor cores (sm_80
// on), 16 x 8 Hamming distances per step, where the shuffle-and-popcount sweep of
// common/hamming.cuh pays 8 POPC (16 a cycle an SM) per pair.
//
// sm_80 to sm_90 (Ampere, Ada, Hopper): single-bit MMA (m16n8k256, AND + POPC), one
// instruction for a whole 256-bit descriptor pair: |q ^ t| = |q & ~t| + |~q & t|, two
// MMAs into one accumulator, exact. Lane (g, c) of a quad (g = lane / 4, c = lane % 4)
// holds words c and c + 4 of its rows' queries and of train descriptor g (k = 32c..
// and 128 + 32c..). An H200 issues one m16n8k256 as fast as one 8-bit m16n8k32.
//
// sm_100 on, whose tensor cores have no single-bit MMA (the compiler emulates it), and
// where the 8-bit MMA is native: one 8-bit integer MMA (m16n8k32) per descriptor word.
// A descriptor word is split into bytes of one bit each: bits p, p + 8, p + 16, p + 24
// as the four bytes of one register (one shift and one mask). The query side holds
// -1 for a set bit and +1 for a clear one, the train side 1 and 0, and the accumulator
// starts at the query's bit count |q|; then for query q and train descriptor t,
//     |q| + sum over t's set bits of (q set ? -1 : +1) = |q| + |t| - 2 |q & t| = |q ^ t|,
// exactly, in 32-bit integers. Which bit goes to which k index does not matter so
// long as both sides use the same assignment: lane (g, c) holds, for word s, bits
// c + 8i (i = 0..3) in its first register of each operand and bits c + 4 + 8i in its
// second.
#pragma once

#include "common/best2.cuh"

#if __CUDA_ARCH__ >= 800

// Descriptors of one MMA's n: the train tile a warp takes at a time.
#define MMA_TRAIN_TILE 8
// Queries of one MMA's m.
#define MMA_QUERY_TILE 16

#if __CUDA_ARCH__ < 1000
#define MMA_BINARY 1
// uint4 query operands per lane of a query tile.
#define MMA_FRAGMENTS 1
static_assert(DESC_WORDS == 8, "a descriptor is the k = 256 of one single-bit MMA");

// d += popc(a (16 x 256, row-major) AND b (256 x 8, column-major)), per output.
__device__ __forceinline__ void mma_b1_and(int (&d)[4], const uint4& a, unsigned int b0, unsigned int b1) {
    asm("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
}

// The query operand of query tile `tile` for `lane`: words c and c + 4 of rows g and
// g + 8 of the tile (the MMA's a0, a1, a2, a3). `words[w * 32 + q]` is word w of query q;
// `s` is always 0 (one fragment a lane).
__device__ __forceinline__ uint4 query_fragment(const unsigned int* words, int tile, int s, int lane) {
    const int g = lane >> 2, c = lane & 3, top = tile * MMA_QUERY_TILE + g;
    return make_uint4(words[c * 32 + top], words[c * 32 + top + 8], words[(c + 4) * 32 + top],
                      words[(c + 4) * 32 + top + 8]);
}

// The tile's query operand and its complement, held in registers over the sweep.
struct QueryOperand {
    uint4 bits, complement;
};

__device__ __forceinline__ QueryOperand query_operand(const uint4* fragments, const int*, int, int lane) {
    const uint4 bits = fragments[lane];
    return {bits, make_uint4(~bits.x, ~bits.y, ~bits.z, ~bits.w)};
}

// d: distances of rows g (d[0], d[1]) and g + 8 (d[2], d[3]) to train descriptors
// 2c and 2c + 1 of the tile whose descriptor g is `j` (absent when not `inside`).
__device__ __forceinline__ void tile_distances(const QueryOperand& q, const unsigned int* __restrict__ train, int j,
                                               bool inside, int (&d)[4]) {
    const int c = threadIdx.x & 3;
    unsigned int low = 0u, high = 0u;
    if (inside) {
        low = __ldg(&train[(size_t)j * DESC_WORDS + c]);
        high = __ldg(&train[(size_t)j * DESC_WORDS + c + 4]);
    }
    d[0] = d[1] = d[2] = d[3] = 0;
    mma_b1_and(d, q.bits, ~low, ~high);
    mma_b1_and(d, q.complement, low, high);
}
#else
#define MMA_FRAGMENTS DESC_WORDS

__device__ __forceinline__ unsigned int bit_bytes(unsigned int word, int p) { return (word >> p) & 0x01010101u; }

// 0x01 (+1) for a clear bit, 0xff (-1) for a set one: 1 + 0xfe per set byte, no carry.
__device__ __forceinline__ unsigned int sign_bytes(unsigned int word, int p) {
    return 0x01010101u + bit_bytes(word, p) * 0xfeu;
}

// d += a (16 x 32, row-major) x b (32 x 8, column-major), signed 8-bit in, 32-bit sums.
__device__ __forceinline__ void mma_s8(int (&d)[4], const uint4& a, unsigned int b0, unsigned int b1) {
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
}

// The query operand of query tile `tile`, word s, for `lane`: rows g and g + 8 of the
// tile (the MMA's a0/a2 and a1/a3), as sign_bytes. `words[w * 32 + q]` is word w of query q.
__device__ __forceinline__ uint4 query_fragment(const unsigned int* words, int tile, int s, int lane) {
    const int g = lane >> 2, c = lane & 3;
    const unsigned int top = words[s * 32 + tile * MMA_QUERY_TILE + g];
    const unsigned int bottom = words[s * 32 + tile * MMA_QUERY_TILE + g + 8];
    return make_uint4(sign_bytes(top, c), sign_bytes(bottom, c), sign_bytes(top, c + 4), sign_bytes(bottom, c + 4));
}

// The tile's operands, read from shared memory at each MMA rather than held (32
// registers): orb_describe keeps to 40 registers.
struct QueryOperand {
    const uint4* fragments;
    int ones_top, ones_bottom;
};

__device__ __forceinline__ QueryOperand query_operand(const uint4* fragments, const int* ones, int tile, int lane) {
    const int top = tile * MMA_QUERY_TILE + (lane >> 2);
    return {fragments, ones[top], ones[top + 8]};
}

// d: distances of rows g (d[0], d[1]) and g + 8 (d[2], d[3]) to train descriptors
// 2c and 2c + 1 of the tile whose descriptor g is `j` (absent when not `inside`).
__device__ __forceinline__ void tile_distances(const QueryOperand& q, const unsigned int* __restrict__ train, int j,
                                               bool inside, int (&d)[4]) {
    const int lane = threadIdx.x & 31, c = lane & 3;
    unsigned int w[DESC_WORDS];
    if (inside) {
        const uint4* row = reinterpret_cast<const uint4*>(train + (size_t)j * DESC_WORDS);
        const uint4 low = __ldg(row), high = __ldg(row + 1);
        w[0] = low.x, w[1] = low.y, w[2] = low.z, w[3] = low.w;
        w[4] = high.x, w[5] = high.y, w[6] = high.z, w[7] = high.w;
    } else {
#pragma unroll
        for (int s = 0; s < DESC_WORDS; ++s) w[s] = 0u;
    }
    d[0] = d[1] = q.ones_top;
    d[2] = d[3] = q.ones_bottom;
#pragma unroll
    for (int s = 0; s < DESC_WORDS; ++s)
        mma_s8(d, q.fragments[s * 32 + lane], bit_bytes(w[s], c), bit_bytes(w[s], c + 4));
}
#endif

// A train descriptor's nearest query as `distance << BACKWARD_QUERY_BITS | query`; all
// ones for a row without a query (`query_bits` all ones), which never wins.
__device__ __forceinline__ unsigned int backward_key(int distance, unsigned int query_bits) {
    return ((unsigned int)distance << BACKWARD_QUERY_BITS) | query_bits;
}

// A query's two nearest train descriptors as keys `distance << BACKWARD_QUERY_BITS |
// train index` (train indices share the queries' bound, ORB_MAX_FEATURES): the smaller
// key is the nearer descriptor and, at equal distance, the lower index, the CPU
// matcher's rule, whatever order the candidates come in. All ones: none. An offer is
// three integer min/max instead of Best2's compares and selects of three fields.
struct NearestKeys {
    unsigned int best, second;
};

__device__ __forceinline__ unsigned int nearest_key(int distance, int index) {
    return (unsigned int)distance * (1u << BACKWARD_QUERY_BITS) + (unsigned int)index;  // one IMAD
}

__device__ __forceinline__ void nearest_offer(NearestKeys& n, unsigned int key) {
    n.second = min(n.second, max(n.best, key));
    n.best = min(n.best, key);
}

// Folds in the keys of lane (this lane ^ lane_mask), which saw other candidates.
__device__ __forceinline__ void nearest_merge_lane(NearestKeys& n, int lane_mask) {
    const unsigned int best = __shfl_xor_sync(0xffffffffu, n.best, lane_mask);
    const unsigned int second = __shfl_xor_sync(0xffffffffu, n.second, lane_mask);
    n.second = min(min(n.second, second), max(n.best, best));
    n.best = min(n.best, best);
}

__device__ __forceinline__ Best2 nearest_best2(const NearestKeys& n) {
    const unsigned int index_mask = (1u << BACKWARD_QUERY_BITS) - 1u;
    Best2 b = best2_empty();
    if (n.best != 0xffffffffu) {
        b.best_index = (int)(n.best & index_mask);
        b.best = (int)(n.best >> BACKWARD_QUERY_BITS);
    }
    if (n.second != 0xffffffffu) b.second = (int)(n.second >> BACKWARD_QUERY_BITS);
    return b;
}

// One train tile t of the sweep below: its distances offered to the rows' nearest two
// and, with BACKWARD, each of its train descriptors' nearest query of the tile folded
// into backward_best. PARTIAL: the set's last tile, whose columns past n_train offer
// nothing (every other tile is whole and skips those checks).
template <bool BACKWARD, bool PARTIAL>
__device__ __forceinline__ void offer_train_tile(const QueryOperand& query, const unsigned int* __restrict__ train,
                                                 int n_train, int t, unsigned int bits_top, unsigned int bits_bottom,
                                                 unsigned int* backward_best, NearestKeys (&nearest)[2]) {
    const int lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
    // This lane loads train descriptor t * 8 + g, column g of the MMA's b.
    const int j = t * MMA_TRAIN_TILE + g;
    int d[4];
    tile_distances(query, train, j, !PARTIAL || j < n_train, d);
    // d[0], d[2]: train column `first`, rows top and bottom; d[1], d[3]: first + 1.
    const int first = t * MMA_TRAIN_TILE + 2 * c;
    unsigned int keys[4] = {nearest_key(d[0], first), nearest_key(d[1], first + 1), nearest_key(d[2], first),
                            nearest_key(d[3], first + 1)};
    if (PARTIAL) {
        if (first >= n_train) keys[0] = keys[2] = 0xffffffffu;
        if (first + 1 >= n_train) keys[1] = keys[3] = 0xffffffffu;
    }
    nearest_offer(nearest[0], keys[0]);
    nearest_offer(nearest[0], keys[1]);
    nearest_offer(nearest[1], keys[2]);
    nearest_offer(nearest[1], keys[3]);
    if (BACKWARD) {
        // Columns first and first + 1, each over the tile's 16 rows (the 8 lanes of
        // this c): the first exchange leaves each lane one column (first + (g & 1)),
        // so the two reductions take three shuffles, not six.
        const unsigned int column[2] = {min(backward_key(d[0], bits_top), backward_key(d[2], bits_bottom)),
                                        min(backward_key(d[1], bits_top), backward_key(d[3], bits_bottom))};
        const bool odd = g & 1;
        unsigned int key = min(odd ? column[1] : column[0],
                               __shfl_xor_sync(0xffffffffu, odd ? column[0] : column[1], 4));
        key = min(key, __shfl_xor_sync(0xffffffffu, key, 8));
        key = min(key, __shfl_xor_sync(0xffffffffu, key, 16));
        const int target = first + (int)odd;
        if (g < 2 && key != 0xffffffffu && (!PARTIAL || target < n_train)) atomicMin(&backward_best[target], key);
    }
}

// The nearest two train descriptors of the queries of query tile `tile` among train
// tiles first_tile, first_tile + tile_step, ... (a warp's share of the set), the whole
// warp working together. `fragments[s * 32 + lane]` is the tile's query operand s
// (query_fragment), `ones[q]` query q's set bits (read by the 8-bit path only; the
// single-bit one needs no count), `query_bits[q]` its index for the backward search
// (all ones: no query). Returns the Best2 of rows g and g + 8 of the tile, merged over
// the lanes of the quad. BACKWARD: each train descriptor's nearest query of the tile
// folded into backward_best by atomicMin, as warp_best2 does.
template <bool BACKWARD>
__device__ __forceinline__ void tile_best2_mma(const uint4* fragments, const int* ones, const unsigned int* query_bits,
                                               int tile, const unsigned int* __restrict__ train, int n_train,
                                               int first_tile, int tile_step, unsigned int* backward_best,
                                               Best2 (&best)[2]) {
    const int lane = threadIdx.x & 31, g = lane >> 2;
    const int top = tile * MMA_QUERY_TILE + g, bottom = top + 8;
    const unsigned int bits_top = query_bits[top], bits_bottom = query_bits[bottom];
    const QueryOperand query = query_operand(fragments, ones, tile, lane);
    NearestKeys nearest[2] = {{0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}};
    int t = first_tile;
    for (; (t + 1) * MMA_TRAIN_TILE <= n_train; t += tile_step)
        offer_train_tile<BACKWARD, false>(query, train, n_train, t, bits_top, bits_bottom, backward_best, nearest);
    if (t * MMA_TRAIN_TILE < n_train)
        offer_train_tile<BACKWARD, true>(query, train, n_train, t, bits_top, bits_bottom, backward_best, nearest);
    // The four lanes of a quad saw disjoint columns of the same rows.
#pragma unroll
    for (int r = 0; r < 2; ++r) {
#pragma unroll
        for (int offset = 1; offset < 4; offset <<= 1) nearest_merge_lane(nearest[r], offset);
        best[r] = nearest_best2(nearest[r]);
    }
}

#endif
