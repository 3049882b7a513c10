//! The circular patch of the intensity-centroid orientation and the angle it gives
//! (docs/orb-reference.md §6).

use std::sync::LazyLock;

/// Radius of the circular patch: `patch_size / 2` for the 31-pixel patch.
pub const PATCH_RADIUS: usize = 15;

static UMAX: LazyLock<[usize; PATCH_RADIUS + 1]> = LazyLock::new(|| {
    let r = PATCH_RADIUS;
    let half_diagonal = r as f64 * std::f64::consts::SQRT_2 / 2.0;
    let v_max = (half_diagonal + 1.0).floor() as usize;
    let v_min = half_diagonal.ceil() as usize;
    // One spare entry: the symmetrising loop peeks one past its position.
    let mut umax = [0usize; PATCH_RADIUS + 2];
    for (v, u) in umax.iter_mut().enumerate().take(v_max + 1) {
        *u = ((r * r - v * v) as f64).sqrt().round_ties_even() as usize;
    }
    // OpenCV's pass that makes the patch symmetric under swapping u and v.
    let mut v0 = 0;
    for v in (v_min..=r).rev() {
        while umax[v0] == umax[v0 + 1] {
            v0 += 1;
        }
        umax[v] = v0;
        v0 += 1;
    }
    let mut table = [0; PATCH_RADIUS + 1];
    table.copy_from_slice(&umax[..=r]);
    table
});

/// `umax[v]`: the patch holds `(u, v)` with `|u| <= umax[|v|]` (OpenCV's table).
pub fn umax() -> &'static [usize; PATCH_RADIUS + 1] {
    &UMAX
}

/// `atan2(m01, m10)` in degrees (`× 180/π`), in f64, mapped to `[0, 360)`, stored as
/// f32; a value that rounds to 360 in f32 is stored as 0.
pub fn angle_degrees(m10: i32, m01: i32) -> f32 {
    let degrees = f64::from(m01).atan2(f64::from(m10)).to_degrees();
    let wrapped = if degrees < 0.0 {
        degrees + 360.0
    } else {
        degrees
    };
    let angle = wrapped as f32;
    if angle >= 360.0 {
        0.0
    } else {
        angle
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn umax_is_opencvs_table_and_symmetric() {
        let umax = umax();
        // Points (u, v) of the patch, mirrored across the diagonal, stay in it.
        for (v, &reach) in umax.iter().enumerate() {
            for (u, &reach_of_u) in umax.iter().enumerate().take(reach + 1) {
                assert!(
                    v <= reach_of_u,
                    "({u}, {v}) in the patch but ({v}, {u}) is not"
                );
            }
        }
        assert_eq!(umax[0], 15);
        assert_eq!(umax[15], 3);
    }

    #[test]
    fn angles_stay_in_range() {
        assert_eq!(angle_degrees(0, 0), 0.0);
        assert_eq!(angle_degrees(-5, 0), 180.0);
        assert_eq!(angle_degrees(0, -5), 270.0);
        // atan2 of a tiny negative angle wraps to just below 360 in f64, 360 in f32.
        assert_eq!(angle_degrees(i32::MAX, -1), 0.0);
        for (m10, m01) in [(1, -1), (-1, -1), (7, -100_000), (100_000, -1)] {
            let a = angle_degrees(m10, m01);
            assert!((0.0..360.0).contains(&a), "{a}");
        }
    }
}
