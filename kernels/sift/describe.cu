// The 4x4x8 descriptor (docs/sift-reference.md section 5): one block per kept
// keypoint, taken from a work queue (common/block_queue.cuh), widest windows first. The
// block walks the rotated square |c_rot|, |r_rot| < 2.5 bins row by row
// (common/row_runs.cuh: each row's run of columns is cut to the square, with a pixel
// of margin, so strips of 32 lanes hold window samples, not bounding-box
// corners), each warp taking every W-th strip (W = warps per block): a warp alone would
// leave the largest windows on one long chain. A sample's eight trilinear votes go to
// a 2x2x2 block of bins of the (4+2)x(4+2)x(8+2) histogram, named by its first bin
// (the key): lanes with equal keys are summed by the multi-key warp reduction, and
// each group's writer adds vote v to its warp's v-th sub-histogram, indexed by key.
// Writers of one strip have distinct keys, so their eight writes touch distinct words:
// no atomics, no ordering between votes, and a writer's eight read-modify-writes
// overlap. The histogram bin (r, c, o) is then the sum, in a fixed order (warp, then
// vote), of the sub-histogram entries at the keys that vote into it (the wrap bin o = 8
// folded into o = 0), so the sums are the same every run. The clamp, renormalisation
// (RootSIFT when asked) and u8 quantisation run across the first warp.
#include "common/sift_octaves.cuh"
#include "common/block_queue.cuh"
#include "common/gradient.cuh"
#include "common/read_only.cuh"
#include "common/row_runs.cuh"
#include "common/sift_params.cuh"
#include "common/warp_reduce_by_key.cuh"

// The descriptor's shape and the votes per sample are -D defines from src/cuda/abi.rs
// (DESCRIPTOR_SPATIAL_BINS, DESCRIPTOR_ORIENTATION_BINS, DESCRIBE_VOTES).
#define D DESCRIPTOR_SPATIAL_BINS        // spatial bins a side (4)
#define N DESCRIPTOR_ORIENTATION_BINS    // orientation bins (8)
#define LENGTH (D * D * N)               // 128
#define KEY_ROW ((D + 1) * N)            // key stride of one spatial row (first bins -1 .. D-1)
#define KEYS ((D + 1) * KEY_ROW)         // 200 first bins
#define VOTES DESCRIBE_VOTES             // sub-histograms a warp, one per trilinear vote
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

extern "C" __global__ void sift_describe(const SiftDescribeParams p) {
    // Per warp: VOTES sub-histograms of KEYS first bins; then the block's LENGTH values.
    extern __shared__ float shared[];
    const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    float* sub = shared + (threadIdx.x >> 5) * (VOTES * KEYS);
    float* gathered = shared + warps * (VOTES * KEYS);
    const int n = (int)__ldg(p.out_count);
    // The queue's read of the next keypoint follows the gather's __syncthreads().
    for (int kp = block_queue_take(&p.counters->describe_queue, n, p.layers, p.out_octave_layer, -1); kp < n;
         kp = block_queue_take(&p.counters->describe_queue, n, p.layers, p.out_octave_layer, kp)) {
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
        for (int b = lane; b < VOTES * KEYS / 4; b += 32)
            reinterpret_cast<float4*>(sub)[b] = make_float4(0.f, 0.f, 0.f, 0.f);
        __syncwarp();
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
                int key = -1;
                float votes[VOTES];
#pragma unroll
                for (int v = 0; v < VOTES; ++v) votes[v] = 0.f;
                if (sample < total && rbin > -1.f && rbin < (float)D && cbin > -1.f &&
                    cbin < (float)D) {
                    // c_rot^2 + r_rot^2 = (i^2 + j^2) / bin_width^2: a rotation keeps lengths.
                    const WeightedGradient g = weighted_gradient(
                        image, (unsigned int)((py + i) * w + px + j), w,
                        fmaf(fi, fi, fj * fj) * log2_weight_scale);
                    const float obin = fmaf(g.degrees, bins_per_degree, -ori_bins);
                    const float r0 = floorf(rbin), c0 = floorf(cbin), o0 = floorf(obin);
                    const float fr = rbin - r0, fc = cbin - c0, fo = obin - o0;
                    const int o = (int)o0 & (N - 1);  // o0 mod N, negative o0 too
                    key = ((int)r0 + 1) * KEY_ROW + ((int)c0 + 1) * N + o;
                    // Vote v = (dr, dc, do) = (v >> 2, (v >> 1) & 1, v & 1) as
                    // src/cpu/sift/descriptor.rs; each weight pair as x * f, x - x * f.
                    float by_row[2], by_cell[4];
                    by_row[1] = g.magnitude * fr;
                    by_row[0] = g.magnitude - by_row[1];
#pragma unroll
                    for (int dr = 0; dr < 2; ++dr) {
                        by_cell[2 * dr + 1] = by_row[dr] * fc;
                        by_cell[2 * dr] = by_row[dr] - by_cell[2 * dr + 1];
                    }
#pragma unroll
                    for (int cell = 0; cell < 4; ++cell) {
                        votes[2 * cell + 1] = by_cell[cell] * fo;
                        votes[2 * cell] = by_cell[cell] - votes[2 * cell + 1];
                    }
                }
                if (!__any_sync(0xffffffffu, key >= 0)) continue;  // margin samples only
                unsigned int peers = warp_reduce_by_key(key, votes);
                if (key >= 0 && reduce_by_key_writer(peers)) {
#pragma unroll
                    for (int v = 0; v < VOTES; ++v) sub[v * KEYS + key] += votes[v];
                }
                __syncwarp();  // the next strip's writers may add to these words
            }
        }
        __syncthreads();
        // Gather the 128 values, bin b = 8 * cell + o of spatial cell (r, c) (from 1).
        // Bin (r, c, o) of the histogram takes vote (dr, dc, do) of key
        // (r - dr, c - dc, o - do), o - do taken mod N: the wrap bin folded in.
        for (int b = threadIdx.x; b < LENGTH; b += blockDim.x) {
            const int cell = b / N, o = b % N, r = cell / D + 1, c = cell % D + 1;
            float v = 0.f;
            for (int wp = 0; wp < warps; ++wp) {
#pragma unroll
                for (int vote = 0; vote < VOTES; ++vote) {
                    const int dr = vote >> 2, dc = (vote >> 1) & 1, dor = vote & 1;
                    v += shared[wp * (VOTES * KEYS) + vote * KEYS + (r - dr) * KEY_ROW +
                                (c - dc) * N + (o - dor + N) % N];
                }
            }
            gathered[b] = v;
        }
        __syncthreads();
        if (threadIdx.x >= 32) continue;
        // Lane l holds bins 4l .. 4l+3, all of spatial cell l / 2.
        float values[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) values[q] = gathered[4 * lane + q];
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
