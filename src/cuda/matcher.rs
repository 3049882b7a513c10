//! Standalone brute-force Hamming matching on the GPU (kernels/match/hamming.cu):
//! k = 2 nearest train descriptors per query, optionally mutual (cross-checked).

use std::mem::size_of;

use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};

use crate::config::MatchConfig;
use crate::cpu::matcher::accept_match;
use crate::cuda::gpu::Gpu;
use crate::cuda::memory::{DeviceBuffer, Staged};
use crate::cuda::orb::Knn2;
use crate::error::{Error, Result};
use crate::extractor::Matcher;
use crate::types::{DescriptorKind, Descriptors, Features, Match};

const BLOCK: u32 = 128;

pub struct CudaHammingMatcher {
    gpu: Gpu,
    knn2: CudaFunction,
    cross_check: CudaFunction,
}

fn checked(set: &Descriptors, role: &str) -> Result<i32> {
    if set.kind != DescriptorKind::Orb256 {
        return Err(Error::DescriptorMismatch {
            query: DescriptorKind::Orb256.name().into(),
            train: format!("{} ({role})", set.kind.name()),
        });
    }
    i32::try_from(set.len()).map_err(|_| Error::InvalidParameter {
        name: role.into(),
        reason: format!("{} descriptors are too many", set.len()),
    })
}

impl CudaHammingMatcher {
    pub fn new() -> Result<Self> {
        let gpu = Gpu::open(0)?;
        Ok(Self {
            knn2: gpu.function("match_hamming", "match_hamming_knn2")?,
            cross_check: gpu.function("match_hamming", "match_cross_check")?,
            gpu,
        })
    }

    /// For each query, its best and second-best train descriptor (ties: lower train
    /// index). With `mutual`, a best match whose train descriptor's own best is another
    /// query gets `best_index = -1`.
    pub fn knn2(
        &mut self,
        query: &Descriptors,
        train: &Descriptors,
        mutual: bool,
    ) -> Result<Vec<Knn2>> {
        let (n_query, n_train) = (checked(query, "query")?, checked(train, "train")?);
        if n_query == 0 {
            return Ok(Vec::new());
        }
        let ctx = &self.gpu.ctx;
        ctx.bind_to_thread()?;
        let stream = &self.gpu.stream;
        let query_buffer = DeviceBuffer::from_slice(ctx, &query.data)?;
        let train_buffer = DeviceBuffer::from_slice(ctx, &train.data)?;
        let mut forward = Staged::new(ctx, n_query as usize * size_of::<Knn2>(), false)?;
        let backward = DeviceBuffer::new(ctx, n_train.max(1) as usize * size_of::<Knn2>())?;
        let cfg = |n: i32| LaunchConfig {
            grid_dim: ((n.max(1) as u32).div_ceil(BLOCK), 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: arguments match kernels/match/hamming.cu in order and type; the
        // buffers hold n_query / n_train descriptors of 32 bytes and one Knn2 per query
        // (forward) or train descriptor (backward).
        unsafe {
            stream
                .launch_builder(&self.knn2)
                .arg(&query_buffer.ptr)
                .arg(&n_query)
                .arg(&train_buffer.ptr)
                .arg(&n_train)
                .arg(&forward.ptr)
                .launch(cfg(n_query))?;
            if mutual && n_train > 0 {
                stream
                    .launch_builder(&self.knn2)
                    .arg(&train_buffer.ptr)
                    .arg(&n_train)
                    .arg(&query_buffer.ptr)
                    .arg(&n_query)
                    .arg(&backward.ptr)
                    .launch(cfg(n_train))?;
                stream
                    .launch_builder(&self.cross_check)
                    .arg(&forward.ptr)
                    .arg(&n_query)
                    .arg(&backward.ptr)
                    .launch(cfg(n_query))?;
            }
        }
        forward.download_async(forward.host.bytes, stream)?;
        stream.synchronize()?;
        Ok(forward
            .host
            .as_slice()
            .chunks_exact(size_of::<Knn2>())
            .map(|b| {
                let word = |k: usize| {
                    i32::from_le_bytes([b[4 * k], b[4 * k + 1], b[4 * k + 2], b[4 * k + 3]])
                };
                Knn2 {
                    best_index: word(0),
                    best: word(1),
                    second: word(2),
                }
            })
            .collect())
    }
}

/// The [`Matcher`] of the CUDA backend for ORB descriptors: k = 2 and the cross-check
/// on the GPU, then the ratio test and `max_distance` exactly as the CPU matcher.
pub struct CudaMatcher {
    knn: CudaHammingMatcher,
    config: MatchConfig,
}

impl CudaMatcher {
    pub fn new(config: MatchConfig) -> Result<Self> {
        Ok(Self {
            knn: CudaHammingMatcher::new()?,
            config,
        })
    }
}

impl Matcher for CudaMatcher {
    fn match_features(&mut self, query: &Features, train: &Features) -> Result<Vec<Match>> {
        let (q, t) = (&query.descriptors, &train.descriptors);
        if q.kind != t.kind {
            return Err(Error::DescriptorMismatch {
                query: q.kind.name().into(),
                train: t.kind.name().into(),
            });
        }
        let nearest = self.knn.knn2(q, t, self.config.cross_check)?;
        // The kernel's second best is "none" (i32::MAX) under two train descriptors.
        let has_second = t.len() > 1;
        Ok(nearest
            .iter()
            .enumerate()
            .filter_map(|(i, n)| {
                let train = u32::try_from(n.best_index).ok()?;
                let second = has_second.then_some(n.second as f32);
                accept_match(&self.config, i as u32, train, n.best as f32, second)
            })
            .collect())
    }
}
