//! The CPU reference ORB extractor: docs/orb-reference.md, stage by stage.
//!
//! Buffers live in the extractor and are reused while frames keep their size.
//! The pyramid is built level after level (each level is resized from the one
//! before); as soon as a level exists, its detection and description run as a
//! rayon task beside the resizing of the next one.

use crate::config::{Distribution, OrbConfig, OrbScore};
use crate::error::{Error, FeaturesError, Result};
use crate::extractor::Extractor;
use crate::image::GrayImage;
use crate::types::{DescriptorKind, Descriptors, Features, Keypoints};

use super::blur::{blur_tiles, BlurTiles};
use super::brief::{describe, steering, DESCRIPTOR_BYTES};
use super::candidates::{apply_cell_thresholds, apply_threshold, local_maxima, Candidate};
use super::fast::score_map;
use super::harris::harris_key;
use super::orientation::intensity_centroid;
use super::pyramid::Resizer;
use super::select::{by_key, by_score, keep_best_fast_scores, keep_first, keep_grid};
use crate::spec::brief_pattern::PATTERN_REACH;
use crate::spec::grid::{DetectionArea, Grid};
use crate::spec::harris::harris_response;
use crate::spec::orientation::angle_degrees;
use crate::spec::pyramid::{level_geometry, LevelGeometry};
use crate::spec::quotas::level_quotas;
use multiversion::multiversion;

/// A keypoint of one level, in level pixels, before scaling to the input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LevelKeypoint {
    pub x: u32,
    pub y: u32,
    pub angle: f32,
    pub response: f32,
}

/// One level's buffers and results, kept between frames of one size.
struct LevelWork {
    index: usize,
    geometry: LevelGeometry,
    quota: usize,
    area: Option<DetectionArea>,
    grid: Option<Grid>,
    scores: Vec<u8>,
    smoothed: Vec<u8>,
    /// The tiles of `smoothed` that hold the smoothed level: those rBRIEF reads.
    smoothed_tiles: BlurTiles,
    blur_rows: Vec<u16>,
    candidates: Vec<Candidate>,
    cell_strong: Vec<bool>,
    keypoints: Vec<LevelKeypoint>,
    descriptors: Vec<u8>,
}

struct Level {
    /// The level's pixels; empty for level 0, which is the input itself.
    image: Vec<u8>,
    /// Resizes the previous level into this one (level 0 has none).
    resizer: Option<Resizer>,
    work: LevelWork,
}

/// What one level holds after [`OrbExtractor::extract`], for stage-by-stage
/// comparisons with another backend.
pub struct LevelView<'a> {
    pub geometry: LevelGeometry,
    /// The level's pixels (`None` for level 0: the input image).
    pub image: Option<&'a [u8]>,
    /// FAST scores at [`score_map_threshold`], one per pixel.
    pub scores: &'a [u8],
    /// The smoothed level (`None` when the level has no keypoint: it is not
    /// smoothed), valid on the tiles that `smoothed_tiles` covers: those within
    /// reach of a keypoint's rBRIEF pattern.
    pub smoothed: Option<&'a [u8]>,
    pub smoothed_tiles: &'a BlurTiles,
    pub keypoints: &'a [LevelKeypoint],
    /// `DESCRIPTOR_BYTES` per keypoint.
    pub descriptors: &'a [u8],
}

/// ORB on the CPU, exactly as docs/orb-reference.md specifies.
pub struct OrbExtractor {
    config: OrbConfig,
    size: Option<(usize, usize)>,
    levels: Vec<Level>,
}

impl OrbExtractor {
    pub fn new(config: OrbConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self {
            config,
            size: None,
            levels: Vec::new(),
        })
    }

    pub fn config(&self) -> &OrbConfig {
        &self.config
    }

    /// Sizes every buffer for `width x height`; nothing happens for the same size.
    fn prepare(&mut self, width: usize, height: usize) {
        if self.size == Some((width, height)) {
            return;
        }
        let c = &self.config;
        let geometry = level_geometry(width, height, c.n_levels, c.scale_factor);
        let quotas = level_quotas(c.n_features, c.n_levels, c.scale_factor);
        let edge = c.edge_threshold as usize;
        self.levels = geometry
            .iter()
            .zip(quotas)
            .enumerate()
            .map(|(l, (&g, quota))| {
                let area = DetectionArea::new(g.width, g.height, edge);
                let resizer = (l > 0).then(|| {
                    let previous = geometry[l - 1];
                    Resizer::new(previous.width, previous.height, g.width, g.height)
                });
                Level {
                    image: vec![0; if l == 0 { 0 } else { g.width * g.height }],
                    resizer,
                    work: LevelWork {
                        index: l,
                        geometry: g,
                        quota,
                        area,
                        grid: match c.distribution {
                            Distribution::Grid => {
                                area.map(|a| Grid::new(a, c.grid_cell_size as usize))
                            }
                            Distribution::TopResponse => None,
                        },
                        scores: vec![0; g.width * g.height],
                        smoothed: Vec::new(),
                        smoothed_tiles: BlurTiles::default(),
                        blur_rows: Vec::new(),
                        candidates: Vec::new(),
                        cell_strong: Vec::new(),
                        keypoints: Vec::new(),
                        descriptors: Vec::new(),
                    },
                }
            })
            .collect();
        self.size = Some((width, height));
    }

    /// Builds the pyramid of `input` and runs `per_level(level pixels, work)` on
    /// each level as a rayon task, as soon as that level exists.
    fn for_each_level<F>(&mut self, input: &[u8], per_level: F)
    where
        F: Fn(&[u8], &mut LevelWork) + Sync,
    {
        let per_level = &per_level;
        rayon::scope(|scope| {
            let mut previous: (&[u8], usize) = (input, 0);
            for level in self.levels.iter_mut() {
                let Level {
                    image,
                    resizer,
                    work,
                } = level;
                let pixels: &[u8] = match resizer {
                    Some(resizer) => {
                        resizer.resize(previous.0, previous.1, image);
                        image
                    }
                    None => input,
                };
                previous = (pixels, work.geometry.width);
                scope.spawn(move |_| per_level(pixels, work));
            }
        });
    }

    /// Stage results of level `l` after the last [`Extractor::extract`].
    pub fn level(&self, l: usize) -> Option<LevelView<'_>> {
        self.levels.get(l).map(|level| LevelView {
            geometry: level.work.geometry,
            image: level.resizer.as_ref().map(|_| &level.image[..]),
            scores: &level.work.scores,
            smoothed: (!level.work.keypoints.is_empty()).then_some(&level.work.smoothed[..]),
            smoothed_tiles: &level.work.smoothed_tiles,
            keypoints: &level.work.keypoints,
            descriptors: &level.work.descriptors,
        })
    }

    /// Descriptors at given keypoints (`octave` = level, `x`, `y` in input pixels,
    /// `angle` in degrees): the level position is `round_half_even(x / scale)`, and
    /// the steering is `(cos, sin)` of the angle in f64. Used to compare with
    /// OpenCV's descriptors at OpenCV's own keypoints.
    pub fn describe_at(&mut self, image: &GrayImage, keypoints: &Keypoints) -> Result<Descriptors> {
        self.prepare(image.width(), image.height());
        let n_levels = self.levels.len();
        let mut placed = Vec::with_capacity(keypoints.len());
        for i in 0..keypoints.len() {
            let invalid = |reason: String| {
                Error::Features(FeaturesError::InvalidKeypoint { index: i, reason })
            };
            let octave = keypoints.octave[i];
            let level = usize::try_from(octave)
                .ok()
                .filter(|&l| l < n_levels)
                .ok_or_else(|| invalid(format!("octave {octave} is not a level 0..{n_levels}")))?;
            let g = self.levels[level].work.geometry;
            let (x, y, angle) = (keypoints.x[i], keypoints.y[i], keypoints.angle[i]);
            let to_level = |v: f32, side: usize| {
                let p = (f64::from(v) / g.scale).round_ties_even();
                (p >= PATTERN_REACH as f64 && p + (PATTERN_REACH as f64) < side as f64)
                    .then_some(p as usize)
            };
            let (Some(lx), Some(ly)) = (to_level(x, g.width), to_level(y, g.height)) else {
                return Err(invalid(format!(
                    "({x}, {y}) on level {level} ({}x{}) is not {PATTERN_REACH} pixels inside the level",
                    g.width, g.height
                )));
            };
            if !angle.is_finite() {
                return Err(invalid(format!("angle {angle} is not finite")));
            }
            let radians = f64::from(angle).to_radians();
            placed.push((level, lx, ly, (radians.cos(), radians.sin())));
        }
        let placed = &placed;
        self.for_each_level(image.data(), |pixels, work| {
            let index = work.index;
            let here = placed.iter().filter(|p| p.0 == index);
            work.smooth_around(pixels, here.map(|&(_, x, y, _)| (x, y)));
        });
        let mut data = vec![0u8; keypoints.len() * DESCRIPTOR_BYTES];
        for (out, &(level, x, y, steer)) in data.chunks_exact_mut(DESCRIPTOR_BYTES).zip(placed) {
            let work = &self.levels[level].work;
            out.copy_from_slice(&describe(&work.smoothed, work.geometry.width, x, y, steer));
        }
        Ok(Descriptors {
            kind: DescriptorKind::Orb256,
            data,
        })
    }
}

/// The threshold the score map is built with: only the grid's retry looks below
/// `fast_threshold` (docs/orb-reference.md §2).
pub fn score_map_threshold(config: &OrbConfig) -> u8 {
    match config.distribution {
        Distribution::Grid => config.min_fast_threshold as u8,
        Distribution::TopResponse => config.fast_threshold as u8,
    }
}

impl LevelWork {
    /// Smooths the tiles that rBRIEF reads around `keypoints` (level positions).
    fn smooth_around(&mut self, pixels: &[u8], keypoints: impl Iterator<Item = (usize, usize)>) {
        let (width, height) = (self.geometry.width, self.geometry.height);
        self.smoothed_tiles.clear(width, height);
        for (x, y) in keypoints {
            self.smoothed_tiles.mark_around(x, y, PATTERN_REACH);
        }
        self.smoothed.resize(pixels.len(), 0);
        blur_tiles(
            pixels,
            width,
            &self.smoothed_tiles,
            &mut self.smoothed,
            &mut self.blur_rows,
        );
    }

    /// Detection and description of one level (docs/orb-reference.md §2-§7).
    fn detect_and_describe(&mut self, pixels: &[u8], config: &OrbConfig) {
        self.keypoints.clear();
        self.descriptors.clear();
        let Some(area) = self.area else {
            return;
        };
        let width = self.geometry.width;
        let fast_threshold = config.fast_threshold as u8;
        score_map(pixels, width, score_map_threshold(config), &mut self.scores);
        local_maxima(&self.scores, width, &area, &mut self.candidates);
        let candidates = &mut self.candidates;
        let rank_by_harris = config.score == OrbScore::Harris;
        match &self.grid {
            None => {
                apply_threshold(candidates, fast_threshold);
                if rank_by_harris {
                    keep_best_fast_scores(candidates, self.quota);
                    harris_keys(candidates, pixels, width);
                    keep_first(candidates, self.quota, by_key);
                } else {
                    keep_first(candidates, self.quota, by_score);
                }
            }
            Some(grid) => {
                apply_cell_thresholds(candidates, grid, fast_threshold, &mut self.cell_strong);
                keep_best_fast_scores(candidates, self.quota);
                if rank_by_harris {
                    harris_keys(candidates, pixels, width);
                }
                keep_grid(candidates, self.quota);
            }
        }
        if candidates.is_empty() {
            return;
        }
        // Taken out for the call, which borrows the rest of `self` mutably.
        let selected = std::mem::take(&mut self.candidates);
        self.smooth_around(
            pixels,
            selected.iter().map(|c| (c.x as usize, c.y as usize)),
        );
        self.candidates = selected;
        describe_candidates(
            &self.candidates,
            pixels,
            &self.smoothed,
            width,
            rank_by_harris,
            &mut self.keypoints,
            &mut self.descriptors,
        );
    }
}

/// Sets each candidate's ranking key to its Harris key.
#[multiversion(targets("x86_64+avx2"))]
fn harris_keys(candidates: &mut [Candidate], pixels: &[u8], width: usize) {
    for c in candidates {
        c.key = harris_key(pixels, width, c.x as usize, c.y as usize);
    }
}

/// Orientation, response and descriptor of each selected candidate (§4, §6, §7).
#[multiversion(targets("x86_64+avx2"))]
fn describe_candidates(
    candidates: &[Candidate],
    pixels: &[u8],
    smoothed: &[u8],
    width: usize,
    rank_by_harris: bool,
    keypoints: &mut Vec<LevelKeypoint>,
    descriptors: &mut Vec<u8>,
) {
    for c in candidates {
        let (x, y) = (c.x as usize, c.y as usize);
        let (m10, m01) = intensity_centroid(pixels, width, x, y);
        let response = if rank_by_harris {
            harris_response(c.key)
        } else {
            f32::from(c.score)
        };
        keypoints.push(LevelKeypoint {
            x: c.x,
            y: c.y,
            angle: angle_degrees(m10, m01),
            response,
        });
        let descriptor = describe(smoothed, width, x, y, steering(m10, m01));
        descriptors.extend_from_slice(&descriptor);
    }
}

impl Extractor for OrbExtractor {
    fn extract(&mut self, image: &GrayImage) -> Result<Features> {
        self.prepare(image.width(), image.height());
        let config = self.config.clone();
        self.for_each_level(image.data(), |pixels, work| {
            work.detect_and_describe(pixels, &config)
        });
        let total: usize = self.levels.iter().map(|l| l.work.keypoints.len()).sum();
        let mut keypoints = Keypoints::with_capacity(total);
        let mut descriptors = Vec::with_capacity(total * DESCRIPTOR_BYTES);
        let patch_size = config.patch_size as f32;
        for (octave, level) in self.levels.iter().enumerate() {
            let work = &level.work;
            let scale = work.geometry.scale as f32;
            for k in &work.keypoints {
                keypoints.push(
                    k.x as f32 * scale,
                    k.y as f32 * scale,
                    patch_size * scale,
                    k.angle,
                    k.response,
                    octave as i32,
                );
            }
            descriptors.extend_from_slice(&work.descriptors);
        }
        Ok(Features {
            width: image.width(),
            height: image.height(),
            keypoints,
            descriptors: Descriptors {
                kind: DescriptorKind::Orb256,
                data: descriptors,
            },
        })
    }

    fn backend_name(&self) -> &'static str {
        "cpu"
    }

    fn device_name(&self) -> String {
        format!("cpu ({} threads)", rayon::current_num_threads())
    }
}
