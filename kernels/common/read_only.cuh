// Loads through the non-coherent (read-only) path, for data no thread writes while the
// kernel runs. NVVM takes that path by itself for a const __restrict__ kernel parameter;
// the kernels' parameters are members of one struct (common/abi.cuh), which __restrict__
// does not reach (a __restrict__ copy of one counts only in the simplest kernels), so
// their read-only loads ask for it.
#pragma once

// A 64-bit integer in one load: NVRTC 13 splits __ldg of one in two for sm_100 and later.
__device__ __forceinline__ long long ldg_i64(const long long* p) {
    const int2 halves = __ldg(reinterpret_cast<const int2*>(p));
    return (long long)(unsigned int)halves.x | (long long)halves.y << 32;
}

// *p for a struct of whole 4-byte words, a word at a time.
template <typename T>
__device__ __forceinline__ T ldg_words(const T* p) {
    static_assert(sizeof(T) % sizeof(unsigned int) == 0, "a struct of whole words");
    T value;
    const unsigned int* from = reinterpret_cast<const unsigned int*>(p);
    unsigned int* to = reinterpret_cast<unsigned int*>(&value);
#pragma unroll
    for (unsigned int w = 0; w < sizeof(T) / sizeof(unsigned int); ++w) to[w] = __ldg(from + w);
    return value;
}
