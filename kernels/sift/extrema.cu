// Scale-space extrema of every octave in one launch (docs/sift-reference.md section 2).
// A warp tests a strip of STRIP columns and BAND rows of one octave in every DoG layer:
// lane l holds column strip_start - 1 + l (lanes 0 and 31 only lend their column to
// their neighbours). Each DoG plane is read once per strip, a row at a time (coalesced),
// its 3x3 minimum and maximum come from the two neighbouring lanes (shuffles) and the
// rows above and below (registers), and the three planes around a layer are kept in
// registers while the next one is read. The 26-neighbour test is then branch-free:
// min and max over the 3x3x3 block (the centre included: the test is not strict) and
// two comparisons. Survivors are compacted into structure-of-arrays candidate lists
// with warp-aggregated atomics, so the refinement kernel gets full warps.
#include "common/sift_octaves.cuh"
#include "common/warp_append.cuh"

#define STRIP 30  // columns a warp tests
#define BAND 8    // rows a lane tests

// A plane's values at this lane's column and their 3x3 minimum and maximum, for rows
// y0 .. y0 + BAND - 1 (rows past the plane read its last row: those are never tested).
struct PlaneBand {
    float value[BAND], lo[BAND], hi[BAND];
};

__device__ __forceinline__ PlaneBand plane_band(const float* __restrict__ column, int width,
                                                int height, int y0) {
    float row_lo[BAND + 2], row_hi[BAND + 2];
    PlaneBand band;
#pragma unroll
    for (int t = 0; t < BAND + 2; ++t) {
        const float centre = __ldg(column + min(y0 - 1 + t, height - 1) * width);
        const float left = __shfl_up_sync(0xffffffffu, centre, 1);
        const float right = __shfl_down_sync(0xffffffffu, centre, 1);
        row_lo[t] = fminf(fminf(left, centre), right);
        row_hi[t] = fmaxf(fmaxf(left, centre), right);
        if (t >= 1 && t <= BAND) band.value[t - 1] = centre;
    }
#pragma unroll
    for (int r = 0; r < BAND; ++r) {
        band.lo[r] = fminf(fminf(row_lo[r], row_lo[r + 1]), row_lo[r + 2]);
        band.hi[r] = fmaxf(fmaxf(row_hi[r], row_hi[r + 1]), row_hi[r + 2]);
    }
    return band;
}

// Warp items (strip, band) of an octave: its pixels at least SIFT_IMG_BORDER from the border.
__device__ __forceinline__ int strips_of(const SiftOctave& o) {
    return max(0, (o.width - 2 * SIFT_IMG_BORDER + STRIP - 1) / STRIP);
}

__device__ __forceinline__ int items_of(const SiftOctave& o) {
    return strips_of(o) * max(0, (o.height - 2 * SIFT_IMG_BORDER + BAND - 1) / BAND);
}

extern "C" __global__ void sift_extrema(
    const float* __restrict__ pyramid, const SiftOctave* __restrict__ octaves_in, int n_octaves,
    int n_layers, float threshold, unsigned int* candidate_count, int capacity,
    int* __restrict__ cand_x, int* __restrict__ cand_y, int* __restrict__ cand_octave_layer) {
    __shared__ SiftOctave octaves[SIFT_MAX_OCTAVES];
    __shared__ int first_item[SIFT_MAX_OCTAVES + 1];
    for (int i = threadIdx.x; i < n_octaves; i += blockDim.x) octaves[i] = octaves_in[i];
    __syncthreads();
    if (threadIdx.x == 0) {
        first_item[0] = 0;
        for (int o = 0; o < n_octaves; ++o) first_item[o + 1] = first_item[o] + items_of(octaves[o]);
    }
    __syncthreads();
    const int lane = threadIdx.x & 31, warps_per_block = blockDim.x >> 5;
    for (int item = blockIdx.x * warps_per_block + (threadIdx.x >> 5); item < first_item[n_octaves];
         item += gridDim.x * warps_per_block) {
        int o = 0;
        while (item >= first_item[o + 1]) ++o;
        const SiftOctave oct = octaves[o];
        const int w = oct.width, h = oct.height, plane = w * h;
        const int strips = strips_of(oct), local = item - first_item[o];
        const int y0 = SIFT_IMG_BORDER + (local / strips) * BAND;
        const int x = SIFT_IMG_BORDER + (local % strips) * STRIP - 1 + lane;
        const bool tests_column = lane >= 1 && lane <= STRIP && x < w - SIFT_IMG_BORDER;
        // Lane 31's column may lie past the plane; it feeds no tested column then.
        const float* column = pyramid + oct.dog + min(x, w - 1);
        PlaneBand below = plane_band(column, w, h, y0);
        PlaneBand here = plane_band(column + plane, w, h, y0);
        for (int layer = 1; layer <= n_layers; ++layer) {
            const PlaneBand above = plane_band(column + (layer + 1) * plane, w, h, y0);
#pragma unroll
            for (int r = 0; r < BAND; ++r) {
                const float v = here.value[r];
                const float lo = fminf(fminf(below.lo[r], here.lo[r]), above.lo[r]);
                const float hi = fmaxf(fmaxf(below.hi[r], here.hi[r]), above.hi[r]);
                const bool extremum = tests_column && y0 + r < h - SIFT_IMG_BORDER &&
                                      fabsf(v) > threshold &&
                                      ((v > 0.f && v >= hi) | (v < 0.f && v <= lo));
                if (extremum) {
                    unsigned int slot = warp_append(candidate_count, 0);
                    if (slot < (unsigned int)capacity) {
                        cand_x[slot] = x;
                        cand_y[slot] = y0 + r;
                        cand_octave_layer[slot] = pack_octave_layer(o, layer);
                    }
                }
            }
            below = here;
            here = above;
        }
    }
}
