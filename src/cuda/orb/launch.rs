//! One typed launch per ORB kernel, and the per-frame launch sequence (everything
//! between upload and downloads), captured once per size and input into a CUDA graph.
//!
//! Each kernel takes one parameter struct (`cuda::abi::orb_params`, mirrored in
//! kernels/common/orb_params.cuh); its launch function pushes it whole.

use std::mem::size_of;

use cudarc::driver::{result, CudaStream, LaunchConfig};

use crate::config::OrbScore;
use crate::cuda::abi::match_params::{
    CrossCheckBestCountedParams, CrossCheckCountedParams, HammingKnn2CountedParams,
};
use crate::cuda::abi::orb_params::{
    OrbCellCandidatesParams, OrbDescribeParams, OrbFastScoreParams, OrbKeypointFieldsParams,
    OrbPyramidParams, OrbRecordKeysParams, OrbRecordPlaceParams, OrbRecordRanksParams,
    OrbRecordSet, OrbSelectCandidatesParams,
};
use crate::cuda::abi::{Knn2, OrbRows};
use crate::cuda::graph::wait_for_outside;
use crate::cuda::orb::plan::{FrameInput, Plan, Queue, DESCRIPTOR_BYTES};
use crate::cuda::orb::shapes::{capped, Kernels, CELL_WARPS, PYRAMID_WARPS, SMOOTH_TAPS};
use crate::cuda::orb::{CudaOrbExtractor, Fused, ResidentSets};
use crate::error::Result;
use crate::extractor::Residency;
use crate::spec::harris::HARRIS_KEY_TO_RESPONSE;

/// The typed launches. Each is unsafe for one reason: the kernel reads and writes the
/// device memory its pointers name, as far as the sizes and tables beside them say.
///
/// # Safety (every function)
/// Every pointer of `p` is a live device allocation of the caller's plan (or a
/// table uploaded with it), sized for the indices the kernel derives from the level
/// table and counts it is given, and stays alive until the stream has run the kernel.
impl Kernels {
    pub unsafe fn pyramid(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        p: &OrbPyramidParams,
    ) -> Result<()> {
        // SAFETY: `p` is `orb_pyramid`'s parameter struct; the caller vouches for the
        // pyramid (every level of the table), the taps and the barrier's words.
        // Cooperative: its grid barrier needs every block resident, which a cooperative
        // launch guarantees or refuses.
        unsafe { self.pyramid.launch_cooperative(stream, config, p) }
    }

    pub unsafe fn fast_score(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        p: &OrbFastScoreParams,
    ) -> Result<()> {
        // SAFETY: `p` is `orb_fast_score`'s parameter struct; the caller vouches for the
        // pyramid, scores, corner bitmap and smoothed buffers of the level table and the
        // 65,536-bit arc table (read on GPUs where the masks decide).
        unsafe { self.fast_score.launch(stream, config, p) }
    }

    pub unsafe fn cell_candidates(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        p: &OrbCellCandidatesParams,
    ) -> Result<()> {
        // SAFETY: `p` is `orb_cell_candidates`' parameter struct; the caller vouches for
        // the per-cell arrays (`total_cells` each), the candidate slots of every level
        // and the zeroed counters.
        unsafe { self.cell_candidates.launch(stream, config, p) }
    }

    pub unsafe fn select_candidates(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        p: &OrbSelectCandidatesParams,
    ) -> Result<()> {
        // SAFETY: `p` is `orb_select_candidates`' parameter struct; the caller vouches
        // for the counters, quotas and level records (n_levels each) and the candidate
        // and record slots of every level.
        unsafe { self.select_candidates.launch(stream, config, p) }
    }

    pub unsafe fn record_keys(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        p: &OrbRecordKeysParams,
    ) -> Result<()> {
        // SAFETY: `p` is `orb_record_keys`' parameter struct; the caller vouches for the
        // pyramid and the record slots of every level.
        unsafe { self.record_keys.launch(stream, config, p) }
    }

    pub unsafe fn record_ranks(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        p: &OrbRecordRanksParams,
    ) -> Result<()> {
        // SAFETY: `p` is `orb_record_ranks`' parameter struct; the caller vouches for
        // the record slots of every level.
        unsafe { self.record_ranks.launch(stream, config, p) }
    }

    pub unsafe fn record_place(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        p: &OrbRecordPlaceParams,
    ) -> Result<()> {
        // SAFETY: `p` is `orb_record_place`'s parameter struct; the caller vouches for
        // the record slots, `kept` (n_levels + 1 words) and the outputs, which hold the
        // sum of the quotas.
        unsafe { self.record_place.launch(stream, config, p) }
    }

    pub unsafe fn describe(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        p: &OrbDescribeParams,
    ) -> Result<()> {
        // SAFETY: `p` is `orb_describe`'s parameter struct; the caller vouches for the
        // pyramids, tables and outputs (`train` and `train_count` may be null: the
        // kernel then matches nothing; `backward_best` may be null, else it holds a
        // word per train descriptor).
        unsafe { self.describe.launch(stream, config, p) }
    }

    pub unsafe fn keypoint_fields(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        p: &OrbKeypointFieldsParams,
    ) -> Result<()> {
        // SAFETY: `p` is `orb_keypoint_fields`'s parameter struct; the caller vouches for
        // the kept keypoints, their moments, the level scales (one per level) and the
        // field arrays, which hold as many keypoints as `kept` counts.
        unsafe { self.keypoint_fields.launch(stream, config, p) }
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

    pub unsafe fn cross_check_best_counted(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        p: &CrossCheckBestCountedParams,
    ) -> Result<()> {
        // SAFETY: `p` is `match_cross_check_best_counted`'s parameter struct; the caller
        // vouches for the pointers (`backward_best` covers every index `forward` names).
        unsafe { self.cross_check_best_counted.launch(stream, config, p) }
    }
}

impl CudaOrbExtractor {
    /// Queues the per-frame kernels (everything between upload and downloads),
    /// reading the frame of `input`, matched and kept as `residency` says.
    pub(super) fn enqueue(
        &self,
        plan: &Plan,
        input: &FrameInput,
        residency: Residency,
    ) -> Result<()> {
        let c = &self.config;
        let k = &self.kernels;
        let shapes = &plan.shapes;
        let stream = &self.gpu.stream;
        let n_levels = plan.n_levels();
        let counters = plan.counters();
        let harris = i32::from(c.score == OrbScore::Harris);
        let min_fast_threshold = c.min_fast_threshold as i32;
        let (candidates, records, outputs) = (&plan.candidates, &plan.records, &input.outputs);
        let pyramid = input.pyramid();
        // SAFETY: `counters` holds exactly `counters.bytes` bytes on this context.
        unsafe {
            result::memset_d8_async(
                plan.counters.ptr,
                0,
                plan.counters.bytes,
                stream.cu_stream(),
            )
        }?;
        let backward_best = self
            .fused
            .fuses_backward(residency)
            .then_some(&plan.backward_best);
        // FAST on the tile rows `rows`, its blocks taking tiles from the queue word
        // `tiles_taken`.
        let fast_score = |rows: OrbRows, tiles_taken| OrbFastScoreParams {
            pyramid,
            level_table: plan.levels.ptr,
            arc_bits: self.constants.arc.ptr,
            scores: plan.scores.ptr,
            corner_bits: plan.corner_bits.ptr,
            smoothed: plan.smoothed.ptr,
            taps: SMOOTH_TAPS,
            rows,
            n_levels,
            threshold: min_fast_threshold,
            tiles_taken,
        };
        let train = self.fused.train(residency);
        let side = &self.side;
        // SAFETY (every launch below): every pointer is a live buffer of this plan or of
        // the input slot, or a table uploaded with the extractor, sized for the level
        // table and capacity the plan was built with; the train set holds `train_count`
        // descriptors. The conversion: the input holds its layout's upload bytes, the
        // slot's pyramid starts with level 0 of the frame's size. The bands' rows lie
        // within their levels.
        unsafe {
            if let Some(best) = backward_best {
                // Off the critical path: all ones is "no keypoint yet" for
                // orb_describe's atomicMin, long after the join.
                let side = side.fork(stream)?;
                result::memset_d8_async(best.ptr, 0xff, best.bytes, side.cu_stream())?;
            }
            // Band by band (bands.rs), as the frame's rows arrive: the main stream
            // converts the band's rows to grey (read over the bus once when the frame is
            // mapped host memory; not at all when it was uploaded as level 0), resizes
            // the rows of the other levels they determine and scores their tiles; the
            // side stream scores level 0's tiles meanwhile, then searches the cells the
            // band completes. The two join before the selection.
            for (b, (band, uploaded)) in input.bands.iter().zip(&input.band_uploads).enumerate() {
                wait_for_outside(stream, uploaded)?;
                if input.is_converted() {
                    k.gray.enqueue(
                        stream,
                        input.upload.layout(),
                        band.frame_rows.clone(),
                        input.upload.ptr(),
                        pyramid,
                    )?;
                }
                let level0 = &band.level0_tiles;
                if level0.items > 0 {
                    let config = capped(shapes.level0_fast, level0.items, 1);
                    let p = fast_score(level0.rows, plan.queue(b, Queue::Level0Tiles));
                    k.fast_score(side.fork(stream)?, config, &p)?;
                }
                if band.pyramid.items > 0 {
                    k.pyramid(
                        stream,
                        capped(shapes.pyramid, band.pyramid.items, PYRAMID_WARPS),
                        &OrbPyramidParams {
                            level_table: plan.levels.ptr,
                            taps: plan.taps.ptr,
                            pyramid,
                            barrier_state: plan.barrier.ptr,
                            rows: band.pyramid.rows,
                            n_levels,
                            padding: 0,
                        },
                    )?;
                }
                let upper = &band.upper_tiles;
                if upper.items > 0 {
                    let config = capped(shapes.fast, upper.items, 1);
                    let p = fast_score(upper.rows, plan.queue(b, Queue::UpperTiles));
                    k.fast_score(stream, config, &p)?;
                }
                if band.cells.items > 0 {
                    k.cell_candidates(
                        side.fork(stream)?,
                        capped(shapes.cell_candidates, band.cells.items, CELL_WARPS),
                        &OrbCellCandidatesParams {
                            scores: plan.scores.ptr,
                            corner_bits: plan.corner_bits.ptr,
                            level_table: plan.levels.ptr,
                            counters,
                            cell_starts: plan.cell_starts.ptr,
                            cell_counts: plan.cell_counts.ptr,
                            candidates: candidates.arrays(),
                            rows: band.cells.rows,
                            n_levels,
                            fast_threshold: c.fast_threshold as i32,
                            min_fast_threshold,
                            harris,
                        },
                    )?;
                }
            }
            side.close()?;
            side.join(stream)?;
            k.select_candidates(
                stream,
                shapes.select,
                &OrbSelectCandidatesParams {
                    level_table: plan.levels.ptr,
                    counters,
                    quotas: plan.quotas.ptr,
                    candidates: candidates.arrays(),
                    records: records.arrays(),
                    level_records: plan.level_records.ptr,
                    n_levels,
                    harris,
                },
            )?;
            let set = OrbRecordSet {
                level_table: plan.levels.ptr,
                level_records: plan.level_records.ptr,
                records: records.arrays(),
                n_levels,
                padding: 0,
            };
            if harris != 0 {
                k.record_keys(
                    stream,
                    shapes.record_keys,
                    &OrbRecordKeysParams { pyramid, set },
                )?;
            }
            k.record_ranks(
                stream,
                shapes.record_ranks,
                &OrbRecordRanksParams {
                    set,
                    rank_bins: counters.rank_bins,
                },
            )?;
            k.record_place(
                stream,
                shapes.record_place,
                &OrbRecordPlaceParams {
                    level_table: plan.levels.ptr,
                    counters,
                    quotas: plan.quotas.ptr,
                    level_records: plan.level_records.ptr,
                    records: records.arrays(),
                    kept: outputs.on_device(outputs.kept),
                    keypoints: plan.keypoints.arrays(),
                    n_levels,
                    padding: 0,
                },
            )?;
            k.describe(
                stream,
                shapes.describe,
                &OrbDescribeParams {
                    pyramid,
                    smoothed: plan.smoothed.ptr,
                    level_table: plan.levels.ptr,
                    umax: self.constants.umax.ptr,
                    pattern: self.constants.pattern.ptr,
                    kept: outputs.on_device(outputs.kept),
                    keypoints: plan.keypoints.arrays(),
                    moments: outputs.on_device(outputs.moments),
                    descriptors: outputs.on_device(outputs.descriptors),
                    train: train.map_or(0, |t| t.buffer.ptr),
                    train_count: train.map_or(0, |t| t.count.ptr),
                    matches: outputs.on_device(outputs.matches),
                    backward_best: backward_best.map_or(0, |b| b.ptr),
                    n_levels,
                    per_block: shapes.describe_per_block,
                },
            )?;
            k.keypoint_fields(
                stream,
                shapes.keypoint_fields,
                &OrbKeypointFieldsParams {
                    kept: outputs.on_device(outputs.kept),
                    keypoints: plan.keypoints.arrays(),
                    moments: outputs.on_device(outputs.moments),
                    level_scales: plan.level_scales.ptr,
                    fields: outputs.feature_arrays(),
                    degrees_per_radian: 1f64.to_degrees(),
                    harris_scale: HARRIS_KEY_TO_RESPONSE,
                    patch_size: c.patch_size as f32,
                    harris,
                    n_levels,
                    padding: 0,
                },
            )?;
        }
        if let Fused::Resident(sets) = &self.fused {
            self.enqueue_resident(plan, input, sets, residency)?;
        }
        Ok(())
    }

    /// After the fused forward search (this frame against the slot it is matched
    /// with): where this frame is the query, the cross-check against the backward
    /// search `orb_describe` folded into the same sweep (`Fused::fuses_backward`);
    /// where it is the train set, the slot's own search among this frame's keypoints
    /// (the matches, copied where the forward ones are downloaded from) and the
    /// cross-check against the fused search. Then this frame's descriptors and count go
    /// into the slot it is kept in. Sized for `n_features` keypoints on both sides, the
    /// counts read on the GPU.
    fn enqueue_resident(
        &self,
        plan: &Plan,
        input: &FrameInput,
        sets: &ResidentSets,
        residency: Residency,
    ) -> Result<()> {
        let count = input.kept_total();
        let descriptors = input.outputs.on_device(input.outputs.descriptors);
        let forward = input.outputs.on_device(input.outputs.matches);
        let k = &self.kernels;
        let stream = &self.gpu.stream;
        let cross_check = sets.config.cross_check;
        let slot = &sets.slots[residency.match_with.index()];
        let kept = &sets.slots[residency.keep_as.index()];
        let knn2_bytes = plan.capacity * size_of::<Knn2>();
        // SAFETY: the slots and the plan's descriptors hold `capacity` descriptors,
        // `matches` and `backward` `capacity` Knn2, `backward_best` `capacity` words,
        // and both counts are at most `capacity`; the copies stay within those sizes.
        unsafe {
            if residency.frame_is_query {
                if cross_check {
                    k.cross_check_best_counted(
                        stream,
                        plan.shapes.cross_check,
                        &CrossCheckBestCountedParams {
                            forward,
                            n_query: count,
                            backward_best: plan.backward_best.ptr,
                        },
                    )?;
                }
            } else {
                k.knn2_counted(
                    stream,
                    plan.shapes.knn2,
                    &HammingKnn2CountedParams {
                        query: slot.buffer.ptr,
                        n_query: slot.count.ptr,
                        train: descriptors,
                        n_train: count,
                        out: plan.backward.ptr,
                    },
                )?;
                if cross_check {
                    k.cross_check_counted(
                        stream,
                        plan.shapes.cross_check,
                        &CrossCheckCountedParams {
                            forward: plan.backward.ptr,
                            n_query: slot.count.ptr,
                            backward: forward,
                        },
                    )?;
                }
                result::memcpy_dtod_async(
                    forward,
                    plan.backward.ptr,
                    knn2_bytes,
                    stream.cu_stream(),
                )?;
            }
            result::memcpy_dtod_async(
                kept.buffer.ptr,
                descriptors,
                plan.capacity * DESCRIPTOR_BYTES,
                stream.cu_stream(),
            )?;
            result::memcpy_dtod_async(kept.count.ptr, count, size_of::<u32>(), stream.cu_stream())?;
        }
        Ok(())
    }
}
