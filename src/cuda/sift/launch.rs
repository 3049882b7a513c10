//! The per-frame launch sequence (everything between upload and downloads), queued
//! on the pipeline's stream: captured once per image size into a CUDA graph.

use std::mem::offset_of;

use cudarc::driver::{result, CudaStream};

use crate::config::SiftConfig;
use crate::cuda::abi::{BlurJob, SiftCounters};
use crate::cuda::branch::Branch;
use crate::cuda::sift::plan::Plan;
use crate::cuda::sift::shapes::Kernels;
use crate::error::Result;
use crate::spec::scale_space::prefilter_threshold;

pub fn enqueue(
    stream: &CudaStream,
    branch: &Branch,
    kernels: &Kernels,
    config: &SiftConfig,
    plan: &Plan,
    max_radius: i32,
) -> Result<()> {
    let k = kernels;
    let n_layers = config.n_octave_layers as i32;
    let first_octave = if config.upscale { -1i32 } else { 0 };
    let n_octaves = plan.octaves.len() as i32;
    let threshold = prefilter_threshold(config.contrast_threshold, n_layers as usize);
    let contrast = config.contrast_threshold as f32;
    let edge = config.edge_threshold as f32;
    let sigma = config.sigma as f32;
    // The budget: `max_features`, or the keypoint capacity when unlimited.
    let max_features = plan.output_capacity as i32;
    let cand_capacity = plan.candidate_capacity as i32;
    let kp_capacity = plan.keypoint_capacity as i32;
    let counters = plan.counters.ptr;
    let counter = |offset: usize| counters + offset as u64;
    let candidate_count = counter(offset_of!(SiftCounters, candidates));
    let extremum_count = counter(offset_of!(SiftCounters, extrema));
    let keypoint_count = counter(offset_of!(SiftCounters, keypoints));
    let duplicate_count = counter(offset_of!(SiftCounters, duplicates));
    let orientation_queue = counter(offset_of!(SiftCounters, orientation_queue));
    let describe_queue = counter(offset_of!(SiftCounters, describe_queue));
    let kp = plan.keypoint_capacity as u64 * 4;
    let (less, equal_before, stronger) =
        (plan.ranks.ptr, plan.ranks.ptr + kp, plan.ranks.ptr + 2 * kp);
    let [cand_x, cand_y, cand_ol] = &plan.candidates;
    let [ext_col, ext_row, ext_ol, ext_x, ext_y, ext_scale, ext_response] = &plan.extrema;
    let [kp_x, kp_y, kp_size, kp_angle, kp_response, kp_ol] = &plan.keypoints;
    let [out_x, out_y, out_size, out_angle, out_response, out_octave] = &plan.outputs;

    // SAFETY: both buffers are live device allocations of this plan, `bytes` long.
    unsafe {
        result::memset_d8_async(counters, 0, plan.counters.bytes, stream.cu_stream())?;
        result::memset_d8_async(plan.ranks.ptr, 0, plan.ranks.bytes, stream.cu_stream())?;
    }
    // SAFETY (every launch below): the arguments match the kernel's parameter list in
    // kernels/sift/*.cu in order and type (device pointers as u64, i32, f32); every
    // pointer is a live buffer of this plan, sized by the capacities the kernels are
    // given, and the tables (octaves, jobs, taps) were built for this plan's size.
    let job_table = |first: usize| plan.jobs.ptr + (first * std::mem::size_of::<BlurJob>()) as u64;
    unsafe {
        for (s, stage) in plan.stages.iter().enumerate() {
            let jobs = job_table(stage.first_job);
            let tiles = stage.tiles as i32;
            let blur = k.blur_for(stage);
            blur.kernel
                .args(stream)
                .arg(&jobs)
                .arg(&stage.n_jobs)
                .arg(&tiles)
                .arg(&max_radius)
                .arg(&plan.frame.ptr)
                .arg(&plan.pyramid.ptr)
                .arg(&plan.taps.ptr)
                .launch(blur.config(stage.tiles))?;
            // The small octaves start from the level this stage made, and run in one
            // block beside the rest of the blur; the frame's stream waits for them
            // before the extrema.
            if let Some(small) = plan.small_octaves.filter(|small| small.after_stage == s) {
                let side = branch.fork(stream)?;
                k.small_octaves
                    .kernel
                    .args(side)
                    .arg(&job_table(small.first_job))
                    .arg(&small.n_jobs)
                    .arg(&small.max_width)
                    .arg(&small.max_height)
                    .arg(&small.pad)
                    .arg(&plan.pyramid.ptr)
                    .arg(&plan.taps.ptr)
                    .arg(&small.n_taps)
                    .launch(k.small_octaves_config(small.shared_bytes))?;
                branch.close()?;
            }
        }
        let extrema = |octave_begin: i32, octave_end: i32| {
            k.extrema
                .kernel
                .args(stream)
                .arg(&plan.pyramid.ptr)
                .arg(&plan.octave_table.ptr)
                .arg(&octave_begin)
                .arg(&octave_end)
                .arg(&n_layers)
                .arg(&threshold)
                .arg(&candidate_count)
                .arg(&cand_capacity)
                .arg(&cand_x.ptr)
                .arg(&cand_y.ptr)
                .arg(&cand_ol.ptr)
                .launch(k.extrema.persistent())
        };
        // The big octaves' extrema run while the small octaves' block finishes.
        match plan.small_octaves {
            Some(small) => {
                extrema(0, small.first_octave)?;
                branch.join(stream)?;
                extrema(small.first_octave, n_octaves)?;
            }
            None => {
                extrema(0, n_octaves)?;
            }
        }
        k.refine
            .kernel
            .args(stream)
            .arg(&plan.pyramid.ptr)
            .arg(&plan.octave_table.ptr)
            .arg(&n_layers)
            .arg(&contrast)
            .arg(&edge)
            .arg(&sigma)
            .arg(&candidate_count)
            .arg(&cand_capacity)
            .arg(&cand_x.ptr)
            .arg(&cand_y.ptr)
            .arg(&cand_ol.ptr)
            .arg(&extremum_count)
            .arg(&kp_capacity)
            .arg(&ext_col.ptr)
            .arg(&ext_row.ptr)
            .arg(&ext_ol.ptr)
            .arg(&ext_x.ptr)
            .arg(&ext_y.ptr)
            .arg(&ext_scale.ptr)
            .arg(&ext_response.ptr)
            .launch(k.refine.persistent())?;
        k.orientation
            .kernel
            .args(stream)
            .arg(&plan.pyramid.ptr)
            .arg(&plan.octave_table.ptr)
            .arg(&first_octave)
            .arg(&n_layers)
            .arg(&extremum_count)
            .arg(&kp_capacity)
            .arg(&ext_col.ptr)
            .arg(&ext_row.ptr)
            .arg(&ext_ol.ptr)
            .arg(&ext_x.ptr)
            .arg(&ext_y.ptr)
            .arg(&ext_scale.ptr)
            .arg(&ext_response.ptr)
            .arg(&orientation_queue)
            .arg(&keypoint_count)
            .arg(&kp_capacity)
            .arg(&kp_x.ptr)
            .arg(&kp_y.ptr)
            .arg(&kp_size.ptr)
            .arg(&kp_angle.ptr)
            .arg(&kp_response.ptr)
            .arg(&kp_ol.ptr)
            .launch(k.orientation.persistent())?;
        k.rank_keys
            .kernel
            .args(stream)
            .arg(&keypoint_count)
            .arg(&kp_capacity)
            .arg(&kp_x.ptr)
            .arg(&kp_y.ptr)
            .arg(&kp_size.ptr)
            .arg(&kp_angle.ptr)
            .arg(&less)
            .arg(&equal_before)
            .arg(&duplicate_count)
            .arg(&plan.duplicates.ptr)
            .launch(k.rank_keys.persistent())?;
        if config.max_features > 0 {
            k.rank_responses
                .kernel
                .args(stream)
                .arg(&keypoint_count)
                .arg(&kp_capacity)
                .arg(&duplicate_count)
                .arg(&max_features)
                .arg(&kp_x.ptr)
                .arg(&kp_y.ptr)
                .arg(&kp_size.ptr)
                .arg(&kp_angle.ptr)
                .arg(&kp_response.ptr)
                .arg(&equal_before)
                .arg(&stronger)
                .launch(k.rank_responses.persistent())?;
        }
        k.place
            .kernel
            .args(stream)
            .arg(&keypoint_count)
            .arg(&kp_capacity)
            .arg(&duplicate_count)
            .arg(&plan.duplicates.ptr)
            .arg(&max_features)
            .arg(&first_octave)
            .arg(&kp_x.ptr)
            .arg(&kp_y.ptr)
            .arg(&kp_size.ptr)
            .arg(&kp_angle.ptr)
            .arg(&kp_response.ptr)
            .arg(&kp_ol.ptr)
            .arg(&less)
            .arg(&equal_before)
            .arg(&stronger)
            .arg(&counters)
            .arg(&plan.summary.ptr)
            .arg(&out_x.ptr)
            .arg(&out_y.ptr)
            .arg(&out_size.ptr)
            .arg(&out_angle.ptr)
            .arg(&out_response.ptr)
            .arg(&out_octave.ptr)
            .arg(&plan.out_octave_layer.ptr)
            .launch(k.place.persistent())?;
        let root_sift = i32::from(config.root_sift);
        k.describe
            .kernel
            .args(stream)
            .arg(&plan.pyramid.ptr)
            .arg(&plan.octave_table.ptr)
            .arg(&first_octave)
            .arg(&n_layers)
            .arg(&root_sift)
            .arg(&plan.summary.ptr)
            .arg(&out_x.ptr)
            .arg(&out_y.ptr)
            .arg(&out_size.ptr)
            .arg(&out_angle.ptr)
            .arg(&plan.out_octave_layer.ptr)
            .arg(&describe_queue)
            .arg(&plan.descriptors.ptr)
            .launch(k.describe.persistent())?;
    }
    Ok(())
}
