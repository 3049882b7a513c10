//! Real-time playback of stored video: frame k is due k / fps after the start; when
//! processing falls behind, the frames the clock has already overtaken are skipped.

use std::time::{Duration, Instant};

/// What to do before reading the next frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Sleep this long first (the frame is not due yet).
    pub wait: Duration,
    /// Then skip this many frames (they are overdue: a newer one is due already).
    pub skip: u64,
}

/// The playback clock of a stream at a fixed frame rate.
pub struct Pacer {
    start: Instant,
    fps: f64,
    /// Index of the next frame to read, counting skipped ones.
    next: u64,
}

impl Pacer {
    /// A clock that starts now with frame 0; `fps` must be positive.
    pub fn new(fps: f64, start: Instant) -> Self {
        Self {
            start,
            fps,
            next: 0,
        }
    }

    /// The step before reading the next frame at `now`.
    pub fn step(&mut self, now: Instant) -> Step {
        let due = self.start + Duration::from_secs_f64(self.next as f64 / self.fps);
        let step = if now <= due {
            Step {
                wait: due - now,
                skip: 0,
            }
        } else {
            // The frame on screen at `now`; the ones before it are stale.
            let current = ((now - self.start).as_secs_f64() * self.fps).floor() as u64;
            Step {
                wait: Duration::ZERO,
                skip: current.saturating_sub(self.next),
            }
        };
        self.next += step.skip + 1;
        step
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(millis: u64) -> Duration {
        Duration::from_millis(millis)
    }

    /// Wait `wait_ms`, then skip `skip` frames.
    fn step(wait_ms: u64, skip: u64) -> Step {
        Step {
            wait: ms(wait_ms),
            skip,
        }
    }

    #[test]
    fn on_time_frames_wait_for_their_turn() {
        let t0 = Instant::now();
        let mut pacer = Pacer::new(10.0, t0);
        assert_eq!(pacer.step(t0), step(0, 0));
        // Frame 1 is due at 100 ms; processing frame 0 took 30 ms.
        assert_eq!(pacer.step(t0 + ms(30)), step(70, 0));
        assert_eq!(pacer.step(t0 + ms(200)), step(0, 0));
    }

    #[test]
    fn late_processing_skips_the_overtaken_frames() {
        let t0 = Instant::now();
        let mut pacer = Pacer::new(10.0, t0);
        pacer.step(t0);
        // Frame 0 took 350 ms: frames 1 and 2 are stale, frame 3 is on screen.
        assert_eq!(pacer.step(t0 + ms(350)), step(0, 2));
        // Frame 4 is due at 400 ms.
        assert_eq!(pacer.step(t0 + ms(360)), step(40, 0));
        // Less than a period late: read it now, skip nothing.
        assert_eq!(pacer.step(t0 + ms(540)), step(0, 0));
    }
}
