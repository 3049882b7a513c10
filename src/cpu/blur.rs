//! The 7x7 Gaussian (σ = 2) of [`crate::spec::smoothing`] that smooths a level before
//! rBRIEF sampling, border `REFLECT_101` (docs/orb-reference.md §7).

use std::ops::Range;

use rayon::prelude::*;

use super::blocks::{block, block_starts};
use crate::spec::smoothing::{BLUR_RADIUS, GAUSSIAN_TAPS, SIDE};
use multiversion::multiversion;

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

/// Horizontal pass of pixels `xs` of one row into `out` (one value per pixel of
/// `xs`): `Σ w_i p` in u16 (at most 255 · 256).
#[multiversion(targets("x86_64+avx2"))]
fn blur_span(src: &[u8], xs: Range<usize>, out: &mut [u16]) {
    let taps = &GAUSSIAN_TAPS;
    let width = src.len();
    let at = |x: usize| {
        (0..SIDE)
            .map(|k| taps[k] * u16::from(src[reflect_101(x as isize + k as isize - 3, width)]))
            .sum::<u16>()
    };
    // Pixels whose 7 taps all lie inside the row run in blocks.
    let inner = xs.start.max(BLUR_RADIUS)..xs.end.min(width.saturating_sub(BLUR_RADIUS));
    if inner.len() < BLOCK {
        for (x, o) in xs.clone().zip(out.iter_mut()) {
            *o = at(x);
        }
        return;
    }
    for x in (xs.start..inner.start).chain(inner.end..xs.end) {
        out[x - xs.start] = at(x);
    }
    for start in block_starts(inner.len(), BLOCK) {
        let x = inner.start + start;
        let mut sum = [0u16; BLOCK];
        for (k, &w) in taps.iter().enumerate() {
            let p = block::<BLOCK, _>(src, x + k - BLUR_RADIUS);
            for j in 0..BLOCK {
                sum[j] += w * u16::from(p[j]);
            }
        }
        out[x - xs.start..][..BLOCK].copy_from_slice(&sum);
    }
}

/// Vertical pass of one row from the 7 horizontally smoothed rows around it.
#[multiversion(targets("x86_64+avx2"))]
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
        .for_each(|(out, row)| blur_span(row, 0..width, out));
    let rows = &rows[..];
    dst.par_chunks_mut(width)
        .enumerate()
        .with_min_len(16)
        .for_each(|(y, out)| {
            let around = std::array::from_fn(|k| {
                let yy = reflect_101(y as isize + k as isize - BLUR_RADIUS as isize, height);
                &rows[yy * width..(yy + 1) * width]
            });
            blur_column(&around, out);
        });
}

/// Tiles of a level that rBRIEF reads: `TILE_WIDTH` x `TILE_HEIGHT` pixels, marked
/// around each keypoint, so only those are smoothed (with the default grid a
/// 1920x1080 frame's keypoints reach about half of its tiles).
#[derive(Clone, Debug, Default)]
pub struct BlurTiles {
    width: usize,
    height: usize,
    columns: usize,
    marked: Vec<bool>,
}

pub const TILE_WIDTH: usize = 32;
pub const TILE_HEIGHT: usize = 16;

impl BlurTiles {
    /// No tile marked, for a level of `width x height`.
    pub fn clear(&mut self, width: usize, height: usize) {
        self.width = width;
        self.height = height;
        self.columns = width.div_ceil(TILE_WIDTH);
        self.marked.clear();
        self.marked
            .resize(self.columns * height.div_ceil(TILE_HEIGHT), false);
    }

    /// Marks the tiles holding the pixels within `reach` of `(x, y)` (clipped to the level).
    pub fn mark_around(&mut self, x: usize, y: usize, reach: usize) {
        let xs =
            x.saturating_sub(reach) / TILE_WIDTH..=(x + reach).min(self.width - 1) / TILE_WIDTH;
        let ys =
            y.saturating_sub(reach) / TILE_HEIGHT..=(y + reach).min(self.height - 1) / TILE_HEIGHT;
        for row in ys {
            self.marked[row * self.columns..][xs.clone()].fill(true);
        }
    }

    /// Whether pixel `(x, y)` lies in a marked tile.
    pub fn covers(&self, x: usize, y: usize) -> bool {
        x < self.width
            && y < self.height
            && self.marked[y / TILE_HEIGHT * self.columns + x / TILE_WIDTH]
    }

    /// Runs of marked tiles, one tile row at a time, as pixel ranges `(xs, ys)`.
    fn spans(&self) -> impl Iterator<Item = (Range<usize>, Range<usize>)> + '_ {
        self.marked
            .chunks(self.columns.max(1))
            .enumerate()
            .flat_map(move |(row, marks)| {
                let ys = row * TILE_HEIGHT..((row + 1) * TILE_HEIGHT).min(self.height);
                let mut column = 0;
                std::iter::from_fn(move || {
                    let first = column + marks[column..].iter().position(|&m| m)?;
                    let end = marks[first..]
                        .iter()
                        .position(|&m| !m)
                        .map_or(marks.len(), |n| first + n);
                    column = end;
                    Some((
                        first * TILE_WIDTH..(end * TILE_WIDTH).min(self.width),
                        ys.clone(),
                    ))
                })
            })
    }
}

/// Smooths the marked tiles of `src` (`width` pixels a row) into `dst`, exactly as
/// [`gaussian_blur`] does there; other pixels of `dst` are left as they were.
/// `rows` is scratch for the horizontal pass.
pub fn blur_tiles(
    src: &[u8],
    width: usize,
    tiles: &BlurTiles,
    dst: &mut [u8],
    rows: &mut Vec<u16>,
) {
    let height = src.len().checked_div(width).unwrap_or(0);
    for (xs, ys) in tiles.spans() {
        let span = xs.len();
        rows.resize((ys.len() + 2 * BLUR_RADIUS) * span, 0);
        let around = ys.start as isize - BLUR_RADIUS as isize..(ys.end + BLUR_RADIUS) as isize;
        for (out, y) in rows.chunks_exact_mut(span).zip(around) {
            let y = reflect_101(y, height);
            blur_span(&src[y * width..(y + 1) * width], xs.clone(), out);
        }
        for (i, y) in ys.enumerate() {
            let around = std::array::from_fn(|k| &rows[(i + k) * span..(i + k + 1) * span]);
            blur_column(&around, &mut dst[y * width + xs.start..y * width + xs.end]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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

    proptest! {
        /// Tiles around random points, smoothed alone, equal the whole image
        /// smoothed there (borders, spans narrower and wider than a block); pixels
        /// outside the marked tiles are left alone.
        #[test]
        fn blur_tiles_equal_the_full_blur_on_marked_tiles(
            (width, height, pixels) in (1usize..150, 1usize..70)
                .prop_flat_map(|(w, h)| (Just(w), Just(h), prop::collection::vec(any::<u8>(), w * h))),
            points in prop::collection::vec((0.0f64..1.0, 0.0f64..1.0), 0..6),
            reach in 0usize..40,
        ) {
            let mut tiles = BlurTiles::default();
            tiles.clear(width, height);
            for (fx, fy) in points {
                tiles.mark_around((fx * width as f64) as usize, (fy * height as f64) as usize, reach);
            }
            let mut full = vec![0u8; width * height];
            gaussian_blur(&pixels, width, &mut full, &mut Vec::new());
            const UNTOUCHED: u8 = 0xa5;
            let mut tiled = vec![UNTOUCHED; width * height];
            blur_tiles(&pixels, width, &tiles, &mut tiled, &mut Vec::new());
            for y in 0..height {
                for x in 0..width {
                    let expected = if tiles.covers(x, y) { full[y * width + x] } else { UNTOUCHED };
                    prop_assert_eq!(tiled[y * width + x], expected, "({}, {})", x, y);
                }
            }
        }
    }

    #[test]
    fn tiles_cover_the_reach_of_each_point_and_little_more() {
        let mut tiles = BlurTiles::default();
        tiles.clear(200, 100);
        tiles.mark_around(100, 50, 19);
        // 81..=119 spans tiles 2..=3 (x 64..128), 31..=69 tiles 1..=4 (y 16..80).
        for y in 0..100 {
            for x in 0..200 {
                let inside = (64..128).contains(&x) && (16..80).contains(&y);
                assert_eq!(tiles.covers(x, y), inside, "({x}, {y})");
            }
        }
        tiles.mark_around(0, 99, 19);
        assert!(tiles.covers(0, 99) && tiles.covers(31, 80) && !tiles.covers(32, 99));
        tiles.clear(200, 100);
        assert!(!tiles.covers(100, 50));
    }
}
