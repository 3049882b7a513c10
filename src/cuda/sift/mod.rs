//! SIFT on the GPU: the launch sequence of `kernels/sift/*.cu` for one image size,
//! reproducing the CPU reference (docs/sift-reference.md) within float tolerance.
//!
//! Per frame: the upload of the frame as it arrived, one CUDA graph (the frame
//! converted to grey, scale space, extrema, refinement, orientation, order and budget,
//! description), and the downloads. Keypoint order
//! and the `max_features` budget are decided on the GPU; the host only learns how
//! many keypoints came out. In unified memory (Jetson) that is one synchronisation;
//! with device memory a second one follows the downloads sized by that count.
//!
//! `plan.rs` holds the scale-space geometry, blur schedule and buffers of one image
//! size, `shapes.rs` the kernels and their launch shapes, `launch.rs` one typed launch
//! per kernel and the frame's launch sequence, `collect.rs` the downloads and the
//! features read from them, and `resident.rs` the matching of each frame with an
//! earlier frame's descriptors kept on the GPU.

mod collect;
mod launch;
mod plan;
mod resident;
mod shapes;
mod steps;

pub use plan::{DeviceLimits, PlanBytes};

use std::sync::Arc;

use crate::config::{MatchConfig, MemoryMode, SiftConfig};
use crate::cuda::abi::SUMMARY_WORDS;
use crate::cuda::gpu::Gpu;
use crate::cuda::graph::FrameGraph;
use crate::cuda::gray::FrameLayout;
use crate::cuda::timing::{FrameClock, FrameTiming};
use crate::cuda::upload::FrameUpload;
use crate::error::{CudaError, Error, Result};
use crate::extractor::{Extractor, Residency};
use crate::frame_memory::PageLockedPool;
use crate::image::{GrayImage, RawFrame};
use crate::types::{Features, Match};

use launch::SideBranches;
use plan::{Plan, Taps};
use resident::ResidentSets;
use shapes::Kernels;

/// SIFT on one GPU (docs/sift-reference.md; parity with the CPU reference within
/// the tolerances of tests/cuda_sift.rs).
pub struct CudaSiftExtractor {
    config: SiftConfig,
    gpu: Gpu,
    unified: bool,
    use_graph: bool,
    kernels: Kernels,
    taps: Taps,
    plan: Option<Plan>,
    graph: Option<FrameGraph>,
    clock: FrameClock,
    /// Where the big octaves' levels above n and the small octaves' block run, beside
    /// the octave chain.
    branches: SideBranches,
    /// Matching each frame with resident descriptors on the GPU, when asked.
    resident: Option<ResidentSets>,
    /// How the frames from now on are matched and kept.
    residency: Residency,
    /// The last frame's accepted matches with its slot.
    resident_matches: Option<Vec<Match>>,
}

impl CudaSiftExtractor {
    /// Opens GPU 0. `sm_limit` runs it on that many SMs (Jetson-class runs; see `Gpu::open`).
    pub fn new(config: SiftConfig, memory: MemoryMode, sm_limit: Option<u32>) -> Result<Self> {
        config.validate()?;
        if config.upscale && config.precise_upscale {
            return Err(Error::Cuda(CudaError::Unsupported {
                parameter: "sift.precise_upscale",
                hint: "the CUDA SIFT upscales as OpenCV does by default: set \
                       sift.precise_upscale=false or use the CPU backend",
            }));
        }
        let taps = Taps::new(&config)?;
        let gpu = Gpu::open(0, sm_limit)?;
        let unified = gpu.uses_unified(memory);
        let kernels = Kernels::load(&gpu, taps.blur_shared_bytes(), taps.step_shared_bytes())?;
        gpu.log_pipeline("CUDA SIFT", unified);
        let clock = FrameClock::new(&gpu)?;
        let branches = SideBranches::new(&gpu)?;
        Ok(Self {
            clock,
            branches,
            config,
            gpu,
            unified,
            use_graph: true,
            kernels,
            taps,
            plan: None,
            graph: None,
            resident: None,
            residency: Residency::PREVIOUS,
            resident_matches: None,
        })
    }

    pub fn is_unified(&self) -> bool {
        self.unified
    }

    /// As [`CudaOrbExtractor::set_graph`](crate::cuda::CudaOrbExtractor::set_graph).
    pub fn set_graph(&mut self, enabled: bool) {
        self.graph = None;
        self.use_graph = enabled;
    }

    pub fn last_timing(&self) -> FrameTiming {
        self.clock.last()
    }

    /// The plan of frames of `layout`: made once per size, its upload buffer made again
    /// when the frames' encoding or step changes (and the graph that reads it).
    fn prepare(&mut self, layout: FrameLayout) -> Result<()> {
        if let Some(plan) = self
            .plan
            .as_mut()
            .filter(|p| p.width == layout.width && p.height == layout.height)
        {
            if *plan.input.layout() != layout {
                self.graph = None;
                plan.input = FrameUpload::new(&self.gpu.ctx, layout, self.unified)?;
            }
            return Ok(());
        }
        self.graph = None;
        self.plan = None; // frees the old buffers first
        let plan = Plan::new(
            &self.gpu.ctx,
            &self.config,
            &self.taps,
            layout,
            self.unified,
            self.kernels.limits,
        )?;
        self.plan = Some(plan);
        Ok(())
    }

    fn enqueue(&self, plan: &Plan) -> Result<()> {
        launch::enqueue(
            &self.gpu.stream,
            &self.branches,
            &self.kernels,
            &self.config,
            plan,
            &self.taps,
        )
    }

    /// Captures the per-frame kernels into a graph once per size; falls back to
    /// plain launches (one log line) where capture is refused.
    fn run_frame_kernels(&mut self) -> Result<()> {
        let Some(plan) = self.plan.as_ref() else {
            return Ok(());
        };
        if self.use_graph && self.graph.is_none() {
            self.graph = FrameGraph::capture(&self.gpu.stream, || self.enqueue(plan))?;
            self.use_graph = self.graph.is_some();
        }
        match (&self.graph, self.plan.as_ref()) {
            (Some(graph), _) => graph.launch(),
            (None, Some(plan)) => self.enqueue(plan),
            (None, None) => Ok(()),
        }
    }

    /// Uploads the frame as it arrived, runs and downloads; returns the summary words
    /// (kept keypoints, then the raw candidate, extremum, keypoint and duplicate counts).
    fn run(&mut self, frame: &RawFrame<'_>, layout: FrameLayout) -> Result<[u32; SUMMARY_WORDS]> {
        self.gpu.ctx.bind_to_thread()?;
        self.prepare(layout)?;
        let stream = self.gpu.stream.clone();
        {
            let Some(plan) = self.plan.as_mut() else {
                return Ok([0; SUMMARY_WORDS]);
            };
            plan.input.take(frame)?;
            self.clock.upload_starts(&stream)?;
            plan.input.upload_async(&stream)?;
            self.clock.kernels_start(&stream)?;
        }
        self.run_frame_kernels()?;
        self.clock.kernels_end(&stream)?;
        let Some(plan) = self.plan.as_mut() else {
            return Ok([0; SUMMARY_WORDS]);
        };
        let summary = plan.download_summary(&stream)?;
        let kept = (summary[0] as usize).min(plan.output_capacity);
        if !self.unified && kept > 0 {
            plan.download_outputs(kept, &stream)?;
        }
        self.clock.measure()?;
        let cut = [
            ("candidates", summary[1] as usize, plan.candidate_capacity),
            ("extrema", summary[2] as usize, plan.keypoint_capacity),
            ("keypoints", summary[3] as usize, plan.keypoint_capacity),
        ];
        for (what, count, capacity) in cut {
            if count > capacity {
                log::warn!(
                    "CUDA SIFT: {count} {what} in a {}x{} frame, more than the {capacity} kept",
                    plan.width,
                    plan.height
                );
            }
        }
        Ok(summary)
    }
}

impl Extractor for CudaSiftExtractor {
    fn extract(&mut self, image: &GrayImage) -> Result<Features> {
        self.extract_frame(&image.as_raw())
    }

    fn receive_pool(&self) -> Option<Arc<PageLockedPool>> {
        (!self.unified).then(|| self.gpu.receive_pool())
    }

    /// Uploads the frame as it arrived and converts it to grey on the GPU, bit for bit
    /// as `GrayImage::from_raw` does on the CPU, into the image the scale space starts
    /// from.
    fn extract_frame(&mut self, frame: &RawFrame<'_>) -> Result<Features> {
        let layout = FrameLayout::of(frame)?;
        let summary = self.run(frame, layout)?;
        let features = self.collect(summary[0] as usize, layout.width, layout.height);
        if let (Some(resident), Some(plan)) = (self.resident.as_mut(), self.plan.as_ref()) {
            self.resident_matches =
                resident.next(plan.descriptors.ptr, features.len(), self.residency)?;
        }
        Ok(features)
    }

    fn match_resident(&mut self, config: Option<&MatchConfig>) -> Result<bool> {
        self.resident_matches = None;
        self.resident = config
            .map(|config| ResidentSets::new(self.gpu.device().clone(), config))
            .transpose()?;
        Ok(config.is_some())
    }

    fn set_residency(&mut self, residency: Residency) {
        self.residency = residency;
    }

    fn resident_matches(&mut self) -> Option<Vec<Match>> {
        self.resident_matches.take()
    }

    fn backend_name(&self) -> &'static str {
        "cuda"
    }

    fn device_name(&self) -> String {
        self.gpu.label()
    }
}
