// Four neighbouring u8 pixels of a row packed in one word (pixel x + k in byte k), and
// their store: one word store where the row's pixels are word-aligned and all four lie
// inside it, else byte by byte (kernels/orb/pyramid.cu's resize, kernels/orb/detect.cu's
// smoothing).
#pragma once

// Stores the first min(inside, 4) bytes of `pixels` at `at`.
__device__ __forceinline__ void store_pixels(unsigned char* at, int inside, unsigned int pixels) {
    if (inside >= 4 && (reinterpret_cast<size_t>(at) & 3u) == 0) {
        *reinterpret_cast<unsigned int*>(at) = pixels;
        return;
    }
#pragma unroll
    for (int k = 0; k < 4; ++k)
        if (k < inside) at[k] = (unsigned char)(pixels >> (8 * k));
}
