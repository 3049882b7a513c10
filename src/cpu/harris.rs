//! The Harris corner measure of ORB (docs/orb-reference.md §4), as an exact
//! integer ranking key, computed only for candidates that survived NMS.

/// Half the side of the 7x7 window.
pub const HARRIS_RADIUS: usize = 3;

/// Pixels the key reads around the candidate: the window plus the Sobel taps.
pub const HARRIS_REACH: usize = HARRIS_RADIUS + 1;

/// `R = 25 (a b - c^2) - (a + b)^2` with `a = Σ Ix²`, `b = Σ Iy²`, `c = Σ Ix Iy`
/// over the 7x7 window around `(x, y)`; the caller keeps the window and its Sobel
/// taps inside the image (`HARRIS_REACH` pixels on every side).
///
/// The 7 window columns are 8 vector lanes (the 8th reads a zero pad column and
/// is left out of the sums); integer sums do not depend on their order.
#[inline(always)]
pub fn harris_key(image: &[u8], width: usize, x: usize, y: usize) -> i64 {
    const SIDE: usize = 2 * HARRIS_REACH + 1;
    const LANES: usize = 8;
    let mut patch = [[0i32; LANES + 2]; SIDE];
    for (dy, patch_row) in patch.iter_mut().enumerate() {
        let start = (y + dy - HARRIS_REACH) * width + x - HARRIS_REACH;
        for (p, &v) in patch_row.iter_mut().zip(&image[start..start + SIDE]) {
            *p = i32::from(v);
        }
    }
    let (mut a, mut b, mut c) = ([0i32; LANES], [0i32; LANES], [0i32; LANES]);
    for wy in 1..SIDE - 1 {
        let (up, row, down) = (&patch[wy - 1], &patch[wy], &patch[wy + 1]);
        for j in 0..LANES {
            // Lane j is window column wx = j + 1 of the patch.
            let ix = 2 * (row[j + 2] - row[j]) + (up[j + 2] - up[j]) + (down[j + 2] - down[j]);
            let iy = 2 * (down[j + 1] - up[j + 1]) + (down[j] - up[j]) + (down[j + 2] - up[j + 2]);
            a[j] += ix * ix;
            b[j] += iy * iy;
            c[j] += ix * iy;
        }
    }
    let window = |sums: [i32; LANES]| i64::from(sums[..LANES - 1].iter().sum::<i32>());
    let (a, b, c) = (window(a), window(b), window(c));
    25 * (a * b - c * c) - (a + b) * (a + b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::harris::harris_response;
    use proptest::prelude::*;

    /// OpenCV's `HarrisResponses` written out in f64: Sobel gradients scaled by
    /// `1 / (4 * 7 * 255)`, `det - 0.04 trace^2`.
    fn opencv_formula(image: &[u8], width: usize, x: usize, y: usize) -> f64 {
        let p = |xx: usize, yy: usize| f64::from(image[yy * width + xx]);
        let scale = 1.0 / (4.0 * 7.0 * 255.0);
        let (mut a, mut b, mut c) = (0.0, 0.0, 0.0);
        for yy in y - 3..=y + 3 {
            for xx in x - 3..=x + 3 {
                let ix = (p(xx + 1, yy - 1) + 2.0 * p(xx + 1, yy) + p(xx + 1, yy + 1)
                    - p(xx - 1, yy - 1)
                    - 2.0 * p(xx - 1, yy)
                    - p(xx - 1, yy + 1))
                    * scale;
                let iy = (p(xx - 1, yy + 1) + 2.0 * p(xx, yy + 1) + p(xx + 1, yy + 1)
                    - p(xx - 1, yy - 1)
                    - 2.0 * p(xx, yy - 1)
                    - p(xx + 1, yy - 1))
                    * scale;
                a += ix * ix;
                b += iy * iy;
                c += ix * iy;
            }
        }
        a * b - c * c - 0.04 * (a + b) * (a + b)
    }

    /// §4 written out pixel by pixel in i64.
    fn key_by_definition(image: &[u8], width: usize, x: usize, y: usize) -> i64 {
        let p = |xx: usize, yy: usize| i64::from(image[yy * width + xx]);
        let (mut a, mut b, mut c) = (0, 0, 0);
        for yy in y - 3..=y + 3 {
            for xx in x - 3..=x + 3 {
                let ix = 2 * (p(xx + 1, yy) - p(xx - 1, yy))
                    + (p(xx + 1, yy - 1) - p(xx - 1, yy - 1))
                    + (p(xx + 1, yy + 1) - p(xx - 1, yy + 1));
                let iy = 2 * (p(xx, yy + 1) - p(xx, yy - 1))
                    + (p(xx - 1, yy + 1) - p(xx - 1, yy - 1))
                    + (p(xx + 1, yy + 1) - p(xx + 1, yy - 1));
                a += ix * ix;
                b += iy * iy;
                c += ix * iy;
            }
        }
        25 * (a * b - c * c) - (a + b) * (a + b)
    }

    proptest! {
        #[test]
        fn key_equals_the_definition_exactly(pixels in prop::collection::vec(any::<u8>(), 11 * 10), x in 4usize..7, y in 4usize..6) {
            prop_assert_eq!(harris_key(&pixels, 11, x, y), key_by_definition(&pixels, 11, x, y));
        }
    }

    proptest! {
        #[test]
        fn integer_key_matches_opencv_formula(pixels in prop::collection::vec(any::<u8>(), 81)) {
            let key = harris_key(&pixels, 9, 4, 4);
            let expected = opencv_formula(&pixels, 9, 4, 4);
            let got = f64::from(harris_response(key));
            prop_assert!((got - expected).abs() <= 1e-6 * expected.abs() + 1e-12,
                "key {key}: {got} vs {expected}");
        }
    }

    #[test]
    fn flat_patch_scores_zero_and_a_corner_beats_an_edge() {
        let flat = [100u8; 81];
        assert_eq!(harris_key(&flat, 9, 4, 4), 0);
        let corner: Vec<u8> = (0..81)
            .map(|i| if i % 9 >= 4 && i / 9 >= 4 { 200 } else { 20 })
            .collect();
        let edge: Vec<u8> = (0..81).map(|i| if i % 9 >= 4 { 200 } else { 20 }).collect();
        assert!(harris_key(&corner, 9, 4, 4) > 0);
        assert!(
            harris_key(&edge, 9, 4, 4) < 0,
            "an edge has det 0 and a negative key"
        );
    }
}
