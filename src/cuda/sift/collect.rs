//! A frame's features read from the plan's host buffers once the stream is done, and
//! the downloads that fill them (device memory only: in unified memory the kernels
//! wrote the host buffers themselves).

use cudarc::driver::CudaStream;

use crate::cuda::abi::SUMMARY_WORDS;
use crate::cuda::sift::plan::{Plan, DESCRIPTOR_BYTES};
use crate::cuda::sift::CudaSiftExtractor;
use crate::error::Result;
use crate::types::{DescriptorKind, Descriptors, Features, Keypoints};

impl Plan {
    /// Downloads the summary and waits for the stream: the kept keypoints, then the raw
    /// candidate, extremum, keypoint and duplicate counts.
    pub fn download_summary(&mut self, stream: &CudaStream) -> Result<[u32; SUMMARY_WORDS]> {
        self.summary.download_async(SUMMARY_WORDS * 4, stream)?;
        stream.synchronize()?;
        let words = self.summary.host.as_slice();
        Ok(std::array::from_fn(|i| {
            u32::from_le_bytes([
                words[4 * i],
                words[4 * i + 1],
                words[4 * i + 2],
                words[4 * i + 3],
            ])
        }))
    }

    /// Downloads the outputs and descriptors of `kept` keypoints and waits for the stream.
    pub fn download_outputs(&mut self, kept: usize, stream: &CudaStream) -> Result<()> {
        for output in self.outputs.iter_mut() {
            output.download_async(kept * 4, stream)?;
        }
        self.descriptors
            .download_async(kept * DESCRIPTOR_BYTES, stream)?;
        stream.synchronize()?;
        Ok(())
    }
}

impl CudaSiftExtractor {
    /// The frame's `kept` features from the plan's host buffers.
    pub(super) fn collect(&self, kept: usize, width: usize, height: usize) -> Features {
        let empty = || Features {
            width,
            height,
            keypoints: Keypoints::default(),
            descriptors: Descriptors {
                kind: DescriptorKind::Sift128U8,
                data: Vec::new(),
            },
        };
        let Some(plan) = self.plan.as_ref() else {
            return empty();
        };
        let kept = kept.min(plan.output_capacity);
        let floats = |i: usize| -> Vec<f32> {
            plan.outputs[i].host.as_slice()[..kept * 4]
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect()
        };
        let octave = plan.outputs[5].host.as_slice()[..kept * 4]
            .chunks_exact(4)
            .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        Features {
            width,
            height,
            keypoints: Keypoints {
                x: floats(0),
                y: floats(1),
                size: floats(2),
                angle: floats(3),
                response: floats(4),
                octave,
            },
            descriptors: Descriptors {
                kind: DescriptorKind::Sift128U8,
                data: plan.descriptors.host.as_slice()[..kept * DESCRIPTOR_BYTES].to_vec(),
            },
        }
    }
}
