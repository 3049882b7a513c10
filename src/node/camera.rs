//! Frames from a camera, video file, image sequence or GStreamer pipeline that the
//! node opens itself (`input.source: camera`): read, stamped and turned grey in
//! the processing thread, with no queue in between.

use std::time::{Duration, Instant};

use super::source::{Camera, Frame, FrameSource, Next, Pixels};
use crate::camera::{Capture, Pacer, Read};
use crate::config::InputConfig;
use crate::error::{CameraError, Error, Result};

/// A live source that gives no frame for this long is considered lost.
const LOST_AFTER: Duration = Duration::from_secs(5);
/// A live source that gave no frame is asked again after this pause: a finished or
/// unplugged one fails at once, and must not spin a core until LOST_AFTER.
const RETRY_AFTER: Duration = Duration::from_millis(10);

/// The opened input of a node whose `input.source` is `camera`.
pub struct CameraSource {
    capture: Capture,
    looping: bool,
    realtime: bool,
    /// Set for stored video played at its frame rate (`input.realtime`).
    pacer: Option<Pacer>,
    /// When the next frame is due, once the pacer has said so.
    due: Option<Instant>,
    skipped: u64,
    frames: u64,
    /// Frames read when the stream last started, so an empty one does not loop forever.
    frames_at_start: u64,
    last_frame: Instant,
}

impl CameraSource {
    /// Opens `input.device`; every start-up problem is an error here.
    pub fn open(input: &InputConfig, max_image_pixels: u64) -> Result<Self> {
        let capture = Capture::open(input, max_image_pixels)?;
        let paced = input.realtime && !capture.device().is_live();
        let pacer = match (paced, capture.fps()) {
            (false, _) => None,
            (true, Some(fps)) => Some(Pacer::new(fps, Instant::now())),
            (true, None) => return Err(Error::Camera(CameraError::Failed {
                device: capture.device().to_string(),
                reason:
                    "reports no frame rate to play it at: set input.fps, or input.realtime: false"
                        .into(),
            })),
        };
        Ok(Self {
            capture,
            looping: input.looping,
            realtime: input.realtime,
            pacer,
            due: None,
            skipped: 0,
            frames: 0,
            frames_at_start: 0,
            last_frame: Instant::now(),
        })
    }

    /// Waits for the playback clock; false when `deadline` comes first.
    fn wait_until_due(&mut self, deadline: Instant) -> bool {
        let Some(pacer) = self.pacer.as_mut() else {
            return true;
        };
        let due = match self.due {
            Some(due) => due,
            None => {
                let now = Instant::now();
                let step = pacer.step(now);
                for _ in 0..step.skip {
                    if self.capture.skip() {
                        self.skipped += 1;
                    }
                }
                *self.due.insert(now + step.wait)
            }
        };
        std::thread::sleep(due.min(deadline).saturating_duration_since(Instant::now()));
        if due > deadline {
            return false;
        }
        self.due = None;
        true
    }
}

impl FrameSource for CameraSource {
    fn next(&mut self, deadline: Instant) -> Result<Next> {
        // A live camera's read blocks until its next frame: a caller that cannot wait
        // (a frame in flight to publish) gets no frame rather than a frame period late.
        if self.capture.device().is_live() && deadline <= Instant::now() {
            return Ok(Next::Idle);
        }
        loop {
            if !self.wait_until_due(deadline) {
                return Ok(Next::Idle);
            }
            match self.capture.read() {
                Read::Frame(captured) => {
                    self.last_frame = captured.at;
                    self.frames += 1;
                    return Ok(Next::Frame(Box::new(Frame {
                        camera: Camera::Mono,
                        header: captured.header,
                        pixels: Pixels::Gray(captured.gray),
                        received: captured.at,
                        republish: captured.image,
                    })));
                }
                Read::Unreadable(reason) => {
                    if self.last_frame.elapsed() > LOST_AFTER {
                        return Err(Error::Camera(CameraError::Failed {
                            device: self.capture.device().to_string(),
                            reason: format!("no frame for {} s: giving up", LOST_AFTER.as_secs()),
                        }));
                    }
                    std::thread::sleep(RETRY_AFTER);
                    return Ok(Next::Unreadable { count: 1, reason });
                }
                // OpenCV reports an undecodable file as an empty one.
                Read::End if self.frames == 0 => {
                    return Err(Error::Camera(CameraError::Failed {
                        device: self.capture.device().to_string(),
                        reason: "no frame could be decoded".into(),
                    }))
                }
                Read::End if self.looping && self.frames > self.frames_at_start => {
                    self.frames_at_start = self.frames;
                    log::info!(
                        "end of {} after {} frames: starting again",
                        self.capture.device(),
                        self.frames
                    );
                    self.capture.rewind()?;
                }
                Read::End => {
                    log::info!(
                        "end of {} after {} frames",
                        self.capture.device(),
                        self.frames
                    );
                    return Ok(Next::End);
                }
            }
        }
    }

    fn dropped(&self) -> u64 {
        self.skipped
    }

    fn waits_for_subscriber(&self) -> bool {
        !self.realtime && !self.capture.device().is_live()
    }
}
