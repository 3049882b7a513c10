//! The scale pyramid's geometry (docs/orb-reference.md §1): level sizes and scales, and
//! the fixed-point bilinear taps from one level to the next. Built on the host once per
//! image size; the CUDA backend uploads these very tables, so both backends interpolate
//! with the same integers.

/// Bilinear weights are in 1/256ths.
pub const WEIGHT_ONE: u32 = 256;

/// The size and scale of one pyramid level.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LevelGeometry {
    pub width: usize,
    pub height: usize,
    /// `scale_factor^level`: a level pixel is this many input pixels.
    pub scale: f64,
}

/// Sizes and scales of all levels: `round_half_even(side / scale_factor^l)`, as
/// OpenCV's `cvRound(cols / scale)`. Coarse levels of a small image may be empty.
pub fn level_geometry(
    width: usize,
    height: usize,
    n_levels: u32,
    scale_factor: f64,
) -> Vec<LevelGeometry> {
    (0..n_levels)
        .map(|level| {
            let scale = scale_factor.powi(level as i32);
            let side = |n: usize| (n as f64 / scale).round_ties_even() as usize;
            LevelGeometry {
                width: side(width),
                height: side(height),
                scale,
            }
        })
        .collect()
}

/// The bilinear taps of one axis: destination coordinate `i` reads source
/// coordinates `first[i]` (weight `256 - second_weight[i]`) and `first[i] + 1`
/// (weight `second_weight[i]`). Where the second tap would fall outside the source,
/// its weight is 0 and it must not be read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResizeTaps {
    pub first: Vec<u32>,
    pub second_weight: Vec<u16>,
}

/// The taps that resize an axis of `src_len` pixels to `dst_len` pixels (§1).
pub fn resize_taps(src_len: usize, dst_len: usize) -> ResizeTaps {
    let ratio = src_len as f64 / dst_len as f64;
    let last = src_len.saturating_sub(1) as f64;
    let (first, second_weight) = (0..dst_len)
        .map(|i| {
            let f = (i as f64 + 0.5) * ratio - 0.5;
            let s = f.floor();
            if s < 0.0 {
                (0, 0)
            } else if s >= last {
                (last as u32, 0)
            } else {
                (s as u32, ((f - s) * 256.0).round_ties_even() as u16)
            }
        })
        .unzip();
    ResizeTaps {
        first,
        second_weight,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_sizes_round_half_even_like_opencv() {
        let levels = level_geometry(1920, 1080, 8, 1.2);
        assert_eq!((levels[0].width, levels[0].height), (1920, 1080));
        // 1920 / 1.2 = 1600, 1080 / 1.44 = 750, 1920 / 1.728 = 1111.1.
        assert_eq!((levels[1].width, levels[1].height), (1600, 900));
        assert_eq!(levels[2].height, 750);
        assert_eq!(levels[3].width, 1111);
        // 5 / 2 = 2.5 rounds to the even 2, 7 / 2 = 3.5 to 4.
        let halves = level_geometry(5, 7, 2, 2.0);
        assert_eq!((halves[1].width, halves[1].height), (2, 4));
    }

    #[test]
    fn taps_clamp_at_both_borders_and_sum_to_one() {
        // Upscaling reaches past both borders: x = 0 has fx = -0.083, x = 11 has
        // fx = 9.08 >= 10 - 1.
        let up = resize_taps(10, 12);
        assert_eq!((up.first[0], up.second_weight[0]), (0, 0));
        assert_eq!((up.first[11], up.second_weight[11]), (9, 0));
        let taps = resize_taps(12, 10);
        for (&first, &w1) in taps.first.iter().zip(&taps.second_weight) {
            assert!(first < 11 || (first == 11 && w1 == 0));
            assert!(u32::from(w1) <= WEIGHT_ONE);
        }
        // Destination x = 5: fx = 5.5 * 1.2 - 0.5 = 6.1 -> 6, w1 = round(25.6) = 26.
        assert_eq!((taps.first[5], taps.second_weight[5]), (6, 26));
    }
}
