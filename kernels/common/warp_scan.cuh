// The inclusive prefix sum over a warp's lanes.
#pragma once

// The sum of `value` over lanes 0..lane of the warp (every lane takes part).
template <typename T>
__device__ __forceinline__ T warp_inclusive_sum(T value) {
    const int lane = (int)(threadIdx.x & 31u);
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
        const T other = __shfl_up_sync(0xffffffffu, value, offset);
        if (lane >= offset) value += other;
    }
    return value;
}
