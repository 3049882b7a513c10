// A barrier across all blocks of a persistent grid. Sound only when every block of
// the grid is resident at once: the host launches these kernels cooperatively
// (cuLaunchCooperativeKernel), which refuses a grid larger than the device holds.
#pragma once

// GRID_BARRIER_GENERATION (a -D define from src/cuda/abi.rs, which sizes the buffer):
// the word of the generation, on its own 128-byte line, so that the blocks polling it
// do not queue behind the arrivals' atomics on the counter's line.

// `state[0]` counts arrivals (returns to 0 after each barrier),
// `state[GRID_BARRIER_GENERATION]` is the generation; both start at 0 when the buffer
// is allocated.
__device__ __forceinline__ void grid_barrier(unsigned int* state) {
    __syncthreads();
    if (threadIdx.x == 0) {
        volatile unsigned int* generation = state + GRID_BARRIER_GENERATION;
        unsigned int seen = *generation;
        __threadfence();
        unsigned int blocks = gridDim.x * gridDim.y * gridDim.z;
        if (atomicAdd(state, 1u) == blocks - 1) {
            state[0] = 0;
            __threadfence();
            atomicAdd(state + GRID_BARRIER_GENERATION, 1u);
        } else {
            while (*generation == seen) { __nanosleep(32); }
        }
        __threadfence();
    }
    __syncthreads();
}
