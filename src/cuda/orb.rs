//! ORB on the GPU: the launch sequence of `kernels/orb/*.cu` for one image size,
//! reproducing the CPU reference (docs/orb-reference.md) bit for bit.
//!
//! Per frame: the upload of the frame as it arrived, one CUDA graph (the frame
//! converted to grey into pyramid level 0, pyramid, oFAST, per-cell thresholds and candidates, selection, orientation +
//! rBRIEF, optionally fused matching), the
//! downloads, and one stream synchronisation. The host-side tables (resize taps,
//! arc table, Gaussian taps, umax, pattern, quotas) come from [`crate::spec`], the
//! builders the CPU reference uses too, uploaded as they are.

use std::mem::{size_of, size_of_val};

use cudarc::driver::sys::{self, CUdeviceptr};
use cudarc::driver::{CudaEvent, CudaFunction, CudaStream, LaunchConfig, PushKernelArg};

use crate::config::{Distribution, MatchConfig, MemoryMode, OrbConfig, OrbScore};
use crate::cuda::branch::Branch;
use crate::cuda::gpu::Gpu;
use crate::cuda::graph::FrameGraph;
use crate::cuda::gray::{FrameLayout, GrayKernel};
use crate::cuda::matcher::accept_all;
use crate::cuda::memory::{DeviceBuffer, Staged};
use crate::error::{ConfigError, CudaError, Error, FeaturesError, ImageError, Result};
use crate::extractor::Extractor;
use crate::image::{GrayImage, RawFrame};
use crate::spec::brief_pattern::{PATTERN, PATTERN_REACH};
use crate::spec::fast_arc::arc_table;
use crate::spec::grid::{DetectionArea, Grid};
use crate::spec::harris::harris_response;
use crate::spec::orientation::{angle_degrees, umax};
use crate::spec::pyramid::{level_geometry, resize_taps, LevelGeometry};
use crate::spec::quotas::level_quotas;
use crate::spec::smoothing::GAUSSIAN_TAPS;
use crate::types::{DescriptorKind, Descriptors, Features, Keypoints, Match};

mod pipeline;
pub use pipeline::CudaOrbPipeline;

/// `PATCH_RADIUS` of kernels/orb/describe.cu: the private patch must hold every sample.
const DESCRIBE_PATCH_RADIUS: usize = 19;
const _: () = assert!(PATTERN_REACH <= DESCRIBE_PATCH_RADIUS);
const WARP: u32 = 32;
/// `DESCRIBE_WARPS * 32` of kernels/orb/describe.cu: one block describes up to 32 keypoints.
const DESCRIBE_THREADS: u32 = 16 * WARP;
/// The private patches of kernels/orb/describe.cu: `PATCH_WORDS * WARP` words
/// (39 rows of 10 words per keypoint, 32 keypoints), dynamic shared memory.
const DESCRIBE_SHARED_BYTES: u32 = 39 * 10 * WARP * 4;
/// `SELECT_THREADS` of kernels/orb/select.cu: one block per level.
const SELECT_THREADS: u32 = 1024;
/// `RANK_WARPS * 32` of kernels/orb/select.cu: the warps of an `orb_record_ranks` /
/// `orb_record_place` block split a level's records, 32 records per block.
const RANK_THREADS: u32 = 16 * WARP;
const BLOCK: u32 = 256;
/// Threads of a `match_hamming_knn2_counted` / `match_cross_check_counted` block: one
/// query each; small blocks spread a frame's 2000 queries over many SMs.
const MATCH_THREADS: u32 = 32;
/// The pixel tile of one `orb_fast_score` work item (SCORE_TILE_W, SCORE_TILE_H in
/// kernels/orb/detect.cu).
const SCORE_TILE_W: usize = 64;
const SCORE_TILE_H: usize = 32;
/// Gaussian tap `i` of the descriptors' smoothing as a byte (a tap of 256 or more
/// fails the build).
const fn smoothing_tap(i: usize) -> u32 {
    assert!(
        GAUSSIAN_TAPS[i] < 256,
        "orb_fast_score takes the smoothing taps as bytes"
    );
    GAUSSIAN_TAPS[i] as u32
}
/// The smoothing taps packed for `orb_fast_score`'s byte dot products (`SmoothTaps` in
/// kernels/orb/detect.cu): w0..w3; w4, w5, w6, 0; 0, w0, w1, w2; w3..w6 (byte 0 first).
const SMOOTH_TAP_WORDS: [u32; 4] = [
    smoothing_tap(0) | smoothing_tap(1) << 8 | smoothing_tap(2) << 16 | smoothing_tap(3) << 24,
    smoothing_tap(4) | smoothing_tap(5) << 8 | smoothing_tap(6) << 16,
    smoothing_tap(0) << 8 | smoothing_tap(1) << 16 | smoothing_tap(2) << 24,
    smoothing_tap(3) | smoothing_tap(4) << 8 | smoothing_tap(5) << 16 | smoothing_tap(6) << 24,
];
/// Pixels of a row one warp resizes at a time in `orb_pyramid` (RESIZE_RUN in
/// kernels/orb/pyramid.cu).
const RESIZE_RUN: usize = 128;
/// Words of the pyramid's grid barrier: the arrival counter, then the generation on
/// its own 128-byte line (kernels/common/grid_barrier.cuh).
const GRID_BARRIER_WORDS: usize = 33;
/// Threads of an `orb_cell_candidates` block.
const CELL_THREADS: u32 = 4 * WARP;
/// Bins of a level's FAST-score histogram (`ORB_SCORE_BINS` in kernels/orb/select.cu).
const SCORE_BINS: usize = 256;
const DESCRIPTOR_WORDS: usize = 8;

/// Mirrors `OrbLevel` in kernels/common/levels.cuh.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct OrbLevel {
    width: i32,
    height: i32,
    offset: i32,
    taps_x: i32,
    taps_y: i32,
    edge: i32,
    n_cols: i32,
    n_rows: i32,
    cell_w: i32,
    cell_h: i32,
    cell_offset: i32,
    cand_offset: i32,
    cand_capacity: i32,
    corner_words: i32,
}

/// Mirrors `ResizeTap` in kernels/orb/pyramid.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct ResizeTap {
    src: i32,
    w1: i32,
}

/// A keypoint's best and second-best train match, from the fused or standalone kernel.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Knn2 {
    /// Train index, or -1 when there is no train descriptor (or cross-check failed).
    pub best_index: i32,
    pub best: i32,
    pub second: i32,
}

/// Blocks of `orb_pyramid` that its largest resized level keeps busy: one warp per
/// run of RESIZE_RUN pixels of a row. More blocks would only wait at its barriers.
fn pyramid_blocks(geometry: &[LevelGeometry]) -> u32 {
    let runs = geometry
        .iter()
        .skip(1)
        .map(|g| g.width.div_ceil(RESIZE_RUN) * g.height)
        .max()
        .unwrap_or(0);
    let warps_per_block = (BLOCK / WARP) as usize;
    u32::try_from(runs.div_ceil(warps_per_block))
        .unwrap_or(u32::MAX)
        .max(1)
}

/// Groups of 32 records (one `orb_record_ranks` / `orb_record_place` block each) that
/// the levels can hold: a level has at most min(its slots, 2 quota) records. At least 1.
fn record_groups(levels: &[OrbLevel], quotas: &[i32]) -> u32 {
    let groups: u64 = levels
        .iter()
        .zip(quotas)
        .map(|(level, &quota)| {
            let records = i64::from(level.cand_capacity).min(2 * i64::from(quota));
            u64::try_from(records)
                .unwrap_or(0)
                .div_ceil(u64::from(WARP))
        })
        .sum();
    u32::try_from(groups).unwrap_or(u32::MAX).max(1)
}

fn to_i32(value: usize, what: &str) -> Result<i32> {
    i32::try_from(value)
        .map_err(|_| Error::Image(ImageError::Invalid(format!("{what} {value} is too large"))))
}

/// The level tables of a `width` x `height` frame and the sizes they give the buffers.
struct PlanTables {
    geometry: Vec<LevelGeometry>,
    levels: Vec<OrbLevel>,
    taps: Vec<ResizeTap>,
    quotas: Vec<i32>,
    /// Pixels of all levels (one byte each).
    pyramid_bytes: usize,
    /// Grid cells and candidate slots of all levels.
    cells: usize,
    slots: usize,
    /// Words of the corner bitmap.
    corner_words: usize,
}

impl PlanTables {
    fn new(c: &OrbConfig, width: usize, height: usize) -> Result<Self> {
        let geometry = level_geometry(width, height, c.n_levels, c.scale_factor);
        let quotas: Vec<i32> = level_quotas(c.n_features, c.n_levels, c.scale_factor)
            .into_iter()
            .map(|q| to_i32(q, "quota"))
            .collect::<Result<_>>()?;
        let edge = c.edge_threshold as usize;
        let mut levels = Vec::with_capacity(geometry.len());
        let mut taps = Vec::new();
        let (mut offset, mut cells, mut slots, mut corner_words) = (0usize, 0usize, 0usize, 0usize);
        for (l, g) in geometry.iter().enumerate() {
            let mut level = OrbLevel {
                width: to_i32(g.width, "width")?,
                height: to_i32(g.height, "height")?,
                offset: to_i32(offset, "pyramid size")?,
                edge: to_i32(edge, "edge")?,
                cell_w: 1,
                cell_h: 1,
                cell_offset: to_i32(cells, "cells")?,
                cand_offset: to_i32(slots, "candidates")?,
                corner_words: to_i32(corner_words, "corner bitmap")?,
                ..OrbLevel::default()
            };
            if l > 0 {
                let previous = geometry[l - 1];
                // The taps of one axis, appended to `taps`; returns where they start.
                let mut push_taps = |from: usize, to: usize| -> Result<i32> {
                    let start = to_i32(taps.len(), "taps")?;
                    let axis = resize_taps(from, to);
                    taps.extend(axis.first.iter().zip(&axis.second_weight).map(|(&s, &w)| {
                        ResizeTap {
                            src: s as i32,
                            w1: i32::from(w),
                        }
                    }));
                    Ok(start)
                };
                level.taps_x = push_taps(previous.width, g.width)?;
                level.taps_y = push_taps(previous.height, g.height)?;
            }
            if let Some(area) = DetectionArea::new(g.width, g.height, edge) {
                let grid = Grid::new(area, c.grid_cell_size as usize);
                level.n_cols = to_i32(grid.n_cols, "cells")?;
                level.n_rows = to_i32(grid.n_rows, "cells")?;
                level.cell_w = to_i32(grid.cell_width, "cell")?;
                level.cell_h = to_i32(grid.cell_height, "cell")?;
                // Strict 3x3 NMS keeps at most one pixel of each 2x2 block.
                let capacity = area.width().div_ceil(2) * area.height().div_ceil(2);
                level.cand_capacity = to_i32(capacity, "candidates")?;
                cells += grid.n_cells();
                slots += capacity;
            }
            offset += g.width * g.height;
            // corner_row_words in kernels/common/levels.cuh.
            corner_words += g.width.div_ceil(32) * g.height;
            levels.push(level);
        }
        // The kernels index the packed pyramid with i32.
        to_i32(offset, "pyramid size")?;
        Ok(Self {
            geometry,
            levels,
            taps,
            quotas,
            pyramid_bytes: offset,
            cells,
            slots,
            corner_words,
        })
    }
}

/// What a plan allocates for a frame, in bytes (docs/memory.md): computed without a GPU
/// from the same tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrbPlanBytes {
    /// Pyramid, smoothed pyramid, FAST scores, corner bitmap, candidates, selection
    /// records, counters, cells, the grid barrier and the tables (device).
    pub device: usize,
    /// Buffers that cross to the host (one frame slot, kept counts, outputs): in device
    /// memory mode each is a device buffer and as much pinned host memory; in unified
    /// mode, mapped pinned host memory only.
    pub staged: usize,
}

impl OrbPlanBytes {
    pub fn new(config: &OrbConfig, width: usize, height: usize) -> Result<Self> {
        let t = PlanTables::new(config, width, height)?;
        let n_levels = t.levels.len();
        let (cells, slots) = (t.cells.max(1), t.slots.max(1));
        let words = |n: usize| n * size_of::<u32>();
        let capacity = config.n_features as usize;
        Ok(Self {
            device: size_of_val(t.levels.as_slice())
                + size_of_val(t.taps.as_slice())
                + size_of_val(t.quotas.as_slice())
                + 2 * t.pyramid_bytes.next_multiple_of(4)
                + t.pyramid_bytes
                + words(t.corner_words.max(1))
                + words(GRID_BARRIER_WORDS)
                + words(n_levels + n_levels * SCORE_BINS)
                + 2 * words(cells)
                + slots * (4 + 4 + 8 + 1)
                + slots * (8 + 4 + 4 + 4)
                + words(n_levels),
            staged: width * height
                + words(n_levels + 1)
                + capacity * (4 + 4 + 8 + 2 * 4 + DESCRIPTOR_WORDS * 4 + size_of::<Knn2>()),
        })
    }
}

/// Level tables and buffers for one image size.
struct Plan {
    width: usize,
    height: usize,
    geometry: Vec<LevelGeometry>,
    total_cells: i32,
    capacity: usize,
    levels: DeviceBuffer,
    taps: DeviceBuffer,
    quotas: DeviceBuffer,
    /// Slot 0 serves `extract`; the pipeline (`pipeline.rs`) adds a second slot.
    inputs: Vec<FrameInput>,
    pyramid: DeviceBuffer,
    smoothed: DeviceBuffer,
    scores: DeviceBuffer,
    /// A bit per pixel, rows of whole words per level: the corners `orb_fast_score`
    /// found, which `orb_cell_candidates` scans instead of every score.
    corner_bits: DeviceBuffer,
    barrier: DeviceBuffer,
    /// Zeroed each frame: level counts, score histograms.
    counters: DeviceBuffer,
    /// Per cell, written each frame: the first slot and the number of its candidates.
    cell_starts: DeviceBuffer,
    cell_counts: DeviceBuffer,
    cand_yx: DeviceBuffer,
    cand_cell: DeviceBuffer,
    cand_key: DeviceBuffer,
    cand_score: DeviceBuffer,
    /// The selection records (key, yx, cell, rank) at each level's first slot.
    records: [DeviceBuffer; 4],
    /// Records per level (min(candidates, 2 quota)).
    level_records: DeviceBuffer,
    /// Groups of 32 records the levels can hold at most: the blocks that
    /// `orb_record_ranks` / `orb_record_place` can keep busy.
    record_groups: u32,
    kept: Staged,
    out_yx: Staged,
    out_level: Staged,
    out_key: Staged,
    moments: Staged,
    descriptors: Staged,
    matches: Staged,
    /// Consecutive matching's cross-check: the previous frame's best match among this
    /// frame's keypoints, one [`Knn2`] per previous keypoint.
    backward: DeviceBuffer,
}

/// One frame buffer, the layout of the frames it takes, and the per-frame kernels
/// captured to read it: each slot has its own graph, so alternating slots costs no
/// copy and no graph update.
struct FrameInput {
    frame: Staged,
    layout: FrameLayout,
    graph: Option<FrameGraph>,
}

impl FrameInput {
    fn new(gpu: &Gpu, layout: FrameLayout, unified: bool) -> Result<Self> {
        Ok(Self {
            frame: Staged::new(&gpu.ctx, layout.upload_bytes(), unified)?,
            layout,
            graph: None,
        })
    }
}

impl Plan {
    /// Input `slot`, taking frames of `layout`: made on first use, and made again
    /// (with its graph) when the frames' encoding or step changes.
    fn input(
        &mut self,
        gpu: &Gpu,
        slot: usize,
        layout: FrameLayout,
        unified: bool,
    ) -> Result<&mut FrameInput> {
        while self.inputs.len() <= slot {
            self.inputs.push(FrameInput::new(gpu, layout, unified)?);
        }
        let input = &mut self.inputs[slot];
        if input.layout != layout {
            *input = FrameInput::new(gpu, layout, unified)?;
        }
        Ok(input)
    }
}

/// Bytes one thread copies into pinned memory: large frames are copied by several
/// threads, a single core does not reach the memory bandwidth.
const COPY_CHUNK: usize = 512 * 1024;

/// Copies the bytes of `frame` that hold its grey values into `input`'s host buffer.
fn copy_frame(input: &mut FrameInput, frame: &RawFrame<'_>) {
    use rayon::prelude::*;
    let bytes = input.layout.upload_bytes();
    let (to, from) = (
        &mut input.frame.host.as_mut_slice()[..bytes],
        &frame.data[..bytes],
    );
    to.par_chunks_mut(COPY_CHUNK)
        .zip(from.par_chunks(COPY_CHUNK))
        .for_each(|(to, from)| to.copy_from_slice(from));
}

/// Kernels of the pipeline, looked up once.
struct Kernels {
    gray: GrayKernel,
    pyramid: CudaFunction,
    fast_score: CudaFunction,
    cell_candidates: CudaFunction,
    select_candidates: CudaFunction,
    record_keys: CudaFunction,
    record_ranks: CudaFunction,
    record_place: CudaFunction,
    describe: CudaFunction,
    knn2_counted: CudaFunction,
    cross_check_counted: CudaFunction,
}

impl Kernels {
    fn load(gpu: &Gpu) -> Result<Self> {
        let orb = |module: &str, name: &str| gpu.function(module, name);
        let kernels = Self {
            gray: GrayKernel::load(gpu)?,
            pyramid: orb("orb_pyramid", "orb_pyramid")?,
            fast_score: orb("orb_detect", "orb_fast_score")?,
            cell_candidates: orb("orb_detect", "orb_cell_candidates")?,
            select_candidates: orb("orb_select", "orb_select_candidates")?,
            record_keys: orb("orb_select", "orb_record_keys")?,
            record_ranks: orb("orb_select", "orb_record_ranks")?,
            record_place: orb("orb_select", "orb_record_place")?,
            describe: orb("orb_describe", "orb_describe")?,
            knn2_counted: orb("match_hamming", "match_hamming_knn2_counted")?,
            cross_check_counted: orb("match_hamming", "match_cross_check_counted")?,
        };
        // The private patches are over the 48 KB of shared memory granted without asking.
        kernels.describe.set_attribute(
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            DESCRIBE_SHARED_BYTES as i32,
        )?;
        Ok(kernels)
    }
}

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

/// What each frame is matched against while it is described.
enum Fused {
    None,
    /// A set given once (`set_train`).
    Fixed(Train),
    /// The frame described before (`match_consecutive_frames`): after matching, each
    /// frame's descriptors and count are copied into `previous` on the GPU.
    Consecutive {
        previous: Train,
        /// Keypoints of the previous frame; `None` before the first frame.
        previous_len: Option<usize>,
        config: MatchConfig,
    },
}

impl Fused {
    fn train(&self) -> Option<&Train> {
        match self {
            Fused::None => None,
            Fused::Fixed(train)
            | Fused::Consecutive {
                previous: train, ..
            } => Some(train),
        }
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

/// What a frame measured: upload and extraction on the GPU, from events.
#[derive(Clone, Copy, Debug, Default)]
pub struct FrameTiming {
    pub upload_ms: f32,
    pub extract_ms: f32,
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
    /// The last frame's accepted matches with the frame before it (consecutive mode).
    consecutive_matches: Option<Vec<Match>>,
    last_timing: FrameTiming,
    /// Upload start, upload end = extraction start, extraction end.
    events: [CudaEvent; 3],
    /// Runs level 0's FAST beside the pyramid (`enqueue`).
    level0_branch: Branch,
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
        let events = gpu.frame_events()?;
        let level0_branch = Branch::new(&gpu)?;
        Ok(Self {
            events,
            level0_branch,
            config,
            gpu,
            unified,
            use_graph: true,
            kernels,
            constants,
            fused: Fused::None,
            plan: None,
            last_matches: Vec::new(),
            consecutive_matches: None,
            last_timing: FrameTiming::default(),
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
        self.plan_graph_reset();
        self.consecutive_matches = None;
        self.fused = match train {
            None => Fused::None,
            Some(d) if d.kind != DescriptorKind::Orb256 => {
                return Err(Error::Features(FeaturesError::DescriptorMismatch {
                    query: DescriptorKind::Orb256.name().into(),
                    train: d.kind.name().into(),
                }))
            }
            Some(d) => {
                let len = u32::try_from(to_i32(d.len(), "train set size")?).unwrap_or(0);
                Fused::Fixed(Train {
                    buffer: DeviceBuffer::from_slice(&self.gpu.ctx, &d.data)?,
                    count: DeviceBuffer::from_slice(&self.gpu.ctx, &[len])?,
                })
            }
        };
        Ok(())
    }

    /// Matches each frame against the frame described before it, on the GPU: the
    /// previous frame's descriptors stay there, the forward search runs while
    /// describing, the cross-check (if `config` asks) right after, and the ratio test
    /// and distance limit on the host, as the CPU matcher applies them. `None` stops it.
    pub fn match_consecutive(&mut self, config: Option<&MatchConfig>) -> Result<()> {
        self.plan_graph_reset();
        self.consecutive_matches = None;
        self.fused = match config {
            None => Fused::None,
            Some(config) => {
                let capacity = self.config.n_features as usize;
                Fused::Consecutive {
                    previous: Train {
                        buffer: DeviceBuffer::new(&self.gpu.ctx, capacity * DESCRIPTOR_WORDS * 4)?,
                        count: DeviceBuffer::from_slice(&self.gpu.ctx, &[0u32])?,
                    },
                    previous_len: None,
                    config: config.clone(),
                }
            }
        };
        Ok(())
    }

    /// The last frame's intermediate images per level, downloaded (synchronously) for
    /// stage-by-stage comparison with the CPU reference.
    pub fn stage_images(&self) -> Result<Vec<LevelStages>> {
        let Some(plan) = self.plan.as_ref() else {
            return Ok(Vec::new());
        };
        self.gpu.ctx.bind_to_thread()?;
        let download = |buffer: &DeviceBuffer| -> Result<Vec<u8>> {
            let mut host = vec![0u8; buffer.bytes];
            // SAFETY: `host` has exactly `buffer.bytes` bytes; the copy is synchronous.
            unsafe { cudarc::driver::result::memcpy_dtoh_sync(&mut host, buffer.ptr) }?;
            Ok(host)
        };
        let (pyramid, scores, smoothed) = (
            download(&plan.pyramid)?,
            download(&plan.scores)?,
            download(&plan.smoothed)?,
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

    /// Best and second-best train match of each keypoint of the last frame (fused path).
    pub fn last_matches(&self) -> &[Knn2] {
        &self.last_matches
    }

    pub fn last_timing(&self) -> FrameTiming {
        self.last_timing
    }

    fn plan_graph_reset(&mut self) {
        if let Some(plan) = &mut self.plan {
            for input in &mut plan.inputs {
                input.graph = None;
            }
        }
    }

    fn prepare(&mut self, width: usize, height: usize) -> Result<()> {
        if self
            .plan
            .as_ref()
            .is_some_and(|p| p.width == width && p.height == height)
        {
            return Ok(());
        }
        self.plan = None; // frees the old buffers first
        self.plan = Some(self.build_plan(width, height)?);
        Ok(())
    }

    fn build_plan(&self, width: usize, height: usize) -> Result<Plan> {
        let c = &self.config;
        let ctx = &self.gpu.ctx;
        let PlanTables {
            geometry,
            levels,
            taps,
            quotas,
            pyramid_bytes: offset,
            cells,
            slots,
            corner_words,
        } = PlanTables::new(c, width, height)?;
        let unified = self.unified;
        let capacity = c.n_features as usize;
        let n_levels = levels.len();
        let total_cells = to_i32(cells, "cells")?;
        let cells = cells.max(1);
        let slots = slots.max(1);
        let counters = n_levels + n_levels * SCORE_BINS;
        let barrier = DeviceBuffer::from_slice(ctx, &[0u32; GRID_BARRIER_WORDS])?;
        let record_groups = record_groups(&levels, &quotas);
        Ok(Plan {
            width,
            height,
            geometry,
            total_cells,
            capacity,
            levels: DeviceBuffer::from_slice(ctx, &levels)?,
            taps: DeviceBuffer::from_slice(ctx, &taps)?,
            quotas: DeviceBuffer::from_slice(ctx, &quotas)?,
            inputs: Vec::new(),
            // Whole words: orb_describe reads the aligned words holding its patch rows.
            pyramid: DeviceBuffer::new(ctx, offset.next_multiple_of(4))?,
            smoothed: DeviceBuffer::new(ctx, offset.next_multiple_of(4))?,
            scores: DeviceBuffer::new(ctx, offset)?,
            corner_bits: DeviceBuffer::new(ctx, corner_words.max(1) * size_of::<u32>())?,
            barrier,
            counters: DeviceBuffer::new(ctx, counters * size_of::<u32>())?,
            cell_starts: DeviceBuffer::new(ctx, cells * size_of::<u32>())?,
            cell_counts: DeviceBuffer::new(ctx, cells * size_of::<u32>())?,
            cand_yx: DeviceBuffer::new(ctx, slots * size_of::<u32>())?,
            cand_cell: DeviceBuffer::new(ctx, slots * size_of::<i32>())?,
            cand_key: DeviceBuffer::new(ctx, slots * size_of::<i64>())?,
            cand_score: DeviceBuffer::new(ctx, slots)?,
            records: [
                DeviceBuffer::new(ctx, slots * size_of::<i64>())?,
                DeviceBuffer::new(ctx, slots * size_of::<u32>())?,
                DeviceBuffer::new(ctx, slots * size_of::<u32>())?,
                DeviceBuffer::new(ctx, slots * size_of::<u32>())?,
            ],
            level_records: DeviceBuffer::new(ctx, n_levels * size_of::<u32>())?,
            record_groups,
            kept: Staged::new(ctx, (n_levels + 1) * size_of::<u32>(), unified)?,
            out_yx: Staged::new(ctx, capacity * size_of::<u32>(), unified)?,
            out_level: Staged::new(ctx, capacity * size_of::<i32>(), unified)?,
            out_key: Staged::new(ctx, capacity * size_of::<i64>(), unified)?,
            moments: Staged::new(ctx, capacity * 2 * size_of::<i32>(), unified)?,
            descriptors: Staged::new(ctx, capacity * DESCRIPTOR_WORDS * 4, unified)?,
            matches: Staged::new(ctx, capacity * size_of::<Knn2>(), unified)?,
            backward: DeviceBuffer::new(ctx, capacity * size_of::<Knn2>())?,
        })
    }

    /// Queues the per-frame kernels (everything between upload and downloads),
    /// reading the frame of `input`.
    fn enqueue(&self, plan: &Plan, input: &FrameInput) -> Result<()> {
        let c = &self.config;
        let k = &self.kernels;
        let stream = &self.gpu.stream;
        let n_levels = plan.geometry.len() as i32;
        let grid_of = |f: &CudaFunction| self.gpu.persistent_blocks(f, BLOCK);
        let cfg = |blocks: u32, threads: u32| LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: 0,
        };
        let n_lv = n_levels as usize;
        let level_counts: CUdeviceptr = plan.counters.ptr;
        let level_hist: CUdeviceptr = level_counts + (n_lv * 4) as u64;
        // SAFETY: `counters` holds exactly `counters.bytes` bytes on this context.
        unsafe {
            cudarc::driver::result::memset_d8_async(
                plan.counters.ptr,
                0,
                plan.counters.bytes,
                stream.cu_stream(),
            )
        }?;
        let harris = i32::from(c.score == OrbScore::Harris);
        let fast_threshold = c.fast_threshold as i32;
        let min_threshold = c.min_fast_threshold as i32;
        let null: CUdeviceptr = 0;
        // One block of 32 x 4 threads per cell at a time (kernels/orb/detect.cu): small
        // blocks, so that many cells of an SM overlap their phases.
        let cell_block = LaunchConfig {
            grid_dim: (
                self.gpu
                    .persistent_blocks(&k.cell_candidates, CELL_THREADS)?
                    .min(plan.total_cells as u32)
                    .max(1),
                1,
                1,
            ),
            block_dim: (WARP, CELL_THREADS / WARP, 1),
            shared_mem_bytes: 0,
        };

        // SAFETY (every launch below): each argument matches the kernel's parameter
        // list in kernels/orb/*.cu in order and type (device pointers as u64, ints as
        // i32); every pointer is a live buffer of this plan sized for the indices
        // the kernel derives from the level table built with it. The conversion: the
        // input holds its layout's upload bytes, the pyramid starts with level 0 of
        // the frame's size.
        unsafe {
            // Level 0 of the pyramid is the frame in grey (read over the bus once when
            // it is mapped host memory).
            k.gray
                .enqueue(stream, &input.layout, input.frame.ptr, plan.pyramid.ptr)?;
            // FAST on levels first..n_levels - 1 (kernels/orb/detect.cu).
            let fast_score = |on: &CudaStream, first: i32, n_levels: i32, blocks: u32| {
                on.launch_builder(&k.fast_score)
                    .arg(&plan.pyramid.ptr)
                    .arg(&plan.levels.ptr)
                    .arg(&first)
                    .arg(&n_levels)
                    .arg(&self.constants.arc.ptr)
                    .arg(&min_threshold)
                    .arg(&SMOOTH_TAP_WORDS[0])
                    .arg(&SMOOTH_TAP_WORDS[1])
                    .arg(&SMOOTH_TAP_WORDS[2])
                    .arg(&SMOOTH_TAP_WORDS[3])
                    .arg(&plan.scores.ptr)
                    .arg(&plan.corner_bits.ptr)
                    .arg(&plan.smoothed.ptr)
                    .launch(cfg(blocks, BLOCK))
            };
            // Level 0 is the frame: its FAST forks onto the side stream and runs while
            // the pyramid resizes the other levels, filling the SMs its barriers leave
            // idle; the two streams join before the cell scan. Each of the two takes at
            // most half the blocks the device holds, so that they share the SMs rather
            // than one waiting for the other to leave them.
            let side = self.level0_branch.fork(stream)?;
            let level0_tiles =
                plan.width.div_ceil(SCORE_TILE_W) * plan.height.div_ceil(SCORE_TILE_H);
            let fast_blocks = grid_of(&k.fast_score)?;
            let level0_blocks = (fast_blocks / 2)
                .max(1)
                .min(u32::try_from(level0_tiles).unwrap_or(u32::MAX));
            fast_score(side, 0, 1, level0_blocks)?;
            self.level0_branch.close()?;
            let blocks = (grid_of(&k.pyramid)? / 2)
                .max(1)
                .min(pyramid_blocks(&plan.geometry));
            stream
                .launch_builder(&k.pyramid)
                .arg(&plan.levels.ptr)
                .arg(&n_levels)
                .arg(&plan.taps.ptr)
                .arg(&plan.pyramid.ptr)
                .arg(&plan.barrier.ptr)
                .launch_cooperative(cfg(blocks, BLOCK))?;
            if n_levels > 1 {
                fast_score(stream, 1, n_levels, fast_blocks)?;
            }
            self.level0_branch.join(stream)?;
            stream
                .launch_builder(&k.cell_candidates)
                .arg(&plan.scores.ptr)
                .arg(&plan.corner_bits.ptr)
                .arg(&plan.levels.ptr)
                .arg(&n_levels)
                .arg(&plan.total_cells)
                .arg(&fast_threshold)
                .arg(&min_threshold)
                .arg(&harris)
                .arg(&level_counts)
                .arg(&plan.cell_starts.ptr)
                .arg(&plan.cell_counts.ptr)
                .arg(&plan.cand_yx.ptr)
                .arg(&plan.cand_cell.ptr)
                .arg(&plan.cand_key.ptr)
                .arg(&plan.cand_score.ptr)
                .arg(&level_hist)
                .launch(cell_block)?;
            // One block per level (at most one per SM under --sm-limit) selects each
            // level's records; the whole grid computes their Harris keys, their ranks
            // in their cells, and their places in the output.
            let per_level = LaunchConfig {
                grid_dim: ((n_levels as u32).min(self.gpu.sm_count).max(1), 1, 1),
                block_dim: (SELECT_THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            let [record_key, record_yx, record_cell, record_rank] = &plan.records;
            stream
                .launch_builder(&k.select_candidates)
                .arg(&plan.levels.ptr)
                .arg(&n_levels)
                .arg(&level_counts)
                .arg(&level_hist)
                .arg(&plan.quotas.ptr)
                .arg(&harris)
                .arg(&plan.cand_yx.ptr)
                .arg(&plan.cand_cell.ptr)
                .arg(&plan.cand_key.ptr)
                .arg(&plan.cand_score.ptr)
                .arg(&record_key.ptr)
                .arg(&record_yx.ptr)
                .arg(&record_cell.ptr)
                .arg(&plan.level_records.ptr)
                .launch(per_level)?;
            if harris != 0 {
                stream
                    .launch_builder(&k.record_keys)
                    .arg(&plan.pyramid.ptr)
                    .arg(&plan.levels.ptr)
                    .arg(&n_levels)
                    .arg(&plan.level_records.ptr)
                    .arg(&record_yx.ptr)
                    .arg(&record_key.ptr)
                    .launch(cfg(grid_of(&k.record_keys)?, BLOCK))?;
            }
            let ranks = cfg(
                self.gpu
                    .persistent_blocks(&k.record_ranks, RANK_THREADS)?
                    .min(plan.record_groups),
                RANK_THREADS,
            );
            stream
                .launch_builder(&k.record_ranks)
                .arg(&plan.levels.ptr)
                .arg(&n_levels)
                .arg(&plan.level_records.ptr)
                .arg(&record_key.ptr)
                .arg(&record_yx.ptr)
                .arg(&record_cell.ptr)
                .arg(&record_rank.ptr)
                .launch(ranks)?;
            let place = cfg(
                self.gpu
                    .persistent_blocks(&k.record_place, RANK_THREADS)?
                    .min(plan.record_groups),
                RANK_THREADS,
            );
            stream
                .launch_builder(&k.record_place)
                .arg(&plan.levels.ptr)
                .arg(&n_levels)
                .arg(&level_counts)
                .arg(&plan.quotas.ptr)
                .arg(&plan.level_records.ptr)
                .arg(&record_key.ptr)
                .arg(&record_yx.ptr)
                .arg(&record_rank.ptr)
                .arg(&plan.kept.ptr)
                .arg(&plan.out_yx.ptr)
                .arg(&plan.out_level.ptr)
                .arg(&plan.out_key.ptr)
                .launch(place)?;
            let (train, train_count) = self
                .fused
                .train()
                .map_or((null, null), |t| (t.buffer.ptr, t.count.ptr));
            let sms = self.gpu.sm_count;
            let describe_blocks =
                self.gpu
                    .resident_blocks(&k.describe, DESCRIBE_THREADS, DESCRIBE_SHARED_BYTES)?;
            // Keypoints per block: as few as spread `n_features` over every SM, at most
            // one per lane.
            let per_block = (plan.capacity as u32).div_ceil(sms).clamp(1, WARP);
            let needed = (plan.capacity as u32).div_ceil(per_block).max(1);
            stream
                .launch_builder(&k.describe)
                .arg(&plan.pyramid.ptr)
                .arg(&plan.smoothed.ptr)
                .arg(&plan.levels.ptr)
                .arg(&n_levels)
                .arg(&self.constants.umax.ptr)
                .arg(&self.constants.pattern.ptr)
                .arg(&plan.kept.ptr)
                .arg(&plan.out_yx.ptr)
                .arg(&plan.out_level.ptr)
                .arg(&plan.moments.ptr)
                .arg(&plan.descriptors.ptr)
                .arg(&train)
                .arg(&train_count)
                .arg(&plan.matches.ptr)
                .arg(&(per_block as i32))
                .launch(LaunchConfig {
                    grid_dim: (describe_blocks.min(needed), 1, 1),
                    block_dim: (DESCRIBE_THREADS, 1, 1),
                    shared_mem_bytes: DESCRIBE_SHARED_BYTES,
                })?;
            if let Fused::Consecutive {
                previous, config, ..
            } = &self.fused
            {
                self.enqueue_consecutive(plan, previous, config.cross_check)?;
            }
        }
        Ok(())
    }

    /// After the fused forward search of consecutive matching: the cross-check (the
    /// previous frame's own best matches among this frame's keypoints), then this
    /// frame's descriptors and count become the previous frame's for the next one.
    /// Sized for `n_features` keypoints on both sides, the counts read on the GPU.
    ///
    /// # Safety
    /// As `enqueue`'s launches: the buffers are the plan's and `previous`, sized for
    /// `plan.capacity` descriptors.
    unsafe fn enqueue_consecutive(
        &self,
        plan: &Plan,
        previous: &Train,
        cross_check: bool,
    ) -> Result<()> {
        let k = &self.kernels;
        let stream = &self.gpu.stream;
        let count: CUdeviceptr = plan.kept.ptr + (plan.geometry.len() * size_of::<u32>()) as u64;
        let blocks = (plan.capacity as u32).div_ceil(MATCH_THREADS).max(1);
        let grid = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (MATCH_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: arguments match kernels/match/hamming.cu in order and type; `previous`
        // and the plan's descriptors hold `capacity` descriptors of 32 bytes, `matches`
        // and `backward` `capacity` Knn2, and both counts are at most `capacity`.
        unsafe {
            if cross_check {
                stream
                    .launch_builder(&k.knn2_counted)
                    .arg(&previous.buffer.ptr)
                    .arg(&previous.count.ptr)
                    .arg(&plan.descriptors.ptr)
                    .arg(&count)
                    .arg(&plan.backward.ptr)
                    .launch(grid)?;
                stream
                    .launch_builder(&k.cross_check_counted)
                    .arg(&plan.matches.ptr)
                    .arg(&count)
                    .arg(&plan.backward.ptr)
                    .launch(grid)?;
            }
            cudarc::driver::result::memcpy_dtod_async(
                previous.buffer.ptr,
                plan.descriptors.ptr,
                plan.capacity * DESCRIPTOR_WORDS * 4,
                stream.cu_stream(),
            )?;
            cudarc::driver::result::memcpy_dtod_async(
                previous.count.ptr,
                count,
                size_of::<u32>(),
                stream.cu_stream(),
            )?;
        }
        Ok(())
    }

    /// Runs the per-frame kernels on the frame of input `slot`: captured into that
    /// slot's graph once per size and train set; plain launches (one log line) where
    /// capture is refused.
    fn run_frame_kernels(&mut self, slot: usize) -> Result<()> {
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
        if self.use_graph && input.graph.is_none() {
            let captured = FrameGraph::capture(&self.gpu.stream, || self.enqueue(plan, input))?;
            self.use_graph = captured.is_some();
            if let Some(input) = self.plan.as_mut().and_then(|p| p.inputs.get_mut(slot)) {
                input.graph = captured;
            }
        }
        let Some(plan) = self.plan.as_ref() else {
            return Ok(());
        };
        match plan.inputs.get(slot) {
            Some(FrameInput {
                graph: Some(graph), ..
            }) => graph.launch(),
            Some(input) => self.enqueue(plan, input),
            None => Ok(()),
        }
    }

    /// Queues the kernels on the frame of input `slot` (between events 1 and 2) and
    /// the downloads of the results; the caller synchronises the stream.
    fn queue_frame(&mut self, slot: usize) -> Result<()> {
        let stream = self.gpu.stream.clone();
        self.events[1].record(&stream)?;
        self.run_frame_kernels(slot)?;
        self.events[2].record(&stream)?;
        let Some(plan) = self.plan.as_mut() else {
            return Ok(());
        };
        let n = plan.capacity;
        plan.kept.download_async(plan.kept.host.bytes, &stream)?;
        plan.out_yx.download_async(n * 4, &stream)?;
        plan.out_level.download_async(n * 4, &stream)?;
        plan.out_key.download_async(n * 8, &stream)?;
        plan.moments.download_async(n * 8, &stream)?;
        plan.descriptors.download_async(n * 32, &stream)?;
        if self.fused.train().is_some() {
            plan.matches
                .download_async(n * size_of::<Knn2>(), &stream)?;
        }
        Ok(())
    }

    /// Uploads, runs, downloads and synchronises once; leaves results in the plan.
    fn run(&mut self, frame: &RawFrame<'_>, layout: FrameLayout) -> Result<()> {
        self.gpu.ctx.bind_to_thread()?;
        self.prepare(layout.width, layout.height)?;
        let stream = self.gpu.stream.clone();
        {
            let Some(plan) = self.plan.as_mut() else {
                return Ok(());
            };
            let input = plan.input(&self.gpu, 0, layout, self.unified)?;
            copy_frame(input, frame);
            self.events[0].record(&stream)?;
            input.frame.upload_async(&stream)?;
        }
        self.queue_frame(0)?;
        stream.synchronize()?;
        let events = &self.events;
        self.last_timing = FrameTiming {
            upload_ms: events[0].elapsed_ms(&events[1])?,
            extract_ms: events[1].elapsed_ms(&events[2])?,
        };
        Ok(())
    }

    /// The frame's features from the plan's host buffers.
    fn collect(&mut self, width: usize, height: usize) -> Result<Features> {
        let Some(plan) = self.plan.as_ref() else {
            return Err(Error::Image(ImageError::Invalid(
                "no frame was processed".into(),
            )));
        };
        let n_levels = plan.geometry.len();
        let words = |bytes: &[u8]| -> Vec<u32> {
            bytes
                .chunks_exact(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect()
        };
        let kept = words(plan.kept.host.as_slice());
        let total = (kept[n_levels] as usize).min(plan.capacity);
        let yx = words(plan.out_yx.host.as_slice());
        let level = words(plan.out_level.host.as_slice());
        let moments = words(plan.moments.host.as_slice());
        let keys: Vec<i64> = plan
            .out_key
            .host
            .as_slice()
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes(b.try_into().unwrap_or_default()))
            .collect();
        let harris = self.config.score == OrbScore::Harris;
        let patch = self.config.patch_size as f32;
        let mut keypoints = Keypoints::with_capacity(total);
        for i in 0..total {
            let l = level[i] as usize;
            let scale = plan.geometry.get(l).map_or(1.0, |g| g.scale) as f32;
            let (x, y) = (yx[i] & 0xffff, yx[i] >> 16);
            let (m10, m01) = (moments[2 * i] as i32, moments[2 * i + 1] as i32);
            let response = if harris {
                harris_response(keys[i])
            } else {
                keys[i] as f32
            };
            keypoints.push(
                x as f32 * scale,
                y as f32 * scale,
                patch * scale,
                angle_degrees(m10, m01),
                response,
                l as i32,
            );
        }
        let data = plan.descriptors.host.as_slice()[..total * 32].to_vec();
        self.last_matches = if self.fused.train().is_some() {
            let m = words(plan.matches.host.as_slice());
            (0..total)
                .map(|i| Knn2 {
                    best_index: m[3 * i] as i32,
                    best: m[3 * i + 1] as i32,
                    second: m[3 * i + 2] as i32,
                })
                .collect()
        } else {
            Vec::new()
        };
        if let Fused::Consecutive {
            previous_len,
            config,
            ..
        } = &mut self.fused
        {
            // Hamming distances are reported as they are.
            self.consecutive_matches = previous_len.map(|previous| {
                accept_all(config, &self.last_matches, previous > 1, |raw| raw as f32)
            });
            *previous_len = Some(total);
        }
        Ok(Features {
            width,
            height,
            keypoints,
            descriptors: Descriptors {
                kind: DescriptorKind::Orb256,
                data,
            },
        })
    }
}

impl Extractor for CudaOrbExtractor {
    fn extract(&mut self, image: &GrayImage) -> Result<Features> {
        self.extract_frame(&image.as_raw())
    }

    /// Uploads the frame as it arrived and converts it to grey on the GPU, bit for bit
    /// as `GrayImage::from_raw` does on the CPU.
    fn extract_frame(&mut self, frame: &RawFrame<'_>) -> Result<Features> {
        let layout = FrameLayout::of(frame)?;
        self.run(frame, layout)?;
        self.collect(layout.width, layout.height)
    }

    fn match_consecutive_frames(&mut self, config: Option<&MatchConfig>) -> Result<bool> {
        self.match_consecutive(config)?;
        Ok(config.is_some())
    }

    fn matches_with_previous(&mut self) -> Option<Vec<Match>> {
        self.consecutive_matches.take()
    }

    fn backend_name(&self) -> &'static str {
        "cuda"
    }

    fn device_name(&self) -> String {
        self.gpu.label()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pyramid_grid_covers_the_largest_resized_level_only() {
        // 640x480 at scale 1.2: level 1 is 533x400, five runs of 128 pixels a row,
        // eight warps a block.
        let geometry = level_geometry(640, 480, 8, 1.2);
        assert_eq!((geometry[1].width, geometry[1].height), (533, 400));
        assert_eq!(pyramid_blocks(&geometry), 5 * 400 / 8);
        // No resized level: one block, which meets no barrier.
        assert_eq!(pyramid_blocks(&level_geometry(640, 480, 1, 1.2)), 1);
    }

    #[test]
    fn record_groups_bound_each_level_by_its_slots_and_twice_its_quota() {
        let level = |cand_capacity| OrbLevel {
            cand_capacity,
            ..OrbLevel::default()
        };
        // 2 x 100 records in 7 groups of 32, 40 slots in 2, a level without slots in none.
        let levels = [level(10_000), level(40), level(0)];
        assert_eq!(record_groups(&levels, &[100, 100, 100]), 7 + 2);
        // No records at all still launches one block (it writes the kept counts).
        assert_eq!(record_groups(&[level(0)], &[100]), 1);
    }

    #[test]
    fn plan_bytes_follow_the_documented_formula() {
        for (width, height) in [(1920, 1080), (640, 480), (8192, 8192), (40, 30)] {
            let config = OrbConfig::default();
            let bytes = OrbPlanBytes::new(&config, width, height).unwrap();
            let geometry = level_geometry(width, height, config.n_levels, config.scale_factor);
            let n = geometry.len();
            let pixels: usize = geometry.iter().map(|g| g.width * g.height).sum();
            let corner_words: usize = geometry
                .iter()
                .map(|g| g.width.div_ceil(32) * g.height)
                .sum();
            let (mut slots, mut cells) = (0, 0);
            for g in &geometry {
                if let Some(area) =
                    DetectionArea::new(g.width, g.height, config.edge_threshold as usize)
                {
                    slots += area.width().div_ceil(2) * area.height().div_ceil(2);
                    cells += Grid::new(area, config.grid_cell_size as usize).n_cells();
                }
            }
            let taps: usize = geometry[1..].iter().map(|g| g.width + g.height).sum();
            let tables = n * size_of::<OrbLevel>() + 4 * n + size_of::<ResizeTap>() * taps;
            let device = 3 * pixels + 4 * corner_words + 37 * slots + 4 * n * 257 + 8 * cells;
            let case = format!("{width}x{height}");
            // Rounding the pyramids up to words, the barrier and the level records add
            // under 256 bytes beside the tables.
            let fixed = bytes.device - device;
            assert!(fixed >= tables && fixed < tables + 256, "{case}: {bytes:?}");
            let outputs = config.n_features as usize;
            assert_eq!(
                bytes.staged,
                width * height + 4 * (n + 1) + 68 * outputs,
                "{case}"
            );
            // docs/memory.md's rule of thumb from 1080p up: 11 to 12.4 bytes a level pixel
            // (12.4 less what the edges take from sum P_l / 4 candidate slots).
            if width >= 1920 {
                let per_pixel = bytes.device as f64 / pixels as f64;
                assert!((11.0..12.4).contains(&per_pixel), "{case}: {per_pixel}");
            }
        }
    }
}
