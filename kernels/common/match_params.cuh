// The parameters of the matching kernels (kernels/match/hamming.cu, l2.cu), mirrored in
// src/cuda/abi/match_params.rs: change both together (the ABI_ checks tell a mismatch).
// A query's result is an int3 (best index, best, second best): `Knn2` on the host.
#pragma once

#include "common/abi.cuh"

// match_hamming_knn2: each query's two nearest train descriptors (DESC_WORDS words each).
struct HammingKnn2Params {
    const unsigned int* query;
    const unsigned int* train;
    int3* out;  // one per query
    int n_query;
    int n_train;
};
ABI_SIZE(HammingKnn2Params, 32);
ABI_OFFSET(HammingKnn2Params, query, 0);
ABI_OFFSET(HammingKnn2Params, train, 8);
ABI_OFFSET(HammingKnn2Params, out, 16);
ABI_OFFSET(HammingKnn2Params, n_query, 24);
ABI_OFFSET(HammingKnn2Params, n_train, 28);

// match_cross_check: keeps a query's best match only if it is mutual.
struct CrossCheckParams {
    int3* forward;         // one per query
    const int3* backward;  // one per train descriptor
    int n_query;
    int padding;
};
ABI_SIZE(CrossCheckParams, 24);
ABI_OFFSET(CrossCheckParams, forward, 0);
ABI_OFFSET(CrossCheckParams, backward, 8);
ABI_OFFSET(CrossCheckParams, n_query, 16);
ABI_OFFSET(CrossCheckParams, padding, 20);

// match_hamming_knn2_counted: as HammingKnn2Params, the counts read on the device.
struct HammingKnn2CountedParams {
    const unsigned int* query;
    const unsigned int* n_query;
    const unsigned int* train;
    const unsigned int* n_train;
    int3* out;
};
ABI_SIZE(HammingKnn2CountedParams, 40);
ABI_OFFSET(HammingKnn2CountedParams, query, 0);
ABI_OFFSET(HammingKnn2CountedParams, n_query, 8);
ABI_OFFSET(HammingKnn2CountedParams, train, 16);
ABI_OFFSET(HammingKnn2CountedParams, n_train, 24);
ABI_OFFSET(HammingKnn2CountedParams, out, 32);

// match_cross_check_counted: as CrossCheckParams, the count read on the device.
struct CrossCheckCountedParams {
    int3* forward;
    const unsigned int* n_query;
    const int3* backward;
};
ABI_SIZE(CrossCheckCountedParams, 24);
ABI_OFFSET(CrossCheckCountedParams, forward, 0);
ABI_OFFSET(CrossCheckCountedParams, n_query, 8);
ABI_OFFSET(CrossCheckCountedParams, backward, 16);

// match_cross_check_best_counted: as CrossCheckCountedParams, with the backward search
// as orb_describe fuses it: each train descriptor's nearest query only.
struct CrossCheckBestCountedParams {
    int3* forward;
    const unsigned int* n_query;
    const unsigned int* backward_best;  // one per train descriptor: distance << BACKWARD_QUERY_BITS | query
};
ABI_SIZE(CrossCheckBestCountedParams, 24);
ABI_OFFSET(CrossCheckBestCountedParams, forward, 0);
ABI_OFFSET(CrossCheckBestCountedParams, n_query, 8);
ABI_OFFSET(CrossCheckBestCountedParams, backward_best, 16);

// match_l2_knn2: each query's two nearest among the train tiles of its block's run.
struct L2Knn2Params {
    const uint4* query;  // 128 bytes a descriptor
    const uint4* train;
    int4* partial;       // [blockIdx.y * n_query + q] = (best index, best, second, 0)
    // One `distance << 32 | query` per train descriptor, preset to all ones, for the
    // cross-check; null without it.
    unsigned long long* nearest_query;
    int n_query;
    int n_train;
    int tiles_per_run;
    int padding;
};
ABI_SIZE(L2Knn2Params, 48);
ABI_OFFSET(L2Knn2Params, query, 0);
ABI_OFFSET(L2Knn2Params, train, 8);
ABI_OFFSET(L2Knn2Params, partial, 16);
ABI_OFFSET(L2Knn2Params, nearest_query, 24);
ABI_OFFSET(L2Knn2Params, n_query, 32);
ABI_OFFSET(L2Knn2Params, n_train, 36);
ABI_OFFSET(L2Knn2Params, tiles_per_run, 40);
ABI_OFFSET(L2Knn2Params, padding, 44);

// match_l2_merge: the runs' partial results folded into each query's two nearest.
struct L2MergeParams {
    const int4* partial;
    const unsigned long long* nearest_query;  // or null: no cross-check
    int3* out;                                // one per query
    int runs;
    int n_query;
};
ABI_SIZE(L2MergeParams, 32);
ABI_OFFSET(L2MergeParams, partial, 0);
ABI_OFFSET(L2MergeParams, nearest_query, 8);
ABI_OFFSET(L2MergeParams, out, 16);
ABI_OFFSET(L2MergeParams, runs, 24);
ABI_OFFSET(L2MergeParams, n_query, 28);
