// Keypoint order and budget on the GPU (docs/sift-reference.md section 6), so the
// frame needs no host round trip: keypoints sorted by (x, y, size, angle), exact
// duplicates dropped, and with `max_features` the strongest kept, ordered by response
// (ties in (x, y, size, angle) order), as the CPU reference's stable sorts give.
//
// Ranks are counted, not sorted: block (ti, tj) of `sift_rank_keys` compares keypoint
// tile ti with tile tj in shared memory and adds its counts with integer atomics, so
// the result is exact and independent of scheduling. Duplicates are rare (two
// candidates refined to one point): the block whose count first marks a keypoint as
// a duplicate lists it, and `sift_place` subtracts the few listed ones below a
// keypoint from its rank. Two launches without a budget, three with one.
#include "common/warp_append.cuh"

// RANK_TILE, a block's threads and shared tile, is a -D define (src/cuda/abi.rs).

// (x, y) and (size, angle) as two integers that order like the floats: every
// component is non-negative, and non-negative floats order like their bits.
struct SortKey {
    unsigned long long xy, size_angle;
};

__device__ __forceinline__ SortKey sort_key(const float* x, const float* y, const float* size,
                                            const float* angle, int i) {
    SortKey k;
    k.xy = ((unsigned long long)__float_as_uint(x[i]) << 32) | __float_as_uint(y[i]);
    k.size_angle = ((unsigned long long)__float_as_uint(size[i]) << 32) | __float_as_uint(angle[i]);
    return k;
}

__device__ __forceinline__ bool key_less(SortKey a, SortKey b) {
    return a.xy < b.xy || (a.xy == b.xy && a.size_angle < b.size_angle);
}

__device__ __forceinline__ bool key_equal(SortKey a, SortKey b) {
    return a.xy == b.xy && a.size_angle == b.size_angle;
}

__device__ __forceinline__ int keypoints_in(const unsigned int* count, int capacity) {
    return (int)min(*count, (unsigned int)capacity);
}

// less[i] += #{j : key_j < key_i}, equal_before[i] += #{j < i : key_j == key_i};
// every i with an equal key at a lower index is listed once in `duplicates`.
extern "C" __global__ void __launch_bounds__(RANK_TILE) sift_rank_keys(
    const unsigned int* __restrict__ keypoint_count, int capacity, const float* __restrict__ x,
    const float* __restrict__ y, const float* __restrict__ size, const float* __restrict__ angle,
    unsigned int* less, unsigned int* equal_before, unsigned int* duplicate_count,
    int* __restrict__ duplicates) {
    __shared__ SortKey tile[RANK_TILE];
    const int n = keypoints_in(keypoint_count, capacity);
    const int tiles = (n + RANK_TILE - 1) / RANK_TILE;
    for (int pair = blockIdx.x; pair < tiles * tiles; pair += gridDim.x) {
        const int ti = pair / tiles, tj = pair - ti * tiles;
        const int j = tj * RANK_TILE + threadIdx.x;
        if (j < n) tile[threadIdx.x] = sort_key(x, y, size, angle, j);
        __syncthreads();
        const int i = ti * RANK_TILE + threadIdx.x;
        if (i < n) {
            const SortKey mine = sort_key(x, y, size, angle, i);
            const int count = min(RANK_TILE, n - tj * RANK_TILE);
            unsigned int smaller = 0, equal = 0;
            for (int k = 0; k < count; ++k) {
                SortKey other = tile[k];
                smaller += key_less(other, mine);
                equal += key_equal(other, mine) && tj * RANK_TILE + k < i;
            }
            if (smaller) atomicAdd(less + i, smaller);
            // Exactly one block sees the count leave 0.
            if (equal && atomicAdd(equal_before + i, equal) == 0)
                duplicates[warp_append(duplicate_count, 0)] = i;
        }
        __syncthreads();  // the next pair reloads the tile
    }
}

// With a budget below the unique count: stronger[i] += #{kept j stronger than i},
// stronger = higher response, or equal response and a smaller key (an earlier place
// in (x, y, size, angle) order).
extern "C" __global__ void __launch_bounds__(RANK_TILE) sift_rank_responses(
    const unsigned int* __restrict__ keypoint_count, int capacity,
    const unsigned int* __restrict__ duplicate_count, int max_features,
    const float* __restrict__ x, const float* __restrict__ y, const float* __restrict__ size,
    const float* __restrict__ angle, const float* __restrict__ response,
    const unsigned int* __restrict__ equal_before, unsigned int* stronger) {
    __shared__ SortKey tile_key[RANK_TILE];
    __shared__ float tile_response[RANK_TILE];
    __shared__ bool tile_kept[RANK_TILE];
    const int n = keypoints_in(keypoint_count, capacity);
    const int unique = n - (int)*duplicate_count;
    if (max_features <= 0 || unique <= max_features) return;
    const int tiles = (n + RANK_TILE - 1) / RANK_TILE;
    for (int pair = blockIdx.x; pair < tiles * tiles; pair += gridDim.x) {
        const int ti = pair / tiles, tj = pair - ti * tiles;
        const int j = tj * RANK_TILE + threadIdx.x;
        if (j < n) {
            tile_key[threadIdx.x] = sort_key(x, y, size, angle, j);
            tile_response[threadIdx.x] = response[j];
            tile_kept[threadIdx.x] = equal_before[j] == 0;
        }
        __syncthreads();
        const int i = ti * RANK_TILE + threadIdx.x;
        if (i < n && equal_before[i] == 0) {
            const float r = response[i];
            const SortKey mine = sort_key(x, y, size, angle, i);
            const int count = min(RANK_TILE, n - tj * RANK_TILE);
            unsigned int above = 0;
            for (int k = 0; k < count; ++k) {
                float other = tile_response[k];
                above += tile_kept[k] && (other > r || (other == r && key_less(tile_key[k], mine)));
            }
            if (above) atomicAdd(stronger + i, above);
        }
        __syncthreads();
    }
}

// Writes the kept keypoints (at most `max_features`, the output capacity) at their
// final places: in input-pixel conventions for the caller, plus the octave and layer
// the descriptor kernel reads. Without a budget a keypoint's place is its rank among
// the unique keys: `less` minus the listed duplicates below it.
extern "C" __global__ void sift_place(
    const unsigned int* __restrict__ keypoint_count, int capacity,
    const unsigned int* __restrict__ duplicate_count, const int* __restrict__ duplicates,
    int max_features, int first_octave, const float* __restrict__ x,
    const float* __restrict__ y, const float* __restrict__ size,
    const float* __restrict__ angle, const float* __restrict__ response,
    const int* __restrict__ octave_layer, const unsigned int* __restrict__ less,
    const unsigned int* __restrict__ equal_before, const unsigned int* __restrict__ stronger,
    const unsigned int* __restrict__ counters, unsigned int* __restrict__ summary,
    float* __restrict__ out_x, float* __restrict__ out_y, float* __restrict__ out_size,
    float* __restrict__ out_angle, float* __restrict__ out_response, int* __restrict__ out_octave,
    int* __restrict__ out_octave_layer) {
    const int n = keypoints_in(keypoint_count, capacity);
    const int n_duplicates = (int)*duplicate_count;
    const int unique = n - n_duplicates;
    const bool budget = max_features > 0 && unique > max_features;
    const int kept = budget ? max_features : unique;
    // summary (SUMMARY_WORDS, a -D define): the kept count, then the raw counts
    // (candidates, extrema, keypoints, duplicates) so the host can tell when a capacity
    // cut the lists short.
    if (blockIdx.x == 0 && threadIdx.x < SUMMARY_WORDS)
        summary[threadIdx.x] = threadIdx.x == 0 ? (unsigned int)kept : counters[threadIdx.x - 1];
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        if (equal_before[i] > 0) continue;
        int slot;
        if (budget) {
            slot = (int)stronger[i];
        } else {
            const SortKey mine = sort_key(x, y, size, angle, i);
            slot = (int)less[i];
            for (int d = 0; d < n_duplicates; ++d)
                slot -= key_less(sort_key(x, y, size, angle, duplicates[d]), mine);
        }
        if (slot >= kept) continue;
        out_x[slot] = x[i];
        out_y[slot] = y[i];
        out_size[slot] = size[i];
        out_angle[slot] = angle[i];
        out_response[slot] = response[i];
        out_octave[slot] = (octave_layer[i] >> 8) + first_octave;
        out_octave_layer[slot] = octave_layer[i];
    }
}
