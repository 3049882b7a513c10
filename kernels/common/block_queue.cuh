// A work queue for blocks that each take one item at a time (a keypoint's window):
// a block that finishes early takes the next item instead of waiting for a fixed
// share, so windows of uneven sizes no longer leave SMs idle while a few blocks work
// through their last large items. The counter starts at zero each frame.
#pragma once

// The block's next item; every thread of the block must call it together, and the
// block must pass a __syncthreads() between reading this item and the next call.
__device__ __forceinline__ int block_queue_take(unsigned int* counter) {
    __shared__ int item;
    if (threadIdx.x == 0) item = (int)atomicAdd(counter, 1u);
    __syncthreads();
    return item;
}
