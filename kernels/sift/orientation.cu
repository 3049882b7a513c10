// Dominant orientations (docs/sift-reference.md section 4): one warp per refined
// extremum. The warp walks the square window row by row (common/row_runs.cuh: each
// row's run cut to the octave's interior), 32 neighbouring samples at a time, so reads
// are coalesced along rows and no lane idles on a short row. Each strip's votes go into
// the warp's own 36-bin shared histogram through the multi-key warp reduction (one
// writer per bin, no atomics), in sample order, so the sums are the same every run.
// Every peak >= 0.8 of the highest becomes a keypoint, appended (warp-aggregated) to
// the keypoint lists in input-pixel coordinates, ready for the ordering kernels.
#include "common/sift_octaves.cuh"
#include "common/fast_atan2.cuh"
#include "common/row_runs.cuh"
#include "common/warp_append.cuh"
#include "common/warp_reduce_by_key.cuh"

#define BINS 36

extern "C" __global__ void sift_orientation(
    const float* __restrict__ pyramid, const SiftOctave* __restrict__ octaves, int first_octave,
    const unsigned int* __restrict__ extremum_count, int extremum_capacity,
    const int* __restrict__ ext_col, const int* __restrict__ ext_row,
    const int* __restrict__ ext_octave_layer, const float* __restrict__ ext_x,
    const float* __restrict__ ext_y, const float* __restrict__ ext_scale,
    const float* __restrict__ ext_response, unsigned int* keypoint_count, int capacity,
    float* __restrict__ kp_x, float* __restrict__ kp_y, float* __restrict__ kp_size,
    float* __restrict__ kp_angle, float* __restrict__ kp_response,
    int* __restrict__ kp_octave_layer) {
    extern __shared__ float shared[];  // per warp: raw[BINS], smooth[BINS]
    const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    float* raw = shared + (threadIdx.x >> 5) * 2 * BINS;
    float* smooth = raw + BINS;
    const int n = min(*extremum_count, (unsigned int)extremum_capacity);
    for (int e = blockIdx.x * warps + (threadIdx.x >> 5); e < n; e += gridDim.x * warps) {
        const int packed = ext_octave_layer[e];
        const SiftOctave oct = octaves[packed_octave(packed)];
        const int w = oct.width, h = oct.height;
        const float* image = pyramid + oct.gauss + packed_layer(packed) * w * h;
        const int x = ext_col[e], y = ext_row[e];
        const float scale = ext_scale[e];
        const int radius = (int)rintf(1.5f * 3.f * scale);
        const float sigma = 1.5f * scale;
        const float exp_scale = -1.f / (2.f * sigma * sigma);
        for (int b = lane; b < BINS; b += 32) raw[b] = 0.f;
        __syncwarp();
        // Columns of the window inside the octave's interior, the same for every row.
        const int first = max(-radius, 1 - x), last = min(radius, w - 2 - x);
        for (int top = -radius; top <= radius; top += 32) {
            const int row = top + lane;
            const bool inside = row <= radius && y + row >= 1 && y + row <= h - 2;
            int start;
            const int total = row_runs_scan(inside ? max(last - first + 1, 0) : 0, start);
            for (int base = 0; base < total; base += 32) {
                const int sample = base + lane;
                int j;
                const int i = top + row_runs_locate(sample, start, first, j);
                int bin = -1;
                float vote[1] = {0.f};
                if (sample < total) {
                    const float* p = image + (y + i) * w + (x + j);
                    float dx = __ldg(p + 1) - __ldg(p - 1);
                    float dy = __ldg(p - w) - __ldg(p + w);
                    float weight = expf((float)(i * i + j * j) * exp_scale);
                    float degrees = fast_atan2_degrees(dy, dx);
                    bin = (int)rintf(degrees * (float)BINS / 360.f);
                    bin = ((bin % BINS) + BINS) % BINS;
                    vote[0] = weight * sqrtf(dx * dx + dy * dy);
                }
                unsigned int peers = warp_reduce_by_key(bin, vote);
                if (bin >= 0 && reduce_by_key_writer(peers)) raw[bin] += vote[0];
                __syncwarp();
            }
        }
        for (int b = lane; b < BINS; b += 32) {
            auto at = [raw](int i) { return raw[(i + BINS) % BINS]; };
            smooth[b] = (at(b - 2) + at(b + 2)) * (1.f / 16.f) + (at(b - 1) + at(b + 1)) * (4.f / 16.f) +
                        at(b) * (6.f / 16.f);
        }
        __syncwarp();
        float best = -3.402823466e38f;
        for (int b = 0; b < BINS; ++b) best = fmaxf(best, smooth[b]);
        const float threshold = best * 0.8f;
        const float factor = ldexpf(1.f, packed_octave(packed) + first_octave);
        for (int b = lane; b < BINS; b += 32) {
            float left = smooth[(b + BINS - 1) % BINS], right = smooth[(b + 1) % BINS];
            float v = smooth[b];
            if (v > left && v > right && v >= threshold) {
                float bin = (float)b + 0.5f * (left - right) / (left - 2.f * v + right);
                if (bin < 0.f) bin += (float)BINS;
                else if (bin >= (float)BINS) bin -= (float)BINS;
                float angle = 360.f - 360.f / (float)BINS * bin;
                if (fabsf(angle - 360.f) < 1.1920929e-7f || angle >= 360.f) angle = 0.f;
                unsigned int slot = warp_append(keypoint_count, 0);
                if (slot < (unsigned int)capacity) {
                    kp_x[slot] = ext_x[e] * factor;
                    kp_y[slot] = ext_y[e] * factor;
                    kp_size[slot] = 2.f * scale * factor;
                    kp_angle[slot] = angle;
                    kp_response[slot] = ext_response[e];
                    kp_octave_layer[slot] = packed;
                }
            }
        }
        __syncwarp();  // every lane has read the histograms before they are zeroed
    }
}
