// 256-bit descriptors as eight 32-bit words: Hamming distance, and the warp-wide k = 2 search.
// DESC_WORDS, words of a descriptor, is a -D define (src/cuda/abi.rs).
#pragma once

#include "common/abi.cuh"
#include "common/best2.cuh"

// A query's (best index, best, second best) as the host reads it (`Knn2`, src/cuda/abi.rs).
ABI_SIZE(int3, 12);
ABI_OFFSET(int3, x, 0);
ABI_OFFSET(int3, y, 4);
ABI_OFFSET(int3, z, 8);

__device__ __forceinline__ int hamming256(const unsigned int* a, const unsigned int* b) {
    int d = 0;
#pragma unroll
    for (int w = 0; w < DESC_WORDS; ++w) d += __popc(a[w] ^ b[w]);
    return d;
}

// The smallest of the 32 lanes' values: one instruction from sm_80 on, five shuffles
// before it (sm_72).
__device__ __forceinline__ unsigned int warp_min(unsigned int value) {
#if __CUDA_ARCH__ >= 800
    return __reduce_min_sync(0xffffffffu, value);
#else
    for (int offset = 16; offset > 0; offset >>= 1) value = min(value, __shfl_xor_sync(0xffffffffu, value, offset));
    return value;
#endif
}

// A train descriptor's nearest query as `distance << BACKWARD_QUERY_BITS | query`
// (BACKWARD_QUERY_BITS is a -D define, src/cuda/abi.rs): the smallest value is the
// smallest distance, then the lowest query index, the CPU matcher's rule.
static_assert(32 * DESC_WORDS < (1 << (32 - BACKWARD_QUERY_BITS)), "a distance fits above the query index");

// Each lane's nearest two among train descriptors first, first + 1, ... in chunks of
// 32 taken every `step` descriptors (a warp's slice of the train set when several
// warps share it), the whole warp working together: lane s loads train descriptor
// base + s (one coalesced load per chunk), then every lane compares against it through
// shuffles. All 32 lanes must call this.
//
// BACKWARD: the same distances also give each train descriptor of the sweep its
// nearest query among the lanes, folded into backward_best[t] by atomicMin (preset to
// all ones by the caller); `query` is the lane's query index, or -1 for a lane without
// one, which never wins.
template <bool BACKWARD = false>
__device__ __forceinline__ Best2 warp_best2(const unsigned int* desc, const unsigned int* __restrict__ train,
                                            int n_train, int first, int step, int query = -1,
                                            unsigned int* backward_best = nullptr) {
    const int lane = threadIdx.x & 31;
    // All ones whatever the distance it is or-ed with.
    const unsigned int query_bits = query >= 0 ? (unsigned int)query : 0xffffffffu;
    Best2 best = best2_empty();
    for (int base = first; base < n_train; base += step) {
        unsigned int theirs[DESC_WORDS];
        const int j = base + lane;
#pragma unroll
        for (int w = 0; w < DESC_WORDS; ++w) theirs[w] = j < n_train ? train[j * DESC_WORDS + w] : 0u;
        const int count = min(32, n_train - base);
        unsigned int nearest = 0xffffffffu;  // train descriptor j's nearest query (step s = lane)
        for (int s = 0; s < count; ++s) {
            int d = 0;
#pragma unroll
            for (int w = 0; w < DESC_WORDS; ++w) d += __popc(desc[w] ^ __shfl_sync(0xffffffffu, theirs[w], s));
            best2_offer(best, base + s, d);
            if (BACKWARD) {
                const unsigned int warp_nearest = warp_min(((unsigned int)d << BACKWARD_QUERY_BITS) | query_bits);
                if (lane == s) nearest = warp_nearest;
            }
        }
        if (BACKWARD && j < n_train) atomicMin(&backward_best[j], nearest);
    }
    return best;
}
