// Per-level keypoint selection of the grid distribution on the GPU
// (docs/orb-reference.md section 5), three steps, no host round trip:
// 1. FAST pre-filter: keep the first 2 N_l candidates by (s desc, y asc, x asc). From
//    the level's 256-bin histogram of s (filled by orb_cell_candidates) orb_prefilter_cut
//    finds the cut score s*; every candidate with s > s* is kept, and of those with
//    s = s* the first 2 N_l - #{s > s*} in raster order (orb_prefilter_ties lists
//    them, orb_prefilter_keep counts the listed ones before each).
// 2. Rank k of each kept candidate within its cell by (key desc, y asc, x asc).
// 3. The first `quota` of the level by (k asc, key desc, y asc, x asc).
// Every rank is an exact count ("how many beat me") over a small group, gathered by
// counting sorts, so no comparison sort is needed and the result is the same total
// order as the CPU reference's sorts.
#include "common/levels.cuh"

// Candidate j comes before candidate i in (key desc, y asc, x asc).
__device__ __forceinline__ bool comes_before(long long key_j, unsigned int yx_j, long long key_i, unsigned int yx_i) {
    return key_j > key_i || (key_j == key_i && yx_j < yx_i);
}

#define ORB_SCORE_BINS 256

// Step 1, cut score per level (one block of ORB_SCORE_BINS threads per level): s* is
// the score with #{s > s*} < 2 N_l <= #{s >= s*}; `cut` = -1 keeps every candidate
// (at most 2 N_l of them), ORB_SCORE_BINS keeps none (N_l = 0). `tie_quota` = how
// many candidates with s = s* are kept.
extern "C" __global__ void orb_prefilter_cut(
    const unsigned int* __restrict__ level_hist,  // n_levels * ORB_SCORE_BINS
    const int* __restrict__ quotas,
    int* __restrict__ cut,
    unsigned int* __restrict__ tie_quota) {
    __shared__ unsigned int at_least[ORB_SCORE_BINS + 1];  // at_least[b] = #{s >= b}
    const int l = blockIdx.x, b = threadIdx.x;
    at_least[b] = level_hist[l * ORB_SCORE_BINS + b];
    if (b == 0) at_least[ORB_SCORE_BINS] = 0u;
    __syncthreads();
    for (int offset = 1; offset < ORB_SCORE_BINS; offset <<= 1) {
        const unsigned int add = b + offset < ORB_SCORE_BINS ? at_least[b + offset] : 0u;
        __syncthreads();
        at_least[b] += add;
        __syncthreads();
    }
    const unsigned int wanted = 2u * (unsigned int)quotas[l];
    if (at_least[0] <= wanted) {
        if (b == 0) {
            cut[l] = -1;
            tie_quota[l] = 0u;
        }
    } else if (wanted == 0u) {
        if (b == 0) {
            cut[l] = ORB_SCORE_BINS;
            tie_quota[l] = 0u;
        }
    } else if (at_least[b + 1] < wanted && wanted <= at_least[b]) {  // exactly one b
        cut[l] = b;
        tie_quota[l] = wanted - at_least[b + 1];
    }
}

// Step 1, the candidates with s = s*, listed per level (from the level's first slot).
extern "C" __global__ void orb_prefilter_ties(
    const OrbLevel* __restrict__ level_table, int n_levels,
    const unsigned int* __restrict__ level_counts,
    const unsigned int* __restrict__ cand_yx,
    const unsigned char* __restrict__ cand_score,
    const int* __restrict__ cut,
    unsigned int* tie_counts,             // per level, start at 0
    unsigned int* __restrict__ tie_yx) {    // same slots as the candidates
    __shared__ OrbLevel levels[ORB_MAX_LEVELS];
    load_levels(levels, level_table, n_levels);
    __syncthreads();
    for_each_filled_slot(levels, n_levels, level_counts, [&](int l, int i) {
        if ((int)cand_score[i] != cut[l]) return;
        tie_yx[levels[l].cand_offset + atomicAdd(tie_counts + l, 1u)] = cand_yx[i];
    });
}

// Step 1, the verdict: kept iff s > s*, or s = s* and fewer than `tie_quota` listed
// ties come before it in raster order (y << 16 | x ascending). Each tie reads its
// level's whole tie list: quadratic in the number of candidates scoring exactly s*.
extern "C" __global__ void orb_prefilter_keep(
    const OrbLevel* __restrict__ level_table, int n_levels,
    const unsigned int* __restrict__ level_counts,
    const unsigned int* __restrict__ cand_yx,
    const unsigned char* __restrict__ cand_score,
    const int* __restrict__ cut,
    const unsigned int* __restrict__ tie_quota,
    const unsigned int* __restrict__ tie_counts,
    const unsigned int* __restrict__ tie_yx,
    unsigned char* __restrict__ cand_kept) {
    __shared__ OrbLevel levels[ORB_MAX_LEVELS];
    load_levels(levels, level_table, n_levels);
    __syncthreads();
    for_each_filled_slot(levels, n_levels, level_counts, [&](int l, int i) {
        const int s = cand_score[i];
        bool kept = s > cut[l];
        if (s == cut[l]) {
            const unsigned int yx = cand_yx[i], quota = tie_quota[l], n = tie_counts[l];
            const unsigned int* ties = tie_yx + levels[l].cand_offset;
            unsigned int before = 0;
            for (unsigned int m = 0; m < n && before < quota; ++m) before += ties[m] < yx;
            kept = before < quota;
        }
        cand_kept[i] = kept;
    });
}

// k = rank of each kept candidate among the kept ones of its cell; counts candidates
// per (level, k). A dropped candidate gets k = max_rank (no group).
extern "C" __global__ void orb_rank_in_cell(
    const OrbLevel* __restrict__ level_table, int n_levels,
    const unsigned int* __restrict__ level_counts,
    const unsigned int* __restrict__ cand_yx,
    const int* __restrict__ cand_cell,
    const long long* __restrict__ cand_key,
    const unsigned char* __restrict__ cand_kept,
    const unsigned int* __restrict__ cell_starts,  // first slot of each cell's members
    const unsigned int* __restrict__ cell_counts,
    int max_rank,                        // ranks per level in `rank_counts`
    int* __restrict__ cand_rank,
    unsigned int* __restrict__ cand_in_rank,
    unsigned int* rank_counts) {           // n_levels * max_rank, start at 0
    __shared__ OrbLevel levels[ORB_MAX_LEVELS];
    load_levels(levels, level_table, n_levels);
    __syncthreads();
    for_each_filled_slot(levels, n_levels, level_counts, [&](int l, int i) {
        if (!cand_kept[i]) {
            cand_rank[i] = max_rank;
            return;
        }
        int cell = levels[l].cell_offset + cand_cell[i];
        long long key = cand_key[i];
        unsigned int yx = cand_yx[i];
        unsigned int start = cell_starts[cell], count = cell_counts[cell];
        int k = 0;
        for (unsigned int j = start; j < start + count; ++j)
            k += cand_kept[j] && comes_before(cand_key[j], cand_yx[j], key, yx);
        cand_rank[i] = k;
        cand_in_rank[i] = k < max_rank ? atomicAdd(rank_counts + l * max_rank + k, 1u) : 0u;
    });
}

// Per level: where each rank's group starts in the level's order, how many keypoints
// the level keeps (min(quota, candidates)) and where they go in the output.
// One block, one warp per level: the warp scans the level's rank counts 32 at a time.
extern "C" __global__ void orb_rank_starts(
    int n_levels,
    const unsigned int* __restrict__ level_counts,
    const OrbLevel* __restrict__ levels,
    const int* __restrict__ quotas,
    int max_rank,
    const unsigned int* __restrict__ rank_counts,
    unsigned int* __restrict__ rank_starts,
    unsigned int* __restrict__ level_kept,      // n_levels + 1: kept per level, then the total
    unsigned int* __restrict__ level_out_start,
    unsigned int* __restrict__ level_grouped) { // members of the groups that reach the quota
    __shared__ unsigned int kept[ORB_MAX_LEVELS];
    const int l = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (l < n_levels) {
        const unsigned int quota = (unsigned int)quotas[l];
        unsigned int carry = 0, grouped = 0;
        for (int base = 0; base < max_rank; base += 32) {
            const int k = base + lane;
            const unsigned int count = k < max_rank ? rank_counts[l * max_rank + k] : 0u;
            unsigned int sum = count;  // inclusive scan over the lanes
#pragma unroll
            for (int offset = 1; offset < 32; offset <<= 1) {
                const unsigned int other = __shfl_up_sync(0xffffffffu, sum, offset);
                if (lane >= offset) sum += other;
            }
            const unsigned int start = carry + sum - count;
            if (k < max_rank) {
                rank_starts[l * max_rank + k] = start;
                // Starts only grow with k: the last group starting below the quota ends it.
                if (start < quota) grouped = start + count;
            }
            carry += __shfl_sync(0xffffffffu, sum, 31);
        }
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1)
            grouped = max(grouped, __shfl_xor_sync(0xffffffffu, grouped, offset));
        if (lane == 0) {
            level_grouped[l] = grouped;
            const unsigned int candidates = min(level_counts[l], (unsigned int)levels[l].cand_capacity);
            kept[l] = min(candidates, quota);
            level_kept[l] = kept[l];
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned int total = 0;
        for (int m = 0; m < n_levels; ++m) {
            level_out_start[m] = total;
            total += kept[m];
        }
        level_kept[n_levels] = total;
    }
}

// Gathers the sort keys of the candidates of the ranks that can reach the quota by
// (level, k), so that placing them reads each group contiguously.
extern "C" __global__ void orb_gather_ranks(
    const OrbLevel* __restrict__ level_table, int n_levels,
    const unsigned int* __restrict__ level_counts,
    const int* __restrict__ quotas,
    int max_rank,
    const unsigned int* __restrict__ cand_yx,
    const long long* __restrict__ cand_key,
    const int* __restrict__ cand_rank,
    const unsigned int* __restrict__ cand_in_rank,
    const unsigned int* __restrict__ rank_starts,
    const unsigned int* __restrict__ rank_counts,
    unsigned int* __restrict__ rank_yx,  // same slots as the candidates
    long long* __restrict__ rank_key,
    uint2* __restrict__ rank_group) {      // (start, count) of the member's group
    __shared__ OrbLevel levels[ORB_MAX_LEVELS];
    load_levels(levels, level_table, n_levels);
    __syncthreads();
    for_each_filled_slot(levels, n_levels, level_counts, [&](int l, int i) {
        int k = cand_rank[i];
        if (k >= max_rank) return;
        unsigned int start = rank_starts[l * max_rank + k];
        if (start >= (unsigned int)quotas[l]) return;
        unsigned int member = levels[l].cand_offset + start + cand_in_rank[i];
        rank_yx[member] = cand_yx[i];
        rank_key[member] = cand_key[i];
        rank_group[member] = make_uint2(start, rank_counts[l * max_rank + k]);
    });
}

// Final position of each member of a group that reaches the quota: the group's start
// plus its rank in the group by (key desc, y, x). Threads take members in group order,
// so a warp's lanes share one group and read it together. Writes the kept keypoints
// in output order.
extern "C" __global__ void orb_place_selected(
    const OrbLevel* __restrict__ level_table, int n_levels,
    const int* __restrict__ quotas,
    const unsigned int* __restrict__ level_grouped,
    const unsigned int* __restrict__ rank_yx,
    const long long* __restrict__ rank_key,
    const uint2* __restrict__ rank_group,
    const unsigned int* __restrict__ level_out_start,
    unsigned int* __restrict__ out_yx,
    int* __restrict__ out_level,
    long long* __restrict__ out_key) {
    __shared__ OrbLevel levels[ORB_MAX_LEVELS];
    load_levels(levels, level_table, n_levels);
    __syncthreads();
    for_each_filled_slot(levels, n_levels, level_grouped, [&](int l, int i) {
        long long key = rank_key[i];
        unsigned int yx = rank_yx[i];
        const uint2 group = rank_group[i];
        const unsigned int first = levels[l].cand_offset + group.x;
        unsigned int position = group.x;
#pragma unroll 8
        for (unsigned int m = 0; m < group.y; ++m)
            position += comes_before(rank_key[first + m], rank_yx[first + m], key, yx);
        if (position >= (unsigned int)quotas[l]) return;
        unsigned int out = level_out_start[l] + position;
        out_yx[out] = yx;
        out_level[out] = l;
        out_key[out] = key;
    });
}
