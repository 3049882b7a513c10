//! A frame's features (and fused matches) read from the plan's host buffers once the
//! stream is done, and the downloads that fill them.

use std::mem::size_of;

use cudarc::driver::CudaStream;
use rayon::prelude::*;

use crate::config::OrbScore;
use crate::cuda::abi::Knn2;
use crate::cuda::matcher::accept_all;
use crate::cuda::orb::plan::{Outputs, DESCRIPTOR_BYTES};
use crate::cuda::orb::{CudaOrbExtractor, Fused};
use crate::error::{Error, ImageError, Result};
use crate::extractor::Residency;
use crate::spec::harris::harris_response;
use crate::spec::orientation::angle_degrees;
use crate::types::{DescriptorKind, Descriptors, Features, Keypoints};

impl Outputs {
    /// Queues the downloads of `n` keypoints' outputs (and their matches when
    /// `matched`) on `stream`.
    pub fn download_async(&mut self, n: usize, matched: bool, stream: &CudaStream) -> Result<()> {
        self.kept.download_async(self.kept.host.bytes, stream)?;
        self.yx.download_async(n * 4, stream)?;
        self.level.download_async(n * 4, stream)?;
        self.key.download_async(n * 8, stream)?;
        self.moments.download_async(n * 8, stream)?;
        self.descriptors
            .download_async(n * DESCRIPTOR_BYTES, stream)?;
        if matched {
            self.matches.download_async(n * size_of::<Knn2>(), stream)?;
        }
        Ok(())
    }
}

/// Keypoints converted per thread from this many on: below it, waking the threads costs
/// more than the conversion (about 20 ns a keypoint, most of it `atan2`).
const PARALLEL_KEYPOINTS: usize = 256;

/// Little-endian word `i` of `bytes` (0 past the end).
fn word(bytes: &[u8], i: usize) -> u32 {
    bytes
        .get(4 * i..4 * i + 4)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Little-endian signed double word `i` of `bytes` (0 past the end).
fn double_word(bytes: &[u8], i: usize) -> i64 {
    bytes.get(8 * i..8 * i + 8).map_or(0, |b| {
        i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    })
}

impl CudaOrbExtractor {
    /// The features of the frame of input `slot`, matched and kept as `residency`
    /// says, from the slot's host outputs (once the stream has passed its downloads).
    pub(super) fn collect(
        &mut self,
        slot: usize,
        residency: Residency,
        width: usize,
        height: usize,
    ) -> Result<Features> {
        let Some((plan, input)) = self
            .plan
            .as_ref()
            .and_then(|plan| Some((plan, plan.inputs.get(slot)?)))
        else {
            return Err(Error::Image(ImageError::Invalid(
                "no frame was processed".into(),
            )));
        };
        let out = &input.outputs;
        let n_levels = plan.geometry.len();
        let total = (word(out.kept.host.as_slice(), n_levels) as usize).min(plan.capacity);
        let (yx, level, moments, keys) = (
            out.yx.host.as_slice(),
            out.level.host.as_slice(),
            out.moments.host.as_slice(),
            out.key.host.as_slice(),
        );
        let harris = self.config.score == OrbScore::Harris;
        let patch = self.config.patch_size as f32;
        let geometry = &plan.geometry;
        // On every frame's critical path: spread over the threads.
        let ((x, y), ((size, angle), (response, octave))) = (0..total)
            .into_par_iter()
            .with_min_len(PARALLEL_KEYPOINTS)
            .map(|i| {
                let l = word(level, i) as usize;
                let scale = geometry.get(l).map_or(1.0, |g| g.scale) as f32;
                let position = word(yx, i);
                let (x, y) = (position & 0xffff, position >> 16);
                let (m10, m01) = (word(moments, 2 * i) as i32, word(moments, 2 * i + 1) as i32);
                let key = double_word(keys, i);
                let response = if harris {
                    harris_response(key)
                } else {
                    key as f32
                };
                (
                    (x as f32 * scale, y as f32 * scale),
                    (
                        (patch * scale, angle_degrees(m10, m01)),
                        (response, l as i32),
                    ),
                )
            })
            .unzip();
        let keypoints = Keypoints {
            x,
            y,
            size,
            angle,
            response,
            octave,
        };
        let data = out.descriptors.host.as_slice()[..total * DESCRIPTOR_BYTES].to_vec();
        let slot_len = match &self.fused {
            Fused::Resident(sets) => sets.lens[residency.match_with.index()],
            _ => None,
        };
        // Where the frame is the train set of resident matching, the queries are the
        // slot's keypoints.
        let (queries, trains) = match (&self.fused, residency.frame_is_query) {
            (Fused::Resident(_), false) => (slot_len.unwrap_or(0), total),
            _ => (total, slot_len.unwrap_or(0)),
        };
        self.last_matches = if matches!(self.fused, Fused::None) {
            Vec::new()
        } else {
            let m = out.matches.host.as_slice();
            (0..queries)
                .map(|i| Knn2 {
                    best_index: word(m, 3 * i) as i32,
                    best: word(m, 3 * i + 1) as i32,
                    second: word(m, 3 * i + 2) as i32,
                })
                .collect()
        };
        if let Fused::Resident(sets) = &mut self.fused {
            // Hamming distances are reported as they are.
            self.resident_matches = slot_len.map(|_| {
                accept_all(&sets.config, &self.last_matches, trains > 1, |raw| {
                    raw as f32
                })
            });
            sets.lens[residency.keep_as.index()] = Some(total);
        }
        Ok(Features {
            width,
            height,
            keypoints,
            descriptors: Descriptors {
                kind: DescriptorKind::Orb256,
                data,
            },
        })
    }
}
