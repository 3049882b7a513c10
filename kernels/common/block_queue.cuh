// A work queue for blocks that each take one keypoint's window at a time: a block that
// finishes early takes the next keypoint instead of waiting for a fixed share, and the
// widest windows go first, so the frame does not end on a few blocks working through
// their last large windows while the other SMs idle. A window's area grows with the
// keypoint's scale in octave pixels, which its Gaussian layer sets within a factor of
// 2^(1/3): item t of the queue is keypoint t mod n on pass t / n, and pass p takes the
// keypoints of layer `layers - p` (the last pass every lower layer). When the grid has a
// block for every keypoint, block b takes keypoint b alone: all run at once, so the
// order cannot matter, and the queue's atomics (one per item and pass, all on one word)
// would only delay the start. The counter starts at zero each frame.
#pragma once

#include "common/sift_octaves.cuh"

// The block's next keypoint after `done` (-1 on the first call), or n when none is
// left; every thread of the block must call it together, and the block must pass a
// __syncthreads() between reading this keypoint and the next call.
__device__ __forceinline__ int block_queue_take(unsigned int* counter, int n, int layers,
                                                const int* __restrict__ octave_layer, int done) {
    if (n <= (int)gridDim.x) return done < 0 ? (int)blockIdx.x : n;
    __shared__ int item;
    if (threadIdx.x == 0) {
        int taken = n;
        const unsigned int items = (unsigned int)n * (unsigned int)layers;
        for (unsigned int t = atomicAdd(counter, 1u); t < items; t = atomicAdd(counter, 1u)) {
            const int pass = (int)(t / (unsigned int)n), k = (int)(t % (unsigned int)n);
            const int widest_first = min(max(layers - packed_layer(__ldg(&octave_layer[k])), 0), layers - 1);
            if (widest_first == pass) {
                taken = k;
                break;
            }
        }
        item = taken;
    }
    __syncthreads();
    return item;
}
