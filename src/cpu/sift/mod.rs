//! Lowe's SIFT on the CPU with OpenCV's semantics (`cv::SIFT`, OpenCV 4.x), one stage
//! per file: [`pyramid`] (Gaussian + DoG scale space), [`extrema`] (26-neighbour test),
//! [`refine`] (quadratic fit, contrast and edge tests), [`orientation`] (36-bin
//! histogram), [`descriptor`] (4x4x8 histogram, u8).
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
pub mod orientation;
pub mod pyramid;
pub mod refine;

use rayon::prelude::*;

use crate::config::SiftConfig;
use crate::error::{ConfigError, Error, ImageError, Result};
use crate::extractor::Extractor;
use crate::image::GrayImage;
use crate::types::{DescriptorKind, Descriptors, Features, Keypoints};

use pyramid::{ScaleSpace, Upscale};
use refine::RefineParams;

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

/// SIFT detection and description on the CPU (rayon over candidates and keypoints).
pub struct SiftExtractor {
    config: SiftConfig,
}

impl SiftExtractor {
    pub fn new(config: SiftConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self { config })
    }

    fn scale_space(&self, image: &GrayImage) -> ScaleSpace {
        ScaleSpace::build(
            image,
            self.config.sigma,
            self.config.n_octave_layers as usize,
            Upscale::from_flags(self.config.upscale, self.config.precise_upscale),
        )
    }

    fn detect(&self, space: &ScaleSpace) -> Vec<OctaveKeypoint> {
        let n_layers = self.config.n_octave_layers as usize;
        let threshold = extrema::prefilter_threshold(self.config.contrast_threshold, n_layers);
        let params = RefineParams {
            n_layers,
            contrast_threshold: self.config.contrast_threshold as f32,
            edge_threshold: self.config.edge_threshold as f32,
            sigma: self.config.sigma as f32,
        };
        let candidates = extrema::find_candidates(&space.dog, n_layers, threshold);
        candidates
            .par_iter()
            .flat_map_iter(|&candidate| {
                let refined = refine::refine(&space.dog[candidate.octave], candidate, &params);
                refined.into_iter().flat_map(|e| {
                    let layer = &space.gaussian[e.octave][e.layer];
                    orientation::orientations(layer, e.col, e.row, e.scale)
                        .into_iter()
                        .map(move |angle| OctaveKeypoint {
                            octave: e.octave,
                            layer: e.layer,
                            x: e.x,
                            y: e.y,
                            scale: e.scale,
                            angle,
                            response: e.response,
                        })
                })
            })
            .collect()
    }

    fn describe(&self, space: &ScaleSpace, points: &[OctaveKeypoint]) -> Descriptors {
        let kind = DescriptorKind::Sift128U8;
        let mut data = vec![0u8; points.len() * kind.bytes()];
        data.par_chunks_mut(kind.bytes())
            .zip(points)
            .for_each(|(out, p)| {
                let image = &space.gaussian[p.octave][p.layer];
                descriptor::describe(
                    image,
                    p.x,
                    p.y,
                    p.angle,
                    p.scale,
                    self.config.root_sift,
                    out,
                );
            });
        Descriptors { kind, data }
    }

    /// Descriptors at given frames (`x`, `y`, `size`, `angle` of `frames`, OpenCV
    /// conventions), bypassing detection, like `cv::SIFT::compute` with keypoints whose
    /// octave is chosen from their size as OpenCV's tests do: octave
    /// `floor(log2(size / sigma) - 1)`, layer the nearest of that octave.
    pub fn describe_frames(&self, image: &GrayImage, frames: &Keypoints) -> Result<Descriptors> {
        let space = self.scale_space(image);
        let n_layers = self.config.n_octave_layers as usize;
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
        Ok(self.describe(&space, &points))
    }

    /// Keypoints and descriptors of `image`.
    pub fn detect_and_describe(&self, image: &GrayImage) -> Features {
        let space = self.scale_space(image);
        let mut points = self.detect(&space);
        let factor = |p: &OctaveKeypoint| 2f32.powi(p.octave as i32 + space.first_octave);
        let key = |p: &OctaveKeypoint| {
            let f = factor(p);
            [p.x * f, p.y * f, 2.0 * p.scale * f, p.angle]
        };
        points.sort_by(|a, b| {
            key(a)
                .iter()
                .zip(&key(b))
                .map(|(u, v)| u.total_cmp(v))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        points.dedup_by(|a, b| key(a) == key(b));
        let max = self.config.max_features as usize;
        if max > 0 && points.len() > max {
            points.sort_by(|a, b| b.response.total_cmp(&a.response));
            points.truncate(max);
        }

        let mut keypoints = Keypoints::with_capacity(points.len());
        for p in &points {
            let [x, y, size, angle] = key(p);
            let octave = p.octave as i32 + space.first_octave;
            keypoints.push(x, y, size, angle, p.response, octave);
        }
        Features {
            width: image.width(),
            height: image.height(),
            keypoints,
            descriptors: self.describe(&space, &points),
        }
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

    #[test]
    fn max_features_keeps_the_strongest() {
        let image = box_image();
        let all = SiftExtractor::new(SiftConfig::default())
            .unwrap()
            .detect_and_describe(&image);
        let limited = SiftExtractor::new(SiftConfig {
            max_features: 100,
            ..SiftConfig::default()
        })
        .unwrap()
        .detect_and_describe(&image);
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
        let f = SiftExtractor::new(SiftConfig::default())
            .unwrap()
            .detect_and_describe(&image);
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
            let f = SiftExtractor::new(SiftConfig::default())
                .unwrap()
                .detect_and_describe(&image);
            assert!(f.is_empty());
        }
    }
}
