// Brute-force Hamming matching of 256-bit descriptors, k = 2, and the mutual
// cross-check. A block searches for 32 queries, one per lane; its MATCH_WARPS warps
// each sweep a slice of the train set, so a frame's 2000 queries keep every SM busy.
// MATCH_WARPS is a -D define (src/cuda/abi.rs).
#include "common/hamming.cuh"
#include "common/match_params.cuh"

// The best and second-best train descriptor of each of the block's 32 queries (ties:
// lower index): warp w sweeps train chunks w, w + MATCH_WARPS, ..., then warp 0 merges
// the slices.
__device__ void hamming_knn2(
    const unsigned int* __restrict__ query, int n_query,
    const unsigned int* __restrict__ train, int n_train,
    int3* __restrict__ out) {                 // (best index, best, second best)
    __shared__ Best2 slices[MATCH_WARPS][32];
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    const int q = blockIdx.x * 32 + lane;
    unsigned int mine[DESC_WORDS];
#pragma unroll
    for (int w = 0; w < DESC_WORDS; ++w) mine[w] = q < n_query ? query[q * DESC_WORDS + w] : 0u;
    slices[wid][lane] = warp_best2(mine, train, n_train, wid * 32, MATCH_WARPS * 32);
    __syncthreads();
    if (wid == 0 && q < n_query) {
        Best2 best = slices[0][lane];
        for (int s = 1; s < MATCH_WARPS; ++s) best2_merge(best, slices[s][lane]);
        out[q] = make_int3(best.best_index, best.best, best.second);
    }
}

// Keeps a query's best match only if that train descriptor's best is the query back.
__device__ void hamming_cross_check(int3* __restrict__ forward, int n_query, const int3* __restrict__ backward) {
    int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= n_query) return;
    int t = forward[q].x;
    if (t >= 0 && backward[t].x != q) forward[q].x = -1;
}

extern "C" __global__ void match_hamming_knn2(const HammingKnn2Params p) {
    hamming_knn2(p.query, p.n_query, p.train, p.n_train, p.out);
}

extern "C" __global__ void match_cross_check(const CrossCheckParams p) {
    hamming_cross_check(p.forward, p.n_query, p.backward);
}

// The same two for sets whose sizes the GPU wrote (a frame's keypoint count): the
// counts are read on the device, so a CUDA graph sized for the largest sets replays
// them for any count.
extern "C" __global__ void match_hamming_knn2_counted(const HammingKnn2CountedParams p) {
    hamming_knn2(p.query, (int)*p.n_query, p.train, (int)*p.n_train, p.out);
}

extern "C" __global__ void match_cross_check_counted(const CrossCheckCountedParams p) {
    hamming_cross_check(p.forward, (int)*p.n_query, p.backward);
}

// The cross-check against a backward search that kept each train descriptor's nearest
// query only (orb_describe's, packed as common/hamming.cuh says): the same rule.
extern "C" __global__ void match_cross_check_best_counted(const CrossCheckBestCountedParams p) {
    const int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= (int)*p.n_query) return;
    const int t = p.forward[q].x;
    if (t >= 0 && (int)(p.backward_best[t] & ((1u << BACKWARD_QUERY_BITS) - 1u)) != q) p.forward[q].x = -1;
}
