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

// Each lane's nearest two among train descriptors first, first + 1, ... in chunks of
// 32 taken every `step` descriptors (a warp's slice of the train set when several
// warps share it), the whole warp working together: lane s loads train descriptor
// base + s (one coalesced load per chunk), then every lane compares against it through
// shuffles. All 32 lanes must call this.
__device__ __forceinline__ Best2 warp_best2(const unsigned int* desc, const unsigned int* __restrict__ train,
                                            int n_train, int first, int step) {
    const int lane = threadIdx.x & 31;
    Best2 best = best2_empty();
    for (int base = first; base < n_train; base += step) {
        unsigned int theirs[DESC_WORDS];
        const int j = base + lane;
#pragma unroll
        for (int w = 0; w < DESC_WORDS; ++w) theirs[w] = j < n_train ? train[j * DESC_WORDS + w] : 0u;
        const int count = min(32, n_train - base);
        for (int s = 0; s < count; ++s) {
            int d = 0;
#pragma unroll
            for (int w = 0; w < DESC_WORDS; ++w) d += __popc(desc[w] ^ __shfl_sync(0xffffffffu, theirs[w], s));
            best2_offer(best, base + s, d);
        }
    }
    return best;
}
