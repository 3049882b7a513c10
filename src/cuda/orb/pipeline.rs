//! Pipelined ORB for streamed frames: frame N+1 is copied into pinned memory and
//! uploaded on a second stream while frame N's kernels run.
//!
//! `push(N+1)`, in this order:
//! 1. N+1 goes into the input slot N does not use (each slot has its own frame
//!    buffer and its own captured graph, so alternating costs no copy and no graph
//!    update); on a discrete GPU its upload is queued on the copy stream, followed by
//!    an event. Both overlap N's kernels on the compute stream.
//! 2. The compute stream is synchronised and N collected: the results live in one set
//!    of buffers, so N is read before N+1's kernels may overwrite them.
//! 3. The compute stream waits for the upload event, then runs N+1's graph and
//!    queues its downloads.
//!
//! With unified memory the slot is mapped host memory that the graph reads in place:
//! nothing is uploaded, and the host's copy of N+1 still overlaps N's kernels.

use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaStream};

use super::{copy_frame, CudaOrbExtractor};
use crate::cuda::gray::FrameLayout;
use crate::error::{Error, ImageError, Result};
use crate::image::GrayImage;
use crate::types::Features;

/// Frame buffers a pipeline alternates between.
const INPUT_SLOTS: usize = 2;

/// The frame whose kernels were queued last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct InFlight {
    width: usize,
    height: usize,
    slot: usize,
}

/// What `push` does with a new frame, decided from sizes and slots alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Step {
    /// The input slot the new frame is staged into.
    slot: usize,
    /// Collect the frame in flight before staging: the new frame has another size, so
    /// the plan and its buffers are rebuilt and nothing overlaps.
    collect_first: bool,
}

fn next_step(in_flight: Option<InFlight>, width: usize, height: usize) -> Step {
    match in_flight {
        Some(frame) if (frame.width, frame.height) == (width, height) => Step {
            slot: (frame.slot + 1) % INPUT_SLOTS,
            collect_first: false,
        },
        Some(_) => Step {
            slot: 0,
            collect_first: true,
        },
        None => Step {
            slot: 0,
            collect_first: false,
        },
    }
}

/// [`CudaOrbExtractor`] fed a stream of frames: each [`push`](Self::push) returns the
/// previous frame's features, so the next frame's copy and upload hide behind the
/// current frame's kernels. Results are identical to `extract` frame by frame; a
/// train set given to the extractor beforehand is matched as there
/// (`extractor().last_matches()` belongs to the frame `push` just returned).
pub struct CudaOrbPipeline {
    extractor: CudaOrbExtractor,
    copy_stream: Arc<CudaStream>,
    /// Recorded on the copy stream after each upload; the compute stream waits for it.
    uploaded: CudaEvent,
    in_flight: Option<InFlight>,
}

impl CudaOrbPipeline {
    pub fn new(extractor: CudaOrbExtractor) -> Result<Self> {
        let gpu = &extractor.gpu;
        let copy_stream = gpu.ctx.new_stream()?;
        let uploaded = gpu.ordering_event()?;
        Ok(Self {
            extractor,
            copy_stream,
            uploaded,
            in_flight: None,
        })
    }

    /// Queues `image` and returns the features of the frame pushed before it (`None`
    /// for the first frame after `new` or [`finish`](Self::finish)).
    pub fn push(&mut self, image: &GrayImage) -> Result<Option<Features>> {
        let layout = FrameLayout::of(&image.as_raw())?;
        let (width, height) = (image.width(), image.height());
        let step = next_step(self.in_flight, width, height);
        let mut previous = None;
        if step.collect_first {
            previous = self.collect_in_flight()?;
        }
        self.stage(image, layout, step.slot)?;
        if !step.collect_first {
            previous = self.collect_in_flight()?;
        }
        self.extractor.gpu.stream.wait(&self.uploaded)?;
        self.extractor.queue_frame(step.slot)?;
        self.in_flight = Some(InFlight {
            width,
            height,
            slot: step.slot,
        });
        Ok(previous)
    }

    /// The features of the last frame pushed, once its kernels are done.
    pub fn finish(&mut self) -> Result<Option<Features>> {
        self.collect_in_flight()
    }

    /// The extractor the pipeline drives (its fused matches, memory mode, device).
    pub fn extractor(&self) -> &CudaOrbExtractor {
        &self.extractor
    }

    /// Copies `image` into input `slot` (allocated on first use) and queues its
    /// upload on the copy stream, then records `uploaded` there.
    fn stage(&mut self, image: &GrayImage, layout: FrameLayout, slot: usize) -> Result<()> {
        let extractor = &mut self.extractor;
        extractor.gpu.ctx.bind_to_thread()?;
        extractor.prepare(layout.width, layout.height)?;
        let plan = extractor.plan.as_mut().ok_or_else(|| {
            Error::Image(ImageError::Invalid("no plan for the frame's size".into()))
        })?;
        let input = plan.input(&extractor.gpu, slot, layout, extractor.unified)?;
        copy_frame(input, &image.as_raw());
        input.frame.upload_async(&self.copy_stream)?;
        self.uploaded.record(&self.copy_stream)?;
        Ok(())
    }

    fn collect_in_flight(&mut self) -> Result<Option<Features>> {
        let Some(frame) = self.in_flight.take() else {
            return Ok(None);
        };
        self.extractor.gpu.stream.synchronize()?;
        self.extractor.collect(frame.width, frame.height).map(Some)
    }
}

impl Drop for CudaOrbPipeline {
    /// The extractor frees its buffers next: no copy or kernel may still use them.
    fn drop(&mut self) {
        for stream in [&self.copy_stream, &self.extractor.gpu.stream] {
            if let Err(error) = stream.synchronize() {
                log::warn!("synchronising the ORB pipeline before dropping it failed: {error}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_flight(width: usize, height: usize, slot: usize) -> Option<InFlight> {
        Some(InFlight {
            width,
            height,
            slot,
        })
    }

    #[test]
    fn first_frame_goes_to_slot_zero_with_nothing_to_collect() {
        assert_eq!(
            next_step(None, 640, 480),
            Step {
                slot: 0,
                collect_first: false
            }
        );
    }

    #[test]
    fn frames_of_one_size_alternate_slots_and_overlap() {
        let mut flight = None;
        let mut slots = Vec::new();
        for _ in 0..5 {
            let step = next_step(flight, 1920, 1080);
            assert!(!step.collect_first);
            slots.push(step.slot);
            flight = in_flight(1920, 1080, step.slot);
        }
        assert_eq!(slots, [0, 1, 0, 1, 0]);
    }

    #[test]
    fn a_new_size_collects_the_frame_in_flight_first() {
        for slot in 0..INPUT_SLOTS {
            assert_eq!(
                next_step(in_flight(640, 480, slot), 480, 640),
                Step {
                    slot: 0,
                    collect_first: true
                }
            );
        }
    }
}
