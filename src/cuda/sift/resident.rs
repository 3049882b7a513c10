//! Consecutive matching for the CUDA SIFT: each frame's descriptors are matched, where
//! they were computed, against the previous frame's, which stay on the GPU; the ratio
//! test and distance limit then run on the host as the CPU matcher applies them.

use std::sync::Arc;

use cudarc::driver::result;
use cudarc::driver::sys::CUdeviceptr;

use crate::config::MatchConfig;
use crate::cuda::gpu::GpuDevice;
use crate::cuda::l2_matcher::CudaL2Matcher;
use crate::cuda::matcher::{accept_all, NearestTwo};
use crate::cuda::memory::{DeviceBuffer, Reused};
use crate::error::{Error, ImageError, Result};
use crate::types::Match;

use super::plan::DESCRIPTOR_BYTES;

pub struct Consecutive {
    search: CudaL2Matcher,
    config: MatchConfig,
    /// The previous frame's descriptors, and how many (`None` before the first frame).
    previous: Reused<DeviceBuffer>,
    previous_len: Option<usize>,
}

impl Consecutive {
    pub fn new(device: Arc<GpuDevice>, config: &MatchConfig) -> Result<Self> {
        Ok(Self {
            search: CudaL2Matcher::on(device)?,
            config: config.clone(),
            previous: Reused::default(),
            previous_len: None,
        })
    }

    /// Matches the `len` descriptors at `current` (a finished frame's output) against
    /// the previous frame's, then keeps them as the previous frame's. `None` for the
    /// first frame.
    pub fn next(&mut self, current: CUdeviceptr, len: usize) -> Result<Option<Vec<Match>>> {
        let count = |n: usize| {
            i32::try_from(n).map_err(|_| {
                Error::Image(ImageError::Invalid(format!("{n} descriptors are too many")))
            })
        };
        let ctx = self.search.context().clone();
        let matches = match self.previous_len {
            None => None,
            Some(previous) => {
                let previous_ptr = self
                    .previous
                    .at_least(previous * DESCRIPTOR_BYTES, |size| {
                        DeviceBuffer::new(&ctx, size)
                    })?
                    .ptr;
                let nearest = self.search.knn2_at(
                    (current, count(len)?),
                    (previous_ptr, count(previous)?),
                    self.config.cross_check,
                )?;
                Some(accept_all(
                    &self.config,
                    &nearest,
                    previous > 1,
                    <CudaL2Matcher as NearestTwo>::report,
                ))
            }
        };
        let bytes = len * DESCRIPTOR_BYTES;
        let kept = self
            .previous
            .at_least(bytes, |size| DeviceBuffer::new(&ctx, size))?;
        let stream = self.search.stream();
        // SAFETY: `kept` holds at least `bytes`; `current` holds `len` descriptors of a
        // frame whose kernels have finished; the stream is synchronised before either
        // buffer is written again.
        unsafe { result::memcpy_dtod_async(kept.ptr, current, bytes, stream.cu_stream()) }?;
        stream.synchronize()?;
        self.previous_len = Some(len);
        Ok(matches)
    }
}
