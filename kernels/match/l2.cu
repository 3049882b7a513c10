// Brute-force matching of 128-byte SIFT descriptors by exact squared L2 distance, k = 2,
// with the mutual cross-check folded into the same pass.
//
// |q - t|^2 = |q|^2 + |t|^2 - 2 q.t in integers (at most 128 * 255^2, no overflow): the
// dot products are a GEMM-like tile product with __dp4a (four u8 products per
// instruction). A block takes L2_TILE queries and a contiguous run of L2_TILE-train tiles
// (blockIdx.y picks the run), both staged in shared memory; each of its 16x16 threads
// owns an 8x8 micro-tile of pairs (queries ty + 16 i, trains tx + 16 j). Rows are read
// 8 bytes at a time and padded to 34 words, so the 16 lanes of a half warp read 16
// different train rows from 32 different banks, and the query rows are broadcasts.
// Each run writes its queries' two nearest; match_l2_merge folds the runs together.
#include "common/best2.cuh"
#include "common/match_params.cuh"

// L2_TILE (queries per block and train descriptors per tile) and L2_THREADS (a block's
// threads) are -D defines from src/cuda/abi.rs.
#define MICRO 8
#define WORDS 32                 // 128 bytes as 32-bit words
#define STRIDE (WORDS + 2)       // padded row: consecutive rows start 2 banks apart

// Rows [base, base + count) of `src` into `rows` (zeros past count), and their squared
// norms. Eight consecutive lanes load one descriptor, 16 bytes each (coalesced).
__device__ __forceinline__ void load_tile(const uint4* __restrict__ src, int base, int count,
                                          unsigned int* rows, unsigned int* norms) {
#pragma unroll
    for (int k = threadIdx.x; k < L2_TILE * 8; k += L2_THREADS) {
        const int row = k >> 3, chunk = k & 7;
        const uint4 v = row < count ? __ldg(&src[(size_t)(base + row) * 8 + chunk]) : make_uint4(0, 0, 0, 0);
        uint2* to = reinterpret_cast<uint2*>(rows + row * STRIDE + 4 * chunk);
        to[0] = make_uint2(v.x, v.y);
        to[1] = make_uint2(v.z, v.w);
        unsigned int n = __dp4a(v.x, v.x, 0u);
        n = __dp4a(v.y, v.y, n);
        n = __dp4a(v.z, v.z, n);
        n = __dp4a(v.w, v.w, n);
        n += __shfl_xor_sync(0xffffffffu, n, 1);
        n += __shfl_xor_sync(0xffffffffu, n, 2);
        n += __shfl_xor_sync(0xffffffffu, n, 4);
        if (chunk == 0) norms[row] = n;
    }
}

// nearest_query receives each train descriptor's nearest query when the caller wants
// the cross-check (L2Knn2Params).
extern "C" __global__ void __launch_bounds__(L2_THREADS, 2) match_l2_knn2(const L2Knn2Params p) {
    __shared__ __align__(8) unsigned int query_rows[L2_TILE * STRIDE];
    __shared__ __align__(8) unsigned int train_rows[L2_TILE * STRIDE];
    __shared__ unsigned int query_norms[L2_TILE];
    __shared__ unsigned int train_norms[L2_TILE];
    __shared__ unsigned long long column_nearest[L2_TILE];

    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    const int q0 = blockIdx.x * L2_TILE;
    const int query_count = min(L2_TILE, p.n_query - q0);
    const bool mutual = p.nearest_query != nullptr;
    load_tile(p.query, q0, query_count, query_rows, query_norms);

    Best2 best[MICRO];
#pragma unroll
    for (int i = 0; i < MICRO; ++i) best[i] = best2_empty();

    const int n_tiles = (p.n_train + L2_TILE - 1) / L2_TILE;
    const int first = blockIdx.y * p.tiles_per_run, last = min(first + p.tiles_per_run, n_tiles);
    int previous_base = -1;
    for (int tile = first; tile < last; ++tile) {
        const int base = tile * L2_TILE, count = min(L2_TILE, p.n_train - base);
        __syncthreads();  // the previous tile is no longer read
        if (mutual && threadIdx.x < L2_TILE) {
            if (previous_base >= 0 && previous_base + (int)threadIdx.x < p.n_train)
                atomicMin(&p.nearest_query[previous_base + threadIdx.x], column_nearest[threadIdx.x]);
            column_nearest[threadIdx.x] = ~0ull;
        }
        load_tile(p.train, base, count, train_rows, train_norms);
        __syncthreads();

        unsigned int dot[MICRO][MICRO];
#pragma unroll
        for (int i = 0; i < MICRO; ++i)
#pragma unroll
            for (int j = 0; j < MICRO; ++j) dot[i][j] = 0u;
#pragma unroll 2
        for (int w = 0; w < WORDS; w += 2) {
            uint2 b[MICRO];
#pragma unroll
            for (int j = 0; j < MICRO; ++j)
                b[j] = *reinterpret_cast<const uint2*>(train_rows + (tx + 16 * j) * STRIDE + w);
#pragma unroll
            for (int i = 0; i < MICRO; ++i) {
                const uint2 a = *reinterpret_cast<const uint2*>(query_rows + (ty + 16 * i) * STRIDE + w);
#pragma unroll
                for (int j = 0; j < MICRO; ++j) dot[i][j] = __dp4a(a.y, b[j].y, __dp4a(a.x, b[j].x, dot[i][j]));
            }
        }

        // Trains in increasing index for each query, as best2_offer needs.
#pragma unroll
        for (int j = 0; j < MICRO; ++j) {
            const int t = tx + 16 * j;
            const bool valid = t < count;
            const unsigned int train_norm = train_norms[t];
            unsigned long long nearest = ~0ull;
#pragma unroll
            for (int i = 0; i < MICRO; ++i) {
                const int q = ty + 16 * i;
                const int d = (int)(query_norms[q] + train_norm - 2u * dot[i][j]);
                if (valid) best2_offer(best[i], base + t, d);
                if (mutual && q < query_count)
                    nearest = min(nearest, (unsigned long long)d << 32 | (unsigned int)(q0 + q));
            }
            if (mutual) {
                // The other half warp holds the same trains against its own 8 queries.
                nearest = min(nearest, __shfl_xor_sync(0xffffffffu, nearest, 16));
                if (valid && (threadIdx.x & 16) == 0) atomicMin(&column_nearest[t], nearest);
            }
        }
        previous_base = base;
    }
    if (mutual) {
        __syncthreads();
        if (threadIdx.x < L2_TILE && previous_base >= 0 && previous_base + (int)threadIdx.x < p.n_train)
            atomicMin(&p.nearest_query[previous_base + threadIdx.x], column_nearest[threadIdx.x]);
    }

    // The 16 lanes of a half warp share their queries: merge their train columns.
#pragma unroll
    for (int i = 0; i < MICRO; ++i) {
#pragma unroll
        for (int lanes = 8; lanes >= 1; lanes >>= 1) best2_merge_lane(best[i], lanes);
        const int q = ty + 16 * i;
        if (tx == i && q < query_count)
            p.partial[(size_t)blockIdx.y * p.n_query + q0 + q] =
                make_int4(best[i].best_index, best[i].best, best[i].second, 0);
    }
}

// Folds the runs' partial results into each query's two nearest; with the cross-check,
// a best match whose train descriptor's nearest query is another one gets index -1.
extern "C" __global__ void match_l2_merge(const L2MergeParams p) {
    const int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= p.n_query) return;
    Best2 best = best2_empty();
    for (int run = 0; run < p.runs; ++run) {
        const int4 found = __ldg(&p.partial[(size_t)run * p.n_query + q]);
        Best2 b;
        b.best_index = found.x;
        b.best = found.y;
        b.second = found.z;
        best2_merge(best, b);
    }
    if (p.nearest_query != nullptr && best.best_index >= 0 &&
        (unsigned int)(__ldg(&p.nearest_query[best.best_index]) & 0xffffffffu) != (unsigned int)q)
        best.best_index = -1;
    p.out[q] = make_int3(best.best_index, best.best, best.second);
}
