//! The scale pyramid (docs/orb-reference.md §1): the fixed-point bilinear resize from
//! one level to the next, with the taps of [`crate::spec::pyramid`].

use super::blocks::widest_vectors;
use crate::spec::pyramid::{ResizeTaps, WEIGHT_ONE};

/// Two horizontally interpolated source rows, kept so each source row is
/// interpolated once even though consecutive destination rows share it. Values
/// are at most `255 · 256` and fit u16, which keeps the vertical pass cheap.
#[derive(Default)]
pub struct RowCache {
    rows: [Vec<u16>; 2],
    ids: [Option<usize>; 2],
}

impl RowCache {
    #[inline(always)]
    fn fill(&mut self, slot: usize, src_row: &[u8], x_taps: &ResizeTaps, id: usize) {
        let last = src_row.len() - 1;
        let out = &mut self.rows[slot];
        out.resize(x_taps.first.len(), 0);
        // Only x86-64 has a vector path that may take a first part of the row.
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut done = 0;
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            done = unsafe { interpolate_row_avx2(src_row, x_taps, out) };
        }
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

/// The horizontal taps of one row, 8 destination pixels at a time, for as long as
/// a 4-byte gather at `first` stays inside the row (the scalar loop does the rest);
/// returns how many pixels of `out` it wrote. Taps are non-decreasing, so the last
/// of 8 bounds them all; there the second tap `first + 1` is inside the row and
/// equals the clamped one of the formula.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn interpolate_row_avx2(src_row: &[u8], x_taps: &ResizeTaps, out: &mut [u16]) -> usize {
    use std::arch::x86_64::*;
    let (first, second_weight) = (&x_taps.first, &x_taps.second_weight);
    let n = out.len().min(first.len()).min(second_weight.len());
    let mut i = 0;
    while i + 8 <= n && first[i + 7] as usize + 4 <= src_row.len() {
        // SAFETY: lanes i..i + 8 of the three tap and output slices exist (i + 8 <= n),
        // and every gathered 4 bytes lie inside `src_row` (first[i + 7] + 4 <= len).
        unsafe {
            let index = _mm256_loadu_si256(first.as_ptr().add(i).cast());
            let words = _mm256_i32gather_epi32::<1>(src_row.as_ptr().cast(), index);
            let byte = _mm256_set1_epi32(0xff);
            let p0 = _mm256_and_si256(words, byte);
            let p1 = _mm256_and_si256(_mm256_srli_epi32::<8>(words), byte);
            let w1 = _mm256_cvtepu16_epi32(_mm_loadu_si128(second_weight.as_ptr().add(i).cast()));
            let w0 = _mm256_sub_epi32(_mm256_set1_epi32(WEIGHT_ONE as i32), w1);
            let sum = _mm256_add_epi32(_mm256_mullo_epi32(w0, p0), _mm256_mullo_epi32(w1, p1));
            // Sums are at most 255 * 256: packing to u16 is exact. The pack works per
            // 128-bit half; the permute puts quadwords 0 and 2 (pixels 0-3, 4-7) first.
            let packed = _mm256_packus_epi32(sum, sum);
            let ordered = _mm256_permute4x64_epi64::<0b1000>(packed);
            _mm_storeu_si128(
                out.as_mut_ptr().add(i).cast(),
                _mm256_castsi256_si128(ordered),
            );
        }
        i += 8;
    }
    i
}

/// Resizes `src` (`src_width` pixels a row) into `dst` with the axis taps:
/// `out = (wy0 (wx0 p00 + wx1 p01) + wy1 (wx0 p10 + wx1 p11) + 2^15) >> 16`.
pub fn resize(
    src: &[u8],
    src_width: usize,
    dst: &mut [u8],
    x_taps: &ResizeTaps,
    y_taps: &ResizeTaps,
    cache: &mut RowCache,
) {
    let dst_width = x_taps.first.len();
    if dst_width == 0 || src_width == 0 {
        return;
    }
    cache.ids = [None, None];
    resize_rows_widest(src, src_width, dst, x_taps, y_taps, cache);
}

widest_vectors!(fn resize_rows_widest = resize_rows(
    src: &[u8],
    src_width: usize,
    dst: &mut [u8],
    x_taps: &ResizeTaps,
    y_taps: &ResizeTaps,
    cache: &mut RowCache,
));

#[inline(always)]
fn resize_rows(
    src: &[u8],
    src_width: usize,
    dst: &mut [u8],
    x_taps: &ResizeTaps,
    y_taps: &ResizeTaps,
    cache: &mut RowCache,
) {
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
            cache.fill(0, src_row(top), x_taps, top);
        }
        if cache.ids[1] != Some(bottom) {
            cache.fill(1, src_row(bottom), x_taps, bottom);
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
    use crate::spec::pyramid::resize_taps;

    #[test]
    fn resize_matches_the_formula_pixel_by_pixel() {
        let (sw, sh, dw, dh) = (37, 23, 31, 19);
        let src: Vec<u8> = (0..sw * sh).map(|i| (i * 7919 % 251) as u8).collect();
        let (xt, yt) = (resize_taps(sw, dw), resize_taps(sh, dh));
        let mut dst = vec![0u8; dw * dh];
        resize(&src, sw, &mut dst, &xt, &yt, &mut RowCache::default());
        for y in 0..dh {
            for x in 0..dw {
                let (sx, sy) = (xt.first[x] as usize, yt.first[y] as usize);
                let (wx1, wy1) = (xt.second_weight[x] as u32, yt.second_weight[y] as u32);
                let p = |yy: usize, xx: usize| src[yy.min(sh - 1) * sw + xx.min(sw - 1)] as u32;
                let expect = ((256 - wy1) * ((256 - wx1) * p(sy, sx) + wx1 * p(sy, sx + 1))
                    + wy1 * ((256 - wx1) * p(sy + 1, sx) + wx1 * p(sy + 1, sx + 1))
                    + (1 << 15))
                    >> 16;
                assert_eq!(dst[y * dw + x] as u32, expect, "at ({x}, {y})");
            }
        }
    }
}
