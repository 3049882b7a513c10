//! A fork of a pipeline's stream: work queued on the side stream between `fork` and
//! `close` runs beside what the main stream queues meanwhile, until the main stream
//! `join`s it. Captured into a CUDA graph, it is a branch of the graph.

use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaStream};

use crate::cuda::gpu::Gpu;
use crate::error::Result;

pub struct Branch {
    stream: Arc<CudaStream>,
    forked: CudaEvent,
    done: CudaEvent,
}

impl Branch {
    /// A side stream of `gpu`'s context (bound to its green context, where there is one).
    pub fn new(gpu: &Gpu) -> Result<Self> {
        Ok(Self {
            stream: gpu.side_stream()?,
            forked: gpu.ordering_event()?,
            done: gpu.ordering_event()?,
        })
    }

    /// The side stream, once it waits for everything queued on `main` so far.
    pub fn fork(&self, main: &CudaStream) -> Result<&CudaStream> {
        self.forked.record(main)?;
        self.stream.wait(&self.forked)?;
        Ok(&self.stream)
    }

    /// Marks the end of the work queued on the side stream since `fork`.
    pub fn close(&self) -> Result<()> {
        Ok(self.done.record(&self.stream)?)
    }

    /// Makes `main` wait for the branch's work, up to `close`.
    pub fn join(&self, main: &CudaStream) -> Result<()> {
        Ok(main.wait(&self.done)?)
    }
}
