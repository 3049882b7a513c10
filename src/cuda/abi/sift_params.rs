//! The parameters of the SIFT kernels (kernels/common/sift_params.cuh), one struct per
//! kernel, and the structure-of-arrays views they pass each other. `counters` is the frame's
//! [`SiftCounters`](super::SiftCounters): a kernel advances and reads the ones it names.

use cudarc::driver::sys::CUdeviceptr;

/// Candidates of `sift_extrema`: integer position and packed octave and layer.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SiftCandidateArrays {
    pub x: CUdeviceptr,
    pub y: CUdeviceptr,
    pub octave_layer: CUdeviceptr,
}

/// Extrema of `sift_refine`: sample, packed octave and layer, refined position, scale
/// and response.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SiftExtremumArrays {
    pub col: CUdeviceptr,
    pub row: CUdeviceptr,
    pub octave_layer: CUdeviceptr,
    pub x: CUdeviceptr,
    pub y: CUdeviceptr,
    pub scale: CUdeviceptr,
    pub response: CUdeviceptr,
}

/// Oriented keypoints, before ranking (`sift_orientation`) or as output (`sift_place`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SiftKeypointArrays {
    pub x: CUdeviceptr,
    pub y: CUdeviceptr,
    pub size: CUdeviceptr,
    pub angle: CUdeviceptr,
    pub response: CUdeviceptr,
    /// Packed octave and layer (in the outputs: the octave as reported).
    pub octave_layer: CUdeviceptr,
}

/// The ranking's three counts per keypoint, zeroed each frame.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SiftRanks {
    pub less: CUdeviceptr,
    pub equal_before: CUdeviceptr,
    pub stronger: CUdeviceptr,
}

/// `sift_blur_dog_*` and `sift_levels_*`: `n_jobs` jobs of the job table over
/// `total_tiles` tiles, with shared memory sized for radii up to `max_radius`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SiftTiledParams {
    pub jobs: CUdeviceptr,
    pub frame: CUdeviceptr,
    pub pyramid: CUdeviceptr,
    pub taps: CUdeviceptr,
    /// The frame's tile-row counters (kernels/common/tile_flow.cuh).
    pub rows_done: CUdeviceptr,
    pub n_jobs: i32,
    pub total_tiles: i32,
    pub max_radius: i32,
    pub padding: i32,
}

/// `sift_small_octaves`: its `n_jobs` levels (the first `n_chain_jobs` the chain
/// block's, the rest the tail block's), the largest `max_width` x `max_height` with
/// radii up to `pad`, and the tap table of `n_taps` floats.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SiftSmallOctavesParams {
    pub jobs: CUdeviceptr,
    pub pyramid: CUdeviceptr,
    pub taps: CUdeviceptr,
    pub counters: CUdeviceptr,
    pub n_jobs: i32,
    pub n_chain_jobs: i32,
    pub max_width: i32,
    pub max_height: i32,
    pub pad: i32,
    pub n_taps: i32,
}

/// `sift_extrema`: octaves `octave_begin..octave_end` of the table.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SiftExtremaParams {
    pub pyramid: CUdeviceptr,
    pub octaves: CUdeviceptr,
    pub counters: CUdeviceptr,
    pub candidates: SiftCandidateArrays,
    pub octave_begin: i32,
    pub octave_end: i32,
    pub n_layers: i32,
    /// Of the candidate arrays.
    pub capacity: i32,
    pub threshold: f32,
    pub padding: i32,
}

/// `sift_refine`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SiftRefineParams {
    pub pyramid: CUdeviceptr,
    pub octaves: CUdeviceptr,
    pub counters: CUdeviceptr,
    pub candidates: SiftCandidateArrays,
    pub extrema: SiftExtremumArrays,
    pub n_layers: i32,
    pub candidate_capacity: i32,
    /// Of the extremum arrays.
    pub capacity: i32,
    pub contrast_threshold: f32,
    pub edge_threshold: f32,
    pub sigma: f32,
}

/// `sift_orientation`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SiftOrientationParams {
    pub pyramid: CUdeviceptr,
    pub octaves: CUdeviceptr,
    pub counters: CUdeviceptr,
    pub extrema: SiftExtremumArrays,
    pub keypoints: SiftKeypointArrays,
    pub first_octave: i32,
    pub layers: i32,
    pub extremum_capacity: i32,
    /// Of the keypoint arrays.
    pub capacity: i32,
}

/// `sift_rank_keys`: reads the keypoints' x, y, size and angle.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SiftRankKeysParams {
    pub counters: CUdeviceptr,
    pub keypoints: SiftKeypointArrays,
    pub ranks: SiftRanks,
    /// The duplicates' indices.
    pub duplicates: CUdeviceptr,
    pub capacity: i32,
    pub padding: i32,
}

/// `sift_rank_responses`: reads the keypoints' x, y, size, angle and response.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SiftRankResponsesParams {
    pub counters: CUdeviceptr,
    pub keypoints: SiftKeypointArrays,
    pub ranks: SiftRanks,
    pub capacity: i32,
    pub max_features: i32,
}

/// `sift_place`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SiftPlaceParams {
    pub counters: CUdeviceptr,
    pub duplicates: CUdeviceptr,
    pub keypoints: SiftKeypointArrays,
    pub ranks: SiftRanks,
    /// `SUMMARY_WORDS`: the kept count, then the first four counters.
    pub summary: CUdeviceptr,
    pub outputs: SiftKeypointArrays,
    /// Packed octave and layer, for `sift_describe`.
    pub out_octave_layer: CUdeviceptr,
    pub capacity: i32,
    pub max_features: i32,
    pub first_octave: i32,
    pub padding: i32,
}

/// `sift_describe`: reads the outputs' x, y, size and angle.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SiftDescribeParams {
    pub pyramid: CUdeviceptr,
    pub octaves: CUdeviceptr,
    pub counters: CUdeviceptr,
    /// The summary's kept count.
    pub out_count: CUdeviceptr,
    pub outputs: SiftKeypointArrays,
    pub out_octave_layer: CUdeviceptr,
    pub descriptors: CUdeviceptr,
    pub first_octave: i32,
    pub layers: i32,
    pub root_sift: i32,
    pub padding: i32,
}

kernel_params!(
    SiftTiledParams,
    SiftSmallOctavesParams,
    SiftExtremaParams,
    SiftRefineParams,
    SiftOrientationParams,
    SiftRankKeysParams,
    SiftRankResponsesParams,
    SiftPlaceParams,
    SiftDescribeParams
);

#[cfg(test)]
pub(super) fn layouts() -> Vec<super::layout::Layout> {
    use super::layout::layout;
    vec![
        layout!(SiftTiledParams {
            jobs,
            frame,
            pyramid,
            taps,
            rows_done,
            n_jobs,
            total_tiles,
            max_radius,
            padding,
        }),
        layout!(SiftSmallOctavesParams {
            jobs,
            pyramid,
            taps,
            counters,
            n_jobs,
            n_chain_jobs,
            max_width,
            max_height,
            pad,
            n_taps,
        }),
        layout!(SiftCandidateArrays { x, y, octave_layer }),
        layout!(SiftExtremumArrays {
            col,
            row,
            octave_layer,
            x,
            y,
            scale,
            response,
        }),
        layout!(SiftKeypointArrays {
            x,
            y,
            size,
            angle,
            response,
            octave_layer,
        }),
        layout!(SiftRanks {
            less,
            equal_before,
            stronger,
        }),
        layout!(SiftExtremaParams {
            pyramid,
            octaves,
            counters,
            candidates,
            octave_begin,
            octave_end,
            n_layers,
            capacity,
            threshold,
            padding,
        }),
        layout!(SiftRefineParams {
            pyramid,
            octaves,
            counters,
            candidates,
            extrema,
            n_layers,
            candidate_capacity,
            capacity,
            contrast_threshold,
            edge_threshold,
            sigma,
        }),
        layout!(SiftOrientationParams {
            pyramid,
            octaves,
            counters,
            extrema,
            keypoints,
            first_octave,
            layers,
            extremum_capacity,
            capacity,
        }),
        layout!(SiftRankKeysParams {
            counters,
            keypoints,
            ranks,
            duplicates,
            capacity,
            padding,
        }),
        layout!(SiftRankResponsesParams {
            counters,
            keypoints,
            ranks,
            capacity,
            max_features,
        }),
        layout!(SiftPlaceParams {
            counters,
            duplicates,
            keypoints,
            ranks,
            summary,
            outputs,
            out_octave_layer,
            capacity,
            max_features,
            first_octave,
            padding,
        }),
        layout!(SiftDescribeParams {
            pyramid,
            octaves,
            counters,
            out_count,
            outputs,
            out_octave_layer,
            descriptors,
            first_octave,
            layers,
            root_sift,
            padding,
        }),
    ]
}
