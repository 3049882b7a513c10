//! Fixed-width blocks of a row: loops over a `[T; N]` vectorise where loops over
//! slices of unknown length keep their bounds checks. [`with_widest_vectors`] runs
//! such code compiled for AVX2 where the CPU has it.

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

/// Runs `work` compiled for AVX2 (32-byte vectors) when the CPU has it, else for
/// the x86-64 baseline (SSE2, 16-byte vectors) or the target's own baseline. The
/// same source serves both, so results are identical; `work` and what it calls
/// must be `#[inline(always)]` to be compiled with the wider vectors.
#[inline(always)]
pub fn with_widest_vectors<R>(work: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        #[target_feature(enable = "avx2")]
        unsafe fn avx2<R>(work: impl FnOnce() -> R) -> R {
            work()
        }
        // SAFETY: the CPU supports AVX2, checked just above.
        return unsafe { avx2(work) };
    }
    work()
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
    }
}
