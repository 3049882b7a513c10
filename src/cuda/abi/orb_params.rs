//! The parameters of the ORB kernels (kernels/common/orb_params.cuh), one struct per
//! kernel, and the structure-of-arrays views several of them share. Candidates and
//! records sit at each level's first slot ([`OrbLevel::cand_offset`](super::OrbLevel)).

use cudarc::driver::sys::CUdeviceptr;

use super::OrbRows;

/// The per-frame counters, zeroed each frame, within one buffer.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OrbCounters {
    /// Candidates per level (n_levels words).
    pub level_counts: CUdeviceptr,
    /// Each level's histogram of FAST scores (n_levels x ORB_SCORE_BINS words).
    pub score_histograms: CUdeviceptr,
    /// Each level's records per bin of their ranks k (n_levels x RANK_BINS words).
    pub rank_bins: CUdeviceptr,
}

/// The NMS survivors of every cell.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OrbCandidateArrays {
    /// y << 16 | x.
    pub yx: CUdeviceptr,
    /// The cell within the level.
    pub cell: CUdeviceptr,
    /// The FAST ranking key (i64).
    pub key: CUdeviceptr,
    /// The FAST score (u8).
    pub score: CUdeviceptr,
}

/// The selection records.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OrbRecordArrays {
    /// The ranking key (i64): FAST or Harris.
    pub key: CUdeviceptr,
    pub yx: CUdeviceptr,
    pub cell: CUdeviceptr,
    /// The rank k within the cell.
    pub rank: CUdeviceptr,
    /// The order within the level's bin of k (any order).
    pub bin_slot: CUdeviceptr,
}

/// The kept keypoints, in output order.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OrbKeypointArrays {
    pub yx: CUdeviceptr,
    pub level: CUdeviceptr,
    /// The ranking key (i64).
    pub key: CUdeviceptr,
}

/// The descriptors' smoothing taps packed as bytes for `orb_fast_score`'s byte dot
/// products: w0..w3; w4, w5, w6, 0; 0, w0, w1, w2; w3..w6 (byte 0 first).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SmoothTaps {
    pub taps_0123: u32,
    pub taps_456: u32,
    pub taps_x012: u32,
    pub taps_3456: u32,
}

/// `orb_pyramid`: the rows `rows` of levels 1.. resized from the level before.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OrbPyramidParams {
    pub level_table: CUdeviceptr,
    pub taps: CUdeviceptr,
    pub pyramid: CUdeviceptr,
    pub barrier_state: CUdeviceptr,
    /// Pixel rows.
    pub rows: OrbRows,
    pub n_levels: i32,
    pub padding: i32,
}

/// `orb_fast_score`: FAST scores, the corner bitmap and the smoothed image of the
/// tiles in `rows`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OrbFastScoreParams {
    pub pyramid: CUdeviceptr,
    pub level_table: CUdeviceptr,
    pub arc_bits: CUdeviceptr,
    pub scores: CUdeviceptr,
    pub corner_bits: CUdeviceptr,
    pub smoothed: CUdeviceptr,
    pub taps: SmoothTaps,
    /// Tile rows.
    pub rows: OrbRows,
    pub n_levels: i32,
    pub threshold: i32,
    /// The launch's queue: tiles taken past the first of each block (zeroed).
    pub tiles_taken: CUdeviceptr,
}

/// `orb_cell_candidates`: the NMS survivors of each cell in `rows`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OrbCellCandidatesParams {
    pub scores: CUdeviceptr,
    pub corner_bits: CUdeviceptr,
    pub level_table: CUdeviceptr,
    pub counters: OrbCounters,
    pub cell_starts: CUdeviceptr,
    pub cell_counts: CUdeviceptr,
    pub candidates: OrbCandidateArrays,
    /// Cell rows.
    pub rows: OrbRows,
    pub n_levels: i32,
    pub fast_threshold: i32,
    pub min_fast_threshold: i32,
    pub harris: i32,
}

/// `orb_select_candidates`: each level's records.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OrbSelectCandidatesParams {
    pub level_table: CUdeviceptr,
    pub counters: OrbCounters,
    pub quotas: CUdeviceptr,
    pub candidates: OrbCandidateArrays,
    pub records: OrbRecordArrays,
    pub level_records: CUdeviceptr,
    pub n_levels: i32,
    pub harris: i32,
}

/// The records of every level, as `orb_select_candidates` left them: the level table
/// and each level's record count index the record arrays.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OrbRecordSet {
    pub level_table: CUdeviceptr,
    pub level_records: CUdeviceptr,
    pub records: OrbRecordArrays,
    pub n_levels: i32,
    pub padding: i32,
}

/// `orb_record_keys`: the records' Harris keys.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OrbRecordKeysParams {
    pub pyramid: CUdeviceptr,
    pub set: OrbRecordSet,
}

/// `orb_record_ranks`: each record's rank in its cell.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OrbRecordRanksParams {
    pub set: OrbRecordSet,
    /// [`OrbCounters::rank_bins`].
    pub rank_bins: CUdeviceptr,
}

/// `orb_record_place`: the kept keypoints, in output order.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OrbRecordPlaceParams {
    pub level_table: CUdeviceptr,
    pub counters: OrbCounters,
    pub quotas: CUdeviceptr,
    pub level_records: CUdeviceptr,
    pub records: OrbRecordArrays,
    /// n_levels + 1 words: the keypoints kept per level, then their total.
    pub kept: CUdeviceptr,
    pub keypoints: OrbKeypointArrays,
    pub n_levels: i32,
    pub padding: i32,
}

/// `orb_describe`: orientation, rBRIEF and the fused match.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OrbDescribeParams {
    pub pyramid: CUdeviceptr,
    pub smoothed: CUdeviceptr,
    pub level_table: CUdeviceptr,
    pub umax: CUdeviceptr,
    pub pattern: CUdeviceptr,
    pub kept: CUdeviceptr,
    pub keypoints: OrbKeypointArrays,
    pub moments: CUdeviceptr,
    pub descriptors: CUdeviceptr,
    /// The resident train set and its count, or 0 (null) for none.
    pub train: CUdeviceptr,
    pub train_count: CUdeviceptr,
    pub matches: CUdeviceptr,
    /// Per train descriptor its nearest keypoint, `distance << BACKWARD_QUERY_BITS |
    /// keypoint`, folded by atomicMin into words preset to all ones (the cross-check's
    /// backward search); 0 (null) for none.
    pub backward_best: CUdeviceptr,
    pub n_levels: i32,
    /// Keypoints per block, at most 32.
    pub per_block: i32,
}

/// The fields a Features message publishes per keypoint.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OrbFeatureArrays {
    pub x: CUdeviceptr,
    pub y: CUdeviceptr,
    pub size: CUdeviceptr,
    /// NaN where the host computes the angle itself (`orb_keypoint_fields`).
    pub angle: CUdeviceptr,
    pub response: CUdeviceptr,
    pub octave: CUdeviceptr,
}

/// `orb_keypoint_fields`: the kept keypoints' published fields.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OrbKeypointFieldsParams {
    pub kept: CUdeviceptr,
    pub keypoints: OrbKeypointArrays,
    pub moments: CUdeviceptr,
    /// Per level (f32): the frame pixels of one level pixel.
    pub level_scales: CUdeviceptr,
    pub fields: OrbFeatureArrays,
    /// The host's 180 / pi.
    pub degrees_per_radian: f64,
    /// Response per unit of the Harris key.
    pub harris_scale: f64,
    pub patch_size: f32,
    /// 1: the key is Harris's, else FAST's.
    pub harris: i32,
    pub n_levels: i32,
    pub padding: i32,
}

kernel_params!(
    OrbPyramidParams,
    OrbFastScoreParams,
    OrbCellCandidatesParams,
    OrbSelectCandidatesParams,
    OrbRecordKeysParams,
    OrbRecordRanksParams,
    OrbRecordPlaceParams,
    OrbDescribeParams,
    OrbKeypointFieldsParams
);

#[cfg(test)]
pub(super) fn layouts() -> Vec<super::layout::Layout> {
    use super::layout::layout;
    vec![
        layout!(OrbCounters {
            level_counts,
            score_histograms,
            rank_bins,
        }),
        layout!(OrbCandidateArrays {
            yx,
            cell,
            key,
            score,
        }),
        layout!(OrbRecordArrays {
            key,
            yx,
            cell,
            rank,
            bin_slot,
        }),
        layout!(OrbKeypointArrays { yx, level, key }),
        layout!(SmoothTaps {
            taps_0123,
            taps_456,
            taps_x012,
            taps_3456,
        }),
        layout!(OrbPyramidParams {
            level_table,
            taps,
            pyramid,
            barrier_state,
            rows,
            n_levels,
            padding,
        }),
        layout!(OrbFastScoreParams {
            pyramid,
            level_table,
            arc_bits,
            scores,
            corner_bits,
            smoothed,
            taps,
            rows,
            n_levels,
            threshold,
            tiles_taken,
        }),
        layout!(OrbCellCandidatesParams {
            scores,
            corner_bits,
            level_table,
            counters,
            cell_starts,
            cell_counts,
            candidates,
            rows,
            n_levels,
            fast_threshold,
            min_fast_threshold,
            harris,
        }),
        layout!(OrbSelectCandidatesParams {
            level_table,
            counters,
            quotas,
            candidates,
            records,
            level_records,
            n_levels,
            harris,
        }),
        layout!(OrbRecordSet {
            level_table,
            level_records,
            records,
            n_levels,
            padding,
        }),
        layout!(OrbRecordKeysParams { pyramid, set }),
        layout!(OrbRecordRanksParams { set, rank_bins }),
        layout!(OrbRecordPlaceParams {
            level_table,
            counters,
            quotas,
            level_records,
            records,
            kept,
            keypoints,
            n_levels,
            padding,
        }),
        layout!(OrbDescribeParams {
            pyramid,
            smoothed,
            level_table,
            umax,
            pattern,
            kept,
            keypoints,
            moments,
            descriptors,
            train,
            train_count,
            matches,
            backward_best,
            n_levels,
            per_block,
        }),
        layout!(OrbFeatureArrays {
            x,
            y,
            size,
            angle,
            response,
            octave,
        }),
        layout!(OrbKeypointFieldsParams {
            kept,
            keypoints,
            moments,
            level_scales,
            fields,
            degrees_per_radian,
            harris_scale,
            patch_size,
            harris,
            n_levels,
            padding,
        }),
    ]
}
