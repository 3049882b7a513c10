//! The scale-space geometry, blur schedule and buffers of one image size.
//!
//! Octave sizes, layer blurs and Gaussian taps come from the builders the CPU reference
//! uses too (`spec::scale_space`), so both backends build the same scale space.

use std::mem::size_of;

use crate::config::SiftConfig;
use crate::cuda::abi::{
    BlurJob, LevelsJob, SiftCounters, SiftOctave, BLUR_MAX_RADIUS, BLUR_MEDIUM_RADIUS,
    BLUR_NARROW_RADIUS, MAX_STEP_LEVELS, SIFT_MAX_OCTAVES, SMALL_MAX_RADIUS, SMALL_RUN,
    SOURCE_FRAME, SOURCE_FRAME_UPSAMPLED, SOURCE_PLANE, SOURCE_PLANE_HALVED, STEP_RADIUS,
    SUMMARY_WORDS, TILE_H, TILE_W,
};
use crate::cuda::free_memory::check_free_memory;
use crate::cuda::gray::FrameLayout;
use crate::cuda::memory::{DeviceBuffer, Staged};
use crate::cuda::sift::steps::{chained_steps, octave_steps, Step};
use crate::cuda::upload::FrameUpload;
use crate::error::{ConfigError, Error, ImageError, Result};
use crate::spec::scale_space::{base_blur_sigma, gaussian_kernel, layer_sigmas, octave_count};
use crate::spec::sift_descriptor;
use cudarc::driver::CudaContext;
use std::sync::Arc;

/// The radii the level-by-level kernels `sift_blur_dog_r8`, `_r16`, `_r32` hold.
pub const BLUR_KERNEL_RADII: [usize; 3] = [BLUR_NARROW_RADIUS, BLUR_MEDIUM_RADIUS, BLUR_MAX_RADIUS];
/// The halos the step kernels `sift_levels_r24`, `_r32` hold.
pub const STEP_KERNEL_RADII: [usize; 2] = [STEP_RADIUS, BLUR_MAX_RADIUS];
/// `blur_row_stride` of kernels/sift/pyramid.cu: the shared row stride, in floats, of
/// the blur kernel for radii up to `kernel_radius` (tile, halos, a float4 of shift).
const fn blur_row_stride(kernel_radius: usize) -> usize {
    TILE_W + 2 * kernel_radius + 4
}
/// Blur tiles from the largest down: an octave takes the first that gives it at least
/// one tile per SM, so a small octave's stage is not a few blocks waiting on memory.
const TILE_SHAPES: [(usize, usize); 5] = [(64, 32), (32, 32), (32, 16), (16, 16), (16, 8)];
/// Octaves of at most this many pixels go to `sift_small_octaves` (one block), where
/// their shared memory fits: 60x33 (1080p's sixth octave) and below. Measured on an
/// H200: from 80x60 or 120x67 on, one SM takes longer over the octaves than the tiled
/// launches it replaces.
const SMALL_OCTAVE_MAX_PIXELS: usize = 2048;
/// A descriptor's bytes: one per value.
pub const DESCRIPTOR_BYTES: usize = sift_descriptor::LENGTH;

/// What the device gives a plan: the SMs its grids spread over (all, or `--sm-limit`;
/// blur tiles are sized for them) and the shared memory one block may take.
#[derive(Clone, Copy, Debug)]
pub struct DeviceLimits {
    pub sms: usize,
    pub shared_per_block: usize,
}

/// The octaves made by `sift_small_octaves` in two blocks, on a side branch of the
/// frame's graph: the `n_jobs` jobs of [`Plan::small_jobs`], the first `n_chain_jobs`
/// (levels 1..n of every octave) by one block in order, the rest (levels n+1, n+2) by
/// the other.
#[derive(Clone, Copy, Debug)]
pub struct SmallOctaves {
    pub n_jobs: i32,
    pub n_chain_jobs: i32,
    /// Index of the first of them in the octave table.
    pub first_octave: i32,
    /// The first (largest) of them, and the widest radius of their levels.
    pub max_width: i32,
    pub max_height: i32,
    pub pad: i32,
    /// Floats of the tap table, which the block copies to shared memory.
    pub n_taps: i32,
    pub shared_bytes: u32,
    /// The launch that makes the level they start from (level n of the octave
    /// before): the side branch forks after it.
    pub after_stage: usize,
}

/// Dynamic shared memory of `sift_small_octaves` for `n_jobs` levels of octaves up to
/// `width` x `height` and radii up to `pad`, with the pipeline's `n_taps` taps: the
/// taps (rounded up to `SMALL_RUN`) and the jobs, the level with `pad` rows above and
/// below, and the vertical pass with `pad` columns each side; sizes rounded up to
/// `SMALL_RUN`, rows at odd strides.
fn small_octave_shared_bytes(
    (width, height): (usize, usize),
    pad: usize,
    n_taps: usize,
    n_jobs: usize,
) -> usize {
    let run_width = width.div_ceil(SMALL_RUN) * SMALL_RUN;
    let run_height = height.div_ceil(SMALL_RUN) * SMALL_RUN;
    let level = (run_height + 2 * pad) * (run_width | 1);
    let columns = run_height * ((run_width + 2 * pad) | 1);
    let tables =
        n_taps.div_ceil(SMALL_RUN) * SMALL_RUN * size_of::<f32>() + n_jobs * size_of::<BlurJob>();
    tables + (level + columns) * size_of::<f32>()
}

/// The first octave `sift_small_octaves` makes (and every one after it), or none
/// (`octaves.len()`): an octave past the first (the first reads the frame) of at most
/// `SMALL_OCTAVE_MAX_PIXELS` whose shared memory fits in `shared_limit` bytes.
fn first_small_octave(
    octaves: &[SiftOctave],
    taps: &Taps,
    levels: usize,
    shared_limit: usize,
) -> usize {
    let pad = taps.layer_radius();
    if pad > SMALL_MAX_RADIUS {
        return octaves.len();
    }
    (1..octaves.len())
        .find(|&o| {
            let size = (octaves[o].width as usize, octaves[o].height as usize);
            let n_jobs = (octaves.len() - o) * (levels - 1);
            size.0 * size.1 <= SMALL_OCTAVE_MAX_PIXELS
                && small_octave_shared_bytes(size, pad, taps.values.len(), n_jobs) <= shared_limit
        })
        .unwrap_or(octaves.len())
}

/// One launch over `n_jobs` jobs from `first_job` of the job table.
#[derive(Clone, Copy, Debug)]
pub struct JobLaunch {
    pub first_job: usize,
    pub n_jobs: i32,
    pub tiles: u32,
    /// The widest radius of its jobs' kernels: picks the kernel's register window.
    pub max_radius: usize,
}

/// The launches of one part of a stage of the big octaves' blur, one after the other:
/// its jobs of one level from the level below (`sift_blur_dog_*`), and its steps of
/// several levels from one source (`sift_levels_*`).
#[derive(Clone, Copy, Debug, Default)]
pub struct StageLaunches {
    pub chained: Option<JobLaunch>,
    pub stepped: Option<JobLaunch>,
}

impl StageLaunches {
    pub fn is_empty(&self) -> bool {
        self.chained.is_none() && self.stepped.is_none()
    }
}

/// One stage of the big octaves' blur. `chain`: the levels up to n, which the next
/// octave starts from, on the frame's stream; `tail`: the levels above n, which only
/// feed their octave's last DoGs, on a side branch beside the chain, so that the next
/// octaves do not wait for them.
#[derive(Clone, Copy, Debug, Default)]
pub struct BlurStage {
    pub chain: StageLaunches,
    pub tail: StageLaunches,
}

pub fn to_i32(value: usize, what: &str) -> Result<i32> {
    i32::try_from(value)
        .map_err(|_| Error::Image(ImageError::Invalid(format!("{what} {value} is too large"))))
}

/// Octaves of at most this many pixels make their levels in steps of several from one
/// source; bigger ones level by level, each from the level below. A step's level blurs
/// its source with the chain's kernels convolved, wider than the one blur from the level
/// below: where an octave fills the GPU many times over, the extra taps cost more than
/// the launches they save (H200: a 3840x2160 octave in steps took ~80 us more a frame,
/// and on 8 SMs (`--sm-limit 8`) 1920x1080 octaves did too). The choice does not depend
/// on the SMs, so that a frame gives the same features whatever `--sm-limit`.
const STEPPED_OCTAVE_MAX_PIXELS: usize = 1 << 20;

/// An octave's levels both ways: `stepped` up to [`MAX_STEP_LEVELS`] at a time, for
/// octaves of at most [`STEPPED_OCTAVE_MAX_PIXELS`], `chained` one at a time from the
/// level below for bigger ones.
pub struct OctaveSteps {
    pub stepped: Vec<Step>,
    pub chained: Vec<Step>,
}

impl OctaveSteps {
    /// The steps of an octave of `pixels` pixels.
    pub fn of(&self, pixels: usize) -> &[Step] {
        if pixels > STEPPED_OCTAVE_MAX_PIXELS {
            &self.chained
        } else {
            &self.stepped
        }
    }
}

/// The Gaussian kernels of the pipeline: the big octaves' steps (each level's kernel
/// from its step's source) and the level-to-level layers 1..n+3 of the chained and the
/// small octaves.
pub struct Taps {
    pub values: Vec<f32>,
    /// Octave 0, whose base is the frame, and every later big octave.
    pub first_octave: OctaveSteps,
    pub later_octaves: OctaveSteps,
    /// (first tap, radius) of each layer's blur from the level below.
    pub layers: Vec<(usize, usize)>,
    /// The widest kernel of the chained steps (octave 0's base blur included), and the
    /// widest halo of the stepped ones: the shared memory of their kernels.
    pub chain_radius: usize,
    pub step_halo: usize,
}

impl Taps {
    pub fn new(config: &SiftConfig) -> Result<Self> {
        let n = config.n_octave_layers as usize;
        let mut values = Vec::new();
        let mut add = |kernel: &[f32]| {
            let entry = (values.len(), kernel.len() / 2);
            values.extend_from_slice(kernel);
            entry
        };
        let too_wide = |radius: usize| {
            Error::Config(ConfigError::Invalid {
                name: "sift.sigma".into(),
                reason: format!(
                    "the CUDA backend blurs with radii up to {BLUR_MAX_RADIUS} px; sigma {} \
                     with {n} layers per octave needs {radius}",
                    config.sigma
                ),
            })
        };
        let layer_kernels: Vec<Vec<f32>> = layer_sigmas(config.sigma, n)[1..]
            .iter()
            .map(|&s| gaussian_kernel(s))
            .collect();
        let base_kernel = gaussian_kernel(base_blur_sigma(config.sigma, config.upscale));
        let layers: Vec<_> = layer_kernels.iter().map(|k| add(k)).collect();
        let base = add(&base_kernel);
        let chain_radius = layers.iter().chain([&base]).map(|t| t.1).max().unwrap_or(0);
        if chain_radius > BLUR_MAX_RADIUS {
            return Err(too_wide(chain_radius));
        }
        let first_octave = OctaveSteps {
            stepped: octave_steps(n, Some(&base_kernel), &layer_kernels, &mut add)
                .map_err(too_wide)?,
            chained: chained_steps(n, Some(base), &layers),
        };
        let later_octaves = OctaveSteps {
            stepped: octave_steps(n, None, &layer_kernels, &mut add).map_err(too_wide)?,
            chained: chained_steps(n, None, &layers),
        };
        let step_halo = first_octave
            .stepped
            .iter()
            .chain(&later_octaves.stepped)
            .map(Step::halo)
            .max()
            .unwrap_or(0);
        Ok(Self {
            values,
            first_octave,
            later_octaves,
            layers,
            chain_radius,
            step_halo,
        })
    }

    /// The widest of the layers' kernels (levels 1..n+3 from the level below).
    pub fn layer_radius(&self) -> usize {
        self.layers.iter().map(|t| t.1).max().unwrap_or(0)
    }

    /// Dynamic shared memory of each level-by-level kernel (`BLUR_KERNEL_RADII`): the
    /// input tile with its halo for the chain's widest radius that kernel holds, and the
    /// vertical pass's rows, at the kernel's row stride.
    pub fn blur_shared_bytes(&self) -> [u32; 3] {
        BLUR_KERNEL_RADII.map(|kernel_radius| tile_shared_bytes(self.chain_radius, kernel_radius))
    }

    /// The same for each step kernel (`STEP_KERNEL_RADII`) and the steps' widest halo.
    pub fn step_shared_bytes(&self) -> [u32; 2] {
        STEP_KERNEL_RADII.map(|kernel_radius| tile_shared_bytes(self.step_halo, kernel_radius))
    }
}

/// Dynamic shared memory of a tiled kernel for radii up to `kernel_radius` running halos
/// up to `halo`: the input tile with its halo, then the vertical pass's rows.
fn tile_shared_bytes(halo: usize, kernel_radius: usize) -> u32 {
    let rows = TILE_H + 2 * halo.min(kernel_radius) + TILE_H;
    (rows * blur_row_stride(kernel_radius) * size_of::<f32>()) as u32
}

/// Tables and buffers of one image size.
pub struct Plan {
    pub width: usize,
    pub height: usize,
    pub octaves: Vec<SiftOctave>,
    pub stages: Vec<BlurStage>,
    pub small_octaves: Option<SmallOctaves>,
    pub candidate_capacity: usize,
    pub keypoint_capacity: usize,
    /// Keypoints the frame can return: `max_features`, or `keypoint_capacity`.
    pub output_capacity: usize,
    pub octave_table: DeviceBuffer,
    /// The big octaves' `LevelsJob`s, launch after launch; the small octaves' `BlurJob`s.
    pub jobs: DeviceBuffer,
    pub small_jobs: DeviceBuffer,
    pub taps: DeviceBuffer,
    /// The frame as it arrived, in any encoding: made again when its layout changes.
    pub input: FrameUpload,
    /// The frame in grey, packed (`image_to_gray`): what the scale space starts from,
    /// unless the frame arrived as packed mono8 (its upload is read then).
    pub gray: DeviceBuffer,
    pub pyramid: DeviceBuffer,
    /// One [`SiftCounters`], then the tile-row counters of the big octaves' jobs
    /// (kernels/common/tile_flow.cuh): all zeroed each frame.
    pub counters: DeviceBuffer,
    pub candidates: [DeviceBuffer; 3],
    pub extrema: [DeviceBuffer; 7],
    pub keypoints: [DeviceBuffer; 6],
    /// less, equal_before, stronger: zeroed each frame.
    pub ranks: DeviceBuffer,
    pub duplicates: DeviceBuffer,
    /// out_count and the four raw counters, written by `sift_place`.
    pub summary: Staged,
    /// x, y, size, angle, response (f32), octave (i32).
    pub outputs: [Staged; 6],
    pub out_octave_layer: DeviceBuffer,
    pub descriptors: Staged,
}

impl Plan {
    /// The plan of frames of `layout`'s size, its upload buffer for frames of `layout`;
    /// refused before anything is allocated when it would not fit the GPU's free memory.
    pub fn new(
        ctx: &Arc<CudaContext>,
        config: &SiftConfig,
        taps: &Taps,
        layout: FrameLayout,
        unified: bool,
        limits: DeviceLimits,
    ) -> Result<Self> {
        let (width, height) = (layout.width, layout.height);
        let geometry = Geometry::new(config, taps, width, height, limits)?;
        let bytes = PlanBytes::of(config, taps, &geometry, width, height);
        ctx.bind_to_thread()?;
        check_free_memory("CUDA SIFT", width, height, bytes.needed(&layout))?;
        let Geometry {
            octaves,
            floats,
            schedule,
        } = geometry;
        let counters = counter_bytes(&schedule);
        let (candidate_capacity, keypoint_capacity, output_capacity) =
            capacities(width, height, config);
        let buffer = |bytes: usize| DeviceBuffer::new(ctx, bytes);
        let words = |count: usize| buffer(count * 4);
        let staged = |bytes: usize| Staged::new(ctx, bytes, unified);
        let (cand, kp, out) = (candidate_capacity, keypoint_capacity, output_capacity);
        Ok(Self {
            width,
            height,
            stages: schedule.stages,
            small_octaves: schedule.small_octaves,
            candidate_capacity,
            keypoint_capacity,
            output_capacity,
            octave_table: DeviceBuffer::from_slice(ctx, &octaves)?,
            octaves,
            jobs: DeviceBuffer::from_slice(ctx, &schedule.jobs)?,
            small_jobs: DeviceBuffer::from_slice(ctx, &schedule.small_jobs)?,
            taps: DeviceBuffer::from_slice(ctx, &taps.values)?,
            input: FrameUpload::new(ctx, layout, unified)?,
            gray: buffer(width * height)?,
            pyramid: buffer(floats.max(1) * size_of::<f32>())?,
            counters: buffer(counters)?,
            candidates: several(|| words(cand))?,
            extrema: several(|| words(kp))?,
            keypoints: several(|| words(kp))?,
            ranks: words(3 * kp)?,
            duplicates: words(kp)?,
            summary: staged(SUMMARY_WORDS * 4)?,
            outputs: several(|| staged(out * 4))?,
            out_octave_layer: words(out)?,
            descriptors: staged(out * DESCRIPTOR_BYTES)?,
        })
    }

    /// The tile-row counters, after the [`SiftCounters`] in the counters' buffer.
    pub fn rows_done(&self) -> u64 {
        self.counters.ptr + size_of::<SiftCounters>() as u64
    }
}

/// The counters' buffer of a plan: one [`SiftCounters`], then the tile-row counters.
fn counter_bytes(schedule: &BlurSchedule) -> usize {
    size_of::<SiftCounters>() + schedule.tile_rows * size_of::<u32>()
}

/// `N` buffers of one size, each made by `make` (the arrays of per-item fields).
fn several<T, const N: usize>(make: impl FnMut() -> Result<T>) -> Result<[T; N]> {
    let made: Vec<T> = std::iter::repeat_with(make)
        .take(N)
        .collect::<Result<_>>()?;
    Ok(made
        .try_into()
        .unwrap_or_else(|_| unreachable!("repeat_with made {N}")))
}

/// Candidate, keypoint and output capacities of a `width` x `height` frame's plan.
fn capacities(width: usize, height: usize, config: &SiftConfig) -> (usize, usize, usize) {
    let scale = if config.upscale { 2 } else { 1 };
    let keypoints = (width * height / 32).max(4096);
    let candidates = (width * scale * height * scale / 4).max(keypoints);
    let outputs = match config.max_features {
        0 => keypoints,
        m => (m as usize).min(keypoints),
    };
    (candidates, keypoints, outputs)
}

/// What `Plan::new` allocates for a frame, in bytes (docs/memory.md): computed without
/// a GPU from the same tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanBytes {
    /// The Gaussian and DoG planes of every octave (device).
    pub scale_space: usize,
    /// The frame in grey, candidate, extremum, keypoint and ranking buffers and
    /// counters (device).
    pub work: usize,
    /// Octave, job and tap tables, and the big octaves' tile-row counters (device).
    pub tables: usize,
    /// Buffers that cross to the host (the frame as it arrives, counted as a packed
    /// mono8 frame; summary, outputs, descriptors): in device memory mode each is a
    /// device buffer and as much pinned host memory; in unified mode, mapped pinned
    /// host memory only.
    pub staged: usize,
}

impl PlanBytes {
    pub fn new(
        config: &SiftConfig,
        width: usize,
        height: usize,
        limits: DeviceLimits,
    ) -> Result<Self> {
        let taps = &Taps::new(config)?;
        let geometry = Geometry::new(config, taps, width, height, limits)?;
        Ok(Self::of(config, taps, &geometry, width, height))
    }

    fn of(
        config: &SiftConfig,
        taps: &Taps,
        geometry: &Geometry,
        width: usize,
        height: usize,
    ) -> Self {
        let Geometry {
            octaves,
            floats,
            schedule,
        } = geometry;
        let (candidates, keypoints, outputs) = capacities(width, height, config);
        let word = size_of::<u32>();
        Self {
            scale_space: (*floats).max(1) * size_of::<f32>(),
            // the grey frame; counters; candidates (3 arrays); extrema (7), keypoints
            // (6), ranks (3), duplicates; out_octave_layer.
            work: width * height
                + size_of::<SiftCounters>()
                + (3 * candidates + (7 + 6 + 3 + 1) * keypoints + outputs) * word,
            tables: octaves.len() * size_of::<SiftOctave>()
                + schedule.jobs.len() * size_of::<LevelsJob>()
                + schedule.small_jobs.len() * size_of::<BlurJob>()
                + taps.values.len() * size_of::<f32>()
                + schedule.tile_rows * size_of::<u32>(),
            staged: width * height
                + SUMMARY_WORDS * word
                + 6 * outputs * word
                + outputs * DESCRIPTOR_BYTES,
        }
    }

    /// Device bytes the plan needs for frames of `layout` (checked against the GPU's
    /// free memory): all of them in either memory mode (mapped host memory is the
    /// device's own on an integrated GPU), the frame slot as large as the layout needs.
    pub(crate) fn needed(&self, layout: &FrameLayout) -> usize {
        let packed = layout.width * layout.height;
        self.scale_space + self.work + self.tables + self.staged - packed
            + layout.upload_bytes().max(packed)
    }
}

/// The octaves of a frame, the floats of its scale space and the blur schedule: what
/// both a plan and its byte count derive from.
struct Geometry {
    octaves: Vec<SiftOctave>,
    floats: usize,
    schedule: BlurSchedule,
}

impl Geometry {
    fn new(
        config: &SiftConfig,
        taps: &Taps,
        width: usize,
        height: usize,
        limits: DeviceLimits,
    ) -> Result<Self> {
        let n = config.n_octave_layers as usize;
        let (octaves, floats) = octave_table(width, height, config)?;
        let source = FrameSource {
            width,
            height,
            upscale: config.upscale,
        };
        let first_small = first_small_octave(&octaves, taps, n + 3, limits.shared_per_block);
        let schedule = blur_schedule(&octaves, taps, n, source, limits.sms, first_small)?;
        Ok(Self {
            octaves,
            floats,
            schedule,
        })
    }
}

/// The octaves of a `width` x `height` frame, with the float count of the scale space
/// (Gaussian levels, then DoG planes, per octave).
fn octave_table(
    width: usize,
    height: usize,
    config: &SiftConfig,
) -> Result<(Vec<SiftOctave>, usize)> {
    let levels = config.n_octave_layers as usize + 3;
    let scale = if config.upscale { 2 } else { 1 };
    let (mut w, mut h) = (width * scale, height * scale);
    let mut octaves = Vec::new();
    let mut floats = 0usize;
    for o in 0..octave_count(width, height, config.upscale).min(SIFT_MAX_OCTAVES) {
        if o > 0 {
            // As the CPU reference: stop before an octave whose source is under 2x2.
            if w < 2 || h < 2 {
                break;
            }
            (w, h) = (w / 2, h / 2);
        }
        let plane = w * h;
        octaves.push(SiftOctave {
            width: to_i32(w, "octave width")?,
            height: to_i32(h, "octave height")?,
            gauss: to_i32(floats, "scale space size")?,
            dog: to_i32(floats + levels * plane, "scale space size")?,
        });
        floats += (2 * levels - 1) * plane;
    }
    to_i32(floats, "scale space size")?;
    Ok((octaves, floats))
}

/// The frame the scale space starts from.
#[derive(Clone, Copy, Debug)]
struct FrameSource {
    width: usize,
    height: usize,
    upscale: bool,
}

/// The largest tile that still gives a `width` x `height` level a tile per SM.
fn tile_shape(width: usize, height: usize, sms: usize) -> (usize, usize) {
    let tiles = |(tw, th): (usize, usize)| width.div_ceil(tw) * height.div_ceil(th);
    let smallest = TILE_SHAPES[TILE_SHAPES.len() - 1];
    TILE_SHAPES
        .into_iter()
        .find(|&shape| tiles(shape) >= sms)
        .unwrap_or(smallest)
}

impl LevelsJob {
    fn tiles(&self) -> usize {
        (self.width as usize).div_ceil(self.tile_w as usize) * self.tile_rows()
    }

    fn tile_rows(&self) -> usize {
        (self.height as usize).div_ceil(self.tile_h as usize)
    }
}

/// The rows of tiles of the job making a level, as a job reading it waits for them.
#[derive(Clone, Copy, Debug)]
struct TileRows {
    first: i32,
    tile_h: i32,
    tiles_x: i32,
}

/// Where a plane or frame a job reads lies: `SOURCE_*`, first float (plane sources),
/// width and height.
type SourcePlane = (i32, i32, i32, i32);

/// The base of octave `o`: the frame for octave 0, else every second pixel of level n
/// of the octave before.
fn octave_base(
    octaves: &[SiftOctave],
    o: usize,
    n: usize,
    frame: FrameSource,
) -> Result<SourcePlane> {
    if o == 0 {
        let source = if frame.upscale {
            SOURCE_FRAME_UPSAMPLED
        } else {
            SOURCE_FRAME
        };
        return Ok((
            source,
            0,
            to_i32(frame.width, "width")?,
            to_i32(frame.height, "height")?,
        ));
    }
    let previous = &octaves[o - 1];
    Ok((
        SOURCE_PLANE_HALVED,
        previous.gauss + n as i32 * previous.width * previous.height,
        previous.width,
        previous.height,
    ))
}

/// What a job of octave `o` blurs: its level `level`, or its base (`None`).
fn level_source(
    octaves: &[SiftOctave],
    o: usize,
    level: Option<usize>,
    n: usize,
    frame: FrameSource,
) -> Result<SourcePlane> {
    let oct = &octaves[o];
    match level {
        Some(level) => Ok((
            SOURCE_PLANE,
            oct.gauss + level as i32 * oct.width * oct.height,
            oct.width,
            oct.height,
        )),
        None => octave_base(octaves, o, n, frame),
    }
}

/// The levels a later launch or kernel reads, which are stored: layers 1..n
/// (orientation and description) and every step's source.
fn stored_levels(steps: &[Step], n: usize) -> Vec<usize> {
    let mut levels: Vec<usize> = (1..=n)
        .chain(steps.iter().filter_map(|s| s.source))
        .collect();
    levels.sort_unstable();
    levels.dedup();
    levels
}

/// The job making `step` of octave `o`, over tiles of the octave's tile shape.
fn levels_job(
    octaves: &[SiftOctave],
    o: usize,
    step: &Step,
    stored: &[usize],
    n: usize,
    frame: FrameSource,
    sms: usize,
) -> Result<LevelsJob> {
    let oct = &octaves[o];
    let plane = oct.width * oct.height;
    let (width, height) = (oct.width as usize, oct.height as usize);
    let (tile_w, tile_h) = tile_shape(width, height, sms);
    let (source, src_offset, src_width, src_height) =
        level_source(octaves, o, step.source, n, frame)?;
    let mut job = LevelsJob {
        source,
        src_offset,
        src_width,
        src_height,
        width: oct.width,
        height: oct.height,
        halo: to_i32(step.halo(), "radius")?,
        n_levels: to_i32(step.levels.len(), "levels")?,
        tiles_x: to_i32(width.div_ceil(tile_w), "tiles")?,
        tile_w: tile_w as i32,
        tile_h: tile_h as i32,
        taps: [-1; MAX_STEP_LEVELS],
        gauss_out: [-1; MAX_STEP_LEVELS],
        dog_out: [-1; MAX_STEP_LEVELS],
        ..LevelsJob::default()
    };
    for (k, &(level, kernel)) in step.levels.iter().enumerate() {
        if let Some((tap, radius)) = kernel {
            job.taps[k] = to_i32(tap, "taps")?;
            job.radius[k] = to_i32(radius, "taps")?;
        }
        if kernel.is_some() && stored.contains(&level) {
            job.gauss_out[k] = oct.gauss + level as i32 * plane;
        }
        if k > 0 {
            job.dog_out[k] = oct.dog + (level as i32 - 1) * plane;
        }
    }
    Ok(job)
}

/// The blur schedule: the big octaves' jobs and their launches, the small octaves' block.
struct BlurSchedule {
    jobs: Vec<LevelsJob>,
    /// Rows of tiles of all jobs: the tile-row counters a frame needs.
    tile_rows: usize,
    stages: Vec<BlurStage>,
    small_jobs: Vec<BlurJob>,
    small_octaves: Option<SmallOctaves>,
}

/// The jobs of the big octaves and their launches. A step runs in the stage after the
/// one making its source: octave 0's first step in stage 0, a later octave's first step
/// after the step making level n of the octave before, every other step after the step
/// before it; so consecutive octaves overlap. A stage launches its chained jobs, then its
/// stepped ones. Octaves from `first_small` on go, level by
/// level, to the small octaves' block instead, which forks after the launch making level
/// n of octave `first_small - 1`.
fn blur_schedule(
    octaves: &[SiftOctave],
    taps: &Taps,
    n: usize,
    frame: FrameSource,
    sms: usize,
    first_small: usize,
) -> Result<BlurSchedule> {
    // Per stage: [chain, tail], each [chained, stepped].
    let mut by_stage: Vec<[[Vec<LevelsJob>; 2]; 2]> = Vec::new();
    // The launch making level n of the octave before.
    let mut base_stage: Option<usize> = None;
    // The rows of tiles of the job making each level of each big octave, and the
    // counters given out so far.
    let mut makers: Vec<Vec<Option<TileRows>>> = vec![vec![None; n + 3]; octaves.len()];
    let mut tile_rows = 0;
    for o in 0..octaves.len().min(first_small) {
        let octave = &octaves[o];
        let steps = if o == 0 {
            &taps.first_octave
        } else {
            &taps.later_octaves
        }
        .of((octave.width * octave.height) as usize);
        let stored = stored_levels(steps, n);
        let first_stage = base_stage.map_or(0, |s| s + 1);
        for (stage, step) in (first_stage..).zip(steps) {
            let mut job = levels_job(octaves, o, step, &stored, n, frame, sms)?;
            // A plane source was made by an earlier step: of this octave, or level n of
            // the octave before for the base.
            let source_maker = match step.source {
                Some(level) => makers[o][level],
                None => o.checked_sub(1).and_then(|before| makers[before][n]),
            };
            (job.src_rows_done, job.src_tile_h, job.src_tiles_x) = match source_maker {
                Some(maker) => (maker.first, maker.tile_h, maker.tiles_x),
                None => (-1, 0, 0),
            };
            job.rows_done = to_i32(tile_rows, "tile rows")?;
            tile_rows += job.tile_rows();
            let rows = TileRows {
                first: job.rows_done,
                tile_h: job.tile_h,
                tiles_x: job.tiles_x,
            };
            for &(level, kernel) in &step.levels {
                if kernel.is_some() {
                    makers[o][level] = Some(rows);
                }
            }
            if by_stage.len() <= stage {
                by_stage.resize(stage + 1, Default::default());
            }
            by_stage[stage][usize::from(step.is_tail(n))][usize::from(!step.is_chained())]
                .push(job);
            if step.last_level() == n {
                base_stage = Some(stage);
            }
        }
    }
    let mut jobs = Vec::new();
    let mut stages = Vec::new();
    let part_launches = |jobs: &mut Vec<LevelsJob>, [chained, stepped]: [Vec<LevelsJob>; 2]| {
        Ok::<_, Error>(StageLaunches {
            chained: job_launch(jobs, chained)?,
            stepped: job_launch(jobs, stepped)?,
        })
    };
    for [chain, tail] in by_stage {
        stages.push(BlurStage {
            chain: part_launches(&mut jobs, chain)?,
            tail: part_launches(&mut jobs, tail)?,
        });
    }
    let (small_jobs, n_chain_jobs) = small_octave_jobs(octaves, taps, n, frame, first_small)?;
    let small_octaves = match (octaves.get(first_small), base_stage) {
        (Some(largest), Some(after_stage)) if !small_jobs.is_empty() => {
            // Every octave has a level of every layer: the widest layer is the pad.
            let pad = taps.layer_radius();
            let size = (largest.width as usize, largest.height as usize);
            let n_taps = taps.values.len();
            Some(SmallOctaves {
                n_jobs: to_i32(small_jobs.len(), "jobs")?,
                n_chain_jobs: to_i32(n_chain_jobs, "jobs")?,
                first_octave: to_i32(first_small, "octave")?,
                max_width: largest.width,
                max_height: largest.height,
                pad: to_i32(pad, "radius")?,
                n_taps: to_i32(n_taps, "taps")?,
                shared_bytes: small_octave_shared_bytes(size, pad, n_taps, small_jobs.len()) as u32,
                after_stage,
            })
        }
        _ => None,
    };
    Ok(BlurSchedule {
        jobs,
        tile_rows,
        stages,
        small_jobs,
        small_octaves,
    })
}

/// One launch of `launch_jobs`, appended to `jobs` with their first tiles; none when
/// there are none.
fn job_launch(jobs: &mut Vec<LevelsJob>, launch_jobs: Vec<LevelsJob>) -> Result<Option<JobLaunch>> {
    if launch_jobs.is_empty() {
        return Ok(None);
    }
    let first_job = jobs.len();
    let mut tiles = 0usize;
    let max_radius = launch_jobs
        .iter()
        .map(|j| j.halo as usize)
        .max()
        .unwrap_or(0);
    for mut job in launch_jobs {
        job.tile_start = to_i32(tiles, "tiles")?;
        tiles += job.tiles();
        jobs.push(job);
    }
    Ok(Some(JobLaunch {
        first_job,
        n_jobs: to_i32(jobs.len() - first_job, "jobs")?,
        tiles: u32::try_from(tiles)
            .map_err(|_| Error::Image(ImageError::Invalid("too many tiles".into())))?,
        max_radius,
    }))
}

/// The levels of the octaves from `first_small` on, each blurred from the level below
/// with its layer's kernel, and how many of them are the chain: levels 1..n of every
/// octave, octave after octave (each octave's base is level n of the one before), then
/// the tail: levels n+1 and n+2 of every octave, the first of each from level n, which
/// the chain block publishes when made.
fn small_octave_jobs(
    octaves: &[SiftOctave],
    taps: &Taps,
    n: usize,
    frame: FrameSource,
    first_small: usize,
) -> Result<(Vec<BlurJob>, usize)> {
    let levels = n + 3;
    let job = |o: usize, level: usize| -> Result<BlurJob> {
        let oct = &octaves[o];
        let plane = oct.width * oct.height;
        // Level 1 blurs the octave's base, every later level the one below.
        let below = (level > 1).then(|| level - 1);
        let (source, src_offset, src_width, src_height) =
            level_source(octaves, o, below, n, frame)?;
        let (tap, radius) = taps.layers[level - 1];
        Ok(BlurJob {
            source,
            src_offset,
            src_width,
            src_height,
            width: oct.width,
            height: oct.height,
            // The last level only feeds the last DoG.
            gauss_out: if level + 1 < levels {
                oct.gauss + level as i32 * plane
            } else {
                -1
            },
            dog_out: oct.dog + (level as i32 - 1) * plane,
            taps: to_i32(tap, "taps")?,
            radius: to_i32(radius, "taps")?,
            publishes: 0,
            wait_for: 0,
        })
    };
    let small = first_small..octaves.len();
    let mut jobs = Vec::new();
    for o in small.clone() {
        for level in 1..=n {
            jobs.push(BlurJob {
                publishes: i32::from(level == n),
                ..job(o, level)?
            });
        }
    }
    let n_chain = jobs.len();
    for (published, o) in (1..).zip(small) {
        for level in n + 1..levels {
            jobs.push(BlurJob {
                wait_for: if level == n + 1 { published } else { 0 },
                ..job(o, level)?
            });
        }
    }
    Ok((jobs, n_chain))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::sift::pyramid::{ScaleSpace, Upscale};
    use crate::image::Encoding;
    use crate::image::GrayImage;

    #[test]
    fn octaves_are_the_cpu_scale_space_octaves() {
        for upscale in [false, true] {
            let config = SiftConfig {
                upscale,
                ..SiftConfig::default()
            };
            for (w, h) in [(97, 61), (12, 9), (3, 40), (1, 1)] {
                let image = GrayImage::new(w, h, vec![128; w * h]).unwrap();
                let space =
                    ScaleSpace::build(&image, config.sigma, 3, Upscale::from_flags(upscale, false));
                let cpu: Vec<(i32, i32)> = space
                    .gaussian
                    .iter()
                    .map(|levels| (levels[0].width as i32, levels[0].height as i32))
                    .collect();
                let (octaves, _) = octave_table(w, h, &config).unwrap();
                let gpu: Vec<(i32, i32)> = octaves.iter().map(|o| (o.width, o.height)).collect();
                assert_eq!(gpu, cpu, "{w}x{h} upscale={upscale}");
            }
        }
    }

    /// Every level a job stores or blurs from is made once, before the launch reading
    /// it, and the job waits for the tile rows of the job making it; every job has rows
    /// of tile-row counters of its own; every DoG plane is written once; layers 1..n of
    /// every octave are stored;
    /// every stage's tiles are its jobs' tiles; the small octaves' blocks start after the
    /// stage making their first source, and each makes its levels in order, the tail's
    /// from the levels the chain publishes.
    #[test]
    fn the_blur_schedule_respects_the_level_order() {
        const H200_SHARED: usize = 227 * 1024;
        for (sms, width, height, upscale, shared_limit) in [
            (132, 1920, 1080, true, H200_SHARED),
            (132, 1920, 1080, false, H200_SHARED),
            (132, 1920, 1080, false, 0),
            (8, 1920, 1080, false, H200_SHARED),
            (132, 1280, 960, false, 12 * 1024),
            (132, 40, 30, true, H200_SHARED),
        ] {
            let case = format!("{width}x{height} upscale={upscale} {sms} SMs {shared_limit} B");
            let config = SiftConfig {
                upscale,
                ..SiftConfig::default()
            };
            let n = config.n_octave_layers as usize;
            let taps = Taps::new(&config).unwrap();
            let (octaves, _) = octave_table(width, height, &config).unwrap();
            let frame = FrameSource {
                width,
                height,
                upscale,
            };
            let first_small = first_small_octave(&octaves, &taps, n + 3, shared_limit);
            let BlurSchedule {
                jobs,
                tile_rows,
                stages,
                small_jobs,
                small_octaves,
            } = blur_schedule(&octaves, &taps, n, frame, sms, first_small).unwrap();
            let mut counter_owner = vec![None; tile_rows];
            for (j, job) in jobs.iter().enumerate() {
                let first = job.rows_done as usize;
                for owner in &mut counter_owner[first..first + job.tile_rows()] {
                    assert_eq!(owner.replace(j), None, "{case}: shared tile-row counter");
                }
            }
            assert!(counter_owner.iter().all(Option::is_some), "{case}");
            let mut made_at = std::collections::HashMap::new();
            let mut made_rows = std::collections::HashMap::new();
            let mut made_by_tail = std::collections::HashSet::new();
            let mut dogs = std::collections::HashSet::new();
            // (launch, chained kernel, on the tail branch)
            let launches = |stage: &BlurStage| -> Vec<(JobLaunch, bool, bool)> {
                [(stage.chain, false), (stage.tail, true)]
                    .into_iter()
                    .flat_map(|(part, tail)| {
                        let chained = part.chained.map(|l| (l, true, tail));
                        chained
                            .into_iter()
                            .chain(part.stepped.map(|l| (l, false, tail)))
                    })
                    .collect()
            };
            let jobs_of = |launch: &JobLaunch| {
                jobs[launch.first_job..launch.first_job + launch.n_jobs as usize].to_vec()
            };
            for (s, stage) in stages.iter().enumerate() {
                assert!(!stage.chain.is_empty() || !stage.tail.is_empty(), "{case}");
                let stage_jobs: Vec<(LevelsJob, bool)> = launches(stage)
                    .iter()
                    .flat_map(|(l, _, tail)| jobs_of(l).into_iter().map(|job| (job, *tail)))
                    .collect();
                for (launch, chained, _) in launches(stage) {
                    let launch_jobs =
                        &jobs[launch.first_job..launch.first_job + launch.n_jobs as usize];
                    let tiles: usize = launch_jobs.iter().map(LevelsJob::tiles).sum();
                    assert_eq!(tiles, launch.tiles as usize, "{case}");
                    for job in launch_jobs {
                        assert!(job.halo as usize <= launch.max_radius, "{case}");
                        let blurred = (0..job.n_levels as usize)
                            .filter(|&k| job.taps[k] >= 0)
                            .count();
                        assert_eq!(blurred == 1, chained, "{case}");
                    }
                }
                for (job, tail) in &stage_jobs {
                    if job.source == SOURCE_PLANE || job.source == SOURCE_PLANE_HALVED {
                        let made = made_at.get(&job.src_offset).copied();
                        assert!(
                            made.is_some_and(|m| m < s),
                            "{case}: stage {s} reads an unmade level"
                        );
                        assert_eq!(
                            made_rows.get(&job.src_offset),
                            Some(&(job.src_rows_done, job.src_tile_h, job.src_tiles_x)),
                            "{case}: a job waits for other rows than its source's"
                        );
                    } else {
                        assert_eq!(job.src_rows_done, -1, "{case}");
                        // The chain does not wait for the tail branch.
                        assert!(
                            *tail || !made_by_tail.contains(&job.src_offset),
                            "{case}: stage {s}'s chain reads a tail's level"
                        );
                    }
                    assert!(job.n_levels as usize <= MAX_STEP_LEVELS, "{case}");
                    for k in 0..job.n_levels as usize {
                        assert!(job.radius[k] <= job.halo, "{case}");
                    }
                    assert!(job.tile_w as usize <= TILE_W && job.tile_h as usize <= TILE_H);
                    assert!(job.tile_w % 4 == 0 && job.tile_h % 4 == 0, "{case}");
                    assert!((job.tile_w as u32).is_power_of_two(), "{case}");
                }
                for (job, tail) in &stage_jobs {
                    for k in 0..job.n_levels as usize {
                        if job.gauss_out[k] >= 0 {
                            assert!(made_at.insert(job.gauss_out[k], s).is_none(), "{case}");
                            made_rows
                                .insert(job.gauss_out[k], (job.rows_done, job.tile_h, job.tiles_x));
                            if *tail {
                                made_by_tail.insert(job.gauss_out[k]);
                            }
                        }
                        if job.dog_out[k] >= 0 {
                            assert!(k > 0, "{case}");
                            assert!(dogs.insert(job.dog_out[k]), "{case}");
                        }
                    }
                }
            }
            // Orientation and description read layers 1..n of every octave.
            for oct in &octaves[..first_small.min(octaves.len())] {
                for layer in 1..=n as i32 {
                    let plane = oct.gauss + layer * oct.width * oct.height;
                    assert!(
                        made_at.contains_key(&plane),
                        "{case}: layer {layer} not stored"
                    );
                }
            }
            if let Some(small) = small_octaves {
                assert_eq!(small.n_jobs as usize, small_jobs.len(), "{case}");
                assert_eq!(small.first_octave as usize, first_small, "{case}");
                let largest = &octaves[first_small];
                assert_eq!(
                    (small.max_width, small.max_height),
                    (largest.width, largest.height)
                );
                assert!(
                    small.shared_bytes as usize <= shared_limit,
                    "{case}: {} B",
                    small.shared_bytes
                );
                assert_eq!(
                    made_at.get(&small_jobs[0].src_offset),
                    Some(&small.after_stage)
                );
                assert!(!made_by_tail.contains(&small_jobs[0].src_offset), "{case}");
                // Each block makes its jobs in order: the chain (which publishes level n
                // of every octave), then, beside it, the tail.
                let (chain, tail) = small_jobs.split_at(small.n_chain_jobs as usize);
                let published: Vec<i32> = chain
                    .iter()
                    .filter(|job| job.publishes != 0)
                    .map(|job| job.gauss_out)
                    .collect();
                assert_eq!(published.len(), octaves.len() - first_small, "{case}");
                assert_eq!(tail.len(), 2 * published.len(), "{case}");
                for (block, is_tail) in [(chain, false), (tail, true)] {
                    let mut previous: Option<&BlurJob> = None;
                    for job in block {
                        assert!(job.radius <= small.pad, "{case}");
                        assert!(!is_tail || job.publishes == 0, "{case}");
                        if job.source == SOURCE_PLANE_HALVED {
                            // An octave's first level reads a level made before.
                            assert!(!is_tail && job.wait_for == 0, "{case}");
                            assert!(made_at.contains_key(&job.src_offset), "{case}");
                        } else if Some(job.src_offset) == previous.map(|p| p.gauss_out) {
                            // The level the job before it made, in shared memory.
                            assert_eq!(job.wait_for, 0, "{case}");
                        } else {
                            // The tail's level n + 1: level n, once the chain published it.
                            assert!(is_tail && job.wait_for > 0, "{case}");
                            let waited = published[job.wait_for as usize - 1];
                            assert_eq!(job.src_offset, waited, "{case}");
                        }
                        if job.gauss_out >= 0 {
                            assert!(
                                made_at.insert(job.gauss_out, usize::MAX).is_none(),
                                "{case}"
                            );
                        }
                        assert!(dogs.insert(job.dog_out), "{case}");
                        previous = Some(job);
                    }
                }
            } else {
                assert!(small_jobs.is_empty(), "{case}");
            }
            let expected_small = match (width, shared_limit) {
                (1920, H200_SHARED) => Some(if upscale { 6 } else { 5 }),
                (1920, _) => None,
                (1280, _) => Some(6), // 40x30 needs 18 KB: 12 KB take the next octave
                _ => Some(1),
            };
            assert_eq!(small_octaves.map(|_| first_small), expected_small, "{case}");
            assert_eq!(dogs.len(), octaves.len() * (n + 2), "{case}");
            // Where every big octave is stepped: two stages for octave 0, then one more
            // per octave, whose first step runs beside the second step of the octave
            // before. Chained octaves overlap too: fewer stages than levels.
            let big = first_small.min(octaves.len());
            let chained = octaves[..big]
                .iter()
                .any(|o| (o.width * o.height) as usize > STEPPED_OCTAVE_MAX_PIXELS);
            assert_eq!(chained, width >= 1280, "{case}");
            if chained {
                assert!(stages.len() < big * (n + 2) + 1, "{case}");
            } else {
                assert_eq!(stages.len(), big + 1, "{case}");
            }
        }
    }

    fn taps_with(chain_radius: usize, step_halo: usize) -> Taps {
        let none = || OctaveSteps {
            stepped: Vec::new(),
            chained: Vec::new(),
        };
        Taps {
            values: Vec::new(),
            first_octave: none(),
            later_octaves: none(),
            layers: Vec::new(),
            chain_radius,
            step_halo,
        }
    }

    /// Every float the blur passes of kernels/sift/pyramid.cu touch lies inside the
    /// shared memory the host gives the kernel, for every chain radius, every radius the
    /// kernel runs and every tile shape: the input tile at its shifted columns (the
    /// vertical pass reads whole float4s), the vertical pass's rows after it, and the
    /// horizontal pass's float4 window.
    #[test]
    fn blur_shared_memory_holds_every_pass() {
        for max_radius in 0..=BLUR_MAX_RADIUS {
            let bytes = taps_with(max_radius, 0).blur_shared_bytes();
            for (kernel, &kernel_radius) in BLUR_KERNEL_RADII.iter().enumerate() {
                let floats = bytes[kernel] as usize / size_of::<f32>();
                let stride = blur_row_stride(kernel_radius);
                let cols = (TILE_H + 2 * max_radius.min(kernel_radius)) * stride;
                let exact = kernel_radius < BLUR_MAX_RADIUS;
                for r in 0..=max_radius.min(kernel_radius) {
                    // Centre of output 0 and the widest tap of the kernel's copy.
                    let (centre, reach) = if exact {
                        (r.next_multiple_of(4), r)
                    } else {
                        (kernel_radius, kernel_radius)
                    };
                    for (tw, th) in TILE_SHAPES {
                        let case = format!(
                            "max radius {max_radius}, r {r}, kernel {kernel_radius}, {tw}x{th}"
                        );
                        let input_end = centre - r + tw + 2 * r;
                        let vertical_end = (tw + centre + r).next_multiple_of(4);
                        let window_end = tw - 4 + 4 * ((centre + reach).div_ceil(4) + 1);
                        assert!(
                            input_end.max(vertical_end).max(window_end) <= stride,
                            "{case}"
                        );
                        assert!((th + 2 * r) * stride <= cols, "{case}");
                        assert!(cols + th * stride <= floats, "{case}");
                    }
                }
            }
        }
    }

    /// The same for kernels/sift/levels.cu, for every halo and radius the step kernel
    /// runs: every level's centre is column `kernel_radius` (a multiple of 4).
    #[test]
    fn step_shared_memory_holds_every_pass() {
        for max_halo in 0..=BLUR_MAX_RADIUS {
            let bytes = taps_with(0, max_halo).step_shared_bytes();
            for (kernel, &kernel_radius) in STEP_KERNEL_RADII.iter().enumerate() {
                let floats = bytes[kernel] as usize / size_of::<f32>();
                let stride = blur_row_stride(kernel_radius);
                let input_rows = TILE_H + 2 * max_halo.min(kernel_radius);
                let exact = kernel_radius < BLUR_MAX_RADIUS;
                let centre = kernel_radius;
                assert_eq!(centre % 4, 0);
                for halo in 0..=max_halo.min(kernel_radius) {
                    for r in 0..=halo {
                        let reach = if exact { r } else { kernel_radius };
                        for (tw, th) in TILE_SHAPES {
                            let case = format!(
                                "max halo {max_halo}, halo {halo}, r {r}, kernel \
                                 {kernel_radius}, {tw}x{th}"
                            );
                            let quads = (tw + centre + halo).div_ceil(4);
                            let input_end = (centre + tw + halo).max(4 * quads);
                            let vertical_end = (centre + tw + r).div_ceil(4) * 4;
                            let window_end = tw - 4 + 4 * ((centre + reach).div_ceil(4) + 1);
                            assert!(
                                input_end.max(vertical_end).max(window_end) <= stride,
                                "{case}"
                            );
                            assert!((input_rows + th) * stride <= floats, "{case}");
                        }
                    }
                }
            }
        }
    }

    /// Small octaves are cut into smaller tiles, down to one tile per SM where possible.
    #[test]
    fn small_octaves_get_a_tile_per_sm() {
        assert_eq!(tile_shape(1920, 1080, 132), (64, 32));
        assert_eq!(tile_shape(480, 270, 132), (32, 32));
        assert_eq!(tile_shape(240, 135, 132), (16, 16));
        assert_eq!(tile_shape(240, 135, 8), (64, 32));
        assert_eq!(tile_shape(15, 8, 132), (16, 8));
    }

    /// docs/memory.md's formula for the CUDA SIFT plan.
    fn documented(width: usize, height: usize, config: &SiftConfig) -> (usize, usize, usize) {
        let s = if config.upscale { 2 } else { 1 };
        let (mut w, mut h) = (width * s, height * s);
        let mut planes = 0;
        for o in 0..octave_count(width, height, config.upscale) {
            if o > 0 {
                if w < 2 || h < 2 {
                    break;
                }
                (w, h) = (w / 2, h / 2);
            }
            planes += w * h;
        }
        let layers = config.n_octave_layers as usize + 3;
        let k = (width * height / 32).max(4096);
        let c = (width * s * height * s / 4).max(k);
        let o = match config.max_features {
            0 => k,
            m => (m as usize).min(k),
        };
        (
            4 * (2 * layers - 1) * planes,
            width * height + 4 * (8 + 3 * c + 17 * k + o),
            width * height + 20 + 152 * o,
        )
    }

    #[test]
    fn plan_bytes_follow_the_documented_formula() {
        let limits = DeviceLimits {
            sms: 132,
            shared_per_block: 227 * 1024,
        };
        for (width, height, upscale, max_features) in [
            (1920, 1080, true, 0),
            (1920, 1080, false, 2000),
            (640, 480, true, 0),
            (4096, 3072, false, 0),
            (97, 61, true, 10),
        ] {
            let config = SiftConfig {
                upscale,
                max_features,
                ..SiftConfig::default()
            };
            let bytes = PlanBytes::new(&config, width, height, limits).unwrap();
            let (scale_space, work, staged) = documented(width, height, &config);
            let case = format!("{width}x{height} upscale={upscale} max_features={max_features}");
            assert_eq!(bytes.scale_space, scale_space, "{case}");
            assert_eq!(bytes.work, work, "{case}");
            assert_eq!(bytes.staged, staged, "{case}");
            assert!(bytes.tables < 64 * 1024, "{case}: {bytes:?}");
        }
        // 1080p upscaled, worked out in docs/memory.md.
        let bytes = PlanBytes::new(&SiftConfig::default(), 1920, 1080, limits).unwrap();
        assert_eq!(
            (bytes.scale_space, bytes.work, bytes.staged),
            (486_598_112, 31_622_432, 11_923_220)
        );
    }

    #[test]
    fn the_memory_check_counts_the_whole_plan_with_the_frame_slot_of_its_layout() {
        let limits = DeviceLimits {
            sms: 132,
            shared_per_block: 227 * 1024,
        };
        let (width, height) = (1920, 1080);
        let bytes = PlanBytes::new(&SiftConfig::default(), width, height, limits).unwrap();
        let total = bytes.scale_space + bytes.work + bytes.tables + bytes.staged;
        let layout = |encoding, step| FrameLayout::with_step(encoding, width, height, step);
        assert_eq!(bytes.needed(&layout(Encoding::Mono8, width)), total);
        // bgr8 rows padded to 5776 bytes: the upload holds every row but the last's padding.
        let bgr = layout(Encoding::Bgr8, 5776);
        assert_eq!(
            bytes.needed(&bgr),
            total - width * height + 5776 * (height - 1) + 3 * width
        );
    }
}
