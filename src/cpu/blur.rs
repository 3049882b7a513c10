//! The 7x7 Gaussian (σ = 2) that smooths a level before rBRIEF sampling, in fixed
//! point with taps summing to 256, border `REFLECT_101` (docs/orb-reference.md §7).

use rayon::prelude::*;

use super::blocks::{block, block_starts, widest_vectors};

/// Half the kernel side.
pub const BLUR_RADIUS: usize = 3;

const SIDE: usize = 2 * BLUR_RADIUS + 1;

/// The 7 taps: `g_i = exp(-(i-3)²/8)` normalised to sum 1, `round(256 g_i)`, and the
/// centre fixed up so they sum to 256 (a test derives them from that formula).
/// Constants, so the multiplies by them become cheap vector code.
pub const GAUSSIAN_TAPS: [u16; SIDE] = [18, 34, 49, 54, 49, 34, 18];

/// `REFLECT_101`: `-1 -> 1`, `n -> n - 2`, repeated for tiny sides (`n = 1 -> 0`).
pub fn reflect_101(i: isize, n: usize) -> usize {
    if n == 1 {
        return 0;
    }
    let period = 2 * (n as isize - 1);
    let i = i.rem_euclid(period);
    (if i < n as isize { i } else { period - i }) as usize
}

/// Pixels smoothed at once; the loops over them vectorise.
const BLOCK: usize = 32;

/// Horizontal pass of one row: `Σ w_i p` in u16 (at most 255 · 256).
#[inline(always)]
fn blur_row(src: &[u8], out: &mut [u16]) {
    let taps = &GAUSSIAN_TAPS;
    let width = src.len();
    let at = |x: usize| {
        (0..SIDE)
            .map(|k| taps[k] * u16::from(src[reflect_101(x as isize + k as isize - 3, width)]))
            .sum::<u16>()
    };
    if width < BLOCK + 2 * BLUR_RADIUS {
        for (x, o) in out.iter_mut().enumerate() {
            *o = at(x);
        }
        return;
    }
    for x in (0..BLUR_RADIUS).chain(width - BLUR_RADIUS..width) {
        out[x] = at(x);
    }
    let inner = width - 2 * BLUR_RADIUS;
    for start in block_starts(inner, BLOCK) {
        let mut sum = [0u16; BLOCK];
        for (k, &w) in taps.iter().enumerate() {
            let p = block::<BLOCK, _>(src, start + k);
            for j in 0..BLOCK {
                sum[j] += w * u16::from(p[j]);
            }
        }
        out[BLUR_RADIUS + start..][..BLOCK].copy_from_slice(&sum);
    }
}

/// Vertical pass of one row from the 7 horizontally smoothed rows around it.
#[inline(always)]
fn blur_column(rows: &[&[u16]; SIDE], out: &mut [u8]) {
    // u16 x u16 products: cheap to widen to u32 without a 32-bit multiply.
    let taps = &GAUSSIAN_TAPS;
    let at = |x: usize| {
        let v: u32 = (0..SIDE)
            .map(|k| u32::from(taps[k]) * u32::from(rows[k][x]))
            .sum();
        ((v + (1 << 15)) >> 16) as u8
    };
    let width = out.len();
    if width < BLOCK {
        for (x, o) in out.iter_mut().enumerate() {
            *o = at(x);
        }
        return;
    }
    for start in block_starts(width, BLOCK) {
        let mut sum = [0u32; BLOCK];
        for (row, &w) in rows.iter().zip(taps) {
            let h = block::<BLOCK, _>(row, start);
            for j in 0..BLOCK {
                sum[j] += u32::from(w) * u32::from(h[j]);
            }
        }
        for (o, v) in out[start..][..BLOCK].iter_mut().zip(sum) {
            *o = ((v + (1 << 15)) >> 16) as u8;
        }
    }
}

widest_vectors!(fn blur_row_widest = blur_row(src: &[u8], out: &mut [u16]));
widest_vectors!(fn blur_column_widest = blur_column(rows: &[&[u16]; SIDE], out: &mut [u8]));

/// Smooths `src` (`width` pixels a row) into `dst`. `rows` is scratch for the
/// horizontal pass; both passes run rows in parallel.
pub fn gaussian_blur(src: &[u8], width: usize, dst: &mut [u8], rows: &mut Vec<u16>) {
    if width == 0 || src.is_empty() {
        return;
    }
    let height = src.len() / width;
    rows.resize(src.len(), 0);
    rows.par_chunks_mut(width)
        .zip(src.par_chunks(width))
        .with_min_len(16)
        .for_each(|(out, row)| blur_row_widest(row, out));
    let rows = &rows[..];
    dst.par_chunks_mut(width)
        .enumerate()
        .with_min_len(16)
        .for_each(|(y, out)| {
            let around = std::array::from_fn(|k| {
                let yy = reflect_101(y as isize + k as isize - BLUR_RADIUS as isize, height);
                &rows[yy * width..(yy + 1) * width]
            });
            blur_column_widest(&around, out);
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taps_are_the_normalised_gaussian_summing_to_256() {
        // g = exp(-d²/8) normalised: 0.0702 0.1311 0.1907 0.2161 -> 18 34 49 55,
        // which sum to 257: the centre gives one back.
        let g: Vec<f64> = (0..7)
            .map(|i| (-((i - 3) as f64).powi(2) / 8.0).exp())
            .collect();
        let sum: f64 = g.iter().sum();
        let mut taps: Vec<u16> = g
            .iter()
            .map(|g| (256.0 * g / sum).round_ties_even() as u16)
            .collect();
        taps[3] = taps[3] + 256 - taps.iter().sum::<u16>();
        assert_eq!(taps, GAUSSIAN_TAPS);
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
        let (w, h) = (45, 21);
        let src: Vec<u8> = (0..w * h).map(|i| (i * 7919 % 256) as u8).collect();
        let mut dst = vec![0u8; w * h];
        gaussian_blur(&src, w, &mut dst, &mut Vec::new());
        let taps = GAUSSIAN_TAPS.map(u32::from);
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
