//! Rate-limited warnings: a camera sending bad frames at 60 Hz must not flood the log.

use std::time::{Duration, Instant};

/// Lets one warning through per `interval` and counts the ones it held back.
pub struct Throttle {
    interval: Duration,
    last: Option<Instant>,
    suppressed: u64,
}

impl Throttle {
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            last: None,
            suppressed: 0,
        }
    }

    /// Logs `message` unless one was logged within the interval.
    pub fn warn(&mut self, message: &str) {
        let now = Instant::now();
        if self.last.is_some_and(|last| now - last < self.interval) {
            self.suppressed += 1;
            return;
        }
        if self.suppressed > 0 {
            log::warn!(
                "{message} (and {} more since the last warning)",
                self.suppressed
            );
        } else {
            log::warn!("{message}");
        }
        self.last = Some(now);
        self.suppressed = 0;
    }
}
