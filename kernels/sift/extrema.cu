// Scale-space extrema of every octave in one launch (docs/sift-reference.md section 2).
// A warp tests a strip of STRIP columns and BAND rows of one octave in every DoG layer:
// lane l holds column strip_start - 1 + l (lanes 0 and 31 only lend their column to
// their neighbours). Each DoG plane is read once per strip, a row at a time (coalesced),
// its 3x3 minimum and maximum come from the two neighbouring lanes (shuffles) and the
// rows above and below (registers). The loop is software-pipelined: the rows of the
// plane after next are requested before the current layer is tested, so a warp keeps a
// plane's loads in flight while it computes. Only the 3x3x3 bound of the two planes
// already seen and the middle plane's values are carried between layers. The kernel
// issues ~30 instructions per pixel and layer, so those are counted: one pointer step
// per load, shared row pairs in the vertical bound, and the 26-neighbour test kept
// branch-free (min and max over the 3x3x3 block, the centre included as the test is not
// strict, and two comparisons) with one warp vote per layer. Survivors are compacted
// into structure-of-arrays candidate lists with warp-aggregated atomics, so the
// refinement kernel gets full warps.
#include "common/read_only.cuh"
#include "common/sift_octaves.cuh"
#include "common/sift_params.cuh"
#include "common/warp_append.cuh"

#define STRIP 30  // columns a warp tests
#define BAND 8    // rows a lane tests (even: bounds_of pairs them)

// A plane's rows y0 - 1 .. y0 + BAND at this lane's column, as loaded.
struct PlaneRows {
    float row[BAND + 2];
};

// 3x3 minimum and maximum of a plane (or of several planes) at rows y0 .. y0 + BAND - 1.
struct Bounds {
    float lo[BAND], hi[BAND];
};

// `top` points at row y0 - 1 of the plane. Stepping one pointer a row at a time costs
// one instruction per load; only the octave's last band (`clamp`, warp-uniform) needs
// rows past the plane, which read its last row instead (those are never tested).
__device__ __forceinline__ PlaneRows load_rows(const float* __restrict__ top, int width, bool clamp,
                                               int rows_left) {
    PlaneRows rows;
    const float* p = top;
    if (!clamp) {
#pragma unroll
        for (int t = 0; t < BAND + 2; ++t, p += width) rows.row[t] = __ldg(p);
    } else {
#pragma unroll
        for (int t = 0; t < BAND + 2; ++t) {
            rows.row[t] = __ldg(p);
            if (t + 1 < rows_left) p += width;
        }
    }
    return rows;
}

__device__ __forceinline__ Bounds bounds_of(const PlaneRows& rows) {
    float row_lo[BAND + 2], row_hi[BAND + 2];
#pragma unroll
    for (int t = 0; t < BAND + 2; ++t) {
        const float centre = rows.row[t];
        const float left = __shfl_up_sync(0xffffffffu, centre, 1);
        const float right = __shfl_down_sync(0xffffffffu, centre, 1);
        row_lo[t] = fminf(fminf(left, centre), right);
        row_hi[t] = fmaxf(fmaxf(left, centre), right);
    }
    // Rows r and r + 1 share the pair r + 1, r + 2 of their three.
    Bounds b;
#pragma unroll
    for (int r = 0; r < BAND; r += 2) {
        const float pair_lo = fminf(row_lo[r + 1], row_lo[r + 2]);
        const float pair_hi = fmaxf(row_hi[r + 1], row_hi[r + 2]);
        b.lo[r] = fminf(row_lo[r], pair_lo);
        b.hi[r] = fmaxf(row_hi[r], pair_hi);
        b.lo[r + 1] = fminf(pair_lo, row_lo[r + 3]);
        b.hi[r + 1] = fmaxf(pair_hi, row_hi[r + 3]);
    }
    return b;
}

__device__ __forceinline__ Bounds merged(const Bounds& a, const Bounds& b) {
    Bounds m;
#pragma unroll
    for (int r = 0; r < BAND; ++r) {
        m.lo[r] = fminf(a.lo[r], b.lo[r]);
        m.hi[r] = fmaxf(a.hi[r], b.hi[r]);
    }
    return m;
}

// OpenCV's test, |v| > threshold and v >= every neighbour if positive, <= if negative,
// with contrast_floor = max(threshold, 0): v > contrast_floor then implies both v > 0
// and |v| > threshold (and v < -contrast_floor both v < 0 and |v| > threshold).
__device__ __forceinline__ bool is_extremum(float v, float lo, float hi, float contrast_floor) {
    return (v > contrast_floor && v >= hi) | (v < -contrast_floor && v <= lo);
}

// Warp items (strip, band) of an octave: its pixels at least SIFT_IMG_BORDER from the border.
__device__ __forceinline__ int strips_of(const SiftOctave& o) {
    return max(0, (o.width - 2 * SIFT_IMG_BORDER + STRIP - 1) / STRIP);
}

__device__ __forceinline__ int items_of(const SiftOctave& o) {
    return strips_of(o) * max(0, (o.height - 2 * SIFT_IMG_BORDER + BAND - 1) / BAND);
}

// Tests octaves [octave_begin, octave_end) of the table: the frame's stream tests the
// big octaves while the small octaves' block (small_octaves.cu) is still making its own.
extern "C" __global__ void sift_extrema(const SiftExtremaParams p) {
    __shared__ SiftOctave octaves[SIFT_MAX_OCTAVES];
    __shared__ int first_item[SIFT_MAX_OCTAVES + 1];
    for (int i = threadIdx.x; i < p.octave_end; i += blockDim.x) octaves[i] = ldg_words(p.octaves + i);
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int o = 0; o <= p.octave_begin; ++o) first_item[o] = 0;
        for (int o = p.octave_begin; o < p.octave_end; ++o) first_item[o + 1] = first_item[o] + items_of(octaves[o]);
    }
    __syncthreads();
    const int lane = threadIdx.x & 31, warps_per_block = blockDim.x >> 5;
    const float contrast_floor = fmaxf(p.threshold, 0.f);
    for (int item = blockIdx.x * warps_per_block + (threadIdx.x >> 5); item < first_item[p.octave_end];
         item += gridDim.x * warps_per_block) {
        int o = p.octave_begin;
        while (item >= first_item[o + 1]) ++o;
        const SiftOctave oct = octaves[o];
        const int w = oct.width, h = oct.height, plane = w * h;
        const int strips = strips_of(oct), local = item - first_item[o];
        const int y0 = SIFT_IMG_BORDER + (local / strips) * BAND;
        const int x = SIFT_IMG_BORDER + (local % strips) * STRIP - 1 + lane;
        const bool tests_column = lane >= 1 && lane <= STRIP && x < w - SIFT_IMG_BORDER;
        const int rows_in = min(BAND, h - SIFT_IMG_BORDER - y0);  // rows this band tests
        // Lane 31's column may lie past the plane; it feeds no tested column then.
        const float* top = p.pyramid + oct.dog + (y0 - 1) * w + min(x, w - 1);
        const bool clamp = y0 + BAND > h - 1;
        const int rows_left = h - (y0 - 1);
        const PlaneRows first = load_rows(top, w, clamp, rows_left);
        PlaneRows middle = load_rows(top + plane, w, clamp, rows_left);
        PlaneRows next = load_rows(top + 2 * plane, w, clamp, rows_left);
        Bounds middle_bounds = bounds_of(middle);
        // 3x3x3 bound of the plane below the tested layer and of the tested layer.
        Bounds lower = merged(bounds_of(first), middle_bounds);
        for (int layer = 1; layer <= p.n_layers; ++layer) {
            const PlaneRows above = next;
            // Warp-uniform: the last layer has no plane after next.
            if (layer < p.n_layers) next = load_rows(top + (layer + 2) * plane, w, clamp, rows_left);
            const Bounds above_bounds = bounds_of(above);
            const Bounds bound = merged(lower, above_bounds);
            // Extrema are rare: the warp votes once per layer (border lanes and rows
            // included) and only then tests and appends row by row.
            bool any = false;
#pragma unroll
            for (int r = 0; r < BAND; ++r)
                any |= is_extremum(middle.row[r + 1], bound.lo[r], bound.hi[r], contrast_floor);
            if (__any_sync(0xffffffffu, any)) {
#pragma unroll
                for (int r = 0; r < BAND; ++r) {
                    if (tests_column && r < rows_in &&
                        is_extremum(middle.row[r + 1], bound.lo[r], bound.hi[r], contrast_floor)) {
                        unsigned int slot = warp_append(&p.counters->candidates, 0);
                        if (slot < (unsigned int)p.capacity) {
                            p.candidates.x[slot] = x;
                            p.candidates.y[slot] = y0 + r;
                            p.candidates.octave_layer[slot] = pack_octave_layer(o, layer);
                        }
                    }
                }
            }
            lower = merged(middle_bounds, above_bounds);
            middle_bounds = above_bounds;
            middle = above;
        }
    }
}
