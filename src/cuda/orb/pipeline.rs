//! Frames in flight: frame N+1 is copied into pinned memory and uploaded on a
//! second stream while frame N's kernels run, and N is read on the host while N+1's
//! kernels run ([`Extractor::submit_frame`]).
//!
//! `submit_overlapping(N+1)`, in this order:
//! 1. N+1 goes into the input slot N does not use (each slot has its own frame
//!    buffer, outputs and captured graphs, so alternating costs no copy and no graph
//!    update); on a discrete GPU its upload is queued on the copy stream band by band,
//!    each band followed by the slot's event for it. Both overlap N's kernels on the
//!    compute stream.
//! 2. The compute stream runs N+1's graph, whose kernels wait for each band's event
//!    before they read its rows, queues its downloads into N+1's slot and records
//!    that slot's `done` event.
//! 3. N's `done` event is waited for and N collected from its own slot, while N+1's
//!    kernels run. The GPU keeps working while the host reads and publishes, so a
//!    stream of frames goes at the pace of the slower of the two.
//!
//! With unified memory the slot is mapped host memory that the graph reads and writes
//! in place: nothing is uploaded or downloaded, and the order is the same.
//!
//! [`Extractor::submit_frame`]: crate::extractor::Extractor::submit_frame

use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaStream};

use super::{no_plan, CudaOrbExtractor};
use crate::cuda::gpu::Gpu;
use crate::cuda::gray::FrameLayout;
use crate::error::{Error, ImageError, Result};
use crate::extractor::Residency;
use crate::image::RawFrame;
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

/// A frame in flight and how it is matched and kept, which its collection needs.
#[derive(Clone, Copy, Debug)]
struct Queued {
    frame: InFlight,
    residency: Residency,
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

/// The copy stream and the frame in flight of a [`CudaOrbExtractor`] fed frames by
/// `submit_overlapping`; made on the first submitted frame.
pub(super) struct Overlap {
    copy_stream: Arc<CudaStream>,
    /// Per input slot, recorded on the compute stream after its frame's downloads.
    done: [CudaEvent; INPUT_SLOTS],
    in_flight: Option<Queued>,
}

impl Overlap {
    fn new(gpu: &Gpu) -> Result<Self> {
        Ok(Self {
            copy_stream: gpu.ctx.new_stream()?,
            done: [gpu.ordering_event()?, gpu.ordering_event()?],
            in_flight: None,
        })
    }

    /// Waits for the uploads this owns, so that no copy still reads a buffer about to
    /// be freed.
    pub(super) fn synchronize(&self) -> Result<()> {
        Ok(self.copy_stream.synchronize()?)
    }

    pub(super) fn has_frame_in_flight(&self) -> bool {
        self.in_flight.is_some()
    }
}

impl CudaOrbExtractor {
    /// Queues `frame` and returns the features of the frame submitted before it (`None`
    /// when none is in flight). On error every frame in flight is lost.
    pub(super) fn submit_overlapping(&mut self, frame: &RawFrame<'_>) -> Result<Option<Features>> {
        let submitted = self.submit_overlapped(frame);
        if submitted.is_err() {
            if let Some(overlap) = &mut self.overlap {
                overlap.in_flight = None;
            }
        }
        submitted
    }

    fn submit_overlapped(&mut self, frame: &RawFrame<'_>) -> Result<Option<Features>> {
        let layout = FrameLayout::of(frame)?;
        if self.overlap.is_none() {
            self.overlap = Some(Overlap::new(&self.gpu)?);
        }
        let in_flight = self.overlap.as_ref().and_then(|o| o.in_flight);
        let step = next_step(in_flight.map(|q| q.frame), layout.width, layout.height);
        let mut previous = None;
        if step.collect_first {
            previous = self.finish_in_flight()?;
        }
        self.stage(frame, layout, step.slot)?;
        let Some(overlap) = &mut self.overlap else {
            return Err(Error::Image(ImageError::Invalid(
                "frames are overlapped without a copy stream".into(),
            )));
        };
        // N stays in flight (and is collected below) while N+1 is queued.
        let earlier = overlap.in_flight.take();
        let residency = self.queue_frame(step.slot)?;
        if let Some(overlap) = &mut self.overlap {
            overlap.done[step.slot].record(&self.gpu.stream)?;
            overlap.in_flight = Some(Queued {
                frame: InFlight {
                    width: layout.width,
                    height: layout.height,
                    slot: step.slot,
                },
                residency,
            });
        }
        if let Some(earlier) = earlier {
            previous = Some(self.collect_when_done(earlier)?);
        }
        Ok(previous)
    }

    /// The features of the frame in flight, once its kernels are done (`None` when
    /// there is none).
    pub(super) fn finish_in_flight(&mut self) -> Result<Option<Features>> {
        let Some(queued) = self.overlap.as_mut().and_then(|o| o.in_flight.take()) else {
            return Ok(None);
        };
        self.collect_when_done(queued).map(Some)
    }

    /// Waits for `queued`'s downloads (not for a frame queued after it) and collects it.
    fn collect_when_done(&mut self, queued: Queued) -> Result<Features> {
        let Queued { frame, residency } = queued;
        if let Some(overlap) = &self.overlap {
            overlap.done[frame.slot].synchronize()?;
        }
        self.collect(frame.slot, residency, frame.width, frame.height)
    }

    /// Gives `frame` to input `slot` (allocated on first use) and queues its upload
    /// on the copy stream, band by band.
    fn stage(&mut self, frame: &RawFrame<'_>, layout: FrameLayout, slot: usize) -> Result<()> {
        self.gpu.ctx.bind_to_thread()?;
        self.prepare(layout)?;
        let (Some(plan), Some(overlap)) = (self.plan.as_mut(), self.overlap.as_ref()) else {
            return Err(no_plan());
        };
        plan.input(&self.gpu, slot, layout, self.unified, true)?
            .upload
            .take(frame)?;
        plan.inputs[slot].upload_bands(&overlap.copy_stream)
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
