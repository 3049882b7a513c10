// Orientation (intensity centroid) and steered BRIEF in one kernel, with each
// thread's patch in its own shared-memory bank, and Hamming matching fused with
// description (docs/orb-reference.md sections 6-7).
//
// Thread t of a warp stores word w of its patch at patch[w * 32 + t]: bank t only.
// The rotated BRIEF samples are data dependent (different offsets per keypoint), but
// lane t only ever touches bank t, so every access of the warp is conflict-free.
#include "common/levels.cuh"
#include "common/hamming.cuh"

#define PATCH_RADIUS 19                       // rotated 31x31 pattern reaches 18.4 px
#define PATCH_SIDE (2 * PATCH_RADIUS + 1)
#define PATCH_WORDS ((PATCH_SIDE * PATCH_SIDE + 3) / 4)
#define ORIENT_RADIUS 15
#define WARP 32

// The byte at (dy, dx) of this lane's patch.
__device__ __forceinline__ int patch_at(const unsigned int* patch, int lane, int dy, int dx) {
    int index = (dy + PATCH_RADIUS) * PATCH_SIDE + (dx + PATCH_RADIUS);
    return (patch[(index >> 2) * WARP + lane] >> (8 * (index & 3))) & 0xff;
}

// Copies the (2R+1)^2 square around `centre` (a level image with row pitch `width`)
// into this lane's private words.
__device__ __forceinline__ void load_patch(unsigned int* patch, int lane, const unsigned char* centre, int width, int radius) {
    for (int w = 0; w < PATCH_WORDS; ++w) {
        unsigned int word = 0;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            int index = 4 * w + k;
            int dy = index / PATCH_SIDE - PATCH_RADIUS, dx = index % PATCH_SIDE - PATCH_RADIUS;
            bool inside = index < PATCH_SIDE * PATCH_SIDE && abs(dy) <= radius && abs(dx) <= radius;
            word |= (inside ? (unsigned int)centre[dy * width + dx] : 0u) << (8 * k);
        }
        patch[w * WARP + lane] = word;
    }
}

// Rounds half to even, as the reference does (rint, in the default rounding mode).
__device__ __forceinline__ int round_even(double v) { return (int)rint(v); }

__device__ __forceinline__ void describe_one(
    int i, int lane, unsigned int* patch,
    const unsigned char* __restrict__ pyramid,
    const unsigned char* __restrict__ smoothed,
    const OrbLevel* __restrict__ level_table,
    const int* __restrict__ umax,
    const char4* __restrict__ pattern,
    const unsigned int* __restrict__ kp_yx,
    const int* __restrict__ kp_level,
    int2* __restrict__ moments,
    unsigned int* __restrict__ descriptors,
    unsigned int* desc) {

    const OrbLevel lv = level_table[kp_level[i]];
    const int x = kp_yx[i] & 0xffff, y = kp_yx[i] >> 16;
    const int centre = lv.offset + y * lv.width + x;

    // Orientation from the unsmoothed level.
    load_patch(patch, lane, pyramid + centre, lv.width, ORIENT_RADIUS);
    int m10 = 0, m01 = 0;
    for (int v = -ORIENT_RADIUS; v <= ORIENT_RADIUS; ++v) {
        int half = umax[abs(v)];
        for (int u = -half; u <= half; ++u) {
            int value = patch_at(patch, lane, v, u);
            m10 += u * value;
            m01 += v * value;
        }
    }
    moments[i] = make_int2(m10, m01);

    // Steering without trigonometry, correctly rounded f64 with no contraction.
    double cosine = 1.0, sine = 0.0;
    long long norm = (long long)m10 * m10 + (long long)m01 * m01;
    if (norm != 0) {
        double r = __dsqrt_rn((double)norm);
        cosine = __ddiv_rn((double)m10, r);
        sine = __ddiv_rn((double)m01, r);
    }

    // The same private words now hold the smoothed level.
    load_patch(patch, lane, smoothed + centre, lv.width, PATCH_RADIUS);
    // Word w holds tests 32w..32w+31 (little-endian words give byte k/8, bit k%8:
    // OpenCV's order). The word loop is unrolled so `desc` stays in registers.
#pragma unroll
    for (int w = 0; w < DESC_WORDS; ++w) {
        unsigned int bits = 0;
        for (int b = 0; b < 32; ++b) {
            char4 t = pattern[32 * w + b];
            int s[2];
#pragma unroll
            for (int p = 0; p < 2; ++p) {
                double px = p ? t.z : t.x, py = p ? t.w : t.y;
                int row = round_even(__dadd_rn(__dmul_rn(px, sine), __dmul_rn(py, cosine)));
                int col = round_even(__dsub_rn(__dmul_rn(px, cosine), __dmul_rn(py, sine)));
                s[p] = patch_at(patch, lane, row, col);
            }
            bits |= (unsigned int)(s[0] < s[1]) << b;
        }
        desc[w] = bits;
    }
#pragma unroll
    for (int w = 0; w < DESC_WORDS; ++w) descriptors[i * DESC_WORDS + w] = desc[w];

}

extern "C" __global__ void __launch_bounds__(WARP) orb_describe(
    const unsigned char* __restrict__ pyramid,
    const unsigned char* __restrict__ smoothed,
    const OrbLevel* __restrict__ level_table,
    int n_levels,
    const int* __restrict__ umax,             // 16 entries: half-width of row v of the circle
    const char4* __restrict__ pattern,        // 256 tests (x1, y1, x2, y2)
    const unsigned int* __restrict__ kept,    // [n_levels] = keypoints to describe
    const unsigned int* __restrict__ kp_yx,
    const int* __restrict__ kp_level,
    int2* __restrict__ moments,               // (m10, m01) per keypoint
    unsigned int* __restrict__ descriptors,   // 8 words per keypoint
    const unsigned int* __restrict__ train,   // resident train set (8 words each) or null
    int n_train,
    int3* __restrict__ matches) {             // (best index, best, second best) per keypoint
    __shared__ unsigned int patch[PATCH_WORDS * WARP];
    const int lane = threadIdx.x;
    const int n = (int)kept[n_levels];
    // Grid-stride over warps of keypoints, so a grid sized to N SMs covers any count.
    for (int i = blockIdx.x * WARP + lane; i - lane < n; i += gridDim.x * WARP) {
        unsigned int desc[DESC_WORDS] = {0};
        if (i < n) describe_one(i, lane, patch, pyramid, smoothed, level_table, umax, pattern,
                                kp_yx, kp_level, moments, descriptors, desc);
        // Fused matching while the descriptor is still in registers (lanes past the
        // last keypoint help the sweep and discard their result).
        if (train != nullptr) {
            Best2 best = warp_best2(desc, train, n_train);
            if (i < n) matches[i] = make_int3(best.best_index, best.best, best.second);
        }
    }
}
