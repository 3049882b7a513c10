// The Harris ranking key of docs/orb-reference.md section 4.
#pragma once

// One row (dy) of the 7x7 window around `p`: adds its sums of ix^2, iy^2 and ix iy.
__device__ __forceinline__ void harris_row_sums(const unsigned char* p, int w, int dy, int& a, int& b, int& c) {
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

// R = 25 (a b - c^2) - (a + b)^2, exact in i64.
__device__ __forceinline__ long long harris_response(int a, int b, int c) {
    long long la = a, lb = b, lc = c;
    return 25 * (la * lb - lc * lc) - (la + lb) * (la + lb);
}
