// The atomic-free multi-key warp reduction: lanes holding equal keys (grouped by
// __match_any_sync) sum their values by shuffles in a tree over the group's lanes,
// and the group's lowest lane, its only writer, receives the sums. The tree's shape
// depends only on which lanes share a key, so sums are reproducible run to run
// (unlike atomicAdd on floats). All 32 lanes must call it together.
#pragma once

// Whether this lane writes for its group.
__device__ __forceinline__ bool reduce_by_key_writer(unsigned int peers) {
    return (__ffs(peers) - 1) == (int)(threadIdx.x & 31u);
}

// Sums `values` over the lanes whose `key` equals this lane's; returns this lane's
// peer mask (use `reduce_by_key_writer` to pick the writer, which holds the sums).
template <int N>
__device__ __forceinline__ unsigned int warp_reduce_by_key(int key, float (&values)[N]) {
    unsigned int lane = threadIdx.x & 31u;
    unsigned int peers = __match_any_sync(0xffffffffu, key);
    // Position among the group's lanes; lanes of the group above this one.
    unsigned int rank = __popc(peers & ((1u << lane) - 1u));
    unsigned int above = peers & (0xfffffffeu << lane);
    while (__any_sync(0xffffffffu, above != 0u)) {
        // The nearest remaining group lane above; with none, -1 reads lane 31 (a shuffle
        // takes its source lane mod 32), a value nobody adds.
        const int next = __ffs(above) - 1;
        // A lane stays in the tree while its position is even (one that left keeps 1).
        const bool even = (rank & 1u) == 0u;
        const bool absorbs = even && above != 0u;
#pragma unroll
        for (int k = 0; k < N; ++k) {
            float other = __shfl_sync(0xffffffffu, values[k], next);
            if (absorbs) values[k] += other;
        }
        // Odd positions handed their sums down: they leave the tree.
        above &= __ballot_sync(0xffffffffu, even);
        rank = even ? rank >> 1 : 1u;
    }
    return peers;
}
