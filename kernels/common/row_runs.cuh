// A warp walking a window given as one run of pixels per row: 32 rows at a time, lane
// r holding row r's run (first column, length), the samples of the batch's runs laid
// end to end and taken 32 at a time, so that short rows and the corners of a rotated
// window leave no lane idle and no lane divides to find its pixel.
#pragma once

#include "common/warp_scan.cuh"

// The exclusive prefix sum of `length` over the warp's lanes (this lane's run starts
// at sample `start`); returns the batch's number of samples.
__device__ __forceinline__ int row_runs_scan(int length, int& start) {
    const int end = warp_inclusive_sum(length);
    start = end - length;
    return __shfl_sync(0xffffffffu, end, 31);
}

// The run (lane) that holds sample `sample` of the batch: the last lane whose run starts
// at or before it (starts never decrease, and empty runs start where the next one does).
// Also returns the sample's column. All 32 lanes must call it together.
__device__ __forceinline__ int row_runs_locate(int sample, int start, int first, int& column) {
    int run = 0;
#pragma unroll
    for (int step = 16; step > 0; step >>= 1) {
        if (__shfl_sync(0xffffffffu, start, run + step) <= sample) run += step;
    }
    column = sample + __shfl_sync(0xffffffffu, first - start, run);
    return run;
}
