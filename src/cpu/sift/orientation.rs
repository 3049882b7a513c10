//! Dominant orientations: a 36-bin histogram of gradient directions around the keypoint,
//! Gaussian weighted (std 1.5 scale), smoothed by [1 4 6 4 1]/16; every local peak
//! >= 0.8 of the highest becomes a keypoint, its angle refined by a parabola.
//!
//! Gradients use y pointing up (`dy = I(y-1) - I(y+1)`), as OpenCV does; the returned
//! angle is OpenCV's keypoint angle `360 - histogram angle`, i.e. degrees measured
//! clockwise on screen (y down) from the x axis, in `[0, 360)`.

use std::ops::Range;

use super::fastmath::atan2_degrees;
use super::pyramid::Plane;

pub const BINS: usize = 36;
/// Gaussian window std, in keypoint scales.
const SIGMA_FACTOR: f32 = 1.5;
/// Window radius, in window stds.
const RADIUS_FACTOR: f32 = 3.0 * SIGMA_FACTOR;
const PEAK_RATIO: f32 = 0.8;

/// OpenCV's `cvRound` (round half to even) for the non-negative values used here.
fn round_i(v: f32) -> i64 {
    v.round_ties_even() as i64
}

fn window_radius(scale: f32) -> i64 {
    round_i(RADIUS_FACTOR * scale)
}

/// The rows of a `height`-row image that [`histogram`] reads at row `y` for `scale`.
pub fn rows_read(y: usize, scale: f32, height: usize) -> Range<usize> {
    let reach = window_radius(scale) as usize + 1;
    y.saturating_sub(reach)..(y + reach + 1).min(height)
}

/// The smoothed histogram around integer position (`x`, `y`) of `image` for scale `scale`.
pub fn histogram(image: &Plane, x: usize, y: usize, scale: f32) -> [f32; BINS] {
    let radius = window_radius(scale);
    let sigma = SIGMA_FACTOR * scale;
    let exp_scale = -1.0 / (2.0 * sigma * sigma);
    let (w, h) = (image.width as i64, image.height as i64);
    let mut raw = [0f32; BINS];
    for i in -radius..=radius {
        let py = y as i64 + i;
        if py <= 0 || py >= h - 1 {
            continue;
        }
        for j in -radius..=radius {
            let px = x as i64 + j;
            if px <= 0 || px >= w - 1 {
                continue;
            }
            let (px, py) = (px as usize, py as usize);
            let dx = image.at(px + 1, py) - image.at(px - 1, py);
            let dy = image.at(px, py - 1) - image.at(px, py + 1);
            let weight = (((i * i + j * j) as f32) * exp_scale).exp();
            let degrees = atan2_degrees(dy, dx);
            let bin = round_i(degrees * BINS as f32 / 360.0).rem_euclid(BINS as i64) as usize;
            raw[bin] += weight * (dx * dx + dy * dy).sqrt();
        }
    }
    let at = |i: i64| raw[i.rem_euclid(BINS as i64) as usize];
    let mut smooth = [0f32; BINS];
    for (i, s) in smooth.iter_mut().enumerate() {
        let i = i as i64;
        *s = (at(i - 2) + at(i + 2)) * (1.0 / 16.0)
            + (at(i - 1) + at(i + 1)) * (4.0 / 16.0)
            + at(i) * (6.0 / 16.0);
    }
    smooth
}

/// Keypoint angles (OpenCV convention, degrees) of every dominant peak of `hist`.
pub fn peak_angles(hist: &[f32; BINS]) -> Vec<f32> {
    let max = hist.iter().copied().fold(f32::MIN, f32::max);
    let threshold = max * PEAK_RATIO;
    let n = BINS as f32;
    (0..BINS)
        .filter_map(|j| {
            let left = hist[(j + BINS - 1) % BINS];
            let right = hist[(j + 1) % BINS];
            let v = hist[j];
            if !(v > left && v > right && v >= threshold) {
                return None;
            }
            let mut bin = j as f32 + 0.5 * (left - right) / (left - 2.0 * v + right);
            if bin < 0.0 {
                bin += n;
            } else if bin >= n {
                bin -= n;
            }
            let angle = 360.0 - 360.0 / n * bin;
            Some(if (angle - 360.0).abs() < f32::EPSILON || angle >= 360.0 {
                0.0
            } else {
                angle
            })
        })
        .collect()
}

/// The angles of the keypoint at (`x`, `y`) with scale `scale` on Gaussian layer `image`.
pub fn orientations(image: &Plane, x: usize, y: usize, scale: f32) -> Vec<f32> {
    peak_angles(&histogram(image, x, y, scale))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A smooth patch whose intensity rises along direction `theta` (degrees, y down).
    fn ramp(theta: f32) -> Plane {
        let (c, s) = (theta.to_radians().cos(), theta.to_radians().sin());
        let size = 41;
        Plane {
            width: size,
            height: size,
            first_row: 0,
            data: (0..size * size)
                .map(|i| {
                    let (x, y) = ((i % size) as f32 - 20.0, (i / size) as f32 - 20.0);
                    let t = x * c + y * s;
                    // A bump, so magnitudes fall off smoothly with distance.
                    100.0 + 80.0 * (t / 6.0).tanh()
                })
                .collect(),
        }
    }

    fn angle_diff(a: f32, b: f32) -> f32 {
        let d = (a - b).rem_euclid(360.0);
        d.min(360.0 - d)
    }

    #[test]
    fn the_orientation_of_a_rotated_patch_rotates_with_it() {
        for theta in [0.0f32, 17.0, 90.0, 143.0, 200.0, 311.0] {
            let angles = orientations(&ramp(theta), 20, 20, 2.0);
            assert_eq!(angles.len(), 1, "theta {theta}: {angles:?}");
            // Gradient points along theta in y-down coordinates: OpenCV's angle is theta,
            // up to half a 10-degree bin (a ramp votes into one bin only).
            assert!(
                angle_diff(angles[0], theta) <= 5.0 + 1e-3,
                "theta {theta}: got {}",
                angles[0]
            );
        }
    }

    #[test]
    fn a_second_peak_above_80_percent_gives_a_second_keypoint() {
        let mut hist = [0f32; BINS];
        hist[3] = 10.0;
        hist[20] = 8.5;
        hist[30] = 7.0;
        let angles = peak_angles(&hist);
        assert_eq!(angles.len(), 2);
        // Isolated bins interpolate to their centre: 360 - 10 * bin.
        assert!((angles[0] - 330.0).abs() < 1e-4 && (angles[1] - 160.0).abs() < 1e-4);
    }
}
