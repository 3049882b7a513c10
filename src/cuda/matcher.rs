//! Standalone brute-force matching on the GPU: the [`Matcher`] shared by every
//! descriptor kind ([`CudaMatcher`]), the pieces its k = 2 searches share, and the
//! Hamming search for ORB (kernels/match/hamming.cu); the L2 search for SIFT is in
//! `l2_matcher.rs`.

use std::mem::size_of;

use cudarc::driver::{result, CudaStream, LaunchConfig};

use crate::config::MatchConfig;
use crate::cuda::abi::match_params::{CrossCheckParams, HammingKnn2Params};
use crate::cuda::abi::{from_le_words, Knn2, MATCH_WARPS, WARP};
use crate::cuda::gpu::Gpu;
use crate::cuda::kernel::Kernel;
use crate::cuda::memory::{DeviceBuffer, Reused, Staged};
use crate::error::{ConfigError, Error, FeaturesError, Result};
use crate::extractor::{check_same_kind, Matcher};
use crate::spec::matching::accept_match;
use crate::types::{DescriptorKind, Descriptors, Features, Match};

/// Threads of a `match_cross_check` block: one query each.
const BLOCK: u32 = 128;

/// The launch of `match_hamming_knn2` (or its counted twin) for `queries` queries: 32
/// a block, one per lane, each of its warps sweeping a slice of the train set.
pub(crate) fn knn2_launch(queries: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (queries.div_ceil(WARP).max(1), 1, 1),
        block_dim: (MATCH_WARPS * WARP, 1, 1),
        shared_mem_bytes: 0,
    }
}

pub struct CudaHammingMatcher {
    gpu: Gpu,
    knn2: Kernel,
    cross_check: Kernel,
    query: Reused<DeviceBuffer>,
    train: Reused<DeviceBuffer>,
    /// One [`Knn2`] per query, with its host twin.
    forward: Reused<Staged>,
    /// One [`Knn2`] per train descriptor, for the cross-check.
    backward: Reused<DeviceBuffer>,
}

/// A GPU search for each query's two nearest train descriptors of one kind.
pub trait NearestTwo: Sized + Send {
    /// The descriptors it searches.
    const KIND: DescriptorKind;

    /// Opens the GPU (on `sm_limit` SMs, see `--sm-limit`) and loads the search's kernels.
    fn open(sm_limit: Option<u32>) -> Result<Self>;

    /// For each query, its best and second-best train descriptor (ties: lower train
    /// index). With `mutual`, a best match whose train descriptor's own best is another
    /// query gets `best_index = -1`.
    fn knn2(&mut self, query: &Descriptors, train: &Descriptors, mutual: bool)
        -> Result<Vec<Knn2>>;

    /// The distance a [`Match`] reports for a kernel's raw distance, exactly as the CPU
    /// matcher reports it.
    fn report(raw: i32) -> f32;
}

/// The number of descriptors in `set` as the kernels take it, if `set` is of `kind`.
pub(crate) fn checked(set: &Descriptors, kind: DescriptorKind, role: &str) -> Result<i32> {
    if set.kind != kind {
        return Err(Error::Features(FeaturesError::DescriptorMismatch {
            query: kind.name().into(),
            train: format!("{} ({role})", set.kind.name()),
        }));
    }
    i32::try_from(set.len()).map_err(|_| {
        Error::Config(ConfigError::Invalid {
            name: role.into(),
            reason: format!("{} descriptors are too many", set.len()),
        })
    })
}

/// `data` copied into `slot`'s device buffer, grown first if it is too small: a matcher
/// uploads host sets into the same buffers from search to search.
pub(crate) fn upload_reused<'a>(
    gpu: &Gpu,
    slot: &'a mut Reused<DeviceBuffer>,
    data: &[u8],
) -> Result<&'a DeviceBuffer> {
    let buffer = slot.at_least(data.len(), |bytes| DeviceBuffer::new(&gpu.ctx, bytes))?;
    if !data.is_empty() {
        // SAFETY: the buffer holds at least `data.len()` bytes; a copy from pageable
        // memory returns once the source was read.
        unsafe { result::memcpy_htod_async(buffer.ptr, data, gpu.stream.cu_stream()) }?;
    }
    Ok(buffer)
}

/// Queues the download of `n` [`Knn2`] records from `forward` and waits for the stream.
pub(crate) fn download_knn2(
    forward: &mut Staged,
    n: usize,
    stream: &CudaStream,
) -> Result<Vec<Knn2>> {
    let bytes = n * size_of::<Knn2>();
    forward.download_async(bytes, stream)?;
    stream.synchronize()?;
    Ok(decode_knn2(&forward.host.as_slice()[..bytes]))
}

/// [`Knn2`] records from the kernels' little-endian `int3`s.
pub(crate) fn decode_knn2(bytes: &[u8]) -> Vec<Knn2> {
    from_le_words(bytes)
}

impl CudaHammingMatcher {
    pub fn new(sm_limit: Option<u32>) -> Result<Self> {
        let gpu = Gpu::open(0, sm_limit)?;
        Ok(Self {
            knn2: Kernel::load(&gpu, "match_hamming", "match_hamming_knn2")?,
            cross_check: Kernel::load(&gpu, "match_hamming", "match_cross_check")?,
            gpu,
            query: Reused::default(),
            train: Reused::default(),
            forward: Reused::default(),
            backward: Reused::default(),
        })
    }

    /// For each query, its best and second-best train descriptor (see [`NearestTwo::knn2`]).
    pub fn knn2(
        &mut self,
        query: &Descriptors,
        train: &Descriptors,
        mutual: bool,
    ) -> Result<Vec<Knn2>> {
        let kind = <Self as NearestTwo>::KIND;
        let (n_query, n_train) = (
            checked(query, kind, "query")?,
            checked(train, kind, "train")?,
        );
        if n_query == 0 {
            return Ok(Vec::new());
        }
        let ctx = &self.gpu.ctx;
        ctx.bind_to_thread()?;
        let stream = &self.gpu.stream;
        let query_ptr = upload_reused(&self.gpu, &mut self.query, &query.data)?.ptr;
        let train_ptr = upload_reused(&self.gpu, &mut self.train, &train.data)?.ptr;
        let forward = self
            .forward
            .at_least(n_query as usize * size_of::<Knn2>(), |bytes| {
                Staged::new(ctx, bytes, false)
            })?;
        let backward = self
            .backward
            .at_least(n_train.max(1) as usize * size_of::<Knn2>(), |bytes| {
                DeviceBuffer::new(ctx, bytes)
            })?;
        let forward_search = HammingKnn2Params {
            query: query_ptr,
            train: train_ptr,
            out: forward.ptr,
            n_query,
            n_train,
        };
        // SAFETY: the query and train buffers hold n_query / n_train descriptors, forward
        // one Knn2 per query and backward one per train descriptor, on this stream's
        // context until it is synchronised below.
        unsafe {
            launch_knn2(&self.knn2, stream, &forward_search)?;
            if mutual && n_train > 0 {
                let backward_search = HammingKnn2Params {
                    query: train_ptr,
                    train: query_ptr,
                    out: backward.ptr,
                    n_query: n_train,
                    n_train: n_query,
                };
                launch_knn2(&self.knn2, stream, &backward_search)?;
                let check = CrossCheckParams {
                    forward: forward.ptr,
                    backward: backward.ptr,
                    n_query,
                    padding: 0,
                };
                launch_cross_check(&self.cross_check, stream, &check)?;
            }
        }
        download_knn2(forward, n_query as usize, stream)
    }
}

/// A grid of `BLOCK`-thread blocks with a thread for each of `n` items (one block at least).
fn one_thread_each(n: i32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((n.max(1) as u32).div_ceil(BLOCK), 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Queues `match_hamming_knn2` (kernels/match/hamming.cu): for each of `p.n_query`
/// query descriptors, its two nearest among `p.n_train` train descriptors, into `p.out`.
///
/// # Safety
/// `p.query` and `p.train` hold their counts of 32-byte descriptors and `p.out` one
/// [`Knn2`] per query, on `stream`'s context, until the stream has run the kernel.
unsafe fn launch_knn2(kernel: &Kernel, stream: &CudaStream, p: &HammingKnn2Params) -> Result<()> {
    // SAFETY: `p` is the kernel's parameter struct; it reads the two sets and writes
    // n_query records, the sizes the caller vouches for.
    unsafe { kernel.launch(stream, knn2_launch(p.n_query.max(1) as u32), p) }
}

/// Queues `match_cross_check` (kernels/match/hamming.cu): a query's best match is kept
/// only if that train descriptor's best is the query back.
///
/// # Safety
/// `p.forward` holds one [`Knn2`] per query and `p.backward` one per train descriptor
/// its best indices name, on `stream`'s context, until the stream has run the kernel.
unsafe fn launch_cross_check(
    kernel: &Kernel,
    stream: &CudaStream,
    p: &CrossCheckParams,
) -> Result<()> {
    // SAFETY: `p` is the kernel's parameter struct; it reads and rewrites the n_query
    // forward records and reads the backward records they name, as the caller vouches.
    unsafe { kernel.launch(stream, one_thread_each(p.n_query), p) }
}

impl NearestTwo for CudaHammingMatcher {
    const KIND: DescriptorKind = DescriptorKind::Orb256;

    fn open(sm_limit: Option<u32>) -> Result<Self> {
        Self::new(sm_limit)
    }

    fn knn2(
        &mut self,
        query: &Descriptors,
        train: &Descriptors,
        mutual: bool,
    ) -> Result<Vec<Knn2>> {
        CudaHammingMatcher::knn2(self, query, train, mutual)
    }

    fn report(raw: i32) -> f32 {
        raw as f32
    }
}

/// The [`Matcher`] of the CUDA backend for the descriptors `S` searches: k = 2 and the
/// cross-check on the GPU, then the ratio test and `max_distance` exactly as the CPU
/// matcher.
pub struct CudaMatcher<S> {
    search: S,
    config: MatchConfig,
}

impl<S: NearestTwo> CudaMatcher<S> {
    pub fn new(config: MatchConfig, sm_limit: Option<u32>) -> Result<Self> {
        Ok(Self {
            search: S::open(sm_limit)?,
            config,
        })
    }

    /// The search, e.g. to time it.
    pub fn search(&mut self) -> &mut S {
        &mut self.search
    }
}

impl<S: NearestTwo> Matcher for CudaMatcher<S> {
    fn match_features(&mut self, query: &Features, train: &Features) -> Result<Vec<Match>> {
        let (q, t) = (&query.descriptors, &train.descriptors);
        check_same_kind(q.kind, t.kind)?;
        let nearest = self.search.knn2(q, t, self.config.cross_check)?;
        Ok(accept_all(&self.config, &nearest, t.len() > 1, S::report))
    }
}

/// The matches of `nearest` (one record per query) that pass the ratio test and
/// `max_distance`. A kernel's second best means "none" under two train descriptors.
pub(crate) fn accept_all(
    config: &MatchConfig,
    nearest: &[Knn2],
    has_second: bool,
    report: impl Fn(i32) -> f32,
) -> Vec<Match> {
    // Sized for every record up front: collected from a filter, the vector would grow
    // a dozen times for a frame's 2,000.
    let mut accepted = Vec::with_capacity(nearest.len());
    accepted.extend(nearest.iter().enumerate().filter_map(|(i, n)| {
        let train = u32::try_from(n.best_index).ok()?;
        let second = has_second.then(|| report(n.second));
        accept_match(config, i as u32, train, report(n.best), second)
    }));
    accepted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knn2_records_decode_from_little_endian_int3() {
        let words: [i32; 6] = [7, 3, 9, -1, i32::MAX, i32::MAX];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(
            decode_knn2(&bytes),
            vec![
                Knn2 {
                    best_index: 7,
                    best: 3,
                    second: 9
                },
                Knn2 {
                    best_index: -1,
                    best: i32::MAX,
                    second: i32::MAX
                }
            ]
        );
    }

    #[test]
    fn accepted_matches_skip_failed_cross_checks_and_use_the_reported_distance() {
        let config = MatchConfig {
            ratio: 0.8,
            max_distance: 0.0,
            ..MatchConfig::default()
        };
        let record = |best_index, best, second| Knn2 {
            best_index,
            best,
            second,
        };
        // Squared distances reported as their roots: 9 -> 3 against 25 -> 5 passes
        // (3 < 4), 16 -> 4 against 25 -> 5 does not (4 < 4 is false).
        let nearest = [record(2, 9, 25), record(-1, 1, 100), record(5, 16, 25)];
        let root = |raw: i32| (raw as f32).sqrt();
        let kept = accept_all(&config, &nearest, true, root);
        assert_eq!(
            kept,
            vec![Match {
                query: 0,
                train: 2,
                distance: 3.0
            }]
        );
        // With one train descriptor the second best is meaningless: all pass.
        assert_eq!(accept_all(&config, &nearest, false, root).len(), 2);
    }
}
