//! The input queue between the transport and the processing thread: one slot per
//! camera where the latest frame wins, so memory and latency stay bounded when
//! processing is slower than the camera.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::msgs::Image;

/// Which subscription a frame came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Camera {
    /// `image`: the single camera of `none` and `temporal` modes.
    Mono,
    /// `left/image` in stereo mode.
    Left,
    /// `right/image` in stereo mode.
    Right,
}

impl Camera {
    const ALL: [Camera; 3] = [Camera::Mono, Camera::Left, Camera::Right];

    fn slot(self) -> usize {
        self as usize
    }
}

/// A received image, stamped with its arrival for latency measurement.
#[derive(Clone, Debug)]
pub struct Frame {
    pub camera: Camera,
    pub image: Image,
    pub received: Instant,
}

/// What [`InputQueue::take`] found.
#[derive(Debug)]
pub enum Taken {
    Frame(Frame),
    TimedOut,
    Closed,
}

#[derive(Default)]
struct Slots {
    frames: [Option<Frame>; 3],
    dropped: u64,
    closed: bool,
}

/// Latest-frame-wins slots, one per camera; replaced frames are counted as dropped.
#[derive(Default)]
pub struct InputQueue {
    slots: Mutex<Slots>,
    ready: Condvar,
}

impl InputQueue {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Slots> {
        // A panic while holding the lock cannot leave the slots half-written.
        self.slots
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues `frame`, replacing (and counting) an unprocessed one of the same camera.
    pub fn put(&self, frame: Frame) {
        let mut slots = self.lock();
        if slots.frames[frame.camera.slot()].replace(frame).is_some() {
            slots.dropped += 1;
        }
        self.ready.notify_one();
    }

    /// The oldest waiting frame, waiting up to `timeout` for one.
    pub fn take(&self, timeout: Duration) -> Taken {
        let deadline = Instant::now() + timeout;
        let mut slots = self.lock();
        loop {
            let oldest = Camera::ALL
                .iter()
                .filter_map(|c| slots.frames[c.slot()].as_ref().map(|f| (f.received, *c)))
                .min_by_key(|(received, _)| *received);
            if let Some((_, camera)) = oldest {
                if let Some(frame) = slots.frames[camera.slot()].take() {
                    return Taken::Frame(frame);
                }
            }
            if slots.closed {
                return Taken::Closed;
            }
            let now = Instant::now();
            if now >= deadline {
                return Taken::TimedOut;
            }
            slots = self
                .ready
                .wait_timeout(slots, deadline - now)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
    }

    /// Frames replaced before they were processed.
    pub fn dropped(&self) -> u64 {
        self.lock().dropped
    }

    /// Wakes the processing thread and ends it once the slots are empty.
    pub fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_all();
    }
}
