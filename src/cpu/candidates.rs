//! Candidates of one level (docs/orb-reference.md §3): non-maximum suppression and the
//! per-cell threshold retry, over the detection area and grid of [`crate::spec::grid`].

use super::blocks::{block, top_bits};
use crate::spec::grid::{DetectionArea, Grid};
use multiversion::multiversion;

/// A pixel of a level that survived non-maximum suppression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub x: u32,
    pub y: u32,
    /// FAST score `s(p)`.
    pub score: u8,
    /// Grid cell (0 when the level has no grid).
    pub cell: u32,
    /// Rank within the cell, 0 for the best (grid selection only).
    pub rank: u32,
    /// Ranking key: the Harris key or the FAST score.
    pub key: i64,
}

impl Candidate {
    pub fn new(x: usize, y: usize, score: u8) -> Self {
        Self {
            x: x as u32,
            y: y as u32,
            score,
            cell: 0,
            rank: 0,
            key: i64::from(score),
        }
    }
}

/// Pixels compared with their neighbours at once; the loops over them vectorise.
const LANES: usize = 32;

/// Bit `j` is set when pixel `x + j` of `here` beats its 8 neighbours (strictly,
/// which also makes it nonzero); the caller keeps `x - 1 .. x + LANES + 1` in the rows.
#[inline(always)]
fn local_maxima_bits(above: &[u8], here: &[u8], below: &[u8], x: usize) -> u32 {
    let s = block::<LANES, _>(here, x);
    let neighbours = [
        block::<LANES, _>(above, x - 1),
        block(above, x),
        block(above, x + 1),
        block(here, x - 1),
        block(here, x + 1),
        block(below, x - 1),
        block(below, x),
        block(below, x + 1),
    ];
    let mut beats = [0xffu8; LANES];
    for n in neighbours {
        for j in 0..LANES {
            beats[j] &= if s[j] > n[j] { 0xff } else { 0 };
        }
    }
    top_bits(&beats)
}

/// Pixels of `area` whose score is nonzero and strictly greater than all 8
/// neighbours' (equal neighbours suppress each other), in raster order.
///
/// Survivors of NMS at any threshold `T` at or above the map's are exactly those
/// with `score >= T`: a neighbour below `T` scores less than such a pixel anyway.
/// The area lies at least one pixel inside the score map.
pub fn local_maxima(scores: &[u8], width: usize, area: &DetectionArea, out: &mut Vec<Candidate>) {
    out.clear();
    local_maxima_rows(scores, width, area, out);
}

#[multiversion(targets("x86_64+avx2"))]
fn local_maxima_rows(scores: &[u8], width: usize, area: &DetectionArea, out: &mut Vec<Candidate>) {
    let blocks_end = area.x0 + area.width() / LANES * LANES;
    for y in area.y0..area.y1 {
        let above = &scores[(y - 1) * width..y * width];
        let here = &scores[y * width..(y + 1) * width];
        let below = &scores[(y + 1) * width..(y + 2) * width];
        for x in (area.x0..blocks_end).step_by(LANES) {
            let mut bits = local_maxima_bits(above, here, below, x);
            while bits != 0 {
                let xx = x + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                out.push(Candidate::new(xx, y, here[xx]));
            }
        }
        for x in blocks_end..area.x1 {
            let s = here[x];
            let beats = |n: &[u8]| s > n[x - 1] && s > n[x] && s > n[x + 1];
            if s > here[x - 1] && s > here[x + 1] && beats(above) && beats(below) {
                out.push(Candidate::new(x, y, s));
            }
        }
    }
}

/// Keeps the candidates at or above `threshold` (`top_response`).
pub fn apply_threshold(candidates: &mut Vec<Candidate>, threshold: u8) {
    candidates.retain(|c| c.score >= threshold);
}

/// ORB-SLAM's retry: a cell keeps its candidates at `fast_threshold` if it has
/// any, else those at `min_fast_threshold` (all local maxima of the score map).
/// Sets each kept candidate's `cell`; `strong` is scratch, one flag per cell.
pub fn apply_cell_thresholds(
    candidates: &mut Vec<Candidate>,
    grid: &Grid,
    fast_threshold: u8,
    strong: &mut Vec<bool>,
) {
    strong.clear();
    strong.resize(grid.n_cells(), false);
    for c in candidates.iter_mut() {
        let cell = grid.cell_of(c.x as usize, c.y as usize);
        c.cell = cell as u32;
        strong[cell] |= c.score >= fast_threshold;
    }
    candidates.retain(|c| !strong[c.cell as usize] || c.score >= fast_threshold);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn maxima(scores: &[u8], width: usize) -> Vec<(u32, u32, u8)> {
        let height = scores.len() / width;
        let area = DetectionArea::new(width, height, 1).unwrap();
        let mut out = Vec::new();
        local_maxima(scores, width, &area, &mut out);
        out.iter().map(|c| (c.x, c.y, c.score)).collect()
    }

    #[test]
    fn nms_is_strict_equal_neighbours_suppress_each_other() {
        #[rustfmt::skip]
        let scores = [
            0, 0, 0, 0, 0, 0, 0,
            0, 9, 9, 0, 0, 5, 0,
            0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 7, 0, 0, 0,
            0, 0, 0, 6, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0,
        ];
        assert_eq!(maxima(&scores, 7), vec![(5, 1, 5), (3, 3, 7)]);
    }

    #[test]
    fn nms_reads_neighbours_outside_the_area_and_skips_zero_runs() {
        // 20 wide so a 16-pixel block is skipped; the 9 outside the area suppresses the 4,
        // and the 3 outside the area is no candidate.
        let mut scores = vec![0u8; 20 * 5];
        scores[2 * 20 + 12] = 8;
        scores[2 * 20 + 17] = 4;
        scores[3 * 20 + 18] = 9;
        scores[2 * 20 + 1] = 3;
        let area = DetectionArea {
            x0: 2,
            y0: 1,
            x1: 18,
            y1: 4,
        };
        let mut out = Vec::new();
        local_maxima(&scores, 20, &area, &mut out);
        let got: Vec<_> = out.iter().map(|c| (c.x, c.y)).collect();
        assert_eq!(got, vec![(12, 2)]);
    }

    /// On a real score map, the block path finds exactly the pixels that the
    /// definition, checked pixel by pixel, calls local maxima.
    #[test]
    fn local_maxima_equal_the_definition_on_a_real_score_map() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/graf1.png");
        let image = crate::image::GrayImage::open(&path).expect("graf1.png");
        let (w, h) = (image.width(), image.height());
        let mut scores = vec![0u8; w * h];
        crate::cpu::fast::score_map(image.data(), w, 7, &mut scores);
        // An area whose width is not a multiple of the block, so both paths run.
        let area = DetectionArea::new(w, h, 31).unwrap();
        assert_ne!(area.width() % LANES, 0);
        let mut found = Vec::new();
        local_maxima(&scores, w, &area, &mut found);
        let mut expected = Vec::new();
        for y in area.y0..area.y1 {
            for x in area.x0..area.x1 {
                let s = scores[y * w + x];
                let is_max = (-1..=1isize).all(|dy| {
                    (-1..=1isize).all(|dx| {
                        let n = scores[(y as isize + dy) as usize * w + (x as isize + dx) as usize];
                        (dx, dy) == (0, 0) || s > n
                    })
                });
                if s > 0 && is_max {
                    expected.push(Candidate::new(x, y, s));
                }
            }
        }
        assert!(expected.len() > 1000, "{} maxima", expected.len());
        assert_eq!(found, expected);
    }

    #[test]
    fn grid_covers_the_area_and_retries_weak_cells() {
        let area = DetectionArea::new(131, 100, 31).unwrap();
        assert_eq!((area.width(), area.height()), (69, 38));
        let grid = Grid::new(area, 30);
        assert_eq!((grid.n_cols, grid.n_rows), (2, 1));
        assert_eq!((grid.cell_width, grid.cell_height), (35, 38));
        assert_eq!(grid.cell_of(99, 68), 1);
        assert_eq!(grid.cell_of(65, 31), 0);

        let mut candidates = vec![
            Candidate::new(40, 40, 25),
            Candidate::new(50, 40, 8),
            Candidate::new(80, 40, 9),
            Candidate::new(90, 50, 12),
        ];
        let mut strong = Vec::new();
        apply_cell_thresholds(&mut candidates, &grid, 20, &mut strong);
        let kept: Vec<_> = candidates.iter().map(|c| (c.x, c.cell)).collect();
        // Cell 0 has a corner at 20 and drops its weak one; cell 1 retries at 7.
        assert_eq!(kept, vec![(40, 0), (80, 1), (90, 1)]);
        assert!(DetectionArea::new(62, 100, 31).is_none());
    }
}
