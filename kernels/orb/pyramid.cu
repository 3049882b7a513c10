// The ORB image pyramid (docs/orb-reference.md section 1), one band of rows of every
// level per persistent launch; the descriptors' 7x7 smoothing is done by
// orb_fast_score (detect.cu) from the tiles it stages anyway.
//
// Level 0 is the frame, copied into the pyramid band by band: each launch resizes the
// rows of levels 1.. that the frame's rows so far determine (src/cuda/orb/bands.rs).
// Level l is resized from level l-1, so within a band levels depend on each other
// across the whole width: the kernel is launched cooperatively with a grid the device
// holds at once and waits at a grid-wide barrier after each level (a variant that
// resized two levels per phase, recomputing the first one's pixels, saved four
// barriers but read each pixel of the second level 16 times: more load traffic than
// the barriers cost). The grid is no larger than the largest level's runs of pixels
// need (src/cuda/orb/shapes.rs): a block without a run only adds an arrival to every
// barrier, and at 640x480 the H200 holds four times more blocks than that.
#include "common/levels.cuh"
#include "common/grid_barrier.cuh"
#include "common/orb_params.cuh"
#include "common/pixel_words.cuh"

// Fixed-point bilinear tap: destination coordinate -> (source index, weight of the
// second source pixel out of 256). Built on the host (src/spec/pyramid.rs); mirrored
// in src/cuda/abi.rs.
struct ResizeTap {
    int src;
    int w1;
};
ABI_SIZE(ResizeTap, 8);
ABI_OFFSET(ResizeTap, src, 0);
ABI_OFFSET(ResizeTap, w1, 4);

__device__ __forceinline__ unsigned int blend(unsigned int p00, unsigned int p01, unsigned int p10,
                                              unsigned int p11, ResizeTap tx, ResizeTap ty) {
    const unsigned int wx1 = (unsigned int)tx.w1, wx0 = 256u - wx1;
    const unsigned int wy1 = (unsigned int)ty.w1, wy0 = 256u - wy1;
    const unsigned int top = wx0 * p00 + wx1 * p01;
    const unsigned int bottom = wx0 * p10 + wx1 * p11;
    return (wy0 * top + wy1 * bottom + (1u << 15)) >> 16;
}

// A zero weight means the second tap lies past the border: it is never read.
__device__ __forceinline__ int second_tap(ResizeTap t) { return t.w1 ? t.src + 1 : t.src; }

// A tap in one 8-byte load (the table is 8-byte aligned).
__device__ __forceinline__ ResizeTap load_tap(const ResizeTap* t) {
    const int2 v = __ldg(reinterpret_cast<const int2*>(t));
    return ResizeTap{v.x, v.y};
}

// The 8 source bytes from `p` on as two words (byte k = p[k]), from the three aligned
// words around them: `p` lies anywhere in its row. The last word reaches at most 11
// bytes past `p`, inside the pyramid's allocation (its read slack, src/cuda/orb/plan.rs).
__device__ __forceinline__ uint2 load_window(const unsigned char* p) {
    const unsigned int misalign = (unsigned int)((size_t)p & 3u);
    const unsigned int* words = reinterpret_cast<const unsigned int*>(p - misalign);
    const unsigned int shift = 8u * misalign;
    const unsigned int w0 = words[0], w1 = words[1], w2 = words[2];
    return make_uint2(__funnelshift_r(w0, w1, shift), __funnelshift_r(w1, w2, shift));
}

// blend() from two rows' windows: the taps' bytes at `offset` and offset + 1 of each
// row (the second is read even where its weight is 0: it then adds nothing). Both
// horizontal products in one __dp2a of the weights as 16-bit halves (256 does not fit
// a byte) and the two pixels as bytes; the integers are blend()'s, so is the value.
__device__ __forceinline__ unsigned int blend_window(uint2 top, uint2 bottom, int offset, ResizeTap tx,
                                                     ResizeTap ty) {
    const unsigned int pair = (unsigned int)offset * 0x11u + 0x10u;  // bytes offset, offset + 1
    const unsigned int weights = (unsigned int)tx.w1 * 0xffffu + 256u;  // 256 - w1 low, w1 high
    const unsigned int upper = __dp2a_lo(weights, __byte_perm(top.x, top.y, pair), 0u);
    const unsigned int lower = __dp2a_lo(weights, __byte_perm(bottom.x, bottom.y, pair), 0u);
    const unsigned int wy1 = (unsigned int)ty.w1, wy0 = 256u - wy1;
    return (wy0 * upper + wy1 * lower + (1u << 15)) >> 16;
}

// RESIZE_RUN (pixels of a row one warp resizes at a time) and PYRAMID_THREADS come from
// the host as -D defines (src/cuda/abi.rs), which sizes the grid to level 1's runs.
#define RUN_LANE_PIXELS 4  // a word of pixels (common/pixel_words.cuh)
static_assert(RESIZE_RUN == 32 * RUN_LANE_PIXELS, "a lane resizes four neighbouring pixels of the run");

// At most 40 registers (6 blocks of 256 threads per SM): a lane holds its four pixels'
// taps and two source windows; held to 32, it spilled them inside the run loop.

extern "C" __global__ void __launch_bounds__(PYRAMID_THREADS, 6) orb_pyramid(const OrbPyramidParams p) {
    __shared__ OrbLevel levels[ORB_MAX_LEVELS];
    load_levels(levels, p.level_table, p.n_levels);
    __syncthreads();

    // Warps take runs of RESIZE_RUN pixels of one row in turn: a warp shares its row's
    // tap and source rows. A warp's row and run advance by fixed steps, without a
    // division per run.
    // The source pixels are plain loads, cached in L1 (neighbouring outputs share
    // them): other blocks wrote them before the grid barrier, whose __threadfence also
    // invalidates this SM's L1 (CCTL.IVALL), and no block reads a level before the
    // barrier that follows its writing.
    const int warps = gridDim.x * (blockDim.x / 32);
    const int first_warp = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    // A band's rows of a level come from the level before's rows of this band and
    // earlier ones: a barrier after each level that has rows, up to the last one.
    int last = 0;
    for (int l = 1; l < p.n_levels; ++l)
        if (p.rows.end[l] > p.rows.begin[l]) last = l;
    for (int l = 1; l <= last; ++l) {
        const OrbLevel& stored = levels[l - 1];
        const OrbLevel& next = levels[l];
        const unsigned char* source = p.pyramid + stored.offset;
        unsigned char* level = p.pyramid + next.offset;
        const int runs_per_row = (next.width + RESIZE_RUN - 1) / RESIZE_RUN;
        const int step_rows = warps / runs_per_row, step_runs = warps % runs_per_row;
        const int runs = runs_per_row * (p.rows.end[l] - p.rows.begin[l]);
        int y = p.rows.begin[l] + first_warp / runs_per_row, row_run = first_warp % runs_per_row;
        for (int run = first_warp; run < runs; run += warps) {
            const ResizeTap ty = load_tap(&p.taps[next.taps_y + y]);
            const unsigned char* top = source + ty.src * stored.width;
            const unsigned char* bottom = source + second_tap(ty) * stored.width;
            unsigned char* out = level + y * next.width;
            const int x = row_run * RESIZE_RUN + RUN_LANE_PIXELS * lane;
            if (x < next.width) {
                // Past the row's end a lane repeats the row's last tap and stores nothing.
                const ResizeTap* row_taps = p.taps + next.taps_x;
                const int last_x = min(x + RUN_LANE_PIXELS - 1, next.width - 1);
                const ResizeTap first = load_tap(row_taps + x), final = load_tap(row_taps + last_x);
                unsigned int word = 0;  // byte k: pixel x + k
                // Four outputs read at most 7 source pixels from the first one's up to a
                // ratio of 2 between levels (3 steps of up to 2, and the second tap);
                // larger scale factors read byte by byte.
                if (final.src - first.src < 7) {
                    const uint2 upper = load_window(top + first.src), lower = load_window(bottom + first.src);
#pragma unroll
                    for (int k = 0; k < RUN_LANE_PIXELS; ++k) {
                        const ResizeTap tx = k == 0 ? first : k == RUN_LANE_PIXELS - 1 ? final
                                                                 : load_tap(row_taps + min(x + k, last_x));
                        word |= blend_window(upper, lower, tx.src - first.src, tx, ty) << (8 * k);
                    }
                } else {
#pragma unroll
                    for (int k = 0; k < RUN_LANE_PIXELS; ++k) {
                        const ResizeTap tx = load_tap(row_taps + min(x + k, last_x));
                        const int x1 = second_tap(tx);
                        word |= blend(top[tx.src], top[x1], bottom[tx.src], bottom[x1], tx, ty) << (8 * k);
                    }
                }
                store_pixels(out + x, next.width - x, word);
            }
            y += step_rows;
            row_run += step_runs;
            if (row_run >= runs_per_row) {
                row_run -= runs_per_row;
                ++y;
            }
        }
        if (l < last) grid_barrier(p.barrier_state);
    }
}
