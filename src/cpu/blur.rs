//! The 7x7 Gaussian (σ = 2) that smooths a level before rBRIEF sampling, in fixed
//! point with taps summing to 256, border `REFLECT_101` (docs/orb-reference.md §7).

use std::sync::LazyLock;

use rayon::prelude::*;

/// Half the kernel side.
pub const BLUR_RADIUS: usize = 3;

const SIDE: usize = 2 * BLUR_RADIUS + 1;

static TAPS: LazyLock<[u32; SIDE]> = LazyLock::new(|| {
    let g = std::array::from_fn::<f64, SIDE, _>(|i| {
        let d = i as f64 - BLUR_RADIUS as f64;
        (-d * d / 8.0).exp()
    });
    let sum: f64 = g.iter().sum();
    let mut taps = g.map(|g| (256.0 * g / sum).round_ties_even() as u32);
    let total: u32 = taps.iter().sum();
    taps[BLUR_RADIUS] = taps[BLUR_RADIUS] + 256 - total;
    taps
});

/// The 7 taps, `round(256 g_i)` with the centre fixed up so they sum to 256.
pub fn gaussian_taps() -> &'static [u32; SIDE] {
    &TAPS
}

/// `REFLECT_101`: `-1 -> 1`, `n -> n - 2`, repeated for tiny sides (`n = 1 -> 0`).
pub fn reflect_101(i: isize, n: usize) -> usize {
    if n == 1 {
        return 0;
    }
    let period = 2 * (n as isize - 1);
    let i = i.rem_euclid(period);
    (if i < n as isize { i } else { period - i }) as usize
}

fn blur_row(src: &[u8], taps: &[u32; SIDE], out: &mut [u16]) {
    let width = src.len();
    let at = |x: usize, k: usize| {
        let i = reflect_101(x as isize + k as isize - BLUR_RADIUS as isize, width);
        taps[k] * u32::from(src[i])
    };
    let border = |x: usize| (0..SIDE).map(|k| at(x, k)).sum::<u32>() as u16;
    if width <= 2 * BLUR_RADIUS {
        for (x, o) in out.iter_mut().enumerate() {
            *o = border(x);
        }
        return;
    }
    for x in (0..BLUR_RADIUS).chain(width - BLUR_RADIUS..width) {
        out[x] = border(x);
    }
    // Interior: 255 * 256 fits u16; the fixed-width windows vectorise.
    for (o, window) in out[BLUR_RADIUS..].iter_mut().zip(src.windows(SIDE)) {
        *o = (0..SIDE)
            .map(|k| taps[k] * u32::from(window[k]))
            .sum::<u32>() as u16;
    }
}

/// Smooths `src` (`width` pixels a row) into `dst`. `rows` is scratch for the
/// horizontal pass; both passes run rows in parallel.
pub fn gaussian_blur(src: &[u8], width: usize, dst: &mut [u8], rows: &mut Vec<u16>) {
    if width == 0 || src.is_empty() {
        return;
    }
    let height = src.len() / width;
    let taps = gaussian_taps();
    rows.resize(src.len(), 0);
    rows.par_chunks_mut(width)
        .zip(src.par_chunks(width))
        .for_each(|(out, row)| blur_row(row, taps, out));
    let rows = &rows[..];
    dst.par_chunks_mut(width).enumerate().for_each(|(y, out)| {
        let source = |k: usize| {
            let yy = reflect_101(y as isize + k as isize - BLUR_RADIUS as isize, height);
            &rows[yy * width..(yy + 1) * width]
        };
        let sources: [&[u16]; SIDE] = std::array::from_fn(source);
        for (x, o) in out.iter_mut().enumerate() {
            let v: u32 = (0..SIDE).map(|k| taps[k] * u32::from(sources[k][x])).sum();
            *o = ((v + (1 << 15)) >> 16) as u8;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taps_are_the_normalised_gaussian_summing_to_256() {
        // g = exp(-d²/8) normalised: 0.0702 0.1311 0.1907 0.2161 -> 18 34 49 55,
        // which sum to 257: the centre gives one back.
        assert_eq!(gaussian_taps(), &[18, 34, 49, 54, 49, 34, 18]);
    }

    #[test]
    fn reflect_101_mirrors_without_repeating_the_edge() {
        let got: Vec<_> = (-3..8).map(|i| reflect_101(i, 5)).collect();
        assert_eq!(got, vec![3, 2, 1, 0, 1, 2, 3, 4, 3, 2, 1]);
        assert_eq!(reflect_101(-4, 2), 0);
        assert_eq!(reflect_101(5, 1), 0);
    }

    #[test]
    fn blur_equals_the_separable_formula_everywhere() {
        let (w, h) = (23, 17);
        let src: Vec<u8> = (0..w * h).map(|i| (i * 7919 % 256) as u8).collect();
        let mut dst = vec![0u8; w * h];
        gaussian_blur(&src, w, &mut dst, &mut Vec::new());
        let taps = gaussian_taps();
        for y in 0..h {
            for x in 0..w {
                let mut v = 0u32;
                for (j, &wy) in taps.iter().enumerate() {
                    let yy = reflect_101(y as isize + j as isize - 3, h);
                    let hsum: u32 = taps
                        .iter()
                        .enumerate()
                        .map(|(i, &wx)| {
                            wx * src[yy * w + reflect_101(x as isize + i as isize - 3, w)] as u32
                        })
                        .sum();
                    v += wy * hsum;
                }
                assert_eq!(dst[y * w + x] as u32, (v + (1 << 15)) >> 16, "({x}, {y})");
            }
        }
        let flat = vec![77u8; 9 * 4];
        let mut out = vec![0u8; 9 * 4];
        gaussian_blur(&flat, 9, &mut out, &mut Vec::new());
        assert!(out.iter().all(|&v| v == 77), "a flat image stays flat");
    }
}
