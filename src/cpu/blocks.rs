//! Fixed-width blocks of a row: loops over a `[T; N]` vectorise where loops over
//! slices of unknown length keep their bounds checks.

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
