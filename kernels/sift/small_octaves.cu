// The small octaves of the scale space in one block (docs/sift-reference.md section 1).
//
// From the first octave of at most ~2000 pixels (60x33 at 1080p) to the last, a level
// is too small to spread over the GPU: as tiled launches (kernels/sift/pyramid.cu)
// each is one to a few tiles whose time is latency, nine of them in a chain at 1080p.
// Here one block makes them all, level after level, with the current level kept in
// shared memory; it runs on a side branch of the frame's graph, beside the bigger
// octaves' last levels.
//
// The jobs are pyramid.cu's `BlurJob`s of these octaves, octave after octave, level
// after level: level 1 of an octave reads every second pixel of level n of the octave
// before (from global memory, where this block or the tiled launches wrote it), every
// later level the level just made. Each job writes its Gaussian (when stored) and its
// DoG, as the tiled kernel does; the sums are the same taps in the same order.
#include "common/sift_octaves.cuh"

#define SMALL_THREADS 1024
// Outputs per thread and pass, from a window of RUN + 2 R inputs held in registers.
#define RUN 4
// The widest Gaussian the block blurs with: the host sends octaves here only when
// every level's radius is at most this.
#define SMALL_MAX_RADIUS 16
#define SOURCE_PLANE_HALVED 1

// Mirrors `BlurJob` in src/cuda/sift/plan.rs (pyramid.cu's; the tile fields unused here).
struct BlurJob {
    int source;
    int src_offset;
    int src_width, src_height;
    int width, height;
    int gauss_out;
    int dog_out;
    int taps;
    int radius;
    int tiles_x;
    int tile_start;
    int tile_w, tile_h;
};

// Shared-memory layout: the job table and the taps (read once, not once per level),
// then a level of at most `max_w` x `max_h` pixels: `level` holds the current level
// with `pad` reflected columns each side (rows at an odd stride), `rows` the
// horizontal pass with `pad` reflected rows above and below.
struct SmallLayout {
    int pad;
    int level_stride;  // (round_up(max_w, RUN) + 2 pad) | 1
    int rows_stride;   // round_up(max_w, RUN) | 1
    float* level;      // element (y, x) at level[y * level_stride + pad + x], x in [-pad, ...)
    float* rows;       // element (y, x) at rows[(y + pad) * rows_stride + x], y in [-pad, ...)
};

__device__ __forceinline__ int round_up_run(int v) { return (v + RUN - 1) / RUN * RUN; }

// Every (fast, slow) pair of a fast_count x slow_count grid, strided over the block:
// one division per thread, not one per item.
template <typename F>
__device__ __forceinline__ void for_each_pair(int fast_count, int slow_count, F&& body) {
    if (fast_count <= 0 || slow_count <= 0) return;
    const int slow_step = blockDim.x / fast_count, fast_step = blockDim.x - slow_step * fast_count;
    int fast = threadIdx.x % fast_count, slow = threadIdx.x / fast_count;
    while (slow < slow_count) {
        body(fast, slow);
        fast += fast_step;
        slow += slow_step;
        if (fast >= fast_count) {
            fast -= fast_count;
            ++slow;
        }
    }
}

// RUN outputs from a window whose output q is centred at index q + R: centre tap
// first, then k = 1..R, as the CPU reference sums them.
template <int R>
__device__ __forceinline__ void sum_window(const float* __restrict__ w, const float (&win)[RUN + 2 * R],
                                           float (&out)[RUN]) {
#pragma unroll
    for (int q = 0; q < RUN; ++q) out[q] = w[0] * win[q + R];
#pragma unroll
    for (int k = 1; k <= R; ++k) {
        const float wk = w[k];
#pragma unroll
        for (int q = 0; q < RUN; ++q) out[q] += wk * (win[q + R - k] + win[q + R + k]);
    }
}

// One level of radius R in two passes and two barriers. The horizontal pass makes
// every row the vertical one reads, the reflected ones too (a reflected row's blur is
// the blur of the row it reflects); the vertical pass makes every column of the new
// level, its reflected ones too, replaces the old level with it in shared memory, and
// stores the new Gaussian (when stored) and the DoG (new - old). A level is a few
// thousand pixels: the redundant rows and columns cost less than a barrier and a
// copying pass each.
template <int R>
__device__ __forceinline__ void blur_level(const SmallLayout& s, const BlurJob& job,
                                           const float* __restrict__ w, float* pyramid) {
    const int width = job.width, height = job.height;
    const int run_rows = round_up_run(height) + 2 * R, runs_x = round_up_run(width) / RUN;
    for_each_pair(run_rows, runs_x, [&](int row, int run) {
        const int y = row - R;
        const float* src = s.level + reflect101_repeated(y, height) * s.level_stride + s.pad +
                           run * RUN - R;
        float win[RUN + 2 * R], out[RUN];
#pragma unroll
        for (int t = 0; t < RUN + 2 * R; ++t) win[t] = src[t];
        sum_window<R>(w, win, out);
#pragma unroll
        for (int q = 0; q < RUN; ++q) s.rows[(y + s.pad) * s.rows_stride + run * RUN + q] = out[q];
    });
    __syncthreads();
    const int columns = round_up_run(width) + 2 * s.pad, runs_y = round_up_run(height) / RUN;
    for_each_pair(columns, runs_y, [&](int column, int run) {
        const int x = column - s.pad;
        const float* src =
            s.rows + (run * RUN - R + s.pad) * s.rows_stride + reflect101_repeated(x, width);
        float win[RUN + 2 * R], out[RUN];
#pragma unroll
        for (int t = 0; t < RUN + 2 * R; ++t) win[t] = src[t * s.rows_stride];
        sum_window<R>(w, win, out);
        const bool inside = x >= 0 && x < width;
#pragma unroll
        for (int q = 0; q < RUN; ++q) {
            const int y = run * RUN + q;
            if (y < height) {
                float* here = s.level + y * s.level_stride + s.pad + x;
                if (inside) {
                    const int at = y * width + x;
                    if (job.gauss_out >= 0) pyramid[job.gauss_out + at] = out[q];
                    pyramid[job.dog_out + at] = out[q] - *here;
                }
                *here = out[q];
            }
        }
    });
    __syncthreads();
}

// `blur_level` for the job's radius, compiled per radius so that no tap is predicated.
template <int R>
__device__ __forceinline__ void blur_level_exact(const SmallLayout& s, const BlurJob& job,
                                                 const float* __restrict__ w, float* pyramid) {
    if (job.radius == R)
        blur_level<R>(s, job, w, pyramid);
    else if constexpr (R > 0)
        blur_level_exact<R - 1>(s, job, w, pyramid);
}

// `jobs`: the small octaves' levels in order; `max_width` x `max_height`: the largest
// of them; `pad`: their largest radius; `taps`: the pipeline's tap table, `n_taps`
// floats. Dynamic shared memory: the host's `small_octave_shared_bytes` for the same
// sizes (taps, jobs, level, rows).
extern "C" __global__ void __launch_bounds__(SMALL_THREADS, 1)
    sift_small_octaves(const BlurJob* __restrict__ jobs, int n_jobs, int max_width, int max_height,
                       int pad, float* pyramid, const float* __restrict__ taps, int n_taps) {
    extern __shared__ float shared[];
    float* shared_taps = shared;
    BlurJob* shared_jobs = (BlurJob*)(shared + round_up_run(n_taps));
    for (int i = threadIdx.x; i < n_taps; i += blockDim.x) shared_taps[i] = taps[i];
    const int job_words = n_jobs * (int)(sizeof(BlurJob) / sizeof(int));
    for (int i = threadIdx.x; i < job_words; i += blockDim.x)
        ((int*)shared_jobs)[i] = ((const int*)jobs)[i];
    SmallLayout s;
    s.pad = pad;
    s.level_stride = (round_up_run(max_width) + 2 * pad) | 1;
    s.rows_stride = round_up_run(max_width) | 1;
    s.level = (float*)(shared_jobs + n_jobs);
    s.rows = s.level + max_height * s.level_stride;
    __syncthreads();
    for (int j = 0; j < n_jobs; ++j) {
        const BlurJob& job = shared_jobs[j];
        if (job.source == SOURCE_PLANE_HALVED) {
            // An octave's first level: its base is every second pixel of level n of
            // the octave before, in global memory (written before this kernel, or by
            // this block before the last barrier); its reflected columns too.
            const float* src = pyramid + job.src_offset;
            const int columns = round_up_run(job.width) + 2 * s.pad;
            for_each_pair(columns, job.height, [&](int column, int y) {
                const int x = reflect101_repeated(column - s.pad, job.width);
                s.level[y * s.level_stride + column] = src[(2 * y) * job.src_width + 2 * x];
            });
            __syncthreads();
        }
        blur_level_exact<SMALL_MAX_RADIUS>(s, job, shared_taps + job.taps + job.radius, pyramid);
    }
}
