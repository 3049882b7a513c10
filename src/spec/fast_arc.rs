//! The FAST-9 ring and its arc table (docs/orb-reference.md §2): which 16-bit ring masks
//! hold 9 circularly contiguous set bits.

use std::sync::LazyLock;

/// The ring as `(dx, dy)`, in OpenCV's `offsets16` order.
pub const RING: [(isize, isize); 16] = [
    (0, 3),
    (1, 3),
    (2, 2),
    (3, 1),
    (3, 0),
    (3, -1),
    (2, -2),
    (1, -3),
    (0, -3),
    (-1, -3),
    (-2, -2),
    (-3, -1),
    (-3, 0),
    (-3, 1),
    (-2, 2),
    (-1, 3),
];

/// Pixels closer than this to the border have no ring and score 0.
pub const RING_RADIUS: usize = 3;

/// A corner needs this many circularly contiguous ring pixels on one side.
pub const MIN_ARC: u32 = 9;

/// Words of [`arc_table`]: 65,536 one-bit entries.
pub const ARC_WORDS: usize = 65_536 / 64;

/// Whether `mask` has [`MIN_ARC`] or more circularly contiguous set bits: bit `j`
/// of the AND of 9 shifted copies of the doubled mask is set iff bits
/// `j..j+9` (mod 16) all are.
pub fn has_arc(mask: u16) -> bool {
    let doubled = u32::from(mask) | (u32::from(mask) << 16);
    (1..MIN_ARC).fold(doubled, |run, shift| run & (doubled >> shift)) != 0
}

static ARC_TABLE: LazyLock<[u64; ARC_WORDS]> = LazyLock::new(|| {
    let mut words = [0u64; ARC_WORDS];
    for mask in 0..=u16::MAX {
        if has_arc(mask) {
            words[usize::from(mask) / 64] |= 1 << (mask % 64);
        }
    }
    words
});

/// The 65,536-entry arc table, `ARC[m] = has_arc(m)`, stored as a bitset: entry
/// `m` is bit `m % 64` of word `m / 64` (8 KB; the CUDA backend uploads these words).
pub fn arc_table() -> &'static [u64; ARC_WORDS] {
    &ARC_TABLE
}
