//! One typed launch per SIFT kernel, and the per-frame launch sequence (everything
//! between upload and downloads), queued on the pipeline's stream: captured once per
//! image size into a CUDA graph.
//!
//! Every kernel takes one parameter struct (`cuda::abi::sift_params`, mirrored in
//! kernels/common/blur_jobs.cuh and sift_params.cuh), the keypoint lists as
//! structure-of-arrays views. Device pointers are `CUdeviceptr`.

use std::mem::size_of;

use cudarc::driver::{result, CudaStream, LaunchConfig};

use crate::config::SiftConfig;
use crate::cuda::abi::sift_params::{
    SiftCandidateArrays, SiftDescribeParams, SiftExtremaParams, SiftExtremumArrays,
    SiftKeypointArrays, SiftOrientationParams, SiftPlaceParams, SiftRankKeysParams,
    SiftRankResponsesParams, SiftRanks, SiftRefineParams, SiftSmallOctavesParams, SiftTiledParams,
};
use crate::cuda::abi::LevelsJob;
use crate::cuda::branch::Branch;
use crate::cuda::gpu::Gpu;
use crate::cuda::sift::plan::{JobLaunch, Plan, StageLaunches, Taps};
use crate::cuda::sift::shapes::{Kernels, Launch};
use crate::error::Result;
use crate::spec::scale_space::prefilter_threshold;

/// The typed launches.
///
/// # Safety (every function)
/// Every pointer of its arguments is a live device allocation of the caller's plan (or
/// a table uploaded with it), sized for the capacities and tables the kernel is given,
/// and stays alive until the stream has run the kernel.
impl Kernels {
    /// A stage's chained or stepped jobs with `kernel` (`tiled_kernel`);
    /// `programmatic`: an overlapped copy after overlapped launches only, which may
    /// start before they end.
    pub unsafe fn tiled(
        &self,
        stream: &CudaStream,
        kernel: &Launch,
        launch: &JobLaunch,
        p: &SiftTiledParams,
        programmatic: bool,
    ) -> Result<()> {
        let config = kernel.config(launch.tiles);
        // SAFETY: `sift_blur_dog_*` and `sift_levels_*` take one `SiftTiledParams`; the
        // caller vouches for its pointers, and an overlapped copy's tiles wait for the
        // rows of the launches before it that they read.
        unsafe {
            if programmatic {
                kernel.kernel.launch_programmatic(stream, config, p)
            } else {
                kernel.kernel.launch(stream, config, p)
            }
        }
    }

    pub unsafe fn small_octaves(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        p: &SiftSmallOctavesParams,
    ) -> Result<()> {
        // SAFETY: `sift_small_octaves` takes one `SiftSmallOctavesParams`; the caller
        // vouches for its pointers.
        unsafe { self.small_octaves.kernel.launch(stream, config, p) }
    }

    pub unsafe fn extrema(&self, stream: &CudaStream, p: &SiftExtremaParams) -> Result<()> {
        // SAFETY: `p` is `sift_extrema`'s parameter struct; the caller vouches for the
        // pyramid and octave table and for the candidate arrays of `capacity` entries.
        unsafe { self.extrema.launch_persistent(stream, p) }
    }

    pub unsafe fn refine(&self, stream: &CudaStream, p: &SiftRefineParams) -> Result<()> {
        // SAFETY: `p` is `sift_refine`'s parameter struct; the caller vouches for the
        // pyramid and octave table, the candidate and extremum arrays of their
        // capacities and the counters.
        unsafe { self.refine.launch_persistent(stream, p) }
    }

    pub unsafe fn orientation(&self, stream: &CudaStream, p: &SiftOrientationParams) -> Result<()> {
        // SAFETY: `p` is `sift_orientation`'s parameter struct; the caller vouches for
        // the pyramid and octave table, the extremum and keypoint arrays of their
        // capacities and the counters (its work queue zeroed).
        unsafe { self.orientation.launch_persistent(stream, p) }
    }

    pub unsafe fn rank_keys(&self, stream: &CudaStream, p: &SiftRankKeysParams) -> Result<()> {
        // SAFETY: `p` is `sift_rank_keys`' parameter struct; the caller vouches for the
        // keypoint arrays, the zeroed ranks and the duplicate list (`capacity` entries
        // each).
        unsafe { self.rank_keys.launch_persistent(stream, p) }
    }

    pub unsafe fn rank_responses(
        &self,
        stream: &CudaStream,
        p: &SiftRankResponsesParams,
    ) -> Result<()> {
        // SAFETY: `p` is `sift_rank_responses`' parameter struct; the caller vouches
        // for the keypoint arrays and ranks (`capacity` entries each).
        unsafe { self.rank_responses.launch_persistent(stream, p) }
    }

    pub unsafe fn place(&self, stream: &CudaStream, p: &SiftPlaceParams) -> Result<()> {
        // SAFETY: `p` is `sift_place`'s parameter struct; the caller vouches for the
        // keypoint arrays, ranks and duplicates (`capacity` entries each), the
        // summary's words and the outputs (`max_features` entries).
        unsafe { self.place.launch_persistent(stream, p) }
    }

    pub unsafe fn describe(&self, stream: &CudaStream, p: &SiftDescribeParams) -> Result<()> {
        // SAFETY: `p` is `sift_describe`'s parameter struct; the caller vouches for the
        // pyramid and octave table, the outputs and a descriptor for each of them, and
        // the counters (its work queue zeroed).
        unsafe { self.describe.launch_persistent(stream, p) }
    }
}

/// The plan's buffers as the kernels see them.
struct Views {
    candidates: SiftCandidateArrays,
    extrema: SiftExtremumArrays,
    keypoints: SiftKeypointArrays,
    ranks: SiftRanks,
    outputs: SiftKeypointArrays,
}

impl Views {
    fn of(plan: &Plan) -> Self {
        let [cand_x, cand_y, cand_ol] = &plan.candidates;
        let [col, row, ext_ol, ext_x, ext_y, scale, ext_response] = &plan.extrema;
        let [x, y, size, angle, response, kp_ol] = &plan.keypoints;
        let [out_x, out_y, out_size, out_angle, out_response, out_octave] = &plan.outputs;
        let per_keypoint = (plan.keypoint_capacity * size_of::<u32>()) as u64;
        Self {
            candidates: SiftCandidateArrays {
                x: cand_x.ptr,
                y: cand_y.ptr,
                octave_layer: cand_ol.ptr,
            },
            extrema: SiftExtremumArrays {
                col: col.ptr,
                row: row.ptr,
                octave_layer: ext_ol.ptr,
                x: ext_x.ptr,
                y: ext_y.ptr,
                scale: scale.ptr,
                response: ext_response.ptr,
            },
            keypoints: SiftKeypointArrays {
                x: x.ptr,
                y: y.ptr,
                size: size.ptr,
                angle: angle.ptr,
                response: response.ptr,
                octave_layer: kp_ol.ptr,
            },
            ranks: SiftRanks {
                less: plan.ranks.ptr,
                equal_before: plan.ranks.ptr + per_keypoint,
                stronger: plan.ranks.ptr + 2 * per_keypoint,
            },
            outputs: SiftKeypointArrays {
                x: out_x.ptr,
                y: out_y.ptr,
                size: out_size.ptr,
                angle: out_angle.ptr,
                response: out_response.ptr,
                octave_layer: out_octave.ptr,
            },
        }
    }
}

/// The side branches of a frame's scale space: the big octaves' levels above n, and
/// the small octaves' block.
pub struct SideBranches {
    pub tails: Branch,
    pub small: Branch,
}

impl SideBranches {
    pub fn new(gpu: &Gpu) -> Result<Self> {
        Ok(Self {
            tails: Branch::new(gpu)?,
            small: Branch::new(gpu)?,
        })
    }
}

/// Whether a frame's tiled launches overlap (kernels/common/tile_flow.cuh): where every
/// launch has an overlapped copy of its kernel, the frame's first octave goes level by
/// level (a chain of launches of one level each), and no launch is more than two waves
/// of its kernel's resident blocks. A launch's last wave, and the launch after it
/// waiting for it, then leave SMs idle that the next launch's tiles take. H200: with
/// more waves (4K frames, upscaled 1080p, `--sm-limit 8`) the tiles' waits and
/// publications cost more than the tails they fill, and octaves in steps alone (640x480)
/// gain nothing.
fn overlapped_launches(k: &Kernels, plan: &Plan) -> bool {
    let fits = |launch: &JobLaunch, stepped: bool| {
        k.overlapped_copy(launch, stepped)
            .is_some_and(|kernel| launch.tiles.div_ceil(kernel.blocks.max(1)) <= 2)
    };
    let launches = || {
        plan.stages
            .iter()
            .flat_map(|stage| [stage.chain, stage.tail])
            .flat_map(|part| [(part.chained, false), (part.stepped, true)])
            .filter_map(|(launch, stepped)| launch.map(|launch| (launch, stepped)))
    };
    launches().all(|(launch, stepped)| fits(&launch, stepped))
        && launches().filter(|(_, stepped)| !stepped).count() > 1
}

pub fn enqueue(
    stream: &CudaStream,
    branches: &SideBranches,
    k: &Kernels,
    config: &SiftConfig,
    plan: &Plan,
    taps: &Taps,
) -> Result<()> {
    let n_layers = config.n_octave_layers as i32;
    let first_octave = if config.upscale { -1i32 } else { 0 };
    let n_octaves = plan.octaves.len() as i32;
    // The budget: `max_features`, or the keypoint capacity when unlimited.
    let max_features = plan.output_capacity as i32;
    let kp_capacity = plan.keypoint_capacity as i32;
    let v = Views::of(plan);
    let counters = plan.counters.ptr;
    let (pyramid, octaves) = (plan.pyramid.ptr, plan.octave_table.ptr);
    let job_table = |first: usize| plan.jobs.ptr + (first * size_of::<LevelsJob>()) as u64;

    // The grey image the scale space starts from: a packed mono8 frame as uploaded,
    // any other converted by the frame's first kernel.
    let frame = if plan.input.layout().is_packed_grey() {
        plan.input.ptr()
    } else {
        // SAFETY: the plan's input holds its layout's upload bytes (`FrameUpload::new`),
        // and its grey buffer width x height bytes, the plan's size.
        unsafe {
            let layout = plan.input.layout();
            k.gray.enqueue(
                stream,
                layout,
                0..layout.height,
                plan.input.ptr(),
                plan.gray.ptr,
            )?;
        }
        plan.gray.ptr
    };
    let overlapped = overlapped_launches(k, plan);
    // SAFETY: both buffers are live device allocations of this plan, `bytes` long.
    unsafe {
        result::memset_d8_async(counters, 0, plan.counters.bytes, stream.cu_stream())?;
        result::memset_d8_async(plan.ranks.ptr, 0, plan.ranks.bytes, stream.cu_stream())?;
    }
    // SAFETY (every launch below): every pointer is a live buffer of this plan, sized by
    // the capacities the kernels are given, and the tables (octaves, jobs, taps) were
    // built for this plan's size.
    unsafe {
        let params = |launch: &JobLaunch, max_radius: usize| SiftTiledParams {
            jobs: job_table(launch.first_job),
            frame,
            pyramid,
            taps: plan.taps.ptr,
            rows_done: plan.rows_done(),
            n_jobs: launch.n_jobs,
            total_tiles: launch.tiles as i32,
            max_radius: max_radius as i32,
            padding: 0,
        };
        // One part of a stage (its chain or its tail) on `stream`. `programmatic`: its
        // first launch may start before the launches `stream` waits for end, all of them
        // overlapped; its second follows its first.
        let stage_launches =
            |stream: &CudaStream, part: &StageLaunches, programmatic: bool| -> Result<()> {
                let chained = part
                    .chained
                    .map(|launch| (launch, false, taps.chain_radius));
                let stepped = part.stepped.map(|launch| (launch, true, taps.step_halo));
                let mut programmatic = programmatic;
                for (launch, stepped, radius) in chained.into_iter().chain(stepped) {
                    k.tiled(
                        stream,
                        k.tiled_kernel(&launch, stepped, overlapped),
                        &launch,
                        &params(&launch, radius),
                        programmatic,
                    )?;
                    programmatic = overlapped;
                }
                Ok(())
            };
        // Whether the frame's stream has queued overlapped launches only since the
        // counters were reset.
        let mut chain_overlapped = false;
        for (s, stage) in plan.stages.iter().enumerate() {
            // The tail reads levels of earlier stages only: it forks before this stage's
            // chain, which then runs beside it. Its branch waits for the chain so far and
            // for earlier tails.
            if !stage.tail.is_empty() {
                let side = branches.tails.fork(stream)?;
                stage_launches(side, &stage.tail, chain_overlapped)?;
                branches.tails.close()?;
            }
            if !stage.chain.is_empty() {
                stage_launches(stream, &stage.chain, chain_overlapped)?;
                chain_overlapped = overlapped;
            }
            // The small octaves start from the level this stage made, and run in two
            // blocks beside the rest of the blur; the frame's stream waits for them
            // before the extrema.
            if let Some(small) = plan.small_octaves.filter(|small| small.after_stage == s) {
                let params = SiftSmallOctavesParams {
                    jobs: plan.small_jobs.ptr,
                    pyramid,
                    taps: plan.taps.ptr,
                    counters,
                    n_jobs: small.n_jobs,
                    n_chain_jobs: small.n_chain_jobs,
                    max_width: small.max_width,
                    max_height: small.max_height,
                    pad: small.pad,
                    n_taps: small.n_taps,
                };
                let side = branches.small.fork(stream)?;
                k.small_octaves(side, k.small_octaves_config(small.shared_bytes), &params)?;
                branches.small.close()?;
            }
        }
        let extrema = |octave_begin: i32, octave_end: i32| SiftExtremaParams {
            pyramid,
            octaves,
            counters,
            candidates: v.candidates,
            octave_begin,
            octave_end,
            n_layers,
            capacity: plan.candidate_capacity as i32,
            threshold: prefilter_threshold(config.contrast_threshold, n_layers as usize),
            padding: 0,
        };
        // The big octaves' extrema wait for their last levels, and run while the small
        // octaves' block finishes.
        if plan.stages.iter().any(|stage| !stage.tail.is_empty()) {
            branches.tails.join(stream)?;
        }
        match plan.small_octaves {
            Some(small) => {
                k.extrema(stream, &extrema(0, small.first_octave))?;
                branches.small.join(stream)?;
                k.extrema(stream, &extrema(small.first_octave, n_octaves))?;
            }
            None => k.extrema(stream, &extrema(0, n_octaves))?,
        }
        k.refine(
            stream,
            &SiftRefineParams {
                pyramid,
                octaves,
                counters,
                candidates: v.candidates,
                extrema: v.extrema,
                n_layers,
                candidate_capacity: plan.candidate_capacity as i32,
                capacity: kp_capacity,
                contrast_threshold: config.contrast_threshold as f32,
                edge_threshold: config.edge_threshold as f32,
                sigma: config.sigma as f32,
            },
        )?;
        k.orientation(
            stream,
            &SiftOrientationParams {
                pyramid,
                octaves,
                counters,
                extrema: v.extrema,
                keypoints: v.keypoints,
                first_octave,
                layers: n_layers,
                extremum_capacity: kp_capacity,
                capacity: kp_capacity,
            },
        )?;
        k.rank_keys(
            stream,
            &SiftRankKeysParams {
                counters,
                keypoints: v.keypoints,
                ranks: v.ranks,
                duplicates: plan.duplicates.ptr,
                capacity: kp_capacity,
                padding: 0,
            },
        )?;
        if config.max_features > 0 {
            k.rank_responses(
                stream,
                &SiftRankResponsesParams {
                    counters,
                    keypoints: v.keypoints,
                    ranks: v.ranks,
                    capacity: kp_capacity,
                    max_features,
                },
            )?;
        }
        k.place(
            stream,
            &SiftPlaceParams {
                counters,
                duplicates: plan.duplicates.ptr,
                keypoints: v.keypoints,
                ranks: v.ranks,
                summary: plan.summary.ptr,
                outputs: v.outputs,
                out_octave_layer: plan.out_octave_layer.ptr,
                capacity: kp_capacity,
                max_features,
                first_octave,
                padding: 0,
            },
        )?;
        k.describe(
            stream,
            &SiftDescribeParams {
                pyramid,
                octaves,
                counters,
                out_count: plan.summary.ptr,
                outputs: v.outputs,
                out_octave_layer: plan.out_octave_layer.ptr,
                descriptors: plan.descriptors.ptr,
                first_octave,
                layers: n_layers,
                root_sift: i32::from(config.root_sift),
                padding: 0,
            },
        )?;
    }
    Ok(())
}
