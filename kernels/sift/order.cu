// Keypoint order and budget on the GPU (docs/sift-reference.md section 6), so the
// frame needs no host round trip: keypoints sorted by (x, y, size, angle), exact
// duplicates dropped, and with `max_features` the strongest kept, ordered by response
// (ties in (x, y, size, angle) order), as the CPU reference's stable sorts give.
//
// Ranks are counted, not sorted: block (ti, tj) of `sift_rank_keys` compares keypoint
// tile ti (a keypoint a thread) with slice tj (RANK_SLICE keypoints in shared memory)
// and adds its counts with integer atomics, so the result is exact and independent of
// scheduling. Duplicates are rare (two candidates refined to one point): the block
// whose count first marks a keypoint as a duplicate lists it, and `sift_place`
// subtracts the few listed ones below a keypoint from its rank. Two launches without
// a budget, three with one.
#include "common/sift_params.cuh"
#include "common/warp_append.cuh"

// RANK_TILE (a block's threads) and RANK_SLICE (its shared tile) are -D defines
// (src/cuda/abi.rs).
static_assert(RANK_SLICE <= RANK_TILE, "a block's threads load its slice");

// (x, y) and (size, angle) as two integers that order like the floats: every
// component is non-negative, and non-negative floats order like their bits.
struct SortKey {
    unsigned long long xy, size_angle;
};

__device__ __forceinline__ SortKey sort_key(const SiftKeypointArrays& keypoints, int i) {
    SortKey k;
    k.xy = ((unsigned long long)__float_as_uint(__ldg(&keypoints.x[i])) << 32) |
           __float_as_uint(__ldg(&keypoints.y[i]));
    k.size_angle = ((unsigned long long)__float_as_uint(__ldg(&keypoints.size[i])) << 32) |
                   __float_as_uint(__ldg(&keypoints.angle[i]));
    return k;
}

__device__ __forceinline__ bool key_less(SortKey a, SortKey b) {
    return a.xy < b.xy || (a.xy == b.xy && a.size_angle < b.size_angle);
}

__device__ __forceinline__ bool key_equal(SortKey a, SortKey b) {
    return a.xy == b.xy && a.size_angle == b.size_angle;
}

__device__ __forceinline__ int keypoints_in(const SiftCounters* counters, int capacity) {
    return (int)min(__ldg(&counters->keypoints), (unsigned int)capacity);
}

// less[i] += #{j : key_j < key_i}, equal_before[i] += #{j < i : key_j == key_i};
// every i with an equal key at a lower index is listed once in `duplicates`.
extern "C" __global__ void __launch_bounds__(RANK_TILE) sift_rank_keys(const SiftRankKeysParams p) {
    __shared__ SortKey tile[RANK_SLICE];
    const int n = keypoints_in(p.counters, p.capacity);
    const int tiles = (n + RANK_TILE - 1) / RANK_TILE, slices = (n + RANK_SLICE - 1) / RANK_SLICE;
    for (int pair = blockIdx.x; pair < tiles * slices; pair += gridDim.x) {
        const int ti = pair / slices, tj = pair - ti * slices;
        const int j = tj * RANK_SLICE + threadIdx.x;
        if (threadIdx.x < RANK_SLICE && j < n) tile[threadIdx.x] = sort_key(p.keypoints, j);
        __syncthreads();
        const int i = ti * RANK_TILE + threadIdx.x;
        if (i < n) {
            const SortKey mine = sort_key(p.keypoints, i);
            const int count = min(RANK_SLICE, n - tj * RANK_SLICE);
            unsigned int smaller = 0, equal = 0;
            for (int k = 0; k < count; ++k) {
                SortKey other = tile[k];
                smaller += key_less(other, mine);
                equal += key_equal(other, mine) && tj * RANK_SLICE + k < i;
            }
            if (smaller) atomicAdd(p.ranks.less + i, smaller);
            // Exactly one block sees the count leave 0.
            if (equal && atomicAdd(p.ranks.equal_before + i, equal) == 0)
                p.duplicates[warp_append(&p.counters->duplicates, 0)] = i;
        }
        __syncthreads();  // the next pair reloads the tile
    }
}

// With a budget below the unique count: stronger[i] += #{kept j stronger than i},
// stronger = higher response, or equal response and a smaller key (an earlier place
// in (x, y, size, angle) order).
extern "C" __global__ void __launch_bounds__(RANK_TILE) sift_rank_responses(const SiftRankResponsesParams p) {
    __shared__ SortKey tile_key[RANK_SLICE];
    __shared__ float tile_response[RANK_SLICE];
    __shared__ bool tile_kept[RANK_SLICE];
    const int n = keypoints_in(p.counters, p.capacity);
    const int unique = n - (int)__ldg(&p.counters->duplicates);
    if (p.max_features <= 0 || unique <= p.max_features) return;
    const int tiles = (n + RANK_TILE - 1) / RANK_TILE, slices = (n + RANK_SLICE - 1) / RANK_SLICE;
    for (int pair = blockIdx.x; pair < tiles * slices; pair += gridDim.x) {
        const int ti = pair / slices, tj = pair - ti * slices;
        const int j = tj * RANK_SLICE + threadIdx.x;
        if (threadIdx.x < RANK_SLICE && j < n) {
            tile_key[threadIdx.x] = sort_key(p.keypoints, j);
            tile_response[threadIdx.x] = __ldg(&p.keypoints.response[j]);
            tile_kept[threadIdx.x] = __ldg(&p.ranks.equal_before[j]) == 0;
        }
        __syncthreads();
        const int i = ti * RANK_TILE + threadIdx.x;
        if (i < n && __ldg(&p.ranks.equal_before[i]) == 0) {
            const float r = __ldg(&p.keypoints.response[i]);
            const SortKey mine = sort_key(p.keypoints, i);
            const int count = min(RANK_SLICE, n - tj * RANK_SLICE);
            unsigned int above = 0;
            for (int k = 0; k < count; ++k) {
                float other = tile_response[k];
                above += tile_kept[k] && (other > r || (other == r && key_less(tile_key[k], mine)));
            }
            if (above) atomicAdd(p.ranks.stronger + i, above);
        }
        __syncthreads();
    }
}

// Writes the kept keypoints (at most `max_features`, the output capacity) at their
// final places: in input-pixel conventions for the caller, plus the octave and layer
// the descriptor kernel reads. Without a budget a keypoint's place is its rank among
// the unique keys: `less` minus the listed duplicates below it.
extern "C" __global__ void sift_place(const SiftPlaceParams p) {
    const int n = keypoints_in(p.counters, p.capacity);
    const int n_duplicates = (int)__ldg(&p.counters->duplicates);
    const int unique = n - n_duplicates;
    const bool budget = p.max_features > 0 && unique > p.max_features;
    const int kept = budget ? p.max_features : unique;
    // summary (SUMMARY_WORDS, a -D define): the kept count, then the raw counts
    // (candidates, extrema, keypoints, duplicates: SiftCounters' first four words, in
    // the order its ABI checks fix) so the host can tell when a capacity cut the lists
    // short.
    const unsigned int* counter_words = reinterpret_cast<const unsigned int*>(p.counters);
    if (blockIdx.x == 0 && threadIdx.x < SUMMARY_WORDS)
        p.summary[threadIdx.x] = threadIdx.x == 0 ? (unsigned int)kept : __ldg(&counter_words[threadIdx.x - 1]);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        if (__ldg(&p.ranks.equal_before[i]) > 0) continue;
        int slot;
        if (budget) {
            slot = (int)__ldg(&p.ranks.stronger[i]);
        } else {
            const SortKey mine = sort_key(p.keypoints, i);
            slot = (int)__ldg(&p.ranks.less[i]);
            for (int d = 0; d < n_duplicates; ++d)
                slot -= key_less(sort_key(p.keypoints, __ldg(&p.duplicates[d])), mine);
        }
        if (slot >= kept) continue;
        p.outputs.x[slot] = __ldg(&p.keypoints.x[i]);
        p.outputs.y[slot] = __ldg(&p.keypoints.y[i]);
        p.outputs.size[slot] = __ldg(&p.keypoints.size[i]);
        p.outputs.angle[slot] = __ldg(&p.keypoints.angle[i]);
        p.outputs.response[slot] = __ldg(&p.keypoints.response[i]);
        const int packed = __ldg(&p.keypoints.octave_layer[i]);
        p.outputs.octave_layer[slot] = (packed >> 8) + p.first_octave;
        p.out_octave_layer[slot] = packed;
    }
}
