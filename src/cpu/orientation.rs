//! Keypoint orientation by intensity centroid (docs/orb-reference.md §6).

use crate::spec::orientation::{umax, PATCH_RADIUS};

/// `(m10, m01) = (Σ u I(x+u, y+v), Σ v I(x+u, y+v))` over the circular patch; the
/// caller keeps the patch inside the image.
#[inline(always)]
pub fn intensity_centroid(image: &[u8], width: usize, x: usize, y: usize) -> (i32, i32) {
    let umax = umax();
    let centre = y * width + x;
    let r = PATCH_RADIUS;
    let mut m10: i32 = (0..=2 * r)
        .map(|k| (k as i32 - r as i32) * i32::from(image[centre - r + k]))
        .sum();
    let mut m01 = 0;
    for (v, &d) in umax.iter().enumerate().skip(1) {
        let below = &image[centre + v * width - d..=centre + v * width + d];
        let above = &image[centre - v * width - d..=centre - v * width + d];
        let mut v_sum = 0;
        for (k, (&p, &m)) in below.iter().zip(above).enumerate() {
            let (p, m) = (i32::from(p), i32::from(m));
            v_sum += p - m;
            m10 += (k as i32 - d as i32) * (p + m);
        }
        m01 += v as i32 * v_sum;
    }
    (m10, m01)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::orientation::angle_degrees;

    /// A ramp rising along the direction `degrees` (image y points down).
    fn ramp(degrees: f64) -> Vec<u8> {
        let (c, s) = (degrees.to_radians().cos(), degrees.to_radians().sin());
        (0..41 * 41)
            .map(|i| {
                let (x, y) = ((i % 41) as f64 - 20.0, (i / 41) as f64 - 20.0);
                (128.0 + 4.0 * (x * c + y * s)).round() as u8
            })
            .collect()
    }

    #[test]
    fn a_ramp_points_the_angle_uphill() {
        for expected in [0.0, 30.0, 90.0, 135.0, 200.0, 315.0] {
            let (m10, m01) = intensity_centroid(&ramp(expected), 41, 20, 20);
            let angle = f64::from(angle_degrees(m10, m01));
            let error = (angle - expected + 540.0).rem_euclid(360.0) - 180.0;
            assert!(error.abs() < 1.0, "ramp at {expected}: angle {angle}");
        }
    }
}
