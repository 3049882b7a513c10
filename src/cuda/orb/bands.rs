//! A frame cut into bands of rows, so that its kernels start on the first rows while
//! the others are still crossing the bus: band by band, the frame's rows are uploaded
//! (and converted to grey), then the rows of every level those rows determine are
//! resized, scored (FAST) and searched for candidates per cell. Each kernel reads only
//! rows that its band or an earlier one wrote; the results are the unbanded ones, bit
//! for bit, and the last band completes every level.

use std::ops::Range;

use crate::cuda::abi::{
    OrbLevel, OrbRows, ResizeTap, RESIZE_RUN, RING_RADIUS, SCORE_TILE_H, SCORE_TILE_W,
};

/// Upload bytes from which a frame is cut in two. Each band pays the pyramid's chain of
/// levels and barriers again (a latency, not work that the bands share out), so a cut
/// pays only where the second half's upload takes longer: on an H200 two bands took
/// 35-45 µs off a 1080p bgr8 frame (6.2 MB) and 25 off a uyvy one (4.1 MB), and 25-33
/// µs off a mono8 one (2.1 MB) on 8 SMs, whose kernels are slow beside the bus (the
/// same within 5 µs on all SMs); three or four bands were slower than two.
const SPLIT_UPLOAD_BYTES: usize = 3 << 19;

/// The most bands a frame is cut into.
pub const MAX_BANDS: usize = 2;

/// The bands a frame of `upload_bytes` is uploaded and run in.
pub fn band_count(upload_bytes: usize) -> usize {
    if upload_bytes >= SPLIT_UPLOAD_BYTES {
        MAX_BANDS
    } else {
        1
    }
}

/// One band: the frame's rows it brings, and what of each level they make computable
/// beyond the bands before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Band {
    pub frame_rows: Range<usize>,
    /// Pixel rows of levels 1.. (`orb_pyramid`); its items are the largest level's
    /// runs of `RESIZE_RUN` pixels, which one warp resizes at a time.
    pub pyramid: Span,
    /// Tile rows of level 0, which read the frame alone (`orb_fast_score`).
    pub level0_tiles: Span,
    /// Tile rows of levels 1.. (`orb_fast_score`).
    pub upper_tiles: Span,
    /// Cell rows of every level (`orb_cell_candidates`).
    pub cells: Span,
}

/// The rows of each level one launch covers, and its work items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub rows: OrbRows,
    pub items: usize,
}

impl Span {
    /// A launch whose items are those of every level's rows.
    fn new(levels: &[OrbLevel], rows: OrbRows, items_per_row: fn(&OrbLevel) -> usize) -> Self {
        let items = level_items(levels, &rows, items_per_row).sum();
        Self { rows, items }
    }

    /// A launch that takes the levels one after the other, whose items are those of
    /// the level with the most.
    fn largest_level(
        levels: &[OrbLevel],
        rows: OrbRows,
        items_per_row: fn(&OrbLevel) -> usize,
    ) -> Self {
        let items = level_items(levels, &rows, items_per_row).max().unwrap_or(0);
        Self { rows, items }
    }
}

/// The work items of each level's rows in `rows`.
fn level_items<'a>(
    levels: &'a [OrbLevel],
    rows: &'a OrbRows,
    items_per_row: fn(&OrbLevel) -> usize,
) -> impl Iterator<Item = usize> + 'a {
    levels
        .iter()
        .enumerate()
        .map(move |(l, level)| (rows.end[l] - rows.begin[l]) as usize * items_per_row(level))
}

fn tiles_per_row(level: &OrbLevel) -> usize {
    (level.width as usize).div_ceil(SCORE_TILE_W)
}

fn runs_per_row(level: &OrbLevel) -> usize {
    (level.width as usize).div_ceil(RESIZE_RUN)
}

fn cells_per_row(level: &OrbLevel) -> usize {
    level.n_cols as usize
}

/// A frame whose pyramid has `levels`, resized with `taps`, cut into `count` bands of
/// frame rows as even as whole rows allow (fewer where the frame has fewer rows).
pub fn bands(levels: &[OrbLevel], taps: &[ResizeTap], count: usize) -> Vec<Band> {
    let Some(frame) = levels.first() else {
        return Vec::new();
    };
    let height = frame.height as usize;
    let count = count.clamp(1, height.max(1));
    let mut done = Ready::none(levels.len());
    (1..=count)
        .map(|b| {
            let frame_rows = done.rows[0]..height * b / count;
            let ready = Ready::below(levels, taps, frame_rows.end);
            let span = |of: fn(&Ready) -> &Vec<usize>, keep: fn(usize) -> bool| {
                let mut rows = OrbRows::default();
                for l in (0..levels.len()).filter(|&l| keep(l)) {
                    rows.begin[l] = of(&done)[l] as i32;
                    rows.end[l] = of(&ready)[l] as i32;
                }
                rows
            };
            let band = Band {
                frame_rows,
                pyramid: Span::largest_level(levels, span(|r| &r.rows, |l| l > 0), runs_per_row),
                level0_tiles: Span::new(levels, span(|r| &r.tiles, |l| l == 0), tiles_per_row),
                upper_tiles: Span::new(levels, span(|r| &r.tiles, |l| l > 0), tiles_per_row),
                cells: Span::new(levels, span(|r| &r.cells, |_| true), cells_per_row),
            };
            done = ready;
            band
        })
        .collect()
}

/// Per level, how far the frame's rows so far carry each kernel: rows of the level
/// resized, tile rows scored, cell rows searched (each a prefix of the level).
struct Ready {
    rows: Vec<usize>,
    tiles: Vec<usize>,
    cells: Vec<usize>,
}

impl Ready {
    fn none(n_levels: usize) -> Self {
        Self {
            rows: vec![0; n_levels],
            tiles: vec![0; n_levels],
            cells: vec![0; n_levels],
        }
    }

    /// With the frame's rows `0..frame_rows` uploaded.
    fn below(levels: &[OrbLevel], taps: &[ResizeTap], frame_rows: usize) -> Self {
        let mut ready = Self::none(levels.len());
        for (l, level) in levels.iter().enumerate() {
            let height = level.height as usize;
            let rows = if l == 0 {
                frame_rows
            } else {
                // Rows whose two source rows are ready; the taps only grow down a level.
                let level_taps = &taps[level.taps_y as usize..][..height];
                level_taps.partition_point(|tap| second_tap(tap) < ready.rows[l - 1])
            };
            let tile_rows = height.div_ceil(SCORE_TILE_H);
            let tiles = if rows == height {
                tile_rows
            } else {
                rows.saturating_sub(RING_RADIUS) / SCORE_TILE_H
            };
            // A cell's non-maximum suppression reads the scores one row past its last.
            let scored = if tiles == tile_rows {
                usize::MAX
            } else {
                tiles * SCORE_TILE_H
            };
            let cells = (0..level.n_rows as usize)
                .take_while(|&row| cell_rows(level, row).end < scored)
                .count();
            ready.rows[l] = rows;
            ready.tiles[l] = tiles;
            ready.cells[l] = cells;
        }
        ready
    }
}

/// The last source row a tap reads (the second one only when it weighs anything, as
/// `second_tap` in kernels/orb/pyramid.cu).
fn second_tap(tap: &ResizeTap) -> usize {
    tap.src as usize + usize::from(tap.w1 != 0)
}

/// The pixel rows of cell row `row` of `level` (as `orb_cell_candidates` cuts them).
fn cell_rows(level: &OrbLevel, row: usize) -> Range<usize> {
    let (edge, cell_h) = (level.edge as usize, level.cell_h as usize);
    let start = edge + row * cell_h;
    start..(start + cell_h).min(level.height as usize - edge)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::OrbConfig;
    use crate::cuda::orb::plan::PlanTables;

    /// What `orb_fast_score` stages beyond a tile's rows on each side (its ring's radius),
    /// stated apart from `RING_RADIUS` to check the bands against it.
    const STAGED_ROWS_AROUND_A_TILE: usize = 3;

    fn range(rows: &OrbRows, l: usize) -> Range<usize> {
        rows.begin[l] as usize..rows.end[l] as usize
    }

    /// Row `y` of a level of `height` rows as the kernels reflect it (OpenCV's
    /// BORDER_REFLECT_101), clamped for levels shorter than a tile.
    fn reflect101(y: isize, height: usize) -> usize {
        let last = height as isize - 1;
        let y = if y < 0 { -y } else { y };
        let y = if y > last { 2 * last - y } else { y };
        y.clamp(0, last) as usize
    }

    /// What the bands have written so far, per level and row.
    struct Written {
        pixels: Vec<Vec<bool>>,
        scores: Vec<Vec<bool>>,
        cells: Vec<Vec<bool>>,
    }

    impl Written {
        fn score(&mut self, levels: &[OrbLevel], tiles: &OrbRows) {
            for (l, level) in levels.iter().enumerate() {
                let height = level.height as usize;
                for t in range(tiles, l) {
                    let (top, bottom) = (t * SCORE_TILE_H, (t + 1) * SCORE_TILE_H);
                    let halo = STAGED_ROWS_AROUND_A_TILE;
                    for y in top as isize - halo as isize..(bottom + halo) as isize {
                        assert!(
                            self.pixels[l][reflect101(y, height)],
                            "level {l} tile row {t} reads row {y} before it is written"
                        );
                    }
                    for y in top..bottom.min(height) {
                        assert!(!self.scores[l][y], "level {l} row {y} scored twice");
                        self.scores[l][y] = true;
                    }
                }
            }
        }
    }

    /// Replays the bands in the order the streams run them, checking that every
    /// kernel reads rows already written and that each row is written once.
    fn replay(width: usize, height: usize, n_levels: u32, count: usize) -> Vec<Band> {
        let config = OrbConfig {
            n_levels,
            ..OrbConfig::default()
        };
        let tables = PlanTables::new(&config, width, height).unwrap();
        let (levels, taps) = (&tables.levels, &tables.taps);
        let bands = bands(levels, taps, count);
        let rows_of = |f: fn(&OrbLevel) -> usize| -> Vec<Vec<bool>> {
            levels.iter().map(|level| vec![false; f(level)]).collect()
        };
        let mut w = Written {
            pixels: rows_of(|l| l.height as usize),
            scores: rows_of(|l| l.height as usize),
            cells: rows_of(|l| l.n_rows as usize),
        };
        for band in &bands {
            for y in band.frame_rows.clone() {
                assert!(!w.pixels[0][y], "frame row {y} uploaded twice");
                w.pixels[0][y] = true;
            }
            w.score(levels, &band.level0_tiles.rows);
            for l in 1..levels.len() {
                for y in range(&band.pyramid.rows, l) {
                    let tap = taps[levels[l].taps_y as usize + y];
                    let (first, second) = (tap.src as usize, tap.src as usize + 1);
                    assert!(w.pixels[l - 1][first] && (tap.w1 == 0 || w.pixels[l - 1][second]));
                    assert!(!w.pixels[l][y], "level {l} row {y} resized twice");
                    w.pixels[l][y] = true;
                }
            }
            w.score(levels, &band.upper_tiles.rows);
            for (l, level) in levels.iter().enumerate() {
                for row in range(&band.cells.rows, l) {
                    let rows = cell_rows(level, row);
                    for y in rows.start - 1..=rows.end {
                        assert!(w.scores[l][y], "level {l} cell row {row} reads scores of row {y} before they are written");
                    }
                    assert!(!w.cells[l][row]);
                    w.cells[l][row] = true;
                }
            }
        }
        for (what, rows) in [
            ("pixels", &w.pixels),
            ("scores", &w.scores),
            ("cells", &w.cells),
        ] {
            for (l, level) in rows.iter().enumerate() {
                assert!(
                    level.iter().all(|&done| done),
                    "{width}x{height}: {what} of level {l} left undone"
                );
            }
        }
        bands
    }

    #[test]
    fn every_kernel_reads_rows_an_earlier_band_or_its_own_wrote() {
        for (width, height) in [
            (1920, 1080),
            (1280, 960),
            (3840, 2160),
            (1024, 1024),
            (4000, 90),
        ] {
            for n_levels in [1, 3, 8] {
                for count in 1..=4 {
                    replay(width, height, n_levels, count);
                }
            }
        }
        // More bands than rows: one row each.
        assert_eq!(replay(64, 3, 1, 4).len(), 3);
    }

    #[test]
    fn half_a_1080p_frame_is_scored_while_the_other_half_arrives() {
        let bands = replay(1920, 1080, 8, 2);
        assert_eq!(bands[0].frame_rows, 0..540);
        // The first half carries most of its own tiles (16 of 17 rows of tiles), rows
        // of every level and cells of every level: the work follows the bus.
        let first = &bands[0];
        assert_eq!(range(&first.level0_tiles.rows, 0), 0..16);
        assert!((1..8).all(|l| first.pyramid.rows.end[l] > 0));
        assert!((0..8).all(|l| first.cells.rows.end[l] > 0));
    }

    #[test]
    fn frames_of_1080p_are_cut_in_two_and_grey_ones_of_1280x960_are_not() {
        let bytes = |bytes_per_pixel: usize| 1920 * 1080 * bytes_per_pixel;
        assert_eq!(band_count(bytes(1)), 2);
        assert_eq!(band_count(bytes(2)), 2);
        assert_eq!(band_count(bytes(3)), 2);
        assert_eq!(band_count(1280 * 960), 1);
        assert_eq!(band_count(640 * 480 * 4), 1);
    }
}
