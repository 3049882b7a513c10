//! The node fed by a camera or video it opens itself (`input.source: camera`):
//! each frame is read, stamped, turned grey and handed to the same per-frame path
//! as a topic image, in the processing thread, with no queue in between.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::{Camera, Node, Outputs, DIAGNOSTICS_PERIOD};
use crate::camera::{Capture, Pacer, Read};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::msgs::DiagnosticArray;

/// A live source that gives no frame for this long is considered lost.
const LOST_AFTER: Duration = Duration::from_secs(5);
/// A live source that gave no frame is asked again after this pause: a finished or
/// unplugged one fails at once, and must not spin a core until LOST_AFTER.
const RETRY_AFTER: Duration = Duration::from_millis(10);

/// How often a node waiting for a `features` subscriber looks again.
const SUBSCRIBER_POLL: Duration = Duration::from_millis(50);

/// The opened input of a node whose `input.source` is `camera`.
pub struct CameraInput {
    capture: Capture,
    /// Set for stored video played at its frame rate (`input.realtime`).
    pacer_fps: Option<f64>,
}

impl CameraInput {
    /// Opens `config.input.device`; every start-up problem is an error here.
    pub fn open(config: &Config) -> Result<Self> {
        let capture = Capture::open(&config.input, config.max_image_pixels)?;
        let paced = config.input.realtime && !capture.device().is_live();
        let pacer_fps = match (paced, capture.fps()) {
            (false, _) => None,
            (true, Some(fps)) => Some(fps),
            (true, None) => return Err(Error::Camera {
                device: capture.device().to_string(),
                reason:
                    "reports no frame rate to play it at: set input.fps, or input.realtime: false"
                        .into(),
            }),
        };
        Ok(Self { capture, pacer_fps })
    }

    /// Captures and processes frames until the end of the stream (without
    /// `input.loop`) or until `stop` is set. Errs when a live source is lost.
    pub fn run(mut self, node: &mut Node, outputs: &dyn Outputs, stop: &AtomicBool) -> Result<()> {
        let input = node.config.input.clone();
        if !input.realtime && !self.capture.device().is_live() {
            // Every frame is processed for someone: wait until someone listens.
            log::info!(
                "waiting for a subscriber to `features` before reading (input.realtime: false)"
            );
            while !outputs.features_subscribed() {
                if stop.load(Ordering::Relaxed) {
                    return Ok(());
                }
                std::thread::sleep(SUBSCRIBER_POLL);
            }
        }
        let mut pacer = self.pacer_fps.map(|fps| Pacer::new(fps, Instant::now()));
        let mut skipped = 0;
        let mut frames = 0u64;
        // Frames read when the stream last started, so an empty one does not loop forever.
        let mut frames_at_start = 0;
        let mut last_frame = Instant::now();
        let mut next_report = Instant::now() + DIAGNOSTICS_PERIOD;
        while !stop.load(Ordering::Relaxed) {
            if let Some(pacer) = pacer.as_mut() {
                let step = pacer.step(Instant::now());
                std::thread::sleep(step.wait);
                for _ in 0..step.skip {
                    if self.capture.skip() {
                        skipped += 1;
                    }
                }
            }
            match self.capture.read() {
                Read::Frame(captured) => {
                    last_frame = captured.at;
                    frames += 1;
                    if let Some(image) = captured.image {
                        let published = outputs.publish_image(image);
                        node.publish(published);
                    }
                    node.handle_gray(
                        Camera::Mono,
                        captured.header,
                        captured.gray,
                        captured.at,
                        outputs,
                    );
                }
                Read::Unreadable(reason) => {
                    node.unreadable(reason);
                    if last_frame.elapsed() > LOST_AFTER {
                        return Err(Error::Camera {
                            device: self.capture.device().to_string(),
                            reason: format!("no frame for {} s: giving up", LOST_AFTER.as_secs()),
                        });
                    }
                    std::thread::sleep(RETRY_AFTER);
                }
                Read::End if input.looping && frames > frames_at_start => {
                    frames_at_start = frames;
                    log::info!(
                        "end of {} after {frames} frames: starting again",
                        self.capture.device()
                    );
                    self.capture.rewind()?;
                }
                Read::End => {
                    log::info!("end of {} after {frames} frames", self.capture.device());
                    break;
                }
            }
            if Instant::now() >= next_report {
                let report = node.diagnostics(skipped);
                log::info!("{}", summary(&report));
                node.publish(outputs.publish_diagnostics(report));
                next_report += DIAGNOSTICS_PERIOD;
            }
        }
        // The totals, for whoever watches the diagnostics of a finished file.
        let report = node.diagnostics(skipped);
        node.publish(outputs.publish_diagnostics(report));
        Ok(())
    }
}

/// The diagnostics in one log line: with no image topic, this is what a user sees.
fn summary(report: &DiagnosticArray) -> String {
    let value = |key| report.value(key).unwrap_or("?");
    format!(
        "{} fps, {} keypoints/frame, {} matches/frame, latency p50 {} ms p99 {} ms; frames: {} processed, {} skipped, {} unreadable",
        value("fps"),
        value("keypoints_per_frame"),
        value("matches_per_frame"),
        value("latency_p50_ms"),
        value("latency_p99_ms"),
        value("frames_processed"),
        value("frames_dropped"),
        value("frames_rejected"),
    )
}
