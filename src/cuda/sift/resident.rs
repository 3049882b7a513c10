//! Resident matching for the CUDA SIFT: each frame's descriptors are matched, where
//! they were computed, with an earlier frame's kept on the GPU in one of two slots
//! (the previous frame, or the other camera's latest); the ratio test and distance
//! limit then run on the host as the CPU matcher applies them.

use std::sync::Arc;

use cudarc::driver::result;
use cudarc::driver::sys::CUdeviceptr;

use crate::config::MatchConfig;
use crate::cuda::gpu::GpuDevice;
use crate::cuda::l2_matcher::CudaL2Matcher;
use crate::cuda::matcher::{accept_all, NearestTwo};
use crate::cuda::memory::{DeviceBuffer, Reused};
use crate::error::{Error, ImageError, Result};
use crate::extractor::Residency;
use crate::types::Match;

use super::plan::DESCRIPTOR_BYTES;

pub struct ResidentSets {
    search: CudaL2Matcher,
    config: MatchConfig,
    /// Each slot's descriptors, and how many (`None` while it is empty).
    slots: [Reused<DeviceBuffer>; 2],
    lens: [Option<usize>; 2],
}

impl ResidentSets {
    pub fn new(device: Arc<GpuDevice>, config: &MatchConfig) -> Result<Self> {
        Ok(Self {
            search: CudaL2Matcher::on(device)?,
            config: config.clone(),
            slots: Default::default(),
            lens: [None; 2],
        })
    }

    /// Matches the `len` descriptors at `current` (a finished frame's output) with
    /// the slot `residency` names, then keeps them in the slot it keeps them in.
    /// `None` when the slot matched with is empty.
    pub fn next(
        &mut self,
        current: CUdeviceptr,
        len: usize,
        residency: Residency,
    ) -> Result<Option<Vec<Match>>> {
        let count = |n: usize| {
            i32::try_from(n).map_err(|_| {
                Error::Image(ImageError::Invalid(format!("{n} descriptors are too many")))
            })
        };
        let ctx = self.search.context().clone();
        let slot = residency.match_with.index();
        let matches = match self.lens[slot] {
            None => None,
            Some(kept) => {
                let kept_ptr = self.slots[slot]
                    .at_least(kept * DESCRIPTOR_BYTES, |size| {
                        DeviceBuffer::new(&ctx, size)
                    })?
                    .ptr;
                let (frame, kept) = ((current, count(len)?), (kept_ptr, count(kept)?));
                let (query, train) = if residency.frame_is_query {
                    (frame, kept)
                } else {
                    (kept, frame)
                };
                let nearest = self.search.knn2_at(query, train, self.config.cross_check)?;
                Some(accept_all(
                    &self.config,
                    &nearest,
                    train.1 > 1,
                    <CudaL2Matcher as NearestTwo>::report,
                ))
            }
        };
        let bytes = len * DESCRIPTOR_BYTES;
        let keep = residency.keep_as.index();
        let kept = self.slots[keep].at_least(bytes, |size| DeviceBuffer::new(&ctx, size))?;
        let stream = self.search.stream();
        // SAFETY: `kept` holds at least `bytes`; `current` holds `len` descriptors of a
        // frame whose kernels have finished; the stream is synchronised before either
        // buffer is written again.
        unsafe { result::memcpy_dtod_async(kept.ptr, current, bytes, stream.cu_stream()) }?;
        stream.synchronize()?;
        self.lens[keep] = Some(len);
        Ok(matches)
    }
}
