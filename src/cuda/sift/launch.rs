//! One typed launch per SIFT kernel, and the per-frame launch sequence (everything
//! between upload and downloads), queued on the pipeline's stream: captured once per
//! image size into a CUDA graph.
//!
//! Each `*Args` struct lists its kernel's parameters in order, under the kernel's
//! names (kernels/sift/*.cu); a keypoint list is one structure-of-arrays view, pushed
//! array by array in the kernel's order. Device pointers are `CUdeviceptr`.

use std::mem::{offset_of, size_of};

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{result, CudaStream, LaunchConfig};

use crate::config::SiftConfig;
use crate::cuda::abi::{LevelsJob, SiftCounters};
use crate::cuda::branch::Branch;
use crate::cuda::kernel::KernelArgs;
use crate::cuda::sift::plan::{JobLaunch, Plan, Taps};
use crate::cuda::sift::shapes::{Kernels, Launch};
use crate::error::Result;
use crate::spec::scale_space::prefilter_threshold;

/// Candidates of `sift_extrema`: integer position and packed octave and layer.
#[derive(Clone, Copy)]
pub struct CandidateArrays {
    pub x: CUdeviceptr,
    pub y: CUdeviceptr,
    pub octave_layer: CUdeviceptr,
}

/// Extrema of `sift_refine`: sample, packed octave and layer, refined position,
/// scale and response.
#[derive(Clone, Copy)]
pub struct ExtremumArrays {
    pub col: CUdeviceptr,
    pub row: CUdeviceptr,
    pub octave_layer: CUdeviceptr,
    pub x: CUdeviceptr,
    pub y: CUdeviceptr,
    pub scale: CUdeviceptr,
    pub response: CUdeviceptr,
}

/// Oriented keypoints, before ranking (`sift_orientation`) or as output (`sift_place`).
#[derive(Clone, Copy)]
pub struct KeypointArrays {
    pub x: CUdeviceptr,
    pub y: CUdeviceptr,
    pub size: CUdeviceptr,
    pub angle: CUdeviceptr,
    pub response: CUdeviceptr,
    /// Packed octave and layer (`octave` in the outputs: the octave as reported).
    pub octave_layer: CUdeviceptr,
}

/// The counters of [`SiftCounters`], each as the pointer a kernel advances.
#[derive(Clone, Copy)]
pub struct CounterPointers {
    pub all: CUdeviceptr,
    pub candidates: CUdeviceptr,
    pub extrema: CUdeviceptr,
    pub keypoints: CUdeviceptr,
    pub duplicates: CUdeviceptr,
    pub orientation_queue: CUdeviceptr,
    pub describe_queue: CUdeviceptr,
}

impl CounterPointers {
    fn of(counters: CUdeviceptr) -> Self {
        let field = |offset: usize| counters + offset as u64;
        Self {
            all: counters,
            candidates: field(offset_of!(SiftCounters, candidates)),
            extrema: field(offset_of!(SiftCounters, extrema)),
            keypoints: field(offset_of!(SiftCounters, keypoints)),
            duplicates: field(offset_of!(SiftCounters, duplicates)),
            orientation_queue: field(offset_of!(SiftCounters, orientation_queue)),
            describe_queue: field(offset_of!(SiftCounters, describe_queue)),
        }
    }
}

/// The ranking's three counts per keypoint.
#[derive(Clone, Copy)]
pub struct Ranks {
    pub less: CUdeviceptr,
    pub equal_before: CUdeviceptr,
    pub stronger: CUdeviceptr,
}

impl CandidateArrays {
    /// Pushes the arrays in the kernels' order: x, y, octave_layer.
    fn push<'a>(&'a self, args: &mut KernelArgs<'a>) {
        args.arg(&self.x).arg(&self.y).arg(&self.octave_layer);
    }
}

impl ExtremumArrays {
    /// Pushes the arrays in the kernels' order: col, row, octave_layer, x, y, scale,
    /// response.
    fn push<'a>(&'a self, args: &mut KernelArgs<'a>) {
        args.arg(&self.col)
            .arg(&self.row)
            .arg(&self.octave_layer)
            .arg(&self.x)
            .arg(&self.y)
            .arg(&self.scale)
            .arg(&self.response);
    }
}

impl KeypointArrays {
    /// Pushes the arrays the ranking and the descriptor read first: x, y, size, angle.
    fn push_pose<'a>(&'a self, args: &mut KernelArgs<'a>) {
        args.arg(&self.x)
            .arg(&self.y)
            .arg(&self.size)
            .arg(&self.angle);
    }

    /// Pushes every array: x, y, size, angle, response, octave_layer.
    fn push<'a>(&'a self, args: &mut KernelArgs<'a>) {
        self.push_pose(args);
        args.arg(&self.response).arg(&self.octave_layer);
    }
}

/// `sift_blur_dog_*` (kernels/sift/pyramid.cu) and `sift_levels_*`
/// (kernels/sift/levels.cu), which take the same parameters.
pub struct TiledArgs {
    pub jobs: CUdeviceptr,
    pub n_jobs: i32,
    pub total_tiles: i32,
    /// The widest radius the kernel's shared memory was sized for.
    pub max_radius: i32,
    pub frame: CUdeviceptr,
    pub pyramid: CUdeviceptr,
    pub taps: CUdeviceptr,
}

/// `sift_small_octaves` (kernels/sift/small_octaves.cu).
pub struct SmallOctavesArgs {
    pub jobs: CUdeviceptr,
    pub n_jobs: i32,
    pub max_width: i32,
    pub max_height: i32,
    pub pad: i32,
    pub pyramid: CUdeviceptr,
    pub taps: CUdeviceptr,
    pub n_taps: i32,
}

/// `sift_extrema` (kernels/sift/extrema.cu).
pub struct ExtremaArgs {
    pub pyramid: CUdeviceptr,
    pub octaves: CUdeviceptr,
    pub octave_begin: i32,
    pub octave_end: i32,
    pub n_layers: i32,
    pub threshold: f32,
    pub candidate_count: CUdeviceptr,
    pub capacity: i32,
    pub candidates: CandidateArrays,
}

/// `sift_refine` (kernels/sift/refine.cu).
pub struct RefineArgs {
    pub pyramid: CUdeviceptr,
    pub octaves: CUdeviceptr,
    pub n_layers: i32,
    pub contrast_threshold: f32,
    pub edge_threshold: f32,
    pub sigma: f32,
    pub candidate_count: CUdeviceptr,
    pub candidate_capacity: i32,
    pub candidates: CandidateArrays,
    pub extremum_count: CUdeviceptr,
    pub capacity: i32,
    pub extrema: ExtremumArrays,
}

/// `sift_orientation` (kernels/sift/orientation.cu).
pub struct OrientationArgs {
    pub pyramid: CUdeviceptr,
    pub octaves: CUdeviceptr,
    pub first_octave: i32,
    pub layers: i32,
    pub extremum_count: CUdeviceptr,
    pub extremum_capacity: i32,
    pub extrema: ExtremumArrays,
    pub work: CUdeviceptr,
    pub keypoint_count: CUdeviceptr,
    pub capacity: i32,
    pub keypoints: KeypointArrays,
}

/// `sift_rank_keys` (kernels/sift/order.cu): reads the keypoints' x, y, size, angle.
pub struct RankKeysArgs {
    pub keypoint_count: CUdeviceptr,
    pub capacity: i32,
    pub keypoints: KeypointArrays,
    pub less: CUdeviceptr,
    pub equal_before: CUdeviceptr,
    pub duplicate_count: CUdeviceptr,
    pub duplicates: CUdeviceptr,
}

/// `sift_rank_responses` (kernels/sift/order.cu): reads x, y, size, angle, response.
pub struct RankResponsesArgs {
    pub keypoint_count: CUdeviceptr,
    pub capacity: i32,
    pub duplicate_count: CUdeviceptr,
    pub max_features: i32,
    pub keypoints: KeypointArrays,
    pub equal_before: CUdeviceptr,
    pub stronger: CUdeviceptr,
}

/// `sift_place` (kernels/sift/order.cu).
pub struct PlaceArgs {
    pub keypoint_count: CUdeviceptr,
    pub capacity: i32,
    pub duplicate_count: CUdeviceptr,
    pub duplicates: CUdeviceptr,
    pub max_features: i32,
    pub first_octave: i32,
    pub keypoints: KeypointArrays,
    pub ranks: Ranks,
    pub counters: CUdeviceptr,
    pub summary: CUdeviceptr,
    /// The outputs; `octave_layer` is the reported octave.
    pub outputs: KeypointArrays,
    pub out_octave_layer: CUdeviceptr,
}

/// `sift_describe` (kernels/sift/describe.cu): reads the outputs' x, y, size, angle.
pub struct DescribeArgs {
    pub pyramid: CUdeviceptr,
    pub octaves: CUdeviceptr,
    pub first_octave: i32,
    pub layers: i32,
    pub root_sift: i32,
    pub out_count: CUdeviceptr,
    pub outputs: KeypointArrays,
    pub out_octave_layer: CUdeviceptr,
    pub work: CUdeviceptr,
    pub descriptors: CUdeviceptr,
}

/// The typed launches.
///
/// # Safety (every function)
/// Every pointer of `args` is a live device allocation of the caller's plan (or a
/// table uploaded with it), sized for the capacities and tables the kernel is given,
/// and stays alive until the stream has run the kernel.
impl Kernels {
    /// A stage's chained jobs, with the level-by-level kernel whose register window
    /// holds their radius.
    pub unsafe fn blur(
        &self,
        stream: &CudaStream,
        launch: &JobLaunch,
        a: &TiledArgs,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { tiled(self.blur_for(launch), stream, launch, a) }
    }

    /// A stage's stepped jobs, with the step kernel whose register window holds their halo.
    pub unsafe fn levels(
        &self,
        stream: &CudaStream,
        launch: &JobLaunch,
        a: &TiledArgs,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { tiled(self.levels_for(launch), stream, launch, a) }
    }

    pub unsafe fn small_octaves(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        a: &SmallOctavesArgs,
    ) -> Result<()> {
        // SAFETY: the arguments follow `sift_small_octaves`' parameters in order and
        // type; the caller vouches for the pointers.
        unsafe {
            self.small_octaves
                .kernel
                .args(stream)
                .arg(&a.jobs)
                .arg(&a.n_jobs)
                .arg(&a.max_width)
                .arg(&a.max_height)
                .arg(&a.pad)
                .arg(&a.pyramid)
                .arg(&a.taps)
                .arg(&a.n_taps)
                .launch(config)
        }
    }

    pub unsafe fn extrema(&self, stream: &CudaStream, a: &ExtremaArgs) -> Result<()> {
        let mut args = self.extrema.kernel.args(stream);
        args.arg(&a.pyramid)
            .arg(&a.octaves)
            .arg(&a.octave_begin)
            .arg(&a.octave_end)
            .arg(&a.n_layers)
            .arg(&a.threshold)
            .arg(&a.candidate_count)
            .arg(&a.capacity);
        a.candidates.push(&mut args);
        // SAFETY: the arguments follow `sift_extrema`'s parameters in order and type;
        // the caller vouches for the pointers.
        unsafe { args.launch(self.extrema.persistent()) }
    }

    pub unsafe fn refine(&self, stream: &CudaStream, a: &RefineArgs) -> Result<()> {
        let mut args = self.refine.kernel.args(stream);
        args.arg(&a.pyramid)
            .arg(&a.octaves)
            .arg(&a.n_layers)
            .arg(&a.contrast_threshold)
            .arg(&a.edge_threshold)
            .arg(&a.sigma)
            .arg(&a.candidate_count)
            .arg(&a.candidate_capacity);
        a.candidates.push(&mut args);
        args.arg(&a.extremum_count).arg(&a.capacity);
        a.extrema.push(&mut args);
        // SAFETY: the arguments follow `sift_refine`'s parameters in order and type;
        // the caller vouches for the pointers.
        unsafe { args.launch(self.refine.persistent()) }
    }

    pub unsafe fn orientation(&self, stream: &CudaStream, a: &OrientationArgs) -> Result<()> {
        let mut args = self.orientation.kernel.args(stream);
        args.arg(&a.pyramid)
            .arg(&a.octaves)
            .arg(&a.first_octave)
            .arg(&a.layers)
            .arg(&a.extremum_count)
            .arg(&a.extremum_capacity);
        a.extrema.push(&mut args);
        args.arg(&a.work).arg(&a.keypoint_count).arg(&a.capacity);
        a.keypoints.push(&mut args);
        // SAFETY: the arguments follow `sift_orientation`'s parameters in order and
        // type; the caller vouches for the pointers.
        unsafe { args.launch(self.orientation.persistent()) }
    }

    pub unsafe fn rank_keys(&self, stream: &CudaStream, a: &RankKeysArgs) -> Result<()> {
        let mut args = self.rank_keys.kernel.args(stream);
        args.arg(&a.keypoint_count).arg(&a.capacity);
        a.keypoints.push_pose(&mut args);
        args.arg(&a.less)
            .arg(&a.equal_before)
            .arg(&a.duplicate_count)
            .arg(&a.duplicates);
        // SAFETY: the arguments follow `sift_rank_keys`' parameters in order and type;
        // the caller vouches for the pointers.
        unsafe { args.launch(self.rank_keys.persistent()) }
    }

    pub unsafe fn rank_responses(&self, stream: &CudaStream, a: &RankResponsesArgs) -> Result<()> {
        let mut args = self.rank_responses.kernel.args(stream);
        args.arg(&a.keypoint_count)
            .arg(&a.capacity)
            .arg(&a.duplicate_count)
            .arg(&a.max_features);
        a.keypoints.push_pose(&mut args);
        args.arg(&a.keypoints.response)
            .arg(&a.equal_before)
            .arg(&a.stronger);
        // SAFETY: the arguments follow `sift_rank_responses`' parameters in order and
        // type; the caller vouches for the pointers.
        unsafe { args.launch(self.rank_responses.persistent()) }
    }

    pub unsafe fn place(&self, stream: &CudaStream, a: &PlaceArgs) -> Result<()> {
        let mut args = self.place.kernel.args(stream);
        args.arg(&a.keypoint_count)
            .arg(&a.capacity)
            .arg(&a.duplicate_count)
            .arg(&a.duplicates)
            .arg(&a.max_features)
            .arg(&a.first_octave);
        a.keypoints.push(&mut args);
        args.arg(&a.ranks.less)
            .arg(&a.ranks.equal_before)
            .arg(&a.ranks.stronger)
            .arg(&a.counters)
            .arg(&a.summary);
        a.outputs.push(&mut args);
        args.arg(&a.out_octave_layer);
        // SAFETY: the arguments follow `sift_place`'s parameters in order and type; the
        // caller vouches for the pointers.
        unsafe { args.launch(self.place.persistent()) }
    }

    pub unsafe fn describe(&self, stream: &CudaStream, a: &DescribeArgs) -> Result<()> {
        let mut args = self.describe.kernel.args(stream);
        args.arg(&a.pyramid)
            .arg(&a.octaves)
            .arg(&a.first_octave)
            .arg(&a.layers)
            .arg(&a.root_sift)
            .arg(&a.out_count);
        a.outputs.push_pose(&mut args);
        args.arg(&a.out_octave_layer)
            .arg(&a.work)
            .arg(&a.descriptors);
        // SAFETY: the arguments follow `sift_describe`'s parameters in order and type;
        // the caller vouches for the pointers.
        unsafe { args.launch(self.describe.persistent()) }
    }
}

/// The plan's buffers as the kernels see them.
struct Views {
    counters: CounterPointers,
    candidates: CandidateArrays,
    extrema: ExtremumArrays,
    keypoints: KeypointArrays,
    ranks: Ranks,
    outputs: KeypointArrays,
}

impl Views {
    fn of(plan: &Plan) -> Self {
        let [cand_x, cand_y, cand_ol] = &plan.candidates;
        let [col, row, ext_ol, ext_x, ext_y, scale, ext_response] = &plan.extrema;
        let [x, y, size, angle, response, kp_ol] = &plan.keypoints;
        let [out_x, out_y, out_size, out_angle, out_response, out_octave] = &plan.outputs;
        let per_keypoint = (plan.keypoint_capacity * size_of::<u32>()) as u64;
        Self {
            counters: CounterPointers::of(plan.counters.ptr),
            candidates: CandidateArrays {
                x: cand_x.ptr,
                y: cand_y.ptr,
                octave_layer: cand_ol.ptr,
            },
            extrema: ExtremumArrays {
                col: col.ptr,
                row: row.ptr,
                octave_layer: ext_ol.ptr,
                x: ext_x.ptr,
                y: ext_y.ptr,
                scale: scale.ptr,
                response: ext_response.ptr,
            },
            keypoints: KeypointArrays {
                x: x.ptr,
                y: y.ptr,
                size: size.ptr,
                angle: angle.ptr,
                response: response.ptr,
                octave_layer: kp_ol.ptr,
            },
            ranks: Ranks {
                less: plan.ranks.ptr,
                equal_before: plan.ranks.ptr + per_keypoint,
                stronger: plan.ranks.ptr + 2 * per_keypoint,
            },
            outputs: KeypointArrays {
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

/// A launch of a tiled blur kernel over `launch`'s jobs.
unsafe fn tiled(
    kernel: &Launch,
    stream: &CudaStream,
    launch: &JobLaunch,
    a: &TiledArgs,
) -> Result<()> {
    // SAFETY: the arguments follow the tiled kernels' parameters in order and type; the
    // caller vouches for the pointers.
    unsafe {
        kernel
            .kernel
            .args(stream)
            .arg(&a.jobs)
            .arg(&a.n_jobs)
            .arg(&a.total_tiles)
            .arg(&a.max_radius)
            .arg(&a.frame)
            .arg(&a.pyramid)
            .arg(&a.taps)
            .launch(kernel.config(launch.tiles))
    }
}

pub fn enqueue(
    stream: &CudaStream,
    branch: &Branch,
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
    let (pyramid, octaves) = (plan.pyramid.ptr, plan.octave_table.ptr);
    let job_table = |first: usize| plan.jobs.ptr + (first * size_of::<LevelsJob>()) as u64;

    // SAFETY: both buffers are live device allocations of this plan, `bytes` long.
    unsafe {
        result::memset_d8_async(v.counters.all, 0, plan.counters.bytes, stream.cu_stream())?;
        result::memset_d8_async(plan.ranks.ptr, 0, plan.ranks.bytes, stream.cu_stream())?;
    }
    // SAFETY (every launch below): every pointer is a live buffer of this plan, sized by
    // the capacities the kernels are given, and the tables (octaves, jobs, taps) were
    // built for this plan's size.
    unsafe {
        for (s, stage) in plan.stages.iter().enumerate() {
            let args = |launch: &JobLaunch, max_radius: usize| TiledArgs {
                jobs: job_table(launch.first_job),
                n_jobs: launch.n_jobs,
                total_tiles: launch.tiles as i32,
                max_radius: max_radius as i32,
                frame: plan.frame.ptr,
                pyramid,
                taps: plan.taps.ptr,
            };
            if let Some(launch) = &stage.chained {
                k.blur(stream, launch, &args(launch, taps.chain_radius))?;
            }
            if let Some(launch) = &stage.stepped {
                k.levels(stream, launch, &args(launch, taps.step_halo))?;
            }
            // The small octaves start from the level this stage made, and run in one
            // block beside the rest of the blur; the frame's stream waits for them
            // before the extrema.
            if let Some(small) = plan.small_octaves.filter(|small| small.after_stage == s) {
                let args = SmallOctavesArgs {
                    jobs: plan.small_jobs.ptr,
                    n_jobs: small.n_jobs,
                    max_width: small.max_width,
                    max_height: small.max_height,
                    pad: small.pad,
                    pyramid,
                    taps: plan.taps.ptr,
                    n_taps: small.n_taps,
                };
                let side = branch.fork(stream)?;
                k.small_octaves(side, k.small_octaves_config(small.shared_bytes), &args)?;
                branch.close()?;
            }
        }
        let extrema = |octave_begin: i32, octave_end: i32| ExtremaArgs {
            pyramid,
            octaves,
            octave_begin,
            octave_end,
            n_layers,
            threshold: prefilter_threshold(config.contrast_threshold, n_layers as usize),
            candidate_count: v.counters.candidates,
            capacity: plan.candidate_capacity as i32,
            candidates: v.candidates,
        };
        // The big octaves' extrema run while the small octaves' block finishes.
        match plan.small_octaves {
            Some(small) => {
                k.extrema(stream, &extrema(0, small.first_octave))?;
                branch.join(stream)?;
                k.extrema(stream, &extrema(small.first_octave, n_octaves))?;
            }
            None => k.extrema(stream, &extrema(0, n_octaves))?,
        }
        k.refine(
            stream,
            &RefineArgs {
                pyramid,
                octaves,
                n_layers,
                contrast_threshold: config.contrast_threshold as f32,
                edge_threshold: config.edge_threshold as f32,
                sigma: config.sigma as f32,
                candidate_count: v.counters.candidates,
                candidate_capacity: plan.candidate_capacity as i32,
                candidates: v.candidates,
                extremum_count: v.counters.extrema,
                capacity: kp_capacity,
                extrema: v.extrema,
            },
        )?;
        k.orientation(
            stream,
            &OrientationArgs {
                pyramid,
                octaves,
                first_octave,
                layers: n_layers,
                extremum_count: v.counters.extrema,
                extremum_capacity: kp_capacity,
                extrema: v.extrema,
                work: v.counters.orientation_queue,
                keypoint_count: v.counters.keypoints,
                capacity: kp_capacity,
                keypoints: v.keypoints,
            },
        )?;
        k.rank_keys(
            stream,
            &RankKeysArgs {
                keypoint_count: v.counters.keypoints,
                capacity: kp_capacity,
                keypoints: v.keypoints,
                less: v.ranks.less,
                equal_before: v.ranks.equal_before,
                duplicate_count: v.counters.duplicates,
                duplicates: plan.duplicates.ptr,
            },
        )?;
        if config.max_features > 0 {
            k.rank_responses(
                stream,
                &RankResponsesArgs {
                    keypoint_count: v.counters.keypoints,
                    capacity: kp_capacity,
                    duplicate_count: v.counters.duplicates,
                    max_features,
                    keypoints: v.keypoints,
                    equal_before: v.ranks.equal_before,
                    stronger: v.ranks.stronger,
                },
            )?;
        }
        k.place(
            stream,
            &PlaceArgs {
                keypoint_count: v.counters.keypoints,
                capacity: kp_capacity,
                duplicate_count: v.counters.duplicates,
                duplicates: plan.duplicates.ptr,
                max_features,
                first_octave,
                keypoints: v.keypoints,
                ranks: v.ranks,
                counters: v.counters.all,
                summary: plan.summary.ptr,
                outputs: v.outputs,
                out_octave_layer: plan.out_octave_layer.ptr,
            },
        )?;
        k.describe(
            stream,
            &DescribeArgs {
                pyramid,
                octaves,
                first_octave,
                layers: n_layers,
                root_sift: i32::from(config.root_sift),
                out_count: plan.summary.ptr,
                outputs: v.outputs,
                out_octave_layer: plan.out_octave_layer.ptr,
                work: v.counters.describe_queue,
                descriptors: plan.descriptors.ptr,
            },
        )?;
    }
    Ok(())
}
