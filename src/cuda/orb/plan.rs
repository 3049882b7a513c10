//! The level tables and buffers of one image size, and what they cost
//! (docs/memory.md), computed from the same tables with or without a GPU.

use std::mem::{size_of, size_of_val};
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream};

use crate::config::OrbConfig;
use crate::cuda::abi::orb_params::{
    OrbCandidateArrays, OrbCounters, OrbFeatureArrays, OrbKeypointArrays, OrbRecordArrays,
};
use crate::cuda::abi::{
    Knn2, OrbLevel, ResizeTap, DESC_WORDS, GRID_BARRIER_GENERATION, ORB_SCORE_BINS, RANK_BINS, WARP,
};
use crate::cuda::free_memory::check_free_memory;
use crate::cuda::gpu::Gpu;
use crate::cuda::graph::FrameGraph;
use crate::cuda::gray::FrameLayout;
use crate::cuda::memory::{DeviceBuffer, Staged};
use crate::cuda::orb::bands::{band_count, bands, Band, MAX_BANDS};
use crate::cuda::orb::shapes::{Kernels, PlanSize, Shapes};
use crate::cuda::upload::FrameUpload;
use crate::error::{Error, ImageError, Result};
use crate::extractor::Residency;
use crate::spec::grid::{DetectionArea, Grid};
use crate::spec::pyramid::{level_geometry, resize_taps, LevelGeometry};
use crate::spec::quotas::level_quotas;

/// Words of the pyramid's grid barrier: the arrival counter, then the generation on
/// its own 128-byte line (kernels/common/grid_barrier.cuh).
const GRID_BARRIER_WORDS: usize = GRID_BARRIER_GENERATION + 1;

/// Bytes past the last level that `orb_pyramid` may read: it reads a row's source
/// pixels as the three aligned words around them, up to 11 bytes past the first.
const PYRAMID_READ_SLACK: usize = 12;

/// A frame slot's pyramid allocation for `pixels` pixels: the read slack, in whole
/// words (orb_describe reads the aligned words holding its patch rows).
fn slot_pyramid_bytes(pixels: usize) -> usize {
    (pixels + PYRAMID_READ_SLACK).next_multiple_of(4)
}

/// Bytes of one descriptor.
pub const DESCRIPTOR_BYTES: usize = DESC_WORDS * size_of::<u32>();

pub fn to_i32(value: usize, what: &str) -> Result<i32> {
    i32::try_from(value)
        .map_err(|_| Error::Image(ImageError::Invalid(format!("{what} {value} is too large"))))
}

/// Words of [`OrbCounters`] (per level its candidate count, its histogram of FAST
/// scores and its bins of record ranks), then the work queues of `orb_fast_score`'s
/// launches, two a band.
fn counter_words(n_levels: usize) -> usize {
    level_counter_words(n_levels) + QUEUES
}

/// The per-level words of [`OrbCounters`], before the queues.
fn level_counter_words(n_levels: usize) -> usize {
    n_levels * (1 + ORB_SCORE_BINS + RANK_BINS)
}

/// The launches of a band that take their tiles from a queue: `orb_fast_score` on
/// level 0 and on the other levels.
#[derive(Clone, Copy)]
pub enum Queue {
    Level0Tiles,
    UpperTiles,
}

const QUEUES: usize = 2 * MAX_BANDS;

/// Groups of 32 records that the levels can hold (a level has at most min(its slots, 2
/// quota) records), at least 1: about the groups of a bin of ranks that
/// `orb_record_place` takes a block each.
fn record_groups(levels: &[OrbLevel], quotas: &[i32]) -> u32 {
    let groups: u64 = levels
        .iter()
        .zip(quotas)
        .map(|(level, &quota)| {
            let records = i64::from(level.cand_capacity).min(2 * i64::from(quota));
            u64::try_from(records)
                .unwrap_or(0)
                .div_ceil(u64::from(WARP))
        })
        .sum();
    u32::try_from(groups).unwrap_or(u32::MAX).max(1)
}

/// The level tables of a `width` x `height` frame and the sizes they give the buffers.
pub(super) struct PlanTables {
    geometry: Vec<LevelGeometry>,
    pub(super) levels: Vec<OrbLevel>,
    pub(super) taps: Vec<ResizeTap>,
    quotas: Vec<i32>,
    /// Pixels of all levels (one byte each).
    pyramid_bytes: usize,
    /// Grid cells and candidate slots of all levels.
    cells: usize,
    slots: usize,
    /// Words of the corner bitmap.
    corner_words: usize,
}

impl PlanTables {
    pub(super) fn new(c: &OrbConfig, width: usize, height: usize) -> Result<Self> {
        let geometry = level_geometry(width, height, c.n_levels, c.scale_factor);
        let quotas: Vec<i32> = level_quotas(c.n_features, c.n_levels, c.scale_factor)
            .into_iter()
            .map(|q| to_i32(q, "quota"))
            .collect::<Result<_>>()?;
        let edge = c.edge_threshold as usize;
        let mut levels = Vec::with_capacity(geometry.len());
        let mut taps = Vec::new();
        let (mut offset, mut cells, mut slots, mut corner_words) = (0usize, 0usize, 0usize, 0usize);
        for (l, g) in geometry.iter().enumerate() {
            let mut level = OrbLevel {
                width: to_i32(g.width, "width")?,
                height: to_i32(g.height, "height")?,
                offset: to_i32(offset, "pyramid size")?,
                edge: to_i32(edge, "edge")?,
                cell_w: 1,
                cell_h: 1,
                cell_offset: to_i32(cells, "cells")?,
                cand_offset: to_i32(slots, "candidates")?,
                corner_words: to_i32(corner_words, "corner bitmap")?,
                ..OrbLevel::default()
            };
            if l > 0 {
                let previous = geometry[l - 1];
                // The taps of one axis, appended to `taps`; returns where they start.
                let mut push_taps = |from: usize, to: usize| -> Result<i32> {
                    let start = to_i32(taps.len(), "taps")?;
                    let axis = resize_taps(from, to);
                    taps.extend(axis.first.iter().zip(&axis.second_weight).map(|(&s, &w)| {
                        ResizeTap {
                            src: s as i32,
                            w1: i32::from(w),
                        }
                    }));
                    Ok(start)
                };
                level.taps_x = push_taps(previous.width, g.width)?;
                level.taps_y = push_taps(previous.height, g.height)?;
            }
            if let Some(area) = DetectionArea::new(g.width, g.height, edge) {
                let grid = Grid::new(area, c.grid_cell_size as usize);
                level.n_cols = to_i32(grid.n_cols, "cells")?;
                level.n_rows = to_i32(grid.n_rows, "cells")?;
                level.cell_w = to_i32(grid.cell_width, "cell")?;
                level.cell_h = to_i32(grid.cell_height, "cell")?;
                // Strict 3x3 NMS keeps at most one pixel of each 2x2 block.
                let capacity = area.width().div_ceil(2) * area.height().div_ceil(2);
                level.cand_capacity = to_i32(capacity, "candidates")?;
                cells += grid.n_cells();
                slots += capacity;
            }
            offset += g.width * g.height;
            // corner_row_words in kernels/common/levels.cuh.
            corner_words += g.width.div_ceil(32) * g.height;
            levels.push(level);
        }
        // The kernels index the packed pyramid with i32.
        to_i32(offset, "pyramid size")?;
        Ok(Self {
            geometry,
            levels,
            taps,
            quotas,
            pyramid_bytes: offset,
            cells,
            slots,
            corner_words,
        })
    }
}

/// Each level's scale as the host multiplies keypoint coordinates by it (f32).
fn level_scales(geometry: &[LevelGeometry]) -> Vec<f32> {
    geometry.iter().map(|g| g.scale as f32).collect()
}

/// What a plan allocates for a frame, in bytes (docs/memory.md): computed without a GPU
/// from the same tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrbPlanBytes {
    /// The first frame slot's pyramid, smoothed pyramid, FAST scores, corner bitmap,
    /// candidates, selection records, counters, cells, the kept keypoints, the grid
    /// barrier and the tables (device).
    pub device: usize,
    /// Buffers that cross to the host (one frame slot, kept counts, outputs): in device
    /// memory mode each is a device buffer and as much pinned host memory; in unified
    /// mode, mapped pinned host memory only.
    pub staged: usize,
}

impl OrbPlanBytes {
    pub fn new(config: &OrbConfig, width: usize, height: usize) -> Result<Self> {
        Ok(Self::of(
            config,
            &PlanTables::new(config, width, height)?,
            width,
            height,
        ))
    }

    fn of(config: &OrbConfig, t: &PlanTables, width: usize, height: usize) -> Self {
        let n_levels = t.levels.len();
        let (cells, slots) = (t.cells.max(1), t.slots.max(1));
        let words = |n: usize| n * size_of::<u32>();
        let capacity = config.n_features as usize;
        Self {
            device: size_of_val(t.levels.as_slice())
                + size_of_val(t.taps.as_slice())
                + size_of_val(t.quotas.as_slice())
                + slot_pyramid_bytes(t.pyramid_bytes)
                + t.pyramid_bytes.next_multiple_of(4)
                + t.pyramid_bytes
                + words(t.corner_words.max(1))
                + words(GRID_BARRIER_WORDS)
                + words(counter_words(n_levels))
                + 2 * words(cells)
                + slots * (4 + 4 + 8 + 1)
                + slots * (8 + 4 + 4 + 4 + 4)
                + words(n_levels)
                // The level scales, and the kept keypoints' position, level and key.
                + n_levels * size_of::<f32>()
                + capacity * (4 + 4 + 8),
            staged: width * height
                + words(n_levels + 1)
                + capacity * (FEATURE_FIELDS * 4 + 2 * 4 + DESCRIPTOR_BYTES + size_of::<Knn2>()),
        }
    }

    /// Device bytes the plan needs for frames of `layout` (checked against the GPU's
    /// free memory): all of them in either memory mode (mapped host memory is the
    /// device's own on an integrated GPU), the frame slot as large as the layout needs.
    pub(crate) fn needed(&self, layout: &FrameLayout) -> usize {
        let packed = layout.width * layout.height;
        self.device + self.staged - packed + layout.upload_bytes().max(packed)
    }
}

/// The NMS survivors of every cell, at each level's first slot (structure of arrays).
pub struct Candidates {
    /// y << 16 | x.
    pub yx: DeviceBuffer,
    /// The cell within the level.
    pub cell: DeviceBuffer,
    /// The FAST ranking key (i64).
    pub key: DeviceBuffer,
    /// The FAST score (u8).
    pub score: DeviceBuffer,
}

impl Candidates {
    /// The arrays as the kernels take them.
    pub fn arrays(&self) -> OrbCandidateArrays {
        OrbCandidateArrays {
            yx: self.yx.ptr,
            cell: self.cell.ptr,
            key: self.key.ptr,
            score: self.score.ptr,
        }
    }
}

/// The selection records, at each level's first slot (structure of arrays).
pub struct Records {
    /// The ranking key (i64): FAST or Harris.
    pub key: DeviceBuffer,
    pub yx: DeviceBuffer,
    pub cell: DeviceBuffer,
    /// The rank k within the cell.
    pub rank: DeviceBuffer,
    /// The order within the level's bin of k.
    pub bin_slot: DeviceBuffer,
}

impl Records {
    /// The arrays as the kernels take them.
    pub fn arrays(&self) -> OrbRecordArrays {
        OrbRecordArrays {
            key: self.key.ptr,
            yx: self.yx.ptr,
            cell: self.cell.ptr,
            rank: self.rank.ptr,
            bin_slot: self.bin_slot.ptr,
        }
    }
}

/// The keypoints a frame keeps, in output order, on the device (structure of arrays,
/// `capacity` entries each).
pub struct KeptKeypoints {
    pub yx: DeviceBuffer,
    pub level: DeviceBuffer,
    /// The ranking key (i64).
    pub key: DeviceBuffer,
}

impl KeptKeypoints {
    /// The arrays as the kernels take them.
    pub fn arrays(&self) -> OrbKeypointArrays {
        OrbKeypointArrays {
            yx: self.yx.ptr,
            level: self.level.ptr,
            key: self.key.ptr,
        }
    }
}

/// The published fields of each kept keypoint, in the order of [`OrbFeatureArrays`]:
/// x, y, size, angle, response (f32) and octave (i32), `capacity` of each.
pub const FEATURE_FIELDS: usize = 6;

/// A part of [`Outputs`]' buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    offset: usize,
    pub bytes: usize,
}

impl Region {
    fn end(self) -> usize {
        self.offset + self.bytes
    }
}

/// What crosses to the host of the keypoints a frame keeps (structure of arrays,
/// `capacity` entries each), in one buffer: a single copy brings a frame's results
/// back, where a copy per array cost a few µs of the copy engine's latency each,
/// after the frame's last kernel.
pub struct Outputs {
    buffer: Staged,
    /// n_levels + 1 words: the keypoints kept per level, then their total.
    pub kept: Region,
    /// [`FEATURE_FIELDS`] arrays of 4-byte values, one after the other.
    pub fields: Region,
    /// (m10, m01) per keypoint: the host computes the angles the GPU leaves to it.
    pub moments: Region,
    pub descriptors: Region,
    /// One [`Knn2`] per keypoint (fused matching), last: downloaded only when matched.
    pub matches: Region,
}

impl Outputs {
    fn new(ctx: &Arc<CudaContext>, shape: SlotShape, unified: bool) -> Result<Self> {
        let capacity = shape.capacity;
        let mut end = 0;
        let mut region = |bytes: usize| {
            let region = Region { offset: end, bytes };
            // 16-byte starts: every array is read and written in whole words or more.
            end = (end + bytes).next_multiple_of(16);
            region
        };
        let kept = region((shape.n_levels + 1) * size_of::<u32>());
        let fields = region(capacity * FEATURE_FIELDS * 4);
        let moments = region(capacity * 2 * size_of::<i32>());
        let descriptors = region(capacity * DESCRIPTOR_BYTES);
        let matches = region(capacity * size_of::<Knn2>());
        Ok(Self {
            buffer: Staged::new(ctx, matches.end(), unified)?,
            kept,
            fields,
            moments,
            descriptors,
            matches,
        })
    }

    /// Where the kernels read and write `region`.
    pub fn on_device(&self, region: Region) -> CUdeviceptr {
        self.buffer.ptr + region.offset as u64
    }

    /// `region` as downloaded (or, in unified memory, as the kernels left it).
    pub fn on_host(&self, region: Region) -> &[u8] {
        &self.buffer.host.as_slice()[region.offset..region.end()]
    }

    /// Queues the download of everything a frame's collection reads (the matches only
    /// when `matched`) on `stream`, in one copy.
    pub fn download_async(&mut self, matched: bool, stream: &CudaStream) -> Result<()> {
        let last = if matched {
            self.matches
        } else {
            self.descriptors
        };
        self.buffer.download_async(last.end(), stream)
    }

    /// Field `index` of [`FEATURE_FIELDS`], `capacity` values, on the device.
    fn field(&self, index: usize) -> CUdeviceptr {
        let capacity = self.fields.bytes / (FEATURE_FIELDS * 4);
        self.on_device(self.fields) + (index * capacity * 4) as u64
    }

    /// The field arrays as `orb_keypoint_fields` takes them.
    pub fn feature_arrays(&self) -> OrbFeatureArrays {
        OrbFeatureArrays {
            x: self.field(0),
            y: self.field(1),
            size: self.field(2),
            angle: self.field(3),
            response: self.field(4),
            octave: self.field(5),
        }
    }
}

/// Level tables and buffers for one image size.
pub struct Plan {
    pub width: usize,
    pub height: usize,
    pub geometry: Vec<LevelGeometry>,
    pub capacity: usize,
    /// The launch shapes of the frame's kernels.
    pub shapes: Shapes,
    /// The pyramid's level table and taps as the host made them, which cut each
    /// input slot's frames into bands.
    level_table: Vec<OrbLevel>,
    resize_taps: Vec<ResizeTap>,
    pub levels: DeviceBuffer,
    pub taps: DeviceBuffer,
    pub quotas: DeviceBuffer,
    /// Slot 0 serves `extract`; the pipeline (`pipeline.rs`) adds a second slot.
    pub inputs: Vec<FrameInput>,
    /// What each input slot holds: its pyramid, and outputs of the kept counts of
    /// `n_levels` levels and `capacity` keypoints.
    slot_shape: SlotShape,
    pub smoothed: DeviceBuffer,
    pub scores: DeviceBuffer,
    /// A bit per pixel, rows of whole words per level: the corners `orb_fast_score`
    /// found, which `orb_cell_candidates` scans instead of every score.
    pub corner_bits: DeviceBuffer,
    pub barrier: DeviceBuffer,
    /// Zeroed each frame: [`OrbCounters`].
    pub counters: DeviceBuffer,
    /// Per cell, written each frame: the first slot and the number of its candidates.
    pub cell_starts: DeviceBuffer,
    pub cell_counts: DeviceBuffer,
    pub candidates: Candidates,
    pub records: Records,
    /// Records per level (min(candidates, 2 quota)).
    pub level_records: DeviceBuffer,
    pub keypoints: KeptKeypoints,
    /// Per level (f32): the frame pixels of one level pixel, as the host scales them.
    pub level_scales: DeviceBuffer,
    /// Resident matching where the frame is the train set: the slot's matches among
    /// this frame's keypoints, one [`Knn2`] per keypoint of the slot.
    pub backward: DeviceBuffer,
    /// Resident matching with the cross-check where the frame is the query: per
    /// descriptor of the slot, its nearest keypoint of this frame as `orb_describe`
    /// packs it (u32, `distance << BACKWARD_QUERY_BITS | keypoint`), preset to all ones
    /// each frame.
    pub backward_best: DeviceBuffer,
}

/// One frame buffer, the layout of the frames it takes, its pyramid, the outputs of
/// its frames and the per-frame kernels captured to read and write them: each slot has
/// its own graphs, one per residency its frames come with (a stereo pair's left and
/// right frames match differently), so alternating slots and cameras costs no copy and
/// no graph update; its own pyramid, so that a frame is uploaded while the other
/// slot's kernels read theirs; and its own outputs, so that one slot's frame is read on
/// the host while the other's kernels run.
pub struct FrameInput {
    pub upload: FrameUpload,
    /// The pyramid where the frame is converted to grey; `None` where the frame is
    /// uploaded as level 0 of the upload's own device buffer (packed mono8 in device
    /// memory), which then holds the pyramid.
    converted: Option<DeviceBuffer>,
    /// The bands of rows the slot's frames are uploaded and their front end run in
    /// (`bands.rs`: how many depends on the layout's upload bytes).
    pub bands: Vec<Band>,
    /// Per band, recorded after the band's rows are uploaded: the frame's kernels wait
    /// for each before they read its rows.
    pub band_uploads: Vec<CudaEvent>,
    pub outputs: Outputs,
    pub graphs: Vec<(Residency, FrameGraph)>,
}

/// The sizes of a slot's pyramid and outputs.
#[derive(Clone, Copy, Debug)]
struct SlotShape {
    pyramid_bytes: usize,
    n_levels: usize,
    capacity: usize,
}

impl FrameInput {
    fn new(
        gpu: &Gpu,
        layout: FrameLayout,
        shape: SlotShape,
        bands: Vec<Band>,
        unified: bool,
    ) -> Result<Self> {
        let ctx = &gpu.ctx;
        let in_place = layout.is_packed_grey() && !unified;
        let (upload, converted) = if in_place {
            let upload = FrameUpload::at_start_of(ctx, layout, shape.pyramid_bytes, unified)?;
            (upload, None)
        } else {
            let upload = FrameUpload::new(ctx, layout, unified)?;
            (upload, Some(DeviceBuffer::new(ctx, shape.pyramid_bytes)?))
        };
        Ok(Self {
            upload,
            converted,
            band_uploads: (0..bands.len())
                .map(|_| gpu.ordering_event())
                .collect::<Result<_>>()?,
            bands,
            outputs: Outputs::new(ctx, shape, unified)?,
            graphs: Vec::new(),
        })
    }

    /// The slot's pyramid, whose level 0 is the frame in grey.
    pub fn pyramid(&self) -> CUdeviceptr {
        self.converted
            .as_ref()
            .map_or_else(|| self.upload.ptr(), |pyramid| pyramid.ptr)
    }

    /// Whether the frame's first kernel converts it into the pyramid (otherwise it was
    /// uploaded there).
    pub fn is_converted(&self) -> bool {
        self.converted.is_some()
    }

    /// Queues the upload of the frame taken last on `stream`, band by band, each
    /// band's rows followed by its event (recorded in mapped memory too, where nothing
    /// is copied: the kernels wait for them all the same).
    pub fn upload_bands(&self, stream: &CudaStream) -> Result<()> {
        for (band, uploaded) in self.bands.iter().zip(&self.band_uploads) {
            self.upload
                .upload_rows_async(band.frame_rows.clone(), stream)?;
            uploaded.record(stream)?;
        }
        Ok(())
    }

    /// The word of [`Outputs::kept`] holding the frame's number of keypoints.
    pub fn kept_total(&self) -> CUdeviceptr {
        let kept = self.outputs.kept;
        self.outputs.on_device(kept) + (kept.bytes - size_of::<u32>()) as u64
    }

    /// The graph captured for frames of `residency`, if any.
    pub fn graph(&self, residency: Residency) -> Option<&FrameGraph> {
        self.graphs
            .iter()
            .find_map(|(r, graph)| (*r == residency).then_some(graph))
    }
}

impl Plan {
    /// The plan of frames of `layout`'s size (the frame slots come with `input`);
    /// refused before anything is allocated when it would not fit the GPU's free memory.
    pub fn new(gpu: &Gpu, kernels: &Kernels, c: &OrbConfig, layout: FrameLayout) -> Result<Self> {
        let (width, height) = (layout.width, layout.height);
        let tables = PlanTables::new(c, width, height)?;
        gpu.ctx.bind_to_thread()?;
        let needed = OrbPlanBytes::of(c, &tables, width, height).needed(&layout);
        check_free_memory("CUDA ORB", width, height, needed)?;
        let capacity = c.n_features as usize;
        let n_levels = tables.levels.len();
        let total_cells = to_i32(tables.cells, "cells")?;
        let cells = tables.cells.max(1);
        let slots = tables.slots.max(1);
        let pyramid_bytes = tables.pyramid_bytes;
        let counters = counter_words(n_levels);
        let shapes = Shapes::new(
            gpu,
            kernels,
            &PlanSize {
                width,
                height,
                geometry: &tables.geometry,
                total_cells,
                // Groups of 32 records the levels can hold at most: about the blocks
                // that `orb_record_place` can keep busy.
                record_groups: record_groups(&tables.levels, &tables.quotas),
                capacity,
            },
        )?;
        let ctx = &gpu.ctx;
        let barrier = DeviceBuffer::from_slice(ctx, &[0u32; GRID_BARRIER_WORDS])?;
        let level_scales = DeviceBuffer::from_slice(ctx, &level_scales(&tables.geometry))?;
        Ok(Plan {
            width,
            height,
            geometry: tables.geometry,
            capacity,
            shapes,
            slot_shape: SlotShape {
                pyramid_bytes: slot_pyramid_bytes(pyramid_bytes),
                n_levels,
                capacity,
            },
            levels: DeviceBuffer::from_slice(ctx, &tables.levels)?,
            taps: DeviceBuffer::from_slice(ctx, &tables.taps)?,
            level_table: tables.levels,
            resize_taps: tables.taps,
            quotas: DeviceBuffer::from_slice(ctx, &tables.quotas)?,
            inputs: Vec::new(),
            smoothed: DeviceBuffer::new(ctx, pyramid_bytes.next_multiple_of(4))?,
            scores: DeviceBuffer::new(ctx, pyramid_bytes)?,
            corner_bits: DeviceBuffer::new(ctx, tables.corner_words.max(1) * size_of::<u32>())?,
            barrier,
            counters: DeviceBuffer::new(ctx, counters * size_of::<u32>())?,
            cell_starts: DeviceBuffer::new(ctx, cells * size_of::<u32>())?,
            cell_counts: DeviceBuffer::new(ctx, cells * size_of::<u32>())?,
            candidates: Candidates {
                yx: DeviceBuffer::new(ctx, slots * size_of::<u32>())?,
                cell: DeviceBuffer::new(ctx, slots * size_of::<i32>())?,
                key: DeviceBuffer::new(ctx, slots * size_of::<i64>())?,
                score: DeviceBuffer::new(ctx, slots)?,
            },
            records: Records {
                key: DeviceBuffer::new(ctx, slots * size_of::<i64>())?,
                yx: DeviceBuffer::new(ctx, slots * size_of::<u32>())?,
                cell: DeviceBuffer::new(ctx, slots * size_of::<u32>())?,
                rank: DeviceBuffer::new(ctx, slots * size_of::<u32>())?,
                bin_slot: DeviceBuffer::new(ctx, slots * size_of::<u32>())?,
            },
            level_records: DeviceBuffer::new(ctx, n_levels * size_of::<u32>())?,
            keypoints: KeptKeypoints {
                yx: DeviceBuffer::new(ctx, capacity * size_of::<u32>())?,
                level: DeviceBuffer::new(ctx, capacity * size_of::<i32>())?,
                key: DeviceBuffer::new(ctx, capacity * size_of::<i64>())?,
            },
            level_scales,
            backward: DeviceBuffer::new(ctx, capacity * size_of::<Knn2>())?,
            backward_best: DeviceBuffer::new(ctx, capacity * size_of::<u32>())?,
        })
    }

    pub fn n_levels(&self) -> i32 {
        self.geometry.len() as i32
    }

    pub fn counters(&self) -> OrbCounters {
        let n_levels = self.geometry.len();
        let level_counts = self.counters.ptr;
        let score_histograms = level_counts + (n_levels * size_of::<u32>()) as u64;
        OrbCounters {
            level_counts,
            score_histograms,
            rank_bins: score_histograms + (n_levels * ORB_SCORE_BINS * size_of::<u32>()) as u64,
        }
    }

    /// The zeroed word of `queue` in band `band`.
    pub fn queue(&self, band: usize, queue: Queue) -> CUdeviceptr {
        debug_assert!(band < MAX_BANDS);
        let word = level_counter_words(self.geometry.len()) + 2 * band + queue as usize;
        self.counters.ptr + (word * size_of::<u32>()) as u64
    }

    /// Input `slot`, taking frames of `layout`: made on first use, and made again
    /// (with its graph) when the frames' encoding or step changes, or their bands.
    /// `beside_kernels`: the frames are uploaded on a copy stream while kernels run
    /// (`submit_overlapping`), where a large frame is cut into bands; `extract`
    /// uploads on the kernels' own stream, where a band has nothing to overlap.
    pub fn input(
        &mut self,
        gpu: &Gpu,
        slot: usize,
        layout: FrameLayout,
        unified: bool,
        beside_kernels: bool,
    ) -> Result<&mut FrameInput> {
        let shape = self.slot_shape;
        // Mapped memory is read in place: no upload either.
        let count = if unified || !beside_kernels {
            1
        } else {
            band_count(layout.upload_bytes())
        };
        let new_input = |bands| FrameInput::new(gpu, layout, shape, bands, unified);
        while self.inputs.len() <= slot {
            let bands = bands(&self.level_table, &self.resize_taps, count);
            self.inputs.push(new_input(bands)?);
        }
        let input = &self.inputs[slot];
        if *input.upload.layout() != layout || input.bands.len() != count {
            let bands = bands(&self.level_table, &self.resize_taps, count);
            self.inputs[slot] = new_input(bands)?;
        }
        Ok(&mut self.inputs[slot])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::Encoding;

    #[test]
    fn the_memory_check_counts_the_whole_plan_with_the_frame_slot_of_its_layout() {
        let (width, height) = (1920, 1080);
        let bytes = OrbPlanBytes::new(&OrbConfig::default(), width, height).unwrap();
        let layout = |encoding, step| FrameLayout::with_step(encoding, width, height, step);
        let total = bytes.device + bytes.staged;
        assert_eq!(bytes.needed(&layout(Encoding::Mono8, width)), total);
        // uyvy, 2 bytes a pixel, packed: twice the packed mono8 slot.
        let uyvy = layout(Encoding::Uyvy, 2 * width);
        assert_eq!(bytes.needed(&uyvy), total + width * height);
    }

    #[test]
    fn record_groups_bound_each_level_by_its_slots_and_twice_its_quota() {
        let level = |cand_capacity| OrbLevel {
            cand_capacity,
            ..OrbLevel::default()
        };
        // 2 x 100 records in 7 groups of 32, 40 slots in 2, a level without slots in none.
        let levels = [level(10_000), level(40), level(0)];
        assert_eq!(record_groups(&levels, &[100, 100, 100]), 7 + 2);
        // No records at all still launches one block (it writes the kept counts).
        assert_eq!(record_groups(&[level(0)], &[100]), 1);
    }

    #[test]
    fn plan_bytes_follow_the_documented_formula() {
        for (width, height) in [(1920, 1080), (640, 480), (8192, 8192), (40, 30)] {
            let config = OrbConfig::default();
            let bytes = OrbPlanBytes::new(&config, width, height).unwrap();
            let geometry = level_geometry(width, height, config.n_levels, config.scale_factor);
            let n = geometry.len();
            let pixels: usize = geometry.iter().map(|g| g.width * g.height).sum();
            let corner_words: usize = geometry
                .iter()
                .map(|g| g.width.div_ceil(32) * g.height)
                .sum();
            let (mut slots, mut cells) = (0, 0);
            for g in &geometry {
                if let Some(area) =
                    DetectionArea::new(g.width, g.height, config.edge_threshold as usize)
                {
                    slots += area.width().div_ceil(2) * area.height().div_ceil(2);
                    cells += Grid::new(area, config.grid_cell_size as usize).n_cells();
                }
            }
            let taps: usize = geometry[1..].iter().map(|g| g.width + g.height).sum();
            let tables = n * size_of::<OrbLevel>() + 4 * n + 4 * n + size_of::<ResizeTap>() * taps;
            let outputs = config.n_features as usize;
            let device =
                3 * pixels + 4 * corner_words + 41 * slots + 4 * n * 289 + 8 * cells + 16 * outputs;
            let case = format!("{width}x{height}");
            // Rounding the pyramids up to words, the barrier, the level records and the
            // FAST tile queues add under 256 bytes beside the tables.
            let fixed = bytes.device - device;
            assert!(fixed >= tables && fixed < tables + 256, "{case}: {bytes:?}");
            assert_eq!(
                bytes.staged,
                width * height + 4 * (n + 1) + 76 * outputs,
                "{case}"
            );
            // docs/memory.md's rule of thumb from 1080p up: 12 to 13.4 bytes a level pixel
            // (13.4 less what the edges take from sum P_l / 4 candidate slots).
            if width >= 1920 {
                let per_pixel = bytes.device as f64 / pixels as f64;
                assert!((12.0..13.4).contains(&per_pixel), "{case}: {per_pixel}");
            }
        }
    }
}
