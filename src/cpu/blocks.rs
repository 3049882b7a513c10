//! Fixed-width blocks of a row: loops over a `[T; N]` vectorise where loops over
//! slices of unknown length keep their bounds checks.
//!
//! The loops over blocks are marked `#[multiversion(targets("x86_64+avx2"))]`: each is
//! compiled for AVX2 (32-byte vectors) too, which runs where the CPU has it, else the
//! x86-64 baseline (SSE2, 16-byte vectors) or the target's own baseline. The same source
//! serves both, so results are identical. What such a loop calls and wants widened
//! must be `#[inline(always)]` (closures are not always inlined: hot helpers are
//! functions).

/// `N` elements of `row` from `start`; the caller keeps `start + N <= row.len()`.
pub fn block<const N: usize, T>(row: &[T], start: usize) -> &[T; N] {
    row[start..start + N]
        .try_into()
        .expect("a block inside its row")
}

/// Starts of `N`-wide blocks covering `0..len` (`len >= n`): every `n`, then one
/// block ending at `len` that may overlap the one before, so no block is partial.
/// Work on an overlapped element must be idempotent.
pub fn block_starts(len: usize, n: usize) -> impl Iterator<Item = usize> {
    (0..len - n).step_by(n).chain([len - n])
}

/// Bit `j` is the top bit of `lanes[j]` (x86's `movemask`; the compiler does not
/// find it in the portable loop).
#[inline(always)]
pub fn top_bits(lanes: &[u8; 32]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_loadu_si128, _mm_movemask_epi8};
        // SAFETY: SSE2 is part of the x86-64 baseline; the two unaligned loads read
        // the 32 bytes of `lanes`.
        unsafe {
            let low = _mm_movemask_epi8(_mm_loadu_si128(lanes.as_ptr().cast())) as u32;
            let high = _mm_movemask_epi8(_mm_loadu_si128(lanes.as_ptr().add(16).cast())) as u32;
            low | high << 16
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        (0..32).fold(0, |bits, j| bits | (u32::from(lanes[j] >> 7) << j))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_the_row_without_partial_blocks() {
        assert_eq!(block_starts(40, 16).collect::<Vec<_>>(), vec![0, 16, 24]);
        assert_eq!(block_starts(32, 16).collect::<Vec<_>>(), vec![0, 16]);
        assert_eq!(block_starts(16, 16).collect::<Vec<_>>(), vec![0]);
        assert_eq!(block::<3, u8>(&[1, 2, 3, 4, 5], 2), &[3, 4, 5]);
        let lanes = std::array::from_fn(|j| if j % 3 == 0 { 0x80 + j as u8 } else { 0x7f });
        let expected = (0..32)
            .filter(|j| j % 3 == 0)
            .fold(0, |bits, j| bits | 1 << j);
        assert_eq!(top_bits(&lanes), expected);
    }
}
