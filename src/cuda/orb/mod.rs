//! ORB on the GPU: the launch sequence of `kernels/orb/*.cu` for one image size,
//! reproducing the CPU reference (docs/orb-reference.md) bit for bit.
//!
//! Per frame: the upload of the frame as it arrived, one CUDA graph (the frame
//! converted to grey into pyramid level 0, pyramid, oFAST, per-cell thresholds and
//! candidates, selection, orientation + rBRIEF, optionally fused matching), the
//! downloads, and one stream synchronisation. The host-side tables (resize taps,
//! arc table, Gaussian taps, umax, pattern, quotas) come from [`crate::spec`], the
//! builders the CPU reference uses too, uploaded as they are.
//!
//! `plan.rs` holds the tables and buffers of one image size, `shapes.rs` the kernels
//! and their launch shapes, `launch.rs` one typed launch per kernel and the frame's
//! launch sequence, `collect.rs` the features read from the downloaded outputs, and
//! `pipeline.rs` the overlap of frame N+1's upload with frame N.

use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;

use crate::config::{Distribution, MatchConfig, MemoryMode, OrbConfig, ORB_MAX_FEATURES};
use crate::cuda::branch::Branch;
use crate::cuda::gpu::Gpu;
use crate::cuda::graph::FrameGraph;
use crate::cuda::gray::FrameLayout;
use crate::cuda::memory::DeviceBuffer;
use crate::cuda::timing::{FrameClock, FrameTiming};
use crate::error::{ConfigError, CudaError, Error, ImageError, Result};
use crate::extractor::{check_same_kind, Extractor, Residency};
use crate::frame_memory::PageLockedPool;
use crate::image::{GrayImage, RawFrame};
use crate::spec::brief_pattern::PATTERN;
use crate::spec::fast_arc::arc_table;
use crate::spec::orientation::umax;
use crate::types::{DescriptorKind, Descriptors, Features, Match};

mod bands;
mod collect;
mod launch;
mod pipeline;
mod plan;
mod shapes;

pub use crate::cuda::abi::Knn2;
use pipeline::Overlap;
pub use plan::OrbPlanBytes;
use plan::{Plan, DESCRIPTOR_BYTES};
use shapes::Kernels;

/// Tables that do not depend on the image size.
struct Constants {
    arc: DeviceBuffer,
    umax: DeviceBuffer,
    pattern: DeviceBuffer,
}

/// A train descriptor set resident on the GPU, matched while describing.
struct Train {
    buffer: DeviceBuffer,
    /// How many descriptors `buffer` holds, as the kernels read it (one u32).
    count: DeviceBuffer,
}

/// Frames' descriptors kept on the GPU for the frames after them
/// (`match_resident_sets`): each frame is matched with one slot, then its descriptors
/// and count are copied into one.
struct ResidentSets {
    slots: [Train; 2],
    /// Keypoints kept in each slot; `None` while it is empty.
    lens: [Option<usize>; 2],
    config: MatchConfig,
}

/// What each frame is matched against while it is described.
enum Fused {
    None,
    /// A set given once (`set_train`).
    Fixed(Train),
    /// Earlier frames' descriptors, in the slots a frame's [`Residency`] names.
    Resident(ResidentSets),
}

impl Fused {
    /// The set a frame of `residency` is matched against while it is described (its
    /// forward search; a frame that is the train set needs it only for the
    /// cross-check).
    fn train(&self, residency: Residency) -> Option<&Train> {
        match self {
            Fused::None => None,
            Fused::Fixed(train) => Some(train),
            Fused::Resident(sets) => (residency.frame_is_query || sets.config.cross_check)
                .then(|| &sets.slots[residency.match_with.index()]),
        }
    }

    /// Whether a frame of `residency` gets the cross-check's backward search (each
    /// train descriptor's nearest keypoint) from its own forward search in
    /// `orb_describe`: a resident query frame with the cross-check. A frame that is the
    /// train set gets the slot's whole search after describing instead.
    fn fuses_backward(&self, residency: Residency) -> bool {
        matches!(self, Fused::Resident(sets) if sets.config.cross_check && residency.frame_is_query)
    }
}

/// One pyramid level's intermediate images on the GPU, as the CPU reference's
/// `LevelView` names them.
pub struct LevelStages {
    pub image: Vec<u8>,
    /// FAST scores at `min_fast_threshold`.
    pub scores: Vec<u8>,
    pub smoothed: Vec<u8>,
}

/// ORB on one GPU, exactly as docs/orb-reference.md specifies (grid distribution).
pub struct CudaOrbExtractor {
    config: OrbConfig,
    gpu: Gpu,
    unified: bool,
    use_graph: bool,
    kernels: Kernels,
    constants: Constants,
    fused: Fused,
    plan: Option<Plan>,
    last_matches: Vec<Knn2>,
    /// How the frames submitted from now on are matched and kept (resident sets).
    residency: Residency,
    /// The last frame's accepted matches with its slot (resident sets).
    resident_matches: Option<Vec<Match>>,
    clock: FrameClock,
    /// Runs level 0's FAST beside the pyramid, and the cell search beside the next
    /// band's pyramid (`enqueue`).
    side: Branch,
    /// Frames submitted with `submit_frame`: the copy stream and the frame in flight.
    overlap: Option<Overlap>,
}

impl CudaOrbExtractor {
    /// Opens GPU 0. `sm_limit` runs it on that many SMs (Jetson-class runs; see `Gpu::open`).
    pub fn new(config: OrbConfig, memory: MemoryMode, sm_limit: Option<u32>) -> Result<Self> {
        config.validate()?;
        if config.distribution != Distribution::Grid {
            return Err(Error::Cuda(CudaError::Unsupported {
                parameter: "orb.distribution",
                hint: "the CUDA ORB implements `grid` only; top_response runs on the CPU backend",
            }));
        }
        let gpu = Gpu::open(0, sm_limit)?;
        let unified = gpu.uses_unified(memory);
        let kernels = Kernels::load(&gpu)?;
        let ctx = &gpu.ctx;
        let arc: Vec<u64> = arc_table().to_vec();
        let umax: Vec<i32> = umax().iter().map(|&u| u as i32).collect();
        let pattern: Vec<i8> = PATTERN.iter().flatten().copied().collect();
        let constants = Constants {
            arc: DeviceBuffer::from_slice(ctx, &arc)?,
            umax: DeviceBuffer::from_slice(ctx, &umax)?,
            pattern: DeviceBuffer::from_slice(ctx, &pattern)?,
        };
        gpu.log_pipeline("CUDA ORB", unified);
        let clock = FrameClock::new(&gpu)?;
        let side = Branch::new(&gpu)?;
        Ok(Self {
            clock,
            side,
            config,
            gpu,
            unified,
            use_graph: true,
            kernels,
            constants,
            fused: Fused::None,
            plan: None,
            last_matches: Vec::new(),
            residency: Residency::PREVIOUS,
            resident_matches: None,
            overlap: None,
        })
    }

    pub fn is_unified(&self) -> bool {
        self.unified
    }

    /// `false` launches each frame's kernels one by one instead of replaying the
    /// frame's captured CUDA graph (on by default): to profile plain launches or to
    /// measure what the graph saves.
    pub fn set_graph(&mut self, enabled: bool) {
        self.plan_graph_reset();
        self.use_graph = enabled;
    }

    /// Keeps `train` on the GPU: later frames match against it while describing.
    /// `None` stops fused matching.
    pub fn set_train(&mut self, train: Option<&Descriptors>) -> Result<()> {
        let fused = match train {
            None => Fused::None,
            Some(d) => {
                check_same_kind(DescriptorKind::Orb256, d.kind)?;
                // The kernels key a train descriptor by its index in BACKWARD_QUERY_BITS
                // bits, as they do a query.
                let len = u32::try_from(d.len())
                    .ok()
                    .filter(|&n| i64::from(n) <= ORB_MAX_FEATURES)
                    .ok_or_else(|| {
                        Error::Config(ConfigError::Invalid {
                            name: "train set".into(),
                            reason: format!(
                                "{} descriptors, more than the {ORB_MAX_FEATURES} a frame can have",
                                d.len()
                            ),
                        })
                    })?;
                Fused::Fixed(Train {
                    buffer: DeviceBuffer::from_slice(&self.gpu.ctx, &d.data)?,
                    count: DeviceBuffer::from_slice(&self.gpu.ctx, &[len])?,
                })
            }
        };
        self.set_fused(fused)
    }

    /// Matches each frame, on the GPU, with descriptors of earlier frames kept there
    /// in two slots, as [`Extractor::set_residency`] says: the frame's forward search
    /// runs while describing (where the frame is the query, with the cross-check's
    /// backward search in the same sweep), the slot's search (where the frame is the
    /// train set) and the cross-check (if `config` asks) right after, and the ratio
    /// test and distance limit on the host, as the CPU matcher applies them. `None`
    /// stops it.
    pub fn match_resident_sets(&mut self, config: Option<&MatchConfig>) -> Result<()> {
        let fused = match config {
            None => Fused::None,
            Some(config) => {
                let capacity = self.config.n_features as usize;
                let slot = || -> Result<Train> {
                    Ok(Train {
                        buffer: DeviceBuffer::new(&self.gpu.ctx, capacity * DESCRIPTOR_BYTES)?,
                        count: DeviceBuffer::from_slice(&self.gpu.ctx, &[0u32])?,
                    })
                };
                Fused::Resident(ResidentSets {
                    slots: [slot()?, slot()?],
                    lens: [None; 2],
                    config: config.clone(),
                })
            }
        };
        self.set_fused(fused)
    }

    /// What later frames match against while they are described: the captured graphs
    /// read the old train set, and the last resident matches belong to the old mode.
    fn set_fused(&mut self, fused: Fused) -> Result<()> {
        // A frame in flight may still read the set being replaced.
        self.gpu.stream.synchronize()?;
        self.plan_graph_reset();
        self.resident_matches = None;
        self.fused = fused;
        Ok(())
    }

    /// The intermediate images per level of the last frame extracted (input slot 0),
    /// downloaded (synchronously) for stage-by-stage comparison with the CPU reference.
    pub fn stage_images(&self) -> Result<Vec<LevelStages>> {
        let Some((plan, input)) = self
            .plan
            .as_ref()
            .and_then(|plan| Some((plan, plan.inputs.first()?)))
        else {
            return Ok(Vec::new());
        };
        self.gpu.ctx.bind_to_thread()?;
        let download = |ptr: CUdeviceptr, bytes: usize| -> Result<Vec<u8>> {
            let mut host = vec![0u8; bytes];
            // SAFETY: the buffer at `ptr` holds at least `bytes` (the pyramids' pixels);
            // `host` has exactly `bytes`; the copy is synchronous.
            unsafe { cudarc::driver::result::memcpy_dtoh_sync(&mut host, ptr) }?;
            Ok(host)
        };
        let pixels = plan.scores.bytes;
        let (pyramid, scores, smoothed) = (
            download(input.pyramid(), pixels)?,
            download(plan.scores.ptr, pixels)?,
            download(plan.smoothed.ptr, pixels)?,
        );
        let mut offset = 0;
        Ok(plan
            .geometry
            .iter()
            .map(|g| {
                let range = offset..offset + g.width * g.height;
                offset = range.end;
                LevelStages {
                    image: pyramid[range.clone()].to_vec(),
                    scores: scores[range.clone()].to_vec(),
                    smoothed: smoothed[range].to_vec(),
                }
            })
            .collect())
    }

    /// Best and second-best train match of each query of the last frame's matching:
    /// its keypoints, or with resident sets the slot's where the frame is the train set.
    pub fn last_matches(&self) -> &[Knn2] {
        &self.last_matches
    }

    pub fn last_timing(&self) -> FrameTiming {
        self.clock.last()
    }

    fn plan_graph_reset(&mut self) {
        if let Some(plan) = &mut self.plan {
            for input in &mut plan.inputs {
                input.graphs.clear();
            }
        }
    }

    /// The plan of frames of `layout`'s size, made once per size.
    fn prepare(&mut self, layout: FrameLayout) -> Result<()> {
        if self
            .plan
            .as_ref()
            .is_some_and(|p| p.width == layout.width && p.height == layout.height)
        {
            return Ok(());
        }
        self.plan = None; // frees the old buffers first
        self.plan = Some(Plan::new(&self.gpu, &self.kernels, &self.config, layout)?);
        Ok(())
    }

    /// Runs the per-frame kernels on the frame of input `slot`, matched and kept as
    /// `residency` says: captured into that slot's graph for that residency once per
    /// size and train set; plain launches (one log line) where capture is refused.
    fn run_frame_kernels(&mut self, slot: usize, residency: Residency) -> Result<()> {
        let Some(plan) = self.plan.as_ref() else {
            return Ok(());
        };
        let input = plan.inputs.get(slot).ok_or_else(|| {
            Error::Config(ConfigError::Invalid {
                name: "input slot".into(),
                reason: format!(
                    "the plan has {} input slots, not {}",
                    plan.inputs.len(),
                    slot + 1
                ),
            })
        })?;
        if self.use_graph && input.graph(residency).is_none() {
            let captured =
                FrameGraph::capture(&self.gpu.stream, || self.enqueue(plan, input, residency))?;
            self.use_graph = captured.is_some();
            if let (Some(input), Some(graph)) = (
                self.plan.as_mut().and_then(|p| p.inputs.get_mut(slot)),
                captured,
            ) {
                input.graphs.push((residency, graph));
            }
        }
        let Some(plan) = self.plan.as_ref() else {
            return Ok(());
        };
        let Some(input) = plan.inputs.get(slot) else {
            return Ok(());
        };
        match input.graph(residency) {
            Some(graph) => graph.launch(),
            None => self.enqueue(plan, input, residency),
        }
    }

    /// Queues the kernels on the frame of input `slot` (timed by the clock) and
    /// the downloads of the results into the slot's outputs; the caller synchronises
    /// the stream. Returns how the frame is matched and kept, for its collection.
    fn queue_frame(&mut self, slot: usize) -> Result<Residency> {
        let stream = self.gpu.stream.clone();
        let residency = self.residency;
        self.clock.kernels_start(&stream)?;
        self.run_frame_kernels(slot, residency)?;
        self.clock.kernels_end(&stream)?;
        let matched = !matches!(self.fused, Fused::None);
        if let Some(input) = self
            .plan
            .as_mut()
            .and_then(|plan| plan.inputs.get_mut(slot))
        {
            input.outputs.download_async(matched, &stream)?;
        }
        Ok(residency)
    }

    /// Uploads, runs, downloads and synchronises once; leaves results in input slot 0.
    fn run(&mut self, frame: &RawFrame<'_>, layout: FrameLayout) -> Result<Residency> {
        if self
            .overlap
            .as_ref()
            .is_some_and(Overlap::has_frame_in_flight)
        {
            // Its results would be overwritten by this frame's.
            return Err(Error::Image(ImageError::Invalid(
                "a submitted frame is still in flight: finish it before extracting another".into(),
            )));
        }
        self.gpu.ctx.bind_to_thread()?;
        self.prepare(layout)?;
        let stream = self.gpu.stream.clone();
        {
            let plan = self.plan.as_mut().ok_or_else(no_plan)?;
            plan.input(&self.gpu, 0, layout, self.unified, false)?
                .upload
                .take(frame)?;
            self.clock.upload_starts(&stream)?;
            plan.inputs[0].upload_bands(&stream)?;
        }
        let residency = self.queue_frame(0)?;
        stream.synchronize()?;
        self.clock.measure()?;
        Ok(residency)
    }
}

/// The error of a frame that finds no plan for its size (made before its upload).
fn no_plan() -> Error {
    Error::Image(ImageError::Invalid("no plan for the frame's size".into()))
}

impl Extractor for CudaOrbExtractor {
    fn extract(&mut self, image: &GrayImage) -> Result<Features> {
        self.extract_frame(&image.as_raw())
    }

    fn receive_pool(&self) -> Option<Arc<PageLockedPool>> {
        (!self.unified).then(|| self.gpu.receive_pool())
    }

    /// Uploads the frame as it arrived and converts it to grey on the GPU, bit for bit
    /// as `GrayImage::from_raw` does on the CPU.
    fn extract_frame(&mut self, frame: &RawFrame<'_>) -> Result<Features> {
        let layout = FrameLayout::of(frame)?;
        let residency = self.run(frame, layout)?;
        self.collect(0, residency, layout.width, layout.height)
    }

    /// Overlaps the frame's copy and upload with the kernels of the frame in flight.
    fn submit_frame(&mut self, frame: &RawFrame<'_>) -> Result<Option<Features>> {
        self.submit_overlapping(frame)
    }

    fn submit(&mut self, image: &GrayImage) -> Result<Option<Features>> {
        self.submit_overlapping(&image.as_raw())
    }

    fn finish_frame(&mut self) -> Result<Option<Features>> {
        self.finish_in_flight()
    }

    fn match_resident(&mut self, config: Option<&MatchConfig>) -> Result<bool> {
        self.match_resident_sets(config)?;
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

impl Drop for CudaOrbExtractor {
    /// The buffers are freed next: no copy or kernel of a frame in flight may still
    /// use them.
    fn drop(&mut self) {
        if let Some(overlap) = &self.overlap {
            if let Err(error) = overlap.synchronize() {
                log::warn!("synchronising ORB's copy stream before freeing failed: {error}");
            }
            if let Err(error) = self.gpu.stream.synchronize() {
                log::warn!("synchronising ORB's stream before freeing failed: {error}");
            }
        }
    }
}
