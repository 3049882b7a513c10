// Brute-force Hamming matching of 256-bit descriptors, k = 2, and the mutual
// cross-check. One thread per query; train descriptors staged in shared memory tiles.
#include "common/hamming.cuh"

#define TILE 128

extern "C" __global__ void match_hamming_knn2(
    const unsigned int* __restrict__ query, int n_query,
    const unsigned int* __restrict__ train, int n_train,
    int3* __restrict__ out) {                 // (best index, best, second best)
    __shared__ unsigned int tile[TILE * DESC_WORDS];
    const int q = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int mine[DESC_WORDS];
#pragma unroll
    for (int w = 0; w < DESC_WORDS; ++w) mine[w] = q < n_query ? query[q * DESC_WORDS + w] : 0u;
    Best2 best = best2_empty();
    for (int base = 0; base < n_train; base += TILE) {
        int count = min(TILE, n_train - base);
        __syncthreads();
        for (int i = threadIdx.x; i < count * DESC_WORDS; i += blockDim.x) tile[i] = train[base * DESC_WORDS + i];
        __syncthreads();
        for (int j = 0; j < count; ++j) best2_offer(best, base + j, hamming256(mine, tile + j * DESC_WORDS));
    }
    if (q < n_query) out[q] = make_int3(best.best_index, best.best, best.second);
}

// Keeps a query's best match only if that train descriptor's best is the query back.
extern "C" __global__ void match_cross_check(
    int3* __restrict__ forward, int n_query, const int3* __restrict__ backward) {
    int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= n_query) return;
    int t = forward[q].x;
    if (t >= 0 && backward[t].x != q) forward[q].x = -1;
}
