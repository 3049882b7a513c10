//! What a frame measured on the GPU: events recorded around its upload and its kernels.

use cudarc::driver::{CudaEvent, CudaStream};

use crate::cuda::gpu::GpuDevice;
use crate::error::Result;

/// What a frame measured: upload and extraction on the GPU, from events.
#[derive(Clone, Copy, Debug, Default)]
pub struct FrameTiming {
    pub upload_ms: f32,
    pub extract_ms: f32,
}

/// The events an extractor records on its stream each frame (before the upload, after
/// it = before the kernels, after the kernels) and what the last frame measured.
pub(crate) struct FrameClock {
    events: [CudaEvent; 3],
    last: FrameTiming,
}

impl FrameClock {
    pub fn new(gpu: &GpuDevice) -> Result<Self> {
        Ok(Self {
            events: [
                gpu.timing_event()?,
                gpu.timing_event()?,
                gpu.timing_event()?,
            ],
            last: FrameTiming::default(),
        })
    }

    pub fn upload_starts(&self, stream: &CudaStream) -> Result<()> {
        Ok(self.events[0].record(stream)?)
    }

    pub fn kernels_start(&self, stream: &CudaStream) -> Result<()> {
        Ok(self.events[1].record(stream)?)
    }

    pub fn kernels_end(&self, stream: &CudaStream) -> Result<()> {
        Ok(self.events[2].record(stream)?)
    }

    /// Reads the frame's times, once the stream has passed `kernels_end`.
    pub fn measure(&mut self) -> Result<()> {
        let events = &self.events;
        self.last = FrameTiming {
            upload_ms: events[0].elapsed_ms(&events[1])?,
            extract_ms: events[1].elapsed_ms(&events[2])?,
        };
        Ok(())
    }

    /// What the last measured frame took.
    pub fn last(&self) -> FrameTiming {
        self.last
    }
}
