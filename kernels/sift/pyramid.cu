// The SIFT scale space of the octaves that fill the GPU many times over
// (docs/sift-reference.md section 1): each launch makes one Gaussian level of one or
// more octaves and, fused, its difference of Gaussians. Smaller octaves make several
// levels a launch (kernels/sift/levels.cu).
//
// A block blurs a tile (64x32 for big octaves, down to 16x8 so that a small octave
// still spreads over every SM; the host picks the shape per octave): it loads the
// tile and its halo of the level below into shared memory (reflected borders), runs
// the vertical pass over every column of the halo, then the horizontal pass, and
// writes the new level and `new - old` with the old value still in shared memory, so
// the DoG never re-reads a Gaussian.
// The CPU reference blurs rows first and sums each output's taps centre first; here
// the order is columns first and taps left to right, one FMA per tap, so the planes are
// the CPU's to within rounding (tests/cuda_sift.rs compares them with a tolerance),
// and the same whatever the tile shape (`add_tap`).
//
// Level 0 of octave 0 reads the u8 frame (upsampled 2x, bilinear, when asked);
// level 1 of a later octave reads every second pixel of level n of the octave before,
// which is then never stored. Octaves overlap in time (octave o+1 starts once level n
// of o exists), so one launch may carry a job of each of two octaves; levels above n,
// which no later octave waits for, run on a side branch of the frame's graph
// (src/cuda/sift/launch.rs).
// Where the host overlaps a frame's launches (the `_overlapped` copies, sm_90 on), a tile
// first waits for the rows of its source it reads, and its row's counter counts it once
// stored (common/tile_flow.cuh).
#include "common/sift_octaves.cuh"
#include "common/blur_jobs.cuh"
#include "common/sift_params.cuh"
#include "common/blur_tiles.cuh"
#include "common/tile_flow.cuh"

// TILE_W x TILE_H, the largest tile (the shared arrays are sized for it),
// BLUR_THREADS and the three kernels' radii (BLUR_NARROW_RADIUS, BLUR_MEDIUM_RADIUS,
// BLUR_MAX_RADIUS) are -D defines from src/cuda/abi.rs.

// The level a job of this kernel makes: the last level of a `LevelsJob` of one blurred
// level (its source, or octave 0's frame, before it), as one tile grid.
struct TiledLevel {
    int source, src_offset, src_width, src_height;
    int width, height;
    int gauss_out, dog_out, taps, radius;
    int tiles_x, tile_start, tile_w, tile_h;
};

__device__ __forceinline__ TiledLevel tiled_level(const LevelsJob& job) {
    const int k = job.n_levels - 1;
    return {job.source, job.src_offset, job.src_width, job.src_height, job.width, job.height,
            job.gauss_out[k], job.dog_out[k], job.taps[k], job.radius[k], job.tiles_x,
            job.tile_start, job.tile_w, job.tile_h};
}

// The two passes over one tile already in shared memory, vertical first: the vertical
// pass blurs the th rows of the tw + 2 r columns the horizontal pass reads (a 64x32 tile
// at radius 13: 90 columns, +41 % work, where a horizontal pass first blurs 58 rows,
// +81 %), then the horizontal pass makes the tile's outputs. Both read and write shared
// memory a float4 at a time: a vertical item is a quad of columns x RUN rows (1 row in
// a small tile), a horizontal one RUN consecutive outputs of a row, each summing its taps
// as the inputs stream through its registers (one FMA per tap, one 16-byte load per four
// inputs).
//
// Columns are shifted in shared memory so that every quad of outputs' centre column
// starts a float4: column c of the tile's input (the image's x0 - r + c) sits at
// `C - r + c`, with C (the centre of output 0) a multiple of 4 known at compile time.
// `blur_tile_exact` calls the passes with RT = r known at compile time (C = r rounded up
// to 4), where no tap or load is predicated; the radius-32 kernel calls them once with
// RT = C = MAXR and predicates taps and loads on r (only unusual sigmas reach it).


// One tile in the kernel for radii up to MAXR; `input` and `cols` at their arrays' first
// float (the layout's column 0).
template <int MAXR, int RT, int C, bool EXACT>
__device__ __forceinline__ void blur_tile(
    const TiledLevel& job, int r, const float* __restrict__ taps, const float* input, float* cols,
    float* pyramid, int x0, int y0) {
    constexpr int S = blur_row_stride(MAXR);
    const int tw = job.tile_w, th = job.tile_h;
    float w[RT + 1];
    load_weights<RT, EXACT>(w, taps, r);

    // The columns 0 .. C + r + tw of the shifted layout; output row y's first tap is
    // input row y.
    const int quads = (tw + C + r + 3) >> 2;
    // A tile narrower than TILE_W is an octave with fewer tiles than SMs, whose stage is
    // latency-bound: one row per vertical item spreads its pass over more threads (a 16x8
    // tile: 88 items instead of 22). Wide tiles keep RUN rows: fewer loads per output.
    if (tw < TILE_W)
        vertical_pass<MAXR, RT, EXACT, 1>(0, quads, th, 0, r, w, input, cols);
    else
        vertical_pass<MAXR, RT, EXACT, RUN>(0, quads, th, 0, r, w, input, cols);
    __syncthreads();

    // Horizontal: item = (RUN outputs x .. x + 3 of a row, row); output x + q's tap k reads
    // column x + q + C + k of the shifted layout, streamed a quad at a time.
    // Tiles inside the level whose planes (the Gaussian when stored, the DoG when there
    // is one) start 16-byte aligned (uniform per job) write a float4 of each per item,
    // without tests: octave 0's level 0 has no DoG, the last level no stored Gaussian.
    const bool vector_stores =
        x0 + tw <= job.width && y0 + th <= job.height &&
        ((job.width | max(job.gauss_out, 0) | max(job.dog_out, 0)) & 3) == 0;
    const int quads_log2 = __ffs(tw) - 3;  // tw / RUN items per row, a power of two
    for (int item = threadIdx.x; item < th * (tw / RUN); item += blockDim.x) {
        const int y = item >> quads_log2, x = (item & ((tw >> 2) - 1)) * RUN;
        const float4 gauss = horizontal_run<RT, C, EXACT>(cols + y * S + x, r, w);
        // The level below at the outputs: row y + r, column x + C of the shifted input.
        const float4 old = *reinterpret_cast<const float4*>(input + (y + r) * S + x + C);
        const float4 dog =
            make_float4(gauss.x - old.x, gauss.y - old.y, gauss.z - old.z, gauss.w - old.w);
        const int gx = x0 + x, gy = y0 + y, at = gy * job.width + gx;
        if (vector_stores) {  // most tiles
            if (job.gauss_out >= 0)
                *reinterpret_cast<float4*>(pyramid + job.gauss_out + at) = gauss;
            if (job.dog_out >= 0) *reinterpret_cast<float4*>(pyramid + job.dog_out + at) = dog;
            continue;
        }
        if (gy >= job.height) continue;
#pragma unroll
        for (int q = 0; q < RUN; ++q) {
            if (gx + q < job.width) {
                if (job.gauss_out >= 0) pyramid[job.gauss_out + at + q] = lane_of(gauss, q);
                if (job.dog_out >= 0) pyramid[job.dog_out + at + q] = lane_of(dog, q);
            }
        }
    }
}

// The centre column of output 0 in the shifted layout of an exact-radius copy.
__host__ __device__ constexpr int exact_centre(int r) { return (r + 3) & ~3; }

// The tile blurred by the copy of `blur_tile` made for its exact radius R (0..MAXR):
// no tap or load is predicated on the radius, where a predicated copy spends issue slots
// on the predicates and on the predicated-off taps of every smaller radius. One copy
// per radius; the branch is uniform per tile.
template <int MAXR, int R>
__device__ __forceinline__ void blur_tile_exact(
    const TiledLevel& job, const float* __restrict__ w, const float* input, float* cols,
    float* pyramid, int x0, int y0) {
    if (job.radius == R)
        blur_tile<MAXR, R, exact_centre(R), true>(job, R, w, input, cols, pyramid, x0, y0);
    else if constexpr (R > 0)
        blur_tile_exact<MAXR, R - 1>(job, w, input, cols, pyramid, x0, y0);
}

// One blur stage: every tile of the `n_jobs` jobs starting at `jobs`, grid-strided
// (`for_each_tile`), for radii up to MAXR. Dynamic shared memory: the input tile with its
// halo for the largest radius of the pipeline (`max_radius`, at most MAXR here), then the
// vertical pass's rows, both at the row stride `blur_row_stride(MAXR)`. EXACT: a copy of
// the passes per radius (`blur_tile_exact`), else one copy predicated on the radius (the
// radius-32 kernel: 33 copies of it would mostly add compile time).
template <int MAXR, int LOAD_ROWS, bool EXACT>
__device__ __forceinline__ void blur_dog_stage(
    const LevelsJob* __restrict__ jobs, int n_jobs, int total_tiles, int max_radius,
    const unsigned char* __restrict__ frame, float* pyramid, const float* __restrict__ taps,
    unsigned int* rows_done) {
    float* cols;
    float* shared = tile_arrays<MAXR>(max_radius, cols);
    int stored = -1;  // the counter of the block's stored tile not yet published
    for_each_tile(jobs, n_jobs, total_tiles, [&](const LevelsJob& levels, int x0, int y0, int row,
                                                 bool last) {
        if (last) allow_dependents(rows_done);
        const TiledLevel job = tiled_level(levels);
        const int r = job.radius;
        wait_for_source(rows_done, levels, y0, r);
        // Column 0 of the tile's input in the passes' shifted layout.
        const int centre = EXACT ? exact_centre(r) : MAXR;
        load_tile<MAXR, LOAD_ROWS>(job, frame, pyramid, shared, centre, r, x0, y0);
        __syncthreads();
        publish_tile(rows_done, stored);  // the block's tile before this one
        stored = tile_row_counter(rows_done, levels, row);
        const float* w = taps + job.taps + r;  // w[0..r]: the kernel is symmetric
        if constexpr (EXACT)
            blur_tile_exact<MAXR, MAXR>(job, w, shared, cols, pyramid, x0, y0);
        else
            blur_tile<MAXR, MAXR, MAXR, false>(job, r, w, shared, cols, pyramid, x0, y0);
        __syncthreads();  // the next tile reuses the shared arrays
    });
    publish_tile(rows_done, stored);
    wait_for_launch_before(rows_done);
}

// One kernel per window size, so each keeps only the registers its radius needs;
// the host launches, per stage, the smallest that holds the stage's largest radius.
// With a copy of the passes per radius neither needs to spill at the block counts below
// (the radius-16 kernel's predicated version took 122 registers).
// NVRTC 12.9: sm_90's code of the radius-8 kernel fits 40 registers (6 blocks/SM), and
// the radius-16 kernel 64 (4 blocks/SM) on every arch; sm_72/sm_87 code of the radius-8
// kernel spills at 6 blocks/SM, so there it keeps 4 (64 registers). More warps per SM:
// at 4 and 3 blocks/SM the big octaves' stages issued an instruction every 8-10 cycles
// per warp with DRAM 12-26 % busy (H200, ncu), i.e. waited on the SM, not on memory.
#if __CUDA_ARCH__ >= 900
#define BLUR_R8_MIN_BLOCKS 6
#else
#define BLUR_R8_MIN_BLOCKS 4
#endif
TILED_BLUR_KERNEL(sift_blur_dog_r8, blur_dog_stage, BLUR_NARROW_RADIUS, BLUR_R8_MIN_BLOCKS, 2, true, false)
TILED_BLUR_KERNEL(sift_blur_dog_r16, blur_dog_stage, BLUR_MEDIUM_RADIUS, 4, 2, true, false)
TILED_BLUR_KERNEL(sift_blur_dog_r32, blur_dog_stage, BLUR_MAX_RADIUS, 1, 2, false, false)
#if TILE_FLOW
TILED_BLUR_KERNEL(sift_blur_dog_r8_overlapped, blur_dog_stage, BLUR_NARROW_RADIUS, BLUR_R8_MIN_BLOCKS, 2, true, true)
TILED_BLUR_KERNEL(sift_blur_dog_r16_overlapped, blur_dog_stage, BLUR_MEDIUM_RADIUS, 4, 2, true, true)
#endif
