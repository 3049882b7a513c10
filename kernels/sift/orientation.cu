// Dominant orientations (docs/sift-reference.md section 4): one block per refined
// extremum, taken from a work queue (common/block_queue.cuh) widest first, its warps
// taking every W-th strip of 32 neighbouring window pixels (coalesced reads). Each
// thread adds its votes to its own column of a 36-bin shared histogram (one load, add
// and store per sample: no atomics, no reduction per strip); then each warp sums its
// 32 columns, lane b taking bin b, and the warps' sums are added in warp order, so the
// sums are the same every run. Rows of the columns are ORIENTATION_BINS x (T + 1)
// apart, so lane b's reads of its row and a warp's writes of one bin fall in distinct
// banks. ORIENTATION_BINS (36) is a -D define from src/cuda/abi.rs.
// Every peak >= 0.8 of the highest becomes a keypoint, appended (warp-aggregated) to
// the keypoint lists in input-pixel coordinates, ready for the ordering kernels.
#include "common/sift_octaves.cuh"
#include "common/block_queue.cuh"
#include "common/gradient.cuh"
#include "common/read_only.cuh"
#include "common/sift_params.cuh"
#include "common/warp_append.cuh"

extern "C" __global__ void sift_orientation(const SiftOrientationParams p) {
    // Bin b of thread t at columns[b * (T + 1) + t]; then per warp raw[ORIENTATION_BINS]; then
    // smooth[ORIENTATION_BINS] (T = blockDim.x).
    extern __shared__ float shared[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    const int row = blockDim.x + 1;
    float* columns = shared;
    float* raw = shared + ORIENTATION_BINS * row + warp * ORIENTATION_BINS;
    float* smooth = shared + ORIENTATION_BINS * row + n_warps * ORIENTATION_BINS;
    const int n = min(__ldg(&p.counters->extrema), (unsigned int)p.extremum_capacity);
    // Taking the next extremum waits for warp 0 to finish with this one's histograms.
    for (int e = block_queue_take(&p.counters->orientation_queue, n, p.layers, p.extrema.octave_layer, -1); e < n;
         e = block_queue_take(&p.counters->orientation_queue, n, p.layers, p.extrema.octave_layer, e)) {
        const int packed = __ldg(&p.extrema.octave_layer[e]);
        const SiftOctave oct = ldg_words(&p.octaves[packed_octave(packed)]);
        const int w = oct.width, h = oct.height;
        const float* image = gaussian_layer(p.pyramid, oct, packed);
        const int x = __ldg(&p.extrema.col[e]), y = __ldg(&p.extrema.row[e]);
        const float scale = __ldg(&p.extrema.scale[e]);
        const int radius = (int)rintf(1.5f * 3.f * scale);
        const float sigma = 1.5f * scale;
        // The Gaussian weight exp(-(i^2 + j^2) / (2 sigma^2)) as a power of two.
        const float log2_weight_scale = -1.44269504f / (2.f * sigma * sigma);
        for (int k = threadIdx.x; k < ORIENTATION_BINS * row / 4; k += blockDim.x)
            reinterpret_cast<float4*>(columns)[k] = make_float4(0.f, 0.f, 0.f, 0.f);
        __syncthreads();
        // The window's samples k = row * side + column in strips of 32: the lane's row
        // and column advance by (step / side, step % side) per strip, so no lane divides
        // per sample.
        const int side = 2 * radius + 1, step = (int)blockDim.x;
        const int first = warp * 32 + lane, row_step = step / side, column_step = step % side;
        int window_row = first / side, column = first % side;
        for (int base = warp * 32; base < side * side; base += step) {
            const int i = window_row - radius, j = column - radius;
            const int py = y + i, px = x + j;
            if (window_row < side && py > 0 && py < h - 1 && px > 0 && px < w - 1) {
                const WeightedGradient g = weighted_gradient(
                    image, (unsigned int)(py * w + px), w, (float)(i * i + j * j) * log2_weight_scale);
                // Degrees in [0, 360]: bins 0 .. 36, where 36 is bin 0 again.
                int bin = (int)rintf(g.degrees * ((float)ORIENTATION_BINS / 360.f));
                if (bin >= ORIENTATION_BINS) bin -= ORIENTATION_BINS;
                columns[bin * row + threadIdx.x] += g.magnitude;
            }
            column += column_step;
            window_row += row_step;
            if (column >= side) {
                column -= side;
                ++window_row;
            }
        }
        __syncthreads();
        // The warp's 32 columns: lane b sums bin b; bins 32 .. 35 by 8 lanes each.
        const float* mine = columns + warp * 32;
        float sum = 0.f;
#pragma unroll
        for (int k = 0; k < 32; ++k) sum += mine[lane * row + k];
        raw[lane] = sum;
        const int extra = 32 + (lane >> 3), part = (lane & 7) * 4;
        float tail = 0.f;
#pragma unroll
        for (int k = 0; k < 4; ++k) tail += mine[extra * row + part + k];
#pragma unroll
        for (int offset = 4; offset > 0; offset >>= 1) tail += __shfl_xor_sync(0xffffffffu, tail, offset);
        if ((lane & 7) == 0) raw[extra] = tail;
        __syncthreads();
        float* warp_sums = shared + ORIENTATION_BINS * row;
        for (int b = threadIdx.x; b < ORIENTATION_BINS; b += blockDim.x) {
            float total = warp_sums[b];
            for (int w = 1; w < n_warps; ++w) total += warp_sums[w * ORIENTATION_BINS + b];
            warp_sums[b] = total;
        }
        __syncthreads();
        if (warp != 0) continue;
        for (int b = lane; b < ORIENTATION_BINS; b += 32) {
            auto at = [raw](int i) { return raw[(i + ORIENTATION_BINS) % ORIENTATION_BINS]; };
            smooth[b] = (at(b - 2) + at(b + 2)) * (1.f / 16.f) + (at(b - 1) + at(b + 1)) * (4.f / 16.f) +
                        at(b) * (6.f / 16.f);
        }
        __syncwarp();
        float best = -3.402823466e38f;
        for (int b = 0; b < ORIENTATION_BINS; ++b) best = fmaxf(best, smooth[b]);
        const float threshold = best * 0.8f;
        const float factor = ldexpf(1.f, packed_octave(packed) + p.first_octave);
        for (int b = lane; b < ORIENTATION_BINS; b += 32) {
            float left = smooth[(b + ORIENTATION_BINS - 1) % ORIENTATION_BINS], right = smooth[(b + 1) % ORIENTATION_BINS];
            float v = smooth[b];
            if (v > left && v > right && v >= threshold) {
                float bin = (float)b + 0.5f * (left - right) / (left - 2.f * v + right);
                if (bin < 0.f) bin += (float)ORIENTATION_BINS;
                else if (bin >= (float)ORIENTATION_BINS) bin -= (float)ORIENTATION_BINS;
                float angle = 360.f - 360.f / (float)ORIENTATION_BINS * bin;
                if (fabsf(angle - 360.f) < 1.1920929e-7f || angle >= 360.f) angle = 0.f;
                unsigned int slot = warp_append(&p.counters->keypoints, 0);
                if (slot < (unsigned int)p.capacity) {
                    p.keypoints.x[slot] = __ldg(&p.extrema.x[e]) * factor;
                    p.keypoints.y[slot] = __ldg(&p.extrema.y[e]) * factor;
                    p.keypoints.size[slot] = 2.f * scale * factor;
                    p.keypoints.angle[slot] = angle;
                    p.keypoints.response[slot] = __ldg(&p.extrema.response[e]);
                    p.keypoints.octave_layer[slot] = packed;
                }
            }
        }
    }
}
