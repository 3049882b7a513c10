// Brute-force Hamming matching of 256-bit descriptors, k = 2, and the mutual
// cross-check. One thread per query; train descriptors staged in shared memory tiles.
#include "common/hamming.cuh"

#define TILE 128

// One thread per query: its best and second-best train descriptor (ties: lower index).
__device__ void hamming_knn2(
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
__device__ void hamming_cross_check(int3* __restrict__ forward, int n_query, const int3* __restrict__ backward) {
    int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= n_query) return;
    int t = forward[q].x;
    if (t >= 0 && backward[t].x != q) forward[q].x = -1;
}

extern "C" __global__ void match_hamming_knn2(
    const unsigned int* __restrict__ query, int n_query,
    const unsigned int* __restrict__ train, int n_train,
    int3* __restrict__ out) {
    hamming_knn2(query, n_query, train, n_train, out);
}

extern "C" __global__ void match_cross_check(
    int3* __restrict__ forward, int n_query, const int3* __restrict__ backward) {
    hamming_cross_check(forward, n_query, backward);
}

// The same two for sets whose sizes the GPU wrote (a frame's keypoint count): the
// counts are read on the device, so a CUDA graph sized for the largest sets replays
// them for any count.
extern "C" __global__ void match_hamming_knn2_counted(
    const unsigned int* __restrict__ query, const unsigned int* __restrict__ n_query,
    const unsigned int* __restrict__ train, const unsigned int* __restrict__ n_train,
    int3* __restrict__ out) {
    hamming_knn2(query, (int)*n_query, train, (int)*n_train, out);
}

extern "C" __global__ void match_cross_check_counted(
    int3* __restrict__ forward, const unsigned int* __restrict__ n_query,
    const int3* __restrict__ backward) {
    hamming_cross_check(forward, (int)*n_query, backward);
}
