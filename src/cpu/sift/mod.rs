//! Lowe's SIFT on the CPU with OpenCV's semantics (`cv::SIFT`, OpenCV 4.x), one stage
//! per file: [`pyramid`] (Gaussian + DoG scale space), [`extrema`] (26-neighbour test),
//! [`refine`] (quadratic fit, contrast and edge tests), [`orientation`] (36-bin
//! histogram), [`descriptor`] (4x4x8 histogram, u8). The scale space is made and searched
//! an octave and a band of rows at a time ([`pyramid::Octave::band`]), so that memory is
//! bounded by the frame's width rather than its area; results do not depend on the bands.
//!
//! Output conventions (OpenCV's): positions in input pixels with pixel centres at
//! integers; `size` = 2 x blur sigma in input pixels; `angle` in degrees `[0, 360)`,
//! clockwise on screen from the x axis (OpenCV's `360 - histogram angle`); `response`
//! = |interpolated DoG| on the 0..1 grey scale. Simplification: `octave` is the plain
//! octave index in input pixels (-1 for the upsampled octave), not OpenCV's packed
//! `octave | layer << 8 | sub-layer << 16`.
//!
//! Keypoints come out sorted by (x, y, size, angle) with exact duplicates removed, as
//! OpenCV's `removeDuplicatedSorted` leaves them; `max_features > 0` then keeps the
//! strongest by response (ties at the cut broken by that order, where OpenCV's
//! `retainBest` would keep every tie).

pub mod descriptor;
pub mod extrema;
pub mod fastmath;
mod footprint;
pub mod orientation;
pub mod pyramid;
pub mod refine;

use std::ops::Range;

use rayon::prelude::*;

use crate::config::SiftConfig;
use crate::error::{ConfigError, Error, ImageError, Result};
use crate::extractor::Extractor;
use crate::image::GrayImage;
use crate::types::{DescriptorKind, Descriptors, Features, Keypoints};

use crate::spec::scale_space::{octave_count, prefilter_threshold};
use extrema::Candidate;
use pyramid::{Band, Octave, ScaleSpace, Upscale};
use refine::{Extremum, RefineParams, Refinement};

/// Pixels of an octave processed at once (rows of the octave's width, plus margins): the
/// scale space held in memory grows with the frame's width, not its area (about 1.1 GB at
/// 8192 x 8192 upscaled, docs/memory.md), while a 4K frame's upscaled octave still fits
/// in one band.
pub const BAND_PIXELS: usize = 1 << 24;

/// Rows a refinement may wander from its band before it is finished in a band of its own.
const REFINE_DRIFT_ROWS: usize = 4;

/// A keypoint in the coordinates of the octave and Gaussian layer it was found in.
#[derive(Clone, Copy, Debug, PartialEq)]
struct OctaveKeypoint {
    /// Index into the scale space (0 = its first octave).
    octave: usize,
    layer: usize,
    x: f32,
    y: f32,
    /// Blur sigma in octave pixels.
    scale: f32,
    angle: f32,
    response: f32,
}

/// A described keypoint and where it came from: the candidate and which of its
/// orientations, so that ties sort as OpenCV's candidate order leaves them.
struct Found {
    origin: Candidate,
    orientation: usize,
    point: OctaveKeypoint,
    descriptor: [u8; descriptor::LENGTH],
}

/// A candidate whose next stage needs rows its band does not hold.
#[derive(Clone, Copy, Debug)]
enum Pending {
    Refining {
        origin: Candidate,
        at: Candidate,
        steps: usize,
    },
    Describing {
        origin: Candidate,
        extremum: Extremum,
    },
}

/// How an octave is cut into bands of rows.
#[derive(Clone, Copy, Debug)]
struct Banding {
    /// Pixels of a band's own rows.
    pixels: usize,
    /// Rows held beyond them on each side (at least 1, the extrema test's reach); `None`:
    /// [`SiftExtractor::margin_rows`], which few candidates leave.
    margin: Option<usize>,
}

/// SIFT detection and description on the CPU, an octave and a band of rows at a time
/// (rayon over rows and candidates).
pub struct SiftExtractor {
    config: SiftConfig,
}

impl SiftExtractor {
    pub fn new(config: SiftConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self { config })
    }

    fn upscale(&self) -> Upscale {
        Upscale::from_flags(self.config.upscale, self.config.precise_upscale)
    }

    fn n_layers(&self) -> usize {
        self.config.n_octave_layers as usize
    }

    fn refine_params(&self) -> RefineParams {
        RefineParams {
            n_layers: self.n_layers(),
            contrast_threshold: self.config.contrast_threshold as f32,
            edge_threshold: self.config.edge_threshold as f32,
            sigma: self.config.sigma as f32,
        }
    }

    /// Rows a band of a `width` x `height` octave holds beyond its own on each side: what
    /// a candidate on its edge reads to be refined (drifting a few rows), oriented and
    /// described at the largest scale.
    fn margin_rows(&self, width: usize, height: usize) -> usize {
        let n = self.n_layers() as f32;
        let largest_scale = self.config.sigma as f32 * 2f32.powf((n + 0.5) / n);
        let window = descriptor::rows_read(0.0, largest_scale, width, height).end;
        window + REFINE_DRIFT_ROWS
    }

    /// Rows of the Gaussian layer a refined extremum is oriented and described on.
    fn rows_to_describe(e: &Extremum, height: usize, width: usize) -> Range<usize> {
        let orientation = orientation::rows_read(e.row, e.scale, height);
        let descriptor = descriptor::rows_read(e.y, e.scale, width, height);
        orientation.start.min(descriptor.start)..orientation.end.max(descriptor.end)
    }

    fn rows_needed(pending: &Pending, octave: &Octave) -> Range<usize> {
        match pending {
            Pending::Refining { at, .. } => refine::rows_needed(at),
            Pending::Describing { extremum, .. } => {
                Self::rows_to_describe(extremum, octave.height, octave.width)
            }
        }
    }

    /// Takes `pending` as far as `band` allows: its keypoints, or what is left to do.
    fn advance(&self, band: &Band, pending: Pending) -> std::result::Result<Vec<Found>, Pending> {
        let (origin, extremum) = match pending {
            Pending::Refining { origin, at, steps } => {
                match refine::refine_from(&band.dog, at, steps, &self.refine_params()) {
                    Refinement::Rejected => return Ok(Vec::new()),
                    Refinement::Outside { at, steps } => {
                        return Err(Pending::Refining { origin, at, steps })
                    }
                    Refinement::Kept(extremum) => (origin, extremum),
                }
            }
            Pending::Describing { origin, extremum } => (origin, extremum),
        };
        let layer = &band.gaussian[extremum.layer];
        if !layer.holds(&Self::rows_to_describe(
            &extremum,
            layer.height,
            layer.width,
        )) {
            return Err(Pending::Describing { origin, extremum });
        }
        let angles = orientation::orientations(layer, extremum.col, extremum.row, extremum.scale);
        Ok(angles
            .into_iter()
            .enumerate()
            .map(|(orientation, angle)| {
                let point = OctaveKeypoint {
                    octave: extremum.octave,
                    layer: extremum.layer,
                    x: extremum.x,
                    y: extremum.y,
                    scale: extremum.scale,
                    angle,
                    response: extremum.response,
                };
                let mut descriptor = [0u8; descriptor::LENGTH];
                self.describe_point(layer, &point, &mut descriptor);
                Found {
                    origin,
                    orientation,
                    point,
                    descriptor,
                }
            })
            .collect())
    }

    fn describe_point(&self, layer: &pyramid::Plane, p: &OctaveKeypoint, out: &mut [u8]) {
        descriptor::describe(
            layer,
            p.x,
            p.y,
            p.angle,
            p.scale,
            self.config.root_sift,
            out,
        );
    }

    /// Advances every item of `work` on `band`, adding keypoints to `found` and returning
    /// what needs other rows.
    fn advance_all(&self, band: &Band, work: Vec<Pending>, found: &mut Vec<Found>) -> Vec<Pending> {
        let outcomes: Vec<_> = work
            .into_par_iter()
            .map(|pending| self.advance(band, pending))
            .collect();
        let mut left = Vec::new();
        for outcome in outcomes {
            match outcome {
                Ok(points) => found.extend(points),
                Err(pending) => left.push(pending),
            }
        }
        left
    }

    /// Every keypoint of `octave` (index `index`), described; fills `next_base`, layer 0
    /// of the next octave, on the way.
    fn octave_keypoints(
        &self,
        banding: Banding,
        octave: &Octave,
        index: usize,
        mut next_base: Option<&mut pyramid::Plane>,
        found: &mut Vec<Found>,
    ) {
        let n_layers = self.n_layers();
        let threshold = prefilter_threshold(self.config.contrast_threshold, n_layers);
        let margin = banding
            .margin
            .unwrap_or_else(|| self.margin_rows(octave.width, octave.height));
        let band_rows = (banding.pixels / octave.width.max(1)).max(1);
        let mut left = Vec::new();
        for start in (0..octave.height).step_by(band_rows) {
            let core = start..(start + band_rows).min(octave.height);
            let held = core.start.saturating_sub(margin)..(core.end + margin).min(octave.height);
            let band = octave.band(held);
            if let Some(base) = next_base.as_deref_mut() {
                pyramid::downsample_rows_into(&band.gaussian[n_layers], core.clone(), base);
            }
            let candidates = extrema::find_candidates(&band.dog, index, n_layers, core, threshold);
            let work = candidates
                .into_iter()
                .map(|c| Pending::Refining {
                    origin: c,
                    at: c,
                    steps: 0,
                })
                .collect();
            left.extend(self.advance_all(&band, work, found));
        }
        // Candidates that left their band: bands of their own, as few as their rows allow.
        // Each round finishes them or moves each a refinement step on, so this ends.
        while !left.is_empty() {
            left.sort_by_key(|p| Self::rows_needed(p, octave).start);
            let first = Self::rows_needed(&left[0], octave);
            let end = (first.start + band_rows + 2 * margin)
                .max(first.end)
                .min(octave.height);
            let split = left.partition_point(|p| Self::rows_needed(p, octave).start < end);
            let (inside, rest): (Vec<_>, Vec<_>) = left
                .drain(..split)
                .partition(|p| Self::rows_needed(p, octave).end <= end);
            left.extend(rest);
            let band = octave.band(first.start..end);
            left.extend(self.advance_all(&band, inside, found));
        }
    }

    /// Keypoints and descriptors of `image`.
    pub fn detect_and_describe(&self, image: &GrayImage) -> Features {
        let banding = Banding {
            pixels: BAND_PIXELS,
            margin: None,
        };
        self.detect_and_describe_in(banding, image)
    }

    fn detect_and_describe_in(&self, banding: Banding, image: &GrayImage) -> Features {
        let upscale = self.upscale();
        let first_octave = if upscale.is_on() { -1 } else { 0 };
        let n_octaves = octave_count(image.width(), image.height(), upscale.is_on());
        let mut found = Vec::new();
        let mut octave = Octave::first(image, self.config.sigma, self.n_layers(), upscale);
        for index in 0..n_octaves {
            // OpenCV stops early when an octave is too small to halve.
            let last = index + 1 == n_octaves || octave.width < 2 || octave.height < 2;
            let mut next_base = (!last).then(|| octave.next_base());
            self.octave_keypoints(banding, &octave, index, next_base.as_mut(), &mut found);
            match next_base {
                Some(base) => octave = octave.next(base),
                None => break,
            }
        }

        let factor = |p: &OctaveKeypoint| 2f32.powi(p.octave as i32 + first_octave);
        let key = |p: &OctaveKeypoint| {
            let f = factor(p);
            [p.x * f, p.y * f, 2.0 * p.scale * f, p.angle]
        };
        found.sort_by(|a, b| {
            key(&a.point)
                .iter()
                .zip(&key(&b.point))
                .map(|(u, v)| u.total_cmp(v))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| (a.origin, a.orientation).cmp(&(b.origin, b.orientation)))
        });
        found.dedup_by(|a, b| key(&a.point) == key(&b.point));
        let max = self.config.max_features as usize;
        if max > 0 && found.len() > max {
            found.sort_by(|a, b| b.point.response.total_cmp(&a.point.response));
            found.truncate(max);
        }

        let kind = DescriptorKind::Sift128U8;
        let mut keypoints = Keypoints::with_capacity(found.len());
        let mut data = Vec::with_capacity(found.len() * kind.bytes());
        for f in &found {
            let p = &f.point;
            let [x, y, size, angle] = key(p);
            keypoints.push(
                x,
                y,
                size,
                angle,
                p.response,
                p.octave as i32 + first_octave,
            );
            data.extend_from_slice(&f.descriptor);
        }
        Features {
            width: image.width(),
            height: image.height(),
            keypoints,
            descriptors: Descriptors { kind, data },
        }
    }

    /// Descriptors at given frames (`x`, `y`, `size`, `angle` of `frames`, OpenCV
    /// conventions), bypassing detection, like `cv::SIFT::compute` with keypoints whose
    /// octave is chosen from their size as OpenCV's tests do: octave
    /// `floor(log2(size / sigma) - 1)`, layer the nearest of that octave. Builds the whole
    /// scale space (memory grows with the frame, see docs/memory.md).
    pub fn describe_frames(&self, image: &GrayImage, frames: &Keypoints) -> Result<Descriptors> {
        let space = ScaleSpace::build(image, self.config.sigma, self.n_layers(), self.upscale());
        let n_layers = self.n_layers();
        let mut points = Vec::with_capacity(frames.len());
        for i in 0..frames.len() {
            let (x, y, size, angle) = (frames.x[i], frames.y[i], frames.size[i], frames.angle[i]);
            // Frames may sit partly off the image (their window is clipped), not far off.
            let (w, h) = (image.width() as f32, image.height() as f32);
            let valid = [x, y, size, angle].iter().all(|v| v.is_finite())
                && size > 0.0
                && size <= 2.0 * (w + h)
                && (-w..2.0 * w).contains(&x)
                && (-h..2.0 * h).contains(&y);
            if !valid {
                return Err(Error::Config(ConfigError::Invalid {
                    name: "frames".into(),
                    reason: format!(
                        "frame {i} (x {x}, y {y}, size {size}, angle {angle}) is not a finite \
                         frame with 0 < size <= 2 (width + height) near the {}x{} image",
                        image.width(),
                        image.height()
                    ),
                }));
            }
            if space.gaussian.is_empty() {
                return Err(Error::Image(ImageError::Invalid(format!(
                    "{}x{} is too small for a SIFT scale space",
                    image.width(),
                    image.height()
                ))));
            }
            let octave_layer = (size as f64 / self.config.sigma).log2() - 1.0;
            let mut octave = octave_layer.floor() as i32;
            let mut layer = ((octave_layer - octave as f64) * n_layers as f64).round() as usize;
            if octave < space.first_octave {
                octave = space.first_octave;
                layer = 0;
            }
            let last = space.first_octave + space.gaussian.len() as i32 - 1;
            if octave > last {
                octave = last;
                layer = n_layers + 2;
            }
            let factor = 2f32.powi(octave);
            points.push(OctaveKeypoint {
                octave: (octave - space.first_octave) as usize,
                layer,
                x: x / factor,
                y: y / factor,
                scale: size * 0.5 / factor,
                angle,
                response: 0.0,
            });
        }
        let kind = DescriptorKind::Sift128U8;
        let mut data = vec![0u8; points.len() * kind.bytes()];
        data.par_chunks_mut(kind.bytes())
            .zip(&points)
            .for_each(|(out, p)| self.describe_point(&space.gaussian[p.octave][p.layer], p, out));
        Ok(Descriptors { kind, data })
    }
}

impl Extractor for SiftExtractor {
    fn extract(&mut self, image: &GrayImage) -> Result<Features> {
        Ok(self.detect_and_describe(image))
    }

    fn backend_name(&self) -> &'static str {
        "cpu"
    }

    fn device_name(&self) -> String {
        format!("cpu ({} threads)", rayon::current_num_threads())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn box_image() -> GrayImage {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/box.pgm");
        GrayImage::open(&path).unwrap()
    }

    /// `image`'s features with `config`.
    fn sift(config: SiftConfig, image: &GrayImage) -> Features {
        SiftExtractor::new(config)
            .unwrap()
            .detect_and_describe(image)
    }

    #[test]
    fn max_features_keeps_the_strongest() {
        let image = box_image();
        let all = sift(SiftConfig::default(), &image);
        let limited = sift(
            SiftConfig {
                max_features: 100,
                ..SiftConfig::default()
            },
            &image,
        );
        assert_eq!(limited.len(), 100);
        assert_eq!(limited.descriptors.len(), 100);
        let mut responses = all.keypoints.response.clone();
        responses.sort_by(|a, b| b.total_cmp(a));
        let weakest_kept = limited
            .keypoints
            .response
            .iter()
            .copied()
            .fold(f32::MAX, f32::min);
        assert_eq!(weakest_kept, responses[99]);
    }

    #[test]
    fn outputs_follow_opencv_conventions() {
        let image = box_image();
        let f = sift(SiftConfig::default(), &image);
        let k = &f.keypoints;
        assert_eq!(f.descriptors.kind, DescriptorKind::Sift128U8);
        assert_eq!(f.descriptors.len(), k.len());
        for i in 0..k.len() {
            assert!((0.0..360.0).contains(&k.angle[i]), "angle {}", k.angle[i]);
            assert!(k.x[i] >= 0.0 && k.x[i] < image.width() as f32);
            assert!(k.y[i] >= 0.0 && k.y[i] < image.height() as f32);
            // Octave -1 holds sizes 2 * 1.6 * 2^(-1 + [1, 4)/3) at most.
            assert!(k.octave[i] >= -1);
            let octave_of_size = ((k.size[i] / 1.6).log2() - 1.0).floor() as i32;
            assert!(
                (octave_of_size - k.octave[i]).abs() <= 1,
                "size {} octave {}",
                k.size[i],
                k.octave[i]
            );
        }
        assert!(k.octave.contains(&-1), "the upscaled octave contributes");
    }

    #[test]
    fn bad_frames_are_errors_not_panics() {
        let image = box_image();
        let sift = SiftExtractor::new(SiftConfig::default()).unwrap();
        for (x, y, size) in [
            (f32::NAN, 5.0, 3.0),
            (5.0, 5.0, 0.0),
            (1e30, 5.0, 3.0),
            (5.0, 5.0, 1e9),
        ] {
            let mut frames = Keypoints::default();
            frames.push(x, y, size, 0.0, 0.0, 0);
            assert!(
                sift.describe_frames(&image, &frames).is_err(),
                "{x} {y} {size}"
            );
        }
    }

    #[test]
    fn thin_and_tiny_images_give_no_features() {
        for (w, h) in [(1, 1), (3, 2), (12, 9), (3, 400), (400, 3), (8, 300)] {
            // Texture, so that a tall thin image still has extrema candidates to test.
            let pixels = (0..w * h).map(|i| ((i * 37) % 251) as u8).collect();
            let image = GrayImage::new(w, h, pixels).unwrap();
            let f = sift(SiftConfig::default(), &image);
            assert!(f.is_empty());
        }
    }

    #[test]
    fn thin_bands_and_candidates_finished_outside_their_band_change_nothing() {
        let image = box_image();
        for upscale in [false, true] {
            let sift = SiftExtractor::new(SiftConfig {
                upscale,
                ..SiftConfig::default()
            })
            .unwrap();
            let whole = sift.detect_and_describe_in(
                Banding {
                    pixels: usize::MAX,
                    margin: None,
                },
                &image,
            );
            // Bands of 7 rows holding one more row each side: nearly every keypoint is
            // described in a band of its own, some refinements resume in one.
            let thin = sift.detect_and_describe_in(
                Banding {
                    pixels: 7 * image.width(),
                    margin: Some(1),
                },
                &image,
            );
            assert!(whole.len() > 150, "{}", whole.len());
            assert_eq!(thin.keypoints, whole.keypoints, "upscale {upscale}");
            assert_eq!(thin.descriptors, whole.descriptors, "upscale {upscale}");
        }
    }
}
