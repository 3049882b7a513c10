// Sub-pixel and sub-scale refinement of the candidates (docs/sift-reference.md
// section 3), a thread per candidate, survivors compacted for the orientation
// kernel. The arithmetic is src/cpu/sift/refine.rs operation for operation; with FMA
// contraction the refined points are the CPU's to within a few ulps.
#include "common/read_only.cuh"
#include "common/sift_octaves.cuh"
#include "common/sift_params.cuh"
#include "common/warp_append.cuh"

#define SIFT_MAX_INTERP_STEPS 5

struct Derivatives {
    float g[3];
    float h[3][3];
};

__device__ __forceinline__ Derivatives derivatives(
    const float* prev, const float* img, const float* next, int w, int r, int c) {
    const float scale = 1.f / 255.f;
    const float first = scale * 0.5f, second = scale, cross = scale * 0.25f;
    auto at = [w](const float* p, int x, int y) { return __ldg(p + y * w + x); };
    float v2 = at(img, c, r) * 2.f;
    Derivatives d;
    d.g[0] = (at(img, c + 1, r) - at(img, c - 1, r)) * first;
    d.g[1] = (at(img, c, r + 1) - at(img, c, r - 1)) * first;
    d.g[2] = (at(next, c, r) - at(prev, c, r)) * first;
    float dxx = (at(img, c + 1, r) + at(img, c - 1, r) - v2) * second;
    float dyy = (at(img, c, r + 1) + at(img, c, r - 1) - v2) * second;
    float dss = (at(next, c, r) + at(prev, c, r) - v2) * second;
    float dxy = (at(img, c + 1, r + 1) - at(img, c - 1, r + 1) - at(img, c + 1, r - 1) +
                 at(img, c - 1, r - 1)) * cross;
    float dxs = (at(next, c + 1, r) - at(next, c - 1, r) - at(prev, c + 1, r) + at(prev, c - 1, r)) * cross;
    float dys = (at(next, c, r + 1) - at(next, c, r - 1) - at(prev, c, r + 1) + at(prev, c, r - 1)) * cross;
    d.h[0][0] = dxx; d.h[0][1] = dxy; d.h[0][2] = dxs;
    d.h[1][0] = dxy; d.h[1][1] = dyy; d.h[1][2] = dys;
    d.h[2][0] = dxs; d.h[2][1] = dys; d.h[2][2] = dss;
    return d;
}

// LU with partial pivoting as `solve3` of src/cpu/sift/refine.rs (the last of equal
// pivots wins, as Rust's max_by); a pivot below 10 FLT_EPSILON gives 0.
__device__ __forceinline__ void solve3(float a[3][3], float b[3], float x[3]) {
    for (int k = 0; k < 3; ++k) {
        int pivot = k;
        for (int i = k + 1; i < 3; ++i)
            if (fabsf(a[i][k]) >= fabsf(a[pivot][k])) pivot = i;
        if (fabsf(a[pivot][k]) < 10.f * 1.1920929e-7f) {
            x[0] = x[1] = x[2] = 0.f;
            return;
        }
        if (pivot != k) {
            for (int j = 0; j < 3; ++j) {
                float t = a[k][j]; a[k][j] = a[pivot][j]; a[pivot][j] = t;
            }
            float t = b[k]; b[k] = b[pivot]; b[pivot] = t;
        }
        for (int i = k + 1; i < 3; ++i) {
            float f = a[i][k] / a[k][k];
            for (int j = k; j < 3; ++j) a[i][j] -= f * a[k][j];
            b[i] -= f * b[k];
        }
    }
    for (int i = 2; i >= 0; --i) {
        float tail = 0.f;
        for (int j = i + 1; j < 3; ++j) tail += a[i][j] * x[j];
        x[i] = (b[i] - tail) / a[i][i];
    }
}

extern "C" __global__ void sift_refine(const SiftRefineParams p) {
    int n = min(__ldg(&p.counters->candidates), (unsigned int)p.candidate_capacity);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int packed = __ldg(&p.candidates.octave_layer[i]);
        int o = packed_octave(packed);
        const SiftOctave oct = ldg_words(&p.octaves[o]);
        int w = oct.width, h = oct.height, plane = w * h;
        const float* dog = p.pyramid + oct.dog;
        int layer = packed_layer(packed), r = __ldg(&p.candidates.y[i]), c = __ldg(&p.candidates.x[i]);
        float offset[3] = {0.f, 0.f, 0.f};
        bool converged = false, rejected = false;
        for (int step = 0; step < SIFT_MAX_INTERP_STEPS; ++step) {
            Derivatives d = derivatives(dog + (layer - 1) * plane, dog + layer * plane,
                                        dog + (layer + 1) * plane, w, r, c);
            float x[3];
            solve3(d.h, d.g, x);
            offset[0] = -x[0]; offset[1] = -x[1]; offset[2] = -x[2];
            if (fabsf(offset[0]) < 0.5f && fabsf(offset[1]) < 0.5f && fabsf(offset[2]) < 0.5f) {
                converged = true;
                break;
            }
            const float far = (float)(2147483647 / 3);
            bool wild = false;
            for (int k = 0; k < 3; ++k) wild |= !isfinite(offset[k]) || fabsf(offset[k]) > far;
            if (wild) { rejected = true; break; }
            long long nc = c + (long long)roundf(offset[0]);  // f32::round: half away from zero
            long long nr = r + (long long)roundf(offset[1]);
            long long nl = layer + (long long)roundf(offset[2]);
            if (nl < 1 || nl > p.n_layers || nc < SIFT_IMG_BORDER || nc >= w - SIFT_IMG_BORDER ||
                nr < SIFT_IMG_BORDER || nr >= h - SIFT_IMG_BORDER) {
                rejected = true;
                break;
            }
            c = (int)nc; r = (int)nr; layer = (int)nl;
        }
        if (rejected || !converged) continue;
        Derivatives d = derivatives(dog + (layer - 1) * plane, dog + layer * plane,
                                    dog + (layer + 1) * plane, w, r, c);
        float t = 0.f;
        for (int k = 0; k < 3; ++k) t += d.g[k] * offset[k];
        float contrast = __ldg(dog + layer * plane + r * w + c) / 255.f + t * 0.5f;
        if (fabsf(contrast) * (float)p.n_layers < p.contrast_threshold) continue;
        float dxx = d.h[0][0], dxy = d.h[0][1], dyy = d.h[1][1];
        float trace = dxx + dyy;
        float det = dxx * dyy - dxy * dxy;
        float e = p.edge_threshold;
        if (det <= 0.f || trace * trace * e >= (e + 1.f) * (e + 1.f) * det) continue;
        unsigned int slot = warp_append(&p.counters->extrema, 0);
        if (slot >= (unsigned int)p.capacity) continue;
        p.extrema.col[slot] = c;
        p.extrema.row[slot] = r;
        p.extrema.octave_layer[slot] = pack_octave_layer(o, layer);
        p.extrema.x[slot] = (float)c + offset[0];
        p.extrema.y[slot] = (float)r + offset[1];
        p.extrema.scale[slot] = p.sigma * powf(2.f, ((float)layer + offset[2]) / (float)p.n_layers);
        p.extrema.response[slot] = fabsf(contrast);
    }
}
