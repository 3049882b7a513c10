// The Harris ranking key of docs/orb-reference.md section 4.
#pragma once

// R = 25 (a b - c^2) - (a + b)^2 over the 7x7 window around `p`, exact in i64.
__device__ __forceinline__ long long harris_key(const unsigned char* p, int w) {
    int a = 0, b = 0, c = 0;
#pragma unroll
    for (int dy = -3; dy <= 3; ++dy) {
#pragma unroll
        for (int dx = -3; dx <= 3; ++dx) {
            const unsigned char* q = p + dy * w + dx;
            int ix = 2 * (q[1] - q[-1]) + (q[-w + 1] - q[-w - 1]) + (q[w + 1] - q[w - 1]);
            int iy = 2 * (q[w] - q[-w]) + (q[w - 1] - q[-w - 1]) + (q[w + 1] - q[-w + 1]);
            a += ix * ix;
            b += iy * iy;
            c += ix * iy;
        }
    }
    long long la = a, lb = b, lc = c;
    return 25 * (la * lb - lc * lc) - (la + lb) * (la + lb);
}
