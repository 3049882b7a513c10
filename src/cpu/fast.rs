//! FAST-9 on the 16-pixel ring and the FAST score map (docs/orb-reference.md §2).
//!
//! Detection never branches per ring pixel: each pixel's ring is compared with
//! `c + t` and `c - t` into a bright and a dark 16-bit mask, and the arc table says
//! whether a mask holds 9 circularly contiguous set bits. Whole rows are first
//! counted 32 pixels at a time (code the compiler vectorises); only pixels with 9
//! or more bright or dark ring pixels build masks, and only corners get a score.

use std::sync::LazyLock;

use rayon::prelude::*;

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

fn arc_lookup(table: &[u64; ARC_WORDS], mask: u16) -> bool {
    (table[usize::from(mask) / 64] >> (mask % 64)) & 1 != 0
}

/// Bit `i` of `bright` is `ring[i] > c + t`, of `dark` is `ring[i] < c - t`.
pub fn ring_masks(centre: u8, ring: &[u8; 16], threshold: u8) -> (u16, u16) {
    let (c, t) = (i32::from(centre), i32::from(threshold));
    ring.iter()
        .enumerate()
        .fold((0, 0), |(bright, dark), (i, &r)| {
            let r = i32::from(r);
            (
                bright | (u16::from(r > c + t) << i),
                dark | (u16::from(r < c - t) << i),
            )
        })
}

/// Whether the pixel is a corner at the threshold its masks were built with.
/// A mask with fewer than 9 set bits cannot hold an arc and skips the lookup.
pub fn is_corner(table: &[u64; ARC_WORDS], bright: u16, dark: u16) -> bool {
    (bright.count_ones() >= MIN_ARC && arc_lookup(table, bright))
        || (dark.count_ones() >= MIN_ARC && arc_lookup(table, dark))
}

/// The FAST score in closed form: over the 16 arcs of 9 ring pixels, the largest
/// `min(r - c)` or `min(c - r)`, minus 1 — the largest `t` at which the pixel is a
/// corner (negative when it is not one even at `t = 0`).
pub fn corner_score(centre: u8, ring: &[u8; 16]) -> i32 {
    let diff = ring.map(|r| i32::from(centre) - i32::from(r));
    let best = (0..16)
        .map(|start| {
            let arc = (0..MIN_ARC as usize).map(|k| diff[(start + k) % 16]);
            let (lo, hi) = arc.fold((i32::MAX, i32::MIN), |(lo, hi), d| (lo.min(d), hi.max(d)));
            lo.max(-hi)
        })
        .max()
        .unwrap_or(0);
    best - 1
}

/// Pixels counted at once; the loops over them vectorise.
const LANES: usize = 32;

fn lanes(row: &[u8], start: usize) -> &[u8; LANES] {
    row[start..start + LANES]
        .try_into()
        .expect("a slice of LANES bytes")
}

/// Bit `j` is set when pixel `start + j` has at least 9 ring pixels brighter than
/// `c + t` or at least 9 darker than `c - t` (saturating `c ± t` in u8 compares
/// exactly as the unsaturated i32 comparison of the spec does).
fn lanes_with_enough_ring(centre: &[u8], ring: &[&[u8]; 16], start: usize, t: u8) -> u32 {
    let c = lanes(centre, start);
    let hi = c.map(|c| c.saturating_add(t));
    let lo = c.map(|c| c.saturating_sub(t));
    let (mut bright, mut dark) = ([0u8; LANES], [0u8; LANES]);
    for ring_row in ring {
        let r = lanes(ring_row, start);
        for j in 0..LANES {
            bright[j] += u8::from(r[j] > hi[j]);
            dark[j] += u8::from(r[j] < lo[j]);
        }
    }
    (0..LANES).fold(0, |bits, j| {
        bits | (u32::from(bright[j].max(dark[j]) >= MIN_ARC as u8) << j)
    })
}

/// Scores one image row; `out` is that row of the score map.
fn score_row(
    image: &[u8],
    width: usize,
    y: usize,
    threshold: u8,
    table: &[u64; ARC_WORDS],
    out: &mut [u8],
) {
    out.fill(0);
    let inner = width - 2 * RING_RADIUS;
    let at = |dx: isize, dy: isize| {
        let start = (y as isize + dy) as usize * width + (RING_RADIUS as isize + dx) as usize;
        &image[start..start + inner]
    };
    let centre = at(0, 0);
    let ring = RING.map(|(dx, dy)| at(dx, dy));
    let out = &mut out[RING_RADIUS..RING_RADIUS + inner];
    let mut score_pixel = |x: usize| {
        let values = ring.map(|row| row[x]);
        let (bright, dark) = ring_masks(centre[x], &values, threshold);
        if is_corner(table, bright, dark) {
            // A corner at `threshold >= 1` has a score in threshold..=254.
            out[x] = corner_score(centre[x], &values) as u8;
        }
    };
    if inner < LANES {
        (0..inner).for_each(score_pixel);
        return;
    }
    // The last block overlaps the one before it so every block is full; pixels in
    // both are scored twice, to the same value.
    let starts = (0..inner - LANES).step_by(LANES).chain([inner - LANES]);
    for start in starts {
        let mut bits = lanes_with_enough_ring(centre, &ring, start, threshold);
        while bits != 0 {
            score_pixel(start + bits.trailing_zeros() as usize);
            bits &= bits - 1;
        }
    }
}

/// The score map of one level: `scores[y * width + x] = s(p)` for
/// `threshold = min_fast_threshold` (`s >= threshold` on corners, 0 elsewhere and
/// on the 3-pixel border). Rows run in parallel.
pub fn score_map(image: &[u8], width: usize, threshold: u8, scores: &mut [u8]) {
    let height = if width == 0 { 0 } else { image.len() / width };
    if width <= 2 * RING_RADIUS || height <= 2 * RING_RADIUS {
        scores.fill(0);
        return;
    }
    let table = arc_table();
    scores
        .par_chunks_mut(width)
        .enumerate()
        .with_min_len(16)
        .for_each(|(y, out)| {
            if (RING_RADIUS..height - RING_RADIUS).contains(&y) {
                score_row(image, width, y, threshold, table, out);
            } else {
                out.fill(0);
            }
        });
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The segment test written out: 9 contiguous ring pixels all brighter than
    /// `c + t` or all darker than `c - t`.
    pub(crate) fn brute_force_corner(centre: u8, ring: &[u8; 16], t: i32) -> bool {
        let c = i32::from(centre);
        (0..16).any(|start| {
            let arc = || (0..9).map(|k| i32::from(ring[(start + k) % 16]));
            arc().all(|r| r > c + t) || arc().all(|r| r < c - t)
        })
    }

    /// The largest threshold that still passes, found by trying them all.
    pub(crate) fn brute_force_score(centre: u8, ring: &[u8; 16]) -> i32 {
        (0..=255)
            .rev()
            .find(|&t| brute_force_corner(centre, ring, t))
            .unwrap_or(-1)
    }

    fn table_corner(centre: u8, ring: &[u8; 16], t: u8) -> bool {
        let (bright, dark) = ring_masks(centre, ring, t);
        is_corner(arc_table(), bright, dark)
    }

    #[test]
    fn arc_table_counts_and_extremes() {
        let table = arc_table();
        assert!(!arc_lookup(table, 0));
        assert!(arc_lookup(table, u16::MAX));
        // 9 bits set across the wrap-around (bits 12..16 and 0..5).
        assert!(arc_lookup(table, 0b1111_0000_0001_1111));
        // 8 contiguous bits plus a separate one: 9 set bits but no arc of 9.
        assert!(!arc_lookup(table, 0b0000_0010_1111_1111));
        // Every mask against the segment test on the bits themselves.
        let brute = (0..=u16::MAX)
            .filter(|&m| (0..16).any(|s| (0..9).all(|k| m >> ((s + k) % 16) & 1 == 1)))
            .count();
        let ones: u32 = table.iter().map(|w| w.count_ones()).sum();
        assert_eq!(ones as usize, brute);
    }

    proptest! {
        #[test]
        fn table_path_equals_segment_test(centre: u8, ring: [u8; 16], t in 0u8..=254) {
            prop_assert_eq!(table_corner(centre, &ring, t), brute_force_corner(centre, &ring, i32::from(t)));
        }

        #[test]
        fn near_corner_rings_agree_too(centre in 40u8..216, offsets in prop::array::uniform16(-40i32..=40), t in 1u8..40) {
            // Rings close to the centre make arcs common, unlike uniform random rings.
            let ring = offsets.map(|o| (i32::from(centre) + o) as u8);
            prop_assert_eq!(table_corner(centre, &ring, t), brute_force_corner(centre, &ring, i32::from(t)));
        }

        #[test]
        fn closed_form_score_equals_largest_passing_threshold(centre: u8, offsets in prop::array::uniform16(-120i32..=120)) {
            let ring = offsets.map(|o| (i32::from(centre) + o).clamp(0, 255) as u8);
            // -1 on both sides: not a corner even at t = 0.
            prop_assert_eq!(corner_score(centre, &ring).max(-1), brute_force_score(centre, &ring));
        }
    }

    /// Every pixel of a real image: the score map equals the brute-force segment
    /// test at `t` and, on corners, the largest passing threshold.
    fn check_real_image(name: &str, t: u8) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(name);
        let image = crate::image::GrayImage::open(&path).expect("test image");
        let (w, h) = (image.width(), image.height());
        let mut scores = vec![0u8; w * h];
        score_map(image.data(), w, t, &mut scores);
        let mut corners = 0;
        for y in 3..h - 3 {
            for x in 3..w - 3 {
                let ring = RING.map(|(dx, dy)| {
                    image.get((x as isize + dx) as usize, (y as isize + dy) as usize)
                });
                let c = image.get(x, y);
                let s = i32::from(scores[y * w + x]);
                if brute_force_corner(c, &ring, i32::from(t)) {
                    corners += 1;
                    // Corners stay corners down to their score (monotone in t).
                    let largest = (i32::from(t)..=255)
                        .take_while(|&u| brute_force_corner(c, &ring, u))
                        .last();
                    assert_eq!(Some(s), largest, "{name} at ({x}, {y})");
                } else {
                    assert_eq!(s, 0, "{name} at ({x}, {y}) is no corner at {t}");
                }
            }
        }
        assert!(corners > 1000, "{name}: only {corners} corners at {t}");
    }

    #[test]
    fn score_map_equals_brute_force_on_real_images() {
        check_real_image("graf1.png", 7);
        check_real_image("box.pgm", 20);
        check_real_image("leuvenA.jpg", 12);
    }

    #[test]
    fn score_map_border_is_zero_and_tiny_images_are_empty() {
        let image: Vec<u8> = (0..40 * 30).map(|i| (i * 37 % 256) as u8).collect();
        let mut scores = vec![1u8; image.len()];
        score_map(&image, 40, 7, &mut scores);
        for y in 0..30 {
            for x in 0..40 {
                if !(3..37).contains(&x) || !(3..27).contains(&y) {
                    assert_eq!(scores[y * 40 + x], 0);
                }
            }
        }
        let mut tiny = vec![9u8; 36];
        score_map(&[0; 36], 6, 7, &mut tiny);
        assert!(tiny.iter().all(|&s| s == 0));
    }
}
