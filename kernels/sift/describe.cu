// The 4x4x8 descriptor (docs/sift-reference.md section 5): one block per kept
// keypoint, taken from a work queue (common/block_queue.cuh), widest windows first. The
// block walks the rotated square |c_rot|, |r_rot| < 2.5 bins row by row
// (common/row_runs.cuh: each row's run of columns is cut to the square, with a pixel
// of margin, so strips of 32 lanes hold window samples, not bounding-box
// corners), each warp taking every W-th strip (W = warps per block): a warp alone would
// leave the largest windows on one long chain. A sample's eight trilinear votes go to
// a 2x2x2 block of bins of the (4+2)x(4+2)x8 histogram (the wrap bin o = 8 folded into
// o = 0 as the vote is cast), added in fixed point by shared-memory integer atomics:
// integer sums do not depend on the order of the votes, so the descriptor is the same
// every run and on any number of SMs without ordering them. Neighbouring lanes take
// neighbouring pixels, which mostly vote into the same bins, and atomics on one address
// from one warp are served one after the other: so the histogram has COPIES copies,
// lane l voting into copy l mod COPIES, summed when the window is done. The clamp,
// renormalisation (RootSIFT when asked) and u8 quantisation run across the first warp.
#include "common/sift_octaves.cuh"
#include "common/block_queue.cuh"
#include "common/gradient.cuh"
#include "common/read_only.cuh"
#include "common/row_runs.cuh"
#include "common/sift_params.cuh"

// The descriptor's shape is -D defines from src/cuda/abi.rs (DESCRIPTOR_SPATIAL_BINS,
// DESCRIPTOR_ORIENTATION_BINS).
#define D DESCRIPTOR_SPATIAL_BINS        // spatial bins a side (4)
#define N DESCRIPTOR_ORIENTATION_BINS    // orientation bins (8)
#define LENGTH (D * D * N)               // 128
#define SIDE (D + 2)                     // spatial bins a side with the margin (-1 .. D)
#define BINS (SIDE * SIDE * N)           // 288
// Copies of the histogram, and the ints from one to the next: odd, so that a bin's
// copies lie in distinct banks.
#define COPIES 4
#define COPY_STRIDE (BINS + 1)
// Half the side of the sampled square, in bins: r_rot and c_rot within (-2.5, 2.5).
#define HALF_SIDE ((float)(D / 2) + 0.5f)
// From a rotated offset in bins to the bin coordinate (bin 0 from 0 to 1).
#define BIN_SHIFT ((float)(D / 2) - 0.5f)

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// Cuts the columns [lo, hi] to those where slope * j + offset may lie within
// (-HALF_SIDE, HALF_SIDE), a pixel wider each side for rounding: the per-sample test
// decides.
__device__ __forceinline__ void cut_to_band(float slope, float offset, float& lo, float& hi) {
    if (slope == 0.f) {
        if (fabsf(offset) > HALF_SIDE + 0.01f) hi = lo - 1.f;
        return;
    }
    const float a = (-HALF_SIDE - offset) / slope, b = (HALF_SIDE - offset) / slope;
    lo = fmaxf(lo, floorf(fminf(a, b)) - 1.f);
    hi = fminf(hi, ceilf(fmaxf(a, b)) + 1.f);
}

// The factor from a vote to its fixed-point count. A bin's sum is at most the window's
// whole weighted magnitude: a gradient of a level whose values lie in [0, 255] is
// shorter than 255 * sqrt(2) < 2^9, and the Gaussian weights exp(-(i^2 + j^2) / (2 s^2)),
// s = D / 2 bins, sum over the pixel grid to at most (1 + sqrt(2 pi) s)^2. That bound
// is put at 2^30: with the votes' roundings (half a count each) no sum reaches 2^31.
__device__ __forceinline__ float fixed_point_scale(float bin_width) {
    const float s = 0.5f * (float)D * bin_width;
    const float weights = (1.f + 2.50662827f * s) * (1.f + 2.50662827f * s);
    return 1073741824.f / (512.f * weights);
}

extern "C" __global__ void sift_describe(const SiftDescribeParams p) {
    // The histogram's copies, bin (r, c, o) at (r + 1, c + 1, o) of each, in fixed-point
    // counts.
    __shared__ int histogram[COPIES * COPY_STRIDE];
    const int lane = threadIdx.x & 31;
    const int n = (int)__ldg(p.out_count);
    // The queue's read of the next keypoint follows the epilogue's reads of the
    // histogram: clearing it waits for both (the queue's barrier, then this one).
    for (int kp = block_queue_take(&p.counters->describe_queue, n, p.layers, p.out_octave_layer, -1); kp < n;
         kp = block_queue_take(&p.counters->describe_queue, n, p.layers, p.out_octave_layer, kp)) {
        for (int b = threadIdx.x; b < COPIES * COPY_STRIDE; b += blockDim.x) histogram[b] = 0;
        __syncthreads();
        const int packed = __ldg(&p.out_octave_layer[kp]);
        const SiftOctave oct = ldg_words(&p.octaves[packed_octave(packed)]);
        const int w = oct.width, h = oct.height;
        const float* image = gaussian_layer(p.pyramid, oct, packed);
        // Back to octave pixels: multiplying by a power of two is exact both ways.
        const float factor = ldexpf(1.f, packed_octave(packed) + p.first_octave);
        const float x = __ldg(&p.outputs.x[kp]) / factor, y = __ldg(&p.outputs.y[kp]) / factor;
        const float scale = __ldg(&p.outputs.size[kp]) * 0.5f / factor;
        float ori = 360.f - __ldg(&p.outputs.angle[kp]);
        if (fabsf(ori - 360.f) < 1.1920929e-7f) ori = 0.f;
        const int px = (int)rintf(x), py = (int)rintf(y);
        const float bin_width = 3.f * scale;
        int radius = (int)rintf(bin_width * 1.41421356f * ((float)D + 1.f) * 0.5f);
        radius = min(radius, (int)sqrt((double)w * w + (double)h * h));
        const float radians = ori * (3.14159265f / 180.f);
        const float cos_a = cosf(radians), sin_a = sinf(radians);
        const float cos_t = cos_a / bin_width, sin_t = sin_a / bin_width;
        // The rotated square's bounding box (a pixel of margin), within the radius.
        const float half = HALF_SIDE * bin_width * (fabsf(cos_a) + fabsf(sin_a));
        const int reach = min(radius, (int)ceilf(half) + 1);
        // The Gaussian weight exp(-(c_rot^2 + r_rot^2) / (D^2 / 2)) as a power of two of
        // the pixel offsets' squared length.
        const float log2_weight_scale =
            -1.44269504f / ((float)D * (float)D * 0.5f * bin_width * bin_width);
        const float bins_per_degree = (float)N / 360.f;
        const float ori_bins = ori * bins_per_degree;
        const float to_counts = fixed_point_scale(bin_width);
        for (int top = -reach; top <= reach; top += 32) {
            // This lane's row of the batch and its run of columns.
            const int row = top + lane;
            float lo = (float)max(-reach, 1 - px), hi = (float)min(reach, w - 2 - px);
            if (row > reach || py + row < 1 || py + row > h - 2) hi = lo - 1.f;
            cut_to_band(cos_t, -(float)row * sin_t, lo, hi);  // c_rot
            cut_to_band(sin_t, (float)row * cos_t, lo, hi);   // r_rot
            const int first = (int)lo, length = max((int)(hi - lo) + 1, 0);
            int start;
            const int total = row_runs_scan(length, start);
            for (int base = (threadIdx.x >> 5) * 32; base < total; base += blockDim.x) {
                const int sample = base + lane;
                int j;
                const int i = top + row_runs_locate(sample, start, first, j);
                const float fi = (float)i, fj = (float)j;
                // The rotated offset in bins, shifted so that bin 0 starts at 0.
                const float rbin = fmaf(fj, sin_t, fmaf(fi, cos_t, BIN_SHIFT));
                const float cbin = fmaf(fj, cos_t, fmaf(-fi, sin_t, BIN_SHIFT));
                if (sample >= total || !(rbin > -1.f && rbin < (float)D && cbin > -1.f &&
                                         cbin < (float)D))
                    continue;
                // c_rot^2 + r_rot^2 = (i^2 + j^2) / bin_width^2: a rotation keeps lengths.
                const WeightedGradient g = weighted_gradient(
                    image, (unsigned int)((py + i) * w + px + j), w,
                    fmaf(fi, fi, fj * fj) * log2_weight_scale);
                const float obin = fmaf(g.degrees, bins_per_degree, -ori_bins);
                const float r0 = floorf(rbin), c0 = floorf(cbin), o0 = floorf(obin);
                const float fr = rbin - r0, fc = cbin - c0, fo = obin - o0;
                const int o = (int)o0 & (N - 1);  // o0 mod N, negative o0 too
                int* cell = histogram + (lane & (COPIES - 1)) * COPY_STRIDE +
                            (((int)r0 + 1) * SIDE + (int)c0 + 1) * N;
                // Vote (dr, dc, do) as src/cpu/sift/descriptor.rs weighs it; each weight
                // pair as x * f, x - x * f.
                const float m = g.magnitude * to_counts;
                const float by_row[2] = {m - m * fr, m * fr};
#pragma unroll
                for (int dr = 0; dr < 2; ++dr) {
                    const float by_cell[2] = {by_row[dr] - by_row[dr] * fc, by_row[dr] * fc};
#pragma unroll
                    for (int dc = 0; dc < 2; ++dc) {
                        int* bins = cell + (dr * SIDE + dc) * N;
                        const float upper = by_cell[dc] * fo;
                        atomicAdd(bins + o, __float2int_rn(by_cell[dc] - upper));
                        atomicAdd(bins + ((o + 1) & (N - 1)), __float2int_rn(upper));
                    }
                }
            }
        }
        __syncthreads();
        if (threadIdx.x >= 32) continue;
        // Lane l holds bins 4l .. 4l+3, all of spatial cell l / 2.
        const int cell = 4 * lane / N, r = cell / D + 1, c = cell % D + 1;
        const int* bins = histogram + (r * SIDE + c) * N + 4 * lane % N;
        float values[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            int count = 0;
#pragma unroll
            for (int copy = 0; copy < COPIES; ++copy) count += bins[copy * COPY_STRIDE + q];
            values[q] = (float)count;
        }
        float norm = sqrtf(warp_sum(values[0] * values[0] + values[1] * values[1] +
                                    values[2] * values[2] + values[3] * values[3]));
        const float clamp = norm * 0.2f;
#pragma unroll
        for (int q = 0; q < 4; ++q) values[q] = fminf(values[q], clamp);
        norm = sqrtf(warp_sum(values[0] * values[0] + values[1] * values[1] +
                              values[2] * values[2] + values[3] * values[3]));
        float inv = 1.f / fmaxf(norm, 1.1920929e-7f);
#pragma unroll
        for (int q = 0; q < 4; ++q) values[q] *= inv;
        if (p.root_sift) {
            float l1 = warp_sum(values[0] + values[1] + values[2] + values[3]);
            inv = 1.f / fmaxf(l1, 1.1920929e-7f);
#pragma unroll
            for (int q = 0; q < 4; ++q) values[q] = sqrtf(values[q] * inv);
        }
        unsigned int packed_bytes = 0;
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            float v = fminf(fmaxf(rintf(values[q] * 512.f), 0.f), 255.f);
            packed_bytes |= (unsigned int)v << (8 * q);
        }
        p.descriptors[kp * (LENGTH / 4) + lane] = packed_bytes;
    }
}
