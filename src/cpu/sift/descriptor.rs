//! The 4x4x8 SIFT descriptor as OpenCV computes it: gradients of the keypoint's Gaussian
//! layer in a rotated square window, Gaussian weighted (std = half the window), spread
//! over (row, col, orientation) bins by trilinear interpolation; then clamp at 0.2 of the
//! norm, renormalise and quantise as `saturate(512 v / |v|)`.
//!
//! Layout: index `(row_bin * 4 + col_bin) * 8 + orientation_bin`, rows along the
//! keypoint's rotated y axis, orientation bins counter-clockwise (y up) from the
//! keypoint's direction — OpenCV's layout, so descriptors compare with OpenCV's.

use std::ops::Range;

use super::fastmath::atan2_degrees;
use super::pyramid::Plane;
pub use crate::spec::sift_descriptor::LENGTH;
use crate::spec::sift_descriptor::{ORIENTATION_BINS, SPATIAL_BINS};

/// Width of one spatial bin, in keypoint scales.
const BIN_WIDTH_FACTOR: f32 = 3.0;
/// Clamp relative to the norm (illumination robustness).
const MAGNITUDE_CLAMP: f32 = 0.2;
/// Scale of the final u8 quantisation.
const QUANTISATION: f32 = 512.0;

/// Half the side of the square window sampled for `scale` in a `width` x `height` image.
fn window_radius(scale: f32, width: usize, height: usize) -> i64 {
    let bin_width = BIN_WIDTH_FACTOR * scale;
    let radius = (bin_width * std::f32::consts::SQRT_2 * (SPATIAL_BINS as f32 + 1.0) * 0.5)
        .round_ties_even();
    let diagonal = ((width * width + height * height) as f64).sqrt();
    (radius as i64).min(diagonal as i64)
}

/// The rows of a `width` x `height` image that [`histogram`] reads at `y` for `scale`.
pub fn rows_read(y: f32, scale: f32, width: usize, height: usize) -> Range<usize> {
    let reach = window_radius(scale, width, height) + 1;
    let centre = y.round_ties_even() as i64;
    let first = (centre - reach).clamp(0, height as i64) as usize;
    let end = (centre + reach + 1).clamp(0, height as i64) as usize;
    first..end.max(first)
}

/// The unnormalised 128-bin histogram of the keypoint at sub-pixel (`x`, `y`) of `image`
/// with blur `scale` (octave pixels) and OpenCV angle `angle` (degrees, clockwise on screen).
pub fn histogram(image: &Plane, x: f32, y: f32, angle: f32, scale: f32) -> [f32; LENGTH] {
    const D: usize = SPATIAL_BINS;
    const N: usize = ORIENTATION_BINS;
    // The histogram works with y up: OpenCV's keypoint angle is mirrored back.
    let ori = {
        let a = 360.0 - angle;
        if (a - 360.0).abs() < f32::EPSILON {
            0.0
        } else {
            a
        }
    };
    let (px, py) = (x.round_ties_even() as i64, y.round_ties_even() as i64);
    let bin_width = BIN_WIDTH_FACTOR * scale;
    let radius = window_radius(scale, image.width, image.height);
    let cos_t = ori.to_radians().cos() / bin_width;
    let sin_t = ori.to_radians().sin() / bin_width;
    let exp_scale = -1.0 / (D as f32 * D as f32 * 0.5);
    let bins_per_degree = N as f32 / 360.0;
    let (w, h) = (image.width as i64, image.height as i64);

    // (D+2) x (D+2) x (N+2) so interpolation never needs a bounds check.
    let mut hist = [0f32; (D + 2) * (D + 2) * (N + 2)];
    for i in -radius..=radius {
        for j in -radius..=radius {
            let (fi, fj) = (i as f32, j as f32);
            let c_rot = fj * cos_t - fi * sin_t;
            let r_rot = fj * sin_t + fi * cos_t;
            // Bin centres at .5 so a sample at a bin's centre goes wholly to that bin.
            let rbin = r_rot + (D / 2) as f32 - 0.5;
            let cbin = c_rot + (D / 2) as f32 - 0.5;
            let (r, c) = (py + i, px + j);
            if !(rbin > -1.0 && rbin < D as f32 && cbin > -1.0 && cbin < D as f32) {
                continue;
            }
            if !(r > 0 && r < h - 1 && c > 0 && c < w - 1) {
                continue;
            }
            let (r, c) = (r as usize, c as usize);
            let dx = image.at(c + 1, r) - image.at(c - 1, r);
            let dy = image.at(c, r - 1) - image.at(c, r + 1);
            let weight = ((c_rot * c_rot + r_rot * r_rot) * exp_scale).exp();
            let magnitude = (dx * dx + dy * dy).sqrt() * weight;
            let gradient_angle = atan2_degrees(dy, dx);
            let obin = (gradient_angle - ori) * bins_per_degree;

            let (r0, c0, o0) = (floor(rbin), floor(cbin), floor(obin));
            let (fr, fc, fo) = (rbin - r0, cbin - c0, obin - o0);
            let o0 = (o0 as i64).rem_euclid(N as i64) as usize;
            let base =
                (((r0 as i64 + 1) as usize * (D + 2) + (c0 as i64 + 1) as usize) * (N + 2)) + o0;
            for (dr, wr) in [(0, 1.0 - fr), (1, fr)] {
                for (dc, wc) in [(0, 1.0 - fc), (1, fc)] {
                    for (dor, wo) in [(0, 1.0 - fo), (1, fo)] {
                        hist[base + (dr * (D + 2) + dc) * (N + 2) + dor] +=
                            magnitude * wr * wc * wo;
                    }
                }
            }
        }
    }

    // Orientation is circular: fold the two wrap bins back.
    let mut out = [0f32; LENGTH];
    for i in 0..D {
        for j in 0..D {
            let idx = ((i + 1) * (D + 2) + (j + 1)) * (N + 2);
            hist[idx] += hist[idx + N];
            hist[idx + 1] += hist[idx + N + 1];
            out[(i * D + j) * N..(i * D + j + 1) * N].copy_from_slice(&hist[idx..idx + N]);
        }
    }
    out
}

/// `v.floor()` without the libm call that baseline x86-64 (no SSE4.1) makes of it.
#[inline]
fn floor(v: f32) -> f32 {
    let t = v as i32 as f32;
    if t > v {
        t - 1.0
    } else {
        t
    }
}

/// Clamps every bin at 0.2 of the norm and renormalises to unit L2 norm (Lowe's
/// illumination normalisation). An all-zero histogram stays zero.
pub fn normalise(hist: &mut [f32; LENGTH]) {
    let norm = hist.iter().map(|v| v * v).sum::<f32>().sqrt();
    let clamp = norm * MAGNITUDE_CLAMP;
    for v in hist.iter_mut() {
        *v = v.min(clamp);
    }
    let norm = hist.iter().map(|v| v * v).sum::<f32>().sqrt();
    let inv = 1.0 / norm.max(f32::EPSILON);
    for v in hist.iter_mut() {
        *v *= inv;
    }
}

/// RootSIFT (Arandjelovic & Zisserman 2012): L1-normalise then square root, so that L2
/// distances between results compare like the Hellinger kernel. Keeps unit L2 norm.
pub fn root(hist: &mut [f32; LENGTH]) {
    let l1: f32 = hist.iter().sum();
    let inv = 1.0 / l1.max(f32::EPSILON);
    for v in hist.iter_mut() {
        *v = (*v * inv).sqrt();
    }
}

/// `saturate_cast<u8>(512 v)` with OpenCV's round-half-to-even.
pub fn quantise(hist: &[f32; LENGTH], out: &mut [u8]) {
    for (o, v) in out.iter_mut().zip(hist) {
        *o = (v * QUANTISATION).round_ties_even().clamp(0.0, 255.0) as u8;
    }
}

/// The finished u8 descriptor of one keypoint.
pub fn describe(
    image: &Plane,
    x: f32,
    y: f32,
    angle: f32,
    scale: f32,
    root_sift: bool,
    out: &mut [u8],
) {
    let mut hist = histogram(image, x, y, angle, scale);
    normalise(&mut hist);
    if root_sift {
        root(&mut hist);
    }
    quantise(&hist, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn textured(size: usize, seed: u32) -> Plane {
        // Smooth pseudo-random texture: sum of a few sinusoids.
        let data = (0..size * size)
            .map(|i| {
                let (x, y) = ((i % size) as f32, (i / size) as f32);
                let s = seed as f32;
                128.0
                    + 40.0 * (0.21 * x + 0.13 * y + s).sin()
                    + 30.0 * (0.07 * x - 0.29 * y + 2.0 * s).sin()
                    + 25.0 * (0.17 * (x * y).sqrt() + s).cos()
            })
            .collect();
        Plane {
            width: size,
            height: size,
            first_row: 0,
            data,
        }
    }

    #[test]
    fn clamping_bounds_every_bin_and_keeps_unit_norm() {
        let mut hist = histogram(&textured(81, 1), 40.0, 40.0, 30.0, 3.0);
        // Make one bin dominate so the clamp has work to do.
        hist[5] = hist.iter().sum::<f32>();
        normalise(&mut hist);
        let norm = hist.iter().map(|v| v * v).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{norm}");
        // After renormalisation the clamped bin is the largest, and not all mass.
        let max = hist.iter().copied().fold(0.0, f32::max);
        assert!((max - hist[5]).abs() < 1e-6 && max < 0.9, "{max}");
        let mut rooted = hist;
        root(&mut rooted);
        let norm = rooted.iter().map(|v| v * v).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{norm}");
    }

    #[test]
    fn a_zero_patch_gives_a_zero_descriptor() {
        let flat = Plane {
            width: 40,
            height: 40,
            first_row: 0,
            data: vec![77.0; 1600],
        };
        let mut out = [1u8; LENGTH];
        describe(&flat, 20.0, 20.0, 0.0, 2.0, false, &mut out);
        assert!(out.iter().all(|&v| v == 0));
    }

    #[test]
    fn rotating_the_image_by_90_degrees_and_the_angle_with_it_keeps_the_descriptor() {
        let image = textured(81, 3);
        // Rotate 90 degrees clockwise on screen: (x, y) -> (80 - y, x).
        let mut rotated = image.clone();
        for y in 0..81 {
            for x in 0..81 {
                rotated.data[x * 81 + (80 - y)] = image.at(x, y);
            }
        }
        let mut a = [0u8; LENGTH];
        let mut b = [0u8; LENGTH];
        describe(&image, 40.0, 40.0, 20.0, 3.0, false, &mut a);
        describe(&rotated, 40.0, 40.0, 110.0, 3.0, false, &mut b);
        let diff: f32 = a
            .iter()
            .zip(&b)
            .map(|(&p, &q)| (p as f32 - q as f32).powi(2))
            .sum::<f32>()
            .sqrt();
        let norm = a.iter().map(|&p| (p as f32).powi(2)).sum::<f32>().sqrt();
        assert!(diff / norm < 0.05, "relative difference {}", diff / norm);
    }
}
