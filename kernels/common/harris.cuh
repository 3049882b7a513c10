// The Harris ranking key of docs/orb-reference.md section 4.
#pragma once

// The 9 pixels from `q` on, as three aligned word loads (the lanes of a warp read
// different keypoints' rows, so each load is its own memory request: a third of the
// requests of byte loads). The words reach at most 3 bytes past the 9th pixel, which
// lies within the level for a keypoint inside the edge.
__device__ __forceinline__ void load_nine(const unsigned char* q, int (&v)[9]) {
    const unsigned int shift = (unsigned int)reinterpret_cast<size_t>(q) & 3u;
    const unsigned int* words = reinterpret_cast<const unsigned int*>(q - shift);
    const unsigned int w0 = __ldg(words), w1 = __ldg(words + 1), w2 = __ldg(words + 2);
    const unsigned int low = __funnelshift_r(w0, w1, 8 * shift), high = __funnelshift_r(w1, w2, 8 * shift);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        v[i] = (low >> (8 * i)) & 0xff;
        v[i + 4] = (high >> (8 * i)) & 0xff;
    }
    v[8] = (w2 >> (8 * shift)) & 0xff;
}

// One row (dy) of the 7x7 window around `p`: adds its sums of ix^2, iy^2 and ix iy.
// The 3 x 9 pixels it reads are loaded once each.
__device__ __forceinline__ void harris_row_sums(const unsigned char* p, int w, int dy, int& a, int& b, int& c) {
    int above[9], row[9], below[9];  // columns -4 .. 4 of rows dy - 1, dy, dy + 1
    const unsigned char* q = p + dy * w - 4;
    load_nine(q - w, above);
    load_nine(q, row);
    load_nine(q + w, below);
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
