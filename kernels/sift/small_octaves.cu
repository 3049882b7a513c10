// The small octaves of the scale space in two blocks (docs/sift-reference.md section 1).
//
// From the first octave of at most ~2000 pixels (60x33 at 1080p) to the last, a level
// is too small to spread over the GPU: as tiled launches (kernels/sift/pyramid.cu)
// each octave is two dependent launches of one to a few tiles whose time is latency.
// Here two blocks make them all, level after level, with the current level kept in
// shared memory: one the chain that each next octave starts from (levels 1..n), the
// other the levels above n, which nothing after them waits on; they run on a side
// branch of the frame's graph, beside the bigger octaves' last levels.
//
// The jobs (`BlurJob`) are these octaves' levels: the chain's, octave after octave, then
// the tail's. Level 1 of an octave reads every second pixel of level n of the octave
// before (from global memory, where the chain block or the tiled launches wrote it),
// level n + 1 reads level n from global memory once the chain block has published it,
// every other level the level just made, blurred from it as the CPU reference does.
// Each job writes its Gaussian (when stored) and its DoG; the passes are pyramid.cu's
// (columns first, taps left to right with the same roundings, `add_tap`).
#include "common/sift_octaves.cuh"
#include "common/blur_jobs.cuh"
#include "common/sift_params.cuh"

// SMALL_THREADS (the block's threads), SMALL_RUN (outputs per thread and pass, from a
// window of SMALL_RUN + 2 R inputs held in registers) and SMALL_MAX_RADIUS (the widest
// Gaussian the block blurs with) are -D defines from src/cuda/abi.rs.

// Shared-memory layout of a level of at most `max_w` x `max_h` pixels (after the job
// table and the taps): `level` holds the current level with `pad` reflected rows above
// and below, `cols` the vertical pass with `pad` reflected columns each side, both at
// odd strides. Widths and heights are rounded up to SMALL_RUN; the extra rows and columns
// hold reflected values too, so every window reads defined floats.
struct SmallLayout {
    int pad;
    int level_stride;  // round_up(max_w) | 1
    int cols_stride;   // (round_up(max_w) + 2 pad) | 1
    float* level;      // (y, x) at level[(y + pad) * level_stride + x], y in [-pad, ...)
    float* cols;       // (y, x) at cols[y * cols_stride + pad + x], x in [-pad, ...)
};

__device__ __forceinline__ int round_up_run(int v) {
    return (v + SMALL_RUN - 1) / SMALL_RUN * SMALL_RUN;
}

// SMALL_RUN outputs of radius R from their window, taps left to right as pyramid.cu sums them.
template <int R>
__device__ __forceinline__ void blur_window(const float (&w)[R + 1], const float (&win)[SMALL_RUN + 2 * R],
                                            float (&out)[SMALL_RUN]) {
#pragma unroll
    for (int t = 0; t < SMALL_RUN + 2 * R; ++t) {
#pragma unroll
        for (int q = 0; q < SMALL_RUN; ++q) add_tap<R, true>(out[q], t - q - R, R, w, win[t]);
    }
}

// One level of radius R in two passes and two barriers. The vertical pass makes every
// column the horizontal one reads, the reflected ones too (a reflected column's blur is
// the blur of the column it reflects); the horizontal pass makes every row of the new
// level, its reflected ones too, replaces the old level with it in shared memory, and
// stores the new Gaussian (when stored) and the DoG (new - old). A level is a few
// thousand pixels: the redundant rows and columns cost less than a barrier and a
// copying pass each.
template <int R>
__device__ __forceinline__ void blur_level(const SmallLayout& s, const BlurJob& job,
                                           const float* __restrict__ taps, float* pyramid) {
    float w[R + 1];
#pragma unroll
    for (int k = 0; k <= R; ++k) w[k] = taps[k];
    const int width = job.width, height = job.height;
    const int run_width = round_up_run(width), run_height = round_up_run(height);
    for_each_item(run_width + 2 * R, run_height / SMALL_RUN, [&](int column, int run) {
        const int x = column - R;
        const float* src =
            s.level + (run * SMALL_RUN - R + s.pad) * s.level_stride + reflect101_repeated(x, width);
        float win[SMALL_RUN + 2 * R], out[SMALL_RUN];
#pragma unroll
        for (int t = 0; t < SMALL_RUN + 2 * R; ++t) win[t] = src[t * s.level_stride];
        blur_window<R>(w, win, out);
#pragma unroll
        for (int q = 0; q < SMALL_RUN; ++q) s.cols[(run * SMALL_RUN + q) * s.cols_stride + s.pad + x] = out[q];
    });
    __syncthreads();
    for_each_item(run_height + 2 * s.pad, run_width / SMALL_RUN, [&](int row, int run) {
        const int y = row - s.pad;
        const float* src =
            s.cols + reflect101_repeated(y, height) * s.cols_stride + s.pad + run * SMALL_RUN - R;
        float win[SMALL_RUN + 2 * R], out[SMALL_RUN];
#pragma unroll
        for (int t = 0; t < SMALL_RUN + 2 * R; ++t) win[t] = src[t];
        blur_window<R>(w, win, out);
        const bool inside = y >= 0 && y < height;
#pragma unroll
        for (int q = 0; q < SMALL_RUN; ++q) {
            const int x = run * SMALL_RUN + q;
            float* here = s.level + row * s.level_stride + x;
            if (inside && x < width) {
                const int at = y * width + x;
                if (job.gauss_out >= 0) pyramid[job.gauss_out + at] = out[q];
                pyramid[job.dog_out + at] = out[q] - *here;
            }
            *here = out[q];
        }
    });
    __syncthreads();
}

// `blur_level` for the job's radius, compiled per radius so that no tap is predicated.
template <int R>
__device__ __forceinline__ void blur_level_exact(const SmallLayout& s, const BlurJob& job,
                                                 const float* __restrict__ taps, float* pyramid) {
    if (job.radius == R)
        blur_level<R>(s, job, taps, pyramid);
    else if constexpr (R > 0)
        blur_level_exact<R - 1>(s, job, taps, pyramid);
}

// The chain block's hand-over of a level to the tail block: every thread's stores made
// visible device-wide, then the count of published chain levels raised.
__device__ __forceinline__ void publish_level(unsigned int* published) {
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(published, 1u);
}

// The tail block's wait for the chain block's first `count` published levels.
__device__ __forceinline__ void wait_for_levels(const unsigned int* published, int count) {
    if (threadIdx.x == 0)
        while (*(volatile const unsigned int*)published < (unsigned int)count) __nanosleep(64);
    __threadfence();
    __syncthreads();
}

// Dynamic shared memory: the host's `small_octave_shared_bytes` for the sizes of `p`
// (taps, jobs, level, columns). Two blocks: the one that starts first makes the chain
// (jobs [0, n_chain_jobs): levels 1..n of every octave, each octave's base from the
// octave before), the other the tail (levels n+1 and n+2 of every octave, each from
// level n as the chain publishes it). Roles go by start, not by block index, so the
// tail never waits on a block that has not started.
extern "C" __global__ void __launch_bounds__(SMALL_THREADS, 1)
    sift_small_octaves(const SiftSmallOctavesParams p) {
    const int max_width = p.max_width, max_height = p.max_height, pad = p.pad, n_taps = p.n_taps;
    float* pyramid = p.pyramid;
    extern __shared__ float shared[];
    // No static shared memory: the dynamic may take the whole of the block's.
    const bool chain =
        __syncthreads_or(threadIdx.x == 0 && atomicAdd(&p.counters->small_roles, 1u) == 0) != 0;
    const int first = chain ? 0 : p.n_chain_jobs, n_jobs = (chain ? p.n_chain_jobs : p.n_jobs) - first;
    const BlurJob* jobs = p.jobs + first;
    float* shared_taps = shared;
    BlurJob* shared_jobs = (BlurJob*)(shared + round_up_run(n_taps));
    for (int i = threadIdx.x; i < n_taps; i += blockDim.x) shared_taps[i] = __ldg(p.taps + i);
    const int job_words = n_jobs * (int)(sizeof(BlurJob) / sizeof(int));
    for (int i = threadIdx.x; i < job_words; i += blockDim.x)
        ((int*)shared_jobs)[i] = __ldg((const int*)jobs + i);
    SmallLayout s;
    s.pad = pad;
    s.level_stride = round_up_run(max_width) | 1;
    s.cols_stride = (round_up_run(max_width) + 2 * pad) | 1;
    s.level = (float*)(shared_jobs + p.n_jobs);
    s.cols = s.level + (round_up_run(max_height) + 2 * pad) * s.level_stride;
    __syncthreads();
    int held = -1;  // the level in shared memory (its offset in the pyramid), or none
    for (int j = 0; j < n_jobs; ++j) {
        const BlurJob& job = shared_jobs[j];
        if (job.source == SOURCE_PLANE_HALVED || job.src_offset != held) {
            // The job's source from global memory, its reflected rows too: an octave's
            // base (every second pixel of level n of the octave before, written before
            // this kernel or by the chain block), or, in the tail, level n of the octave.
            if (job.wait_for > 0) wait_for_levels(&p.counters->small_published, job.wait_for);
            const int step = job.source == SOURCE_PLANE_HALVED ? 2 : 1;
            const float* src = pyramid + job.src_offset;
            const int run_width = round_up_run(job.width);
            for_each_item(run_width, round_up_run(job.height) + 2 * s.pad, [&](int x, int row) {
                const int sy = reflect101_repeated(row - s.pad, job.height);
                const int sx = reflect101_repeated(x, job.width);
                const float* at = src + (step * sy) * job.src_width + step * sx;
                // The tail reads the chain block's levels past this SM's L1, whose lines
                // may be older.
                s.level[row * s.level_stride + x] = chain ? *at : __ldcg(at);
            });
            __syncthreads();
        }
        blur_level_exact<SMALL_MAX_RADIUS>(s, job, shared_taps + job.taps + job.radius, pyramid);
        held = job.gauss_out;
        if (job.publishes) publish_level(&p.counters->small_published);
    }
}
