// 256-bit descriptors as eight 32-bit words; best and second-best tracking for k = 2.
#pragma once

#define DESC_WORDS 8

__device__ __forceinline__ int hamming256(const unsigned int* a, const unsigned int* b) {
    int d = 0;
#pragma unroll
    for (int w = 0; w < DESC_WORDS; ++w) d += __popc(a[w] ^ b[w]);
    return d;
}

// The two nearest train descriptors. Ties keep the lower train index (candidates are
// offered in increasing index), as the CPU matcher does.
struct Best2 {
    int best_index;
    int best;
    int second;
};

__device__ __forceinline__ Best2 best2_empty() {
    Best2 b;
    b.best_index = -1;
    b.best = 0x7fffffff;
    b.second = 0x7fffffff;
    return b;
}

__device__ __forceinline__ void best2_offer(Best2& b, int index, int d) {
    if (d < b.best) {
        b.second = b.best;
        b.best = d;
        b.best_index = index;
    } else if (d < b.second) {
        b.second = d;
    }
}
