//! What the host and the kernels share: the `#[repr(C)]` structs both sides read, and
//! the constants both sides size things by.
//!
//! Each constant is defined once, here, and reaches the kernels as a `-D NAME=value`
//! option of the modules that use it ([`ORB_DEFINES`], ...; `modules.rs` passes them
//! to NVRTC, so the offline `orbsift kernels build` gets them too). Each struct is
//! defined twice, here and in `kernels/`, and checked both ways: the kernel side
//! states its size and field offsets with `ABI_SIZE` / `ABI_OFFSET`
//! (kernels/common/abi.cuh), which the compiler checks, and the test below reads those
//! lines and compares them with the Rust layouts, without a GPU.
//!
//! Every kernel takes one parameter struct by value, declared in
//! `kernels/common/*_params.cuh` and mirrored in the submodule of the same name, checked
//! the same way.

use bytemuck::Pod;

use crate::config::ORB_MAX_FEATURES;
use crate::spec::sift_descriptor;

/// The whole `T`s at the start of `bytes`, which the kernels wrote as little-endian
/// 32-bit words, copied in one block (a conversion per value is on the node's critical
/// path: it took 10 µs of a 1080p frame's fields on the GPU machine's host); a
/// big-endian host then swaps each word.
pub fn from_le_words<T: Pod>(bytes: &[u8]) -> Vec<T> {
    const { assert!(size_of::<T>() % 4 == 0 && align_of::<T>() == 4) };
    let whole = bytes.len() / size_of::<T>() * size_of::<T>();
    let mut values: Vec<T> = bytemuck::pod_collect_to_vec(&bytes[..whole]);
    if cfg!(target_endian = "big") {
        for word in bytemuck::cast_slice_mut::<T, u32>(&mut values) {
            *word = u32::from_le(*word);
        }
    }
    values
}

/// Lets a launch pass each of these structs whole, as its kernel's one parameter
/// ([`Kernel::launch`](crate::cuda::kernel::Kernel::launch)).
macro_rules! kernel_params {
    ($($params:ident),+ $(,)?) => {
        $(
            // SAFETY: a `#[repr(C)]` struct of device pointers, 4-byte numbers and
            // other such structs, every byte a field, laid out as the kernels' struct of
            // the same name (both checked by this module's tests).
            unsafe impl cudarc::driver::DeviceRepr for $params {}
        )+
    };
}

pub mod image_params;
#[cfg(test)]
mod layout;
pub mod match_params;
pub mod orb_params;
pub mod sift_params;

/// A constant the kernels take as `-D NAME=value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Define {
    pub name: &'static str,
    pub value: i64,
}

/// The [`Define`] of a constant of this module, under its own name.
macro_rules! define {
    ($name:ident) => {
        Define {
            name: stringify!($name),
            value: $name as i64,
        }
    };
}

/// Threads of a warp.
pub const WARP: u32 = 32;

/// Words of a 256-bit ORB descriptor (kernels/common/hamming.cuh).
pub const DESC_WORDS: usize = 8;
/// Low bits of a train descriptor's nearest query as `orb_describe` packs it under the
/// distance (`distance << BACKWARD_QUERY_BITS | query`, kernels/common/hamming.cuh):
/// every keypoint index of a frame must fit.
pub const BACKWARD_QUERY_BITS: u32 = 23;
const _: () = assert!(ORB_MAX_FEATURES < 1 << BACKWARD_QUERY_BITS);
/// Levels an ORB level table may hold (`orb.n_levels` is at most this).
pub const ORB_MAX_LEVELS: usize = 32;
/// Word of the grid barrier's generation, on its own 128-byte line after the arrival
/// counter (kernels/common/grid_barrier.cuh).
pub const GRID_BARRIER_GENERATION: usize = 32;
/// Threads of an `orb_pyramid` block.
pub const PYRAMID_THREADS: u32 = 256;
/// Pixels of a row one warp resizes at a time in `orb_pyramid`.
pub const RESIZE_RUN: usize = 128;
/// The pixel tile of one `orb_fast_score` work item, and its block's threads.
pub const SCORE_TILE_W: usize = 64;
pub const SCORE_TILE_H: usize = 32;
pub const SCORE_THREADS: u32 = 256;
/// Rows and columns a FAST tile stages beyond its own on each side: the Bresenham
/// ring's radius, which is also the descriptors' 7x7 smoothing's.
pub const RING_RADIUS: usize = 3;
/// Threads of an `orb_cell_candidates` block (32 x 4).
pub const CELL_THREADS: u32 = 4 * WARP;
/// Bins of a level's FAST-score histogram.
pub const ORB_SCORE_BINS: usize = 256;
/// Threads of an `orb_select_candidates` block (one block per level).
pub const SELECT_THREADS: u32 = 1024;
/// Warps of an `orb_record_place` block.
pub const PLACE_WARPS: u32 = 16;
/// Bins of a level's record ranks k (`orb_record_place` counts within a bin): k from
/// `RANK_BINS - 1` up share the last one. A bin per lane of a warp.
pub const RANK_BINS: usize = 32;
/// Warps of a `match_hamming_knn2` block: it searches for 32 queries, one per lane, each
/// warp sweeping a slice of the train set.
pub const MATCH_WARPS: u32 = 8;
/// Warps of an `orb_describe` block: it describes up to 32 keypoints, one per lane.
pub const DESCRIBE_WARPS: u32 = 16;
/// Radius of a keypoint's private patch in `orb_describe`: the rotated pattern's reach
/// must fit (checked beside the pattern's use).
pub const PATCH_RADIUS: usize = 19;
/// Rows (and bytes of a row) of a patch.
pub const PATCH_SIDE: usize = 2 * PATCH_RADIUS + 1;
/// Words of a patch row: `PATCH_SIDE` bytes, padded to whole words.
pub const PATCH_ROW_WORDS: usize = 10;
const _: () = assert!(PATCH_ROW_WORDS * 4 >= PATCH_SIDE);

/// The defines of the ORB modules.
pub const ORB_DEFINES: &[Define] = &[
    define!(DESC_WORDS),
    define!(BACKWARD_QUERY_BITS),
    define!(ORB_MAX_LEVELS),
    define!(GRID_BARRIER_GENERATION),
    define!(PYRAMID_THREADS),
    define!(RESIZE_RUN),
    define!(SCORE_TILE_W),
    define!(SCORE_TILE_H),
    define!(SCORE_THREADS),
    define!(RING_RADIUS),
    define!(CELL_THREADS),
    define!(ORB_SCORE_BINS),
    define!(SELECT_THREADS),
    define!(PLACE_WARPS),
    define!(RANK_BINS),
    define!(DESCRIBE_WARPS),
    define!(PATCH_RADIUS),
    define!(PATCH_ROW_WORDS),
];

/// Octaves a SIFT octave table may hold.
pub const SIFT_MAX_OCTAVES: usize = 32;
/// The largest blur tile of the SIFT pyramid: the shared arrays are sized for it.
pub const TILE_W: usize = 64;
pub const TILE_H: usize = 32;
/// Threads of a SIFT blur block.
pub const BLUR_THREADS: u32 = 256;
/// The radii the level-by-level kernels `sift_blur_dog_r8`, `_r16` and `_r32` are
/// compiled for: each holds the window of a Gaussian up to its radius in registers.
pub const BLUR_NARROW_RADIUS: usize = 8;
pub const BLUR_MEDIUM_RADIUS: usize = 16;
/// The widest Gaussian the SIFT pyramid blurs with (the widest kernel's radius).
pub const BLUR_MAX_RADIUS: usize = 32;
/// The halo `sift_levels_r24` is compiled for; `sift_levels_r32` takes wider ones. The
/// default pipeline's steps reach radius 22 (`cuda::sift::steps`).
pub const STEP_RADIUS: usize = 24;
/// Levels one `LevelsJob` makes from one load of its source, the source included.
pub const MAX_STEP_LEVELS: usize = 4;
/// Threads of each `sift_small_octaves` block.
pub const SMALL_THREADS: u32 = 1024;
/// Outputs per thread and pass of `sift_small_octaves`.
pub const SMALL_RUN: usize = 4;
/// The widest Gaussian `sift_small_octaves` blurs with: the host sends octaves there
/// only when every level's radius is at most this.
pub const SMALL_MAX_RADIUS: usize = 16;
/// Threads of a `sift_rank_keys` / `sift_rank_responses` block: the keypoints it ranks.
pub const RANK_TILE: u32 = 256;
/// The keypoints a block compares them with (its shared tile): a fraction of
/// `RANK_TILE`, so that a frame's few thousand keypoints make enough blocks for every SM
/// and each thread's loop is short.
pub const RANK_SLICE: u32 = 32;
/// Bins of a keypoint's orientation histogram.
pub const ORIENTATION_BINS: usize = 36;
/// The descriptor's spatial bins a side and orientation bins (`spec::sift_descriptor`).
pub const DESCRIPTOR_SPATIAL_BINS: usize = sift_descriptor::SPATIAL_BINS;
pub const DESCRIPTOR_ORIENTATION_BINS: usize = sift_descriptor::ORIENTATION_BINS;
/// Words `sift_place` writes to the summary the host reads back: the kept count, then
/// the first four [`SiftCounters`].
pub const SUMMARY_WORDS: usize = 5;
/// Where a SIFT blur job's input level comes from (`LevelsJob::source`,
/// `BlurJob::source`): a float plane
/// of the output's size, every second pixel of a plane twice as large, the u8 frame,
/// the frame upsampled 2x bilinearly.
pub const SOURCE_PLANE: i32 = 0;
pub const SOURCE_PLANE_HALVED: i32 = 1;
pub const SOURCE_FRAME: i32 = 2;
pub const SOURCE_FRAME_UPSAMPLED: i32 = 3;

/// The defines of the SIFT modules.
pub const SIFT_DEFINES: &[Define] = &[
    define!(SIFT_MAX_OCTAVES),
    define!(TILE_W),
    define!(TILE_H),
    define!(BLUR_THREADS),
    define!(BLUR_NARROW_RADIUS),
    define!(BLUR_MEDIUM_RADIUS),
    define!(BLUR_MAX_RADIUS),
    define!(STEP_RADIUS),
    define!(MAX_STEP_LEVELS),
    define!(SMALL_THREADS),
    define!(SMALL_RUN),
    define!(SMALL_MAX_RADIUS),
    define!(RANK_TILE),
    define!(RANK_SLICE),
    define!(ORIENTATION_BINS),
    define!(DESCRIPTOR_SPATIAL_BINS),
    define!(DESCRIPTOR_ORIENTATION_BINS),
    define!(SUMMARY_WORDS),
    define!(SOURCE_PLANE),
    define!(SOURCE_PLANE_HALVED),
    define!(SOURCE_FRAME),
    define!(SOURCE_FRAME_UPSAMPLED),
];

/// Queries per `match_l2_knn2` block, and train descriptors per shared-memory tile.
pub const L2_TILE: usize = 128;
/// Threads of a `match_l2_knn2` block.
pub const L2_THREADS: u32 = 256;

/// The defines of the L2 matcher's module.
pub const L2_DEFINES: &[Define] = &[define!(L2_TILE), define!(L2_THREADS)];

/// The defines of the Hamming matcher's module.
pub const HAMMING_DEFINES: &[Define] = &[
    define!(DESC_WORDS),
    define!(BACKWARD_QUERY_BITS),
    define!(MATCH_WARPS),
];

/// One pyramid level of the ORB kernels (`OrbLevel`, kernels/common/levels.cuh).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct OrbLevel {
    pub width: i32,
    pub height: i32,
    pub offset: i32,
    pub taps_x: i32,
    pub taps_y: i32,
    pub edge: i32,
    pub n_cols: i32,
    pub n_rows: i32,
    pub cell_w: i32,
    pub cell_h: i32,
    pub cell_offset: i32,
    pub cand_offset: i32,
    pub cand_capacity: i32,
    pub corner_words: i32,
}

/// The rows of each level one ORB launch covers, `begin[l]..end[l]`, in the kernel's
/// unit (`OrbRows`, kernels/common/levels.cuh): pixel rows for `orb_pyramid`, tile rows
/// for `orb_fast_score`, cell rows for `orb_cell_candidates`. Levels it leaves out
/// have `begin == end`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OrbRows {
    pub begin: [i32; ORB_MAX_LEVELS],
    pub end: [i32; ORB_MAX_LEVELS],
}

/// A fixed-point bilinear tap of `orb_pyramid` (`ResizeTap`, kernels/orb/pyramid.cu).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ResizeTap {
    pub src: i32,
    pub w1: i32,
}

/// A keypoint's best and second-best train match, from the fused or standalone kernel
/// (the kernels' `int3`: x, y, z).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Knn2 {
    /// Train index, or -1 when there is no train descriptor (or cross-check failed).
    pub best_index: i32,
    pub best: i32,
    pub second: i32,
}

/// One octave of the SIFT scale space (`SiftOctave`, kernels/common/sift_octaves.cuh).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct SiftOctave {
    pub width: i32,
    pub height: i32,
    pub gauss: i32,
    pub dog: i32,
}

/// Levels of a big SIFT octave made from one load of one source, over the tiles of one
/// launch (`LevelsJob`, kernels/common/blur_jobs.cuh): several (`sift_levels_*`), or one
/// from the level below (`sift_blur_dog_*`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct LevelsJob {
    pub source: i32,
    pub src_offset: i32,
    pub src_width: i32,
    pub src_height: i32,
    pub width: i32,
    pub height: i32,
    /// The widest radius of its levels.
    pub halo: i32,
    pub n_levels: i32,
    pub tiles_x: i32,
    pub tile_start: i32,
    pub tile_w: i32,
    pub tile_h: i32,
    /// First tap of each level's Gaussian from the source; -1: the source itself.
    pub taps: [i32; MAX_STEP_LEVELS],
    pub radius: [i32; MAX_STEP_LEVELS],
    /// First float of each level, -1: not stored.
    pub gauss_out: [i32; MAX_STEP_LEVELS],
    /// First float of level k - level k-1 (k >= 1), -1: none.
    pub dog_out: [i32; MAX_STEP_LEVELS],
    /// Its rows of tiles' counters among the frame's tile-row counters
    /// (kernels/common/tile_flow.cuh).
    pub rows_done: i32,
    /// Those of the job making its source, -1 when the source is the frame, with that
    /// job's tile height and tiles per row.
    pub src_rows_done: i32,
    pub src_tile_h: i32,
    pub src_tiles_x: i32,
}

/// One level of a small SIFT octave blurred from the level below (`BlurJob`,
/// kernels/common/blur_jobs.cuh).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct BlurJob {
    pub source: i32,
    pub src_offset: i32,
    pub src_width: i32,
    pub src_height: i32,
    pub width: i32,
    pub height: i32,
    pub gauss_out: i32,
    pub dog_out: i32,
    pub taps: i32,
    pub radius: i32,
    /// A chain level the tail block reads: the chain block publishes it when made.
    pub publishes: i32,
    /// A tail level whose source is a chain level: how many chain levels the chain
    /// block has published before the tail block may read it.
    pub wait_for: i32,
}

/// The SIFT pipeline's counters, zeroed each frame (`SiftCounters`,
/// kernels/common/sift_octaves.cuh). `sift_place` copies the first four into the
/// frame's summary.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct SiftCounters {
    pub candidates: u32,
    pub extrema: u32,
    pub keypoints: u32,
    pub duplicates: u32,
    /// The work queues of `sift_orientation` and `sift_describe`.
    pub orientation_queue: u32,
    pub describe_queue: u32,
    /// `sift_small_octaves`: the block that starts first takes the chain, and counts
    /// the chain levels published to the other block.
    pub small_roles: u32,
    pub small_published: u32,
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::layout::{layout, Layout};
    use super::*;
    use crate::cuda::modules::{HEADERS, MODULES};

    fn mirrors() -> Vec<Layout> {
        let tables = vec![
            layout!(OrbLevel {
                width,
                height,
                offset,
                taps_x,
                taps_y,
                edge,
                n_cols,
                n_rows,
                cell_w,
                cell_h,
                cell_offset,
                cand_offset,
                cand_capacity,
                corner_words,
            }),
            layout!(ResizeTap { src, w1 }),
            layout!(OrbRows { begin, end }),
            layout!(Knn2 as int3 {
                best_index as x,
                best as y,
                second as z,
            }),
            layout!(SiftOctave {
                width,
                height,
                gauss,
                dog,
            }),
            layout!(SiftCounters {
                candidates,
                extrema,
                keypoints,
                duplicates,
                orientation_queue,
                describe_queue,
                small_roles,
                small_published,
            }),
            layout!(BlurJob {
                source,
                src_offset,
                src_width,
                src_height,
                width,
                height,
                gauss_out,
                dog_out,
                taps,
                radius,
                publishes,
                wait_for,
            }),
            layout!(LevelsJob {
                source,
                src_offset,
                src_width,
                src_height,
                width,
                height,
                halo,
                n_levels,
                tiles_x,
                tile_start,
                tile_w,
                tile_h,
                taps,
                radius,
                gauss_out,
                dog_out,
                rows_done,
                src_rows_done,
                src_tile_h,
                src_tiles_x,
            }),
        ];
        tables
            .into_iter()
            .chain(image_params::layouts())
            .chain(match_params::layouts())
            .chain(orb_params::layouts())
            .chain(sift_params::layouts())
            .collect()
    }

    /// The `ABI_SIZE(type, bytes)` and `ABI_OFFSET(type, field, bytes)` checks of every
    /// kernel source, as (type, field or "", bytes).
    fn kernel_checks() -> BTreeSet<(String, String, usize)> {
        let sources = HEADERS
            .iter()
            .map(|(_, text)| *text)
            .chain(MODULES.iter().map(|m| m.source));
        let mut checks = BTreeSet::new();
        for line in sources.flat_map(str::lines).map(str::trim) {
            let (is_size, rest) = if let Some(rest) = line.strip_prefix("ABI_SIZE(") {
                (true, rest)
            } else if let Some(rest) = line.strip_prefix("ABI_OFFSET(") {
                (false, rest)
            } else {
                continue;
            };
            let arguments = rest
                .strip_suffix(");")
                .unwrap_or_else(|| panic!("`{line}`: one check per line, ending in `);`"));
            let parts: Vec<&str> = arguments.split(',').map(str::trim).collect();
            let (name, field, bytes) = match (is_size, parts.as_slice()) {
                (true, [name, bytes]) => (name, "", bytes),
                (false, [name, field, bytes]) => (name, *field, bytes),
                _ => panic!("`{line}`: unexpected arguments"),
            };
            let bytes = bytes
                .parse()
                .unwrap_or_else(|_| panic!("`{line}`: bytes must be a number"));
            assert!(
                checks.insert((name.to_string(), field.to_string(), bytes)),
                "`{line}` is stated twice"
            );
        }
        checks
    }

    #[test]
    fn mirrors_are_fully_listed() {
        // Fields in offset order tile the struct: none is left out of `mirrors`.
        for layout in mirrors() {
            let mut fields = layout.fields.clone();
            fields.sort_by_key(|&(_, offset, _)| offset);
            let mut end = 0;
            for (field, offset, size) in fields {
                assert_eq!(
                    offset, end,
                    "{}.{field}: a gap or a missing field",
                    layout.name
                );
                end = offset + size;
            }
            assert_eq!(
                end, layout.size,
                "{}: fields missing at the end",
                layout.name
            );
        }
    }

    #[test]
    fn kernel_layouts_match_their_host_mirrors() {
        let host: BTreeSet<(String, String, usize)> = mirrors()
            .into_iter()
            .flat_map(|layout| {
                let name = layout.name.to_string();
                let size = (name.clone(), String::new(), layout.size);
                let fields = layout
                    .fields
                    .into_iter()
                    .map(move |(field, offset, _)| (name.clone(), field.to_string(), offset));
                std::iter::once(size).chain(fields)
            })
            .collect();
        let kernels = kernel_checks();
        let only_host: Vec<_> = host.difference(&kernels).collect();
        let only_kernels: Vec<_> = kernels.difference(&host).collect();
        assert!(
            only_host.is_empty() && only_kernels.is_empty(),
            "(type, field, bytes) in src/cuda/abi only: {only_host:?}; \
             in kernels/ only: {only_kernels:?}"
        );
    }

    #[test]
    fn defines_have_distinct_names() {
        for defines in [ORB_DEFINES, HAMMING_DEFINES, L2_DEFINES, SIFT_DEFINES] {
            let names: BTreeSet<&str> = defines.iter().map(|d| d.name).collect();
            assert_eq!(names.len(), defines.len());
        }
    }
}
