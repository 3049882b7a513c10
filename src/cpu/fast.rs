//! FAST-9 on the 16-pixel ring and the FAST score map (docs/orb-reference.md §2).
//!
//! Per pixel, the ring is compared with `c + t` and `c - t` into a bright and a
//! dark 16-bit mask, and the arc table says whether a mask holds 9 circularly
//! contiguous set bits. Rows are scored 32 pixels at a time by the closed form of
//! the score instead (code the compiler vectorises, with AVX2 where the CPU has
//! it): it decides the same corners without a branch per pixel; the tests hold
//! it to the table path and to the brute-force segment test.

use rayon::prelude::*;

use super::blocks::{block, block_starts, top_bits};
use crate::spec::fast_arc::{arc_table, ARC_WORDS, MIN_ARC, RING, RING_RADIUS};
use multiversion::multiversion;

fn arc_lookup(table: &[u64; ARC_WORDS], mask: u16) -> bool {
    (table[usize::from(mask) / 64] >> (mask % 64)) & 1 != 0
}

/// Bit `i` of `bright` is `ring[i] > c + t`, of `dark` is `ring[i] < c - t`
/// (saturating `c ± t` in u8 compares exactly as the unsaturated i32 comparison of
/// the spec does: `c + t > 255` leaves no ring pixel brighter, `c < t` none darker).
pub fn ring_masks(centre: u8, ring: &[u8; 16], threshold: u8) -> (u16, u16) {
    let (hi, lo) = (
        centre.saturating_add(threshold),
        centre.saturating_sub(threshold),
    );
    // The compiler keeps these 16 compares scalar; on x86-64 one vector compare and
    // a movemask per mask do it.
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of the x86-64 baseline, and the unaligned load reads
        // exactly the 16 bytes of `ring`.
        unsafe {
            let r = _mm_loadu_si128(ring.as_ptr().cast());
            let (hi, lo) = (_mm_set1_epi8(hi as i8), _mm_set1_epi8(lo as i8));
            // Unsigned bytes: r <= hi iff max(r, hi) == hi; r >= lo iff min(r, lo) == lo.
            let not_bright = _mm_cmpeq_epi8(_mm_max_epu8(r, hi), hi);
            let not_dark = _mm_cmpeq_epi8(_mm_min_epu8(r, lo), lo);
            (
                !(_mm_movemask_epi8(not_bright) as u16),
                !(_mm_movemask_epi8(not_dark) as u16),
            )
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let (mut bright, mut dark) = (0u16, 0u16);
        for (i, &r) in ring.iter().enumerate() {
            bright |= u16::from(r > hi) << i;
            dark |= u16::from(r < lo) << i;
        }
        (bright, dark)
    }
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
    corner_score_one_side(centre, ring, true).max(corner_score_one_side(centre, ring, false))
}

/// [`corner_score`] over the arcs of one side only (`c - r` on the dark side, `r - c`
/// on the bright one). A corner is a corner on one side only (9 + 9 > 16), and that
/// side's arcs hold the score.
fn corner_score_one_side(centre: u8, ring: &[u8; 16], dark: bool) -> i32 {
    let sign = if dark { 1 } else { -1 };
    // i16 lanes: SSE2 has 16-bit min/max, not 32-bit ones.
    let diff = ring.map(|r| sign * (i16::from(centre) - i16::from(r)));
    i32::from(best_arc_minimum(&diff)) - 1
}

/// `max` over the 16 circular arcs of 9 values of the arc's `min`, from minima of
/// runs of 2, 4 and 8 (a run of 9 is a run of 8 and the value after it).
fn best_arc_minimum(v: &[i16; 16]) -> i16 {
    let runs = |shorter: &[i16; 16], step: usize| {
        std::array::from_fn::<i16, 16, _>(|i| shorter[i].min(shorter[(i + step) % 16]))
    };
    let run8 = runs(&runs(&runs(v, 1), 2), 4);
    (0..16)
        .map(|i| run8[i].min(v[(i + 8) % 16]))
        .fold(i16::MIN, i16::max)
}

/// Pixels scored at once; the loops over them vectorise.
const LANES: usize = 32;

type Lanes = [u8; LANES];

/// Runs `$body` for `$i` = 0..16, written out so every index is a constant: with
/// a loop the compiler kept the 16 vectors in memory.
macro_rules! unroll_16 {
    (|$i:ident| $body:expr) => {{
        unroll_16!(@ $i $body; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    }};
    (@ $i:ident $body:expr; $($n:literal)*) => {{
        $({
            let $i: usize = $n;
            $body;
        })*
    }};
}

/// `op` lane by lane, e.g. `lanewise(a, b, u8::min)`.
#[inline(always)]
fn lanewise(a: &Lanes, b: &Lanes, op: impl Fn(u8, u8) -> u8) -> Lanes {
    let mut out = [0; LANES];
    for j in 0..LANES {
        out[j] = op(a[j], b[j]);
    }
    out
}

/// Per lane, minima of runs twice as long: `longer[i] = min(shorter[i], shorter[i + step])`.
#[inline(always)]
fn lane_runs(shorter: &[Lanes; 16], step: usize) -> [Lanes; 16] {
    let mut longer = [[0; LANES]; 16];
    unroll_16!(|i| longer[i] = lanewise(&shorter[i], &shorter[(i + step) % 16], u8::min));
    longer
}

/// Per lane, the best arc minimum of [`best_arc_minimum`] over u8 values: each arc
/// of 9 as two overlapping runs of 8 (`i..i+8` and `i+1..i+9`).
#[inline(always)]
fn lanes_best_arc_minimum(v: &[Lanes; 16]) -> Lanes {
    let run8 = lane_runs(&lane_runs(&lane_runs(v, 1), 2), 4);
    let mut best = [0; LANES];
    unroll_16!(|i| {
        let arc = lanewise(&run8[i], &run8[(i + 1) % 16], u8::min);
        for j in 0..LANES {
            best[j] = best[j].max(arc[j]);
        }
    });
    best
}

/// Per lane `(c ⊕ t, c ⊖ t)`, saturating: a ring pixel is brighter than `c + t` iff
/// `r ⊖ (c ⊕ t) != 0` and darker than `c - t` iff `(c ⊖ t) ⊖ r != 0` (`c + t > 255`
/// leaves none brighter, `c < t` none darker, as in [`ring_masks`]). Computed once
/// per block for both rejections.
#[inline(always)]
fn lane_bounds(centre: &Lanes, threshold: u8) -> (Lanes, Lanes) {
    let (mut above, mut below) = ([0u8; LANES], [0u8; LANES]);
    for j in 0..LANES {
        above[j] = centre[j].saturating_add(threshold);
        below[j] = centre[j].saturating_sub(threshold);
    }
    (above, below)
}

/// Whether any lane may be a corner at `t`: an arc of 9 ring pixels holds
/// two neighbouring compass pixels (ring 0, 4, 8, 12), so a corner has such a pair
/// both brighter than `c + t` or both darker than `c - t`. Most blocks of a
/// smooth image have none and skip the closed form.
#[inline(always)]
fn any_lane_may_be_corner((above, below): &(Lanes, Lanes), ring: &[&Lanes; 16]) -> bool {
    // Per compass pixel, by how much it passes `c + t` (bright) or `c - t` (dark);
    // a pair passes when the smaller of its two is nonzero.
    let mut bright = [[0u8; LANES]; 4];
    let mut dark = [[0u8; LANES]; 4];
    for (i, k) in [0, 4, 8, 12].into_iter().enumerate() {
        for j in 0..LANES {
            bright[i][j] = ring[k][j].saturating_sub(above[j]);
            dark[i][j] = below[j].saturating_sub(ring[k][j]);
        }
    }
    let mut pairs = [0u8; LANES];
    for j in 0..LANES {
        let pair = |v: &[Lanes; 4], a: usize, b: usize| v[a][j].min(v[b][j]);
        pairs[j] = (pair(&bright, 0, 1).max(pair(&bright, 1, 2)))
            .max(pair(&bright, 2, 3).max(pair(&bright, 3, 0)))
            .max(pair(&dark, 0, 1).max(pair(&dark, 1, 2)))
            .max(pair(&dark, 2, 3).max(pair(&dark, 3, 0)));
    }
    let mut passes = [0u8; LANES];
    for j in 0..LANES {
        passes[j] = if pairs[j] != 0 { 0xff } else { 0 };
    }
    top_bits(&passes) != 0
}

/// Whether any lane has 9 or more ring pixels brighter than `c + t` or 9 or more
/// darker than `c - t`, which a corner needs: the second, finer rejection. Counts
/// the ring pixels that do not pass.
#[inline(always)]
fn any_lane_has_enough_ring((above, below): &(Lanes, Lanes), ring: &[&Lanes; 16]) -> bool {
    let (mut not_bright, mut not_dark) = ([0u8; LANES], [0u8; LANES]);
    for r in ring {
        for j in 0..LANES {
            not_bright[j] += u8::from(r[j].saturating_sub(above[j]) == 0);
            not_dark[j] += u8::from(below[j].saturating_sub(r[j]) == 0);
        }
    }
    let mut enough = [0u8; LANES];
    for j in 0..LANES {
        enough[j] = if not_bright[j].min(not_dark[j]) <= 16 - MIN_ARC as u8 {
            0xff
        } else {
            0
        };
    }
    top_bits(&enough) != 0
}

/// Scores `LANES` pixels at once by the closed form of the score (§2), which
/// needs no per-pixel branch: with `r ⊖ c` the saturating difference, the best
/// arc minimum of `r ⊖ c` (bright side) and `c ⊖ r` (dark side) is `s(p) + 1`.
/// Saturating at 0 changes no winning arc: a corner at `t >= 0` has an arc whose
/// differences all exceed `t`, and every arc of the other side holds one of
/// its pixels (9 + 9 > 16), so scores 0. A pixel is a corner at `t` iff that
/// best exceeds `t`.
#[inline(always)]
fn score_block(centre: &Lanes, ring: &[&Lanes; 16], threshold: u8, out: &mut Lanes) {
    // Whole vectors assigned (not lanes): the compiler then drops the zeroing.
    let (mut bright, mut dark) = ([[0; LANES]; 16], [[0; LANES]; 16]);
    unroll_16!(|k| bright[k] = lanewise(ring[k], centre, u8::saturating_sub));
    let bright = lanes_best_arc_minimum(&bright);
    unroll_16!(|k| dark[k] = lanewise(centre, ring[k], u8::saturating_sub));
    let dark = lanes_best_arc_minimum(&dark);
    for j in 0..LANES {
        let best = bright[j].max(dark[j]);
        out[j] = if best > threshold { best - 1 } else { 0 };
    }
}

/// One pixel by the arc table (§2): masks, a lookup, and the score of corners.
/// The path for rows narrower than a block; the tests hold the block path to it.
fn score_pixel(centre: u8, ring: &[u8; 16], threshold: u8, table: &[u64; ARC_WORDS]) -> u8 {
    let (bright, dark) = ring_masks(centre, ring, threshold);
    if !is_corner(table, bright, dark) {
        return 0;
    }
    // A corner at `threshold` has a score in threshold..=254.
    let on_dark_side = dark.count_ones() >= MIN_ARC;
    corner_score_one_side(centre, ring, on_dark_side) as u8
}

/// Scores one image row; `out` is that row of the score map.
#[multiversion(targets("x86_64+avx2"))]
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
    if inner < LANES {
        for (x, o) in out.iter_mut().enumerate() {
            *o = score_pixel(centre[x], &ring.map(|row| row[x]), threshold, table);
        }
        return;
    }
    // Pixels in two overlapping blocks are scored twice, to the same value.
    for start in block_starts(inner, LANES) {
        let centre = block::<LANES, _>(centre, start);
        // A loop, not `ring.map(..)`: the compiler kept that call out of line.
        let mut ring_block = [centre; 16];
        for (b, row) in ring_block.iter_mut().zip(&ring) {
            *b = block(row, start);
        }
        let ring = ring_block;
        let out: &mut Lanes = (&mut out[start..start + LANES])
            .try_into()
            .expect("a block inside its row");
        let bounds = lane_bounds(centre, threshold);
        if any_lane_may_be_corner(&bounds, &ring) && any_lane_has_enough_ring(&bounds, &ring) {
            score_block(centre, &ring, threshold, out);
        }
    }
}

/// The score map of one level built at `threshold` (`T_map` of the spec):
/// `scores[y * width + x] = s(p)`, at least `threshold` on corners, 0 elsewhere and
/// on the 3-pixel border. Rows run in parallel.
pub fn score_map(image: &[u8], width: usize, threshold: u8, scores: &mut [u8]) {
    let height = image.len().checked_div(width).unwrap_or(0);
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

    proptest! {
        #[test]
        fn masks_hold_one_bit_per_ring_pixel(centre: u8, ring: [u8; 16], t in 0u8..=254) {
            let (bright, dark) = ring_masks(centre, &ring, t);
            for (i, &r) in ring.iter().enumerate() {
                let (c, t, r) = (i32::from(centre), i32::from(t), i32::from(r));
                prop_assert_eq!(bright >> i & 1 == 1, r > c + t);
                prop_assert_eq!(dark >> i & 1 == 1, r < c - t);
            }
        }
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

    /// The block path (closed form, 32 pixels at once) equals the per-pixel table
    /// path on every pixel of real images, both as dispatched (AVX2 where the CPU
    /// has it) and compiled for the baseline, at thresholds from 0 to 100.
    #[test]
    fn block_path_equals_table_path_on_real_images() {
        let table = arc_table();
        for name in ["graf1.png", "box.pgm", "basketball1.png"] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data")
                .join(name);
            let image = crate::image::GrayImage::open(&path).expect("test image");
            let (w, h) = (image.width(), image.height());
            for t in [0u8, 1, 7, 20, 100] {
                let mut dispatched = vec![0u8; w * h];
                score_map(image.data(), w, t, &mut dispatched);
                let mut baseline = vec![0u8; w * h];
                for (y, out) in baseline.chunks_exact_mut(w).enumerate().take(h - 3).skip(3) {
                    score_row(image.data(), w, y, t, table, out);
                }
                assert!(
                    dispatched == baseline,
                    "{name} at {t}: dispatched != baseline"
                );
                let mut corners = 0;
                for y in 3..h - 3 {
                    for x in 3..w - 3 {
                        let ring = RING.map(|(dx, dy)| {
                            image.get((x as isize + dx) as usize, (y as isize + dy) as usize)
                        });
                        let expected = score_pixel(image.get(x, y), &ring, t, table);
                        corners += usize::from(expected > 0);
                        assert_eq!(baseline[y * w + x], expected, "{name} ({x}, {y}) at {t}");
                    }
                }
                assert!(corners > 10, "{name}: only {corners} corners at {t}");
            }
        }
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
