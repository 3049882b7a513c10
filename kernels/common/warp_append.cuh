// Stream compaction with warp-aggregated atomics: the lanes of a warp that append to
// the same counter elect one leader, which reserves all their slots with one atomicAdd.
#pragma once

// Returns this lane's slot in the list counted by `counter`. Every lane that calls it
// appends one item; `key` groups lanes that share a counter (lanes with equal keys
// must pass the same `counter`).
__device__ __forceinline__ unsigned int warp_append(unsigned int* counter, int key) {
    unsigned int active = __activemask();
    unsigned int peers = __match_any_sync(active, key);
    int leader = __ffs(peers) - 1;
    unsigned int lane = threadIdx.x & 31u;
    unsigned int base = 0;
    if ((int)lane == leader) base = atomicAdd(counter, (unsigned int)__popc(peers));
    base = __shfl_sync(peers, base, leader);
    return base + __popc(peers & ((1u << lane) - 1u));
}
