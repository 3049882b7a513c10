//! Steered BRIEF (docs/orb-reference.md §7): 256 intensity tests of the learned
//! ORB pattern, rotated by the keypoint's orientation without trigonometry.

use crate::spec::brief_pattern::PATTERN;

/// Bytes of one descriptor.
pub const DESCRIPTOR_BYTES: usize = 32;

/// `(cos, sin)` of the keypoint's orientation from its centroid moments, without
/// trigonometry: `(m10, m01) / sqrt(m10² + m01²)`, or `(1, 0)` when both are 0.
pub fn steering(m10: i32, m01: i32) -> (f64, f64) {
    let norm = i64::from(m10).pow(2) + i64::from(m01).pow(2);
    if norm == 0 {
        return (1.0, 0.0);
    }
    let r = (norm as f64).sqrt();
    (f64::from(m10) / r, f64::from(m01) / r)
}

/// `v` rounded half to even, as `f64::round_ties_even(v) as i32`, exact for
/// `|v| < 2^31`: adding `1.5 · 2^52` leaves the nearest integer (IEEE default
/// rounding) in the low mantissa bits. Spares a libm call (the x86-64 baseline has
/// no rounding instruction) and a saturating float-to-int conversion per test point.
#[inline(always)]
pub fn round_half_even(v: f64) -> i32 {
    const SHIFT: f64 = 6_755_399_441_055_744.0;
    (v + SHIFT).to_bits() as u32 as i32
}

/// The descriptor of the keypoint at `(x, y)` of a smoothed level. Point `(px, py)`
/// is read at row offset `round(px sin + py cos)` and column offset
/// `round(px cos - py sin)` (half to even, OpenCV's `GET_VALUE`); bit `k` (byte
/// `k / 8`, bit `k % 8`) is `S(x1, y1) < S(x2, y2)`. The caller keeps the keypoint
/// [`PATTERN_REACH`](crate::spec::brief_pattern::PATTERN_REACH) pixels inside the level.
#[inline(always)]
pub fn describe(
    smoothed: &[u8],
    width: usize,
    x: usize,
    y: usize,
    (cos, sin): (f64, f64),
) -> [u8; DESCRIPTOR_BYTES] {
    let centre = (y * width + x) as isize;
    let sample = |offset: isize| smoothed[(centre + offset) as usize];
    let mut descriptor = [0u8; DESCRIPTOR_BYTES];
    for (byte, tests) in descriptor.iter_mut().zip(PATTERN.chunks_exact(8)) {
        // The offsets of the byte's 16 points first (f64 arithmetic that
        // vectorises), then the reads and compares. A byte at a time: offsets for
        // all 512 points cost a 4 KB zeroed array per keypoint.
        let mut offsets = [0isize; 16];
        for (offset, point) in offsets.iter_mut().zip(tests.as_flattened().chunks_exact(2)) {
            let (px, py) = (f64::from(point[0]), f64::from(point[1]));
            let row = round_half_even(px * sin + py * cos) as isize;
            let col = round_half_even(px * cos - py * sin) as isize;
            *offset = row * width as isize + col;
        }
        for (bit, pair) in offsets.chunks_exact(2).enumerate() {
            *byte |= u8::from(sample(pair[0]) < sample(pair[1])) << bit;
        }
    }
    descriptor
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn round_half_even_equals_the_standard_library(v in -1e6f64..1e6, k in -40i32..40) {
            proptest::prop_assert_eq!(round_half_even(v), v.round_ties_even() as i32);
            let tie = f64::from(k) + 0.5;
            proptest::prop_assert_eq!(round_half_even(tie), tie.round_ties_even() as i32);
        }
    }

    #[test]
    fn steering_is_the_unit_vector_of_the_moments() {
        assert_eq!(steering(0, 0), (1.0, 0.0));
        assert_eq!(steering(3, 4), (0.6, 0.8));
        let (c, s) = steering(-7, 0);
        assert_eq!((c, s), (-1.0, 0.0));
    }

    #[test]
    fn bits_follow_opencv_order_and_rotate_with_the_image() {
        // A horizontal ramp: test k is set iff x1 < x2 in the unrotated frame.
        let (w, h) = (64, 64);
        let ramp: Vec<u8> = (0..w * h).map(|i| (i % w * 3) as u8).collect();
        let d = describe(&ramp, w, 32, 32, (1.0, 0.0));
        for (k, &[x1, _, x2, _]) in PATTERN.iter().enumerate() {
            assert_eq!(d[k / 8] >> (k % 8) & 1 == 1, x1 < x2, "test {k}");
        }
        // A vertical ramp described at 90°: x' = -y, y' = x, so the same bits.
        let vertical: Vec<u8> = (0..w * h).map(|i| (i / w * 3) as u8).collect();
        assert_eq!(describe(&vertical, w, 32, 32, (0.0, 1.0)), d);
    }
}
