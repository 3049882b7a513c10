//! Frames from image topics: the transport puts each received message into an
//! [`InputQueue`], one slot per camera where the latest frame wins, so memory and
//! latency stay bounded when processing is slower than the camera.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use super::source::{Arrivals, Camera, Frame, FrameSource, Next};
use crate::error::Result;

impl Camera {
    const ALL: [Camera; 3] = [Camera::Mono, Camera::Left, Camera::Right];

    fn slot(self) -> usize {
        self as usize
    }
}

#[derive(Default)]
struct Slots {
    frames: [Option<Frame>; 3],
    arrivals: Arrivals,
    dropped: u64,
    unreadable: u64,
    last_unreadable: String,
    closed: bool,
}

/// Latest-frame-wins slots, one per camera; replaced frames are counted as dropped,
/// messages that could not be decoded as unreadable, and every message the transport
/// delivered as received.
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
        slots.arrivals.received += 1;
        if slots.frames[frame.camera.slot()].replace(frame).is_some() {
            slots.dropped += 1;
        }
        self.ready.notify_one();
    }

    /// Counts a message that arrived but could not be decoded.
    pub fn unreadable(&self, reason: String) {
        let mut slots = self.lock();
        slots.arrivals.received += 1;
        slots.unreadable += 1;
        slots.last_unreadable = reason;
        self.ready.notify_one();
    }

    /// The oldest waiting frame (or the undecodable messages counted since the last
    /// call), waiting until `deadline` for one.
    pub fn take(&self, deadline: Instant) -> Next {
        let mut slots = self.lock();
        loop {
            if slots.unreadable > 0 {
                let count = std::mem::take(&mut slots.unreadable);
                let reason = std::mem::take(&mut slots.last_unreadable);
                return Next::Unreadable { count, reason };
            }
            let oldest = Camera::ALL
                .iter()
                .filter_map(|c| slots.frames[c.slot()].as_ref().map(|f| (f.received, *c)))
                .min_by_key(|(received, _)| *received);
            if let Some((_, camera)) = oldest {
                if let Some(frame) = slots.frames[camera.slot()].take() {
                    return Next::Frame(Box::new(frame));
                }
            }
            if slots.closed {
                return Next::End;
            }
            let now = Instant::now();
            if now >= deadline {
                return Next::Idle;
            }
            slots = self
                .ready
                .wait_timeout(slots, deadline - now)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
    }

    /// Counts `count` messages the transport's stack lost before delivering them
    /// (sequence numbers it skipped).
    pub fn lost_in_stack(&self, count: u64) {
        self.lock().arrivals.lost_in_stack += count;
    }

    /// What the transport delivered and lost so far.
    pub fn arrivals(&self) -> Arrivals {
        self.lock().arrivals
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

/// The frames of the node's image topics, as the transport queues them.
pub struct TopicSource(pub Arc<InputQueue>);

impl FrameSource for TopicSource {
    fn next(&mut self, deadline: Instant) -> Result<Next> {
        Ok(self.0.take(deadline))
    }

    fn dropped(&self) -> u64 {
        self.0.dropped()
    }

    fn arrivals(&self) -> Option<Arrivals> {
        Some(self.0.arrivals())
    }
}
