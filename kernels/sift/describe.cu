// The 4x4x8 descriptor (docs/sift-reference.md section 5): one block per kept
// keypoint, in output order, each warp of it taking every W-th strip of 32 window
// pixels (W = warps per block), so that large keypoints do not leave one warp waiting
// on a long chain of samples. A sample's eight trilinear votes go to a 2x2x2 block of
// bins of the (4+2)x(4+2)x(8+2) histogram, named by its first bin (the key): lanes
// with equal keys are summed by the multi-key warp reduction, and the group's writers
// add their votes to the warp's own histogram one vote at a time. Writers of one step
// have distinct keys, so the bins they add vote v to are distinct: no atomics, and
// each warp needs one histogram, not one per vote. After the window, the warps'
// histograms are added in warp order, so the sums are the same every run. Then the
// wrap bins fold back, and the clamp, renormalisation (RootSIFT when asked) and u8
// quantisation run across the first warp.
#include "common/sift_octaves.cuh"
#include "common/fast_atan2.cuh"
#include "common/warp_reduce_by_key.cuh"

#define D 4                              // spatial bins a side
#define N 8                              // orientation bins
#define HIST ((D + 2) * (D + 2) * (N + 2))  // 360
#define LENGTH (D * D * N)                  // 128
#define ROW ((D + 2) * (N + 2))             // histogram stride of one spatial row
#define VOTES 8

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

extern "C" __global__ void sift_describe(
    const float* __restrict__ pyramid, const SiftOctave* __restrict__ octaves, int first_octave,
    int root_sift, const unsigned int* __restrict__ out_count, const float* __restrict__ out_x,
    const float* __restrict__ out_y, const float* __restrict__ out_size,
    const float* __restrict__ out_angle, const int* __restrict__ out_octave_layer,
    unsigned int* __restrict__ descriptors) {
    // A HIST-bin histogram per warp; the block's sums go into warp 0's.
    extern __shared__ float shared[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    float* own = shared + warp * HIST;
    float* hist = shared;
    const int n = (int)*out_count;
    for (int kp = blockIdx.x; kp < n; kp += gridDim.x) {
        const int packed = out_octave_layer[kp];
        const SiftOctave oct = octaves[packed_octave(packed)];
        const int w = oct.width, h = oct.height;
        const float* image = pyramid + oct.gauss + packed_layer(packed) * w * h;
        // Back to octave pixels: multiplying by a power of two is exact both ways.
        const float factor = ldexpf(1.f, packed_octave(packed) + first_octave);
        const float x = out_x[kp] / factor, y = out_y[kp] / factor;
        const float scale = out_size[kp] * 0.5f / factor;
        float ori = 360.f - out_angle[kp];
        if (fabsf(ori - 360.f) < 1.1920929e-7f) ori = 0.f;
        const int px = (int)rintf(x), py = (int)rintf(y);
        const float bin_width = 3.f * scale;
        int radius = (int)rintf(bin_width * 1.41421356f * ((float)D + 1.f) * 0.5f);
        radius = min(radius, (int)sqrt((double)w * w + (double)h * h));
        const float radians = ori * (3.14159265f / 180.f);
        const float cos_a = cosf(radians), sin_a = sinf(radians);
        const float cos_t = cos_a / bin_width, sin_t = sin_a / bin_width;
        // Only the rotated square |c_rot|, |r_rot| < 2.5 bins has samples: walk its
        // bounding box (a pixel of margin) instead of the whole radius.
        const float half = ((float)(D / 2) + 0.5f) * bin_width * (fabsf(cos_a) + fabsf(sin_a));
        const int reach = min(radius, (int)ceilf(half) + 1);
        const float exp_scale = -1.f / ((float)D * (float)D * 0.5f);
        const float bins_per_degree = (float)N / 360.f;
        __syncthreads();  // warp 0 has finished with the previous keypoint's sums
        for (int b = lane; b < HIST; b += 32) own[b] = 0.f;
        __syncwarp();
        const int side = 2 * reach + 1, samples = side * side;
        for (int base = warp * 32; base < samples; base += blockDim.x) {
            const int k = base + lane;
            const int i = k / side - reach, j = k % side - reach;
            const float fi = (float)i, fj = (float)j;
            const float c_rot = fj * cos_t - fi * sin_t;
            const float r_rot = fj * sin_t + fi * cos_t;
            const float rbin = r_rot + (float)(D / 2) - 0.5f;
            const float cbin = c_rot + (float)(D / 2) - 0.5f;
            const int r = py + i, c = px + j;
            int key = -1;
            float votes[8];
#pragma unroll
            for (int v = 0; v < 8; ++v) votes[v] = 0.f;
            if (k < samples && rbin > -1.f && rbin < (float)D && cbin > -1.f && cbin < (float)D &&
                r > 0 && r < h - 1 && c > 0 && c < w - 1) {
                const float* p = image + r * w + c;
                float dx = __ldg(p + 1) - __ldg(p - 1);
                float dy = __ldg(p - w) - __ldg(p + w);
                float weight = expf((c_rot * c_rot + r_rot * r_rot) * exp_scale);
                float magnitude = sqrtf(dx * dx + dy * dy) * weight;
                float obin = (fast_atan2_degrees(dy, dx) - ori) * bins_per_degree;
                float r0 = floorf(rbin), c0 = floorf(cbin), o0 = floorf(obin);
                float fr = rbin - r0, fc = cbin - c0, fo = obin - o0;
                int o = (((int)o0 % N) + N) % N;
                key = ((int)r0 + 1) * ROW + ((int)c0 + 1) * (N + 2) + o;
                // Vote order (dr, dc, do) and product order as src/cpu/sift/descriptor.rs.
                const float wr[2] = {1.f - fr, fr}, wc[2] = {1.f - fc, fc}, wo[2] = {1.f - fo, fo};
#pragma unroll
                for (int v = 0; v < 8; ++v) votes[v] = magnitude * wr[v >> 2] * wc[(v >> 1) & 1] * wo[v & 1];
            }
            if (!__any_sync(0xffffffffu, key >= 0)) continue;  // a strip outside the window
            unsigned int peers = warp_reduce_by_key(key, votes);
            const bool writer = key >= 0 && reduce_by_key_writer(peers);
#pragma unroll
            for (int v = 0; v < VOTES; ++v) {
                if (writer) own[key + (v >> 2) * ROW + ((v >> 1) & 1) * (N + 2) + (v & 1)] += votes[v];
                __syncwarp();  // the next vote of another writer may go to this bin
            }
        }
        __syncthreads();
        for (int b = threadIdx.x; b < HIST; b += blockDim.x) {
            float sum = shared[b];
            for (int wp = 1; wp < n_warps; ++wp) sum += shared[wp * HIST + b];
            hist[b] = sum;
        }
        __syncthreads();
        if (warp != 0) continue;
        // Fold the wrap bins and gather the 128 values: lane l holds bins 4l .. 4l+3,
        // all of spatial cell l / 2.
        const int cell = lane >> 1, row = cell / D, col = cell % D;
        const int at = ((row + 1) * (D + 2) + (col + 1)) * (N + 2);
        float values[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            int o = (lane & 1) * 4 + q;
            float v = hist[at + o];
            if (o == 0) v += hist[at + N];
            if (o == 1) v += hist[at + N + 1];
            values[q] = v;
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
        if (root_sift) {
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
        descriptors[kp * (LENGTH / 4) + lane] = packed_bytes;
    }
}
