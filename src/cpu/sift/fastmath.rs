//! OpenCV's `fastAtan2`: a degree-7 odd polynomial for atan on [0, 1] (max error about
//! 0.01 degrees), folded into [0, 360). SIFT's orientation and descriptor bins use it,
//! so using the same polynomial keeps bin decisions identical to OpenCV's.

const DEGREES: f32 = (180.0 / std::f64::consts::PI) as f32;
const P1: f32 = 0.999_787_84 * DEGREES;
const P3: f32 = -0.325_808_4 * DEGREES;
const P5: f32 = 0.155_578_65 * DEGREES;
const P7: f32 = -0.044_326_555 * DEGREES;

/// The direction of (`x`, `y`) in degrees, `[0, 360]`, as OpenCV's `fastAtan2(y, x)`.
#[inline]
pub fn atan2_degrees(y: f32, x: f32) -> f32 {
    let (ax, ay) = (x.abs(), y.abs());
    let polynomial = |c: f32| {
        let c2 = c * c;
        (((P7 * c2 + P5) * c2 + P3) * c2 + P1) * c
    };
    // f64::EPSILON as f32, as OpenCV adds it, keeps 0/0 finite.
    let eps = f64::EPSILON as f32;
    let mut a = if ax >= ay {
        polynomial(ay / (ax + eps))
    } else {
        90.0 - polynomial(ax / (ay + eps))
    };
    if x < 0.0 {
        a = 180.0 - a;
    }
    if y < 0.0 {
        a = 360.0 - a;
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_to_atan2_everywhere() {
        for i in 0..3600 {
            let t = (i as f32 * 0.1).to_radians();
            let (y, x) = (t.sin() * 7.0, t.cos() * 7.0);
            let exact = y.atan2(x).to_degrees().rem_euclid(360.0);
            let d = (atan2_degrees(y, x) - exact).abs();
            assert!(
                d.min(360.0 - d) < 0.02,
                "at {} degrees: {}",
                i as f32 * 0.1,
                atan2_degrees(y, x)
            );
        }
        assert_eq!(atan2_degrees(0.0, 0.0), 0.0);
    }
}
