// The SIFT scale space (docs/sift-reference.md section 1): each launch makes one
// Gaussian level of one or more octaves and, fused, its difference of Gaussians.
//
// A block blurs a 32x32 tile: it loads the tile and its halo of the level below
// into shared memory (reflected borders), runs the horizontal pass over every row
// of the halo, then the vertical pass, and writes the new level and `new - old`
// with the old value still in shared memory, so the DoG never re-reads a Gaussian.
// The pass order and the summation order of the taps are the CPU reference's, and
// the module compiles without FMA contraction: the planes are the CPU's, bit for bit.
//
// Level 0 of octave 0 reads the u8 frame (upsampled 2x, bilinear, when asked);
// level 1 of a later octave reads every second pixel of level n of the octave before,
// which is then never stored. Octaves overlap in time (octave o+1 starts once level n
// of o exists), so one launch may carry a job of each of two octaves.
#include "common/sift_octaves.cuh"

#define TILE 32
#define BLUR_THREADS 256

// Where a job's input level comes from.
#define SOURCE_PLANE 0            // a float plane of the output's size
#define SOURCE_PLANE_HALVED 1     // every second pixel of a float plane twice as large
#define SOURCE_FRAME 2            // the u8 frame
#define SOURCE_FRAME_UPSAMPLED 3  // the u8 frame, upsampled 2x bilinearly

// Mirrors `BlurJob` in src/cuda/sift/plan.rs (repr(C), twelve i32).
struct BlurJob {
    int source;
    int src_offset;              // first float of the source plane (plane sources)
    int src_width, src_height;   // the source plane or frame
    int width, height;           // the level made
    int gauss_out;               // first float of the output level, -1: not stored
    int dog_out;                 // first float of the DoG plane (output - input), -1: none
    int taps;                    // first tap of the kernel in the tap table
    int radius;
    int tiles_x;
    int tile_start;              // first tile of this job among the launch's tiles
};

// One coordinate of OpenCV's INTER_LINEAR 2x upsampling (src/cpu/sift/pyramid.rs
// `upsample_2x`): destination d samples (d + 0.5) / 2 - 0.5, replicated border.
__device__ __forceinline__ void upsample_taps(int d, int n, int& i0, int& i1, float& frac) {
    float f = ((float)d + 0.5f) * 0.5f - 0.5f;
    float fl = floorf(f);
    int i = (int)fl;
    if (i < 0) {
        i0 = 0; i1 = 0; frac = 0.f;
    } else if (i >= n - 1) {
        i0 = n - 1; i1 = n - 1; frac = 0.f;
    } else {
        i0 = i; i1 = i + 1; frac = f - fl;
    }
}

__device__ __forceinline__ float source_value(
    const BlurJob& job, const unsigned char* frame, const float* pyramid, int x, int y) {
    switch (job.source) {
    case SOURCE_PLANE:
        return pyramid[job.src_offset + y * job.width + x];
    case SOURCE_PLANE_HALVED:
        return pyramid[job.src_offset + (2 * y) * job.src_width + 2 * x];
    case SOURCE_FRAME:
        return (float)frame[y * job.src_width + x];
    default: {
        int x0, x1, y0, y1;
        float fx, fy;
        upsample_taps(x, job.src_width, x0, x1, fx);
        upsample_taps(y, job.src_height, y0, y1, fy);
        const unsigned char* r0 = frame + y0 * job.src_width;
        const unsigned char* r1 = frame + y1 * job.src_width;
        float top = (float)r0[x0] * (1.f - fx) + (float)r0[x1] * fx;
        float bottom = (float)r1[x0] * (1.f - fx) + (float)r1[x1] * fx;
        return top * (1.f - fy) + bottom * fy;
    }
    }
}

// One blur stage: every tile of the `n_jobs` jobs starting at `jobs`, grid-strided.
// Dynamic shared memory: (TILE + 2 R)^2 + (TILE + 2 R) * TILE floats for the largest
// radius R of the pipeline (`max_radius`).
extern "C" __global__ void __launch_bounds__(BLUR_THREADS) sift_blur_dog(
    const BlurJob* __restrict__ jobs, int n_jobs, int total_tiles, int max_radius,
    const unsigned char* __restrict__ frame, float* pyramid, const float* __restrict__ taps) {
    extern __shared__ float shared[];
    const int span_max = TILE + 2 * max_radius;
    float* input = shared;                       // [span][span]
    float* rows = shared + span_max * span_max;  // [span][TILE], horizontal pass
    for (int t = blockIdx.x; t < total_tiles; t += gridDim.x) {
        int j = 0;
        while (j + 1 < n_jobs && t >= jobs[j + 1].tile_start) ++j;
        const BlurJob job = jobs[j];
        const int r = job.radius, span = TILE + 2 * r;
        const int tile = t - job.tile_start;
        const int x0 = (tile % job.tiles_x) * TILE, y0 = (tile / job.tiles_x) * TILE;
        const float* w = taps + job.taps + r;  // w[-r..r]
        for (int k = threadIdx.x; k < span * span; k += blockDim.x) {
            int ry = k / span, rx = k - ry * span;
            int y = reflect101_repeated(y0 + ry - r, job.height);
            int x = reflect101_repeated(x0 + rx - r, job.width);
            input[ry * span + rx] = source_value(job, frame, pyramid, x, y);
        }
        __syncthreads();
        for (int k = threadIdx.x; k < span * TILE; k += blockDim.x) {
            int ry = k / TILE, c = k - ry * TILE;
            const float* centre = input + ry * span + c + r;
            float h = w[0] * centre[0];
            for (int d = 1; d <= r; ++d) h += w[d] * (centre[-d] + centre[d]);
            rows[ry * TILE + c] = h;
        }
        __syncthreads();
        for (int k = threadIdx.x; k < TILE * TILE; k += blockDim.x) {
            int ry = k / TILE, c = k - ry * TILE;
            int x = x0 + c, y = y0 + ry;
            if (x < job.width && y < job.height) {
                const float* centre = rows + (ry + r) * TILE + c;
                float v = w[0] * centre[0];
                for (int d = 1; d <= r; ++d) v += w[d] * (centre[-d * TILE] + centre[d * TILE]);
                int at = y * job.width + x;
                if (job.gauss_out >= 0) pyramid[job.gauss_out + at] = v;
                if (job.dog_out >= 0) pyramid[job.dog_out + at] = v - input[(ry + r) * span + c + r];
            }
        }
        __syncthreads();  // the next tile reuses the shared arrays
    }
}
