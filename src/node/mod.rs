//! The node runtime, the same over every transport: frames in through an
//! [`InputQueue`], Features / Matches / diagnostics out through [`Outputs`].
//!
//! The transport converts nothing: it hands over `sensor_msgs/Image` messages and
//! publishes what it is given. Bad frames are rejected here with a reason, counted,
//! and the node goes on.

#[cfg(feature = "camera")]
mod camera;
mod input;
#[cfg(not(feature = "camera"))]
mod no_camera;
mod stats;
mod stereo;
mod throttle;

#[cfg(feature = "camera")]
pub use camera::CameraInput;
pub use input::{Camera, Frame, InputQueue, Taken};
#[cfg(not(feature = "camera"))]
pub use no_camera::CameraInput;
pub use throttle::Throttle;

use std::time::{Duration, Instant};

use crate::config::{Config, InputSource, MatchMode};
use crate::draw;
use crate::error::Result;
use crate::extractor::{Extractor, Matcher};
use crate::image::GrayImage;
use crate::msgs::{self, DiagnosticArray, Header, Image};
use crate::types::Match;
use stats::{Identity, Stats};
use stereo::{Extracted, StereoPairer};

/// How often diagnostics are published.
pub const DIAGNOSTICS_PERIOD: Duration = Duration::from_secs(1);

/// Where the runtime's messages go; each transport implements it.
pub trait Outputs {
    fn publish_features(&self, message: msgs::Features) -> Result<()>;
    fn publish_matches(&self, message: msgs::Matches) -> Result<()>;
    fn publish_diagnostics(&self, message: DiagnosticArray) -> Result<()>;
    fn publish_debug_image(&self, message: Image) -> Result<()>;
    /// Whether anyone subscribes to `debug_image`: drawing costs, so only then.
    fn wants_debug_image(&self) -> bool;
    /// The captured frame on `image` (camera input with `input.publish_image`).
    fn publish_image(&self, message: Image) -> Result<()>;
    /// Whether anyone subscribes to `features` (a file read with `input.realtime:
    /// false` waits for it, so that no frame is processed for nobody).
    fn features_subscribed(&self) -> bool;
}

/// The topics the runtime reads for `mode`, relative to the node's namespace.
pub fn input_topics(mode: MatchMode) -> &'static [(Camera, &'static str)] {
    match mode {
        MatchMode::None | MatchMode::Temporal => &[(Camera::Mono, "image")],
        MatchMode::Stereo => &[(Camera::Left, "left/image"), (Camera::Right, "right/image")],
    }
}

/// The camera input `config` asks for, opened; `None` for topic input.
pub fn open_camera(config: &Config) -> Result<Option<CameraInput>> {
    match config.input.source {
        InputSource::Topic => Ok(None),
        InputSource::Camera => CameraInput::open(config).map(Some),
    }
}

/// Extraction and matching state of one running node.
pub struct Node {
    name: String,
    config: Config,
    extractor: Box<dyn Extractor>,
    matcher: Box<dyn Matcher>,
    previous: Option<Extracted>,
    stereo: StereoPairer,
    stats: Stats,
    rejections: Throttle,
    failures: Throttle,
}

impl Node {
    /// A node named `name` (for diagnostics) with the backends `config` asks for.
    pub fn new(name: &str, config: Config) -> Result<Self> {
        let extractor = crate::create_extractor(&config)?;
        let matcher = crate::create_matcher(&config)?;
        Ok(Self::with_backends(name, config, extractor, matcher))
    }

    /// A node over the given extractor and matcher.
    pub fn with_backends(
        name: &str,
        config: Config,
        extractor: Box<dyn Extractor>,
        matcher: Box<dyn Matcher>,
    ) -> Self {
        let tolerance = config.matching.sync_tolerance;
        Self {
            name: name.to_string(),
            config,
            extractor,
            matcher,
            previous: None,
            stereo: StereoPairer::new(tolerance),
            stats: Stats::default(),
            rejections: Throttle::new(Duration::from_secs(2)),
            failures: Throttle::new(Duration::from_secs(2)),
        }
    }

    /// Processes frames until `queue` is closed, publishing diagnostics periodically.
    pub fn run(&mut self, queue: &InputQueue, outputs: &dyn Outputs) {
        let mut next_report = Instant::now() + DIAGNOSTICS_PERIOD;
        loop {
            let wait = next_report.saturating_duration_since(Instant::now());
            match queue.take(wait) {
                Taken::Frame(frame) => self.handle(frame, outputs),
                Taken::TimedOut => {}
                Taken::Closed => return,
            }
            if Instant::now() >= next_report {
                let report = self.diagnostics(queue.dropped());
                self.publish(outputs.publish_diagnostics(report));
                next_report += DIAGNOSTICS_PERIOD;
            }
        }
    }

    /// The diagnostics report now; `dropped` comes from the input queue.
    pub fn diagnostics(&mut self, dropped: u64) -> DiagnosticArray {
        let device = self.extractor.device_name();
        let who = Identity {
            node_name: &self.name,
            algorithm: self.config.algorithm.name(),
            backend: self.extractor.backend_name(),
            device: &device,
        };
        self.stats.report(&who, dropped)
    }

    /// Frames rejected so far.
    pub fn rejected_frames(&self) -> u64 {
        self.stats.rejected_count()
    }

    /// Extracts, publishes and matches one frame; a bad frame is counted and skipped.
    pub fn handle(&mut self, frame: Frame, outputs: &dyn Outputs) {
        let header = frame.image.header.clone();
        match msgs::gray_from_image(&frame.image, self.config.max_image_pixels) {
            Ok(gray) => self.handle_gray(frame.camera, header, gray, frame.received, outputs),
            Err(reason) => {
                let reason = reason.to_string();
                self.rejections.warn(&format!(
                    "rejected a frame from {:?} (stamp {}.{:09}, frame_id {:?}): {reason}",
                    frame.camera, header.stamp.sec, header.stamp.nanosec, header.frame_id
                ));
                self.stats.rejected(reason);
            }
        }
    }

    /// A frame the camera input could not read: counted as rejected, with its reason.
    pub fn unreadable(&mut self, reason: String) {
        self.rejections
            .warn(&format!("cannot read a frame: {reason}"));
        self.stats.rejected(reason);
    }

    /// Extracts, publishes and matches one grey frame of `camera`, stamped by
    /// `header` and received at `received` (the start of its latency).
    pub fn handle_gray(
        &mut self,
        camera: Camera,
        header: Header,
        gray: GrayImage,
        received: Instant,
        outputs: &dyn Outputs,
    ) {
        let features = match self.extractor.extract(&gray) {
            Ok(features) => features,
            Err(err) => {
                self.failures.warn(&format!("extraction failed: {err}"));
                self.stats.failed();
                return;
            }
        };
        let message = msgs::features_message(header.clone(), self.config.algorithm, &features);
        self.publish(outputs.publish_features(message));
        self.stats
            .processed(received.elapsed(), features.keypoints.len());

        let current = Extracted {
            header,
            image: gray,
            features,
        };
        match (self.config.matching.mode, camera) {
            (MatchMode::None, _) => self.draw_keypoints(&current, outputs),
            (MatchMode::Temporal, _) => {
                match self.previous.take() {
                    Some(previous) => {
                        self.match_and_publish(&current, &previous, "temporal", outputs)
                    }
                    None => self.draw_keypoints(&current, outputs),
                }
                self.previous = Some(current);
            }
            (MatchMode::Stereo, camera) => {
                let pair = if camera == Camera::Right {
                    self.stereo.offer_right(current)
                } else {
                    self.stereo.offer_left(current)
                };
                if let Some((left, right)) = pair {
                    self.match_and_publish(&left, &right, "stereo", outputs);
                }
            }
        }
    }

    fn match_and_publish(
        &mut self,
        query: &Extracted,
        train: &Extracted,
        mode: &str,
        outputs: &dyn Outputs,
    ) {
        match self
            .matcher
            .match_features(&query.features, &train.features)
        {
            Ok(matches) => {
                self.stats.matched(matches.len());
                let message = matches_message(&query.header, &train.header, mode, &matches);
                self.publish(outputs.publish_matches(message));
                if outputs.wants_debug_image() {
                    let picture = draw::draw_matches(
                        &query.image,
                        &query.features.keypoints,
                        &train.image,
                        &train.features.keypoints,
                        &matches,
                    );
                    let message = rgb_message(query.header.clone(), picture);
                    self.publish(outputs.publish_debug_image(message));
                }
            }
            Err(err) => {
                self.failures
                    .warn(&format!("{mode} matching failed: {err}"));
                self.stats.failed();
            }
        }
    }

    /// The debug image of a frame that has nothing to be matched with yet.
    fn draw_keypoints(&mut self, frame: &Extracted, outputs: &dyn Outputs) {
        if outputs.wants_debug_image() {
            let picture = draw::draw_keypoints(&frame.image, &frame.features.keypoints);
            let message = rgb_message(frame.header.clone(), picture);
            self.publish(outputs.publish_debug_image(message));
        }
    }

    fn publish(&mut self, result: Result<()>) {
        if let Err(err) = result {
            self.failures.warn(&format!("publishing failed: {err}"));
        }
    }
}

/// A drawn picture as an rgb8 `sensor_msgs/Image`.
fn rgb_message(header: Header, picture: image::RgbImage) -> Image {
    let (width, height) = picture.dimensions();
    Image {
        header,
        height,
        width,
        encoding: "rgb8".into(),
        is_bigendian: 0,
        step: width * 3,
        data: picture.into_raw(),
    }
}

fn matches_message(query: &Header, train: &Header, mode: &str, matches: &[Match]) -> msgs::Matches {
    msgs::Matches {
        header: query.clone(),
        train_header: train.clone(),
        mode: mode.to_string(),
        query_idx: matches.iter().map(|m| m.query).collect(),
        train_idx: matches.iter().map(|m| m.train).collect(),
        distance: matches.iter().map(|m| m.distance).collect(),
    }
}

#[cfg(test)]
mod tests;
