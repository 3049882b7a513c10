//! Where a level's keypoints may be (docs/orb-reference.md §3): the detection area and
//! the cells of the ORB-SLAM style grid over it.

/// The pixels of a level that may become keypoints: `x0 <= x < x1`, `y0 <= y < y1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DetectionArea {
    pub x0: usize,
    pub y0: usize,
    pub x1: usize,
    pub y1: usize,
}

impl DetectionArea {
    /// `edge <= x < width - edge` and likewise for y; `None` when that is empty.
    pub fn new(width: usize, height: usize, edge: usize) -> Option<Self> {
        (width > 2 * edge && height > 2 * edge).then(|| Self {
            x0: edge,
            y0: edge,
            x1: width - edge,
            y1: height - edge,
        })
    }

    pub fn width(&self) -> usize {
        self.x1 - self.x0
    }

    pub fn height(&self) -> usize {
        self.y1 - self.y0
    }
}

/// The cells of ORB-SLAM style distribution over a detection area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    pub area: DetectionArea,
    pub n_cols: usize,
    pub n_rows: usize,
    pub cell_width: usize,
    pub cell_height: usize,
}

impl Grid {
    /// `max(1, side / cell_size)` cells a side, each `ceil(side / cells)` pixels.
    pub fn new(area: DetectionArea, cell_size: usize) -> Self {
        let n_cols = (area.width() / cell_size).max(1);
        let n_rows = (area.height() / cell_size).max(1);
        Self {
            area,
            n_cols,
            n_rows,
            cell_width: area.width().div_ceil(n_cols),
            cell_height: area.height().div_ceil(n_rows),
        }
    }

    pub fn n_cells(&self) -> usize {
        self.n_cols * self.n_rows
    }

    /// Row-major cell index of an area pixel.
    pub fn cell_of(&self, x: usize, y: usize) -> usize {
        (y - self.area.y0) / self.cell_height * self.n_cols + (x - self.area.x0) / self.cell_width
    }
}
