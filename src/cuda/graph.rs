//! A frame's kernels captured into a CUDA graph once and replayed after that, with the
//! fallback to plain launches where the driver refuses capture.

use std::sync::Arc;

use cudarc::driver::{result, sys, CudaEvent, CudaGraph, CudaStream};

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

/// Makes the work queued on `stream` from now on wait for `event`, which is recorded
/// outside any capture (on the copy stream, for each frame's upload). Captured, this
/// is an event wait node: each run of the graph waits for the event's record made
/// before it was launched.
pub fn wait_for_outside(stream: &CudaStream, event: &CudaEvent) -> Result<()> {
    let capturing =
        stream.capture_status()? == sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE;
    // The external flag is what capture needs, and invalid outside of it.
    let flags = if capturing {
        sys::CUevent_wait_flags::CU_EVENT_WAIT_EXTERNAL
    } else {
        sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT
    };
    // SAFETY: both handles are live objects of this stream's context.
    unsafe { result::stream::wait_event(stream.cu_stream(), event.cu_event(), flags) }?;
    Ok(())
}
