//! A frame's features (and fused matches) read from its slot's outputs once the
//! stream has passed their download (`Outputs::download_async`, plan.rs).

use std::mem::size_of;

use bytemuck::Pod;

use crate::cuda::abi::{from_le_words, Knn2};
use crate::cuda::matcher::{accept_all, decode_knn2};
use crate::cuda::orb::plan::DESCRIPTOR_BYTES;
use crate::cuda::orb::{CudaOrbExtractor, Fused};
use crate::error::{Error, ImageError, Result};
use crate::extractor::Residency;
use crate::spec::orientation::angle_degrees;
use crate::types::{DescriptorKind, Descriptors, Features, Keypoints};

/// Little-endian word `i` of `bytes` (0 past the end).
fn word(bytes: &[u8], i: usize) -> u32 {
    bytes
        .get(4 * i..4 * i + 4)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// `len` little-endian 4-byte values from word `first` of `bytes` (fewer past the end).
fn values<T: Pod>(bytes: &[u8], first: usize, len: usize) -> Vec<T> {
    const { assert!(size_of::<T>() == 4) };
    let end = (4 * (first + len)).min(bytes.len());
    from_le_words(bytes.get(4 * first..end).unwrap_or_default())
}

/// The angles the GPU left to the host (NaN: too close to a float rounding boundary
/// for its atan2 to decide), computed from the keypoints' (m10, m01) moments as the
/// CPU reference computes every angle.
fn settle_angles(angles: &mut [f32], moments: &[u8]) {
    for (i, angle) in angles.iter_mut().enumerate() {
        if angle.is_nan() {
            *angle = angle_degrees(word(moments, 2 * i) as i32, word(moments, 2 * i + 1) as i32);
        }
    }
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
        let capacity = plan.capacity;
        let total = (word(out.on_host(out.kept), n_levels) as usize).min(capacity);
        // The fields in the order of `FEATURE_FIELDS`, computed on the GPU.
        let fields = out.on_host(out.fields);
        let floats = |index: usize| values(fields, index * capacity, total);
        let mut keypoints = Keypoints {
            x: floats(0),
            y: floats(1),
            size: floats(2),
            angle: floats(3),
            response: floats(4),
            octave: values(fields, 5 * capacity, total),
        };
        settle_angles(&mut keypoints.angle, out.on_host(out.moments));
        let data = out.on_host(out.descriptors)[..total * DESCRIPTOR_BYTES].to_vec();
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
            let records = out.on_host(out.matches);
            decode_knn2(&records[..(queries * size_of::<Knn2>()).min(records.len())])
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

#[cfg(test)]
mod tests {
    use super::*;

    fn moments_bytes(moments: &[(i32, i32)]) -> Vec<u8> {
        moments
            .iter()
            .flat_map(|&(m10, m01)| [m10.to_le_bytes(), m01.to_le_bytes()])
            .flatten()
            .collect()
    }

    #[test]
    fn angles_left_to_the_host_are_computed_from_their_moments_and_the_rest_kept() {
        let moments = [(100, 0), (0, 100), (-7, -3), (5, 5)];
        let mut angles = [1.5, f32::NAN, f32::NAN, 200.25];
        settle_angles(&mut angles, &moments_bytes(&moments));
        assert_eq!(angles, [1.5, 90.0, angle_degrees(-7, -3), 200.25]);
        assert!(angles[2] > 180.0 && angles[2] < 270.0);
    }

    #[test]
    fn fields_are_read_from_their_own_array_and_stop_at_the_buffer() {
        let bytes: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(values::<f32>(&bytes, 3, 2), [4.0, 5.0]);
        assert_eq!(values::<f32>(&bytes, 4, 5), [5.0, 6.0]);
        assert!(values::<f32>(&bytes, 9, 2).is_empty());
        // Not on a word boundary: the whole words only.
        assert_eq!(values::<f32>(&bytes[..23], 4, 2), [5.0]);
        let words: Vec<u8> = [-3i32, 70_000]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(values::<i32>(&words, 0, 2), [-3, 70_000]);
    }
}
