// The two nearest train descriptors of a query (k = 2), with the CPU matcher's rules:
// the lowest distance wins, ties keep the lower train index, and the second best is the
// second smallest distance of all candidates (equal to the best on a tie).
#pragma once

struct Best2 {
    int best_index;
    int best;
    int second;
};

__device__ __forceinline__ Best2 best2_empty() {
    Best2 b;
    b.best_index = -1;
    b.best = 0x7fffffff;
    b.second = 0x7fffffff;
    return b;
}

// Candidates must be offered in increasing index: a tie then keeps the earlier one.
__device__ __forceinline__ void best2_offer(Best2& b, int index, int d) {
    if (d < b.best) {
        b.second = b.best;
        b.best = d;
        b.best_index = index;
    } else if (d < b.second) {
        b.second = d;
    }
}

// Folds in the two nearest of a disjoint candidate set, in any order of indices.
__device__ __forceinline__ void best2_merge(Best2& a, const Best2& b) {
    const bool b_wins = b.best < a.best || (b.best == a.best && b.best_index < a.best_index);
    const int loser_best = b_wins ? a.best : b.best;
    const int winner_second = b_wins ? b.second : a.second;
    if (b_wins) {
        a.best = b.best;
        a.best_index = b.best_index;
    }
    a.second = min(loser_best, winner_second);
}

// Folds in the two nearest held by lane (this lane ^ lane_mask), which saw a disjoint
// candidate set; all 32 lanes must call this.
__device__ __forceinline__ void best2_merge_lane(Best2& a, int lane_mask) {
    Best2 other;
    other.best_index = __shfl_xor_sync(0xffffffffu, a.best_index, lane_mask);
    other.best = __shfl_xor_sync(0xffffffffu, a.best, lane_mask);
    other.second = __shfl_xor_sync(0xffffffffu, a.second, lane_mask);
    best2_merge(a, other);
}
