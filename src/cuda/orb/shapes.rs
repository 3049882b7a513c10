//! The ORB kernels, looked up once, and their launch shapes: block sizes from the
//! kernels' constants (src/cuda/abi.rs), grids from the device's SMs and occupancy.

use cudarc::driver::{sys, LaunchConfig};

use crate::cuda::abi::orb_params::SmoothTaps;
use crate::cuda::abi::{
    CELL_THREADS, DESCRIBE_WARPS, PATCH_RADIUS, PATCH_ROW_WORDS, PATCH_SIDE, PLACE_WARPS,
    PYRAMID_THREADS, RESIZE_RUN, SCORE_THREADS, SCORE_TILE_H, SCORE_TILE_W, SELECT_THREADS, WARP,
};
use crate::cuda::gpu::Gpu;
use crate::cuda::gray::GrayKernel;
use crate::cuda::kernel::Kernel;
use crate::cuda::matcher::knn2_launch;
use crate::error::Result;
use crate::spec::brief_pattern::PATTERN_REACH;
use crate::spec::pyramid::LevelGeometry;
use crate::spec::smoothing::GAUSSIAN_TAPS;

// The private patch of `orb_describe` must hold every sample of the rotated pattern.
const _: () = assert!(PATTERN_REACH <= PATCH_RADIUS);

pub const DESCRIBE_THREADS: u32 = DESCRIBE_WARPS * WARP;
/// The private patches of `orb_describe`: `PATCH_SIDE` rows of `PATCH_ROW_WORDS` words
/// per keypoint, 32 keypoints, dynamic shared memory.
pub const DESCRIBE_SHARED_BYTES: u32 = (PATCH_SIDE * PATCH_ROW_WORDS) as u32 * WARP * 4;
/// Threads of an `orb_record_place` block: its warps split the records of a bin of
/// ranks, against 32 records per block.
pub const PLACE_THREADS: u32 = PLACE_WARPS * WARP;
/// Threads of an `orb_record_ranks` block.
pub const RECORD_RANK_THREADS: u32 = 256;
/// Threads of an `orb_record_keys` block.
pub const RECORD_KEY_THREADS: u32 = 256;
/// Threads of a `match_cross_check_counted` / `match_cross_check_best_counted` block:
/// one query each; small blocks spread a frame's 2000 queries over many SMs.
pub const MATCH_THREADS: u32 = 32;

/// Gaussian tap `i` of the descriptors' smoothing as a byte (a tap of 256 or more
/// fails the build).
const fn smoothing_tap(i: usize) -> u32 {
    assert!(
        GAUSSIAN_TAPS[i] < 256,
        "orb_fast_score takes the smoothing taps as bytes"
    );
    GAUSSIAN_TAPS[i] as u32
}
/// The smoothing taps packed for `orb_fast_score`'s byte dot products.
pub const SMOOTH_TAPS: SmoothTaps = SmoothTaps {
    taps_0123: smoothing_tap(0)
        | smoothing_tap(1) << 8
        | smoothing_tap(2) << 16
        | smoothing_tap(3) << 24,
    taps_456: smoothing_tap(4) | smoothing_tap(5) << 8 | smoothing_tap(6) << 16,
    taps_x012: smoothing_tap(0) << 8 | smoothing_tap(1) << 16 | smoothing_tap(2) << 24,
    taps_3456: smoothing_tap(3)
        | smoothing_tap(4) << 8
        | smoothing_tap(5) << 16
        | smoothing_tap(6) << 24,
};

/// A one-dimensional grid of `blocks` blocks of `threads` threads.
pub fn line(blocks: u32, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Blocks of `orb_pyramid` that its largest resized level keeps busy: one warp per
/// run of RESIZE_RUN pixels of a row. More blocks would only wait at its barriers.
pub fn pyramid_blocks(geometry: &[LevelGeometry]) -> u32 {
    let runs = geometry
        .iter()
        .skip(1)
        .map(|g| g.width.div_ceil(RESIZE_RUN) * g.height)
        .max()
        .unwrap_or(0);
    u32::try_from(runs.div_ceil(PYRAMID_WARPS))
        .unwrap_or(u32::MAX)
        .max(1)
}

/// Warps of an `orb_pyramid` block, each resizing one run of pixels at a time.
pub const PYRAMID_WARPS: usize = (PYRAMID_THREADS / WARP) as usize;

/// Warps of an `orb_cell_candidates` block, each searching one cell at a time.
pub const CELL_WARPS: usize = (CELL_THREADS / WARP) as usize;

/// `config` with no more blocks than `items` work items keep busy at `per_block` each
/// (a band's launch covers a part of what the plan's shapes are sized for).
pub fn capped(config: LaunchConfig, items: usize, per_block: usize) -> LaunchConfig {
    let needed = u32::try_from(items.div_ceil(per_block)).unwrap_or(u32::MAX);
    LaunchConfig {
        grid_dim: (config.grid_dim.0.min(needed).max(1), 1, 1),
        ..config
    }
}

/// Work items (tiles) of `orb_fast_score` on a `width` x `height` level.
pub fn score_tiles(width: usize, height: usize) -> usize {
    width.div_ceil(SCORE_TILE_W) * height.div_ceil(SCORE_TILE_H)
}

/// Threads of an `orb_keypoint_fields` block, one keypoint each.
const FIELD_THREADS: u32 = 256;

/// Kernels of the pipeline, looked up once.
pub struct Kernels {
    pub gray: GrayKernel,
    pub pyramid: Kernel,
    pub fast_score: Kernel,
    pub cell_candidates: Kernel,
    pub select_candidates: Kernel,
    pub record_keys: Kernel,
    pub record_ranks: Kernel,
    pub record_place: Kernel,
    pub describe: Kernel,
    pub keypoint_fields: Kernel,
    pub knn2_counted: Kernel,
    pub cross_check_counted: Kernel,
    pub cross_check_best_counted: Kernel,
}

impl Kernels {
    pub fn load(gpu: &Gpu) -> Result<Self> {
        let load = |module, name| Kernel::load(gpu, module, name);
        let kernels = Self {
            gray: GrayKernel::load(gpu)?,
            pyramid: load("orb_pyramid", "orb_pyramid")?,
            fast_score: load("orb_detect", "orb_fast_score")?,
            cell_candidates: load("orb_detect", "orb_cell_candidates")?,
            select_candidates: load("orb_select", "orb_select_candidates")?,
            record_keys: load("orb_select", "orb_record_keys")?,
            record_ranks: load("orb_select", "orb_record_ranks")?,
            record_place: load("orb_select", "orb_record_place")?,
            describe: load("orb_describe", "orb_describe")?,
            keypoint_fields: load("orb_describe", "orb_keypoint_fields")?,
            knn2_counted: load("match_hamming", "match_hamming_knn2_counted")?,
            cross_check_counted: load("match_hamming", "match_cross_check_counted")?,
            cross_check_best_counted: load("match_hamming", "match_cross_check_best_counted")?,
        };
        // The private patches are over the 48 KB of shared memory granted without asking.
        kernels
            .describe
            .function()
            .set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                DESCRIBE_SHARED_BYTES as i32,
            )
            .map_err(|source| kernels.describe.error(source))?;
        Ok(kernels)
    }
}

/// The launch shapes of one frame's kernels on `gpu`, for a plan.
pub struct Shapes {
    /// `orb_fast_score` on level 0, beside the pyramid, and on the other levels after it.
    pub level0_fast: LaunchConfig,
    pub fast: LaunchConfig,
    pub pyramid: LaunchConfig,
    pub cell_candidates: LaunchConfig,
    pub select: LaunchConfig,
    pub record_keys: LaunchConfig,
    pub record_ranks: LaunchConfig,
    pub record_place: LaunchConfig,
    pub describe: LaunchConfig,
    /// Keypoints per `orb_describe` block.
    pub describe_per_block: i32,
    /// `orb_keypoint_fields`: one keypoint a thread.
    pub keypoint_fields: LaunchConfig,
    /// `match_hamming_knn2_counted`: 32 queries a block.
    pub knn2: LaunchConfig,
    /// `match_cross_check_counted` and `match_cross_check_best_counted`: one query a
    /// thread.
    pub cross_check: LaunchConfig,
}

/// What the shapes depend on in a plan.
pub struct PlanSize<'a> {
    pub width: usize,
    pub height: usize,
    pub geometry: &'a [LevelGeometry],
    pub total_cells: i32,
    pub record_groups: u32,
    /// Keypoints a frame keeps at most.
    pub capacity: usize,
}

impl Shapes {
    pub fn new(gpu: &Gpu, k: &Kernels, plan: &PlanSize<'_>) -> Result<Self> {
        let persistent = |kernel: &Kernel, threads: u32| kernel.persistent_blocks(gpu, threads);
        // Level 0 is the frame: its FAST runs on a side stream while the pyramid
        // resizes the other levels, filling the SMs its barriers leave idle. Neither
        // takes every block the device holds, so that they share the SMs rather than
        // one waiting for the other to leave them: the pyramid half of its own, level
        // 0's FAST half of its own. Its blocks take tiles from a queue, so those of
        // the other levels that start behind them take fewer: on an H200 a half took
        // 30 us off the node's 1080p mono8 frame on 8 SMs against a third (two thirds
        // were slower), and cost 1 % of an unbanded frame.
        let fast_blocks = persistent(&k.fast_score, SCORE_THREADS)?;
        let level0_tiles = score_tiles(plan.width, plan.height);
        let level0_blocks = (fast_blocks / 2)
            .max(1)
            .min(u32::try_from(level0_tiles).unwrap_or(u32::MAX));
        let pyramid_blocks = (persistent(&k.pyramid, PYRAMID_THREADS)? / 2)
            .max(1)
            .min(pyramid_blocks(plan.geometry));
        // Blocks of 32 x 4 threads, a warp per cell at a time (kernels/orb/detect.cu).
        let cell_candidates = LaunchConfig {
            grid_dim: (
                persistent(&k.cell_candidates, CELL_THREADS)?
                    .min((plan.total_cells as u32).div_ceil(CELL_WARPS as u32))
                    .max(1),
                1,
                1,
            ),
            block_dim: (WARP, CELL_THREADS / WARP, 1),
            shared_mem_bytes: 0,
        };
        // One block per level (at most one per SM under --sm-limit) selects each
        // level's records; the whole grid computes their Harris keys, their ranks in
        // their cells, and their places in the output.
        let n_levels = plan.geometry.len() as u32;
        let select = line(n_levels.min(gpu.sm_count).max(1), SELECT_THREADS);
        let record_keys = line(
            persistent(&k.record_keys, RECORD_KEY_THREADS)?,
            RECORD_KEY_THREADS,
        );
        // A thread per record (at most 32 x record_groups of them).
        let record_ranks = line(
            persistent(&k.record_ranks, RECORD_RANK_THREADS)?
                .min((plan.record_groups * WARP).div_ceil(RECORD_RANK_THREADS)),
            RECORD_RANK_THREADS,
        );
        let record_place = line(
            persistent(&k.record_place, PLACE_THREADS)?.min(plan.record_groups),
            PLACE_THREADS,
        );
        let describe_blocks =
            k.describe
                .resident_blocks(gpu, DESCRIBE_THREADS, DESCRIBE_SHARED_BYTES)?;
        // Keypoints per block: as few as spread `n_features` over every SM, at most
        // one per lane.
        let capacity = plan.capacity as u32;
        let per_block = capacity.div_ceil(gpu.sm_count).clamp(1, WARP);
        let needed = capacity.div_ceil(per_block).max(1);
        Ok(Self {
            level0_fast: line(level0_blocks, SCORE_THREADS),
            fast: line(fast_blocks, SCORE_THREADS),
            pyramid: line(pyramid_blocks, PYRAMID_THREADS),
            cell_candidates,
            select,
            record_keys,
            record_ranks,
            record_place,
            describe: LaunchConfig {
                grid_dim: (describe_blocks.min(needed), 1, 1),
                block_dim: (DESCRIBE_THREADS, 1, 1),
                shared_mem_bytes: DESCRIBE_SHARED_BYTES,
            },
            describe_per_block: per_block as i32,
            keypoint_fields: line(capacity.div_ceil(FIELD_THREADS).max(1), FIELD_THREADS),
            knn2: knn2_launch(capacity),
            cross_check: line(capacity.div_ceil(MATCH_THREADS).max(1), MATCH_THREADS),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::pyramid::level_geometry;

    #[test]
    fn pyramid_grid_covers_the_largest_resized_level_only() {
        // 640x480 at scale 1.2: level 1 is 533x400, five runs of 128 pixels a row,
        // eight warps a block.
        let geometry = level_geometry(640, 480, 8, 1.2);
        assert_eq!((geometry[1].width, geometry[1].height), (533, 400));
        assert_eq!(pyramid_blocks(&geometry), 5 * 400 / 8);
        // No resized level: one block, which meets no barrier.
        assert_eq!(pyramid_blocks(&level_geometry(640, 480, 1, 1.2)), 1);
    }

    #[test]
    fn describe_patches_fill_the_documented_shared_memory() {
        // 39 rows of 10 words per keypoint, 32 keypoints.
        assert_eq!(DESCRIBE_SHARED_BYTES, 39 * 10 * 32 * 4);
    }
}
