//! The scale pyramid (docs/orb-reference.md §1): the fixed-point bilinear resize from
//! one level to the next, with the taps of [`crate::spec::pyramid`].

use crate::spec::pyramid::{resize_taps, ResizeTaps, WEIGHT_ONE};
use multiversion::multiversion;

/// Resizes one pyramid level into the next: the taps of both axes, the horizontal
/// taps as byte shuffles, and the rows interpolated so far.
pub struct Resizer {
    x_taps: ResizeTaps,
    y_taps: ResizeTaps,
    shuffles: Vec<ShuffleBlock>,
    cache: RowCache,
}

impl Resizer {
    /// For a `src_width x src_height` level resized to `dst_width x dst_height`.
    pub fn new(src_width: usize, src_height: usize, dst_width: usize, dst_height: usize) -> Self {
        let x_taps = resize_taps(src_width, dst_width);
        Self {
            shuffles: ShuffleBlock::leading(&x_taps, src_width),
            y_taps: resize_taps(src_height, dst_height),
            x_taps,
            cache: RowCache::default(),
        }
    }

    /// Resizes `src` (`src_width` pixels a row) into `dst` with the axis taps:
    /// `out = (wy0 (wx0 p00 + wx1 p01) + wy1 (wx0 p10 + wx1 p11) + 2^15) >> 16`.
    pub fn resize(&mut self, src: &[u8], src_width: usize, dst: &mut [u8]) {
        if self.x_taps.first.is_empty() || src_width == 0 {
            return;
        }
        self.cache.ids = [None, None];
        resize_rows(src, src_width, dst, self);
    }
}

/// The horizontal taps of 8 destination pixels as one shuffle of the 16 source
/// bytes from `base`: bytes `2j` and `2j + 1` of `pick` select pixel `j`'s first and
/// second tap, `weights` holds their weights in the same order. One vector load,
/// shuffle and multiply-add then interpolate 8 pixels, where a gather per pixel
/// pair costs several times as much.
#[derive(Clone, Copy)]
struct ShuffleBlock {
    base: u32,
    pick: [u8; 16],
    weights: [i16; 16],
}

impl ShuffleBlock {
    /// Blocks for the destination pixels `0..8 k` for the largest `k` at which each
    /// block's taps lie within 16 bytes of its base and the 16-byte load stays in a
    /// row of `src_width` pixels (all but the row's end when downscaling by less
    /// than 2); the rest of the row takes the scalar loop.
    fn leading(taps: &ResizeTaps, src_width: usize) -> Vec<Self> {
        let last = src_width.saturating_sub(1) as u32;
        let blocks = taps
            .first
            .chunks_exact(8)
            .zip(taps.second_weight.chunks_exact(8));
        blocks
            .map_while(|(first, second_weight)| {
                let base = first[0];
                let mut block = Self {
                    base,
                    pick: [0; 16],
                    weights: [0; 16],
                };
                for j in 0..8 {
                    let second = (first[j] + 1).min(last);
                    let (a, b) = (first[j].checked_sub(base)?, second.checked_sub(base)?);
                    block.pick[2 * j] = u8::try_from(a).ok().filter(|&a| a < 16)?;
                    block.pick[2 * j + 1] = u8::try_from(b).ok().filter(|&b| b < 16)?;
                    let w1 = second_weight[j] as i16;
                    block.weights[2 * j] = WEIGHT_ONE as i16 - w1;
                    block.weights[2 * j + 1] = w1;
                }
                (base as usize + 16 <= src_width).then_some(block)
            })
            .collect()
    }
}

/// Two horizontally interpolated source rows, kept so each source row is
/// interpolated once even though consecutive destination rows share it. Values
/// are at most `255 · 256` and fit u16, which keeps the vertical pass cheap.
#[derive(Default)]
struct RowCache {
    rows: [Vec<u16>; 2],
    ids: [Option<usize>; 2],
}

impl RowCache {
    #[inline(always)]
    fn fill(
        &mut self,
        slot: usize,
        src_row: &[u8],
        x_taps: &ResizeTaps,
        shuffles: &[ShuffleBlock],
        id: usize,
    ) {
        let last = src_row.len() - 1;
        let out = &mut self.rows[slot];
        out.resize(x_taps.first.len(), 0);
        let done = interpolate_row(src_row, shuffles, out);
        let taps = x_taps.first.iter().zip(&x_taps.second_weight).skip(done);
        for (o, (&first, &w1)) in out[done..].iter_mut().zip(taps) {
            let s = first as usize;
            let w1 = u32::from(w1);
            *o = ((WEIGHT_ONE - w1) * u32::from(src_row[s])
                + w1 * u32::from(src_row[(s + 1).min(last)])) as u16;
        }
        self.ids[slot] = Some(id);
    }
}

/// The horizontal taps of the row's first pixels, a [`ShuffleBlock`] (8 destination
/// pixels) at a time, with AVX2 where the CPU has it; returns how many pixels of `out`
/// it wrote.
fn interpolate_row(src_row: &[u8], shuffles: &[ShuffleBlock], out: &mut [u16]) -> usize {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        return unsafe { interpolate_row_avx2(src_row, shuffles, out) };
    }
    interpolate_row_portable(src_row, shuffles, out)
}

/// [`interpolate_row_avx2`]'s sums a pixel at a time, for CPUs without AVX2 (Jetson's
/// Arm cores among them).
fn interpolate_row_portable(src_row: &[u8], shuffles: &[ShuffleBlock], out: &mut [u16]) -> usize {
    let blocks = shuffles.len().min(out.len() / 8);
    for (block, out) in shuffles[..blocks].iter().zip(out.chunks_exact_mut(8)) {
        let src = &src_row[block.base as usize..][..16];
        for (j, o) in out.iter_mut().enumerate() {
            let tap =
                |k: usize| i32::from(src[usize::from(block.pick[k])]) * i32::from(block.weights[k]);
            // At most 255 * 256: exact in u16.
            *o = (tap(2 * j) + tap(2 * j + 1)) as u16;
        }
    }
    8 * blocks
}

/// The horizontal taps of one row, a [`ShuffleBlock`] (8 destination pixels) at a
/// time; returns how many pixels of `out` it wrote.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn interpolate_row_avx2(
    src_row: &[u8],
    shuffles: &[ShuffleBlock],
    out: &mut [u16],
) -> usize {
    use std::arch::x86_64::*;
    let blocks = shuffles.len().min(out.len() / 8);
    for (i, block) in shuffles[..blocks].iter().enumerate() {
        let base = block.base as usize;
        assert!(
            base + 16 <= src_row.len(),
            "a shuffle block outside its row"
        );
        // SAFETY: the 16 bytes from `base` lie inside `src_row` (asserted), `pick` and
        // `weights` are 16 bytes and 32 bytes, and pixels 8 i..8 i + 8 of `out` exist
        // (i < out.len() / 8).
        unsafe {
            let src = _mm_loadu_si128(src_row.as_ptr().add(base).cast());
            let pairs = _mm_shuffle_epi8(src, _mm_loadu_si128(block.pick.as_ptr().cast()));
            let weights = _mm256_loadu_si256(block.weights.as_ptr().cast());
            // Pixels at most 255 and weights at most 256: each sum fits u16 exactly.
            let sums = _mm256_madd_epi16(_mm256_cvtepu8_epi16(pairs), weights);
            // The pack works per 128-bit half; the permute puts quadwords 0 and 2
            // (pixels 0-3, 4-7) first.
            let packed = _mm256_packus_epi32(sums, sums);
            let ordered = _mm256_permute4x64_epi64::<0b1000>(packed);
            _mm_storeu_si128(
                out.as_mut_ptr().add(8 * i).cast(),
                _mm256_castsi256_si128(ordered),
            );
        }
    }
    8 * blocks
}

#[multiversion(targets("x86_64+avx2"))]
fn resize_rows(src: &[u8], src_width: usize, dst: &mut [u8], resizer: &mut Resizer) {
    let Resizer {
        x_taps,
        y_taps,
        shuffles,
        cache,
    } = resizer;
    let dst_width = x_taps.first.len();
    let src_height = src.len() / src_width;
    let rows = dst.chunks_exact_mut(dst_width);
    for ((out, &first), &w1) in rows.zip(&y_taps.first).zip(&y_taps.second_weight) {
        let top = first as usize;
        let bottom = (top + 1).min(src_height - 1);
        let src_row = |y: usize| &src[y * src_width..(y + 1) * src_width];
        if cache.ids[1] == Some(top) {
            cache.rows.swap(0, 1);
            cache.ids.swap(0, 1);
        }
        if cache.ids[0] != Some(top) {
            cache.fill(0, src_row(top), x_taps, shuffles, top);
        }
        if cache.ids[1] != Some(bottom) {
            cache.fill(1, src_row(bottom), x_taps, shuffles, bottom);
        }
        let w0 = (WEIGHT_ONE - u32::from(w1)) as u16;
        for ((o, &a), &b) in out.iter_mut().zip(&cache.rows[0]).zip(&cache.rows[1]) {
            let sum = u32::from(w0) * u32::from(a) + u32::from(w1) * u32::from(b);
            *o = ((sum + (1 << 15)) >> 16) as u8;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resize_matches_the_formula(sw: usize, sh: usize, dw: usize, dh: usize) {
        let src: Vec<u8> = (0..sw * sh).map(|i| (i * 7919 % 251) as u8).collect();
        let (xt, yt) = (resize_taps(sw, dw), resize_taps(sh, dh));
        let mut dst = vec![0u8; dw * dh];
        Resizer::new(sw, sh, dw, dh).resize(&src, sw, &mut dst);
        for y in 0..dh {
            for x in 0..dw {
                let (sx, sy) = (xt.first[x] as usize, yt.first[y] as usize);
                let (wx1, wy1) = (xt.second_weight[x] as u32, yt.second_weight[y] as u32);
                let p = |yy: usize, xx: usize| src[yy.min(sh - 1) * sw + xx.min(sw - 1)] as u32;
                let expect = ((256 - wy1) * ((256 - wx1) * p(sy, sx) + wx1 * p(sy, sx + 1))
                    + wy1 * ((256 - wx1) * p(sy + 1, sx) + wx1 * p(sy + 1, sx + 1))
                    + (1 << 15))
                    >> 16;
                assert_eq!(
                    dst[y * dw + x] as u32,
                    expect,
                    "{sw}x{sh} -> {dw}x{dh} at ({x}, {y})"
                );
            }
        }
    }

    #[test]
    fn resize_matches_the_formula_pixel_by_pixel() {
        // The pyramid's step (1.2), a row too short for a shuffle block, a step of
        // more than 2 (taps too far apart for one), and an upscale.
        for (sw, sh, dw, dh) in [(1920, 31, 1600, 26), (37, 23, 31, 19), (15, 9, 12, 7)] {
            resize_matches_the_formula(sw, sh, dw, dh);
        }
        for (sw, sh, dw, dh) in [(250, 20, 100, 8), (40, 12, 53, 16)] {
            resize_matches_the_formula(sw, sh, dw, dh);
        }
    }

    #[test]
    fn both_shuffle_paths_interpolate_as_the_taps_say() {
        let (sw, dw) = (1920, 1600);
        let row: Vec<u8> = (0..sw).map(|i| (i * 7919 % 251) as u8).collect();
        let taps = resize_taps(sw, dw);
        let blocks = ShuffleBlock::leading(&taps, sw);
        let (mut fast, mut portable) = (vec![0u16; dw], vec![0u16; dw]);
        let done = interpolate_row(&row, &blocks, &mut fast);
        assert_eq!(interpolate_row_portable(&row, &blocks, &mut portable), done);
        for x in 0..done {
            let (s, w1) = (taps.first[x] as usize, u32::from(taps.second_weight[x]));
            let expect = (256 - w1) * u32::from(row[s]) + w1 * u32::from(row[(s + 1).min(sw - 1)]);
            assert_eq!(
                (u32::from(fast[x]), u32::from(portable[x])),
                (expect, expect),
                "at {x}"
            );
        }
    }

    #[test]
    fn shuffle_blocks_cover_a_pyramid_row_but_its_end() {
        let blocks = ShuffleBlock::leading(&resize_taps(1920, 1600), 1920).len();
        assert_eq!(blocks, 1600 / 8 - 1);
        assert!(ShuffleBlock::leading(&resize_taps(250, 100), 250).is_empty());
    }
}
