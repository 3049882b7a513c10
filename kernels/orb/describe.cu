// Orientation (intensity centroid) and steered BRIEF in one kernel, with each
// thread's patch in its own shared-memory bank, and Hamming matching fused with
// description (docs/orb-reference.md sections 6-7).
//
// Thread t of a warp stores word w of its patch at patch[w * 32 + t]: bank t only.
// The rotated BRIEF samples are data dependent (different offsets per keypoint), but
// lane t only ever touches bank t, so every access of the warp is conflict-free.
#include "common/levels.cuh"
#include "common/hamming.cuh"
#include "common/hamming_mma.cuh"
#include "common/orb_params.cuh"

// PATCH_RADIUS (the rotated 31x31 pattern reaches 18.4 px) and PATCH_ROW_WORDS (a row
// of PATCH_SIDE bytes in whole words) are -D defines from src/cuda/abi.rs.
#define PATCH_SIDE (2 * PATCH_RADIUS + 1)
#define PATCH_WORDS (PATCH_SIDE * PATCH_ROW_WORDS)
#define ORIENT_RADIUS 15
#define WARP 32

// The byte at (dy, dx) of this lane's patch.
__device__ __forceinline__ int patch_at(const unsigned int* patch, int lane, int dy, int dx) {
    const int row = dy + PATCH_RADIUS, col = dx + PATCH_RADIUS;
    return (patch[(row * PATCH_ROW_WORDS + (col >> 2)) * WARP + lane] >> (8 * (col & 3))) & 0xff;
}

// Warps per block. A block describes up to 32 keypoints, one per lane (each keypoint's
// patch in that lane's bank); its warps share the loads, the moment rows, the BRIEF
// tests and the train set of the fused match, so many warps hide each other's latency.
// DESCRIBE_WARPS is a -D define (src/cuda/abi.rs).
#define TESTS_PER_WARP (DESC_WORDS * 32 / DESCRIBE_WARPS)

// Fills rows PATCH_RADIUS - radius ..= PATCH_RADIUS + radius of every lane's private
// words with the square around its keypoint; warp `wid` takes rows wid, wid +
// DESCRIBE_WARPS, ... A row's 39 bytes are read as the 10 or 11 aligned words that hold
// them and shifted into place (a lane's loads hit a different keypoint's row, so fewer
// and wider loads are what counts). The edge is at least PATCH_RADIUS
// (docs/orb-reference.md) and the pyramid buffers end on a whole word, so every word
// read is inside the buffer; the padding byte of a row may come from outside the level.
__device__ __forceinline__ void load_patches(unsigned int* patch, int wid, int lane, bool active,
                                             const unsigned char* centre, int width, int radius) {
    for (int row = PATCH_RADIUS - radius + wid; row <= PATCH_RADIUS + radius; row += DESCRIBE_WARPS) {
        unsigned int word[PATCH_ROW_WORDS + 1];
        unsigned int shift = 0;
        if (active) {
            const unsigned char* start = centre + (row - PATCH_RADIUS) * width - PATCH_RADIUS;
            shift = (unsigned int)(reinterpret_cast<size_t>(start) & 3u);
            const unsigned int* aligned = reinterpret_cast<const unsigned int*>(start - shift);
#pragma unroll
            for (int k = 0; k < PATCH_ROW_WORDS; ++k) word[k] = __ldg(&aligned[k]);
            // The row's last byte lies in word 10 only when the row starts 2 or 3 bytes in.
            word[PATCH_ROW_WORDS] = shift >= 2 ? __ldg(&aligned[PATCH_ROW_WORDS]) : 0u;
        } else {
#pragma unroll
            for (int k = 0; k <= PATCH_ROW_WORDS; ++k) word[k] = 0u;
        }
#pragma unroll
        for (int k = 0; k < PATCH_ROW_WORDS; ++k)
            patch[(row * PATCH_ROW_WORDS + k) * WARP + lane] = __funnelshift_r(word[k], word[k + 1], 8 * shift);
    }
}

// Rounds half to even, as the reference does (rint, in the default rounding mode).
__device__ __forceinline__ int round_even(double v) { return (int)rint(v); }

// The keypoints' moments, summed over the warps, and their descriptors' set bits.
struct DescribeScratch {
    int m10[WARP], m01[WARP];
    int ones[WARP];
    unsigned int query_bits[WARP];
};

// Three blocks an SM (at most 40 registers): the description is latency-bound, and with
// the 8-bit MMA's operands in registers (74) one block an SM made it 24 us slower on 8
// SMs of an H200 at 1080p, more than the tensor cores saved.
extern "C" __global__ void __launch_bounds__(DESCRIBE_WARPS * WARP, 3) orb_describe(const OrbDescribeParams p) {
    // PATCH_WORDS * WARP words (DESCRIBE_SHARED_BYTES in src/cuda/orb/shapes.rs): over the
    // 48 KB of static shared memory.
    extern __shared__ unsigned int patch[];
    __shared__ DescribeScratch scratch;
    // After the tests: descriptor word w of lane t at words[w * WARP + t], then each
    // warp's Best2 per lane (conflict-free: lane t always in bank t), then on sm_80 on
    // the queries' MMA operands (two tiles of 16 queries, MMA_FRAGMENTS x 32 lanes each).
    unsigned int* words = patch;
    int3* candidates = reinterpret_cast<int3*>(patch + DESC_WORDS * WARP);
    uint4* query_fragments = reinterpret_cast<uint4*>(patch + DESC_WORDS * WARP + 3 * DESCRIBE_WARPS * WARP);
    static_assert((DESC_WORDS * WARP + 3 * DESCRIBE_WARPS * WARP) % 4 == 0, "operands on 16-byte boundaries");
#if __CUDA_ARCH__ >= 800
    static_assert(DESC_WORDS * WARP + 3 * DESCRIBE_WARPS * WARP + 4 * 2 * MMA_FRAGMENTS * WARP <= PATCH_WORDS * WARP,
                  "scratch fits in the patch");
#endif

    const int lane = threadIdx.x % WARP, wid = threadIdx.x / WARP;
    const int n = (int)__ldg(&p.kept[p.n_levels]);
    const int n_train = p.train != nullptr ? (int)__ldg(p.train_count) : 0;
    // Grid-stride over groups of `per_block` keypoints (fewer than 32 spread small
    // frames over more SMs), so a grid sized to N SMs covers any count.
    for (int group = blockIdx.x * p.per_block; group < n; group += gridDim.x * p.per_block) {
        const int i = group + lane;
        const bool active = lane < p.per_block && i < n;
        int centre = 0, width = 0;
        if (active) {
            const OrbLevel lv = ldg_words(&p.level_table[__ldg(&p.keypoints.level[i])]);
            const unsigned int yx = __ldg(&p.keypoints.yx[i]);
            const int x = yx & 0xffff, y = yx >> 16;
            centre = lv.offset + y * lv.width + x;
            width = lv.width;
        }
        if (wid == 0) {
            scratch.m10[lane] = 0;
            scratch.m01[lane] = 0;
        }

        // Orientation from the unsmoothed level: rows of the circle split over warps,
        // integer sums (order-independent) gathered by shared atomics.
        load_patches(patch, wid, lane, active, p.pyramid + centre, width, ORIENT_RADIUS);
        __syncthreads();
        int m10 = 0, m01 = 0;
        for (int v = wid - ORIENT_RADIUS; v <= ORIENT_RADIUS; v += DESCRIBE_WARPS) {
            int half = __ldg(&p.umax[abs(v)]);
            for (int u = -half; u <= half; ++u) {
                int value = patch_at(patch, lane, v, u);
                m10 += u * value;
                m01 += v * value;
            }
        }
        atomicAdd(&scratch.m10[lane], m10);
        atomicAdd(&scratch.m01[lane], m01);
        __syncthreads();
        m10 = scratch.m10[lane];
        m01 = scratch.m01[lane];
        if (wid == 0 && active) p.moments[i] = make_int2(m10, m01);

        // Steering without trigonometry, correctly rounded f64 with no contraction.
        double cosine = 1.0, sine = 0.0;
        long long norm = (long long)m10 * m10 + (long long)m01 * m01;
        if (norm != 0) {
            double r = __dsqrt_rn((double)norm);
            cosine = __ddiv_rn((double)m10, r);
            sine = __ddiv_rn((double)m01, r);
        }

        // The same private words now hold the smoothed level.
        load_patches(patch, wid, lane, active, p.smoothed + centre, width, PATCH_RADIUS);
        __syncthreads();
        // Warp wid runs tests wid*TESTS_PER_WARP.. (little-endian words give byte k/8,
        // bit k%8: OpenCV's order).
        unsigned int bits = 0;
        const int first = wid * TESTS_PER_WARP;
        for (int b = 0; b < TESTS_PER_WARP; ++b) {
            char4 t = __ldg(&p.pattern[first + b]);
            int s[2];
#pragma unroll
            for (int p = 0; p < 2; ++p) {
                double px = p ? t.z : t.x, py = p ? t.w : t.y;
                int row = round_even(__dadd_rn(__dmul_rn(px, sine), __dmul_rn(py, cosine)));
                int col = round_even(__dsub_rn(__dmul_rn(px, cosine), __dmul_rn(py, sine)));
                s[p] = patch_at(patch, lane, row, col);
            }
            bits |= (unsigned int)(s[0] < s[1]) << ((first + b) % 32);
        }
        __syncthreads();  // every test has read the patch: its words become scratch
        if (wid < DESC_WORDS) words[wid * WARP + lane] = 0;
        __syncthreads();
        atomicOr(&words[(first / 32) * WARP + lane], bits);
        __syncthreads();
        unsigned int desc[DESC_WORDS];
#pragma unroll
        for (int w = 0; w < DESC_WORDS; ++w) desc[w] = words[w * WARP + lane];
        if (active && wid < DESC_WORDS) p.descriptors[i * DESC_WORDS + wid] = desc[wid];

        // Fused matching while the descriptor is on chip: each warp sweeps a slice of
        // the train set, then warp 0 merges the slices (inactive lanes help the sweep).
        // With backward_best, the sweep's distances also give each train descriptor its
        // nearest keypoint, the cross-check's backward search (the branch is uniform).
        if (p.train != nullptr) {
#if __CUDA_ARCH__ >= 800
            // On the tensor cores, one tile of 16 queries at a time; the active lanes
            // are the first `queries` of the group.
            const int queries = min(p.per_block, n - group);
            const int query_tiles = (queries + MMA_QUERY_TILE - 1) / MMA_QUERY_TILE;
            for (int e = threadIdx.x; e < query_tiles * MMA_FRAGMENTS * WARP; e += blockDim.x)
                query_fragments[e] =
                    query_fragment(words, e / (MMA_FRAGMENTS * WARP), e / WARP % MMA_FRAGMENTS, e % WARP);
            if (wid == 0) {
#ifndef MMA_BINARY
                int ones = 0;
#pragma unroll
                for (int w = 0; w < DESC_WORDS; ++w) ones += __popc(desc[w]);
                scratch.ones[lane] = ones;
#endif
                scratch.query_bits[lane] = active ? (unsigned int)i : 0xffffffffu;
            }
            __syncthreads();
            for (int tile = 0; tile < query_tiles; ++tile) {
                Best2 rows[2];
                const uint4* fragments = query_fragments + tile * MMA_FRAGMENTS * WARP;
                if (p.backward_best != nullptr)
                    tile_best2_mma<true>(fragments, scratch.ones, scratch.query_bits, tile, p.train, n_train, wid,
                                         DESCRIBE_WARPS, p.backward_best, rows);
                else
                    tile_best2_mma<false>(fragments, scratch.ones, scratch.query_bits, tile, p.train, n_train, wid,
                                          DESCRIBE_WARPS, nullptr, rows);
                if (lane % 4 == 0) {
                    const int top = tile * MMA_QUERY_TILE + lane / 4;
                    candidates[wid * WARP + top] = make_int3(rows[0].best_index, rows[0].best, rows[0].second);
                    candidates[wid * WARP + top + 8] = make_int3(rows[1].best_index, rows[1].best, rows[1].second);
                }
            }
#else
            const int first_train = wid * WARP, train_step = DESCRIBE_WARPS * WARP;
            Best2 mine = p.backward_best != nullptr
                             ? warp_best2<true>(desc, p.train, n_train, first_train, train_step, active ? i : -1,
                                                p.backward_best)
                             : warp_best2(desc, p.train, n_train, first_train, train_step);
            candidates[wid * WARP + lane] = make_int3(mine.best_index, mine.best, mine.second);
#endif
            __syncthreads();
            if (wid == 0 && active) {
                // Ties keep the lower train index (the slices interleave); the second
                // best is the smallest of the others' bests and the winner's own second.
                int3 winner = candidates[lane];
                int other = 0x7fffffff;
                for (int s = 1; s < DESCRIBE_WARPS; ++s) {
                    int3 c = candidates[s * WARP + lane];
                    if (c.y < winner.y || (c.y == winner.y && c.x < winner.x)) {
                        other = min(other, winner.y);
                        winner = c;
                    } else {
                        other = min(other, c.y);
                    }
                }
                p.matches[i] = make_int3(winner.x, winner.y, min(winner.z, other));
            }
        }
        __syncthreads();  // the next group overwrites patch and scratch
    }
}

// A keypoint's orientation in degrees [0, 360) from its moments, as the host's
// `angle_degrees` computes it (src/spec/orientation.rs), every step IEEE-rounded. Neither
// side's atan2 is correctly rounded, so where the degrees lie within 2^-46 of their size
// (at least 32 units in the last place) from a float rounding boundary, the float may
// differ: NaN is written and the host computes that angle itself (about one keypoint in
// four million).
__device__ __forceinline__ float orientation_degrees(int m10, int m01, double degrees_per_radian) {
    const double degrees = __dmul_rn(atan2((double)m01, (double)m10), degrees_per_radian);
    const double wrapped = degrees < 0.0 ? __dadd_rn(degrees, 360.0) : degrees;
    const float angle = __double2float_rn(wrapped);
    // The midpoints with the neighbouring floats (angle lies in [0, 360]), exact in double.
    const double below = 0.5 * ((double)angle + (double)nextafterf(angle, -1.0f));
    const double above = 0.5 * ((double)angle + (double)nextafterf(angle, 1000.0f));
    const double margin = fabs(wrapped) * 1.4210854715202004e-14;  // 2^-46
    if (wrapped - below <= margin || above - wrapped <= margin) return __int_as_float(0x7fc00000);
    return angle >= 360.0f ? 0.0f : angle;
}

// The kept keypoints' published fields, as the CPU reference computes them
// (docs/orb-reference.md): position and size in frame pixels, orientation, response
// and level, so that the host only copies them.
extern "C" __global__ void orb_keypoint_fields(const OrbKeypointFieldsParams p) {
    const int total = (int)p.kept[p.n_levels];
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        const unsigned int yx = p.keypoints.yx[i];
        const int level = p.keypoints.level[i];
        const float scale = p.level_scales[level];
        p.fields.x[i] = __fmul_rn((float)(yx & 0xffffu), scale);
        p.fields.y[i] = __fmul_rn((float)(yx >> 16), scale);
        p.fields.size[i] = __fmul_rn(p.patch_size, scale);
        const long long key = p.keypoints.key[i];
        p.fields.response[i] = p.harris ? __double2float_rn(__dmul_rn(__ll2double_rn(key), p.harris_scale))
                                        : __ll2float_rn(key);
        p.fields.octave[i] = level;
        const int2 m = p.moments[i];
        p.fields.angle[i] = orientation_degrees(m.x, m.y, p.degrees_per_radian);
    }
}
