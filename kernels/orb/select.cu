// Per-level keypoint selection of the grid distribution on the GPU
// (docs/orb-reference.md section 5) in four launches, no host round trip:
// 1. orb_select_candidates (one block per level), the FAST pre-filter: keep the first
//    2 N_l candidates by (s desc, y asc, x asc). The level's 256-bin histogram of s
//    (filled by orb_cell_candidates) gives the cut score s*: every candidate with
//    s > s* is kept, and of those with s = s* the first 2 N_l - #{s > s*} in raster
//    order, found by a radix select of y << 16 | x. The kept ones become the level's
//    records (at most 2 N_l), in global scratch at the level's first slot.
// 2. orb_record_keys (all SMs): the Harris keys of every level's records.
// 3. orb_record_ranks (all SMs): rank k of each record within its cell by (key desc,
//    y asc, x asc), counted: how many records of its cell come first.
// 4. orb_record_place (all SMs): each record's position in its level by (k asc, key
//    desc, y asc, x asc), counted the same way; the first N_l are the output.
//    Counting is O(records^2) per level but needs no sort (the block-wide bitonic
//    sorts it replaced spent one barrier per step on one SM per level) and spreads
//    over every SM: (key, y, x) is unique within a level, so the counts are the
//    positions a sort would give. Each block stages the level's records in shared
//    memory, so the quadratic part reads no global memory.
#include "common/levels.cuh"
#include "common/harris.cuh"
#include "common/orb_params.cuh"
#include "common/warp_append.cuh"

// ORB_SCORE_BINS (bins of a level's FAST-score histogram), SELECT_THREADS (threads of
// an orb_select_candidates block) and RANK_WARPS (warps of an orb_record_ranks /
// orb_record_place block) are -D defines from src/cuda/abi.rs.
// Ties (s = s*) a block lists in shared memory; more are re-read from the level's slots.
#define TIE_LIST 1024
// Records an orb_record_ranks / orb_record_place block stages in shared memory at once
// (16 bytes each): all of a level's at the default 2,000 features (at most 868).
#define RANK_CHUNK 1024

// Candidate j comes before candidate i in (key desc, y asc, x asc).
__device__ __forceinline__ bool comes_before(long long key_j, unsigned int yx_j, long long key_i, unsigned int yx_i) {
    return (key_j > key_i) | ((key_j == key_i) & (yx_j < yx_i));  // no branches
}

// The digit d of `bins` (256 counters) holding the `want`-th smallest value (1-based)
// and how many values below d's bin come first: `want` becomes the rank within d's bin.
// One warp; every lane returns the same answer.
__device__ __forceinline__ unsigned int select_bin(const unsigned int* bins, unsigned int& want) {
    const int lane = threadIdx.x % 32;
    unsigned int count[8], sum = 0;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        count[k] = bins[8 * lane + k];
        sum += count[k];
    }
    unsigned int inclusive = sum;
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
        const unsigned int other = __shfl_up_sync(0xffffffffu, inclusive, offset);
        if (lane >= offset) inclusive += other;
    }
    unsigned int below = inclusive - sum, found = 0, rest = 0;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        if (below < want && want <= below + count[k]) {
            found = 8u * lane + k;
            rest = want - below;
        }
        below += count[k];
    }
    // Exactly one lane found it (want <= the total).
    const unsigned int owner = __ballot_sync(0xffffffffu, rest != 0u);
    const int source = __ffs(owner) - 1;
    want = __shfl_sync(0xffffffffu, rest, source);
    return __shfl_sync(0xffffffffu, found, source);
}

// Where a level's ties (s = s*) are: the block's list when it holds them all, else
// the level's candidate slots.
struct Ties {
    unsigned int listed;  // 0: not listed
    const unsigned int* list_yx;
    const unsigned int* list_slot;
    unsigned int n;  // the level's candidates
    const unsigned int* cand_yx;
    const unsigned char* cand_score;
    int cut;
};

// Runs `body(yx, slot)` for every tie, spread over the block's threads.
template <typename Body>
__device__ __forceinline__ void for_each_tie(const Ties& ties, Body body) {
    if (ties.listed) {
        for (unsigned int t = threadIdx.x; t < ties.listed; t += blockDim.x) body(ties.list_yx[t], ties.list_slot[t]);
    } else {
        for (unsigned int i = threadIdx.x; i < ties.n; i += blockDim.x)
            if ((int)__ldg(&ties.cand_score[i]) == ties.cut) body(__ldg(&ties.cand_yx[i]), i);
    }
}

extern "C" __global__ void __launch_bounds__(SELECT_THREADS) orb_select_candidates(const OrbSelectCandidatesParams p) {
    __shared__ OrbLevel levels[ORB_MAX_LEVELS];
    __shared__ unsigned int bins[ORB_SCORE_BINS];
    __shared__ unsigned int tie_yx[TIE_LIST], tie_slot[TIE_LIST];
    __shared__ int cut;                     // s*; -1 keeps every candidate
    __shared__ unsigned int tie_quota, ties, listed, n_records, digit, rest;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    load_levels(levels, p.level_table, p.n_levels);
    __syncthreads();

    for (int l = blockIdx.x; l < p.n_levels; l += gridDim.x) {
        const OrbLevel& lv = levels[l];
        const unsigned int quota = (unsigned int)__ldg(&p.quotas[l]);
        const unsigned int n = min(__ldg(&p.counters.level_counts[l]), (unsigned int)lv.cand_capacity);
        const bool selects = min(n, quota) > 0u;
        if (threadIdx.x == 0) {
            listed = 0u;
            n_records = 0u;
        }
        // The cut score from the histogram (warp 0, eight bins per lane).
        if (warp == 0 && selects) {
            unsigned int count[8], sum = 0;
#pragma unroll
            for (int k = 0; k < 8; ++k) {
                count[k] = __ldg(&p.counters.score_histograms[l * ORB_SCORE_BINS + 8 * lane + k]);
                sum += count[k];
            }
            unsigned int at_least = sum;  // #{s >= 8 lane}: suffix sum over the lanes
#pragma unroll
            for (int offset = 1; offset < 32; offset <<= 1) {
                const unsigned int other = __shfl_down_sync(0xffffffffu, at_least, offset);
                if (lane + offset < 32) at_least += other;
            }
            const unsigned int total = __shfl_sync(0xffffffffu, at_least, 0);
            const unsigned int wanted = 2u * quota;
            if (total <= wanted) {
                if (lane == 0) {
                    cut = -1;
                    tie_quota = 0u;
                    ties = 0u;
                }
            } else {
                unsigned int above = at_least - sum;  // #{s > b} for b = 8 lane + 7
#pragma unroll
                for (int k = 7; k >= 0; --k) {
                    if (above < wanted && wanted <= above + count[k]) {  // exactly one b
                        cut = 8 * lane + k;
                        tie_quota = wanted - above;
                        ties = count[k];
                    }
                    above += count[k];
                }
            }
        }
        __syncthreads();
        if (selects) {
            const int first = lv.cand_offset;
            long long* key = p.records.key + first;
            unsigned int* yx_out = p.records.yx + first;
            unsigned int* cell_out = p.records.cell + first;
            const int s_cut = cut;
            const bool list_ties = ties <= TIE_LIST;
            auto add_record = [&](unsigned int slot, unsigned int yx) {
                const unsigned int k = warp_append(&n_records, 0);
                yx_out[k] = yx;
                cell_out[k] = (unsigned int)__ldg(&p.candidates.cell[first + slot]);
                key[k] = p.harris ? 0ll : ldg_i64(&p.candidates.key[first + slot]);
            };

            // s > s* kept at once, the ties listed.
            for (unsigned int i = threadIdx.x; i < n; i += blockDim.x) {
                const int s = __ldg(&p.candidates.score[first + i]);
                if (s > s_cut) {
                    add_record(i, __ldg(&p.candidates.yx[first + i]));
                } else if (s == s_cut && list_ties) {
                    const unsigned int t = warp_append(&listed, 0);
                    if (t < TIE_LIST) {
                        tie_yx[t] = __ldg(&p.candidates.yx[first + i]);
                        tie_slot[t] = i;
                    }
                }
            }
            // Of the ties, the first tie_quota in raster order: those with
            // y << 16 | x <= the tie_quota-th smallest, found 8 bits at a time.
            if (s_cut >= 0) {
                __syncthreads();  // the list is complete
                const Ties level_ties{list_ties ? listed : 0u, tie_yx, tie_slot, n, p.candidates.yx + first,
                                      p.candidates.score + first, s_cut};
                unsigned int last_kept = 0xffffffffu;
                if (tie_quota < ties) {
                    if (threadIdx.x == 0) rest = tie_quota;
                    unsigned int prefix = 0;
                    for (int shift = 24; shift >= 0; shift -= 8) {
                        const unsigned int high = shift == 24 ? 0u : 0xffffffffu << (shift + 8);
                        for (int b = threadIdx.x; b < ORB_SCORE_BINS; b += blockDim.x) bins[b] = 0u;
                        __syncthreads();
                        for_each_tie(level_ties, [&](unsigned int yx, unsigned int) {
                            if ((yx & high) != prefix) return;
                            const unsigned int d = (yx >> shift) & 0xffu;
                            const unsigned int peers = __match_any_sync(__activemask(), d);
                            if (lane == __ffs(peers) - 1) atomicAdd(&bins[d], (unsigned int)__popc(peers));
                        });
                        __syncthreads();
                        if (warp == 0) {
                            unsigned int want = rest;
                            __syncwarp();
                            const unsigned int d = select_bin(bins, want);
                            if (lane == 0) {
                                digit = d;
                                rest = want;
                            }
                        }
                        __syncthreads();
                        prefix |= digit << shift;
                    }
                    last_kept = prefix;
                }
                for_each_tie(level_ties, [&](unsigned int yx, unsigned int slot) {
                    if (yx <= last_kept) add_record(slot, yx);
                });
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) p.level_records[l] = selects ? n_records : 0u;  // min(n, 2 quota)
        __syncthreads();  // the next level reuses the shared state
    }
}

// The level table and each level's number of records, into the block's shared memory
// (the caller synchronises).
__device__ __forceinline__ void load_level_records(OrbLevel* levels, unsigned int* counts,
                                                   const OrbLevel* level_table,
                                                   const unsigned int* level_records, int n_levels) {
    load_levels(levels, level_table, n_levels);
    for (int l = threadIdx.x; l < n_levels; l += blockDim.x) counts[l] = __ldg(&level_records[l]);
}

// The Harris keys of every level's records, spread over the whole grid: the records
// of all levels are numbered one after the other, and each is keyed by 8 lanes of a
// warp, lane r summing window row r - 3 (lane 7 none), so a record's 81 pixel loads
// are not one thread's chain. Integer sums, so the order of the sum is exact.
extern "C" __global__ void orb_record_keys(const OrbRecordKeysParams p) {
    __shared__ OrbLevel levels[ORB_MAX_LEVELS];
    __shared__ unsigned int counts[ORB_MAX_LEVELS];
    load_level_records(levels, counts, p.set.level_table, p.set.level_records, p.set.n_levels);
    __syncthreads();
    unsigned int total = 0;
    for (int l = 0; l < p.set.n_levels; ++l) total += counts[l];
    const unsigned int row = threadIdx.x % 8;
    // Warp-uniform loop (blockDim is a multiple of 32): every lane takes the shuffles.
    const unsigned int warp_first = blockIdx.x * blockDim.x + (threadIdx.x & ~31u);
    for (unsigned int t = warp_first; t / 8 < total; t += gridDim.x * blockDim.x) {
        const unsigned int g = (t + threadIdx.x % 32) / 8;
        int a = 0, b = 0, c = 0, l = 0;
        unsigned int k = g;
        if (g < total) {
            while (k >= counts[l]) k -= counts[l++];
            if (row < 7) {
                const OrbLevel& lv = levels[l];
                const unsigned int yx = __ldg(&p.set.records.yx[lv.cand_offset + k]);
                const int x = yx & 0xffff, y = yx >> 16;
                harris_row_sums(p.pyramid + lv.offset + y * lv.width + x, lv.width, (int)row - 3, a, b, c);
            }
        }
#pragma unroll
        for (int offset = 1; offset < 8; offset <<= 1) {
            a += __shfl_xor_sync(0xffffffffu, a, offset);
            b += __shfl_xor_sync(0xffffffffu, b, offset);
            c += __shfl_xor_sync(0xffffffffu, c, offset);
        }
        if (g < total && row == 0) p.set.records.key[levels[l].cand_offset + k] = harris_response(a, b, c);
    }
}

// A level's 32 records starting at `first`, taken by one block: groups are numbered
// level by level. False past the last group.
__device__ __forceinline__ bool record_group(const unsigned int* counts, int n_levels, unsigned int group,
                                             int& level, unsigned int& first) {
    for (int l = 0; l < n_levels; ++l) {
        const unsigned int groups = (counts[l] + 31u) / 32u;
        if (group < groups) {
            level = l;
            first = 32u * group;
            return true;
        }
        group -= groups;
    }
    return false;
}

// What a record is ordered by: its group (cell, or k), key and raster position.
struct OrderFields {
    unsigned int group;
    long long key;
    unsigned int yx;
};

// Ranks by counting instead of sorting: for every record i of every level, the number
// of the level's records j with `before(fields(j), fields(i))` (`fields` takes a slot
// number). A block takes 32 records of one level, one per lane; it stages the level's
// records in shared memory, RANK_CHUNK at a time with coalesced loads, and its warps
// split each chunk between them, so the comparisons read shared memory (one broadcast
// per field) instead of waiting on a global load each. `done(level, i, count)` runs
// once per record, in warp 0.
template <typename Fields, typename Before, typename Done>
__device__ __forceinline__ void count_records_before(const OrbLevel* levels, const unsigned int* counts,
                                                     int n_levels, Fields fields, Before before, Done done) {
    __shared__ unsigned int partial[32];
    __shared__ long long chunk_key[RANK_CHUNK];
    __shared__ unsigned int chunk_group[RANK_CHUNK], chunk_yx[RANK_CHUNK];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (warp == 0) partial[lane] = 0u;
    int level;
    unsigned int first;
    for (unsigned int group = blockIdx.x; record_group(counts, n_levels, group, level, first); group += gridDim.x) {
        const unsigned int n = counts[level];
        const unsigned int base = (unsigned int)levels[level].cand_offset;
        const unsigned int i = first + lane;
        OrderFields own{0u, 0ll, 0u};
        if (i < n) own = fields(base + i);
        unsigned int count = 0;
        for (unsigned int start = 0; start < n; start += RANK_CHUNK) {
            const unsigned int size = min(n - start, (unsigned int)RANK_CHUNK);
            __syncthreads();  // the previous chunk is counted, partial is zero
            for (unsigned int j = threadIdx.x; j < size; j += blockDim.x) {
                const OrderFields staged = fields(base + start + j);
                chunk_group[j] = staged.group;
                chunk_key[j] = staged.key;
                chunk_yx[j] = staged.yx;
            }
            __syncthreads();  // the chunk is staged
            if (i < n) {
#pragma unroll 4
                for (unsigned int j = warp; j < size; j += RANK_WARPS)
                    count += before(OrderFields{chunk_group[j], chunk_key[j], chunk_yx[j]}, own) ? 1u : 0u;
            }
        }
        if (i < n) atomicAdd(&partial[lane], count);
        __syncthreads();  // every warp has added
        if (warp == 0) {
            if (i < n) done(level, base + i, partial[lane]);
            partial[lane] = 0u;
        }
    }
}

// k of every record: how many records of its cell come first by (key desc, y, x).
extern "C" __global__ void __launch_bounds__(RANK_WARPS * 32) orb_record_ranks(const OrbRecordRanksParams p) {
    __shared__ OrbLevel levels[ORB_MAX_LEVELS];
    __shared__ unsigned int counts[ORB_MAX_LEVELS];
    load_level_records(levels, counts, p.set.level_table, p.set.level_records, p.set.n_levels);
    __syncthreads();
    count_records_before(
        levels, counts, p.set.n_levels,
        [&](unsigned int slot) {
            return OrderFields{__ldg(&p.set.records.cell[slot]), ldg_i64(&p.set.records.key[slot]), __ldg(&p.set.records.yx[slot])};
        },
        [](const OrderFields& j, const OrderFields& i) {
            return (j.group == i.group) & comes_before(j.key, j.yx, i.key, i.yx);
        },
        [&](int, unsigned int i, unsigned int k) { p.set.records.rank[i] = k; });
}

// The level's output position of every record by (k asc, key desc, y, x); the first
// min(candidates, N_l) are written. Every level's output start is known up front
// (min(candidates, N_l) per level), so the levels need not wait for each other.
extern "C" __global__ void __launch_bounds__(RANK_WARPS * 32) orb_record_place(const OrbRecordPlaceParams p) {
    __shared__ OrbLevel levels[ORB_MAX_LEVELS];
    __shared__ unsigned int counts[ORB_MAX_LEVELS], level_kept[ORB_MAX_LEVELS], out_start[ORB_MAX_LEVELS];
    load_levels(levels, p.level_table, p.n_levels);
    for (int l = threadIdx.x; l < p.n_levels; l += blockDim.x) {
        counts[l] = __ldg(&p.level_records[l]);
        const unsigned int slots = (unsigned int)__ldg(&p.level_table[l].cand_capacity);
        level_kept[l] = min(min(__ldg(&p.counters.level_counts[l]), slots), (unsigned int)__ldg(&p.quotas[l]));
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned int total = 0;
        for (int l = 0; l < p.n_levels; ++l) {
            out_start[l] = total;
            total += level_kept[l];
        }
        if (blockIdx.x == 0) {
            for (int l = 0; l < p.n_levels; ++l) p.kept[l] = level_kept[l];
            p.kept[p.n_levels] = total;
        }
    }
    __syncthreads();
    count_records_before(
        levels, counts, p.n_levels,
        [&](unsigned int slot) {
            return OrderFields{__ldg(&p.records.rank[slot]), ldg_i64(&p.records.key[slot]), __ldg(&p.records.yx[slot])};
        },
        [](const OrderFields& j, const OrderFields& i) {
            return (j.group < i.group) | ((j.group == i.group) & comes_before(j.key, j.yx, i.key, i.yx));
        },
        [&](int l, unsigned int i, unsigned int position) {
            if (position >= level_kept[l]) return;
            const unsigned int out = out_start[l] + position;
            p.keypoints.yx[out] = __ldg(&p.records.yx[i]);
            p.keypoints.level[out] = l;
            p.keypoints.key[out] = ldg_i64(&p.records.key[i]);
        });
}
