//! One typed launch per ORB kernel, and the per-frame launch sequence (everything
//! between upload and downloads), captured once per size and input into a CUDA graph.
//!
//! Each `*Args` struct lists its kernel's parameters in order, under the kernel's
//! names (kernels/orb/*.cu, kernels/match/hamming.cu); each launch function pushes
//! them in that order. Device pointers are `CUdeviceptr`, ints `i32`.

use std::mem::size_of;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{result, CudaStream, LaunchConfig};

use crate::config::OrbScore;
use crate::cuda::abi::match_params::{CrossCheckCountedParams, HammingKnn2CountedParams};
use crate::cuda::orb::plan::{FrameInput, Plan, DESCRIPTOR_BYTES};
use crate::cuda::orb::shapes::{Kernels, SMOOTH_TAP_WORDS};
use crate::cuda::orb::{CudaOrbExtractor, Fused, Train};
use crate::error::Result;

/// `orb_pyramid` (kernels/orb/pyramid.cu): levels 1.. resized from level 0.
pub struct PyramidArgs {
    pub level_table: CUdeviceptr,
    pub n_levels: i32,
    pub taps: CUdeviceptr,
    pub pyramid: CUdeviceptr,
    pub barrier_state: CUdeviceptr,
}

/// `orb_fast_score` (kernels/orb/detect.cu): FAST scores, the corner bitmap and the
/// smoothed image of levels `first_level..n_levels`.
pub struct FastScoreArgs {
    pub pyramid: CUdeviceptr,
    pub level_table: CUdeviceptr,
    pub first_level: i32,
    pub n_levels: i32,
    pub arc_bits: CUdeviceptr,
    pub threshold: i32,
    /// `taps_0123`, `taps_456`, `taps_x012`, `taps_3456`.
    pub taps: [u32; 4],
    pub scores: CUdeviceptr,
    pub corner_bits: CUdeviceptr,
    pub smoothed: CUdeviceptr,
}

/// `orb_cell_candidates` (kernels/orb/detect.cu): each cell's NMS survivors.
pub struct CellCandidatesArgs {
    pub scores: CUdeviceptr,
    pub corner_bits: CUdeviceptr,
    pub level_table: CUdeviceptr,
    pub n_levels: i32,
    pub total_cells: i32,
    pub fast_threshold: i32,
    pub min_fast_threshold: i32,
    pub harris: i32,
    pub level_counts: CUdeviceptr,
    pub cell_starts: CUdeviceptr,
    pub cell_counts: CUdeviceptr,
    pub cand_yx: CUdeviceptr,
    pub cand_cell: CUdeviceptr,
    pub cand_key: CUdeviceptr,
    pub cand_score: CUdeviceptr,
    pub level_hist: CUdeviceptr,
}

/// `orb_select_candidates` (kernels/orb/select.cu): each level's records.
pub struct SelectCandidatesArgs {
    pub level_table: CUdeviceptr,
    pub n_levels: i32,
    pub level_counts: CUdeviceptr,
    pub level_hist: CUdeviceptr,
    pub quotas: CUdeviceptr,
    pub harris: i32,
    pub cand_yx: CUdeviceptr,
    pub cand_cell: CUdeviceptr,
    pub cand_key: CUdeviceptr,
    pub cand_score: CUdeviceptr,
    pub record_key: CUdeviceptr,
    pub record_yx: CUdeviceptr,
    pub record_cell: CUdeviceptr,
    pub level_records: CUdeviceptr,
}

/// `orb_record_keys` (kernels/orb/select.cu): the records' Harris keys.
pub struct RecordKeysArgs {
    pub pyramid: CUdeviceptr,
    pub level_table: CUdeviceptr,
    pub n_levels: i32,
    pub level_records: CUdeviceptr,
    pub record_yx: CUdeviceptr,
    pub record_key: CUdeviceptr,
}

/// `orb_record_ranks` (kernels/orb/select.cu): each record's rank in its cell.
pub struct RecordRanksArgs {
    pub level_table: CUdeviceptr,
    pub n_levels: i32,
    pub level_records: CUdeviceptr,
    pub record_key: CUdeviceptr,
    pub record_yx: CUdeviceptr,
    pub record_cell: CUdeviceptr,
    pub record_rank: CUdeviceptr,
}

/// `orb_record_place` (kernels/orb/select.cu): the kept keypoints, in output order.
pub struct RecordPlaceArgs {
    pub level_table: CUdeviceptr,
    pub n_levels: i32,
    pub level_counts: CUdeviceptr,
    pub quotas: CUdeviceptr,
    pub level_records: CUdeviceptr,
    pub record_key: CUdeviceptr,
    pub record_yx: CUdeviceptr,
    pub record_rank: CUdeviceptr,
    pub kept: CUdeviceptr,
    pub out_yx: CUdeviceptr,
    pub out_level: CUdeviceptr,
    pub out_key: CUdeviceptr,
}

/// `orb_describe` (kernels/orb/describe.cu): orientation, rBRIEF and the fused match.
pub struct DescribeArgs {
    pub pyramid: CUdeviceptr,
    pub smoothed: CUdeviceptr,
    pub level_table: CUdeviceptr,
    pub n_levels: i32,
    pub umax: CUdeviceptr,
    pub pattern: CUdeviceptr,
    pub kept: CUdeviceptr,
    pub kp_yx: CUdeviceptr,
    pub kp_level: CUdeviceptr,
    pub moments: CUdeviceptr,
    pub descriptors: CUdeviceptr,
    /// The resident train set and its count, or 0 (null) for none.
    pub train: CUdeviceptr,
    pub train_count: CUdeviceptr,
    pub matches: CUdeviceptr,
    pub per_block: i32,
}

/// The typed launches. Each is unsafe for one reason: the kernel reads and writes the
/// device memory its pointers name, as far as the sizes and tables beside them say.
///
/// # Safety (every function)
/// Every pointer of `args` is a live device allocation of the caller's plan (or a
/// table uploaded with it), sized for the indices the kernel derives from the level
/// table and counts it is given, and stays alive until the stream has run the kernel.
impl Kernels {
    pub unsafe fn pyramid(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        a: &PyramidArgs,
    ) -> Result<()> {
        // SAFETY: the arguments follow `orb_pyramid`'s parameters in order and type; the
        // caller vouches for the pointers. Cooperative: its grid barrier needs every
        // block resident, which a cooperative launch guarantees or refuses.
        unsafe {
            self.pyramid
                .args(stream)
                .arg(&a.level_table)
                .arg(&a.n_levels)
                .arg(&a.taps)
                .arg(&a.pyramid)
                .arg(&a.barrier_state)
                .launch_cooperative(config)
        }
    }

    pub unsafe fn fast_score(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        a: &FastScoreArgs,
    ) -> Result<()> {
        // SAFETY: the arguments follow `orb_fast_score`'s parameters in order and type;
        // the caller vouches for the pointers.
        unsafe {
            self.fast_score
                .args(stream)
                .arg(&a.pyramid)
                .arg(&a.level_table)
                .arg(&a.first_level)
                .arg(&a.n_levels)
                .arg(&a.arc_bits)
                .arg(&a.threshold)
                .arg(&a.taps[0])
                .arg(&a.taps[1])
                .arg(&a.taps[2])
                .arg(&a.taps[3])
                .arg(&a.scores)
                .arg(&a.corner_bits)
                .arg(&a.smoothed)
                .launch(config)
        }
    }

    pub unsafe fn cell_candidates(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        a: &CellCandidatesArgs,
    ) -> Result<()> {
        // SAFETY: the arguments follow `orb_cell_candidates`' parameters in order and
        // type; the caller vouches for the pointers.
        unsafe {
            self.cell_candidates
                .args(stream)
                .arg(&a.scores)
                .arg(&a.corner_bits)
                .arg(&a.level_table)
                .arg(&a.n_levels)
                .arg(&a.total_cells)
                .arg(&a.fast_threshold)
                .arg(&a.min_fast_threshold)
                .arg(&a.harris)
                .arg(&a.level_counts)
                .arg(&a.cell_starts)
                .arg(&a.cell_counts)
                .arg(&a.cand_yx)
                .arg(&a.cand_cell)
                .arg(&a.cand_key)
                .arg(&a.cand_score)
                .arg(&a.level_hist)
                .launch(config)
        }
    }

    pub unsafe fn select_candidates(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        a: &SelectCandidatesArgs,
    ) -> Result<()> {
        // SAFETY: the arguments follow `orb_select_candidates`' parameters in order and
        // type; the caller vouches for the pointers.
        unsafe {
            self.select_candidates
                .args(stream)
                .arg(&a.level_table)
                .arg(&a.n_levels)
                .arg(&a.level_counts)
                .arg(&a.level_hist)
                .arg(&a.quotas)
                .arg(&a.harris)
                .arg(&a.cand_yx)
                .arg(&a.cand_cell)
                .arg(&a.cand_key)
                .arg(&a.cand_score)
                .arg(&a.record_key)
                .arg(&a.record_yx)
                .arg(&a.record_cell)
                .arg(&a.level_records)
                .launch(config)
        }
    }

    pub unsafe fn record_keys(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        a: &RecordKeysArgs,
    ) -> Result<()> {
        // SAFETY: the arguments follow `orb_record_keys`' parameters in order and type;
        // the caller vouches for the pointers.
        unsafe {
            self.record_keys
                .args(stream)
                .arg(&a.pyramid)
                .arg(&a.level_table)
                .arg(&a.n_levels)
                .arg(&a.level_records)
                .arg(&a.record_yx)
                .arg(&a.record_key)
                .launch(config)
        }
    }

    pub unsafe fn record_ranks(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        a: &RecordRanksArgs,
    ) -> Result<()> {
        // SAFETY: the arguments follow `orb_record_ranks`' parameters in order and type;
        // the caller vouches for the pointers.
        unsafe {
            self.record_ranks
                .args(stream)
                .arg(&a.level_table)
                .arg(&a.n_levels)
                .arg(&a.level_records)
                .arg(&a.record_key)
                .arg(&a.record_yx)
                .arg(&a.record_cell)
                .arg(&a.record_rank)
                .launch(config)
        }
    }

    pub unsafe fn record_place(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        a: &RecordPlaceArgs,
    ) -> Result<()> {
        // SAFETY: the arguments follow `orb_record_place`'s parameters in order and type;
        // the caller vouches for the pointers.
        unsafe {
            self.record_place
                .args(stream)
                .arg(&a.level_table)
                .arg(&a.n_levels)
                .arg(&a.level_counts)
                .arg(&a.quotas)
                .arg(&a.level_records)
                .arg(&a.record_key)
                .arg(&a.record_yx)
                .arg(&a.record_rank)
                .arg(&a.kept)
                .arg(&a.out_yx)
                .arg(&a.out_level)
                .arg(&a.out_key)
                .launch(config)
        }
    }

    pub unsafe fn describe(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        a: &DescribeArgs,
    ) -> Result<()> {
        // SAFETY: the arguments follow `orb_describe`'s parameters in order and type;
        // the caller vouches for the pointers (`train` and `train_count` may be null:
        // the kernel then matches nothing).
        unsafe {
            self.describe
                .args(stream)
                .arg(&a.pyramid)
                .arg(&a.smoothed)
                .arg(&a.level_table)
                .arg(&a.n_levels)
                .arg(&a.umax)
                .arg(&a.pattern)
                .arg(&a.kept)
                .arg(&a.kp_yx)
                .arg(&a.kp_level)
                .arg(&a.moments)
                .arg(&a.descriptors)
                .arg(&a.train)
                .arg(&a.train_count)
                .arg(&a.matches)
                .arg(&a.per_block)
                .launch(config)
        }
    }

    pub unsafe fn knn2_counted(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        p: &HammingKnn2CountedParams,
    ) -> Result<()> {
        // SAFETY: `p` is `match_hamming_knn2_counted`'s parameter struct; the caller
        // vouches for the pointers (each set holds the count its pointer names).
        unsafe { self.knn2_counted.launch(stream, config, p) }
    }

    pub unsafe fn cross_check_counted(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        p: &CrossCheckCountedParams,
    ) -> Result<()> {
        // SAFETY: `p` is `match_cross_check_counted`'s parameter struct; the caller
        // vouches for the pointers (`backward` covers every index `forward` names).
        unsafe { self.cross_check_counted.launch(stream, config, p) }
    }
}

impl CudaOrbExtractor {
    /// Queues the per-frame kernels (everything between upload and downloads),
    /// reading the frame of `input`.
    pub(super) fn enqueue(&self, plan: &Plan, input: &FrameInput) -> Result<()> {
        let c = &self.config;
        let k = &self.kernels;
        let shapes = &plan.shapes;
        let stream = &self.gpu.stream;
        let n_levels = plan.n_levels();
        let counters = plan.counters();
        let harris = i32::from(c.score == OrbScore::Harris);
        let min_fast_threshold = c.min_fast_threshold as i32;
        let (candidates, records, outputs) = (&plan.candidates, &plan.records, &plan.outputs);
        // SAFETY: `counters` holds exactly `counters.bytes` bytes on this context.
        unsafe {
            result::memset_d8_async(
                plan.counters.ptr,
                0,
                plan.counters.bytes,
                stream.cu_stream(),
            )
        }?;
        // FAST on levels first_level..n_levels - 1.
        let fast_score = |first_level: i32, n_levels: i32| FastScoreArgs {
            pyramid: plan.pyramid.ptr,
            level_table: plan.levels.ptr,
            first_level,
            n_levels,
            arc_bits: self.constants.arc.ptr,
            threshold: min_fast_threshold,
            taps: SMOOTH_TAP_WORDS,
            scores: plan.scores.ptr,
            corner_bits: plan.corner_bits.ptr,
            smoothed: plan.smoothed.ptr,
        };
        let train = self.fused.train();
        // SAFETY (every launch below): every pointer is a live buffer of this plan, or a
        // table uploaded with the extractor, sized for the level table and capacity
        // the plan was built with; the train set holds `train_count` descriptors. The
        // conversion: the input holds its layout's upload bytes, the pyramid starts
        // with level 0 of the frame's size.
        unsafe {
            // Level 0 of the pyramid is the frame in grey (read over the bus once when
            // it is mapped host memory).
            k.gray
                .enqueue(stream, &input.layout, input.frame.ptr, plan.pyramid.ptr)?;
            // Level 0's FAST forks onto the side stream and runs while the pyramid
            // resizes the other levels; the two streams join before the cell scan.
            let side = self.level0_branch.fork(stream)?;
            k.fast_score(side, shapes.level0_fast, &fast_score(0, 1))?;
            self.level0_branch.close()?;
            k.pyramid(
                stream,
                shapes.pyramid,
                &PyramidArgs {
                    level_table: plan.levels.ptr,
                    n_levels,
                    taps: plan.taps.ptr,
                    pyramid: plan.pyramid.ptr,
                    barrier_state: plan.barrier.ptr,
                },
            )?;
            if n_levels > 1 {
                k.fast_score(stream, shapes.fast, &fast_score(1, n_levels))?;
            }
            self.level0_branch.join(stream)?;
            k.cell_candidates(
                stream,
                shapes.cell_candidates,
                &CellCandidatesArgs {
                    scores: plan.scores.ptr,
                    corner_bits: plan.corner_bits.ptr,
                    level_table: plan.levels.ptr,
                    n_levels,
                    total_cells: plan.total_cells,
                    fast_threshold: c.fast_threshold as i32,
                    min_fast_threshold,
                    harris,
                    level_counts: counters.level_counts,
                    cell_starts: plan.cell_starts.ptr,
                    cell_counts: plan.cell_counts.ptr,
                    cand_yx: candidates.yx.ptr,
                    cand_cell: candidates.cell.ptr,
                    cand_key: candidates.key.ptr,
                    cand_score: candidates.score.ptr,
                    level_hist: counters.score_histograms,
                },
            )?;
            k.select_candidates(
                stream,
                shapes.select,
                &SelectCandidatesArgs {
                    level_table: plan.levels.ptr,
                    n_levels,
                    level_counts: counters.level_counts,
                    level_hist: counters.score_histograms,
                    quotas: plan.quotas.ptr,
                    harris,
                    cand_yx: candidates.yx.ptr,
                    cand_cell: candidates.cell.ptr,
                    cand_key: candidates.key.ptr,
                    cand_score: candidates.score.ptr,
                    record_key: records.key.ptr,
                    record_yx: records.yx.ptr,
                    record_cell: records.cell.ptr,
                    level_records: plan.level_records.ptr,
                },
            )?;
            if harris != 0 {
                k.record_keys(
                    stream,
                    shapes.record_keys,
                    &RecordKeysArgs {
                        pyramid: plan.pyramid.ptr,
                        level_table: plan.levels.ptr,
                        n_levels,
                        level_records: plan.level_records.ptr,
                        record_yx: records.yx.ptr,
                        record_key: records.key.ptr,
                    },
                )?;
            }
            k.record_ranks(
                stream,
                shapes.record_ranks,
                &RecordRanksArgs {
                    level_table: plan.levels.ptr,
                    n_levels,
                    level_records: plan.level_records.ptr,
                    record_key: records.key.ptr,
                    record_yx: records.yx.ptr,
                    record_cell: records.cell.ptr,
                    record_rank: records.rank.ptr,
                },
            )?;
            k.record_place(
                stream,
                shapes.record_place,
                &RecordPlaceArgs {
                    level_table: plan.levels.ptr,
                    n_levels,
                    level_counts: counters.level_counts,
                    quotas: plan.quotas.ptr,
                    level_records: plan.level_records.ptr,
                    record_key: records.key.ptr,
                    record_yx: records.yx.ptr,
                    record_rank: records.rank.ptr,
                    kept: outputs.kept.ptr,
                    out_yx: outputs.yx.ptr,
                    out_level: outputs.level.ptr,
                    out_key: outputs.key.ptr,
                },
            )?;
            k.describe(
                stream,
                shapes.describe,
                &DescribeArgs {
                    pyramid: plan.pyramid.ptr,
                    smoothed: plan.smoothed.ptr,
                    level_table: plan.levels.ptr,
                    n_levels,
                    umax: self.constants.umax.ptr,
                    pattern: self.constants.pattern.ptr,
                    kept: outputs.kept.ptr,
                    kp_yx: outputs.yx.ptr,
                    kp_level: outputs.level.ptr,
                    moments: outputs.moments.ptr,
                    descriptors: outputs.descriptors.ptr,
                    train: train.map_or(0, |t| t.buffer.ptr),
                    train_count: train.map_or(0, |t| t.count.ptr),
                    matches: outputs.matches.ptr,
                    per_block: shapes.describe_per_block,
                },
            )?;
        }
        if let Fused::Consecutive {
            previous, config, ..
        } = &self.fused
        {
            self.enqueue_consecutive(plan, previous, config.cross_check)?;
        }
        Ok(())
    }

    /// After the fused forward search of consecutive matching: the cross-check (the
    /// previous frame's own best matches among this frame's keypoints), then this
    /// frame's descriptors and count become the previous frame's for the next one.
    /// Sized for `n_features` keypoints on both sides, the counts read on the GPU.
    fn enqueue_consecutive(&self, plan: &Plan, previous: &Train, cross_check: bool) -> Result<()> {
        let k = &self.kernels;
        let stream = &self.gpu.stream;
        let count = plan.kept_total();
        let descriptors = plan.outputs.descriptors.ptr;
        // SAFETY: `previous` and the plan's descriptors hold `capacity` descriptors,
        // `matches` and `backward` `capacity` Knn2, and both counts are at most
        // `capacity`; the copies stay within those sizes.
        unsafe {
            if cross_check {
                k.knn2_counted(
                    stream,
                    plan.shapes.knn2,
                    &HammingKnn2CountedParams {
                        query: previous.buffer.ptr,
                        n_query: previous.count.ptr,
                        train: descriptors,
                        n_train: count,
                        out: plan.backward.ptr,
                    },
                )?;
                k.cross_check_counted(
                    stream,
                    plan.shapes.cross_check,
                    &CrossCheckCountedParams {
                        forward: plan.outputs.matches.ptr,
                        n_query: count,
                        backward: plan.backward.ptr,
                    },
                )?;
            }
            result::memcpy_dtod_async(
                previous.buffer.ptr,
                descriptors,
                plan.capacity * DESCRIPTOR_BYTES,
                stream.cu_stream(),
            )?;
            result::memcpy_dtod_async(
                previous.count.ptr,
                count,
                size_of::<u32>(),
                stream.cu_stream(),
            )?;
        }
        Ok(())
    }
}
