//! OpenCV's feature invariance protocol (`modules/features2d/test/test_invariance_utils.hpp`,
//! `test_detectors_invariance.impl.hpp`, `test_descriptors_invariance.impl.hpp`), in f32
//! as OpenCV computes it.
//!
//! Two keypoints correspond when their circles (radius `size / 2`) overlap with an
//! intersection over union of at least 0.5.

use std::f32::consts::PI;

use orbsift::{Descriptors, Features, GrayImage, Keypoints, Match};

/// Keypoints correspond when their circles overlap at least this much (IoU).
pub const MIN_OVERLAP: f32 = 0.5;
/// A corresponding keypoint's angle is right when within this many degrees.
pub const MAX_ANGLE_DIFF: f32 = 15.0;
/// Corresponding keypoints have consistent sizes when `min > MIN_SIZE_RATIO * max`.
pub const MIN_SIZE_RATIO: f32 = 0.8;

/// Area of the intersection of two discs.
pub fn circles_intersection_area(p0: (f32, f32), r0: f32, p1: (f32, f32), r1: f32) -> f32 {
    let c = (p0.0 - p1.0).hypot(p0.1 - p1.1);
    if r0 + r1 <= c {
        return 0.0;
    }
    let (min_r, max_r) = (r0.min(r1), r0.max(r1));
    if c + min_r <= max_r {
        return PI * min_r * min_r;
    }
    // Clamped: rounding near tangency can push the cosines past 1, and acos to NaN.
    let half_a0 = ((r0 * r0 + c * c - r1 * r1) / (2.0 * r0 * c))
        .clamp(-1.0, 1.0)
        .acos();
    let half_a1 = ((r1 * r1 + c * c - r0 * r0) / (2.0 * r1 * c))
        .clamp(-1.0, 1.0)
        .acos();
    let (a0, a1) = (2.0 * half_a0, 2.0 * half_a1);
    0.5 * r0 * r0 * (a0 - a0.sin()) + 0.5 * r1 * r1 * (a1 - a1.sin())
}

/// Intersection over union of two discs.
pub fn intersect_ratio(p0: (f32, f32), r0: f32, p1: (f32, f32), r1: f32) -> f32 {
    let intersection = circles_intersection_area(p0, r0, p1, r1);
    intersection / (PI * (r0 * r0 + r1 * r1) - intersection)
}

/// A row-major 3x3 homography applied to a point (OpenCV's `perspectiveTransform`).
pub fn project(h: &[f64; 9], (x, y): (f32, f32)) -> (f32, f32) {
    let (x, y) = (x as f64, y as f64);
    let w = h[6] * x + h[7] * y + h[8];
    (
        ((h[0] * x + h[1] * y + h[2]) / w) as f32,
        ((h[3] * x + h[4] * y + h[5]) / w) as f32,
    )
}

/// Keypoint `i` as (centre, radius).
fn circle(k: &Keypoints, i: usize) -> ((f32, f32), f32) {
    ((k.x[i], k.y[i]), 0.5 * k.size[i])
}

/// For each keypoint of `from` (centre moved by `h`, size kept), the keypoint of `to`
/// whose circle overlaps it most, and that overlap (OpenCV's `matchKeyPoints`).
pub fn best_overlaps(from: &Keypoints, h: Option<&[f64; 9]>, to: &Keypoints) -> Vec<(usize, f32)> {
    (0..from.len())
        .map(|i| {
            let (centre, r0) = circle(from, i);
            let centre = h.map_or(centre, |h| project(h, centre));
            let mut best = (usize::MAX, 0.0f32);
            for j in 0..to.len() {
                let (c1, r1) = circle(to, j);
                let overlap = intersect_ratio(centre, r0, c1, r1);
                if overlap > best.1 {
                    best = (j, overlap);
                }
            }
            best
        })
        .collect()
}

/// Absolute difference of two angles in degrees, on the circle.
pub fn angle_difference(a: f32, b: f32) -> f32 {
    let d = (a - b).abs() % 360.0;
    d.min(360.0 - d)
}

/// `DetectorRotationInvariance`: how many keypoints of the original image reappear in
/// the image rotated by `angle` (through `h`), and how many of those have the right angle.
#[derive(Clone, Copy, Debug)]
pub struct RotationScore {
    /// Corresponding keypoints / keypoints of the original image.
    pub match_ratio: f32,
    /// Corresponding keypoints with the angle right within 15 degrees / corresponding keypoints.
    pub angle_inlier_ratio: f32,
}

pub fn detector_rotation(
    original: &Keypoints,
    rotated: &Keypoints,
    h: &[f64; 9],
    angle: f32,
) -> RotationScore {
    let mut matched = 0usize;
    let mut angle_inliers = 0usize;
    for (i, (j, overlap)) in best_overlaps(original, Some(h), rotated)
        .into_iter()
        .enumerate()
    {
        if overlap < MIN_OVERLAP {
            continue;
        }
        matched += 1;
        if angle_difference(original.angle[i] + angle, rotated.angle[j]) < MAX_ANGLE_DIFF {
            angle_inliers += 1;
        }
    }
    RotationScore {
        match_ratio: matched as f32 / original.len() as f32,
        angle_inlier_ratio: ratio_or_zero(angle_inliers, matched),
    }
}

/// `DetectorScaleInvariance`: how many keypoints of the image shrunk by `scale` are
/// found in the original, and how many of those have a consistent size.
#[derive(Clone, Copy, Debug)]
pub struct ScaleScore {
    /// Corresponding keypoints / keypoints of the shrunk image.
    pub match_ratio: f32,
    /// Corresponding keypoints with sizes within 0.8 of each other / corresponding keypoints.
    pub size_inlier_ratio: f32,
}

pub fn detector_scale(original: &Keypoints, shrunk: &Keypoints, scale: f32) -> ScaleScore {
    let enlarged = scaled(shrunk, scale);
    let mut matched = 0usize;
    let mut size_inliers = 0usize;
    for (i, (j, overlap)) in best_overlaps(&enlarged, None, original)
        .into_iter()
        .enumerate()
    {
        if overlap < MIN_OVERLAP {
            continue;
        }
        matched += 1;
        let (a, b) = (original.size[j], enlarged.size[i]);
        if a.min(b) > MIN_SIZE_RATIO * a.max(b) {
            size_inliers += 1;
        }
    }
    ScaleScore {
        match_ratio: matched as f32 / shrunk.len() as f32,
        size_inlier_ratio: ratio_or_zero(size_inliers, matched),
    }
}

/// `DescriptorRotationInvariance`: `matches` pair each keypoint described in the original
/// image with its nearest descriptor among the same keypoints `moved` into the rotated
/// image; a match is right when the two moved keypoints overlap. Returns right matches
/// / `n_original`.
pub fn descriptor_rotation(moved: &Keypoints, matches: &[Match], n_original: usize) -> f32 {
    let right = matches
        .iter()
        .filter(|m| {
            let (p0, r0) = circle(moved, m.query as usize);
            let (p1, r1) = circle(moved, m.train as usize);
            intersect_ratio(p0, r0, p1, r1) >= MIN_OVERLAP
        })
        .count();
    right as f32 / n_original as f32
}

/// Keypoints with positions and sizes multiplied by `scale` (OpenCV's `scaleKeyPoints`).
pub fn scaled(k: &Keypoints, scale: f32) -> Keypoints {
    let mut out = k.clone();
    out.x.iter_mut().for_each(|v| *v *= scale);
    out.y.iter_mut().for_each(|v| *v *= scale);
    out.size.iter_mut().for_each(|v| *v *= scale);
    out
}

/// Keypoints moved by the rotation `h` with `angle` degrees added (OpenCV's `rotateKeyPoints`).
pub fn rotated(k: &Keypoints, h: &[f64; 9], angle: f32) -> Keypoints {
    let mut out = k.clone();
    for i in 0..k.len() {
        (out.x[i], out.y[i]) = project(h, (k.x[i], k.y[i]));
        let a = k.angle[i] + angle;
        out.angle[i] = if a >= 360.0 { a - 360.0 } else { a };
    }
    out
}

/// Indexes of the keypoints whose pixel is set in `mask` (OpenCV's `runByPixelsMask`).
pub fn inside_mask(k: &Keypoints, mask: &GrayImage) -> Vec<usize> {
    (0..k.len())
        .filter(|&i| {
            let (x, y) = ((k.x[i] + 0.5) as usize, (k.y[i] + 0.5) as usize);
            x < mask.width() && y < mask.height() && mask.get(x, y) != 0
        })
        .collect()
}

/// The features at `indexes`, in that order.
pub fn subset(f: &Features, indexes: &[usize]) -> Features {
    let k = &f.keypoints;
    let mut keypoints = Keypoints::with_capacity(indexes.len());
    let mut descriptors = Descriptors::new(f.descriptors.kind);
    for &i in indexes {
        keypoints.push(
            k.x[i],
            k.y[i],
            k.size[i],
            k.angle[i],
            k.response[i],
            k.octave[i],
        );
        descriptors.data.extend_from_slice(f.descriptors.get(i));
    }
    Features {
        width: f.width,
        height: f.height,
        keypoints,
        descriptors,
    }
}

fn ratio_or_zero(part: usize, whole: usize) -> f32 {
    if whole == 0 {
        0.0
    } else {
        part as f32 / whole as f32
    }
}
