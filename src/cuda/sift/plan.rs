//! The scale-space geometry, blur schedule and buffers of one image size.
//!
//! Octave sizes, layer blurs and Gaussian taps come from the CPU reference's builders
//! (`cpu::sift::pyramid`), so both backends build the same scale space.

use std::mem::size_of;

use crate::config::SiftConfig;
use crate::cpu::sift::pyramid::{base_blur_sigma, gaussian_kernel, layer_sigmas, octave_count};
use crate::cuda::memory::{DeviceBuffer, Staged};
use crate::error::{Error, Result};
use cudarc::driver::CudaContext;
use std::sync::Arc;

/// `SIFT_MAX_OCTAVES` of kernels/common/sift_octaves.cuh.
pub const MAX_OCTAVES: usize = 32;
/// Widest Gaussian the blur kernel's shared tiles are sized for (radius in pixels).
pub const MAX_RADIUS: usize = 32;
/// `TILE_W` x `TILE_H` of kernels/sift/pyramid.cu: the largest blur tile.
pub const TILE_W: usize = 64;
pub const TILE_H: usize = 32;
/// Blur tiles from the largest down: an octave takes the first that gives it at least
/// one tile per SM, so a small octave's stage is not a few blocks waiting on memory.
const TILE_SHAPES: [(usize, usize); 5] = [(64, 32), (32, 32), (32, 16), (16, 16), (16, 8)];
/// `RESIDENT_MAX_RADIUS` of kernels/sift/pyramid.cu.
const RESIDENT_MAX_RADIUS: usize = 16;
/// Largest octave (pixels) left to the resident kernel: one SM makes it, so a larger
/// one is slower than its tiled stages (measured: 160x120 at 640x480, perf/RESULTS.md).
const RESIDENT_MAX_PIXELS: usize = 8192;
pub const DESCRIPTOR_BYTES: usize = 128;

/// Mirrors `SiftOctave` in kernels/common/sift_octaves.cuh.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct SiftOctave {
    pub width: i32,
    pub height: i32,
    pub gauss: i32,
    pub dog: i32,
    pub pixel_start: i32,
}

/// Mirrors `BlurJob` in kernels/sift/pyramid.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct BlurJob {
    source: i32,
    src_offset: i32,
    src_width: i32,
    src_height: i32,
    width: i32,
    height: i32,
    gauss_out: i32,
    dog_out: i32,
    taps: i32,
    radius: i32,
    tiles_x: i32,
    tile_start: i32,
    tile_w: i32,
    tile_h: i32,
}

const SOURCE_PLANE: i32 = 0;
const SOURCE_PLANE_HALVED: i32 = 1;
const SOURCE_FRAME: i32 = 2;
const SOURCE_FRAME_UPSAMPLED: i32 = 3;

/// One launch of the blur kernel: `n_jobs` jobs from `first_job` of the job table.
#[derive(Clone, Copy, Debug)]
pub struct BlurStage {
    pub first_job: usize,
    pub n_jobs: i32,
    pub tiles: u32,
    /// The widest of its jobs' kernels: picks the blur kernel's register window.
    pub max_radius: usize,
}

pub fn to_i32(value: usize, what: &str) -> Result<i32> {
    i32::try_from(value).map_err(|_| Error::InvalidImage(format!("{what} {value} is too large")))
}

/// The octaves made by one block in one launch (`sift_blur_dog_resident`).
#[derive(Clone, Copy, Debug)]
pub struct ResidentOctaves {
    pub first_job: usize,
    pub n_jobs: i32,
    /// Tiled stages that make its input; it runs beside the stages after them.
    pub after_stages: usize,
    /// One shared plane: the first job's level, rows padded to an odd stride.
    pub plane_floats: i32,
}

impl ResidentOctaves {
    /// The kernel's dynamic shared memory: input level, horizontal pass, output level.
    pub fn shared_bytes(&self) -> u32 {
        3 * self.plane_floats as u32 * size_of::<f32>() as u32
    }
}

/// What the device gives the blur: SMs the launches spread over, and the shared memory
/// one block may have (bounds the resident octaves).
#[derive(Clone, Copy, Debug)]
pub struct BlurDevice {
    pub sms: usize,
    pub shared_per_block: usize,
}

/// The Gaussian kernels of the pipeline: the base blur, then layers 1..n+3.
pub struct Taps {
    pub values: Vec<f32>,
    /// (first tap, radius) of the base blur and of each layer's blur.
    pub base: (usize, usize),
    pub layers: Vec<(usize, usize)>,
    pub max_radius: usize,
}

impl Taps {
    pub fn new(config: &SiftConfig) -> Result<Self> {
        let n = config.n_octave_layers as usize;
        let base_sigma = base_blur_sigma(config.sigma, config.upscale);
        let mut values = Vec::new();
        let mut add = |sigma: f64| {
            let kernel = gaussian_kernel(sigma);
            let entry = (values.len(), kernel.len() / 2);
            values.extend(kernel);
            entry
        };
        let base = add(base_sigma);
        let layers: Vec<_> = layer_sigmas(config.sigma, n)[1..]
            .iter()
            .map(|&s| add(s))
            .collect();
        let max_radius = layers.iter().chain([&base]).map(|t| t.1).max().unwrap_or(0);
        if max_radius > MAX_RADIUS {
            return Err(Error::InvalidParameter {
                name: "sift.sigma".into(),
                reason: format!(
                    "the CUDA backend blurs with radii up to {MAX_RADIUS} px; sigma {} with {n} \
                     layers per octave needs {max_radius}",
                    config.sigma
                ),
            });
        }
        Ok(Self {
            values,
            base,
            layers,
            max_radius,
        })
    }

    /// Dynamic shared memory of the blur kernel: the input tile with its halo and the
    /// horizontal pass's rows, both with rows padded to an odd stride.
    pub fn blur_shared_bytes(&self) -> u32 {
        let rows = TILE_H + 2 * self.max_radius;
        let stride = (TILE_W + 2 * self.max_radius) | 1;
        ((rows * stride + rows * (TILE_W + 1)) * size_of::<f32>()) as u32
    }
}

/// Tables and buffers of one image size.
pub struct Plan {
    pub width: usize,
    pub height: usize,
    pub octaves: Vec<SiftOctave>,
    pub stages: Vec<BlurStage>,
    pub resident: Option<ResidentOctaves>,
    pub total_pixels: i32,
    pub candidate_capacity: usize,
    pub keypoint_capacity: usize,
    /// Keypoints the frame can return: `max_features`, or `keypoint_capacity`.
    pub output_capacity: usize,
    pub octave_table: DeviceBuffer,
    pub jobs: DeviceBuffer,
    pub taps: DeviceBuffer,
    pub frame: Staged,
    pub pyramid: DeviceBuffer,
    /// candidates, extrema, keypoints, duplicates: zeroed each frame.
    pub counters: DeviceBuffer,
    pub candidates: [DeviceBuffer; 3],
    pub extrema: [DeviceBuffer; 7],
    pub keypoints: [DeviceBuffer; 6],
    /// less, equal_before, stronger: zeroed each frame.
    pub ranks: DeviceBuffer,
    pub duplicates: DeviceBuffer,
    pub position: DeviceBuffer,
    /// out_count and the four raw counters, written by `sift_place`.
    pub summary: Staged,
    /// x, y, size, angle, response (f32), octave (i32).
    pub outputs: [Staged; 6],
    pub out_octave_layer: DeviceBuffer,
    pub descriptors: Staged,
}

/// `SUMMARY_*`: the entries of [`Plan::summary`].
pub const SUMMARY_WORDS: usize = 5;

impl Plan {
    pub fn new(
        ctx: &Arc<CudaContext>,
        config: &SiftConfig,
        taps: &Taps,
        width: usize,
        height: usize,
        unified: bool,
        device: BlurDevice,
    ) -> Result<Self> {
        let n = config.n_octave_layers as usize;
        let scale = if config.upscale { 2 } else { 1 };
        let (base_w, base_h) = (width * scale, height * scale);
        let (octaves, floats, pixels) = octave_table(width, height, config)?;
        let source = FrameSource {
            width,
            height,
            upscale: config.upscale,
        };
        let (jobs, stages, resident) = blur_schedule(&octaves, taps, n, source, device)?;

        let input_pixels = width * height;
        let keypoint_capacity = (input_pixels / 32).max(4096);
        let candidate_capacity = (base_w * base_h / 4).max(keypoint_capacity);
        let output_capacity = match config.max_features {
            0 => keypoint_capacity,
            m => (m as usize).min(keypoint_capacity),
        };
        let buffer = |bytes: usize| DeviceBuffer::new(ctx, bytes);
        let words = |count: usize| buffer(count * 4);
        let staged = |bytes: usize| Staged::new(ctx, bytes, unified);
        let (cand, kp, out) = (candidate_capacity, keypoint_capacity, output_capacity);
        Ok(Self {
            width,
            height,
            stages,
            resident,
            total_pixels: to_i32(pixels, "scale space size")?,
            candidate_capacity,
            keypoint_capacity,
            output_capacity,
            octave_table: DeviceBuffer::from_slice(ctx, &octaves)?,
            octaves,
            jobs: DeviceBuffer::from_slice(ctx, &jobs)?,
            taps: DeviceBuffer::from_slice(ctx, &taps.values)?,
            frame: staged(input_pixels)?,
            pyramid: buffer(floats.max(1) * size_of::<f32>())?,
            counters: words(4)?,
            candidates: [words(cand)?, words(cand)?, words(cand)?],
            extrema: [
                words(kp)?,
                words(kp)?,
                words(kp)?,
                words(kp)?,
                words(kp)?,
                words(kp)?,
                words(kp)?,
            ],
            keypoints: [
                words(kp)?,
                words(kp)?,
                words(kp)?,
                words(kp)?,
                words(kp)?,
                words(kp)?,
            ],
            ranks: words(3 * kp)?,
            duplicates: words(kp)?,
            position: words(kp)?,
            summary: staged(SUMMARY_WORDS * 4)?,
            outputs: [
                staged(out * 4)?,
                staged(out * 4)?,
                staged(out * 4)?,
                staged(out * 4)?,
                staged(out * 4)?,
                staged(out * 4)?,
            ],
            out_octave_layer: words(out)?,
            descriptors: staged(out * DESCRIPTOR_BYTES)?,
        })
    }
}

/// The octaves of a `width` x `height` frame, with the float count of the scale space
/// (Gaussian levels, then DoG planes, per octave) and the pixel count of all octaves.
fn octave_table(
    width: usize,
    height: usize,
    config: &SiftConfig,
) -> Result<(Vec<SiftOctave>, usize, usize)> {
    let levels = config.n_octave_layers as usize + 3;
    let scale = if config.upscale { 2 } else { 1 };
    let (mut w, mut h) = (width * scale, height * scale);
    let mut octaves = Vec::new();
    let (mut floats, mut pixels) = (0usize, 0usize);
    for o in 0..octave_count(width, height, config.upscale).min(MAX_OCTAVES) {
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
            pixel_start: to_i32(pixels, "scale space size")?,
        });
        floats += (2 * levels - 1) * plane;
        pixels += plane;
    }
    to_i32(floats, "scale space size")?;
    to_i32(pixels, "scale space size")?;
    Ok((octaves, floats, pixels))
}

/// The frame the scale space starts from.
#[derive(Clone, Copy, Debug)]
pub struct FrameSource {
    pub width: usize,
    pub height: usize,
    pub upscale: bool,
}

/// One shared plane of the resident kernel for a level: rows padded to an odd stride.
fn resident_plane_floats(width: i32, height: i32) -> usize {
    (width as usize | 1) * height as usize
}

/// The first octave the resident kernel makes: the first small enough whose three shared
/// planes fit in one block (octaves only shrink), if every blur fits the kernel's window.
fn first_resident_octave(octaves: &[SiftOctave], taps: &Taps, device: BlurDevice) -> usize {
    if taps.max_radius > RESIDENT_MAX_RADIUS {
        return octaves.len();
    }
    octaves
        .iter()
        .position(|o| {
            (o.width * o.height) as usize <= RESIDENT_MAX_PIXELS
                && 3 * resident_plane_floats(o.width, o.height) * size_of::<f32>()
                    <= device.shared_per_block
        })
        .unwrap_or(octaves.len())
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

/// A job making a level of `octave` (its size, tile shape and kernel) from `source`.
fn level_job(octave: &SiftOctave, (tap, radius): (usize, usize), sms: usize) -> Result<BlurJob> {
    let (width, height) = (octave.width as usize, octave.height as usize);
    let (tile_w, tile_h) = tile_shape(width, height, sms);
    Ok(BlurJob {
        width: octave.width,
        height: octave.height,
        taps: to_i32(tap, "taps")?,
        radius: to_i32(radius, "taps")?,
        tiles_x: to_i32(width.div_ceil(tile_w), "tiles")?,
        tile_w: tile_w as i32,
        tile_h: tile_h as i32,
        ..BlurJob::default()
    })
}

impl BlurJob {
    fn tiles(&self) -> usize {
        (self.width as usize).div_ceil(self.tile_w as usize)
            * (self.height as usize).div_ceil(self.tile_h as usize)
    }
}

/// The blur jobs, their tiled launches and the resident octaves. Level `l` of octave
/// `o` can run once level `l - 1` exists, and level 1 of octave `o + 1` once level `n`
/// of octave `o` does: job (o, l) goes to stage `n o + l` (stage 0: the base image), so
/// the launches of consecutive octaves overlap. The octaves that fit in one block's
/// shared memory are left to the resident kernel, in level order, which starts once the
/// stage making its first input is done and runs beside the remaining stages (the last
/// tiled octave's levels `n + 1` and `n + 2`).
fn blur_schedule(
    octaves: &[SiftOctave],
    taps: &Taps,
    n: usize,
    frame: FrameSource,
    device: BlurDevice,
) -> Result<(Vec<BlurJob>, Vec<BlurStage>, Option<ResidentOctaves>)> {
    let levels = n + 3;
    let Some(first) = octaves.first() else {
        return Ok((Vec::new(), Vec::new(), None));
    };
    let resident_from = first_resident_octave(octaves, taps, device);
    let mut by_stage: Vec<Vec<BlurJob>> = Vec::new();
    let mut resident_jobs = Vec::new();
    let mut put = |octave: usize, stage: usize, job: BlurJob| {
        if octave >= resident_from {
            resident_jobs.push(job);
            return;
        }
        if by_stage.len() <= stage {
            by_stage.resize(stage + 1, Vec::new());
        }
        by_stage[stage].push(job);
    };
    put(
        0,
        0,
        BlurJob {
            source: if frame.upscale {
                SOURCE_FRAME_UPSAMPLED
            } else {
                SOURCE_FRAME
            },
            src_width: to_i32(frame.width, "width")?,
            src_height: to_i32(frame.height, "height")?,
            gauss_out: first.gauss,
            dog_out: -1,
            ..level_job(first, taps.base, device.sms)?
        },
    );
    for (o, oct) in octaves.iter().enumerate() {
        let plane = oct.width * oct.height;
        for level in 1..levels {
            let (source, src_offset, src_width, src_height) = if level == 1 && o > 0 {
                let previous = &octaves[o - 1];
                let prev_plane = previous.width * previous.height;
                (
                    SOURCE_PLANE_HALVED,
                    previous.gauss + n as i32 * prev_plane,
                    previous.width,
                    previous.height,
                )
            } else {
                (
                    SOURCE_PLANE,
                    oct.gauss + (level as i32 - 1) * plane,
                    oct.width,
                    oct.height,
                )
            };
            put(
                o,
                n * o + level,
                BlurJob {
                    source,
                    src_offset,
                    src_width,
                    src_height,
                    // The last level only feeds the last DoG.
                    gauss_out: if level + 1 < levels {
                        oct.gauss + level as i32 * plane
                    } else {
                        -1
                    },
                    dog_out: oct.dog + (level as i32 - 1) * plane,
                    ..level_job(oct, taps.layers[level - 1], device.sms)?
                },
            );
        }
    }
    let mut jobs = Vec::new();
    let mut stages = Vec::new();
    for stage_jobs in by_stage.into_iter().filter(|s| !s.is_empty()) {
        let first_job = jobs.len();
        let mut tiles = 0usize;
        let max_radius = stage_jobs
            .iter()
            .map(|j| j.radius as usize)
            .max()
            .unwrap_or(0);
        for mut job in stage_jobs {
            job.tile_start = to_i32(tiles, "tiles")?;
            tiles += job.tiles();
            jobs.push(job);
        }
        stages.push(BlurStage {
            first_job,
            n_jobs: to_i32(jobs.len() - first_job, "jobs")?,
            tiles: u32::try_from(tiles)
                .map_err(|_| Error::InvalidImage("too many tiles".into()))?,
            max_radius,
        });
    }
    let resident = match (octaves.get(resident_from), resident_jobs.first()) {
        (Some(octave), Some(head)) => {
            // The stage making the level the first resident job reads, if a stage does.
            let after_stages = stages
                .iter()
                .rposition(|stage| {
                    jobs[stage.first_job..stage.first_job + stage.n_jobs as usize]
                        .iter()
                        .any(|job| job.gauss_out >= 0 && job.gauss_out == head.src_offset)
                })
                .map_or(0, |s| s + 1);
            let first_job = jobs.len();
            jobs.extend(resident_jobs);
            Some(ResidentOctaves {
                first_job,
                n_jobs: to_i32(jobs.len() - first_job, "jobs")?,
                after_stages,
                plane_floats: to_i32(resident_plane_floats(octave.width, octave.height), "plane")?,
            })
        }
        _ => None,
    };
    Ok((jobs, stages, resident))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::sift::pyramid::{ScaleSpace, Upscale};
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
                let (octaves, _, _) = octave_table(w, h, &config).unwrap();
                let gpu: Vec<(i32, i32)> = octaves.iter().map(|o| (o.width, o.height)).collect();
                assert_eq!(gpu, cpu, "{w}x{h} upscale={upscale}");
            }
        }
    }

    /// Every level is made once, after the level it blurs; every DoG plane is written
    /// once; the resident octaves fit in the block and chain level after level.
    #[test]
    fn the_blur_schedule_respects_the_level_order() {
        let h200 = BlurDevice {
            sms: 132,
            shared_per_block: 227 * 1024,
        };
        let orin_8_sms = BlurDevice {
            sms: 8,
            shared_per_block: 163 * 1024,
        };
        let no_resident = BlurDevice {
            sms: 132,
            shared_per_block: 0,
        };
        for (device, width, height, upscale) in [
            (h200, 1920, 1080, true),
            (h200, 1920, 1080, false),
            (orin_8_sms, 1920, 1080, false),
            (no_resident, 1280, 960, false),
            (h200, 40, 30, true),
        ] {
            let case = format!("{width}x{height} upscale={upscale} {device:?}");
            let config = SiftConfig {
                upscale,
                ..SiftConfig::default()
            };
            let n = config.n_octave_layers as usize;
            let taps = Taps::new(&config).unwrap();
            let (octaves, _, _) = octave_table(width, height, &config).unwrap();
            let frame = FrameSource {
                width,
                height,
                upscale,
            };
            let (jobs, stages, resident) =
                blur_schedule(&octaves, &taps, n, frame, device).unwrap();
            // Level -> who made it: Ok(stage) or Err(resident job).
            let mut made_by: std::collections::HashMap<i32, std::result::Result<usize, usize>> =
                std::collections::HashMap::new();
            let mut dogs = std::collections::HashSet::new();
            let mut record = |made_by: &mut std::collections::HashMap<i32, _>,
                              job: &BlurJob,
                              by: std::result::Result<usize, usize>| {
                if job.gauss_out >= 0 {
                    assert!(made_by.insert(job.gauss_out, by).is_none(), "{case}");
                }
                if job.dog_out >= 0 {
                    assert!(dogs.insert(job.dog_out), "{case}");
                }
            };
            let reads_plane =
                |job: &BlurJob| job.source == SOURCE_PLANE || job.source == SOURCE_PLANE_HALVED;
            for (s, stage) in stages.iter().enumerate() {
                let stage_jobs = &jobs[stage.first_job..stage.first_job + stage.n_jobs as usize];
                for job in stage_jobs {
                    if reads_plane(job) {
                        let by = made_by.get(&job.src_offset).copied();
                        assert!(
                            by.is_some_and(|b| b.is_ok_and(|m| m < s)),
                            "{case}: stage {s} reads a level no earlier stage made"
                        );
                    }
                    assert!(job.radius as usize <= stage.max_radius, "{case}");
                    assert!(job.tile_w as usize <= TILE_W && job.tile_h as usize <= TILE_H);
                    assert!(job.tile_w % 4 == 0 && job.tile_h % 4 == 0, "{case}");
                    assert!((job.tile_w as u32).is_power_of_two(), "{case}");
                }
                for job in stage_jobs {
                    record(&mut made_by, job, Ok(s));
                }
                let tiles: usize = stage_jobs.iter().map(BlurJob::tiles).sum();
                assert_eq!(tiles, stage.tiles as usize, "{case}");
            }
            if let Some(resident) = resident {
                assert!(
                    resident.shared_bytes() as usize <= device.shared_per_block,
                    "{case}"
                );
                let resident_jobs =
                    &jobs[resident.first_job..resident.first_job + resident.n_jobs as usize];
                for (i, job) in resident_jobs.iter().enumerate() {
                    if reads_plane(job) {
                        let by = made_by.get(&job.src_offset).copied();
                        assert!(
                            by.is_some_and(|b| match b {
                                Ok(stage) => stage < resident.after_stages,
                                Err(earlier) => earlier < i,
                            }),
                            "{case}: resident job {i} reads a level not made before it"
                        );
                    }
                    // The kernel takes a plane source to be the level the job before made.
                    if i > 0 && job.source == SOURCE_PLANE {
                        assert_eq!(job.src_offset, resident_jobs[i - 1].gauss_out, "{case}");
                    }
                    assert!(
                        resident_plane_floats(job.width, job.height)
                            <= resident.plane_floats as usize,
                        "{case}"
                    );
                    record(&mut made_by, job, Err(i));
                }
            }
            assert_eq!(dogs.len(), octaves.len() * (n + 2), "{case}");
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
}
