//! A frame's kernels captured into a CUDA graph once and replayed after that, with the
//! fallback to plain launches where the driver refuses capture.

use std::sync::Arc;

use cudarc::driver::{sys, CudaGraph, CudaStream};

use crate::error::Result;

/// The captured per-frame kernels of one plan (and input).
pub struct FrameGraph(CudaGraph);

// SAFETY: a graph is launched only through the pipeline that owns it (`&mut self`),
// after binding its context to the calling thread; CUDA graph execs are not tied to
// the thread that instantiated them.
unsafe impl Send for FrameGraph {}

impl FrameGraph {
    /// Captures what `enqueue` queues on `stream`. `None` (with one log line) when
    /// capture is refused: the caller then launches the kernels plainly, from now on.
    pub fn capture(
        stream: &Arc<CudaStream>,
        enqueue: impl FnOnce() -> Result<()>,
    ) -> Result<Option<Self>> {
        stream.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
        let queued = enqueue();
        let captured = stream.end_capture(sys::CUgraphInstantiate_flags(0));
        Ok(match (queued, captured) {
            (Ok(()), Ok(Some(graph))) => Some(Self(graph)),
            (queued, captured) => {
                log::info!(
                    "CUDA graph capture unavailable ({:?} / {:?}): launching kernels one by one",
                    queued.err(),
                    captured.err()
                );
                None
            }
        })
    }

    pub fn launch(&self) -> Result<()> {
        Ok(self.0.launch()?)
    }
}
