//! The parameters of the matching kernels (kernels/common/match_params.cuh). A query's
//! result is a [`Knn2`](super::Knn2).

use cudarc::driver::sys::CUdeviceptr;

/// `match_hamming_knn2`: each query's two nearest train descriptors.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HammingKnn2Params {
    pub query: CUdeviceptr,
    pub train: CUdeviceptr,
    /// One [`Knn2`](super::Knn2) per query.
    pub out: CUdeviceptr,
    pub n_query: i32,
    pub n_train: i32,
}

/// `match_cross_check`: keeps a query's best match only if it is mutual.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CrossCheckParams {
    /// One [`Knn2`](super::Knn2) per query.
    pub forward: CUdeviceptr,
    /// One [`Knn2`](super::Knn2) per train descriptor.
    pub backward: CUdeviceptr,
    pub n_query: i32,
    pub padding: i32,
}

/// `match_hamming_knn2_counted`: as [`HammingKnn2Params`], the counts read on the GPU.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HammingKnn2CountedParams {
    pub query: CUdeviceptr,
    pub n_query: CUdeviceptr,
    pub train: CUdeviceptr,
    pub n_train: CUdeviceptr,
    pub out: CUdeviceptr,
}

/// `match_cross_check_counted`: as [`CrossCheckParams`], the count read on the GPU.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CrossCheckCountedParams {
    pub forward: CUdeviceptr,
    pub n_query: CUdeviceptr,
    pub backward: CUdeviceptr,
}

/// `match_cross_check_best_counted`: as [`CrossCheckCountedParams`], with the backward
/// search as `orb_describe` fuses it: each train descriptor's nearest query only.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CrossCheckBestCountedParams {
    pub forward: CUdeviceptr,
    pub n_query: CUdeviceptr,
    /// One u32 per train descriptor, `distance << BACKWARD_QUERY_BITS | query`.
    pub backward_best: CUdeviceptr,
}

/// `match_l2_knn2`: each query's two nearest among the train tiles of its block's run.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct L2Knn2Params {
    pub query: CUdeviceptr,
    pub train: CUdeviceptr,
    /// One `int4` per query and run.
    pub partial: CUdeviceptr,
    /// One `distance << 32 | query` per train descriptor, preset to all ones, for the
    /// cross-check; 0 (null) without it.
    pub nearest_query: CUdeviceptr,
    pub n_query: i32,
    pub n_train: i32,
    pub tiles_per_run: i32,
    pub padding: i32,
}

/// `match_l2_merge`: the runs' partial results folded into each query's two nearest.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct L2MergeParams {
    pub partial: CUdeviceptr,
    /// As in [`L2Knn2Params`]: 0 (null) without the cross-check.
    pub nearest_query: CUdeviceptr,
    /// One [`Knn2`](super::Knn2) per query.
    pub out: CUdeviceptr,
    pub runs: i32,
    pub n_query: i32,
}

kernel_params!(
    HammingKnn2Params,
    CrossCheckParams,
    HammingKnn2CountedParams,
    CrossCheckCountedParams,
    CrossCheckBestCountedParams,
    L2Knn2Params,
    L2MergeParams
);

#[cfg(test)]
pub(super) fn layouts() -> Vec<super::layout::Layout> {
    use super::layout::layout;
    vec![
        layout!(HammingKnn2Params {
            query,
            train,
            out,
            n_query,
            n_train,
        }),
        layout!(CrossCheckParams {
            forward,
            backward,
            n_query,
            padding,
        }),
        layout!(HammingKnn2CountedParams {
            query,
            n_query,
            train,
            n_train,
            out,
        }),
        layout!(CrossCheckCountedParams {
            forward,
            n_query,
            backward,
        }),
        layout!(CrossCheckBestCountedParams {
            forward,
            n_query,
            backward_best,
        }),
        layout!(L2Knn2Params {
            query,
            train,
            partial,
            nearest_query,
            n_query,
            n_train,
            tiles_per_run,
            padding,
        }),
        layout!(L2MergeParams {
            partial,
            nearest_query,
            out,
            runs,
            n_query,
        }),
    ]
}
