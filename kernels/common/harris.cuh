// The Harris ranking key of docs/orb-reference.md section 4.
#pragma once

// One row (dy) of the 7x7 window around `p`: adds its sums of ix^2, iy^2 and ix iy.
// The 3 x 9 pixels it reads are loaded once each.
__device__ __forceinline__ void harris_row_sums(const unsigned char* p, int w, int dy, int& a, int& b, int& c) {
    int above[9], row[9], below[9];  // columns -4 .. 4 of rows dy - 1, dy, dy + 1
    const unsigned char* q = p + dy * w - 4;
#pragma unroll
    for (int i = 0; i < 9; ++i) {
        above[i] = __ldg(q - w + i);
        row[i] = __ldg(q + i);
        below[i] = __ldg(q + w + i);
    }
#pragma unroll
    for (int i = 1; i <= 7; ++i) {  // dx = i - 4
        int ix = 2 * (row[i + 1] - row[i - 1]) + (above[i + 1] - above[i - 1]) + (below[i + 1] - below[i - 1]);
        int iy = 2 * (below[i] - above[i]) + (below[i - 1] - above[i - 1]) + (below[i + 1] - above[i + 1]);
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
