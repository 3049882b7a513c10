// Per-level keypoint selection of the grid distribution on the GPU
// (docs/orb-reference.md section 5) in four launches, no host round trip:
// 1. orb_select_candidates (one block per level), the FAST pre-filter: keep the first
//    2 N_l candidates by (s desc, y asc, x asc). The level's 256-bin histogram of s
//    (filled by orb_cell_candidates) gives the cut score s*: every candidate with
//    s > s* is kept, and of those with s = s* the first 2 N_l - #{s > s*} in raster
//    order, found by a radix select of y << 16 | x. The kept ones become the level's
//    records (at most 2 N_l), in global scratch at the level's first slot, in slot
//    order: a cell's candidates are one run of slots, and so are its records.
// 2. orb_record_keys (all SMs): the Harris keys of every level's records.
// 3. orb_record_ranks (all SMs): rank k of each record within its cell by (key desc,
//    y asc, x asc), counted over the cell's run: how many records of its cell come
//    first. Each record also takes a slot in its level's bin of k.
// 4. orb_record_place (all SMs): each record's position in its level by (k asc, key
//    desc, y asc, x asc): the records of lower bins of k, plus those of its own bin
//    that come first, counted. Counting needs no sort (the block-wide bitonic sorts
//    it replaced spent one barrier per step on one SM per level) and spreads over
//    every SM: (key, y, x) is unique within a level, so the counts are the positions
//    a sort would give. Counting within the bins, not the level, compares each record
//    with a few dozen others (ranks) and with its bin (places) instead of all of its
//    level's; each block stages the bin in shared memory, so the quadratic part reads
//    no global memory.
#include "common/levels.cuh"
#include "common/harris.cuh"
#include "common/orb_params.cuh"
#include "common/warp_append.cuh"
#include "common/warp_scan.cuh"

// ORB_SCORE_BINS (bins of a level's FAST-score histogram), RANK_BINS (bins of a level's
// ranks k), SELECT_THREADS (threads of an orb_select_candidates block) and PLACE_WARPS
// (warps of an orb_record_place block) are -D defines from src/cuda/abi.rs.
// Ties (s = s*) a block lists in shared memory; more are re-read from the level's slots.
#define TIE_LIST 1024
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
    const unsigned int inclusive = warp_inclusive_sum(sum);
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

// What orb_select_candidates reads of a candidate: its score, position, cell and (FAST
// ranking) key.
struct Candidate {
    int score;
    unsigned int yx;
    unsigned int cell;
    long long key;
};

// Candidates a thread takes at a time in keep_in_order: a block barrier per
// KEEP_RUN x SELECT_THREADS candidates.
#define KEEP_RUN 4
#define SELECT_WARPS (SELECT_THREADS / 32)

// Stable compaction by the whole block: `write(item, k)` for every i < n whose
// `item = load(i)` the block `keeps`, k counting the kept ones in index order. An item
// is loaded once, before the barrier, so that the loads of a thread's KEEP_RUN items
// are in flight together. Returns how many were kept (every thread).
template <typename Load, typename Keeps, typename Write>
__device__ __forceinline__ unsigned int keep_in_order(unsigned int n, Load load, Keeps keeps, Write write) {
    // Double-buffered: a chunk's totals are read before the next chunk's barrier, and
    // written again only after it.
    __shared__ unsigned int warp_kept[2][SELECT_WARPS];
    const unsigned int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    unsigned int written = 0;
    int parity = 0;
    for (unsigned int base = 0; base < n; base += KEEP_RUN * SELECT_THREADS, parity ^= 1) {
        const unsigned int first = base + KEEP_RUN * threadIdx.x;
        decltype(load(0u)) items[KEEP_RUN];
        bool kept[KEEP_RUN];
        unsigned int mine = 0;
#pragma unroll
        for (int r = 0; r < KEEP_RUN; ++r)
            if (first + r < n) items[r] = load(first + r);
#pragma unroll
        for (int r = 0; r < KEEP_RUN; ++r) {
            kept[r] = first + r < n && keeps(items[r]);
            mine += kept[r];
        }
        const unsigned int through = warp_inclusive_sum(mine);  // kept by lanes 0..lane of the warp
        if (lane == 31) warp_kept[parity][warp] = through;
        __syncthreads();
        const unsigned int of_lane = lane < SELECT_WARPS ? warp_kept[parity][lane] : 0u;
        const unsigned int warps_through = warp_inclusive_sum(of_lane);  // kept by warps 0..lane
        const unsigned int before_warp = __shfl_sync(0xffffffffu, warps_through - of_lane, warp);
        unsigned int k = written + before_warp + through - mine;
#pragma unroll
        for (int r = 0; r < KEEP_RUN; ++r)
            if (kept[r]) write(items[r], k++);
        written += __shfl_sync(0xffffffffu, warps_through, 31);
    }
    return written;
}

extern "C" __global__ void __launch_bounds__(SELECT_THREADS) orb_select_candidates(const OrbSelectCandidatesParams p) {
    __shared__ OrbLevel levels[ORB_MAX_LEVELS];
    __shared__ unsigned int bins[ORB_SCORE_BINS];
    __shared__ unsigned int tie_yx[TIE_LIST], tie_slot[TIE_LIST];
    __shared__ int cut;                     // s*; -1 keeps every candidate
    __shared__ unsigned int tie_quota, ties, listed, digit, rest;
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
        unsigned int records = 0;  // min(n, 2 quota)
        if (selects) {
            const int first = lv.cand_offset;
            const int s_cut = cut;
            // Of the ties, the first tie_quota in raster order: those with
            // y << 16 | x <= the tie_quota-th smallest, found 8 bits at a time.
            unsigned int last_kept = 0xffffffffu;
            if (s_cut >= 0 && tie_quota < ties) {
                const bool list_ties = ties <= TIE_LIST;
                if (list_ties) {
                    // KEEP_RUN scores a thread at a time, loaded together.
                    for (unsigned int base = KEEP_RUN * threadIdx.x; base < n; base += KEEP_RUN * blockDim.x) {
                        int score[KEEP_RUN];
#pragma unroll
                        for (int r = 0; r < KEEP_RUN; ++r)
                            score[r] = base + r < n ? __ldg(&p.candidates.score[first + base + r]) : -1;
#pragma unroll
                        for (int r = 0; r < KEEP_RUN; ++r) {
                            if (score[r] != s_cut) continue;
                            const unsigned int t = warp_append(&listed, 0);
                            if (t < TIE_LIST) {  // ties <= TIE_LIST
                                tie_yx[t] = __ldg(&p.candidates.yx[first + base + r]);
                                tie_slot[t] = base + r;
                            }
                        }
                    }
                }
                __syncthreads();  // the list is complete
                const Ties level_ties{list_ties ? listed : 0u, tie_yx, tie_slot, n, p.candidates.yx + first,
                                      p.candidates.score + first, s_cut};
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
            // The kept candidates become records in slot order, so that each cell's
            // records stay one run as its candidates are (orb_record_ranks counts
            // within the run).
            records = keep_in_order(
                n,
                [&](unsigned int i) {
                    return Candidate{__ldg(&p.candidates.score[first + i]), __ldg(&p.candidates.yx[first + i]),
                                     (unsigned int)__ldg(&p.candidates.cell[first + i]),
                                     p.harris ? 0ll : ldg_i64(&p.candidates.key[first + i])};
                },
                [&](const Candidate& c) { return c.score > s_cut || (c.score == s_cut && c.yx <= last_kept); },
                [&](const Candidate& c, unsigned int k) {
                    p.records.yx[first + k] = c.yx;
                    p.records.cell[first + k] = c.cell;
                    p.records.key[first + k] = c.key;
                });
        }
        if (threadIdx.x == 0) p.level_records[l] = records;
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

// What a record is ordered by in its level: its rank k in its cell, its key and its
// raster position.
struct OrderFields {
    unsigned int rank;
    long long key;
    unsigned int yx;
};

__device__ __forceinline__ OrderFields record_fields(const OrbRecordArrays& records, unsigned int slot) {
    return OrderFields{__ldg(&records.rank[slot]), ldg_i64(&records.key[slot]), __ldg(&records.yx[slot])};
}

// Record j comes before record i in the level's output order (k asc, key desc, y, x).
__device__ __forceinline__ bool placed_before(const OrderFields& j, const OrderFields& i) {
    return (j.rank < i.rank) | ((j.rank == i.rank) & comes_before(j.key, j.yx, i.key, i.yx));
}

// The bin of rank k: ranks from RANK_BINS - 1 up share the last one. orb_record_place
// gives a lane to each bin.
static_assert(RANK_BINS == 32, "a bin per lane");
__device__ __forceinline__ unsigned int rank_bin(unsigned int k) { return min(k, (unsigned int)RANK_BINS - 1u); }

// k of every record: how many records of its cell come first by (key desc, y, x),
// counted over the cell's run of records (orb_select_candidates keeps each cell's
// records together), a thread per record over the whole grid. Each record also takes
// a slot in its level's bin of k (`rank_bins`, zeroed each frame), which
// orb_record_place groups the records by.
extern "C" __global__ void orb_record_ranks(const OrbRecordRanksParams p) {
    __shared__ OrbLevel levels[ORB_MAX_LEVELS];
    __shared__ unsigned int counts[ORB_MAX_LEVELS];
    load_level_records(levels, counts, p.set.level_table, p.set.level_records, p.set.n_levels);
    __syncthreads();
    unsigned int total = 0;
    for (int l = 0; l < p.set.n_levels; ++l) total += counts[l];
    const OrbRecordArrays& records = p.set.records;
    for (unsigned int g = blockIdx.x * blockDim.x + threadIdx.x; g < total; g += gridDim.x * blockDim.x) {
        int l = 0;
        unsigned int k = g;
        while (k >= counts[l]) k -= counts[l++];
        const unsigned int base = (unsigned int)levels[l].cand_offset, n = counts[l];
        const unsigned int cell = __ldg(&records.cell[base + k]);
        const long long key = ldg_i64(&records.key[base + k]);
        const unsigned int yx = __ldg(&records.yx[base + k]);
        // Each step loads the neighbour's three fields at once: one load latency a step.
        auto counts_before = [&](unsigned int j) {
            const unsigned int other_cell = __ldg(&records.cell[base + j]);
            const bool before = comes_before(ldg_i64(&records.key[base + j]), __ldg(&records.yx[base + j]), key, yx);
            return other_cell != cell ? -1 : (int)before;
        };
        unsigned int rank = 0;
        for (unsigned int j = k; j > 0; --j) {
            const int counted = counts_before(j - 1);
            if (counted < 0) break;
            rank += counted;
        }
        for (unsigned int j = k + 1; j < n; ++j) {
            const int counted = counts_before(j);
            if (counted < 0) break;
            rank += counted;
        }
        records.rank[base + k] = rank;
        records.bin_slot[base + k] = atomicAdd(&p.rank_bins[l * RANK_BINS + rank_bin(rank)], 1u);
    }
}

// Records of a bin an orb_record_place block stages in shared memory at once (16 bytes
// each), from a level's records RANK_CHUNK at a time: all of them at the default 2,000
// features (a level has at most 868 records).
#define RANK_CHUNK 1024

// The level's output position of every record by (k asc, key desc, y, x); the first
// min(candidates, N_l) are written. A record's position is the records of its level in
// lower bins of k (all of which come first) plus the records of its own bin that come
// before it, counted: a block takes 32 records of one bin (those whose bin slots are
// 32 g .. 32 g + 31) and compares them with the bin's records only, staged in shared
// memory RANK_CHUNK at a time. Bins that start at or past N_l are skipped: none of
// their records is kept. Every level's output start is known up front (min(candidates,
// N_l) per level), so the levels need not wait for each other.
extern "C" __global__ void __launch_bounds__(PLACE_WARPS * 32) orb_record_place(const OrbRecordPlaceParams p) {
    __shared__ OrbLevel levels[ORB_MAX_LEVELS];
    __shared__ unsigned int counts[ORB_MAX_LEVELS], level_kept[ORB_MAX_LEVELS], out_start[ORB_MAX_LEVELS];
    // Per level and bin: the records in lower bins, and the level's groups of 32
    // through this bin; per level, the frame's groups before it.
    __shared__ unsigned int bin_start[ORB_MAX_LEVELS][RANK_BINS], groups_through[ORB_MAX_LEVELS][RANK_BINS];
    __shared__ unsigned int level_groups_start[ORB_MAX_LEVELS + 1];
    __shared__ unsigned int own_slot[32];  // the block's records: their slots in the level
    __shared__ OrderFields own_fields[32];
    __shared__ long long chunk_key[RANK_CHUNK];
    __shared__ unsigned int chunk_rank[RANK_CHUNK], chunk_yx[RANK_CHUNK];
    // Records staged, double-buffered: one chunk's count is read while the next is zeroed.
    __shared__ unsigned int staged[2], partial[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (threadIdx.x == 0) staged[0] = staged[1] = 0u;
    load_levels(levels, p.level_table, p.n_levels);
    for (int l = threadIdx.x; l < p.n_levels; l += blockDim.x) {
        counts[l] = __ldg(&p.level_records[l]);
        const unsigned int slots = (unsigned int)__ldg(&p.level_table[l].cand_capacity);
        level_kept[l] = min(min(__ldg(&p.counters.level_counts[l]), slots), (unsigned int)__ldg(&p.quotas[l]));
    }
    __syncthreads();
    // A warp per level, a lane per bin: the bins' starts and the groups of the bins
    // that start before N_l, by scans over the lanes; thread 0 the levels' starts.
    for (int l = warp; l < p.n_levels; l += PLACE_WARPS) {
        const unsigned int in_bin = __ldg(&p.counters.rank_bins[l * RANK_BINS + lane]);
        const unsigned int start = warp_inclusive_sum(in_bin) - in_bin;
        bin_start[l][lane] = start;
        groups_through[l][lane] = warp_inclusive_sum(start < level_kept[l] ? (in_bin + 31u) / 32u : 0u);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned int total = 0, groups = 0;
        for (int l = 0; l < p.n_levels; ++l) {
            out_start[l] = total;
            total += level_kept[l];
            level_groups_start[l] = groups;
            groups += groups_through[l][RANK_BINS - 1];
        }
        level_groups_start[p.n_levels] = groups;
        if (blockIdx.x == 0) {
            for (int l = 0; l < p.n_levels; ++l) p.kept[l] = level_kept[l];
            p.kept[p.n_levels] = total;
        }
    }
    __syncthreads();
    const OrbRecordArrays& records = p.records;
    int parity = 0;
    for (unsigned int item = blockIdx.x; item < level_groups_start[p.n_levels]; item += gridDim.x) {
        // The item's level, bin (a lane per bin) and group within the bin.
        int l = 0;
        while (level_groups_start[l + 1] <= item) ++l;
        const unsigned int group = item - level_groups_start[l];
        const unsigned int b = __ffs(__ballot_sync(0xffffffffu, groups_through[l][lane] > group)) - 1;
        const unsigned int groups_before = b > 0 ? groups_through[l][b - 1] : 0u;
        const unsigned int first_slot = 32u * (group - groups_before);
        const unsigned int base = (unsigned int)levels[l].cand_offset, n = counts[l];
        if (warp == 0) {
            own_slot[lane] = 0xffffffffu;
            partial[lane] = 0u;
        }
        __syncthreads();  // the previous item is done
        unsigned int mine = 0xffffffffu, count = 0;
        OrderFields own{0u, 0ll, 0u};
        for (unsigned int start = 0; start < n; start += RANK_CHUNK) {
            const unsigned int end = min(n, start + RANK_CHUNK);
            // The first chunk's pass also finds the block's own records, anywhere in the
            // level. A record's fields are loaded together, whether its bin is b or not.
            for (unsigned int j = start + threadIdx.x; j < (start == 0 ? n : end); j += blockDim.x) {
                const OrderFields record = record_fields(records, base + j);
                const unsigned int own_index =
                    start == 0 ? __ldg(&records.bin_slot[base + j]) - first_slot : 0xffffffffu;
                if (rank_bin(record.rank) != b) continue;
                if (own_index < 32u) {
                    own_slot[own_index] = j;
                    own_fields[own_index] = record;
                }
                if (j < end) {
                    const unsigned int t = warp_append(&staged[parity], 0);
                    chunk_rank[t] = record.rank;
                    chunk_key[t] = record.key;
                    chunk_yx[t] = record.yx;
                }
            }
            __syncthreads();  // the chunk is staged, and the block's records are known
            if (start == 0) {
                mine = own_slot[lane];
                own = own_fields[lane];
            }
            const unsigned int size = staged[parity];
            if (mine != 0xffffffffu) {
#pragma unroll 4
                for (unsigned int j = warp; j < size; j += PLACE_WARPS)
                    count += placed_before(OrderFields{chunk_rank[j], chunk_key[j], chunk_yx[j]}, own) ? 1u : 0u;
            }
            if (threadIdx.x == 0) staged[parity ^ 1] = 0u;
            parity ^= 1;
            __syncthreads();  // the chunk is counted before the next one is staged
        }
        if (mine != 0xffffffffu) atomicAdd(&partial[lane], count);
        __syncthreads();  // every warp has added
        if (warp == 0 && mine != 0xffffffffu) {
            const unsigned int position = bin_start[l][b] + partial[lane];
            if (position < level_kept[l]) {
                const unsigned int out = out_start[l] + position;
                p.keypoints.yx[out] = own.yx;
                p.keypoints.level[out] = l;
                p.keypoints.key[out] = own.key;
            }
        }
    }
}
